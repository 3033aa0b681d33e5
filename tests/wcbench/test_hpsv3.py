"""HPSv3 scorers against a fake ``hpsv3`` package: a real package folder on sys.path whose
``HPSv3RewardInferencer`` behaves like the published one (reads the model config, refuses a
hub name when offline, loads a safetensors checkpoint, scores PIL images by their colour with
the loaded head) and records how it was called. No download, no GPU."""

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from wcbench.scoring import hpsv3 as hpsv3_module
from wcbench.scoring.case import ClipView, Scorers, score_clip_quality
from wcbench.scoring.hpsv3 import QUALITY_PROMPT, chunk_ends, load_quality_options, resolve_device
from wcbench.scoring.quality import build_quality_scorer

FAKE_INFERENCE = textwrap.dedent('''
    import os
    from pathlib import Path

    import numpy as np
    import safetensors.torch
    import torch
    import yaml

    CALLS = []  # (prompts, images as arrays, grad enabled) per reward() call
    BUILT = []  # one dict per constructed inferencer


    class HPSv3RewardInferencer:
        def __init__(self, config_path=None, checkpoint_path=None, device="cuda", differentiable=False):
            if checkpoint_path is None:
                raise RuntimeError("would download HPSv3.safetensors from the hub")
            settings = yaml.safe_load(Path(config_path).read_text())
            base = settings["model_name_or_path"]
            if not (Path(base) / "config.json").is_file():
                raise OSError(f"cannot reach the hub for {base} (offline)")
            self.head = safetensors.torch.load_file(checkpoint_path)["rm_head.weight"]  # (2, 3)
            BUILT.append({"base": base, "checkpoint": checkpoint_path, "device": device,
                          "offline": os.environ.get("HF_HUB_OFFLINE"), "settings": settings})

        def reward(self, image_paths, prompts):
            images = [np.asarray(image, dtype=np.float32) for image in image_paths]
            CALLS.append((list(prompts), images, torch.is_grad_enabled()))
            colour = torch.tensor(np.stack([image.reshape(-1, 3).mean(0) / 255 for image in images]))
            fixed_prompt = "A high-quality, ultra-detailed and well-structured image."
            prompt_bonus = torch.tensor([[0.5 if p == fixed_prompt else 0.0, 0.0] for p in prompts])
            return colour.float() @ self.head.T.float() + prompt_bonus
''')
PACKAGE_CONFIG = 'rm_head_type: "ranknet"\nmodel_name_or_path: "Qwen/Qwen2-VL-7B-Instruct"\noutput_dim: 2\n'


@pytest.fixture
def fake_hpsv3(tmp_path, monkeypatch):
    """The fake package on sys.path, local 'weights', and a clean environment."""
    package = tmp_path / "site" / "hpsv3"
    (package / "config").mkdir(parents=True)
    (package / "__init__.py").write_text("from .inference import HPSv3RewardInferencer, CALLS, BUILT\n")
    (package / "inference.py").write_text(FAKE_INFERENCE)
    (package / "config" / "HPSv3_7B.yaml").write_text(PACKAGE_CONFIG)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "hpsv3", raising=False)
    monkeypatch.delitem(sys.modules, "hpsv3.inference", raising=False)
    for name in ("HF_HUB_OFFLINE", hpsv3_module.BASE_MODEL_ENV, hpsv3_module.CHECKPOINT_ENV, "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hpsv3_module, "OPTIONS_FILE", tmp_path / "no-options.yaml")
    base = tmp_path / "Qwen2-VL-7B-Instruct"
    base.mkdir()
    (base / "config.json").write_text("{}")
    checkpoint = tmp_path / "HPSv3.safetensors"
    import safetensors.torch

    # mu = 10 * mean red - 5 * mean blue (sigma 1): bright red frames score high.
    safetensors.torch.save_file({"rm_head.weight": torch.tensor([[10.0, 0.0, -5.0], [0.0, 0.0, 0.0]])},
                                str(checkpoint))
    return {"base": base, "checkpoint": checkpoint, "options": {"base_model_path": str(base),
                                                                "checkpoint_path": str(checkpoint), "device": "cpu"}}


def _package():
    import hpsv3

    return hpsv3


def _reds(levels, size=(8, 12)):
    """One frame per level: red channel at that level, blue at 40."""
    frames = np.zeros((len(levels), *size, 3), np.uint8)
    frames[..., 0] = np.asarray(levels, np.uint8)[:, None, None]
    frames[..., 2] = 40
    return frames


def _expected_mu(frames):
    return 10 * frames[..., 0].mean(axis=(1, 2)) / 255 - 5 * frames[..., 2].mean(axis=(1, 2)) / 255


def test_loads_local_weights_offline_on_the_given_device(fake_hpsv3):
    scorer = build_quality_scorer("hpsv3", **fake_hpsv3["options"])
    scorer.score(_reds([100, 120]), prompt="a courtyard")
    built = _package().BUILT[-1]
    assert built["base"] == str(fake_hpsv3["base"])  # the shipped config, pointed at the local folder
    assert built["settings"]["rm_head_type"] == "ranknet"  # ... with everything else kept
    assert built["checkpoint"] == str(fake_hpsv3["checkpoint"])
    assert built["device"] == "cpu" and built["offline"] == "1"


def test_every_call_is_batched_and_without_gradients(fake_hpsv3):
    scorer = build_quality_scorer("hpsv3", batch_size=2, **fake_hpsv3["options"])
    scorer.score(_reds(np.linspace(40, 220, 10)), prompt="p")  # frames 0, 4, 8, 9
    calls = _package().CALLS
    assert [len(images) for _, images, _ in calls] == [2, 2]
    assert not any(grad for _, _, grad in calls)


def test_project_definition_scores_every_fourth_frame_against_the_caption(fake_hpsv3):
    frames = _reds(np.linspace(40, 220, 10))
    result = build_quality_scorer("hpsv3", **fake_hpsv3["options"]).score(frames, prompt="a sunlit courtyard")
    assert all(set(prompts) == {"a sunlit courtyard"} for prompts, _, _ in _package().CALLS)
    sampled = np.flatnonzero(~np.isnan(result.raw["hpsv3"]))
    assert sampled.tolist() == [0, 4, 8, 9]
    np.testing.assert_allclose(result.raw["hpsv3"][sampled], _expected_mu(frames[sampled]), rtol=1e-5)
    assert np.all(np.diff(result.per_frame) > 0)  # interpolated between the samples
    drift = build_quality_scorer("hpsv3-drift", **fake_hpsv3["options"]).score(frames[::-1].copy(), prompt="p")
    assert drift.per_frame[0] == 0.0 and np.all(drift.per_frame[1:] < 0)  # signed q_t - q_0


def test_worldcompass_definition_follows_the_release(fake_hpsv3):
    frames = _reds([100, 90, 90, 90, 130, 90, 90, 90, 70, 90, 90, 90, 100])  # 13 frames: chunk ends 4, 8, 12
    scorer = build_quality_scorer("hpsv3-worldcompass", **fake_hpsv3["options"])
    result = scorer.score(frames, prompt="the caption is not used at the release's weights")
    calls = _package().CALLS
    assert all(set(prompts) == {QUALITY_PROMPT} for prompts, _, _ in calls)
    scored = np.flatnonzero(~np.isnan(result.raw["hpsv3_quality"]))
    assert scored.tolist() == [0, 4, 8, 12]
    q = result.raw["hpsv3_quality"][scored]
    np.testing.assert_allclose(q, _expected_mu(frames[scored]) + 0.5, atol=0.02)  # JPEG moves colours a little
    np.testing.assert_allclose(result.raw["hpsv3_drift"][scored], -np.abs(q - q[0]))
    assert np.isnan(result.raw["hpsv3_caption"]).all()  # weight 0: never computed
    # vq = the drift (weights 0, 0, 1); each frame carries its chunk's value.
    np.testing.assert_allclose(result.per_frame, np.repeat(-np.abs(q - q[0]), [1, 4, 4, 4]))
    assert result.per_frame[4] < 0 and result.per_frame[12] == pytest.approx(0.0, abs=0.02)  # |drift| both ways


def test_worldcompass_frames_go_through_jpeg_like_the_release(fake_hpsv3):
    frames = np.random.default_rng(0).integers(0, 256, (5, 16, 16, 3), dtype=np.uint8)
    build_quality_scorer("hpsv3-worldcompass", **fake_hpsv3["options"]).score(frames)
    seen = _package().CALLS[-1][1]
    assert not np.array_equal(seen[0], frames[0].astype(np.float32))
    build_quality_scorer("hpsv3", **fake_hpsv3["options"]).score(frames)
    np.testing.assert_array_equal(_package().CALLS[-1][1][0], frames[0].astype(np.float32))


def test_worldcompass_weights_and_caption(fake_hpsv3):
    frames = _reds([100, 90, 90, 90, 130])
    result = build_quality_scorer("hpsv3-worldcompass", weights=[1, 1, 0], **fake_hpsv3["options"]).score(frames, "x")
    prompts = [p for call in _package().CALLS for p in call[0]]
    assert set(prompts) == {QUALITY_PROMPT, "x"}
    both = (result.raw["hpsv3_caption"] + result.raw["hpsv3_quality"]) / 2
    np.testing.assert_allclose(result.per_frame[[0, 4]], both[[0, 4]])
    with pytest.raises(ValueError, match="weights"):
        build_quality_scorer("hpsv3-worldcompass", weights=[0, 0, 0], **fake_hpsv3["options"])


def test_worldcompass_chunks_line_up_in_clip_views(fake_hpsv3):
    """A clip view (frame 0, the frame before the clip, the clip) ends on a latent boundary."""
    assert chunk_ends(13).tolist() == [0, 4, 8, 12]
    assert chunk_ends(18).tolist() == [1, 5, 9, 13, 17]
    video = _reds([100] + [90, 90, 90, 110] * 4)  # 17 frames, chunks end at 4, 8, 12, 16
    scorer = build_quality_scorer("hpsv3-worldcompass", **fake_hpsv3["options"])
    whole = scorer.score(video).per_frame
    view = ClipView(frames=video[8:17], script=None, reference=video[0])  # clip of latents 3-4
    clip_vq, _ = score_clip_quality(view, Scorers(estimator=None, quality=scorer))
    assert clip_vq == pytest.approx(whole[9:17].mean(), abs=1e-6)


def test_missing_weights_say_what_and_where(fake_hpsv3, monkeypatch, tmp_path):
    frames = _reds([100, 100])
    with pytest.raises(FileNotFoundError, match="base_model_path.*WCBENCH_HPSV3_BASE_MODEL"):
        build_quality_scorer("hpsv3", checkpoint_path=str(fake_hpsv3["checkpoint"])).score(frames)
    with pytest.raises(FileNotFoundError, match="checkpoint_path.*WCBENCH_HPSV3_CHECKPOINT"):
        build_quality_scorer("hpsv3", base_model_path=str(fake_hpsv3["base"])).score(frames)
    with pytest.raises(FileNotFoundError, match="no config.json"):
        build_quality_scorer("hpsv3", base_model_path=str(tmp_path), checkpoint_path="x").score(frames)
    with pytest.raises(FileNotFoundError, match="nowhere/HPSv3.safetensors"):
        build_quality_scorer("hpsv3", base_model_path=str(fake_hpsv3["base"]),
                             checkpoint_path="/nowhere/HPSv3.safetensors").score(frames)
    monkeypatch.setenv(hpsv3_module.BASE_MODEL_ENV, str(fake_hpsv3["base"]))
    monkeypatch.setenv(hpsv3_module.CHECKPOINT_ENV, str(fake_hpsv3["checkpoint"]))
    build_quality_scorer("hpsv3", device="cpu").score(frames)
    assert _package().BUILT[-1]["checkpoint"] == str(fake_hpsv3["checkpoint"])


def test_missing_package_names_the_extra(fake_hpsv3, monkeypatch):
    monkeypatch.setitem(sys.modules, "hpsv3", None)
    with pytest.raises(ImportError, match=r"worldcompass-bench\[hpsv3\]"):
        build_quality_scorer("hpsv3", **fake_hpsv3["options"]).score(_reds([1, 2]))


def test_each_rank_gets_its_own_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert resolve_device("auto") == "cuda:3"
    assert resolve_device("cuda:0") == "cuda:0"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"


def test_options_file_and_option_errors(fake_hpsv3, tmp_path):
    path = tmp_path / "hpsv3.yaml"
    path.write_text(yaml.safe_dump({"options": {"base_model_path": "/models/q", "checkpoint_path": None,
                                                "batch_size": 4}}))
    assert load_quality_options(path) == {"base_model_path": "/models/q", "batch_size": 4}
    assert load_quality_options(tmp_path / "absent.yaml") == {}
    with pytest.raises(ValueError, match="unknown options"):
        build_quality_scorer("hpsv3", checkpoint="x")
    with pytest.raises(ValueError, match="stride and batch_size"):
        build_quality_scorer("hpsv3", batch_size=0)


def test_shipped_options_file_parses():
    options = load_quality_options()
    assert set(options) <= {"base_model_path", "checkpoint_path", "device", "batch_size"}
    assert Path(hpsv3_module.OPTIONS_FILE).is_file()
