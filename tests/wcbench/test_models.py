"""The model plug-in: frames in any layout converted once, what CaseInfo carries, the
whole-video base, MODULE:FACTORY from the current folder, --model-args, "did you mean",
and the README's example through the installed console script."""

import json
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from wcbench.cli import main
from wcbench.core.actions import Action, parse_script
from wcbench.core.camera import script_trajectory
from wcbench.data.suite import load_suite
from wcbench.models.base import CaseInfo, WholeVideoModel
from wcbench.models.frames import FrameError, to_video
from wcbench.models.plugin import parse_model_args
from wcbench.models.registry import build_model
from wcbench.run.runner import Placement, generate_case

REPO = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(0)
VIDEO = RNG.integers(0, 256, (5, 6, 8, 3), dtype=np.uint8)


@pytest.fixture()
def tiny_suite(tmp_path, write_tiny_suite):
    return write_tiny_suite(tmp_path)


# ---------------------------------------------------------------- frames

@pytest.mark.parametrize("make, tolerance", [
    (lambda v: v, 0),
    (lambda v: v.astype(np.float32) / 255.0, 0),
    (lambda v: torch.from_numpy(v).permute(0, 3, 1, 2).to(torch.bfloat16) / 255.0, 1),  # diffusers "pt", bf16
    (lambda v: (torch.from_numpy(v).float() / 255.0)[None], 0),  # a batch of one, channels last
    (lambda v: np.moveaxis(v, -1, 0), 0),  # (3, T, H, W) as a video VAE decodes
    (lambda v: [Image.fromarray(frame) for frame in v], 0),
    (lambda v: list(torch.from_numpy(v).permute(0, 3, 1, 2)), 0),  # frames as (3, H, W) uint8 tensors
    (lambda v: v.astype(np.int64), 0),
], ids=["uint8", "float", "torch-tchw-bf16", "torch-batch", "cthw", "pil-list", "tensor-list", "int64"])
def test_every_accepted_layout_gives_the_same_video(make, tolerance):
    video = to_video(make(VIDEO))
    assert video.dtype == np.uint8 and video.flags.c_contiguous and video.shape == VIDEO.shape
    assert np.abs(video.astype(int) - VIDEO).max() <= tolerance  # bfloat16 keeps 8 significant bits


def test_exact_layouts_are_lossless():
    for frames in (VIDEO, VIDEO.astype(np.float64) / 255.0, [Image.fromarray(f) for f in VIDEO]):
        assert np.array_equal(to_video(frames), VIDEO)
    assert np.array_equal(to_video(Image.fromarray(VIDEO[0])), VIDEO[:1])  # one PIL image: one frame
    assert np.array_equal(to_video(torch.from_numpy(VIDEO[0]).permute(2, 0, 1)), VIDEO[:1])


@pytest.mark.parametrize("frames, fragment", [
    (VIDEO.astype(np.float32), "span [0, 255]"),  # 0..255 floats
    (VIDEO.astype(np.float32) / 127.5 - 1.0, "(x + 1) / 2"),  # [-1, 1]
    (np.full((2, 4, 4, 3), np.nan, np.float32), "NaN"),
    (np.zeros((2, 4, 4, 4), np.uint8), "(T, H, W, 3)"),
    (np.zeros((2, 2, 4, 4, 3), np.uint8), "batch of 2"),
    ([np.zeros((2, 4, 4, 3), np.uint8)], "single images"),
    ([], "empty"),
    (np.full((1, 4, 4, 3), 300, np.int32), "0..255"),
])
def test_unreadable_frames_say_why(frames, fragment):
    with pytest.raises(FrameError) as err:
        to_video(frames)
    assert fragment in str(err.value)


# ---------------------------------------------------------------- what the model sees

class _Recorder:
    """Records what the harness hands it; returns float tensors like a diffusers pipeline."""

    def reset(self, image, prompt, seed, info):
        self.image, self.prompt, self.info, self.steps = image, prompt, info, []
        return torch.from_numpy(image).permute(2, 0, 1).float() / 255.0

    def step(self, actions):
        self.steps.append(list(actions))
        frame = torch.from_numpy(self.image).permute(2, 0, 1).float() / 255.0
        return frame[None].repeat(4 * len(actions), 1, 1, 1)


def test_case_info_carries_the_command_and_where_it_runs(tiny_suite):
    suite = load_suite(tiny_suite)
    case = suite.cases[0]
    model = _Recorder()
    video, _, world = generate_case(model, suite, case, seed=3, placement=Placement("cuda:1", 1, 2))
    info = model.info
    assert info.script == case.parsed() and info.num_frames == 125 == len(video)
    assert np.allclose(info.commanded_poses, script_trajectory(case.parsed(), suite.steps))
    assert np.allclose(info.K, world.K) and info.fov_deg == suite.fov_deg and info.resolution == (64, 48)
    assert (info.device, info.rank, info.world_size) == ("cuda:1", 1, 2)
    assert [a for clip in model.steps for a in clip] == case.parsed().step_actions()
    assert np.array_equal(video[0], world.image) and video.dtype == np.uint8  # float tensors, converted once


class _PanWhole(WholeVideoModel):
    """Generates the whole video from the full command, up front."""

    name = "pan-whole"

    def generate(self, image, prompt, seed, info):
        shifts = np.cumsum([0] + [a.yaw for a in info.script.frame_actions()])
        return [Image.fromarray(np.roll(image, int(s), axis=1)) for s in shifts]


def test_whole_video_model_serves_clips_and_checks_the_command(tiny_suite):
    suite = load_suite(tiny_suite)
    case = suite.cases[0]
    video, timing, world = generate_case(_PanWhole(), suite, case, seed=0)
    yaw = np.cumsum([0] + [a.yaw for a in case.parsed().frame_actions()])
    assert np.array_equal(video[-1], np.roll(world.image, int(yaw[-1]), axis=1))
    model = _PanWhole()
    info = CaseInfo("c", parse_script("w-2, left-1"), np.tile(np.eye(4), (13, 1, 1)), np.eye(3), 75.0, (8, 6), 4,
                    suite.steps)
    model.reset(VIDEO[0], "", 0, info)
    with pytest.raises(ValueError, match="generated for"):
        model.step([Action(forward=-1)])


# ---------------------------------------------------------------- plug-in

def test_model_args_parse_without_hydra_plus():
    assert parse_model_args("weights=/ckpt/a,b,steps=8, scale=0.5,upsample=false,name=x,none=null") == {
        "weights": "/ckpt/a,b", "steps": 8, "scale": 0.5, "upsample": False, "name": "x", "none": None}
    with pytest.raises(ValueError, match="not KEY=VALUE"):
        parse_model_args("steps")
    with pytest.raises(ValueError, match="twice"):
        parse_model_args("a=1,a=2")


def test_did_you_mean_for_names_modules_classes_and_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mymodels.py").write_text("class PanModel:\n    def __init__(self, speed=1.0):\n        pass\n")
    with pytest.raises(ValueError, match="Did you mean 'matrix-game'"):
        build_model("matrix_game")
    with pytest.raises(ValueError, match="Did you mean 'mymodels:PanModel'"):
        build_model("mymodels.PanModel")
    with pytest.raises(ValueError, match="Did you mean 'PanModel'.*It defines: PanModel"):
        build_model("mymodels:PanModle")
    with pytest.raises(ValueError, match="takes no option 'sped'. Did you mean 'speed'"):
        build_model("mymodels:PanModel", sped=2.0)
    with pytest.raises(ValueError, match="Did you mean 'noise_sigma'"):
        build_model("oracle-noisy", nois_sigma=1.0)
    with pytest.raises(ValueError, match="--include-path"):
        build_model("elsewhere.models:PanModel")
    (tmp_path / "broken.py").write_text("import no_such_dependency_xyz\n")
    with pytest.raises(ValueError, match="imports 'no_such_dependency_xyz', which is not installed"):
        build_model("broken:Model")


def test_include_path_and_model_args_reach_the_factory(tiny_suite, tmp_path, monkeypatch):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "still_model.py").write_text(textwrap.dedent("""
        import numpy as np

        class StillModel:
            def __init__(self, gain=1.0, label="x"):
                self.gain, self.label = gain, label

            def reset(self, image, prompt, seed, info):
                self.image = image.astype(np.float32) / 255.0 * self.gain
                return self.image

            def step(self, actions):
                return np.repeat(self.image[None], 4 * len(actions), axis=0)
    """))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    code = main(["run", "--suite", str(tiny_suite), "--model", "still_model:StillModel", "--include-path",
                 str(plugins), "--model-args", "gain=0.5,label=a,b", "--out", str(out)])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert results["model_options"] == {"gain": 0.5, "label": "a,b"}
    assert results["cases"][0]["if_acc"] == 0.0  # a still video follows nothing
    assert main(["run", "--suite", str(tiny_suite), "--model", "still_model:StillModel", "--include-path",
                 str(plugins), "--model-args", "gain=0.5", "--out", str(tmp_path / "again"),
                 "+model_options.gain=1.0"]) == 2


def test_readme_example_runs_through_the_console_script(tmp_path):
    """The README's command, as written, from the repository folder, with the console script."""
    readme = (REPO / "README.md").read_text()
    line = next(line for line in readme.splitlines() if "--model examples.my_model:PanZoomModel" in line)
    argv = shlex.split(line)
    assert argv[0] in ("wcbench", ".venv/bin/wcbench")  # the tests run in .venv: use its console script
    argv[argv.index("--out") + 1] = str(tmp_path / "panzoom")
    script = Path(sys.executable).with_name("wcbench")
    proc = subprocess.run([str(script), *argv[1:], "--limit", "1"], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((tmp_path / "panzoom" / "results.json").read_text())
    assert results["cases"][0]["status"] == "ok" and results["model_name"] == "pan-zoom"
