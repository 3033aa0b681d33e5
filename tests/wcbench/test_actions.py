"""Action model: grammar, labels, frame alignment, trajectories, WorldPlay pose JSON."""

import json

import numpy as np
import pytest

from wcbench.core.actions import (NUM_LABELS, NUM_ROTATION, Action, ScriptError, StepSizes, Thresholds,
                                  classify_relative_pose, clip_step_ranges, frames_for_latents, intrinsics_from_fov,
                                  label_hits, label_name, latents_for_frames, load_worldplay_json, parse_script,
                                  relative_pose, rot_x, rot_y, save_worldplay_json, script_from_latent_poses,
                                  script_from_steps, script_trajectory, step_labels_from_latent_poses,
                                  step_of_frame)


@pytest.mark.parametrize("text", [
    "w-3, w+left-4, d+up-2, none-1",
    "s-1",
    "w+a-2, s+d+right+down-5, left+up-1",
    "a+left-7, d+right-1, up-2, down-3",
])
def test_round_trip_canonical(text):
    script = parse_script(text)
    assert script.format() == text
    assert parse_script(script.format()) == script


def test_parse_normalises_order_and_spaces():
    assert parse_script(" left + w -3 ,up+a-2").format() == "w+left-3, a+up-2"


def test_example_counts_and_frames():
    script = parse_script("w-3, w+left-4, d+up-2, none-1")
    assert script.num_steps == 10
    assert script.num_frames == 41
    assert [a.format() for a in script.step_actions()][:4] == ["w", "w", "w", "w+left"]


@pytest.mark.parametrize("text, fragment", [
    ("w-3, jump-2", "unknown component 'jump'"),
    ("w+s-2", "oppose"),
    ("a+d-1", "oppose"),
    ("left+right-1", "oppose"),
    ("up+down-4", "oppose"),
    ("w-3, left", "missing count"),
    ("w-0", "at least 1"),
    ("w-x", "not a whole number"),
    ("w+w-2", "twice"),
    ("none+w-2", "'none' cannot"),
    ("w-1,,s-1", "empty segment"),
    ("", "empty script"),
    ("-3", "missing count"),
    ("w+-2", "empty component"),
])
def test_errors_name_the_segment(text, fragment):
    with pytest.raises(ScriptError) as err:
        parse_script(text)
    assert fragment in str(err.value)
    bad = [seg.strip() for seg in text.split(",") if seg.strip()]
    if bad and fragment not in ("empty script", "empty segment"):
        assert any(repr(seg) in str(err.value) for seg in bad)


@pytest.mark.parametrize("latents, frames", [(32, 125), (64, 253), (96, 381), (1, 1)])
def test_frame_counts(latents, frames):
    assert frames_for_latents(latents) == frames
    assert latents_for_frames(frames) == latents


def test_bad_frame_count():
    with pytest.raises(ValueError):
        latents_for_frames(124)


@pytest.mark.parametrize("frames", [125, 253, 381])
def test_transition_alignment(frames):
    """Transition into frame f carries latent step ceil(f/4); the script covers every one."""
    steps = latents_for_frames(frames) - 1
    actions = [Action.from_label(k % NUM_LABELS) for k in range(steps)]
    script = script_from_steps(actions)
    assert script.num_frames == frames
    per_frame = script.frame_actions()
    assert len(per_frame) == frames - 1
    for f in range(1, frames):
        assert per_frame[f - 1] == actions[step_of_frame(f) - 1]
    assert [step_of_frame(f) for f in (1, 4, 5, 8, 9)] == [1, 1, 2, 2, 3]
    with pytest.raises(ValueError):
        step_of_frame(0)


def test_clip_ranges_worldplay_chunks():
    ranges = clip_step_ranges(31, 4)
    assert len(ranges) == 8
    assert list(ranges[0]) == [1, 2, 3]
    assert list(ranges[1]) == [4, 5, 6, 7]
    assert ranges[-1].stop - 1 == 31
    assert len(clip_step_ranges(63, 4)) == 16 and len(clip_step_ranges(95, 4)) == 24


def _pose_for(action: Action, trans: float = 0.1, deg: float = 3.0) -> np.ndarray:
    """A relative pose that carries out ``action``."""
    pose = np.eye(4)
    move = np.array([action.right, 0.0, action.forward], float)
    if np.linalg.norm(move):
        move = move / np.linalg.norm(move)
    pose[:3, 3] = move * trans
    pose[:3, :3] = rot_y(action.yaw * deg) @ rot_x(action.pitch * deg)
    return pose


def test_all_81_labels_from_constructed_poses():
    thresholds = Thresholds(translation=0.01, rotation_deg=0.5)
    seen = set()
    for label in range(NUM_LABELS):
        action = Action.from_label(label)
        assert action.label == label
        t_label, r_label = classify_relative_pose(_pose_for(action), thresholds)
        assert NUM_ROTATION * t_label + r_label == label, label_name(label)
        seen.add(label)
    assert len(seen) == 81


def test_conventions_and_boundaries():
    th = Thresholds(0.01, 0.5)
    # yaw right turns +z towards +x; pitch up turns +z towards -y
    assert (rot_y(10) @ [0, 0, 1])[0] > 0 and (rot_x(10) @ [0, 0, 1])[1] < 0
    # 50 deg off forward is still forward+right; 25 deg is plain forward; under threshold is none
    for azimuth, expected in [(25, 1), (45, 5), (75, 3), (-45, 6), (180, 2), (-135, 8)]:
        pose = np.eye(4)
        pose[:3, 3] = [np.sin(np.radians(azimuth)), 0.0, np.cos(np.radians(azimuth))]
        assert classify_relative_pose(pose, th)[0] == expected, azimuth
    small = np.eye(4)
    small[:3, 3] = [0, 0, 0.005]
    small[:3, :3] = rot_y(0.3)
    assert classify_relative_pose(small, th) == (0, 0)


def test_secondary_ratio_suppresses_small_second_axis():
    pose = np.eye(4)
    pose[:3, :3] = rot_y(3.0) @ rot_x(0.8)
    assert classify_relative_pose(pose, Thresholds(0.01, 0.5))[1] == 5
    assert classify_relative_pose(pose, Thresholds(0.01, 0.5, secondary_ratio=0.4))[1] == 1


def test_trajectory_relative_motion_matches_commands():
    script = parse_script("w-2, right-2, d+up-2, s+left-2, a+down-1, none-1")
    poses = script_trajectory(script, StepSizes(0.05, 0.75))
    assert poses.shape == (script.num_frames, 4, 4)
    th = Thresholds(0.02, 0.3)
    for f, action in enumerate(script.frame_actions(), start=1):
        t_label, r_label = classify_relative_pose(relative_pose(poses[f - 1], poses[f]), th)
        assert NUM_ROTATION * t_label + r_label == action.label, (f, action)
        assert np.isclose(np.linalg.norm(poses[f, :3, 3] - poses[f - 1, :3, 3]),
                          0.05 if action.is_translation else 0.0)


def test_worldplay_json_round_trip(tmp_path):
    script = parse_script("w-2, w+left-3, up-2")
    poses = script_trajectory(script, StepSizes(0.05, 0.75))
    K = intrinsics_from_fov(160, 96, 75.0)
    path = tmp_path / "pose.json"
    save_worldplay_json(path, poses, K)
    data = json.loads(path.read_text())
    assert list(data) == [str(k) for k in range(script.num_latents)]
    latent_poses, Ks = load_worldplay_json(path)
    assert np.allclose(latent_poses[0], np.eye(4))
    assert np.allclose(latent_poses[3], poses[12]) and np.allclose(Ks[0], K)
    labels = step_labels_from_latent_poses(latent_poses, Thresholds(0.05, 1.0))
    assert labels == [a.label for a in script.step_actions()]


def test_worldplay_json_bad_input(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"0": {"extrinsic": [[1, 0], [0, 1]], "K": np.eye(3).tolist()}}))
    with pytest.raises(ValueError, match="4x4"):
        load_worldplay_json(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json"):
        load_worldplay_json(path)
    scaled = np.diag([2.0, 2.0, 2.0, 1.0])
    path.write_text(json.dumps({"0": {"extrinsic": np.eye(4).tolist()}, "1": {"extrinsic": scaled.tolist()}}))
    with pytest.raises(ValueError, match=r"bad\.json: latent 1: extrinsic is not a rigid .* not orthonormal"):
        load_worldplay_json(path)


def test_script_from_latent_poses_is_the_step_labels_run_length_encoded():
    script = parse_script("w-2, w+left-3, up-2, none-1")
    latent_poses = script_trajectory(script, StepSizes(0.05, 0.75))[::4]
    assert script_from_latent_poses(latent_poses, Thresholds(0.1, 1.5)) == script
    with pytest.raises(ValueError, match="at least 2 latent poses"):
        script_from_latent_poses(latent_poses[:1], Thresholds(0.1, 1.5))


def test_label_hits_split_full_translation_and_rotation():
    def label(text: str) -> int:
        return parse_script(f"{text}-1").step_actions()[0].label

    commanded = [label("w+left"), label("w+left"), label("w+left"), label("none")]
    detected = [label("w+left"), label("w"), label("left"), label("a+up")]
    full, trans, rot = label_hits(commanded, detected)
    assert full.tolist() == [True, False, False, False]
    assert trans.tolist() == [True, True, False, False]
    assert rot.tolist() == [True, False, True, False]
