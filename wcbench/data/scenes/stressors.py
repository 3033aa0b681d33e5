"""What generated video carries beyond a static world, as properties any scene family can take.

World models draw people, animals and vehicles that move on their own, foliage that sways,
water that ripples and clouds that drift; their demo videos have keyboard HUDs, watermarks,
logos, letterboxes and subtitles burnt in; their content wobbles smoothly from frame to frame;
hand-held footage rolls. A camera-motion estimator that reads any of these as the camera's
motion scores a model wrongly and, as a reward, teaches it the wrong thing. :class:`Stressors`
names them; :func:`add_dynamics` places the 3-D ones around a camera path (the renderer draws
them, :mod:`wcbench.data.scenes.dynamic`), :func:`roll_jitter` shakes the camera, and
:func:`composite_overlay` and :func:`correlated_wobble` work on the rendered frames.

Everything follows from a seed, so a stressed case renders the same pixels every time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import cv2
import numpy as np

from wcbench.core.actions import Action
from wcbench.data.scenes.dynamic import Dynamics, Mover, MoverPart, Pond
from wcbench.data.scenes.render import Scene
from wcbench.data.scenes.textures import MATERIALS, PALETTES, extend_atlas, make_texture

MOVER_LEVELS = ("none", "sparse", "medium", "dense", "huge")
OVERLAYS = ("none", "hud", "watermark", "logo", "letterbox", "subtitles")


@dataclass(frozen=True)
class Stressors:
    """The stressors a rendered case carries (all off by default).

    ``movers``: how much of the frame moves on its own, roughly (per window, it varies):
    ``sparse`` under 5 %, ``medium`` 5-15 %, ``dense`` 15-30 %, ``huge`` 30-60 % (near vehicles
    and crowds); ``nonrigid``: swaying foliage beside the path, a rippling pond on the ground,
    drifting clouds; ``overlay``: one burnt-in overlay; ``wobble_px``: a smooth warp that carries
    over from frame to frame, RMS px at 320 px wide; ``roll_deg``: hand-held roll, RMS degrees."""

    movers: str = "none"
    nonrigid: bool = False
    overlay: str = "none"
    wobble_px: float = 0.0
    roll_deg: float = 0.0

    def __post_init__(self) -> None:
        if self.movers not in MOVER_LEVELS:
            raise ValueError(f"movers={self.movers!r}: known levels {', '.join(MOVER_LEVELS)}")
        if self.overlay not in OVERLAYS:
            raise ValueError(f"overlay={self.overlay!r}: known overlays {', '.join(OVERLAYS)}")
        if self.wobble_px < 0 or self.roll_deg < 0:
            raise ValueError("wobble_px and roll_deg must be >= 0")

    @property
    def is_none(self) -> bool:
        return self == Stressors()

    @property
    def label(self) -> str:
        """A short name for tables: ``movers-dense+hud``, ``wobble-1.5``, ``clean``."""
        parts = []
        if self.movers != "none":
            parts.append(f"movers-{self.movers}")
        if self.nonrigid:
            parts.append("nonrigid")
        if self.overlay != "none":
            parts.append(self.overlay)
        if self.wobble_px:
            parts.append(f"wobble-{self.wobble_px:g}")
        if self.roll_deg:
            parts.append(f"roll-{self.roll_deg:g}")
        return "+".join(parts) or "clean"


# ---------------------------------------------------------------- movers

@dataclass(frozen=True)
class _MoverPlan:
    count: int
    distance: tuple[float, float]  # units from the camera where it crosses the view
    kinds: tuple[str, ...]


_PLANS = {
    "sparse": _MoverPlan(2, (9.0, 20.0), ("person", "animal")),
    "medium": _MoverPlan(3, (4.5, 9.0), ("person", "person", "animal", "car")),
    "dense": _MoverPlan(5, (2.6, 5.5), ("person", "person", "animal", "car")),
    "huge": _MoverPlan(4, (3.5, 7.0), ("tram", "car", "person", "person")),
}
_SPEEDS = {"person": (0.03, 0.06), "animal": (0.04, 0.1), "car": (0.1, 0.25), "tram": (0.06, 0.15)}
_INDOOR_KINDS = ("person", "animal")  # what fits in a room


def _floor_level(scene: Scene) -> float:
    """The y (pointing down) that movers stand on: the ground plane, or a room's floor."""
    if scene.ground is not None:
        return scene.ground.y
    return float(max(box.hi[1] for box in scene.boxes if box.inside)) if any(b.inside for b in scene.boxes) \
        else float(max(box.hi[1] for box in scene.boxes))


def _body_parts(kind: str, rng: np.random.Generator, along_x: bool, heading: np.ndarray,
                textures: list[int]) -> tuple[tuple[MoverPart, ...], float]:
    """The parts of one mover (origin at its ground contact, y up is negative) and its stride
    length (units per gait cycle; 0: no gait)."""
    def box(x: tuple[float, float], y: tuple[float, float], z: tuple[float, float], texture: int,
            swing: float = 0.0, phase: float = 0.0) -> MoverPart:
        if along_x:  # the long axis (z in the local frame) lies along world x
            x, z = z, x
        swing_vec = tuple(float(v) for v in swing * heading)
        return MoverPart((x[0], y[0], z[0]), (x[1], y[1], z[1]), texture, float(rng.uniform(0.4, 1.0)), swing_vec,
                         phase)

    cloth, skin, other = textures[0], textures[1], textures[2]
    if kind == "person":
        h = float(rng.uniform(1.55, 1.9))
        w = 0.22 * h / 1.75
        legs = 0.48 * h
        return (box((-w, w), (-0.8 * h, -legs), (-0.12, 0.12), cloth),
                box((-0.6 * w, 0.6 * w), (-h, -0.82 * h), (-0.1, 0.1), skin),
                box((-w, -0.15 * w), (-legs, 0.0), (-0.08, 0.08), other, 0.18, 0.0),
                box((0.15 * w, w), (-legs, 0.0), (-0.08, 0.08), other, 0.18, math.pi),
                box((-1.45 * w, -w), (-0.78 * h, -0.45 * h), (-0.06, 0.06), cloth, 0.12, math.pi),
                box((w, 1.45 * w), (-0.78 * h, -0.45 * h), (-0.06, 0.06), cloth, 0.12, 0.0)), 1.3
    if kind == "animal":
        size = float(rng.uniform(0.5, 1.6))  # a dog to a cow
        body = (-0.25 * size, 0.25 * size)
        length = (-0.6 * size, 0.6 * size)
        legs = 0.55 * size
        parts = [box(body, (-1.0 * size, -legs), length, cloth),
                 box((-0.18 * size, 0.18 * size), (-1.25 * size, -0.85 * size), (0.5 * size, 0.85 * size), skin)]
        for index, (x, z) in enumerate(((-1, -1), (1, -1), (-1, 1), (1, 1))):
            parts.append(box((x * 0.2 * size - 0.06 * size, x * 0.2 * size + 0.06 * size), (-legs, 0.0),
                             (z * 0.45 * size - 0.07 * size, z * 0.45 * size + 0.07 * size), other, 0.12 * size,
                             math.pi * ((index + (z > 0)) % 2)))
        return tuple(parts), 1.1 * size
    if kind == "car":
        half_w, length = float(rng.uniform(0.8, 1.0)), float(rng.uniform(1.9, 2.4))
        height = float(rng.uniform(1.3, 1.7))
        return (box((-half_w, half_w), (-0.55 * height, -0.15), (-length, length), cloth),
                box((-0.9 * half_w, 0.9 * half_w), (-height, -0.55 * height), (-0.5 * length, 0.4 * length), skin),
                box((-half_w - 0.02, half_w + 0.02), (-0.35, 0.0), (-0.8 * length, 0.8 * length), other)), 0.0
    half_w, length, height = float(rng.uniform(1.2, 1.5)), float(rng.uniform(2.5, 4.5)), float(rng.uniform(2.6, 3.2))
    return (box((-half_w, half_w), (-height, -0.3), (-length, length), cloth),
            box((-half_w - 0.02, half_w + 0.02), (-0.75 * height, -0.5 * height), (-0.95 * length, 0.95 * length),
                skin),
            box((-half_w, half_w), (-0.3, 0.0), (-0.9 * length, 0.9 * length), other)), 0.0


def _horizontal(vector: np.ndarray) -> np.ndarray:
    flat = np.array([vector[0], 0.0, vector[2]])
    norm = np.linalg.norm(flat)
    return flat / norm if norm > 1e-9 else np.array([0.0, 0.0, 1.0])


def _clear_of_path(mover: Mover, positions: np.ndarray, clearance: float) -> bool:
    """Whether every part of the mover stays ``clearance`` away from the camera at every frame."""
    for time, camera in enumerate(positions):
        for lo, hi, _, _ in mover.boxes_at(float(time)):
            if np.linalg.norm(camera - np.clip(camera, lo, hi)) < clearance:
                return False
    return True


def _place_mover(kind: str, rng: np.random.Generator, poses: np.ndarray, fov_deg: float, floor: float,
                 distance: tuple[float, float], textures: list[int]) -> Mover:
    """A mover that crosses (or walks along) the camera's view around a random frame."""
    frame = int(rng.integers(len(poses)))
    camera = poses[frame, :3, 3]
    forward, right = _horizontal(poses[frame, :3, 2]), _horizontal(poses[frame, :3, 0])
    depth = float(np.exp(rng.uniform(*np.log(distance))))
    bearing = math.radians(rng.uniform(-0.6, 0.6) * fov_deg / 2)
    crossing = camera + depth * forward + depth * math.tan(bearing) * right
    speed = float(rng.uniform(*_SPEEDS[kind]))
    heading = (right if rng.random() < 0.7 else forward) * (1 if rng.random() < 0.5 else -1)
    velocity = speed * heading
    start = crossing - frame * velocity
    start[1] = floor
    along_x = abs(heading[0]) > abs(heading[2])
    parts, stride = _body_parts(kind, rng, along_x, heading, [int(t) for t in rng.permutation(textures)[:3]])
    gait = speed / stride if stride else 0.0
    return Mover(kind, tuple(float(v) for v in start), tuple(float(v) for v in velocity), parts, gait)


def _foliage(rng: np.random.Generator, poses: np.ndarray, floor: float, textures: list[int]) -> list[Mover]:
    """Bushes and small trees beside the path whose crowns sway (0.5-1.2 Hz at 24 frames/s)."""
    plants = []
    for _ in range(int(rng.integers(3, 6))):
        frame = int(rng.integers(len(poses)))
        camera = poses[frame, :3, 3]
        forward, right = _horizontal(poses[frame, :3, 2]), _horizontal(poses[frame, :3, 0])
        spot = camera + rng.uniform(2.5, 7.0) * forward + rng.choice([-1, 1]) * rng.uniform(1.5, 4.0) * right
        crown = float(rng.uniform(0.4, 1.0))
        trunk = float(rng.uniform(0.3, 1.5))
        sway = tuple(float(v) for v in rng.uniform(0.04, 0.12) * np.array([1.0, 0.0, rng.uniform(-0.6, 0.6)]))
        leaves, bark = int(rng.choice(textures[:2])), int(textures[2])
        parts = (MoverPart((-0.08, -trunk, -0.08), (0.08, 0.0, 0.08), bark),
                 MoverPart((-crown, -trunk - 2 * crown, -crown), (crown, -trunk, crown), leaves,
                           float(rng.uniform(0.4, 0.8)), sway, float(rng.uniform(0, 2 * math.pi))))
        start = np.array([spot[0], floor, spot[2]])
        plants.append(Mover("foliage", tuple(float(v) for v in start), (0.0, 0.0, 0.0), parts,
                            float(rng.uniform(0.02, 0.05))))
    return plants


def add_dynamics(scene: Scene, stressors: Stressors, poses: np.ndarray, fov_deg: float, seed: int) -> Scene:
    """``scene`` with the movers, foliage, water and clouds ``stressors`` asks for, placed around
    the camera path ``poses`` (camera-to-world per frame) so that they pass through its view;
    nothing comes within 0.6 units of the camera. The scene itself is not changed."""
    if stressors.movers == "none" and not stressors.nonrigid:
        return scene
    rng = np.random.default_rng([seed, 51, MOVER_LEVELS.index(stressors.movers), int(stressors.nonrigid)])
    palettes = list(PALETTES)
    new_textures = [make_texture(rng, str(rng.choice(MATERIALS)), palettes[rng.integers(len(palettes))],
                                 float(rng.uniform(0.6, 1.0))) for _ in range(5)]
    new_textures += [make_texture(rng, "mossy", "earth", 1.0), make_texture(rng, "speckled", "earth", 0.9),
                     make_texture(rng, "marble", "cool", 0.8)]  # leaves, bark, water
    atlas, first = extend_atlas(scene.atlas, new_textures)
    body_textures = list(range(first, first + 5))
    leaves, bark, water = first + 5, first + 6, first + 7
    floor = _floor_level(scene)
    positions = poses[:, :3, 3]
    movers: list[Mover] = []
    if stressors.movers != "none":
        plan = _PLANS[stressors.movers]
        kinds = plan.kinds if scene.ground is not None else tuple(k for k in plan.kinds if k in _INDOOR_KINDS)
        for index in range(plan.count):
            kind = kinds[index % len(kinds)]
            for _ in range(20):
                mover = _place_mover(kind, rng, poses, fov_deg, floor, plan.distance, body_textures)
                if _clear_of_path(mover, positions, 0.6):
                    movers.append(mover)
                    break
    ponds: list[Pond] = []
    cloud_drift = 0.0
    sky = scene.sky
    if stressors.nonrigid:
        movers += [plant for plant in _foliage(rng, poses, floor, [leaves, leaves, bark])
                   if _clear_of_path(plant, positions, 0.6)]
        if scene.ground is not None:
            forward, right = _horizontal(poses[0, :3, 2]), _horizontal(poses[0, :3, 0])
            centre = positions[0] + rng.uniform(3.0, 8.0) * forward + rng.uniform(-3.0, 3.0) * right
            half = rng.uniform(2.0, 5.0, 2)
            ponds.append(Pond((float(centre[0] - half[0]), float(centre[0] + half[0])),
                              (float(centre[2] - half[1]), float(centre[2] + half[1])), water,
                              float(rng.uniform(1.5, 3.0))))
        if sky is not None:
            sky = replace(sky, cloudiness=max(sky.cloudiness, 0.6))
            cloud_drift = float(rng.uniform(0.002, 0.006)) * (1 if rng.random() < 0.5 else -1)
    return replace(scene, atlas=atlas, sky=sky, dynamics=Dynamics(tuple(movers), tuple(ponds), cloud_drift))


# ---------------------------------------------------------------- camera shake

def _ar1(rng: np.random.Generator, count: int, shape: tuple[int, ...], correlation: float) -> np.ndarray:
    """``count`` draws of a stationary unit-variance AR(1) process (each of ``shape``)."""
    values = np.empty((count, *shape))
    values[0] = rng.standard_normal(shape)
    innovation = math.sqrt(1.0 - correlation**2)
    for index in range(1, count):
        values[index] = correlation * values[index - 1] + innovation * rng.standard_normal(shape)
    return values


def roll_jitter(poses: np.ndarray, roll_deg: float, seed: int, correlation: float = 0.8) -> np.ndarray:
    """``poses`` rolled about each camera's optical axis by a hand-held jitter of ``roll_deg``
    RMS degrees (correlated from frame to frame); the commanded motion is unchanged."""
    if roll_deg <= 0:
        return poses
    angles = np.radians(roll_deg * _ar1(np.random.default_rng([seed, 52]), len(poses), (), correlation))
    rolled = poses.copy()
    for index, angle in enumerate(angles):
        cos, sin = math.cos(angle), math.sin(angle)
        rolled[index, :3, :3] = poses[index, :3, :3] @ np.array([[cos, -sin, 0.0], [sin, cos, 0.0], [0.0, 0.0, 1.0]])
    return rolled


# ---------------------------------------------------------------- on the frames

def correlated_wobble(frames: np.ndarray, rms_px: float, seed: int, correlation: float = 0.9,
                      grid: int = 4) -> np.ndarray:
    """Each frame displaced by a smooth random field (drawn on a ``grid`` x ``grid`` lattice,
    interpolated) that carries over from frame to frame (AR(1), ``correlation`` per frame): a
    generator's drift rather than white noise. ``rms_px`` per axis at 320 px wide, scaled with
    the frame."""
    if rms_px <= 0:
        return frames
    height, width = frames.shape[1:3]
    amplitude = rms_px * width / 320.0
    fields = amplitude * _ar1(np.random.default_rng([seed, 53]), len(frames), (2, grid, grid), correlation)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    out = np.empty_like(frames)
    for index, (frame, coarse) in enumerate(zip(frames, fields.astype(np.float32))):
        dx, dy = (cv2.resize(c, (width, height), interpolation=cv2.INTER_CUBIC) for c in coarse)
        out[index] = cv2.remap(frame, xs + dx, ys + dy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    return out


_SUBTITLES = ("Where does this path lead?", "Keep going, it is not far now.", "Did you hear that?",
              "Look over there!", "We should turn back before dark.", "This place feels familiar.")


def _text(canvas: np.ndarray, text: str, origin: tuple[int, int], scale: float, colour: tuple[int, ...],
          thickness: int, outline: bool = False) -> None:
    if outline:  # a thicker stroke would advance each glyph further: shift the same stroke instead
        for dx, dy in ((-1, -1), (-1, 1), (1, -1), (1, 1), (0, 2), (0, -2), (2, 0), (-2, 0)):
            cv2.putText(canvas, text, (origin[0] + dx, origin[1] + dy), cv2.FONT_HERSHEY_SIMPLEX, scale, (0, 0, 0),
                        thickness, cv2.LINE_AA)
    cv2.putText(canvas, text, origin, cv2.FONT_HERSHEY_SIMPLEX, scale, colour, thickness, cv2.LINE_AA)


def _hud(frame: np.ndarray, action: Action, left: bool) -> np.ndarray:
    """A keyboard HUD (WASD and the arrow keys, pressed ones lit) on a translucent panel, about
    15 % of the frame, in a bottom corner, as world-model demo videos ship."""
    height, width = frame.shape[:2]
    panel_w, panel_h = int(0.4 * width), int(0.36 * height)
    x0 = int(0.02 * width) if left else width - panel_w - int(0.02 * width)
    y0 = height - panel_h - int(0.02 * height)
    out = frame.copy()
    region = out[y0:y0 + panel_h, x0:x0 + panel_w]
    region[:] = (0.45 * region + 0.55 * np.array([20, 20, 28])).astype(np.uint8)
    key = max(4, int(0.16 * panel_w))
    gap = max(1, key // 6)
    pressed = {"W": action.forward > 0, "S": action.forward < 0, "A": action.right < 0, "D": action.right > 0,
               "<": action.yaw < 0, ">": action.yaw > 0, "^": action.pitch > 0, "v": action.pitch < 0}
    layout = {"W": (1, 0), "A": (0, 1), "S": (1, 1), "D": (2, 1), "^": (4, 0), "<": (3, 1), "v": (4, 1), ">": (5, 1)}
    scale = key / 36.0
    for name, (col, row) in layout.items():
        kx = x0 + gap + col * (key + gap) - (0 if col < 3 else -gap)
        ky = y0 + int(0.2 * panel_h) + row * (key + gap)
        lit = pressed[name]
        cv2.rectangle(out, (kx, ky), (kx + key, ky + key), (250, 210, 60) if lit else (90, 90, 100), -1)
        cv2.rectangle(out, (kx, ky), (kx + key, ky + key), (230, 230, 230), 1)
        _text(out, name, (kx + key // 4, ky + 3 * key // 4), scale, (10, 10, 10) if lit else (230, 230, 230),
              max(1, key // 14))
    _text(out, "keyboard", (x0 + gap, y0 + int(0.14 * panel_h)), scale * 0.8, (220, 220, 220), 1)
    return out


def composite_overlay(frames: np.ndarray, kind: str, actions: list[Action], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``frames`` with one burnt-in overlay (see :data:`OVERLAYS`) and the (H, W) mask of the
    pixels it covers. ``actions`` (one per frame, frame 0 included) light the HUD's keys."""
    if kind == "none":
        return frames, np.zeros(frames.shape[1:3], bool)
    rng = np.random.default_rng([seed, 54, OVERLAYS.index(kind)])
    height, width = frames.shape[1:3]
    out = np.empty_like(frames)
    if kind == "hud":
        left = bool(rng.random() < 0.5)
        for index, frame in enumerate(frames):
            out[index] = _hud(frame, actions[index], left)
    elif kind == "letterbox":
        bar = int(round(rng.uniform(0.09, 0.13) * height))
        out[:] = frames
        out[:, :bar] = 0
        out[:, height - bar:] = 0
    elif kind == "logo":
        radius = max(3, int(0.08 * min(height, width)))
        centre = (width - radius - int(0.03 * width), radius + int(0.03 * height))
        for index, frame in enumerate(frames):
            canvas = frame.copy()
            cv2.circle(canvas, centre, radius, (240, 240, 245), -1, cv2.LINE_AA)
            cv2.circle(canvas, centre, int(0.7 * radius), (200, 40, 60), -1, cv2.LINE_AA)
            _text(canvas, "W", (centre[0] - radius // 2, centre[1] + radius // 3), radius / 22.0, (255, 255, 255),
                  max(1, radius // 8))
            out[index] = canvas
    elif kind == "watermark":
        text = str(rng.choice(["WorldSim", "sample", "DEMO", "preview"]))
        scale = width / 200.0
        origin = (int(rng.uniform(0.05, 0.4) * width), int(rng.uniform(0.55, 0.9) * height))
        mark = np.zeros(frames.shape[1:], np.uint8)
        _text(mark, text, origin, scale, (255, 255, 255), max(1, int(scale * 2)))
        alpha = (mark[..., :1] > 0) * float(rng.uniform(0.35, 0.5))
        out[:] = (frames * (1 - alpha) + 255 * alpha).astype(np.uint8)
    else:  # subtitles: a line at the bottom, changing every 20-30 frames, sometimes none
        scale = width / 420.0
        line, until = None, 0
        for index, frame in enumerate(frames):
            if index >= until:
                line = str(rng.choice(_SUBTITLES)) if rng.random() < 0.8 else None
                until = index + int(rng.integers(20, 31))
            canvas = frame.copy()
            if line:
                size = cv2.getTextSize(line, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)[0]
                _text(canvas, line, ((width - size[0]) // 2, int(0.93 * height)), scale, (255, 255, 255),
                      max(1, int(scale * 1.5)), outline=True)
            out[index] = canvas
    covered = np.any(out != frames, axis=(0, 3))
    return out, covered
