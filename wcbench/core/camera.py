"""Camera geometry: rotations, relative poses, labelling a relative pose with thresholds, and
the camera trajectory a script commands.

Camera convention: OpenCV (x right, y down, z forward), camera-to-world 4x4 poses.
The world frame is the first camera's frame with zero pitch: yaw turns about world +y
(down), pitch about the camera's x axis, and there is no roll (a first-person camera).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from wcbench.core.actions import Action, Script

def rot_x(deg: float) -> np.ndarray:
    """Rotation about x; positive turns the camera's forward axis up (towards -y)."""
    a = math.radians(deg)
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(deg: float) -> np.ndarray:
    """Rotation about y (down); positive turns the forward axis right (towards +x)."""
    a = math.radians(deg)
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def relative_pose(c2w_a: np.ndarray, c2w_b: np.ndarray) -> np.ndarray:
    """Pose of camera b in camera a's frame: inv(c2w_a) @ c2w_b."""
    return np.linalg.inv(c2w_a) @ c2w_b


def yaw_pitch_deg(rotation: np.ndarray) -> tuple[float, float]:
    """Yaw (+ right) and pitch (+ up) in degrees of a relative rotation, read off where
    the forward axis goes; roll is ignored (it is not part of the action space)."""
    fx, fy, fz = rotation[:, 2]
    yaw = math.degrees(math.atan2(fx, fz))
    pitch = math.degrees(math.atan2(-fy, math.hypot(fx, fz)))
    return yaw, pitch


def euler_yaw_pitch_deg(rotation: np.ndarray) -> tuple[float, float]:
    """Yaw (+ right) and pitch (+ up) in degrees as the released WorldCompass reads them: the y
    and x angles of the ZYX Euler decomposition R = Rz Ry Rx (z is roll). With roll they differ
    from :func:`yaw_pitch_deg` by a little (about 0.2 degrees for the turns of generated video),
    enough to change a label at the 0.2-degree compat threshold."""
    cos_yaw = math.hypot(rotation[0, 0], rotation[1, 0])
    if cos_yaw > 1e-6:
        pitch = math.atan2(rotation[2, 1], rotation[2, 2])
    else:  # gimbal lock: the release's fallback
        pitch = math.atan2(-rotation[1, 2], rotation[1, 1])
    return math.degrees(math.atan2(-rotation[2, 0], cos_yaw)), math.degrees(pitch)


@dataclass(frozen=True)
class Thresholds:
    """Decision thresholds for turning a relative pose into labels.

    translation: minimum translation magnitude (in the pose's units) to count as moving.
    rotation_deg: minimum yaw / pitch angle (degrees) to count as turning.
    secondary_ratio: a second rotation axis also counts only when its angle is at least
        this fraction of the main one (0 disables the rule).
    """

    translation: float
    rotation_deg: float
    secondary_ratio: float = 0.0


def classify_translation(t: np.ndarray, threshold: float) -> int:
    """Translation label of a relative translation (camera frame of the earlier pose)."""
    norm = float(np.linalg.norm(t))
    if norm <= threshold or norm == 0.0:
        return 0
    cos_z, cos_x = t[2] / norm, t[0] / norm
    half = 0.5  # cos(60 deg): forward under 60 deg from +z, backward over 120 deg
    forward = 1 if cos_z > half else (-1 if cos_z < -half else 0)
    right = 1 if cos_x > half else (-1 if cos_x < -half else 0)
    return Action(forward=forward, right=right).translation_label


def classify_rotation(yaw_deg: float, pitch_deg: float, threshold: float,
                      secondary_ratio: float = 0.0) -> int:
    """Rotation label from yaw (+ right) and pitch (+ up) angles in degrees."""
    main = max(abs(yaw_deg), abs(pitch_deg))

    def sign(angle: float) -> int:
        is_active = abs(angle) > threshold and abs(angle) >= secondary_ratio * main
        return int(np.sign(angle)) if is_active else 0

    return Action(yaw=sign(yaw_deg), pitch=sign(pitch_deg)).rotation_label


def classify_relative_pose(rel: np.ndarray, thresholds: Thresholds,
                           angles: Callable[[np.ndarray], tuple[float, float]] = yaw_pitch_deg) -> tuple[int, int]:
    """(translation label, rotation label) of a 4x4 relative pose; ``angles`` reads yaw and pitch
    off its rotation (the forward axis's direction; :func:`euler_yaw_pitch_deg` for the release's)."""
    yaw, pitch = angles(rel[:3, :3])
    return (
        classify_translation(rel[:3, 3], thresholds.translation),
        classify_rotation(yaw, pitch, thresholds.rotation_deg, thresholds.secondary_ratio),
    )


# ---------------------------------------------------------------- trajectories

@dataclass(frozen=True)
class StepSizes:
    """Commanded motion per frame: translation in scene units, rotation in degrees."""

    translation: float = 0.05
    degrees: float = 0.75


def camera_rotation(yaw_deg: float, pitch_deg: float) -> np.ndarray:
    """World-from-camera rotation of a first-person camera (yaw about world y, then pitch)."""
    return rot_y(yaw_deg) @ rot_x(pitch_deg)


def trajectory_from_actions(frame_actions: list[Action], steps: StepSizes,
                            start: np.ndarray | None = None) -> np.ndarray:
    """Per-frame camera-to-world poses (N+1, 4, 4) from per-transition actions.

    Each transition moves by ``steps.translation`` along the previous camera's own axes (as
    WorldPlay's local trajectories do: ``w`` while looking up also rises) and then turns by
    ``steps.degrees`` on the commanded axes, so the relative motion between consecutive
    frames is exactly the commanded action in the camera frame.
    """
    pose = np.eye(4) if start is None else np.asarray(start, dtype=float).copy()
    forward = pose[:3, 2]
    yaw = math.degrees(math.atan2(forward[0], forward[2]))
    pitch = math.degrees(math.atan2(-forward[1], math.hypot(forward[0], forward[2])))
    position = pose[:3, 3].copy()
    poses = [pose]
    for action in frame_actions:
        move = np.array([action.right, 0.0, action.forward], dtype=float)
        if action.forward and action.right:
            move /= math.sqrt(2.0)
        position = position + camera_rotation(yaw, pitch) @ move * steps.translation
        yaw += action.yaw * steps.degrees
        pitch += action.pitch * steps.degrees
        pose = np.eye(4)
        pose[:3, :3] = camera_rotation(yaw, pitch)
        pose[:3, 3] = position
        poses.append(pose)
    return np.stack(poses)


def script_trajectory(script: Script, steps: StepSizes) -> np.ndarray:
    """Per-frame camera-to-world poses (4L-3, 4, 4) commanded by ``script``."""
    return trajectory_from_actions(script.frame_actions(), steps)


# ---------------------------------------------------------------- intrinsics

def intrinsics_from_fov(width: int, height: int, fov_deg: float) -> np.ndarray:
    """Pinhole K for a horizontal field of view, principal point at the image centre."""
    if not 1.0 < fov_deg < 179.0:
        raise ValueError(f"horizontal field of view must be between 1 and 179 degrees, got {fov_deg}")
    focal = 0.5 * width / math.tan(math.radians(fov_deg) / 2.0)
    return np.array([[focal, 0.0, width / 2.0], [0.0, focal, height / 2.0], [0.0, 0.0, 1.0]])
