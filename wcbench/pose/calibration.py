"""Threshold calibration: synthetic videos with known motion in, per-estimator thresholds out.

``render_calibration_videos`` renders basic, combined, diagonal and car scripts (each ending
with a standing-still latent step) in every scene family (rooms, open terrain with sky,
streets), at several step sizes and cameras, optionally degraded (JPEG, blur, noise, wobbling content); see
:func:`motion_case`. The same cases, on other seeds, are the estimator benchmark's held-out set.
``calibrate_thresholds`` runs over any estimator's outputs on them and picks each threshold
at the log-scale centre of the widest plateau of maximal accuracy (within half a percent): the translation
threshold from translation-label accuracy, the rotation threshold and the secondary-axis
ratio from rotation-label accuracy (coordinate-wise, twice). Calibrate on calibration seeds
only, never on the scenes you report.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator, Sequence

import cv2
import numpy as np

from wcbench.core.actions import (NUM_ROTATION, NUM_TRANSLATION, ROTATION_LABELS, TRANSLATION_LABELS, Action,
                                  parse_script, script_from_steps)
from wcbench.core.camera import (StepSizes, Thresholds, camera_rotation, classify_translation, intrinsics_from_fov,
                                 script_trajectory, yaw_pitch_deg)
from wcbench.pose.base import PoseEstimate
from wcbench.data.scenes.families import SCENE_FAMILIES, CameraSetup, camera_setup
from wcbench.data.suite import PITCH_LIMIT_DEG, generate_script
from wcbench.data.scenes.render import render_layers
from wcbench.data.scenes.stressors import Stressors, add_dynamics, composite_overlay, correlated_wobble, roll_jitter
from wcbench.data.scenes.synthetic import build_scene, render_frames

# "warp": the content wobbles from frame to frame, as a generated video's does
DEGRADATIONS = ("clean", "jpeg", "blur", "noise", "warp")
# rotation label by (yaw sign + 1, pitch sign + 1), taken from the action model itself
_ROTATION_TABLE = np.array([[Action(yaw=y, pitch=p).rotation_label for p in (-1, 0, 1)] for y in (-1, 0, 1)])


# ---------------------------------------------------------------- degradations

@dataclass(frozen=True)
class DegradationSettings:
    jpeg_quality: int = 30
    blur_sigma: float = 1.0
    noise_sigma: float = 5.0  # on 0-255
    warp_px: float = 0.3  # per-axis RMS of each frame's smooth random displacement, px at 160 px
    warp_grid: int = 4  # the displacement is drawn on a grid this coarse and smoothly interpolated


def degrade(frames: np.ndarray, kind: str, seed: int = 0,
            settings: DegradationSettings = DegradationSettings()) -> np.ndarray:
    """``frames`` (T, H, W, 3) uint8 RGB after one degradation (``clean`` returns them as is)."""
    if kind == "clean":
        return frames
    if kind == "jpeg":
        out = []
        for frame in frames:
            ok, data = cv2.imencode(".jpg", frame[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, settings.jpeg_quality])
            if not ok:
                raise RuntimeError("OpenCV could not JPEG-encode a frame")
            out.append(cv2.imdecode(data, cv2.IMREAD_COLOR)[..., ::-1])
        return np.stack(out)
    if kind == "blur":
        return np.stack([cv2.GaussianBlur(frame, (0, 0), settings.blur_sigma) for frame in frames])
    if kind == "noise":
        noise = np.random.default_rng(seed).normal(0.0, settings.noise_sigma, frames.shape)
        return np.clip(frames + noise, 0, 255).astype(np.uint8)
    if kind == "warp":
        return _warp(frames, np.random.default_rng(seed), settings)
    raise ValueError(f"unknown degradation {kind!r}; known: {', '.join(DEGRADATIONS)}")


def _warp(frames: np.ndarray, rng: np.random.Generator, settings: DegradationSettings) -> np.ndarray:
    """Each frame displaced by its own smooth random field (a few blobs across the picture):
    content that wobbles from frame to frame without the camera moving, the way a generated
    video's does. Independent per frame, so a window's residual is the difference of two
    fields."""
    height, width = frames.shape[1:3]
    amplitude = settings.warp_px * max(height, width) / 160
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    out = []
    for frame in frames:
        coarse = rng.normal(0.0, amplitude, (2, settings.warp_grid, settings.warp_grid)).astype(np.float32)
        dx, dy = (cv2.resize(c, (width, height), interpolation=cv2.INTER_CUBIC) for c in coarse)
        out.append(cv2.remap(frame, xs + dx, ys + dy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT))
    return np.stack(out)


# ---------------------------------------------------------------- motion cases (calibration and validation)

# What generated video carries, as `wcbench calibrate --stressors` adds it (clean renders, one
# camera per scene): still cameras before movers, moving cameras among them, burnt-in overlays and
# a smooth wobble. The held-out plaza family and other seeds carry them in validation.
CALIBRATION_STRESSORS: tuple[tuple[str, Stressors], ...] = (
    ("still", Stressors(movers="medium")), ("still", Stressors(movers="dense")),
    ("combined", Stressors(movers="medium")), ("combined", Stressors(overlay="hud")),
    ("combined", Stressors(overlay="subtitles")), ("combined", Stressors(wobble_px=0.5)),
)
CASE_TRACKS = ("basic", "combined", "diagonal", "car", "still", "fastturn")


@dataclass(frozen=True)
class CalibrationSpec:
    """What to render: families x seeds x tracks x step scales, each under every degradation.

    Rooms are filmed as the suites film them (``fov_deg``, ``steps`` x each step scale); the other
    families draw a camera per video (:func:`wcbench.data.scenes.synthetic.camera_setup`: FOV 60-90 deg,
    speed 0.5-2x, start pitch +-8 deg), the step scale index picking the draw."""

    seeds: tuple[int, ...] = tuple(range(9000, 9006))  # as `wcbench calibrate`; suites and benchmarks use others
    tracks: tuple[str, ...] = ("basic", "combined", "diagonal", "car")  # see motion_case
    families: tuple[str, ...] = SCENE_FAMILIES
    num_steps: int = 8  # latent steps of motion per script (a standing-still step is added)
    step_scales: tuple[float, ...] = (0.75, 1.0, 1.5)  # multiples of ``steps`` (rooms)
    steps: StepSizes = field(default_factory=StepSizes)
    resolution: tuple[int, int] = (160, 160)  # (width, height)
    fov_deg: float = 75.0
    degradations: tuple[str, ...] = DEGRADATIONS  # thresholds must hold on degraded video too
    static_steps: int = 1
    stressors: tuple[tuple[str, Stressors], ...] = ()  # (track, stressors) pairs rendered besides, clean

    @property
    def num_videos(self) -> int:
        plain = len(self.families) * len(self.seeds) * len(self.tracks) * len(self.step_scales) * len(self.degradations)
        return plain + len(self.families) * len(self.seeds) * len(self.stressors)


@dataclass
class RenderedCase:
    """A motion case's video with what it shows: true poses, and per frame the pixels that move
    on their own (movers, water, clouds) and the pixels a burnt-in overlay covers."""

    frames: np.ndarray  # (T, H, W, 3) uint8
    K: np.ndarray
    poses: np.ndarray  # (T, 4, 4) true camera-to-world poses (roll jitter included)
    moving: np.ndarray  # (T, H, W) bool
    overlay: np.ndarray  # (H, W) bool


@dataclass(frozen=True)
class MotionCase:
    """One scripted camera move through a synthetic scene: everything that makes its video."""

    family: str
    seed: int
    track: str
    script: str
    steps: StepSizes
    fov_deg: float
    start_pitch_deg: float = 0.0
    stressors: Stressors = Stressors()

    def poses(self) -> np.ndarray:
        """Per-frame camera-to-world poses as commanded (the start may be pitched: it moves the horizon)."""
        start = np.eye(4)
        start[:3, :3] = camera_rotation(0.0, self.start_pitch_deg)
        return start[None] @ script_trajectory(parse_script(self.script), self.steps)

    def render(self, width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(frames, K, true poses) at ``width`` x ``height``."""
        if self.stressors.is_none:  # the plain renderer: the same pixels as before stressors existed
            poses = self.poses()
            K = intrinsics_from_fov(width, height, self.fov_deg)
            scene = build_scene(self.seed, poses[:, :3, 3], family=self.family)
            return render_frames(scene, poses, K, width, height), K, poses
        rendered = self.render_layers(width, height)
        return rendered.frames, rendered.K, rendered.poses

    def render_layers(self, width: int, height: int) -> RenderedCase:
        """The video with its stressors (:class:`~wcbench.data.scenes.stressors.Stressors`) and
        the masks of what moves on its own and what the overlay covers."""
        stressors = self.stressors
        commanded = self.poses()
        poses = roll_jitter(commanded, stressors.roll_deg, self.seed)
        K = intrinsics_from_fov(width, height, self.fov_deg)
        scene = build_scene(self.seed, poses[:, :3, 3], family=self.family)
        scene = add_dynamics(scene, stressors, commanded, self.fov_deg, self.seed)
        layers = [render_layers(scene, pose, K, width, height, float(i)) for i, pose in enumerate(poses)]
        frames = np.stack([rgb for rgb, _ in layers])
        moving = np.stack([mask for _, mask in layers])
        frames = correlated_wobble(frames, stressors.wobble_px, self.seed)
        actions = [Action()] + parse_script(self.script).frame_actions()
        frames, overlay = composite_overlay(frames, stressors.overlay, actions, self.seed)
        return RenderedCase(frames, K, poses, moving, overlay)


@dataclass
class CalibrationVideo:
    """A rendered video with the case that made it and its degradation."""

    frames: np.ndarray
    case: MotionCase
    K: np.ndarray
    poses: np.ndarray
    degradation: str

    @property
    def script(self) -> str:
        return self.case.script

    def commanded(self) -> list[Action]:
        """Commanded action per transition (index f-1 for the transition into frame f)."""
        return parse_script(self.script).frame_actions()


_DIAGONAL_MOVES = tuple(Action(forward=f, right=r) for f in (1, -1) for r in (1, -1))
_DIAGONAL_TURNS = tuple(Action(yaw=y, pitch=p) for y in (1, -1) for p in (1, -1))
_SINGLE_MOVES = (Action(),) + tuple(Action(forward=s) for s in (1, -1)) + tuple(Action(right=s) for s in (1, -1))
_SINGLE_TURNS = (Action(),) + tuple(Action(yaw=s) for s in (1, -1)) + tuple(Action(pitch=s) for s in (1, -1))
_CAR_ACTIONS = (Action(forward=1, yaw=1), Action(forward=1, yaw=-1), Action(forward=1))


def diagonal_script(rng: np.random.Generator, num_steps: int, step_deg: float) -> str:
    """Segments of one or two latent steps, each a diagonal move with a single turn (or none)
    or a diagonal turn with a single move (or none); pitch stays within the suites' limit."""
    steps: list[Action] = []
    pitch = 0.0
    while len(steps) < num_steps:
        count = int(min(rng.integers(1, 3), num_steps - len(steps)))
        if rng.random() < 0.5:
            move, turn = _DIAGONAL_MOVES[rng.integers(4)], _SINGLE_TURNS[rng.integers(5)]
        else:
            move, turn = _SINGLE_MOVES[rng.integers(5)], _DIAGONAL_TURNS[rng.integers(4)]
        tilt = turn.pitch
        if abs(pitch + tilt * count * 4 * step_deg) > PITCH_LIMIT_DEG:
            tilt = -tilt  # turn back towards level instead
        steps.extend([Action(move.forward, move.right, turn.yaw, tilt)] * count)
        pitch += tilt * count * 4 * step_deg
    return script_from_steps(steps).format()


def car_script(rng: np.random.Generator, num_steps: int) -> str:
    """A car's drive: forward, mostly while turning left or right, switching every 1-3 steps."""
    steps: list[Action] = []
    previous = None
    while len(steps) < num_steps:
        count = int(min(rng.integers(1, 4), num_steps - len(steps)))
        action = _CAR_ACTIONS[rng.integers(len(_CAR_ACTIONS))]
        if action == previous:
            continue
        steps.extend([action] * count)
        previous = action
    return script_from_steps(steps).format()


def motion_case(family: str, seed: int, track: str, num_steps: int, scale_index: int = 0,
                spec: CalibrationSpec = CalibrationSpec()) -> MotionCase:
    """The deterministic case of one (family, seed, track, step scale): its script and camera.

    ``track``: ``basic`` and ``combined`` as the suites make them; ``diagonal`` commands two
    axes of one kind at once (``w+d``, ``left+up``; without it nothing would bound the
    secondary-axis ratio from above); ``car`` drives forward at twice the speed while yawing
    1-3 deg per frame (real driving footage turns like that), ``fastturn`` likewise at 2-3 deg per
    frame; ``still`` stands still (what moves then is the scene's own content, see
    :class:`~wcbench.data.scenes.stressors.Stressors`)."""
    if track not in CASE_TRACKS:
        raise ValueError(f"unknown calibration track {track!r}; known: {', '.join(CASE_TRACKS)}")
    if family == "room":
        camera = CameraSetup(spec.fov_deg, spec.step_scales[scale_index], 0.0)
    else:
        camera = camera_setup(family, seed, scale_index)
    steps = StepSizes(spec.steps.translation * camera.step_scale, spec.steps.degrees * camera.step_scale)
    rng = np.random.default_rng([seed, CASE_TRACKS.index(track), scale_index])
    if track in ("car", "fastturn"):
        steps = StepSizes(2.0 * steps.translation, float(rng.uniform(*((1.0, 3.0) if track == "car" else (2.0, 3.0)))))
        script = car_script(rng, num_steps)
    elif track == "still":
        script = f"none-{num_steps}"
    elif track == "diagonal":
        script = diagonal_script(rng, num_steps, steps.degrees)
    else:
        script = generate_script(rng, track, num_steps, steps.degrees)
    if spec.static_steps:
        script = f"{script}, none-{spec.static_steps}"
    return MotionCase(family, seed, track, script, steps, camera.fov_deg, camera.start_pitch_deg)


def calibration_script(seed: int, track: str, scale_index: int, spec: CalibrationSpec) -> str:
    """The deterministic script of one room calibration video."""
    return motion_case("room", seed, track, spec.num_steps, scale_index, spec).script


def render_calibration_videos(spec: CalibrationSpec = CalibrationSpec()) -> Iterator[CalibrationVideo]:
    """Yield calibration videos (renders one scene per family x seed x track x step scale, then
    every requested degradation of it)."""
    width, height = spec.resolution
    for family in spec.families:
        for seed in spec.seeds:
            for track in spec.tracks:
                for scale_index in range(len(spec.step_scales)):
                    case = motion_case(family, seed, track, spec.num_steps, scale_index, spec)
                    clean, K, poses = case.render(width, height)
                    for kind in spec.degradations:
                        yield CalibrationVideo(degrade(clean, kind, seed=seed), case, K, poses, kind)
            for track, stressors in spec.stressors:
                case = replace(motion_case(family, seed, track, spec.num_steps, 0, spec), stressors=stressors)
                frames, K, poses = case.render(width, height)
                yield CalibrationVideo(frames, case, K, poses, "clean")


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
