"""Action vocabulary, script grammar, frame alignment, trajectories and WorldPlay pose JSON.

Camera convention: OpenCV (x right, y down, z forward), camera-to-world 4x4 poses.
The world frame is the first camera's frame with zero pitch: yaw turns about world +y
(down), pitch about the camera's x axis, and there is no roll (a first-person camera).

Labels (WorldCompass-compatible): 9 translation labels x 9 rotation labels = 81 classes,
full label = 9 * translation + rotation.

Script grammar: comma-separated segments ``ACTION-COUNT``; ACTION is components joined by
``+``: translations ``w`` forward, ``s`` backward, ``a`` left, ``d`` right; rotations
``left``/``right`` (yaw), ``up``/``down`` (pitch); ``none`` alone for standing still.
COUNT is a number of latent steps of 4 frames. A video of L latents has 4L-3 frames; its
script totals L-1 latent steps; frame 0 is the start image and the transition into frame
f (f >= 1) carries the action of latent step ceil(f/4).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

FRAMES_PER_LATENT = 4

TRANSLATION_LABELS = (
    "none", "forward", "backward", "right", "left",
    "forward+right", "forward+left", "backward+right", "backward+left",
)
ROTATION_LABELS = (
    "none", "yaw-right", "yaw-left", "pitch-up", "pitch-down",
    "yaw-right+pitch-up", "yaw-right+pitch-down", "yaw-left+pitch-up", "yaw-left+pitch-down",
)
NUM_TRANSLATION = len(TRANSLATION_LABELS)
NUM_ROTATION = len(ROTATION_LABELS)
NUM_LABELS = NUM_TRANSLATION * NUM_ROTATION

# (forward_sign, right_sign) -> translation label; (yaw_sign, pitch_sign) -> rotation label.
# Signs: forward +1 / backward -1; right +1 / left -1; yaw-right +1; pitch-up +1.
_TRANSLATION_INDEX = {
    (0, 0): 0, (1, 0): 1, (-1, 0): 2, (0, 1): 3, (0, -1): 4,
    (1, 1): 5, (1, -1): 6, (-1, 1): 7, (-1, -1): 8,
}
_ROTATION_INDEX = {
    (0, 0): 0, (1, 0): 1, (-1, 0): 2, (0, 1): 3, (0, -1): 4,
    (1, 1): 5, (1, -1): 6, (-1, 1): 7, (-1, -1): 8,
}
_TRANSLATION_SIGNS = {v: k for k, v in _TRANSLATION_INDEX.items()}
_ROTATION_SIGNS = {v: k for k, v in _ROTATION_INDEX.items()}

# Grammar components: name -> (axis, sign).
_COMPONENTS = {
    "w": ("forward", 1), "s": ("forward", -1),
    "d": ("right", 1), "a": ("right", -1),
    "right": ("yaw", 1), "left": ("yaw", -1),
    "up": ("pitch", 1), "down": ("pitch", -1),
}
_AXES = ("forward", "right", "yaw", "pitch")
_CANONICAL = {  # axis -> {sign: token}, in canonical output order
    "forward": {1: "w", -1: "s"},
    "right": {1: "d", -1: "a"},
    "yaw": {-1: "left", 1: "right"},
    "pitch": {1: "up", -1: "down"},
}


class ScriptError(ValueError):
    """An action script does not follow the grammar; the message names the bad segment."""


@dataclass(frozen=True)
class Action:
    """One latent step's command: a sign per axis (-1, 0, +1).

    forward: +1 forward (w), -1 backward (s); right: +1 right (d), -1 left (a);
    yaw: +1 turn right, -1 turn left; pitch: +1 look up, -1 look down.
    """

    forward: int = 0
    right: int = 0
    yaw: int = 0
    pitch: int = 0

    @property
    def translation_label(self) -> int:
        return _TRANSLATION_INDEX[(self.forward, self.right)]

    @property
    def rotation_label(self) -> int:
        return _ROTATION_INDEX[(self.yaw, self.pitch)]

    @property
    def label(self) -> int:
        """Full 81-class label, 9 * translation + rotation."""
        return NUM_ROTATION * self.translation_label + self.rotation_label

    @property
    def is_translation(self) -> bool:
        return self.forward != 0 or self.right != 0

    @property
    def is_rotation(self) -> bool:
        return self.yaw != 0 or self.pitch != 0

    def format(self) -> str:
        """Canonical token, e.g. ``w+left``; ``none`` for standing still."""
        tokens = [_CANONICAL[axis][getattr(self, axis)] for axis in _AXES if getattr(self, axis)]
        return "+".join(tokens) if tokens else "none"

    @classmethod
    def from_label(cls, label: int) -> "Action":
        """Inverse of :attr:`label`."""
        if not 0 <= label < NUM_LABELS:
            raise ValueError(f"label {label} is outside 0..{NUM_LABELS - 1}")
        forward, right = _TRANSLATION_SIGNS[label // NUM_ROTATION]
        yaw, pitch = _ROTATION_SIGNS[label % NUM_ROTATION]
        return cls(forward, right, yaw, pitch)


def label_hits(commanded: np.ndarray, detected: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hit rule, per transition: (full label, translation part, rotation part) of ``detected``
    equal to ``commanded`` (arrays of full labels). Scoring, submissions and reports all use it."""
    commanded, detected = np.asarray(commanded), np.asarray(detected)
    return (detected == commanded, detected // NUM_ROTATION == commanded // NUM_ROTATION,
            detected % NUM_ROTATION == commanded % NUM_ROTATION)


def label_name(label: int) -> str:
    """Human-readable name of a full label, e.g. ``forward | yaw-left``."""
    return f"{TRANSLATION_LABELS[label // NUM_ROTATION]} | {ROTATION_LABELS[label % NUM_ROTATION]}"


@dataclass(frozen=True)
class Segment:
    action: Action
    count: int

    def format(self) -> str:
        return f"{self.action.format()}-{self.count}"


@dataclass(frozen=True)
class Script:
    """A parsed action script: segments of (action, number of latent steps)."""

    segments: tuple[Segment, ...]

    @property
    def num_steps(self) -> int:
        """Latent steps commanded (L - 1)."""
        return sum(seg.count for seg in self.segments)

    @property
    def num_latents(self) -> int:
        return self.num_steps + 1

    @property
    def num_frames(self) -> int:
        return frames_for_latents(self.num_latents)

    def step_actions(self) -> list[Action]:
        """One action per latent step, steps 1..L-1 at list index 0..L-2."""
        return [seg.action for seg in self.segments for _ in range(seg.count)]

    def frame_actions(self) -> list[Action]:
        """One action per frame transition: index f-1 holds the transition into frame f."""
        steps = self.step_actions()
        return [steps[step_of_frame(f) - 1] for f in range(1, self.num_frames)]

    def format(self) -> str:
        return ", ".join(seg.format() for seg in self.segments)

    def __str__(self) -> str:
        return self.format()


def frames_for_latents(num_latents: int) -> int:
    """Frames in a video of ``num_latents`` latents: 4L-3 (32 -> 125, 64 -> 253, 96 -> 381)."""
    if num_latents < 1:
        raise ValueError(f"a video has at least one latent, got {num_latents}")
    return FRAMES_PER_LATENT * num_latents - 3


def latents_for_frames(num_frames: int) -> int:
    """Inverse of :func:`frames_for_latents`; raises if ``num_frames`` is not 4L-3."""
    if num_frames < 1 or (num_frames + 3) % FRAMES_PER_LATENT:
        raise ValueError(f"{num_frames} frames is not 4L-3 for any whole number of latents L")
    return (num_frames + 3) // FRAMES_PER_LATENT


def step_of_frame(frame: int) -> int:
    """Latent step (1-based) whose action produced ``frame`` (f >= 1): ceil(f / 4)."""
    if frame < 1:
        raise ValueError(f"frame 0 is the start image and carries no action (got {frame})")
    return -(-frame // FRAMES_PER_LATENT)


def _parse_action(text: str, segment: str) -> Action:
    tokens = [tok.strip() for tok in text.split("+")]
    if any(not tok for tok in tokens):
        raise ScriptError(f"segment {segment!r}: empty component in {text!r}")
    if tokens == ["none"]:
        return Action()
    if "none" in tokens:
        raise ScriptError(f"segment {segment!r}: 'none' cannot be combined with other components")
    signs = dict.fromkeys(_AXES, 0)
    for tok in tokens:
        if tok not in _COMPONENTS:
            known = ", ".join(sorted(_COMPONENTS) + ["none"])
            raise ScriptError(f"segment {segment!r}: unknown component {tok!r} (known: {known})")
        axis, sign = _COMPONENTS[tok]
        if signs[axis] == sign:
            raise ScriptError(f"segment {segment!r}: component {tok!r} appears twice")
        if signs[axis]:
            raise ScriptError(f"segment {segment!r}: components oppose each other on the {axis} axis")
        signs[axis] = sign
    return Action(**signs)


def parse_script(text: str) -> Script:
    """Parse a script such as ``"w-3, w+left-4, d+up-2, none-1"``.

    Raises :class:`ScriptError` naming the bad segment.
    """
    if not isinstance(text, str) or not text.strip():
        raise ScriptError("empty script: write segments like 'w-3, w+left-4'")
    segments = []
    for raw in text.split(","):
        seg = raw.strip()
        if not seg:
            raise ScriptError(f"empty segment in script {text!r} (two commas in a row?)")
        action_text, dash, count_text = seg.rpartition("-")
        if not dash or not action_text.strip():
            raise ScriptError(f"segment {seg!r}: missing count; write ACTION-COUNT, e.g. 'w-3'")
        count_text = count_text.strip()
        if not count_text.isdigit():
            raise ScriptError(f"segment {seg!r}: count {count_text!r} is not a whole number")
        count = int(count_text)
        if count == 0:
            raise ScriptError(f"segment {seg!r}: count must be at least 1")
        segments.append(Segment(_parse_action(action_text.strip(), seg), count))
    return Script(tuple(segments))


def script_from_steps(actions: list[Action]) -> Script:
    """Run-length encode per-step actions into a script."""
    segments: list[Segment] = []
    for action in actions:
        if segments and segments[-1].action == action:
            segments[-1] = Segment(action, segments[-1].count + 1)
        else:
            segments.append(Segment(action, 1))
    return Script(tuple(segments))


# ---------------------------------------------------------------- clips

def clip_step_ranges(num_steps: int, latents_per_clip: int = 4) -> list[range]:
    """Latent steps (1-based) generated by each clip.

    Clip 0 holds latents 0..K-1 (latent 0 is the start image, so it commands K-1 steps);
    clip c >= 1 holds latents cK..cK+K-1. 32 latents with K=4 -> 8 clips.
    """
    ranges = []
    start = 1
    end = latents_per_clip - 1
    while start <= num_steps:
        ranges.append(range(start, min(end, num_steps) + 1))
        start, end = end + 1, end + latents_per_clip
    return ranges


def clip_step_actions(script: Script, clip: int, latents_per_clip: int = 4) -> list[Action]:
    """The actions of the latent steps clip ``clip`` generates (see :func:`clip_step_ranges`)."""
    steps = clip_step_ranges(script.num_steps, latents_per_clip)[clip]
    return script.step_actions()[steps.start - 1:steps.stop - 1]


def clip_of_transition(frame: int, latents_per_clip: int = 4) -> int:
    """Clip index (0-based) that generates ``frame`` (f >= 1)."""
    return step_of_frame(frame) // latents_per_clip


# ---------------------------------------------------------------- geometry

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
    return _TRANSLATION_INDEX[(forward, right)]


def classify_rotation(yaw_deg: float, pitch_deg: float, threshold: float,
                      secondary_ratio: float = 0.0) -> int:
    """Rotation label from yaw (+ right) and pitch (+ up) angles in degrees."""
    main = max(abs(yaw_deg), abs(pitch_deg))

    def sign(angle: float) -> int:
        is_active = abs(angle) > threshold and abs(angle) >= secondary_ratio * main
        return int(np.sign(angle)) if is_active else 0

    return _ROTATION_INDEX[(sign(yaw_deg), sign(pitch_deg))]


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


# ---------------------------------------------------------------- WorldPlay pose JSON

def latent_frame(latent: int) -> int:
    """Frame whose pose stands for a latent in WorldPlay pose JSON: the last frame of its
    4-frame window (latent 0 is frame 0, latent k >= 1 is frame 4k)."""
    return FRAMES_PER_LATENT * latent


def to_worldplay_json(frame_poses: np.ndarray, K: np.ndarray) -> dict:
    """WorldPlay pose dict ``{"0": {"extrinsic": c2w, "K": K}, ...}``, one entry per latent."""
    num_latents = latents_for_frames(len(frame_poses))
    return {
        str(k): {"extrinsic": frame_poses[latent_frame(k)].tolist(), "K": np.asarray(K).tolist()}
        for k in range(num_latents)
    }


def save_worldplay_json(path: str | Path, frame_poses: np.ndarray, K: np.ndarray) -> None:
    Path(path).write_text(json.dumps(to_worldplay_json(frame_poses, K), indent=1))


RIGID_TOLERANCE = 1e-4  # |R^T R - I| and |det R - 1| allowed in a pose file (float32 writers, rounding)


def rigid_problem(matrix: np.ndarray) -> str | None:
    """Why a 4x4 matrix is not a rigid camera pose (rotation, translation, last row 0 0 0 1), or
    ``None`` when it is; scaled, sheared, mirrored or projective matrices have no camera motion."""
    rotation = matrix[:3, :3]
    if not np.isfinite(matrix).all():
        return "holds NaN or infinity"
    if not np.allclose(matrix[3], (0.0, 0.0, 0.0, 1.0), atol=RIGID_TOLERANCE):
        return f"last row is {matrix[3].tolist()}, not [0, 0, 0, 1]"
    if np.abs(rotation.T @ rotation - np.eye(3)).max() > RIGID_TOLERANCE:
        return "rotation part is not orthonormal (scaled or sheared)"
    if abs(np.linalg.det(rotation) - 1.0) > RIGID_TOLERANCE:
        return "rotation part has determinant -1 (a mirror, not a rotation)"
    return None


def parse_worldplay_poses(data: object, where: str) -> tuple[np.ndarray, np.ndarray]:
    """One WorldPlay pose trajectory ``{"0": {"extrinsic": c2w, "K": K}, ...}`` as per-latent c2w
    poses (L, 4, 4) and K (L, 3, 3), each pose checked to be rigid; ``where`` names the trajectory
    (file, and index in a file of many) in every error."""
    if not isinstance(data, dict) or not data:
        raise ValueError(f"{where}: a trajectory must be a non-empty mapping of latent index to "
                         f"{{\"extrinsic\": 4x4 c2w, \"K\": 3x3}}, got {type(data).__name__}")
    keys = sorted(data, key=lambda k: int(k)) if all(str(k).isdigit() for k in data) else None
    if not keys or [int(k) for k in keys] != list(range(len(keys))):
        raise ValueError(f"{where}: keys must be latent indices 0..L-1")
    poses, Ks = [], []
    for key in keys:
        entry = data[key]
        if not isinstance(entry, dict) or "extrinsic" not in entry:
            raise ValueError(f"{where}: latent {key}: needs an 'extrinsic' (4x4 camera-to-world)")
        try:
            extrinsic = np.asarray(entry["extrinsic"], dtype=float)
            K = np.asarray(entry.get("K", np.eye(3)), dtype=float)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: latent {key}: not a numeric matrix: {err}") from err
        if extrinsic.shape != (4, 4) or K.shape != (3, 3):
            raise ValueError(f"{where}: latent {key}: extrinsic must be 4x4 and K 3x3, got {extrinsic.shape} "
                             f"and {K.shape}")
        problem = rigid_problem(extrinsic)
        if problem:
            raise ValueError(f"{where}: latent {key}: extrinsic is not a rigid camera-to-world pose: {problem}")
        poses.append(extrinsic)
        Ks.append(K)
    return np.stack(poses), np.stack(Ks)


def load_worldplay_json(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read a WorldPlay pose JSON: per-latent c2w poses (L, 4, 4) and K (L, 3, 3)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: cannot read WorldPlay pose JSON: {err}") from err
    return parse_worldplay_poses(data, str(path))


def step_labels_from_latent_poses(latent_poses: np.ndarray, thresholds: Thresholds) -> list[int]:
    """Full labels per latent step from per-latent poses (e.g. a WorldPlay pose file)."""
    labels = []
    for k in range(1, len(latent_poses)):
        t_label, r_label = classify_relative_pose(relative_pose(latent_poses[k - 1], latent_poses[k]), thresholds)
        labels.append(NUM_ROTATION * t_label + r_label)
    return labels


def script_from_latent_poses(latent_poses: np.ndarray, thresholds: Thresholds) -> Script:
    """The action script a per-latent pose trajectory commands: each latent step labelled by
    :func:`step_labels_from_latent_poses` (the benchmark's rule), run-length encoded."""
    if len(latent_poses) < 2:
        raise ValueError(f"a trajectory needs at least 2 latent poses to command a step, got {len(latent_poses)}")
    return script_from_steps([Action.from_label(label)
                              for label in step_labels_from_latent_poses(latent_poses, thresholds)])
