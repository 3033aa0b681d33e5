"""The synthetic scenes' renderer: vectorised numpy ray casting of textured boxes, an optional
ground plane to the horizon and an optional sky (with distant mountains) at infinite depth.

A :class:`Scene` is pure data (built by :mod:`wcbench.data.scenes.families`); :func:`render` draws
it from any camera pose, at any time (in frames): content that moves on its own
(:mod:`wcbench.data.scenes.dynamic`: movers, rippling water, drifting clouds) is drawn where it
is at that time, and :func:`render_layers` also says which pixels show it. Textures are sampled
trilinearly from the scene's mip-mapped atlas (:mod:`wcbench.data.scenes.textures`), so distant
surfaces do not shimmer. A scene without dynamics renders the same pixels at every time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wcbench.data.scenes.dynamic import Dynamics
from wcbench.data.scenes.textures import TEXTURE_SIZE, mip_level, sample_atlas

RENDERER_VERSION = 2  # bump whenever rendered pixels change (2: camera-frame translation)
_LIGHT = np.array([0.45, -0.8, 0.35]) / np.linalg.norm([0.45, -0.8, 0.35])


@dataclass
class Box:
    """Axis-aligned box; ``texture`` indexes the scene atlas, ``inside`` marks a room seen from
    within."""

    lo: np.ndarray
    hi: np.ndarray
    texture: int
    tile: float = 1.0
    inside: bool = False


@dataclass(frozen=True)
class Ground:
    """An endless textured ground plane at height ``y`` (y points down).

    A second texture (``detail``), laid at an incommensurate scale and turned by 37 degrees,
    is averaged in: a single tiled texture repeats every ``tile`` units, and a camera moving
    about one period per window sees a grid whose motion trackers cannot tell from an offset
    of one period (real ground never repeats)."""

    y: float
    texture: int
    tile: float = 2.0
    detail: int | None = None
    detail_tile: float = 3.2


@dataclass(frozen=True)
class Sky:
    """Everything at infinite depth: a zenith-to-horizon gradient, clouds and a mountain ridge.

    ``ridge`` holds (amplitude, phase) rows of cosine harmonics of the azimuth, plus a constant
    ``ridge_base`` (radians of elevation); no rows means no mountains."""

    zenith: tuple[float, float, float]
    horizon: tuple[float, float, float]
    cloud_texture: int
    cloudiness: float  # 0: a plain gradient (almost textureless), 1: dense clouds
    mountain_texture: int
    ridge_base: float = 0.0
    ridge: tuple[tuple[float, float], ...] = ()


@dataclass
class Scene:
    """A procedural scene: boxes, optional ground and sky, fog and the texture atlas."""

    seed: int
    boxes: list[Box]
    caption: str
    atlas: list[np.ndarray] = field(repr=False)
    palette: str = "stone"
    family: str = "room"
    ground: Ground | None = None
    sky: Sky | None = None
    fog_distance: float = 40.0
    fog_colour: tuple[float, float, float] = (150.0, 150.0, 150.0)
    dynamics: Dynamics = field(default_factory=Dynamics)

    def render(self, c2w: np.ndarray, K: np.ndarray, width: int, height: int, time: float = 0.0) -> np.ndarray:
        """Render one (height, width, 3) uint8 frame from a camera-to-world pose at ``time`` (frames)."""
        return render(self, c2w, K, width, height, time)

    def boxes_at(self, time: float) -> list[Box]:
        """The static boxes, then every mover's boxes where they are at ``time``."""
        moving = [Box(lo, hi, texture, tile) for mover in self.dynamics.movers
                  for lo, hi, texture, tile in mover.boxes_at(time)]
        return self.boxes + moving if moving else self.boxes


def _face_uv(points: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Texture coordinates on a face perpendicular to ``axis`` (per pixel)."""
    x, y, z = points[..., 0], points[..., 1], points[..., 2]
    u = np.where(axis == 0, z, x)
    v = np.where(axis == 1, z, y)
    return u, v


# the eight corners of a box: per corner and axis, whether it takes ``hi`` (True) or ``lo``
_CORNER_PICKS = np.array([[(corner >> axis) & 1 for axis in range(3)] for corner in range(8)], dtype=bool)


def _screen_rects(boxes: list[Box], c2w: np.ndarray, K: np.ndarray, width: int,
                  height: int) -> list[tuple[slice, slice] | None]:
    """Per box, the pixel rows and columns outside which no ray can hit it: the bounding
    rectangle of its corners' projections, 2 px wider on every side than the rays' pixel centres
    need. A convex box wholly in front of the camera projects inside its corners' hull, so a ray
    outside the rectangle misses it. ``None`` (every pixel) for a room seen from within and a box
    that reaches behind the camera; all ``None`` for intrinsics with skew."""
    if not boxes or K[0, 1] != 0.0 or K[1, 0] != 0.0:
        return [None] * len(boxes)
    lo = np.array([box.lo for box in boxes], dtype=float)
    hi = np.array([box.hi for box in boxes], dtype=float)
    corners = np.where(_CORNER_PICKS[None], hi[:, None], lo[:, None])  # (B, 8, 3)
    cam = (corners - c2w[:3, 3]) @ c2w[:3, :3]  # world -> camera: R^T (p - origin), row-wise
    depth = cam[..., 2]
    in_front = (depth >= 1e-3).all(axis=1)
    depth = np.where(in_front[:, None], depth, 1.0)
    u = K[0, 0] * cam[..., 0] / depth + K[0, 2]
    v = K[1, 1] * cam[..., 1] / depth + K[1, 2]
    # pixel centres sit at index + 0.5
    c0 = np.clip(np.floor(u.min(axis=1) - 0.5) - 2, 0, width).astype(int)
    c1 = np.clip(np.ceil(u.max(axis=1) - 0.5) + 3, 0, width).astype(int)
    r0 = np.clip(np.floor(v.min(axis=1) - 0.5) - 2, 0, height).astype(int)
    r1 = np.clip(np.ceil(v.max(axis=1) - 0.5) + 3, 0, height).astype(int)
    return [None if box.inside or not front else (slice(top, bottom), slice(left, right))
            for box, front, top, bottom, left, right in zip(boxes, in_front, r0, r1, c0, c1)]


def _nearest_box_hits(boxes: list[Box], origin: np.ndarray, dirs: np.ndarray,
                      rects: list[tuple[slice, slice] | None]) -> tuple[np.ndarray, ...]:
    """Per ray of the (H, W, 3) ``dirs``: distance to the nearest box face (inf when none), its
    axis and box index, each (H, W) (slab test, one axis at a time for speed; a room box is hit
    from inside). Each box is tested only on its screen rectangle ``rects`` (None: everywhere):
    in a scene of many small boxes most rays miss most of them."""
    shape = dirs.shape[:2]
    inv = 1.0 / np.where(np.abs(dirs) < 1e-12, 1e-12, dirs)
    inv_axes = [np.ascontiguousarray(inv[..., a]) for a in range(3)]
    best_t = np.full(shape, np.inf)
    best_axis = np.zeros(shape, dtype=np.int64)
    best_box = np.zeros(shape, dtype=np.int64)
    for index, (box, rect) in enumerate(zip(boxes, rects)):
        window = (slice(None), slice(None)) if rect is None else rect
        if best_t[window].size == 0:
            continue
        near, far = [], []
        for a in range(3):
            t0 = (box.lo[a] - origin[a]) * inv_axes[a][window]
            t1 = (box.hi[a] - origin[a]) * inv_axes[a][window]
            near.append(np.minimum(t0, t1))
            far.append(np.maximum(t0, t1))
        t_far = np.minimum(np.minimum(far[0], far[1]), far[2])
        best_here = best_t[window]  # views: the updates below write through to the whole image
        if box.inside:
            t_hit = t_far
            axis = np.where(far[0] == t_far, 0, np.where(far[1] == t_far, 1, 2))
            is_hit = t_hit > 0
        else:
            t_hit = np.maximum(np.maximum(near[0], near[1]), near[2])
            is_hit = (t_hit > 1e-6) & (t_hit < t_far) & (t_hit < best_here)
            if not is_hit.any():
                continue
            axis = np.where(near[0] == t_hit, 0, np.where(near[1] == t_hit, 1, 2))
        closer = is_hit & (t_hit < best_here)
        best_here[closer] = t_hit[closer]
        best_axis[window][closer] = axis[closer]
        best_box[window][closer] = index
    return best_t, best_axis, best_box


def _surface_colour(scene: Scene, boxes: list[Box], origin: np.ndarray, dirs: np.ndarray, t: np.ndarray,
                    axis: np.ndarray, box: np.ndarray, focal: float, time: float = 0.0) -> np.ndarray:
    """Shaded, fogged RGB of rays that hit a surface; ``box`` -1 marks the ground plane."""
    on_ground = box < 0
    ground = scene.ground
    tiles = np.array([b.tile for b in boxes] + [ground.tile if ground else 1.0])[box]
    tex_index = np.array([b.texture for b in boxes] + [ground.texture if ground else 0])[box]
    points = origin + dirs * t[:, None]
    u_w, v_w = _face_uv(points, axis)
    dry = on_ground
    for pond in scene.dynamics.ponds:  # water: its own texture, rippling with time
        wet = on_ground & pond.contains(points)
        if wet.any():
            du, dv = pond.ripple(points[wet], time)
            u_w[wet] += du
            v_w[wet] += dv
            tex_index[wet], tiles[wet] = pond.texture, pond.tile
            dry = dry & ~wet
    u_t = np.mod(u_w / tiles, 1.0)
    v_t = np.mod(v_w / tiles, 1.0)
    ray_len = np.linalg.norm(dirs, axis=1) * t
    normal_cos = np.abs(dirs[np.arange(len(dirs)), axis]) / np.linalg.norm(dirs, axis=1)
    # the ground is seen at grazing angles towards the horizon: a lower floor on the slant keeps
    # its far texture filtered (the boxes' 0.2 is what the rooms were always rendered with)
    slant_floor = np.where(on_ground, 0.02, 0.2)
    footprint = ray_len / focal / tiles * TEXTURE_SIZE / np.maximum(normal_cos, slant_floor)
    colour = sample_atlas(scene.atlas, u_t, v_t, tex_index, mip_level(footprint))
    if ground is not None and ground.detail is not None and dry.any():
        colour[dry] = 0.5 * (colour[dry] + _ground_detail(scene, ground, points[dry], footprint[dry] * tiles[dry]))
    normals = np.zeros((len(dirs), 3))
    normals[np.arange(len(dirs)), axis] = 1.0
    shade = 0.55 + 0.45 * np.abs(normals @ _LIGHT)
    fog = np.exp(-ray_len / scene.fog_distance)
    return colour * (shade * fog)[:, None] + (1 - fog)[:, None] * np.array(scene.fog_colour)


_DETAIL_TURN = np.radians(37.0)


def _ground_detail(scene: Scene, ground: Ground, points: np.ndarray, footprint_units: np.ndarray) -> np.ndarray:
    """The ground's second texture at ``points``: turned, at its own tile size."""
    cos, sin = np.cos(_DETAIL_TURN), np.sin(_DETAIL_TURN)
    u = (cos * points[:, 0] - sin * points[:, 2]) / ground.detail_tile
    v = (sin * points[:, 0] + cos * points[:, 2]) / ground.detail_tile
    level = mip_level(footprint_units / ground.detail_tile)
    return sample_atlas(scene.atlas, np.mod(u, 1.0), np.mod(v, 1.0), np.full(len(u), ground.detail), level)


def ridge_elevation(sky: Sky, azimuth: np.ndarray) -> np.ndarray:
    """Elevation (radians) of the mountain ridge at each azimuth; 0 where there are none."""
    if not sky.ridge:
        return np.zeros_like(azimuth)
    ridge = np.full_like(azimuth, sky.ridge_base)
    for k, (amplitude, phase) in enumerate(sky.ridge, start=1):
        ridge += amplitude * np.cos(k * azimuth + phase)
    return np.maximum(ridge, 0.0)


def _sky_colour(scene: Scene, dirs: np.ndarray, focal: float, time: float = 0.0) -> np.ndarray:
    """RGB of rays that hit nothing: they see infinitely far, so only their direction counts."""
    sky = scene.sky
    unit = dirs / np.linalg.norm(dirs, axis=1, keepdims=True)
    elevation = np.arcsin(np.clip(-unit[:, 1], -1.0, 1.0))  # y points down
    azimuth = np.arctan2(unit[:, 0], unit[:, 2])
    height = np.clip(elevation / (np.pi / 2), 0.0, 1.0) ** 0.6
    colour = (1 - height)[:, None] * np.array(sky.horizon) + height[:, None] * np.array(sky.zenith)
    # clouds and rock: texture laid over (azimuth, elevation); 6 repeats around the horizon
    repeats = 6.0
    u = np.mod(azimuth / (2 * np.pi) * repeats, 1.0)
    v = np.mod(elevation / (2 * np.pi) * repeats * 2.0, 1.0)
    footprint = TEXTURE_SIZE * repeats / (2 * np.pi * focal) / np.maximum(np.cos(elevation), 0.2)
    level = mip_level(footprint)
    if sky.cloudiness > 0:
        drift = scene.dynamics.cloud_drift * time
        u_clouds = np.mod(u + drift / (2 * np.pi) * repeats, 1.0) if drift else u
        clouds = sample_atlas(scene.atlas, u_clouds, v, np.full(len(u), sky.cloud_texture), level)[:, 0] / 255.0
        weight = sky.cloudiness * np.clip(2.0 * clouds - 0.6, 0.0, 1.0) * np.clip(elevation / 0.05, 0.0, 1.0)
        colour = (1 - weight)[:, None] * colour + weight[:, None] * 245.0
    ridge = ridge_elevation(sky, azimuth)
    is_rock = elevation < ridge
    if is_rock.any():
        rock = sample_atlas(scene.atlas, u[is_rock], v[is_rock], np.full(int(is_rock.sum()), sky.mountain_texture),
                            level[is_rock])
        haze = 0.45 + 0.35 * np.clip(1.0 - (ridge[is_rock] - elevation[is_rock]) / 0.05, 0.0, 1.0)
        colour[is_rock] = (1 - haze)[:, None] * rock + haze[:, None] * np.array(sky.horizon)
    return colour


@dataclass
class _Rays:
    """One ray per pixel centre and what it hits first (``t`` inf: the sky)."""

    origin: np.ndarray
    dirs: np.ndarray  # (N, 3) world directions, z = 1 in the camera frame
    t: np.ndarray  # distance along ``dirs`` to the hit
    axis: np.ndarray  # normal axis of the face hit
    box: np.ndarray  # index of the box hit; -1 for the ground plane


def _cast(scene: Scene, c2w: np.ndarray, K: np.ndarray, width: int, height: int,
          boxes: list[Box] | None = None) -> _Rays:
    # 1. one ray per pixel centre, in world coordinates
    u, v = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
    pix = np.stack([u, v, np.ones_like(u)], axis=-1).reshape(-1, 3)
    dirs_cam = pix @ np.linalg.inv(K).T
    dirs = dirs_cam @ c2w[:3, :3].T
    origin = c2w[:3, 3]
    # 2. nearest hit: boxes, then the ground plane in front of them
    boxes = scene.boxes if boxes is None else boxes
    rects = _screen_rects(boxes, c2w, K, width, height)
    hits = _nearest_box_hits(boxes, origin, dirs.reshape(height, width, 3), rects)
    best_t, best_axis, best_box = (hit.reshape(-1) for hit in hits)
    if scene.ground is not None:
        down = dirs[:, 1] > 1e-12
        t_ground = np.where(down, (scene.ground.y - origin[1]) / np.where(down, dirs[:, 1], 1.0), np.inf)
        closer = down & (t_ground > 0) & (t_ground < best_t)
        best_t[closer], best_axis[closer], best_box[closer] = t_ground[closer], 1, -1
    return _Rays(origin, dirs, best_t, best_axis, best_box)


def depth_map(scene: Scene, c2w: np.ndarray, K: np.ndarray, width: int, height: int) -> np.ndarray:
    """(height, width) depth along the camera's z axis; inf where the pixel sees the sky."""
    return _cast(scene, c2w, K, width, height).t.reshape(height, width)


def render_layers(scene: Scene, c2w: np.ndarray, K: np.ndarray, width: int, height: int,
                  time: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Ray-cast ``scene`` from pose ``c2w`` with intrinsics ``K`` at ``time`` (frames): uint8 RGB
    and a (height, width) bool mask of the pixels that show content moving on its own (movers,
    water, clouds)."""
    boxes = scene.boxes_at(time)
    rays = _cast(scene, c2w, K, width, height, boxes)
    # 3. surfaces: texture, shading and fog; rays that hit nothing see the sky
    is_hit = np.isfinite(rays.t)
    rgb = np.zeros((len(rays.dirs), 3))
    rgb[is_hit] = _surface_colour(scene, boxes, rays.origin, rays.dirs[is_hit], rays.t[is_hit], rays.axis[is_hit],
                                  rays.box[is_hit], K[0, 0], time)
    if not is_hit.all():
        if scene.sky is None:
            raise ValueError(f"scene {scene.seed} ({scene.family}) leaves rays unhit but has no sky")
        rgb[~is_hit] = _sky_colour(scene, rays.dirs[~is_hit], K[0, 0], time)
    moving = rays.box >= len(scene.boxes)
    dynamics = scene.dynamics
    if dynamics.ponds and is_hit.any():
        points = rays.origin + rays.dirs * np.where(is_hit, rays.t, 0.0)[:, None]
        for pond in dynamics.ponds:
            moving |= (rays.box < 0) & is_hit & pond.contains(points)
    if dynamics.cloud_drift and scene.sky is not None and scene.sky.cloudiness > 0:
        moving |= ~is_hit  # drifting clouds: the sky moves on its own
    return np.clip(rgb, 0, 255).astype(np.uint8).reshape(height, width, 3), moving.reshape(height, width)


def render(scene: Scene, c2w: np.ndarray, K: np.ndarray, width: int, height: int, time: float = 0.0) -> np.ndarray:
    """Ray-cast ``scene`` from pose ``c2w`` with intrinsics ``K`` at ``time``; returns uint8 RGB."""
    return render_layers(scene, c2w, K, width, height, time)[0]


def render_frames(scene: Scene, poses: np.ndarray, K: np.ndarray, width: int, height: int) -> np.ndarray:
    """Render a (T, H, W, 3) uint8 video along per-frame camera-to-world poses (frame i at time i)."""
    return np.stack([render(scene, pose, K, width, height, float(i)) for i, pose in enumerate(poses)])
