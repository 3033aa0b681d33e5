"""Threshold calibration: per-transition motion of an estimator's outputs on videos with known
motion in, per-estimator thresholds out.

``calibrate_thresholds`` runs over any estimator's outputs on the calibration videos
(:mod:`wcbench.pose.calibration_videos`) and picks each threshold at the log-scale centre of
the widest plateau of maximal accuracy (within half a percent): the translation threshold from
translation-label accuracy, the rotation threshold and the secondary-axis ratio from
rotation-label accuracy (coordinate-wise, twice). Calibrate on calibration seeds only, never
on the scenes you report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from wcbench.core.actions import (NUM_ROTATION, NUM_TRANSLATION, ROTATION_LABELS, TRANSLATION_LABELS, Action,
                                  parse_script)
from wcbench.core.camera import Thresholds, classify_translation, yaw_pitch_deg
from wcbench.pose.base import PoseEstimate
from wcbench.pose.calibration_videos import CalibrationSpec, CalibrationVideo, render_calibration_videos

# rotation label by (yaw sign + 1, pitch sign + 1), taken from the action model itself
_ROTATION_TABLE = np.array([[Action(yaw=y, pitch=p).rotation_label for p in (-1, 0, 1)] for y in (-1, 0, 1)])


# ---------------------------------------------------------------- motion per transition

@dataclass
class TransitionMotion:
    """Per-transition relative motion of many videos, concatenated."""

    translation: np.ndarray  # (N, 3)
    yaw: np.ndarray  # (N,) degrees
    pitch: np.ndarray  # (N,) degrees
    commanded: list[Action]

    @property
    def translation_targets(self) -> np.ndarray:
        return np.array([a.translation_label for a in self.commanded])

    @property
    def rotation_targets(self) -> np.ndarray:
        return np.array([a.rotation_label for a in self.commanded])


def _as_actions(commanded: str | Sequence[Action], transitions: int) -> list[Action]:
    actions = parse_script(commanded).frame_actions() if isinstance(commanded, str) else list(commanded)
    if len(actions) != transitions:
        raise ValueError(f"{transitions} transitions estimated but {len(actions)} commanded")
    return actions


def collect_motion(estimates: Iterable[PoseEstimate], commanded: Iterable[str | Sequence[Action]]) -> TransitionMotion:
    """Relative motion per frame transition of each estimate, with its commanded action.

    ``commanded`` holds, per video, a script or a list of per-transition actions.
    """
    translations, yaws, pitches, actions = [], [], [], []
    for estimate, command in zip(estimates, commanded, strict=True):
        poses = estimate.poses
        rels = np.linalg.inv(poses[:-1]) @ poses[1:]
        actions += _as_actions(command, len(rels))
        translations.append(rels[:, :3, 3])
        angles = np.array([yaw_pitch_deg(rel[:3, :3]) for rel in rels]).reshape(-1, 2)
        yaws.append(angles[:, 0])
        pitches.append(angles[:, 1])
    return TransitionMotion(np.concatenate(translations), np.concatenate(yaws), np.concatenate(pitches), actions)


def translation_labels(translation: np.ndarray, threshold: float) -> np.ndarray:
    """Vectorised :func:`wcbench.core.camera.classify_translation`."""
    direction = np.array([classify_translation(t, 0.0) for t in translation], dtype=int)
    return np.where(np.linalg.norm(translation, axis=1) > threshold, direction, 0)


def rotation_labels(yaw: np.ndarray, pitch: np.ndarray, threshold: float, secondary_ratio: float) -> np.ndarray:
    """Vectorised :func:`wcbench.core.camera.classify_rotation`."""
    main = np.maximum(np.abs(yaw), np.abs(pitch))

    def active_sign(angle: np.ndarray) -> np.ndarray:
        is_active = (np.abs(angle) > threshold) & (np.abs(angle) >= secondary_ratio * main)
        return np.where(is_active, np.sign(angle), 0).astype(int)

    return _ROTATION_TABLE[active_sign(yaw) + 1, active_sign(pitch) + 1]


# ---------------------------------------------------------------- plateau search

@dataclass(frozen=True)
class Plateau:
    """The chosen value, the plateau it centres and the accuracy there."""

    value: float
    low: float
    high: float
    accuracy: float


def widest_plateau(switch_points: np.ndarray, accuracy_at, low_bound: float, high_bound: float,
                   tolerance: float = 0.0) -> Plateau:
    """Log-scale centre of the widest run of maximal accuracy (within ``tolerance``).

    Accuracy is constant between consecutive switch points (where a label flips), so it is
    evaluated once per interval; ``accuracy_at(value)`` gives it.
    """
    points = np.unique(switch_points[(switch_points > low_bound) & (switch_points < high_bound)])
    edges = np.concatenate([[low_bound], points, [high_bound]])
    accuracy = np.array([accuracy_at(float(np.sqrt(lo * hi))) for lo, hi in zip(edges[:-1], edges[1:])])
    best = accuracy.max()
    is_best = accuracy >= best - tolerance - 1e-12
    runs, start = [], None
    for index, flag in enumerate(np.append(is_best, False)):
        if flag and start is None:
            start = index
        elif not flag and start is not None:
            runs.append((edges[start], edges[index]))
            start = None
    low, high = max(runs, key=lambda run: np.log(run[1] / run[0]))
    return Plateau(float(np.sqrt(low * high)), float(low), float(high), float(best))


def _bounds(values: np.ndarray) -> tuple[float, float]:
    """Search range: a decade around the data, but no lower than 1 % of the largest value,
    so an exact estimator (gt: zero where nothing was commanded) gets a threshold a decade
    under the smallest command rather than one at the edge of rounding error."""
    positive = values[values > 0]
    if positive.size == 0:
        return 1e-6, 1.0
    top = float(positive.max())
    return max(float(positive.min()) / 10.0, top * 1e-2), top * 10.0


@dataclass
class CalibrationResult:
    thresholds: Thresholds
    translation: Plateau
    rotation: Plateau
    secondary_ratio: Plateau
    num_transitions: int


def calibrate(estimates: Iterable[PoseEstimate], commanded: Iterable[str | Sequence[Action]],
              initial_ratio: float = 0.3, tolerance: float = 0.005, min_ratio: float = 0.05) -> CalibrationResult:
    """Choose thresholds on calibration videos; see the module doc.

    tolerance: accuracy within this of the best still counts as maximal. Measured: with 0
        a handful of hard JPEG transitions pin each threshold to a sliver (translation
        plateau 0.0024-0.0030, secondary ratio 0.92-1.0); half a percent widens the
        plateaus (0.0012-0.0037, 0.46-1.0) and costs under 0.7 % of JPEG accuracy.
    min_ratio: lower end of the secondary-ratio search (commanded pairs turn both axes
        equally; the diagonal calibration scripts bound the ratio from above).
    """
    motion = collect_motion(estimates, commanded)
    t_target, r_target = motion.translation_targets, motion.rotation_targets
    # 1. translation: its labels depend on the translation threshold only
    norms = np.linalg.norm(motion.translation, axis=1)
    direction = translation_labels(motion.translation, 0.0)
    translation = widest_plateau(norms, lambda th: float(np.mean(np.where(norms > th, direction, 0) == t_target)),
                                 *_bounds(norms), tolerance)
    # 2. rotation threshold and secondary ratio, coordinate-wise
    yaw, pitch = motion.yaw, motion.pitch
    angles = np.concatenate([np.abs(yaw), np.abs(pitch)])
    main = np.maximum(np.abs(yaw), np.abs(pitch))
    ratios = np.minimum(np.abs(yaw), np.abs(pitch)) / np.where(main > 0, main, 1.0)

    def rotation_accuracy(threshold: float, ratio: float) -> float:
        return float(np.mean(rotation_labels(yaw, pitch, threshold, ratio) == r_target))

    ratio = Plateau(initial_ratio, initial_ratio, initial_ratio, float("nan"))
    rotation = widest_plateau(angles, lambda th: rotation_accuracy(th, ratio.value), *_bounds(angles), tolerance)
    for _ in range(2):
        ratio = widest_plateau(ratios, lambda r: rotation_accuracy(rotation.value, r), min_ratio, 1.0, tolerance)
        rotation = widest_plateau(angles, lambda th: rotation_accuracy(th, ratio.value), *_bounds(angles), tolerance)
    thresholds = Thresholds(translation=translation.value, rotation_deg=rotation.value, secondary_ratio=ratio.value)
    return CalibrationResult(thresholds, translation, rotation, ratio, len(motion.commanded))


def calibrate_thresholds(estimates: Iterable[PoseEstimate], commanded: Iterable[str | Sequence[Action]]) -> Thresholds:
    """Thresholds at the log-scale centres of the widest plateaus of maximal accuracy."""
    return calibrate(estimates, commanded).thresholds


# ---------------------------------------------------------------- report

def confusion_report(estimates: Iterable[PoseEstimate], commanded: Iterable[str | Sequence[Action]],
                     thresholds: Thresholds) -> dict:
    """Confusion matrices (rows commanded, columns estimated), accuracies and per-component
    precision / recall of the labels ``thresholds`` give."""
    motion = collect_motion(estimates, commanded)
    t_pred = translation_labels(motion.translation, thresholds.translation)
    r_pred = rotation_labels(motion.yaw, motion.pitch, thresholds.rotation_deg, thresholds.secondary_ratio)
    t_true, r_true = motion.translation_targets, motion.rotation_targets
    t_conf = np.zeros((NUM_TRANSLATION, NUM_TRANSLATION), dtype=int)
    r_conf = np.zeros((NUM_ROTATION, NUM_ROTATION), dtype=int)
    np.add.at(t_conf, (t_true, t_pred), 1)
    np.add.at(r_conf, (r_true, r_pred), 1)
    pred_actions = [Action.from_label(NUM_ROTATION * t + r) for t, r in zip(t_pred, r_pred)]
    components = {"forward": ("forward", 1), "backward": ("forward", -1), "right": ("right", 1),
                  "left": ("right", -1), "yaw-right": ("yaw", 1), "yaw-left": ("yaw", -1),
                  "pitch-up": ("pitch", 1), "pitch-down": ("pitch", -1)}
    per_component = {}
    for name, (axis, sign) in components.items():
        truth = np.array([getattr(a, axis) == sign for a in motion.commanded])
        guess = np.array([getattr(a, axis) == sign for a in pred_actions])
        hits = int(np.sum(truth & guess))
        per_component[name] = {"precision": hits / max(int(guess.sum()), 1), "recall": hits / max(int(truth.sum()), 1),
                               "support": int(truth.sum())}
    return {
        "transitions": len(motion.commanded),
        "accuracy": {"full": float(np.mean((t_pred == t_true) & (r_pred == r_true))),
                     "translation": float(np.mean(t_pred == t_true)), "rotation": float(np.mean(r_pred == r_true))},
        "translation_labels": list(TRANSLATION_LABELS), "translation_confusion": t_conf.tolist(),
        "rotation_labels": list(ROTATION_LABELS), "rotation_confusion": r_conf.tolist(),
        "components": per_component,
    }


# ---------------------------------------------------------------- end to end

def estimate_video(estimator, video: CalibrationVideo) -> PoseEstimate:
    """Run ``estimator`` on one calibration video (true poses go to estimators that use them)."""
    if getattr(estimator, "uses_true_poses", False):
        return estimator.estimate(video.frames, K=video.K, true_poses=video.poses)
    return estimator.estimate(video.frames, K=video.K)


def run_calibration(estimator, spec: CalibrationSpec = CalibrationSpec()) -> tuple[CalibrationResult, dict]:
    """Render ``spec``'s videos, estimate them, choose thresholds and report the confusion
    matrices those thresholds give. Returns (result, report)."""
    estimates, scripts = [], []
    for video in render_calibration_videos(spec):
        estimates.append(estimate_video(estimator, video))
        scripts.append(video.script)
    result = calibrate(estimates, scripts)
    return result, confusion_report(estimates, scripts, result.thresholds)


def calibration_record(estimator, spec: CalibrationSpec, result: CalibrationResult) -> dict:
    """What to store beside the thresholds: how they were chosen."""
    return {
        "estimator_version": str(getattr(estimator, "version", "")),
        "families": list(spec.families), "seeds": list(spec.seeds), "tracks": list(spec.tracks),
        "num_steps": spec.num_steps,
        "step_scales": list(spec.step_scales), "steps": [spec.steps.translation, spec.steps.degrees],
        "resolution": list(spec.resolution), "fov_deg": spec.fov_deg, "degradations": list(spec.degradations),
        "stressors": [f"{track}:{stressors.label}" for track, stressors in spec.stressors],
        "transitions": result.num_transitions,
        "plateaus": {name: [getattr(result, name).low, getattr(result, name).high, getattr(result, name).accuracy]
                     for name in ("translation", "rotation", "secondary_ratio")},
    }
