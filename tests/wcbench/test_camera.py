"""Camera geometry: rotation conventions, labelling relative poses, trajectories from scripts."""

import numpy as np

from wcbench.core.actions import NUM_LABELS, NUM_ROTATION, Action, label_name, parse_script
from wcbench.core.camera import (StepSizes, Thresholds, classify_relative_pose, relative_pose, rot_x, rot_y,
                                 script_trajectory)


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
