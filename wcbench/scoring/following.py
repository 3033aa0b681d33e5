"""Interaction following (IF): does the camera do what the actions said?

The one implementation used by ``wcbench score``, ``wcbench run`` and the trainer's reward.

Alignment (no off-by-one): transition f (frame f-1 -> f, f >= 1) carries the action of
latent step ceil(f/4). Each transition's estimated relative motion is labelled with the
estimator's fixed thresholds and compared with the commanded label: a hit on the full
81-class label, and separately on translation and on rotation. Per-clip accuracy = mean
over the clip's transitions; per-case = mean over clips.

``worldcompass-compat`` reproduces the released WorldCompass evaluation for comparison with
the paper. Every frame transition is labelled at each translation threshold {0.002, 0.005,
0.01} (strict ``>``, in the estimator's translation units per frame) with rotation at 0.2
degrees per frame, yaw and pitch read as the release reads them (ZYX Euler angles, which a
camera's roll moves a little; the default mode reads the forward axis's direction); per
4-frame chunk (one latent step) the accuracy of the best threshold is taken, after seeing the
answer; IF is the mean over chunks (every chunk alike, so a clip of 3
chunks weighs less than one of 4). Its alignment is the correct one above, not the released
evaluation's (one frame off).

The release's training reward ``fine_action`` (:func:`compat_fine_action`) is one number per
clip: the clip's transitions (16, or 12 for clip 0) are labelled at each compat threshold, ONE
threshold is chosen for the whole clip by its 81-class accuracy (the first on a tie), and the
reward is the mean of that threshold's translation accuracy and the rotation accuracy. Its
alignment is the one above (the release's training reward, unlike its evaluation, is not one
frame off). ``FollowingResult.step_accuracy("mean")`` in compat mode is a per-latent variant
(a threshold per chunk), which the trainer offers as ``fine_action_latent``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from wcbench.core.actions import FRAMES_PER_LATENT, NUM_ROTATION, Script, clip_step_ranges, label_hits
from wcbench.core.camera import Thresholds, classify_relative_pose, euler_yaw_pitch_deg, relative_pose, yaw_pitch_deg

COMPAT_MODE = "worldcompass-compat"
MODES = ("default", COMPAT_MODE)
COMPAT_TRANSLATION_THRESHOLDS = (0.002, 0.005, 0.01)
COMPAT_ROTATION_DEG = 0.2


@dataclass(frozen=True)
class ClipScore:
    """IF accuracy of one clip; ``frames`` is its first and last generated frame index."""

    clip: int
    frames: tuple[int, int]
    if_acc: float
    if_trans_acc: float
    if_rot_acc: float


@dataclass(frozen=True)
class FollowingResult:
    """IF scores of one video, plus the labels they came from (for confusion matrices)."""

    if_acc: float
    if_trans_acc: float
    if_rot_acc: float
    per_clip: tuple[ClipScore, ...]
    commanded: np.ndarray  # (T-1,) full labels, index f-1 = transition into frame f
    detected: np.ndarray   # (T-1,)
    hits: np.ndarray       # (3, T-1) bool: full, translation and rotation hit of every transition

    def step_accuracy(self, variant: str = "full") -> np.ndarray:
        """Accuracy of every latent step after the first, ``(L-1,)``: the mean hit over its 4
        transitions. ``full`` is the 81-class label, ``mean`` the mean of translation and
        rotation. Every step has 4 transitions, so the clip's score is the mean of its steps'."""
        if variant == "full":
            hits = self.hits[0].astype(float)
        elif variant == "mean":
            hits = 0.5 * (self.hits[1].astype(float) + self.hits[2].astype(float))
        else:
            raise ValueError(f"accuracy variant must be 'full' or 'mean', got {variant!r}")
        return hits.reshape(-1, FRAMES_PER_LATENT).mean(axis=1)


def commanded_labels(script: Script) -> np.ndarray:
    """Full label of every transition (index f-1 for the transition into frame f)."""
    return np.array([action.label for action in script.frame_actions()], dtype=np.int64)


def detected_labels(poses: np.ndarray, thresholds: Thresholds,
                    angles: Callable[[np.ndarray], tuple[float, float]] = yaw_pitch_deg) -> np.ndarray:
    """Full label of every transition from per-frame camera-to-world poses (T, 4, 4); ``angles``
    reads yaw and pitch off each relative rotation (see ``classify_relative_pose``)."""
    labels = []
    for f in range(1, len(poses)):
        t_label, r_label = classify_relative_pose(relative_pose(poses[f - 1], poses[f]), thresholds, angles)
        labels.append(NUM_ROTATION * t_label + r_label)
    return np.array(labels, dtype=np.int64)


def compat_labels(poses: np.ndarray) -> np.ndarray:
    """Full labels of every transition at each compat translation threshold (rotation at
    0.2 degrees, yaw and pitch read as the release's ZYX Euler angles), ``(thresholds, transitions)``."""
    return np.stack([detected_labels(poses, Thresholds(threshold, COMPAT_ROTATION_DEG), euler_yaw_pitch_deg)
                     for threshold in COMPAT_TRANSLATION_THRESHOLDS])


def _compat_hits(poses: np.ndarray, commanded: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-transition hits under the released WorldCompass rule: each transition labelled at
    every compat threshold; within each 4-transition chunk the full hits are those of the
    threshold with the most full hits and the translation hits those of the threshold with the
    most translation hits (the first on a tie). Returns (full, translation, rotation)."""
    full_all, trans_all, rot_all = label_hits(commanded[None], compat_labels(poses))
    rot = rot_all[0]  # rotation labels do not depend on the translation threshold
    full, trans = np.zeros_like(rot), np.zeros_like(rot)
    for start in range(0, len(commanded), FRAMES_PER_LATENT):
        chunk = slice(start, start + FRAMES_PER_LATENT)
        full[chunk] = full_all[np.argmax(full_all[:, chunk].sum(axis=1)), chunk]
        trans[chunk] = trans_all[np.argmax(trans_all[:, chunk].sum(axis=1)), chunk]
    return full, trans, rot


def compat_fine_action(poses: np.ndarray, script: Script) -> float:
    """The released WorldCompass training reward of one clip (its ``fine_action_acc``).

    ``poses`` (T, 4, 4) are the clip's frames with the frame before it (17, or 13 for clip 0),
    ``script`` the clip's own latent steps. Every transition is labelled at each compat
    threshold; the threshold with the highest 81-class accuracy over the whole clip is kept (the
    first on a tie, as the release's ``argmax``); the reward is the mean of its translation
    accuracy and the rotation accuracy. One number per clip, as the release trains on.
    """
    if len(poses) != script.num_frames:
        raise ValueError(f"{len(poses)} frames, but the clip's {script.num_steps} latent steps need "
                         f"{script.num_frames} (4L-3, with the frame before the clip)")
    full, trans, rot = label_hits(commanded_labels(script)[None], compat_labels(poses))
    best = int(np.argmax(full.mean(axis=1)))
    return float(0.5 * (trans[best].mean() + rot[best].mean()))


def clip_transitions(num_frames: int, latents_per_clip: int) -> list[range]:
    """Transition indices (0-based, index f-1 = into frame f) of each clip."""
    num_steps = (num_frames - 1) // FRAMES_PER_LATENT
    ranges = []
    for steps in clip_step_ranges(num_steps, latents_per_clip):
        first = FRAMES_PER_LATENT * (steps.start - 1) + 1
        last = FRAMES_PER_LATENT * steps.stop - FRAMES_PER_LATENT
        ranges.append(range(first - 1, last))
    return ranges


def score_following(poses: np.ndarray, script: Script, thresholds: Thresholds,
                    latents_per_clip: int = 4, mode: str = "default") -> FollowingResult:
    """Score estimated per-frame poses (T, 4, 4) against ``script``.

    Raises ValueError when the video has the wrong number of frames for the script.
    """
    if mode not in MODES:
        raise ValueError(f"unknown scoring mode {mode!r}; known: {', '.join(MODES)}")
    if len(poses) != script.num_frames:
        raise ValueError(f"{len(poses)} frames, but the script {script.num_steps} latent steps "
                         f"needs {script.num_frames} (4L-3)")
    commanded = commanded_labels(script)
    detected = detected_labels(poses, thresholds)
    if mode == "default":
        full, trans, rot = label_hits(commanded, detected)
    else:
        full, trans, rot = _compat_hits(poses, commanded)
    clips = tuple(
        ClipScore(index, (r.start + 1, r.stop), float(full[r].mean()), float(trans[r].mean()), float(rot[r].mean()))
        for index, r in enumerate(clip_transitions(len(poses), latents_per_clip))
    )
    if mode == "default":  # a case is the mean of its clips
        if_acc, if_trans, if_rot = (float(np.mean([getattr(c, name) for c in clips]))
                                    for name in ("if_acc", "if_trans_acc", "if_rot_acc"))
    else:  # the release averages its 4-frame chunks, i.e. all transitions alike
        if_acc, if_trans, if_rot = (float(hits.mean()) for hits in (full, trans, rot))
    return FollowingResult(
        if_acc=if_acc,
        if_trans_acc=if_trans,
        if_rot_acc=if_rot,
        per_clip=clips, commanded=commanded, detected=detected, hits=np.stack([full, trans, rot]),
    )
