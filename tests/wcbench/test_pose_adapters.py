"""Estimator registry, thresholds YAML, the ground-truth estimator and the learned adapters
(driven by small fake packages injected into sys.modules, not real weights)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import torch
import yaml

from wcbench.core.actions import parse_script
from wcbench.core.camera import StepSizes, Thresholds, classify_relative_pose, relative_pose, rot_y, script_trajectory
from wcbench.pose import (PoseEstimator, available_estimators, build_estimator, load_estimator_thresholds,
                          save_estimator_thresholds)
from wcbench.pose.base import keyframe_indices, poses_from_keyframes
from wcbench.pose.learned import chain_chunks

SCRIPT = "w+right-2, d-2, left-2"  # 6 steps -> 25 frames, 7 window boundaries


def true_trajectory() -> np.ndarray:
    start = np.eye(4)
    start[:3, :3] = rot_y(20.0)  # not the identity: estimators must re-base on frame 0
    start[:3, 3] = [1.0, 0.0, 2.0]
    return start[None] @ script_trajectory(parse_script(SCRIPT), StepSizes(0.05, 0.75))


def coded_frames(count: int, size: int = 28) -> np.ndarray:
    """Frame f is filled with the value 8 f, so a fake model can tell which frame it sees."""
    return np.stack([np.full((size, size, 3), 8 * f, np.uint8) for f in range(count)])


def frame_index(image) -> int:
    value = float(np.asarray(image, dtype=float).mean())
    return int(round(value * 255 / 8)) if value <= 1.0 else int(round(value / 8))


class FakeGeometryModel:
    """Answers with the true poses of the frames it is shown, in its own world frame and
    scale, which change on every call (as a real model's per-chunk normalisation does)."""

    def __init__(self):
        self.calls = 0
        self.truth = true_trajectory()

    def c2w_for(self, indices: list[int]) -> np.ndarray:
        self.calls += 1
        world = np.eye(4)
        world[:3, :3] = rot_y(7.0 * self.calls)
        world[:3, 3] = [0.5 * self.calls, -0.2, 0.1]
        poses = world[None] @ np.linalg.inv(self.truth[indices[0]])[None] @ self.truth[indices]
        poses[:, :3, 3] *= 1.0 + self.calls  # a different scale per call
        return poses

    def to(self, device):
        return self

    def eval(self):
        return self


def assert_matches_truth(estimate, num_frames: int, stride: int = 4):
    truth = np.linalg.inv(true_trajectory()[0])[None] @ true_trajectory()
    keys = keyframe_indices(num_frames, stride)
    got, want = estimate.poses[keys], truth[keys]
    np.testing.assert_allclose(got[:, :3, :3], want[:, :3, :3], atol=1e-6)
    ratios = np.linalg.norm(got[1:, :3, 3], axis=1) / np.linalg.norm(want[1:, :3, 3], axis=1)
    np.testing.assert_allclose(ratios, ratios[0], rtol=1e-6)  # one scale for the whole video
    np.testing.assert_allclose(got[1:, :3, 3] / ratios[0], want[1:, :3, 3], atol=1e-6)


# ---------------------------------------------------------------- registry and thresholds

def test_registry_names_and_did_you_mean():
    assert {"opencv", "gt", "da3", "worldmirror", "vggt"} <= set(available_estimators())
    assert build_estimator().name == "opencv"
    with pytest.raises(ValueError, match="Did you mean 'opencv'"):
        build_estimator("opencvv")
    with pytest.raises(TypeError, match="unknown option"):
        build_estimator("opencv", max_sidee=3)


def test_estimators_follow_the_protocol_and_take_thresholds():
    custom = Thresholds(0.5, 2.0, 0.1)
    for name in ("opencv", "gt", "da3", "vggt", "worldmirror"):
        estimator = build_estimator(name, thresholds=custom)
        assert isinstance(estimator, PoseEstimator)
        assert estimator.thresholds == custom and estimator.version


def test_thresholds_yaml_round_trip_keeps_other_keys(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"name": "mine", "options": {"weights": "/w"}}))
    wanted = Thresholds(0.00123, 0.456, 0.3)
    save_estimator_thresholds("mine", wanted, path=path, calibration={"seeds": [1, 2]})
    assert load_estimator_thresholds("mine", path=path) == wanted
    stored = yaml.safe_load(path.read_text())
    assert stored["options"] == {"weights": "/w"} and stored["calibration"]["seeds"] == [1, 2]
    with pytest.raises(FileNotFoundError, match="calibrate"):
        load_estimator_thresholds("missing", path=tmp_path / "missing.yaml")


def test_shipped_thresholds_load():
    for name in ("opencv", "gt"):
        thresholds = load_estimator_thresholds(name)
        assert thresholds.translation > 0 and thresholds.rotation_deg > 0


# ---------------------------------------------------------------- gt

def test_gt_returns_the_true_poses_relative_to_frame_zero():
    poses = true_trajectory()
    frames = coded_frames(len(poses))
    estimator = build_estimator("gt")
    assert estimator.uses_true_poses
    estimate = estimator.estimate(frames, true_poses=poses)
    assert estimate.units == "scene"
    np.testing.assert_allclose(estimate.poses, np.linalg.inv(poses[0])[None] @ poses, atol=1e-12)
    np.testing.assert_allclose(estimate.confidence, 1.0)
    actions = parse_script(SCRIPT).frame_actions()
    got = [classify_relative_pose(relative_pose(estimate.poses[f - 1], estimate.poses[f]), estimator.thresholds)
           for f in range(1, len(poses))]
    assert got == [(a.translation_label, a.rotation_label) for a in actions]


def test_gt_needs_matching_poses():
    estimator = build_estimator("gt")
    with pytest.raises(ValueError, match="true_poses"):
        estimator.estimate(coded_frames(5))
    with pytest.raises(ValueError, match="5 frames but 4"):
        estimator.estimate(coded_frames(5), true_poses=np.tile(np.eye(4), (4, 1, 1)))
    constructed = build_estimator("gt", poses=true_trajectory())
    assert constructed.estimate(coded_frames(25)).poses.shape == (25, 4, 4)


# ---------------------------------------------------------------- learned adapters

def test_chain_chunks_rebases_and_matches_scale():
    truth = true_trajectory()[[0, 4, 8, 12, 16]]
    first = np.linalg.inv(truth[0])[None] @ truth[:3]
    second = np.linalg.inv(truth[1])[None] @ truth[1:5]
    second[:, :3, 3] *= 3.0
    joined = chain_chunks([first, second])
    np.testing.assert_allclose(joined, np.linalg.inv(truth[0])[None] @ truth, atol=1e-9)


def test_poses_from_keyframes_keeps_the_keyframes():
    truth = true_trajectory()
    truth = np.linalg.inv(truth[0])[None] @ truth
    keys = keyframe_indices(len(truth))
    estimate = poses_from_keyframes(len(truth), truth[keys])
    np.testing.assert_allclose(estimate.poses[keys], truth[keys], atol=1e-9)


@pytest.fixture
def fake_da3(monkeypatch):
    model = FakeGeometryModel()

    class DepthAnything3:
        loaded_from = None

        @classmethod
        def from_pretrained(cls, path):
            cls.loaded_from = path
            return model

    def inference(images, process_res=504, **kwargs):
        indices = [frame_index(image) for image in images]
        w2c = np.linalg.inv(model.c2w_for(indices))[:, :3, :]
        return types.SimpleNamespace(extrinsics=w2c.astype(np.float32))

    model.inference = inference
    package = types.ModuleType("depth_anything_3")
    api = types.ModuleType("depth_anything_3.api")
    api.DepthAnything3 = DepthAnything3
    monkeypatch.setitem(sys.modules, "depth_anything_3", package)
    monkeypatch.setitem(sys.modules, "depth_anything_3.api", api)
    return DepthAnything3


def test_da3_adapter_with_fake_package(fake_da3, tmp_path):
    estimator = build_estimator("da3", weights=tmp_path, device="cpu", chunk_size=3)
    estimate = estimator.estimate(coded_frames(25))
    assert fake_da3.loaded_from == str(tmp_path)
    assert estimate.units == "scene" and estimate.poses.shape == (25, 4, 4)
    assert_matches_truth(estimate, 25)
    # frame_stride=1 (the release's interval=1): every frame is a keyframe, matched to the truth
    every = build_estimator("da3", weights=tmp_path, device="cpu", chunk_size=8, frame_stride=1)
    assert_matches_truth(every.estimate(coded_frames(25)), 25, stride=1)


@pytest.fixture
def fake_vggt(monkeypatch):
    model = FakeGeometryModel()

    class VGGT(torch.nn.Module):
        @classmethod
        def from_pretrained(cls, path):
            return VGGT()

        def forward(self, images):
            assert images.ndim == 4 and images.shape[1] == 3 and images.shape[-1] == 518
            assert images.shape[-2] % 14 == 0 and float(images.max()) <= 1.0
            indices = torch.tensor([frame_index(image.numpy()) for image in images], dtype=torch.float32)
            return {"pose_enc": indices[None, :, None]}

    def pose_encoding_to_extri_intri(pose_enc, image_hw):
        indices = [int(i) for i in pose_enc[0, :, 0]]
        w2c = np.linalg.inv(model.c2w_for(indices))[:, :3, :]
        return torch.from_numpy(w2c)[None], None

    for name in ("vggt", "vggt.models", "vggt.utils"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    models = types.ModuleType("vggt.models.vggt")
    models.VGGT = VGGT
    pose_enc = types.ModuleType("vggt.utils.pose_enc")
    pose_enc.pose_encoding_to_extri_intri = pose_encoding_to_extri_intri
    monkeypatch.setitem(sys.modules, "vggt.models.vggt", models)
    monkeypatch.setitem(sys.modules, "vggt.utils.pose_enc", pose_enc)


def test_vggt_adapter_with_fake_package(fake_vggt, tmp_path):
    estimate = build_estimator("vggt", weights=tmp_path, device="cpu", chunk_size=4).estimate(coded_frames(25))
    assert_matches_truth(estimate, 25)


def test_worldmirror_adapter_with_fake_module(monkeypatch, tmp_path):
    model = FakeGeometryModel()
    seen = {}

    class WorldMirror:
        @classmethod
        def from_pretrained(cls, path):
            return cls()

        def to(self, device):
            return self

        def eval(self):
            return self

        def __call__(self, views, cond_flags=(0, 0, 0)):  # the release's WorldMirror.forward signature
            seen["condition"] = cond_flags
            seen["intrinsics"] = views["camera_intrinsics"].shape if "camera_intrinsics" in views else None
            seen["frames"] = [frame_index(image.numpy()) for image in views["img"][0]]
            return {"camera_poses": torch.from_numpy(model.c2w_for(seen["frames"]))[None]}

    module = types.ModuleType("fake_worldmirror")
    module.WorldMirror = WorldMirror
    monkeypatch.setitem(sys.modules, "fake_worldmirror", module)
    estimator = build_estimator("worldmirror", weights=tmp_path, module="fake_worldmirror", device="cpu", chunk_size=5)
    estimate = estimator.estimate(coded_frames(25), fov_deg=80.0)
    assert seen["condition"] == [0, 0, 1] and seen["intrinsics"][-2:] == (3, 3)
    assert_matches_truth(estimate, 25)
    # the released WorldCompass reward: every frame (interval=1), no priors
    release = build_estimator("worldmirror", weights=tmp_path, module="fake_worldmirror", device="cpu",
                              chunk_size=32, frame_stride=1, use_intrinsics=False)
    estimate = release.estimate(coded_frames(25), fov_deg=80.0)
    assert seen["condition"] == [0, 0, 0] and seen["intrinsics"] is None and seen["frames"] == list(range(25))
    assert_matches_truth(estimate, 25, stride=1)
    with pytest.raises(ValueError, match="frame_stride is 4 .* or 1"):
        build_estimator("worldmirror", weights=tmp_path, frame_stride=2)


def test_missing_package_and_weights_are_explained(monkeypatch, tmp_path, fake_da3):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        build_estimator("da3", weights=tmp_path / "nowhere", device="cpu").estimate(coded_frames(5))
    monkeypatch.setitem(sys.modules, "vggt", None)
    monkeypatch.setitem(sys.modules, "vggt.models.vggt", None)
    with pytest.raises(ImportError, match="`vggt` package"):
        build_estimator("vggt", weights=tmp_path, device="cpu").estimate(coded_frames(5))
    with pytest.raises(FileNotFoundError, match="weights=PATH"):
        build_estimator("da3", device="cpu").estimate(coded_frames(5))
