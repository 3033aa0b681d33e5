"""Threshold calibration: plateau search, vectorised labels, calibration videos, degradations."""

from __future__ import annotations

import numpy as np
import pytest

from wcbench.core.actions import parse_script
from wcbench.core.camera import (StepSizes, Thresholds, classify_relative_pose, classify_rotation, classify_translation,
                                 relative_pose, rot_x, rot_y, script_trajectory)
from wcbench.pose.base import PoseEstimate
from wcbench.pose.calibration import (calibrate, calibrate_thresholds, confusion_report, rotation_labels,
                                      translation_labels, widest_plateau)
from wcbench.pose.calibration_videos import CalibrationSpec, degrade, render_calibration_videos

SCRIPTS = ["w-2, left-2, none-1", "d+up-2, s+right-2, none-1", "a-1, down-2, w+left-2"]


def noisy_estimate(script: str, seed: int, translation_noise: float = 0.002,
                   rotation_noise: float = 0.1) -> PoseEstimate:
    """True per-frame motion of ``script`` plus per-transition noise, chained into poses."""
    rng = np.random.default_rng(seed)
    truth = script_trajectory(parse_script(script), StepSizes(0.05, 0.75))
    poses = [np.eye(4)]
    for f in range(1, len(truth)):
        rel = relative_pose(truth[f - 1], truth[f])
        noise = np.eye(4)
        noise[:3, :3] = rot_y(rng.normal(0, rotation_noise)) @ rot_x(rng.normal(0, rotation_noise))
        noise[:3, 3] = rng.normal(0, translation_noise, 3)
        poses.append(poses[-1] @ rel @ noise)
    return PoseEstimate(np.stack(poses), np.ones(len(poses)), "scene")


def test_calibration_separates_a_small_set():
    estimates = [noisy_estimate(script, seed) for seed, script in enumerate(SCRIPTS)]
    result = calibrate(estimates, SCRIPTS)
    thresholds = result.thresholds
    assert result.translation.accuracy == 1.0 and result.rotation.accuracy == 1.0
    assert 0.002 < thresholds.translation < 0.035  # between the noise and a commanded step
    assert 0.1 < thresholds.rotation_deg < 0.7
    assert result.translation.low <= thresholds.translation <= result.translation.high
    assert thresholds.translation == pytest.approx(np.sqrt(result.translation.low * result.translation.high))
    for estimate, script in zip(estimates, SCRIPTS):
        actions = parse_script(script).frame_actions()
        got = [classify_relative_pose(relative_pose(estimate.poses[f - 1], estimate.poses[f]), thresholds)
               for f in range(1, len(estimate.poses))]
        assert got == [(a.translation_label, a.rotation_label) for a in actions]
    assert calibrate_thresholds(estimates, SCRIPTS) == thresholds


def test_calibration_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="commanded"):
        calibrate([noisy_estimate("w-2", 0)], ["w-3"])


def test_widest_plateau_takes_the_log_centre():
    # accuracy 1 between 0.01 and 1.0, worse elsewhere; a narrow perfect run at 5-6 loses
    def accuracy(value: float) -> float:
        return 1.0 if 0.01 < value < 1.0 or 5.0 < value < 6.0 else 0.5

    plateau = widest_plateau(np.array([0.01, 1.0, 5.0, 6.0]), accuracy, 0.001, 100.0)
    assert (plateau.low, plateau.high, plateau.accuracy) == (0.01, 1.0, 1.0)
    assert plateau.value == pytest.approx(0.1)


def test_vectorised_labels_match_the_action_model():
    rng = np.random.default_rng(3)
    translations = rng.normal(0, 0.01, (200, 3))
    yaw, pitch = rng.normal(0, 1.0, 200), rng.normal(0, 1.0, 200)
    expected_t = [classify_translation(t, 0.01) for t in translations]
    expected_r = [classify_rotation(y, p, 0.5, 0.4) for y, p in zip(yaw, pitch)]
    assert translation_labels(translations, 0.01).tolist() == expected_t
    assert rotation_labels(yaw, pitch, 0.5, 0.4).tolist() == expected_r


def test_confusion_report_of_exact_estimates_is_diagonal():
    estimates = [noisy_estimate(script, seed, 0.0, 0.0) for seed, script in enumerate(SCRIPTS)]
    report = confusion_report(estimates, SCRIPTS, Thresholds(0.01, 0.3, 0.5))
    t_conf, r_conf = np.array(report["translation_confusion"]), np.array(report["rotation_confusion"])
    assert t_conf.sum() == r_conf.sum() == report["transitions"] == 3 * 20
    assert np.all(t_conf == np.diag(np.diag(t_conf))) and np.all(r_conf == np.diag(np.diag(r_conf)))
    assert report["accuracy"]["full"] == 1.0
    assert report["components"]["forward"]["recall"] == 1.0


def test_calibration_videos_small_spec():
    spec = CalibrationSpec(seeds=(5,), tracks=("combined",), families=("room",), num_steps=2, step_scales=(1.0, 1.5),
                           resolution=(48, 40), degradations=("clean", "jpeg"))
    videos = list(render_calibration_videos(spec))
    assert len(videos) == 4  # 2 step scales x 2 degradations
    clean, jpeg = videos[0], videos[1]
    assert clean.frames.shape == (13, 40, 48, 3)  # 2 steps + 1 standing still -> 4 latents
    assert clean.script == jpeg.script and clean.script.endswith("none-1")
    assert not np.array_equal(clean.frames, jpeg.frames)
    actions = clean.commanded()
    assert len(actions) == 12 and all(a.label == 0 for a in actions[-4:])
    assert all(a.is_translation and a.is_rotation for a in actions[:8])  # combined track
    assert videos[2].case.steps.translation == pytest.approx(0.075)
    assert videos[2].case.steps.degrees == pytest.approx(1.125)


def test_calibration_cases_cover_every_family_and_drive_like_a_car():
    from wcbench.pose.calibration_videos import CASE_TRACKS, motion_case

    spec = CalibrationSpec(seeds=(5,), tracks=("car", "basic"), num_steps=3, step_scales=(1.0,), resolution=(32, 32),
                           degradations=("clean",))
    videos = list(render_calibration_videos(spec))
    assert [v.case.family for v in videos] == ["room", "room", "terrain", "terrain", "street", "street"]
    assert spec.num_videos == len(videos)
    car = motion_case("terrain", 5, "car", 12)
    assert all(a.forward == 1 and a.right == 0 and a.pitch == 0 for a in parse_script(car.script).step_actions()[:-1])
    assert 1.0 <= car.steps.degrees <= 3.0
    assert car == motion_case("terrain", 5, "car", 12)  # deterministic
    assert "car" in CASE_TRACKS


def test_degradations():
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (2, 32, 32, 3), dtype=np.uint8)
    assert degrade(frames, "clean") is frames
    blurred = degrade(frames, "blur").astype(float)
    assert np.abs(np.diff(blurred, axis=2)).mean() < 0.5 * np.abs(np.diff(frames.astype(float), axis=2)).mean()
    assert np.array_equal(degrade(frames, "noise", seed=1), degrade(frames, "noise", seed=1))
    assert degrade(frames, "jpeg").shape == frames.shape
    with pytest.raises(ValueError, match="unknown degradation"):
        degrade(frames, "fog")


def test_warp_displaces_each_frame_by_its_own_smooth_field():
    """On a horizontal ramp (grey level = x) a displacement dx shows as a grey-level change of
    dx: its size follows ``warp_px``, it varies smoothly over the frame, and frames differ."""
    from wcbench.pose.calibration_videos import DegradationSettings

    ramp = np.repeat(np.repeat(np.arange(40, 200, dtype=np.uint8)[None, :, None], 160, axis=0)[None], 3, axis=3)
    frames = np.repeat(ramp, 3, axis=0)
    settings = DegradationSettings(warp_px=6.0)
    warped = degrade(frames, "warp", seed=2, settings=settings)
    assert np.array_equal(warped, degrade(frames, "warp", seed=2, settings=settings))
    dx = warped[:, 20:-20, 20:-20, 0].astype(float) - frames[:, 20:-20, 20:-20, 0]
    assert 2.0 < dx.std() < 12.0
    assert np.abs(np.diff(dx, axis=2)).mean() < 0.6  # smooth: neighbours move alike
    assert np.abs(dx[0] - dx[1]).mean() > 1.0  # each frame has its own field


def test_diagonal_calibration_scripts_command_two_axes_of_one_kind():
    import numpy as np

    from wcbench.core.actions import parse_script
    from wcbench.core.camera import StepSizes, script_trajectory, yaw_pitch_deg
    from wcbench.pose.calibration_videos import diagonal_script
    from wcbench.data.suite import PITCH_LIMIT_DEG

    for seed in range(20):
        text = diagonal_script(np.random.default_rng(seed), 12, 1.5)
        steps = parse_script(text).step_actions()
        assert len(steps) == 12
        for action in steps:  # a diagonal move or a diagonal turn in every step
            assert (action.forward and action.right) or (action.yaw and action.pitch), text
        poses = script_trajectory(parse_script(text), StepSizes(0.05, 1.5))
        pitches = [yaw_pitch_deg(pose[:3, :3])[1] for pose in poses]
        assert max(abs(p) for p in pitches) <= PITCH_LIMIT_DEG + 1e-6, text


def test_motion_case_rejects_an_unknown_track():
    from wcbench.pose.calibration_videos import motion_case

    with pytest.raises(ValueError, match="unknown calibration track 'diagonl'.*diagonal"):
        motion_case("room", 9000, "diagonl", 8)
