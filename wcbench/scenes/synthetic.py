"""Procedural synthetic rooms: textured boxes ray-cast from any camera pose.

A scene is a room (an inward-facing box) holding box objects at different depths, each
face covered by a periodic procedural texture. Everything follows from a seed and the
camera positions the scene must leave free, so a scene carries its true poses and renders
the same pixels every time. Rendering is vectorised numpy ray casting with a
mip-mapped texture atlas sampled by ``cv2.remap`` (bilinear, no shimmer at distance).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

RENDERER_VERSION = 2  # bump whenever rendered pixels change (2: camera-frame translation)
TEXTURE_SIZE = 128
_MIP_LEVELS = 5
_PAD = 2  # wrap padding around each atlas tile so bilinear taps never bleed across tiles
_LIGHT = np.array([0.45, -0.8, 0.35]) / np.linalg.norm([0.45, -0.8, 0.35])

_MATERIALS = ("marble", "brick", "striped", "speckled", "mossy", "checkered")
_PALETTES = {
    "warm": [(196, 120, 80), (236, 200, 150), (120, 60, 40)],
    "cool": [(70, 110, 170), (170, 200, 230), (30, 50, 90)],
    "earth": [(120, 140, 70), (200, 190, 140), (70, 60, 40)],
    "stone": [(130, 130, 135), (200, 200, 195), (60, 60, 70)],
    "vivid": [(200, 60, 90), (240, 210, 70), (40, 130, 120)],
    "pastel": [(220, 170, 200), (180, 220, 200), (150, 160, 220)],
}


def _periodic_noise(rng: np.random.Generator, size: int, beta: float) -> np.ndarray:
    """Tileable noise with a 1/f^beta spectrum, scaled to [0, 1]."""
    freq = np.fft.fftfreq(size)
    radius = np.sqrt(freq[:, None] ** 2 + freq[None, :] ** 2)
    radius[0, 0] = 1.0
    spectrum = np.fft.fft2(rng.standard_normal((size, size))) / radius**beta
    spectrum[0, 0] = 0.0
    img = np.real(np.fft.ifft2(spectrum))
    img -= img.min()
    return img / max(img.max(), 1e-9)


def _texture(rng: np.random.Generator, material: str, palette: str) -> np.ndarray:
    """One tileable RGB texture (float32 in [0, 255])."""
    n = TEXTURE_SIZE
    colours = np.array(_PALETTES[palette], dtype=np.float32)
    base = _periodic_noise(rng, n, 1.6)
    detail = _periodic_noise(rng, n, 0.9)
    yy, xx = np.mgrid[0:n, 0:n] / n
    if material == "brick":
        rows = (yy * 8).astype(int)
        shifted = (xx * 4 + 0.5 * (rows % 2)) % 1.0
        mortar = ((yy * 8) % 1.0 < 0.12) | (shifted < 0.06)
        field_ = np.where(mortar, 1.0, 0.35 * base + 0.25 * detail)
    elif material == "striped":
        phase = rng.uniform(0, 2 * np.pi)
        field_ = 0.5 + 0.35 * np.sin(2 * np.pi * 6 * xx + 3.0 * base + phase) + 0.15 * (detail - 0.5)
    elif material == "checkered":
        checks = ((xx * 6).astype(int) + (yy * 6).astype(int)) % 2
        field_ = 0.25 + 0.5 * checks + 0.25 * (detail - 0.5) + 0.2 * (base - 0.5)
    elif material == "speckled":
        field_ = 0.3 * base + 0.7 * (detail > 0.62)
    elif material == "mossy":
        field_ = np.clip(1.4 * base - 0.2, 0, 1) * 0.7 + 0.3 * detail
    else:  # marble
        field_ = 0.5 + 0.5 * np.sin(8 * np.pi * (xx + yy) + 10.0 * base) * 0.6 + 0.3 * (detail - 0.5)
    field_ = np.clip(field_, 0.0, 1.0)[..., None]
    second = np.clip(detail, 0, 1)[..., None]
    rgb = (1 - field_) * colours[0] + field_ * colours[1]
    rgb = (1 - 0.35 * second) * rgb + 0.35 * second * colours[2]
    return rgb.astype(np.float32)


def _atlas_pyramid(textures: list[np.ndarray]) -> list[np.ndarray]:
    """Per mip level, the textures stacked vertically with wrap padding."""
    levels = []
    current = textures
    for _ in range(_MIP_LEVELS):
        padded = [cv2.copyMakeBorder(t, _PAD, _PAD, _PAD, _PAD, cv2.BORDER_WRAP) for t in current]
        levels.append(np.ascontiguousarray(np.concatenate(padded, axis=0)))
        current = [cv2.pyrDown(t) for t in current]
    return levels


@dataclass
class Box:
    """Axis-aligned box; ``texture`` indexes the scene atlas, ``inside`` marks the room."""

    lo: np.ndarray
    hi: np.ndarray
    texture: int
    tile: float = 1.0
    inside: bool = False


@dataclass
class Scene:
    """A procedural room with its objects and texture atlas."""

    seed: int
    boxes: list[Box]
    caption: str
    atlas: list[np.ndarray] = field(repr=False)
    palette: str = "stone"

    def render(self, c2w: np.ndarray, K: np.ndarray, width: int, height: int) -> np.ndarray:
        """Render one (height, width, 3) uint8 frame from a camera-to-world pose."""
        return render(self, c2w, K, width, height)


def build_scene(seed: int, keep_free: np.ndarray | None = None, clearance: float = 0.9) -> Scene:
    """Build a deterministic room around camera positions ``keep_free`` (N, 3).

    The room encloses the positions with a margin, and no object comes within
    ``clearance`` of any of them, so the camera never enters an object.
    """
    rng = np.random.default_rng(seed)
    points = np.zeros((1, 3)) if keep_free is None or len(keep_free) == 0 else np.asarray(keep_free, float)
    palette_names = list(_PALETTES)
    palette = palette_names[rng.integers(len(palette_names))]
    wall_material, floor_material, object_material = rng.choice(_MATERIALS, 3, replace=False)
    textures = [
        _texture(rng, wall_material, palette),
        _texture(rng, floor_material, palette_names[rng.integers(len(palette_names))]),
        _texture(rng, "speckled", "stone"),
    ]
    for _ in range(4):
        textures.append(_texture(rng, str(rng.choice(_MATERIALS)), palette_names[rng.integers(len(palette_names))]))

    # y points down: the floor is 1.5 below the lowest camera position, the ceiling 2.6 above the highest
    floor_y, ceiling_y = points[:, 1].max() + 1.5, points[:, 1].min() - 2.6
    margin = rng.uniform(3.5, 6.0)
    lo = np.array([points[:, 0].min() - margin, ceiling_y, points[:, 2].min() - margin])
    hi = np.array([points[:, 0].max() + margin, floor_y, points[:, 2].max() + margin])
    boxes = [Box(lo, hi, texture=0, tile=1.6, inside=True)]

    n_objects = int(rng.integers(10, 16) + 0.15 * (hi[0] - lo[0]) * (hi[2] - lo[2]) / 10)
    for _ in range(n_objects * 4):
        if len(boxes) > n_objects:
            break
        size = rng.uniform([0.3, 0.4, 0.3], [1.4, 3.2, 1.4])
        centre = rng.uniform(lo + size / 2 + 0.05, hi - size / 2 - 0.05)
        is_floating = rng.random() < 0.25
        y_hi = floor_y if not is_floating else floor_y - rng.uniform(0.5, 2.0)
        b_lo = np.array([centre[0] - size[0] / 2, y_hi - size[1], centre[2] - size[2] / 2])
        b_hi = np.array([centre[0] + size[0] / 2, y_hi, centre[2] + size[2] / 2])
        nearest = np.clip(points, b_lo, b_hi)
        if np.min(np.linalg.norm(points - nearest, axis=1)) < clearance:
            continue
        boxes.append(Box(b_lo, b_hi, texture=int(rng.integers(3, len(textures))), tile=rng.uniform(0.6, 1.4)))

    caption = (f"a {palette} room with {wall_material} walls, a {floor_material} floor "
               f"and {len(boxes) - 1} {object_material} blocks")
    return Scene(seed=seed, boxes=boxes, caption=caption, atlas=_atlas_pyramid(textures), palette=palette)


def _face_uv(points: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Texture coordinates on a face perpendicular to ``axis`` (per pixel)."""
    x, y, z = points[..., 0], points[..., 1], points[..., 2]
    u = np.where(axis == 0, z, x)
    v = np.where(axis == 1, z, y)
    return u, v


def render(scene: Scene, c2w: np.ndarray, K: np.ndarray, width: int, height: int) -> np.ndarray:
    """Ray-cast ``scene`` from pose ``c2w`` with intrinsics ``K``; returns uint8 RGB."""
    # 1. one ray per pixel centre, in world coordinates
    u, v = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
    pix = np.stack([u, v, np.ones_like(u)], axis=-1).reshape(-1, 3)
    dirs_cam = pix @ np.linalg.inv(K).T
    dirs = dirs_cam @ c2w[:3, :3].T
    origin = c2w[:3, 3]
    inv = 1.0 / np.where(np.abs(dirs) < 1e-12, 1e-12, dirs)

    # 2. nearest hit over all boxes (slab test, one axis at a time for speed); the room
    #    is hit from inside
    n_rays = dirs.shape[0]
    inv_axes = [np.ascontiguousarray(inv[:, a]) for a in range(3)]
    best_t = np.full(n_rays, np.inf)
    best_axis = np.zeros(n_rays, dtype=np.int64)
    best_box = np.zeros(n_rays, dtype=np.int64)
    for index, box in enumerate(scene.boxes):
        near, far = [], []
        for a in range(3):
            t0 = (box.lo[a] - origin[a]) * inv_axes[a]
            t1 = (box.hi[a] - origin[a]) * inv_axes[a]
            near.append(np.minimum(t0, t1))
            far.append(np.maximum(t0, t1))
        t_far = np.minimum(np.minimum(far[0], far[1]), far[2])
        if box.inside:
            t_hit = t_far
            axis = np.where(far[0] == t_far, 0, np.where(far[1] == t_far, 1, 2))
            is_hit = t_hit > 0
        else:
            t_hit = np.maximum(np.maximum(near[0], near[1]), near[2])
            is_hit = (t_hit > 1e-6) & (t_hit < t_far) & (t_hit < best_t)
            if not is_hit.any():
                continue
            axis = np.where(near[0] == t_hit, 0, np.where(near[1] == t_hit, 1, 2))
        closer = is_hit & (t_hit < best_t)
        best_t[closer] = t_hit[closer]
        best_axis[closer] = axis[closer]
        best_box[closer] = index

    # 3. texture coordinates, mip level from the pixel footprint, bilinear lookup
    points = origin + dirs * best_t[:, None]
    tiles = np.array([b.tile for b in scene.boxes])[best_box]
    tex_index = np.array([b.texture for b in scene.boxes])[best_box]
    u_w, v_w = _face_uv(points, best_axis)
    u_t = np.mod(u_w / tiles, 1.0)
    v_t = np.mod(v_w / tiles, 1.0)
    ray_len = np.linalg.norm(dirs, axis=1) * best_t
    normal_cos = np.abs(dirs[np.arange(n_rays), best_axis]) / np.linalg.norm(dirs, axis=1)
    footprint = ray_len / K[0, 0] / tiles * TEXTURE_SIZE / np.maximum(normal_cos, 0.2)
    level = np.clip(np.log2(np.maximum(footprint, 1e-6)), 0, _MIP_LEVELS - 1)
    colour = _sample_mips(scene.atlas, u_t, v_t, tex_index, level)

    # 4. Lambert shading by face normal plus mild distance fog (a depth cue)
    normals = np.zeros((n_rays, 3))
    normals[np.arange(n_rays), best_axis] = 1.0
    shade = 0.55 + 0.45 * np.abs(normals @ _LIGHT)
    fog = np.exp(-ray_len / 40.0)
    rgb = colour * (shade * fog)[:, None] + (1 - fog)[:, None] * 150.0
    return np.clip(rgb, 0, 255).astype(np.uint8).reshape(height, width, 3)


def _sample_mips(atlas: list[np.ndarray], u: np.ndarray, v: np.ndarray, tex_index: np.ndarray,
                 level: np.ndarray) -> np.ndarray:
    """Trilinear lookup: bilinear in the two nearest mip levels, blended by the fraction."""
    lower = np.floor(level).astype(int)
    frac = (level - lower)[:, None]
    out = np.zeros((u.size, 3), dtype=np.float32)
    for lvl in np.unique(np.concatenate([lower, np.minimum(lower + 1, _MIP_LEVELS - 1)])):
        uses_low, uses_high = lower == lvl, np.minimum(lower + 1, _MIP_LEVELS - 1) == lvl
        mask = uses_low | uses_high
        size = TEXTURE_SIZE >> lvl
        pad_size = size + 2 * _PAD
        map_x = (u[mask] * size + _PAD - 0.5).astype(np.float32)
        map_y = (tex_index[mask] * pad_size + v[mask] * size + _PAD - 0.5).astype(np.float32)
        sampled = _remap_flat(atlas[lvl], map_x, map_y)
        weight = np.where(uses_low[mask], 1.0 - frac[mask, 0], 0.0) + np.where(uses_high[mask], frac[mask, 0], 0.0)
        out[mask] += sampled * weight[:, None].astype(np.float32)
    return out


def _remap_flat(image: np.ndarray, map_x: np.ndarray, map_y: np.ndarray) -> np.ndarray:
    """``cv2.remap`` for flat coordinate lists (its maps must stay under 32767 columns)."""
    width = 4096
    n = map_x.size
    rows = -(-n // width)
    grid_x = np.zeros(rows * width, np.float32)
    grid_y = np.zeros(rows * width, np.float32)
    grid_x[:n], grid_y[:n] = map_x, map_y
    out = cv2.remap(image, grid_x.reshape(rows, width), grid_y.reshape(rows, width), cv2.INTER_LINEAR,
                    borderMode=cv2.BORDER_REPLICATE)
    return out.reshape(-1, image.shape[2])[:n]


def render_frames(scene: Scene, poses: np.ndarray, K: np.ndarray, width: int, height: int) -> np.ndarray:
    """Render a (T, H, W, 3) uint8 video along per-frame camera-to-world poses."""
    return np.stack([render(scene, pose, K, width, height) for pose in poses])
