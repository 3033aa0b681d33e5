"""Native controls: every format round-trips to the script's labels, WorldPlay pose files are read
back and checked, `wcbench export --format` writes them, and the per-family adapters drive a (fake)
model package through them."""

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from wcbench.cli import main
from wcbench.core import controls
from wcbench.core.actions import NUM_LABELS, Action, parse_script, script_from_steps
from wcbench.core.camera import StepSizes, Thresholds, intrinsics_from_fov, script_trajectory
from wcbench.data.suite import load_suite
from wcbench.models.registry import build_model
from wcbench.scoring.following import commanded_labels

STEPS = load_suite("wc-mini").steps
# every one of the 81 labels, once each (81 latent steps), then the same script reversed
EVERY_LABEL = script_from_steps([Action.from_label(label) for label in range(NUM_LABELS)])
SCRIPTS = [EVERY_LABEL, script_from_steps(EVERY_LABEL.step_actions()[::-1]), parse_script("w-3, d+up-2, none-1")]


def _frame_labels(step_actions):
    return np.array([step_actions[-(-f // 4) - 1].label for f in range(1, 4 * len(step_actions) + 1)])


@pytest.mark.parametrize("script", SCRIPTS, ids=["every-label", "reversed", "short"])
def test_matrix_game_round_trip(script):
    data = json.loads(json.dumps(controls.to_matrix_game(script)))
    keyboard, mouse = np.array(data["keyboard_condition"]), np.array(data["mouse_condition"])
    assert keyboard.shape == (script.num_frames, 4) and mouse.shape == (script.num_frames, 2)
    labels = [a.label for a in controls.matrix_game_actions(keyboard, mouse)]
    assert np.array_equal(labels, commanded_labels(script))
    assert np.array_equal(keyboard[0], keyboard[1]) and np.array_equal(mouse[0], mouse[1])  # the first block


def test_matrix_game_conventions_match_the_release():
    """Matrix-Game 2.0: keys (forward, back, left, right); mouse (pitch, yaw), up and right positive."""
    keyboard, mouse = controls.matrix_game_arrays(parse_script("w+a+up-1, s+d+right-1"), mouse_value=0.1)
    assert keyboard[1:5].tolist() == [[1, 0, 1, 0]] * 4 and keyboard[5:].tolist() == [[0, 1, 0, 1]] * 4
    assert np.allclose(mouse[1:5], [0.1, 0.0]) and np.allclose(mouse[5:], [0.0, 0.1])
    with pytest.raises(ValueError, match="opposite keys"):
        controls.matrix_game_actions(np.array([[0, 0, 0, 0], [1, 1, 0, 0]]), np.zeros((2, 2)))


@pytest.mark.parametrize("script", SCRIPTS, ids=["every-label", "reversed", "short"])
def test_text_actions_round_trip(script):
    segments = json.loads(json.dumps(controls.to_text_actions(script), ensure_ascii=False))
    steps = controls.text_actions(segments)
    assert script_from_steps(steps) == script
    assert np.array_equal(_frame_labels(steps), commanded_labels(script))
    assert segments[-1]["frames"][1] == script.num_frames - 1


def test_text_actions_use_yumes_vocabulary():
    segments = controls.to_text_actions(parse_script("w+a+up+right-2, none-1, s+d+down+left-1"))
    assert [(s["keys"], s["mouse"], s["steps"], s["frames"]) for s in segments] == [
        ("W+A", "↑→", [1, 2], [1, 8]), ("None", "·", [3, 3], [9, 12]), ("S+D", "↓←", [4, 4], [13, 16])]
    assert segments[0]["text"] == "Person moves forward and left (W+A).Camera tilts up and turns right (↑→)."
    with pytest.raises(ValueError, match="do not continue"):
        controls.text_actions(segments[1:])


@pytest.mark.parametrize("script", SCRIPTS, ids=["every-label", "reversed", "short"])
def test_worldplay_round_trip(script):
    K = intrinsics_from_fov(832, 480, 75.0)
    data = json.loads(json.dumps(controls.encode(script, "worldplay", script_trajectory(script, STEPS), K)))
    latent_poses = np.stack([np.array(data[str(k)]["extrinsic"]) for k in range(script.num_latents)])
    half_step = Thresholds(2 * STEPS.translation, 2 * STEPS.degrees)  # half of one latent's commanded motion
    assert controls.step_labels_from_latent_poses(latent_poses, half_step) == [a.label for a in script.step_actions()]


def test_worldplay_json_round_trip(tmp_path):
    script = parse_script("w-2, w+left-3, up-2")
    poses = script_trajectory(script, StepSizes(0.05, 0.75))
    K = intrinsics_from_fov(160, 96, 75.0)
    path = tmp_path / "pose.json"
    path.write_text(json.dumps(controls.to_worldplay_json(poses, K)))
    data = json.loads(path.read_text())
    assert list(data) == [str(k) for k in range(script.num_latents)]
    latent_poses, Ks = controls.load_worldplay_json(path)
    assert np.allclose(latent_poses[0], np.eye(4))
    assert np.allclose(latent_poses[3], poses[12]) and np.allclose(Ks[0], K)
    labels = controls.step_labels_from_latent_poses(latent_poses, Thresholds(0.05, 1.0))
    assert labels == [a.label for a in script.step_actions()]


def test_worldplay_json_bad_input(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"0": {"extrinsic": [[1, 0], [0, 1]], "K": np.eye(3).tolist()}}))
    with pytest.raises(ValueError, match="4x4"):
        controls.load_worldplay_json(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json"):
        controls.load_worldplay_json(path)
    scaled = np.diag([2.0, 2.0, 2.0, 1.0])
    path.write_text(json.dumps({"0": {"extrinsic": np.eye(4).tolist()}, "1": {"extrinsic": scaled.tolist()}}))
    with pytest.raises(ValueError, match=r"bad\.json: latent 1: extrinsic is not a rigid .* not orthonormal"):
        controls.load_worldplay_json(path)


def test_script_from_latent_poses_is_the_step_labels_run_length_encoded():
    script = parse_script("w-2, w+left-3, up-2, none-1")
    latent_poses = script_trajectory(script, StepSizes(0.05, 0.75))[::4]
    assert controls.script_from_latent_poses(latent_poses, Thresholds(0.1, 1.5)) == script
    with pytest.raises(ValueError, match="at least 2 latent poses"):
        controls.script_from_latent_poses(latent_poses[:1], Thresholds(0.1, 1.5))


def test_export_formats_and_adding_one_later(tmp_path, write_tiny_suite):
    suite_path = write_tiny_suite(tmp_path, tracks=("combined",))
    out = tmp_path / "export"
    assert main(["export", "--suite", str(suite_path), "--out", str(out), "--format", "matrix-game"]) == 0
    case = load_suite(suite_path).cases[0]
    folder = out / case.id
    assert not (folder / "pose.json").exists()
    data = json.loads((folder / "matrix_game.json").read_text())
    labels = json.loads((folder / "labels.json").read_text())["labels"]
    actions = controls.matrix_game_actions(data["keyboard_condition"], data["mouse_condition"])
    assert [a.label for a in actions] == labels
    assert main(["export", "--suite", str(suite_path), "--out", str(out), "--format", "text-actions",
                 "--format", "worldplay"]) == 0
    steps = controls.text_actions(json.loads((folder / "text_actions.json").read_text())["segments"])
    assert _frame_labels(steps).tolist() == labels
    assert len(controls.load_worldplay_json(folder / "pose.json")[0]) == 32
    with pytest.raises(SystemExit) as exit_:
        main(["export", "--suite", str(suite_path), "--out", str(out), "--format", "camera"])
    assert exit_.value.code == 2


# ---------------------------------------------------------------- per-family adapters

FAKE_PACKAGE = '''
"""Stands in for a model release: a loader that builds a pipeline from local weights."""
import numpy as np
import torch

LOADED = []


def load_pipeline(weights, device="cpu", scale=1.0):
    LOADED.append((weights, device, scale))
    return Pipeline()


class Pipeline:
    """Pans the start image by the yaw its controls command; returns float tensors in [0, 1]."""

    def __call__(self, image, prompt, seed, num_frames, **controls):
        self.controls = controls
        yaw = yaw_per_frame(controls, num_frames)
        shifts = np.concatenate([[0], np.cumsum(yaw)]).astype(int) * 2
        frames = np.stack([np.roll(image, -s, axis=1) for s in shifts])
        return torch.from_numpy(frames).permute(0, 3, 1, 2).float() / 255.0


def yaw_per_frame(controls, num_frames):
    if "mouse_condition" in controls:
        return np.sign(controls["mouse_condition"][1:, 1])
    if "segments" in controls:
        turn = {"→": 1, "↑→": 1, "↓→": 1, "←": -1, "↑←": -1, "↓←": -1}
        return np.concatenate([[turn.get(s["mouse"], 0)] * (s["frames"][1] - s["frames"][0] + 1)
                               for s in controls["segments"]])
    poses = controls["poses"]
    yaw = []
    for k in range(1, len(poses)):
        before, after = np.array(poses[str(k - 1)]["extrinsic"]), np.array(poses[str(k)]["extrinsic"])
        forward = (np.linalg.inv(before) @ after)[:3, 2]
        yaw += [np.sign(round(float(np.degrees(np.arctan2(forward[0], forward[2]))), 3))] * 4
    return np.array(yaw)
'''


def install_fake_release(tmp_path: Path, monkeypatch) -> Path:
    """A checkout holding FAKE_PACKAGE as ``fake_release`` (not yet imported) and an empty weights folder."""
    package = tmp_path / "checkout"
    package.mkdir()
    (package / "fake_release.py").write_text(textwrap.dedent(FAKE_PACKAGE))
    (tmp_path / "weights").mkdir()
    monkeypatch.delitem(sys.modules, "fake_release", raising=False)
    return package


@pytest.mark.parametrize("family", ["matrix-game", "text-actions", "worldplay"])
def test_family_adapter_loads_lazily_from_local_weights_and_passes_native_controls(family, tmp_path, monkeypatch,
                                                                                   write_tiny_suite):
    package = install_fake_release(tmp_path, monkeypatch)
    weights = tmp_path / "weights"
    model = build_model(family, include_paths=[package], weights=str(weights), loader="fake_release:load_pipeline",
                        scale=2.0)
    assert "fake_release" not in sys.modules  # nothing imported until a case starts
    suite_path = write_tiny_suite(tmp_path, tracks=("basic",))
    from wcbench.run.runner import generate_case

    suite = load_suite(suite_path)
    case = suite.cases[0]
    video, _, world = generate_case(model, suite, case, seed=0)
    fake = sys.modules["fake_release"]
    assert fake.LOADED == [(str(weights), "cpu", 2.0)]
    script = case.parsed()
    yaw = np.array([a.yaw for a in script.frame_actions()])
    # (matrix-game's command runs on past the case's frames to whole blocks: see the next test)
    assert np.array_equal(fake.yaw_per_frame(model._pipeline.controls, script.num_frames)[:len(yaw)], yaw)
    shift = 2 * int(yaw.sum())
    assert len(video) == script.num_frames
    assert np.array_equal(video[-1], np.roll(world.image, -shift, axis=1))


def test_matrix_game_pads_its_command_to_whole_blocks(tmp_path, monkeypatch, write_tiny_suite):
    """Matrix-Game 2.0 generates 3 latents per block; a 32-latent case (125 frames) is asked for
    33 latents (129 frames), the last action held, and the case's 125 frames are kept."""
    package = install_fake_release(tmp_path, monkeypatch)
    suite = load_suite(write_tiny_suite(tmp_path, tracks=("basic",)))
    from wcbench.run.runner import generate_case

    for block_size, asked in ((3, 129), (1, 125)):
        model = build_model("matrix-game", include_paths=[package], weights=str(tmp_path / "weights"),
                            loader="fake_release:load_pipeline", block_size=block_size)
        video, _, _ = generate_case(model, suite, suite.cases[0], seed=0)
        keyboard = model._pipeline.controls["keyboard_condition"]
        assert len(video) == 125 and len(keyboard) == asked
        assert (keyboard[124:] == keyboard[124]).all()  # the last action held over the padding
    with pytest.raises(ValueError, match="block_size is latents per block"):
        build_model("matrix-game", weights=str(tmp_path / "weights"), loader="x:y", block_size=0)


def test_family_adapter_refuses_missing_weights_and_reads_its_size(tmp_path):
    with pytest.raises(FileNotFoundError, match="downloads nothing"):
        build_model("matrix-game", weights=str(tmp_path / "absent"), loader="x:y")
    assert build_model("worldplay", weights=str(tmp_path), loader="x:y", resolution="832x480").resolution == (832, 480)
    with pytest.raises(ValueError, match="WIDTHxHEIGHT"):
        build_model("worldplay", weights=str(tmp_path), loader="x:y", resolution="832")


def test_worldplay_translation_per_latent_is_selectable(tmp_path, monkeypatch, write_tiny_suite):
    """The suites move 0.2 per latent; translation_per_latent=0.08 gives WorldPlay's own pose-string
    scale, with the turns unchanged."""
    package = install_fake_release(tmp_path, monkeypatch)
    suite = load_suite(write_tiny_suite(tmp_path, tracks=("basic",)))
    from wcbench.run.runner import generate_case

    steps = {}
    for scale in (None, 0.08):
        model = build_model("worldplay", include_paths=[package], weights=str(tmp_path / "weights"),
                            loader="fake_release:load_pipeline", translation_per_latent=scale)
        generate_case(model, suite, suite.cases[0], seed=0)
        poses = model._pipeline.controls["poses"]
        c2w = [np.array(poses[str(k)]["extrinsic"]) for k in range(len(poses))]
        steps[scale] = [np.linalg.inv(a) @ b for a, b in zip(c2w, c2w[1:])]
    lengths = {scale: np.array([np.linalg.norm(s[:3, 3]) for s in rel]) for scale, rel in steps.items()}
    moving = lengths[None] > 1e-9
    assert moving.any() and np.allclose(lengths[None][moving], 0.2) and np.allclose(lengths[0.08][moving], 0.08)
    assert all(np.allclose(a[:3, :3], b[:3, :3]) for a, b in zip(steps[None], steps[0.08]))
    with pytest.raises(ValueError, match="translation_per_latent must be positive"):
        build_model("worldplay", weights=str(tmp_path / "weights"), loader="x:y", translation_per_latent=0)
