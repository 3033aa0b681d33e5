"""Action scripts in the native controls of public world models, and back.

Three families, each encoded the way its release feeds its model (sources and units:
docs/models.md):

- ``worldplay``: WorldPlay / HY-World 1.5 pose JSON, one camera-to-world pose and K per
  latent (:func:`wcbench.core.actions.to_worldplay_json`).
- ``matrix-game``: Matrix-Game 2.0 per-frame arrays, ``keyboard_condition`` (N, 4) multi-hot
  over (forward, back, left, right) and ``mouse_condition`` (N, 2) as (pitch, yaw) deltas,
  positive = up / right, in the model's own mouse unit.
- ``text-actions``: the key and camera strings of Yume (``W+A``, ``↑→``) with their action
  sentences, one entry per run of equal latent steps, for text- or key-conditioned models
  such as Yume and Hunyuan-GameCraft.

Each ``to_*`` has a ``*_actions`` inverse that recovers one :class:`Action` per latent step
or per frame transition, so a round trip can be checked against the script's labels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wcbench.core.actions import FRAMES_PER_LATENT, Action, Script, to_worldplay_json

FORMATS = ("worldplay", "matrix-game", "text-actions")
FORMAT_FILES = {"worldplay": "pose.json", "matrix-game": "matrix_game.json", "text-actions": "text_actions.json"}

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

