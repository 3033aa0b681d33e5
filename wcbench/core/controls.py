"""Action scripts in the native controls of public world models, and back.

Three families, each encoded the way its release feeds its model (sources and units:
docs/models.md):

- ``worldplay``: WorldPlay / HY-World 1.5 pose JSON (what its ``generate.py --pose`` reads), one
  camera-to-world pose and K per latent (:func:`to_worldplay_json`); read back with
  :func:`load_worldplay_json`, each pose checked to be rigid, and turned into the script it
  commands by the benchmark's labelling rule (:func:`script_from_latent_poses`).
- ``matrix-game``: Matrix-Game 2.0 per-frame arrays, ``keyboard_condition`` (N, 4) multi-hot
  over (forward, back, left, right) and ``mouse_condition`` (N, 2) as (pitch, yaw) deltas,
  positive = up / right, in the model's own mouse unit.
- ``text-actions``: the key and camera strings of Yume (``W+A``, ``↑→``) with their action
  sentences, one entry per run of equal latent steps, for text- or key-conditioned models
  such as Yume and Hunyuan-GameCraft.

Each ``to_*`` has an inverse that recovers one :class:`~wcbench.core.actions.Action` per latent
step or per frame transition, so a round trip can be checked against the script's labels.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from wcbench.core.actions import FRAMES_PER_LATENT, NUM_ROTATION, Action, Script, latents_for_frames, script_from_steps
from wcbench.core.camera import Thresholds, classify_relative_pose, relative_pose

FORMATS = ("worldplay", "matrix-game", "text-actions")
FORMAT_FILES = {"worldplay": "pose.json", "matrix-game": "matrix_game.json", "text-actions": "text_actions.json"}

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


# ---------------------------------------------------------------- Matrix-Game

MATRIX_GAME_KEYS = ("forward", "back", "left", "right")
MATRIX_GAME_MOUSE = 0.1  # per-frame mouse value of Matrix-Game 2.0's universal benchmark actions


def matrix_game_arrays(script: Script, mouse_value: float = MATRIX_GAME_MOUSE) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame (keyboard (N, 4), mouse (N, 2)) float32 for the ``script.num_frames`` frames.

    Row f conditions frame f, so rows 4k-3..4k hold latent step k; row 0 (the start
    image) repeats step 1, as Matrix-Game's first block conditions it.
    """
    frame_actions = script.frame_actions()
    rows = [frame_actions[0], *frame_actions]
    keyboard = np.array([[a.forward > 0, a.forward < 0, a.right < 0, a.right > 0] for a in rows], dtype=np.float32)
    mouse = np.array([[a.pitch, a.yaw] for a in rows], dtype=np.float32) * np.float32(mouse_value)
    return keyboard, mouse


def to_matrix_game(script: Script, mouse_value: float = MATRIX_GAME_MOUSE) -> dict[str, Any]:
    """The arrays of :func:`matrix_game_arrays` as a JSON-ready dict that names its axes."""
    keyboard, mouse = matrix_game_arrays(script, mouse_value)
    return {"format": "matrix-game", "num_frames": script.num_frames, "keyboard_keys": list(MATRIX_GAME_KEYS),
            "mouse_axes": ["pitch (+ up)", "yaw (+ right)"], "mouse_value": mouse_value,
            "note": "row f conditions frame f; row 0 (the start image) repeats the first latent step",
            "keyboard_condition": keyboard.astype(int).tolist(), "mouse_condition": mouse.tolist()}


def matrix_game_actions(keyboard: np.ndarray, mouse: np.ndarray) -> list[Action]:
    """One action per frame transition (rows 1..N-1) from Matrix-Game arrays."""
    keyboard, mouse = np.asarray(keyboard, dtype=float), np.asarray(mouse, dtype=float)
    if keyboard.ndim != 2 or keyboard.shape[1] != 4 or mouse.shape != (len(keyboard), 2):
        raise ValueError(f"Matrix-Game controls must be keyboard (N, 4) and mouse (N, 2), got {keyboard.shape} "
                         f"and {mouse.shape}")
    if not np.isin(keyboard, (0.0, 1.0)).all():
        raise ValueError("Matrix-Game keyboard_condition must hold only 0 and 1")
    actions = []
    for row, (forward, back, left, right) in enumerate(keyboard[1:], start=1):
        if (forward and back) or (left and right):
            raise ValueError(f"Matrix-Game keyboard_condition row {row} presses opposite keys")
        pitch, yaw = np.sign(mouse[row])
        actions.append(Action(int(forward - back), int(right - left), int(yaw), int(pitch)))
    return actions


# ---------------------------------------------------------------- text actions (Yume's vocabulary)

_KEYS = {(0, 0): "None", (1, 0): "W", (-1, 0): "S", (0, -1): "A", (0, 1): "D",
         (1, -1): "W+A", (1, 1): "W+D", (-1, 1): "S+D", (-1, -1): "S+A"}
_KEY_TEXT = {"None": "Person stands still (·).", "W": "Person moves forward (W).", "S": "Person moves backward (S).",
             "A": "Person moves left (A).", "D": "Person moves right (D).",
             "W+A": "Person moves forward and left (W+A).", "W+D": "Person moves forward and right (W+D).",
             "S+D": "Person moves backward and right (S+D).", "S+A": "Person moves backward and left (S+A)."}
_MOUSE = {(0, 0): "·", (1, 0): "→", (-1, 0): "←", (0, 1): "↑", (0, -1): "↓",
          (1, 1): "↑→", (-1, 1): "↑←", (1, -1): "↓→", (-1, -1): "↓←"}
_MOUSE_TEXT = {"·": "Camera remains still (·).", "→": "Camera turns right (→).", "←": "Camera turns left (←).",
               "↑": "Camera tilts up (↑).", "↓": "Camera tilts down (↓).",
               "↑→": "Camera tilts up and turns right (↑→).", "↑←": "Camera tilts up and turns left (↑←).",
               "↓→": "Camera tilts down and turns right (↓→).", "↓←": "Camera tilts down and turns left (↓←)."}
_KEY_SIGNS = {v: k for k, v in _KEYS.items()}
_MOUSE_SIGNS = {v: k for k, v in _MOUSE.items()}


def action_text(action: Action) -> tuple[str, str, str]:
    """(key string, camera string, action sentence) of one action, in Yume's vocabulary."""
    keys = _KEYS[(action.forward, action.right)]
    mouse = _MOUSE[(action.yaw, action.pitch)]
    return keys, mouse, _KEY_TEXT[keys] + _MOUSE_TEXT[mouse]  # Yume joins the sentences without a space


def to_text_actions(script: Script) -> list[dict[str, Any]]:
    """One entry per run of equal latent steps: its steps and frames (inclusive), key and
    camera strings, and the action sentence a text-conditioned model appends to its caption."""
    segments, step = [], 1
    for segment in script.segments:
        keys, mouse, text = action_text(segment.action)
        last = step + segment.count - 1
        segments.append({"steps": [step, last], "frames": [FRAMES_PER_LATENT * step - 3, FRAMES_PER_LATENT * last],
                         "keys": keys, "mouse": mouse, "text": text})
        step = last + 1
    return segments


def text_actions(segments: list[dict[str, Any]]) -> list[Action]:
    """One action per latent step from :func:`to_text_actions` entries (keys and mouse strings)."""
    actions: list[Action] = []
    for index, segment in enumerate(segments):
        first, last = segment["steps"]
        if first != len(actions) + 1 or last < first:
            raise ValueError(f"text action {index}: steps {first}..{last} do not continue from step {len(actions)}")
        if segment["keys"] not in _KEY_SIGNS or segment["mouse"] not in _MOUSE_SIGNS:
            raise ValueError(f"text action {index}: unknown keys {segment['keys']!r} or camera {segment['mouse']!r}; "
                             f"known: {', '.join(_KEY_SIGNS)} and {', '.join(_MOUSE_SIGNS)}")
        forward, right = _KEY_SIGNS[segment["keys"]]
        yaw, pitch = _MOUSE_SIGNS[segment["mouse"]]
        actions.extend([Action(forward, right, yaw, pitch)] * (last - first + 1))
    return actions


# ---------------------------------------------------------------- all formats

def encode(script: Script, fmt: str, frame_poses: np.ndarray, K: np.ndarray) -> Any:
    """``script`` in format ``fmt`` (JSON-ready); ``frame_poses``/``K`` feed the pose format."""
    if fmt == "worldplay":
        return to_worldplay_json(frame_poses, K)
    if fmt == "matrix-game":
        return to_matrix_game(script)
    if fmt == "text-actions":
        return {"format": "text-actions", "num_frames": script.num_frames, "segments": to_text_actions(script)}
    raise ValueError(f"unknown control format {fmt!r}; known: {', '.join(FORMATS)}")

