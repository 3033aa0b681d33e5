"""The synthetic videos that calibrate and validate pose estimators: scripted camera moves through
every scene family with their true poses.

:func:`motion_case` makes one case (family, seed, track, step scale): basic, combined, diagonal
and car scripts, each ending with a standing-still latent step, in rooms, open terrain with sky
and streets, at several step sizes and cameras. :func:`render_calibration_videos` renders a
:class:`CalibrationSpec`'s cases, each optionally degraded (:func:`degrade`: JPEG, blur, noise,
wobbling content) and with stressors (movers, overlays). The same cases, on other seeds, are the
estimator benchmark's held-out set. :mod:`wcbench.pose.calibration` picks thresholds on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator

import cv2
import numpy as np

from wcbench.core.actions import Action, parse_script, script_from_steps
from wcbench.core.camera import StepSizes, camera_rotation, intrinsics_from_fov, script_trajectory
from wcbench.data.scenes.families import SCENE_FAMILIES, CameraSetup, camera_setup
from wcbench.data.suite import PITCH_LIMIT_DEG, generate_script
from wcbench.data.scenes.render import render_layers
from wcbench.data.scenes.stressors import Stressors, add_dynamics, composite_overlay, correlated_wobble, roll_jitter
from wcbench.data.scenes.synthetic import build_scene, render_frames

# "warp": the content wobbles from frame to frame, as a generated video's does
DEGRADATIONS = ("clean", "jpeg", "blur", "noise", "warp")


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
