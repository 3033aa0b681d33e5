"""The action vocabulary, the script grammar and how a script's steps line up with frames and clips.

Labels (WorldCompass-compatible): 9 translation labels x 9 rotation labels = 81 classes,
full label = 9 * translation + rotation.

Script grammar: comma-separated segments ``ACTION-COUNT``; ACTION is components joined by
``+``: translations ``w`` forward, ``s`` backward, ``a`` left, ``d`` right; rotations
``left``/``right`` (yaw), ``up``/``down`` (pitch); ``none`` alone for standing still.
COUNT is a number of latent steps of 4 frames. A video of L latents has 4L-3 frames; its
script totals L-1 latent steps; frame 0 is the start image and the transition into frame
f (f >= 1) carries the action of latent step ceil(f/4). A clip of K latents generates the
steps of :func:`clip_step_ranges`.

The camera motion an action stands for, and how a pose change is labelled, are in
:mod:`wcbench.core.camera`; the native controls of public world models in
:mod:`wcbench.core.controls`.
"""

from __future__ import annotations

from dataclasses import dataclass

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
