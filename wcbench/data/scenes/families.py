"""Scene families: what the synthetic pack builds from a seed.

World models draw far more than rooms, and a camera-motion estimator tuned on rooms alone was
wrong on open scenes (half a frame of sky at infinite depth), so the pack has families that
differ in exactly what an estimator is sensitive to -- how much of the frame is far away, the
depth range, texture contrast:

- ``room``: an inward-facing textured box with blocks at 1-6 units (the original scenes;
  bit-identical renders);
- ``terrain``: an endless textured ground to the horizon, a sky (plain or cloudy) and distant
  mountains at infinite depth, rocks, pillars and trees at 2-50 units, haze;
- ``street``: two rows of buildings along a street that runs 100-250 units ahead, the sky
  between them, kerb-side poles; some seeds are a long indoor corridor instead.

One more family, ``plaza`` (a paved town square closed by buildings on every side, a fountain,
benches, lamp posts and planters), is held out: no calibration and no suite uses it, so the
estimator's validation has a family it was never tuned on (:data:`HELD_OUT_FAMILIES`).

Every builder takes the camera positions the scene must leave free (``keep_free``) and keeps
every object ``clearance`` away from them, so a camera never enters an object. Camera height,
texture contrast, sky, haze and object layout vary with the seed; the field of view and speed
are the case's (see :func:`camera_setup`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wcbench.data.scenes.render import Box, Ground, Scene, Sky
from wcbench.data.scenes.textures import (
    GROUND_MATERIALS,
    MATERIALS,
    PALETTES,
    TEXTURE_SIZE,
    atlas_pyramid,
    make_texture,
    periodic_noise,
)

SCENE_FAMILIES = ("room", "terrain", "street")  # what suites and calibration draw from
HELD_OUT_FAMILIES = ("plaza",)  # validation only
ALL_FAMILIES = SCENE_FAMILIES + HELD_OUT_FAMILIES


def _keep_free_points(keep_free: np.ndarray | None) -> np.ndarray:
    return np.zeros((1, 3)) if keep_free is None or len(keep_free) == 0 else np.asarray(keep_free, float)


def _is_clear(points: np.ndarray, lo: np.ndarray, hi: np.ndarray, clearance: float) -> bool:
    nearest = np.clip(points, lo, hi)
    return bool(np.min(np.linalg.norm(points - nearest, axis=1)) >= clearance)


# ---------------------------------------------------------------- rooms

def build_room(seed: int, keep_free: np.ndarray | None = None, clearance: float = 0.9) -> Scene:
    """A room enclosing ``keep_free`` with a margin, holding blocks at different depths."""
    rng = np.random.default_rng(seed)
    points = _keep_free_points(keep_free)
    palette_names = list(PALETTES)
    palette = palette_names[rng.integers(len(palette_names))]
    wall_material, floor_material, object_material = rng.choice(MATERIALS, 3, replace=False)
    textures = [
        make_texture(rng, wall_material, palette),
        make_texture(rng, floor_material, palette_names[rng.integers(len(palette_names))]),
        make_texture(rng, "speckled", "stone"),
    ]
    for _ in range(4):
        textures.append(make_texture(rng, str(rng.choice(MATERIALS)), palette_names[rng.integers(len(palette_names))]))

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
        if not _is_clear(points, b_lo, b_hi, clearance):
            continue
        boxes.append(Box(b_lo, b_hi, texture=int(rng.integers(3, len(textures))), tile=rng.uniform(0.6, 1.4)))

    caption = (f"a {palette} room with {wall_material} walls, a {floor_material} floor "
               f"and {len(boxes) - 1} {object_material} blocks")
    return Scene(seed=seed, boxes=boxes, caption=caption, atlas=atlas_pyramid(textures), palette=palette)


# ---------------------------------------------------------------- sky and its textures

_SKIES = {  # name -> (zenith, horizon)
    "clear": ((70.0, 120.0, 200.0), (190.0, 210.0, 230.0)),
    "hazy": ((120.0, 150.0, 190.0), (215.0, 215.0, 215.0)),
    "overcast": ((150.0, 155.0, 165.0), (200.0, 200.0, 205.0)),
    "dusk": ((60.0, 70.0, 130.0), (235.0, 180.0, 140.0)),
}


def _grey_texture(rng: np.random.Generator, beta: float) -> np.ndarray:
    noise = periodic_noise(rng, TEXTURE_SIZE, beta)
    return np.repeat((255.0 * noise)[..., None], 3, axis=2).astype(np.float32)


def _sky(rng: np.random.Generator, cloud_texture: int, mountain_texture: int, has_mountains: bool) -> tuple[Sky, str]:
    """A sky from the seed: gradient colours, cloud cover (often none) and a mountain ridge."""
    name = list(_SKIES)[rng.integers(len(_SKIES))]
    zenith, horizon = _SKIES[name]
    cloudiness = float(rng.choice([0.0, rng.uniform(0.2, 1.0)]))
    ridge: tuple[tuple[float, float], ...] = ()
    base = 0.0
    if has_mountains:
        base = float(np.radians(rng.uniform(1.0, 4.0)))
        ridge = tuple((float(np.radians(rng.uniform(0.3, 3.0)) / k), float(rng.uniform(0, 2 * np.pi)))
                      for k in range(1, 7))
    words = f"{'cloudy ' if cloudiness > 0.5 else ''}{name}"
    return Sky(zenith, horizon, cloud_texture, cloudiness, mountain_texture, base, ridge), words


# ---------------------------------------------------------------- open terrain

_GROUND_PALETTES = ("earth", "stone", "warm")


def build_terrain(seed: int, keep_free: np.ndarray | None = None, clearance: float = 0.9) -> Scene:
    """Ground to the horizon, sky and mountains at infinity, objects at 2-50 units."""
    rng = np.random.default_rng([seed, SCENE_FAMILIES.index("terrain")])
    points = _keep_free_points(keep_free)
    contrast = float(rng.uniform(0.35, 1.0))
    # natural ground is grainy at every scale (and never striped along the way: that would hide
    # forward motion from any tracker); objects and sky may be faint
    ground_material = str(rng.choice(GROUND_MATERIALS))
    palette = str(rng.choice(_GROUND_PALETTES))
    textures = [make_texture(rng, ground_material, palette, float(rng.uniform(1.0, 2.0))), _grey_texture(rng, 2.2),
                make_texture(rng, "marble", "stone", 0.6),
                make_texture(rng, str(rng.choice(GROUND_MATERIALS)), palette, float(rng.uniform(1.0, 2.0)))]
    for _ in range(4):
        textures.append(make_texture(rng, str(rng.choice(MATERIALS)), str(rng.choice(list(PALETTES))), contrast))
    sky, sky_words = _sky(rng, 1, 2, has_mountains=rng.random() < 0.7)

    camera_height = float(rng.uniform(0.8, 2.5))
    ground_y = points[:, 1].max() + camera_height
    start = points[0]
    boxes: list[Box] = []
    n_objects = int(rng.integers(8, 26))
    kinds = ("pillar", "rock", "tree")
    for _ in range(n_objects * 4):
        if len(boxes) >= n_objects:
            break
        distance = float(np.exp(rng.uniform(np.log(2.0), np.log(50.0))))
        # half the objects ahead of the start view, the rest all around
        azimuth = rng.uniform(-1.0, 1.0) if rng.random() < 0.5 else rng.uniform(-np.pi, np.pi)
        centre = start + distance * np.array([np.sin(azimuth), 0.0, np.cos(azimuth)])
        kind = kinds[rng.integers(3)]
        parts = _terrain_object(rng, kind, centre, ground_y, len(textures))
        if all(_is_clear(points, lo, hi, clearance) for lo, hi, _ in parts):
            boxes.extend(Box(lo, hi, texture=tex, tile=float(rng.uniform(0.5, 1.5))) for lo, hi, tex in parts)
    caption = f"an open {ground_material} field under a {sky_words} sky with rocks, pillars and trees"
    return Scene(seed=seed, boxes=boxes, caption=caption, atlas=atlas_pyramid(textures), palette=palette,
                 family="terrain", ground=Ground(ground_y, texture=0, tile=float(rng.uniform(0.8, 2.0)), detail=3,
                                                 detail_tile=float(rng.uniform(2.0, 5.0))), sky=sky,
                 fog_distance=float(rng.uniform(60.0, 250.0)), fog_colour=sky.horizon)


def _terrain_object(rng: np.random.Generator, kind: str, centre: np.ndarray, ground_y: float,
                    num_textures: int) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """Boxes (lo, hi, texture) of one object standing on the ground at ``centre``."""
    texture = int(rng.integers(4, num_textures))
    if kind == "pillar":
        half = rng.uniform(0.15, 0.5, 2)
        top = ground_y - rng.uniform(1.5, 6.0)
        return [(np.array([centre[0] - half[0], top, centre[2] - half[1]]),
                 np.array([centre[0] + half[0], ground_y, centre[2] + half[1]]), texture)]
    if kind == "rock":
        half = rng.uniform(0.3, 1.3, 2)
        top = ground_y - rng.uniform(0.3, 1.5)
        return [(np.array([centre[0] - half[0], top, centre[2] - half[1]]),
                 np.array([centre[0] + half[0], ground_y, centre[2] + half[1]]), texture)]
    trunk_top = ground_y - rng.uniform(1.5, 3.5)
    crown = rng.uniform(0.7, 1.6)
    crown_top = trunk_top - rng.uniform(1.2, 2.5)
    return [
        (np.array([centre[0] - 0.15, trunk_top, centre[2] - 0.15]),
         np.array([centre[0] + 0.15, ground_y, centre[2] + 0.15]),
         texture),
        (np.array([centre[0] - crown, crown_top, centre[2] - crown]),
         np.array([centre[0] + crown, trunk_top, centre[2] + crown]),
         int(rng.integers(4, num_textures))),
    ]


# ---------------------------------------------------------------- streets and corridors

_FACADES = ("brick", "striped", "checkered", "marble", "speckled")


def build_street(seed: int, keep_free: np.ndarray | None = None, clearance: float = 0.9) -> Scene:
    """A street running 100-250 units ahead between rows of buildings, or (some seeds) a long
    indoor corridor; the start camera looks down it."""
    rng = np.random.default_rng([seed, SCENE_FAMILIES.index("street")])
    points = _keep_free_points(keep_free)
    contrast = float(rng.uniform(0.35, 1.0))
    textures = [make_texture(rng, "speckled", "stone", contrast), _grey_texture(rng, 2.2),
                make_texture(rng, "marble", "stone", 0.6)]
    for _ in range(5):
        textures.append(make_texture(rng, str(rng.choice(_FACADES)), str(rng.choice(list(PALETTES))), contrast))
    is_corridor = rng.random() < 0.3
    camera_height = float(rng.uniform(1.2, 2.0))
    ground_y = points[:, 1].max() + camera_height
    margin = float(rng.uniform(2.5, 6.0)) if not is_corridor else float(rng.uniform(1.5, 3.0))
    left, right = points[:, 0].min() - margin, points[:, 0].max() + margin
    near_z, far_z = points[:, 2].min() - rng.uniform(15.0, 50.0), points[:, 2].max() + rng.uniform(100.0, 250.0)
    if is_corridor:
        ceiling = points[:, 1].min() - rng.uniform(1.2, 2.5)
        boxes = [Box(np.array([left, ceiling, near_z]), np.array([right, ground_y, far_z]), texture=3,
                     tile=float(rng.uniform(1.0, 2.5)), inside=True)]
        boxes += _kerb_objects(rng, points, left, right, near_z, far_z, ground_y, clearance, len(textures))
        caption = f"a long corridor {right - left:.0f} units wide"
        return Scene(seed=seed, boxes=boxes, caption=caption, atlas=atlas_pyramid(textures), family="street",
                     fog_distance=float(rng.uniform(60.0, 200.0)), fog_colour=(120.0, 120.0, 125.0))
    sky, sky_words = _sky(rng, 1, 2, has_mountains=rng.random() < 0.3)
    boxes = []
    for side, edge in ((-1, left), (1, right)):
        z = near_z
        while z < far_z:
            length = float(rng.uniform(5.0, 20.0))
            setback = float(rng.uniform(0.0, 1.5))
            depth = float(rng.uniform(6.0, 15.0))
            top = ground_y - rng.uniform(3.0, 25.0)
            inner = edge + side * setback
            xs = sorted((inner, inner + side * depth))
            lo, hi = np.array([xs[0], top, z]), np.array([xs[1], ground_y, z + length])
            if _is_clear(points, lo, hi, clearance):
                texture, tile = int(rng.integers(3, len(textures))), float(rng.uniform(1.0, 3.0))
                boxes.append(Box(lo, hi, texture=texture, tile=tile))
            z += length + (rng.uniform(6.0, 10.0) if rng.random() < 0.15 else rng.uniform(0.0, 1.0))
    boxes += _kerb_objects(rng, points, left, right, near_z, far_z, ground_y, clearance, len(textures))
    caption = f"a street between rows of buildings under a {sky_words} sky"
    return Scene(seed=seed, boxes=boxes, caption=caption, atlas=atlas_pyramid(textures), palette="stone",
                 family="street", ground=Ground(ground_y, texture=0, tile=float(rng.uniform(1.0, 2.5)), detail=2,
                                                detail_tile=float(rng.uniform(2.5, 5.0))), sky=sky,
                 fog_distance=float(rng.uniform(80.0, 300.0)), fog_colour=sky.horizon)


def _kerb_objects(rng: np.random.Generator, points: np.ndarray, left: float, right: float, near_z: float,
                  far_z: float, ground_y: float, clearance: float, num_textures: int) -> list[Box]:
    """Poles and crates along both sides, mostly within 40 units of the start."""
    boxes = []
    for _ in range(int(rng.integers(6, 16))):
        x = left + 0.6 if rng.random() < 0.5 else right - 0.6
        z = float(rng.uniform(near_z * 0.3, min(far_z, 40.0)))
        half = rng.uniform(0.1, 0.5)
        top = ground_y - rng.uniform(0.6, 4.0)
        lo, hi = np.array([x - half, top, z - half]), np.array([x + half, ground_y, z + half])
        if _is_clear(points, lo, hi, clearance):
            boxes.append(Box(lo, hi, texture=int(rng.integers(3, num_textures)), tile=float(rng.uniform(0.5, 1.5))))
    return boxes


# ---------------------------------------------------------------- town squares (held out)

_PAVING = ("checkered", "brick", "speckled")


def build_plaza(seed: int, keep_free: np.ndarray | None = None, clearance: float = 0.9) -> Scene:
    """A paved square 20-50 units across, closed by buildings on every side, with a fountain,
    benches, lamp posts, planters with trees; sky above."""
    rng = np.random.default_rng([seed, ALL_FAMILIES.index("plaza")])
    points = _keep_free_points(keep_free)
    contrast = float(rng.uniform(0.4, 1.0))
    palette = str(rng.choice(list(PALETTES)))
    textures = [make_texture(rng, str(rng.choice(_PAVING)), "stone", contrast), _grey_texture(rng, 2.2),
                make_texture(rng, "marble", "stone", 0.6), make_texture(rng, "gravel", "earth", 1.2)]
    for _ in range(5):
        textures.append(make_texture(rng, str(rng.choice(MATERIALS)), palette, float(rng.uniform(0.5, 1.0))))
    sky, sky_words = _sky(rng, 1, 2, has_mountains=False)
    camera_height = float(rng.uniform(1.3, 1.9))
    ground_y = points[:, 1].max() + camera_height
    centre = points.mean(axis=0)
    half = rng.uniform(10.0, 25.0, 2) + np.ptp(points[:, [0, 2]], axis=0) / 2
    boxes: list[Box] = []
    # 1. buildings on the four sides of the square
    for axis, other in ((0, 2), (2, 0)):
        for side in (-1, 1):
            edge = centre[axis] + side * half[0 if axis == 0 else 1]
            along = -half[1 if axis == 0 else 0] - 15.0
            while along < half[1 if axis == 0 else 0] + 15.0:
                length, depth = float(rng.uniform(6.0, 16.0)), float(rng.uniform(6.0, 12.0))
                top = ground_y - rng.uniform(6.0, 22.0)
                lo, hi = np.zeros(3), np.zeros(3)
                lo[axis], hi[axis] = sorted((edge, edge + side * depth))
                lo[other], hi[other] = centre[other] + along, centre[other] + along + length
                lo[1], hi[1] = top, ground_y
                if _is_clear(points, lo, hi, clearance):
                    boxes.append(Box(lo, hi, texture=int(rng.integers(4, len(textures))),
                                     tile=float(rng.uniform(1.5, 3.5))))
                along += length + float(rng.uniform(0.0, 2.0))
    # 2. furniture: a fountain, benches, lamp posts, planters with trees
    def place(size: np.ndarray, height: float, texture: int) -> None:
        for _ in range(20):
            spot = centre + np.array([rng.uniform(-0.9, 0.9) * half[0], 0.0, rng.uniform(-0.9, 0.9) * half[1]])
            lo = np.array([spot[0] - size[0] / 2, ground_y - height, spot[2] - size[1] / 2])
            hi = np.array([spot[0] + size[0] / 2, ground_y, spot[2] + size[1] / 2])
            if _is_clear(points, lo, hi, clearance):
                boxes.append(Box(lo, hi, texture=texture, tile=float(rng.uniform(0.5, 1.5))))
                return

    place(rng.uniform(3.0, 6.0, 2), float(rng.uniform(0.6, 1.0)), 2)  # fountain basin
    for _ in range(int(rng.integers(4, 9))):
        place(np.array([rng.uniform(1.2, 2.0), 0.5]), 0.5, int(rng.integers(4, len(textures))))  # benches
    for _ in range(int(rng.integers(4, 10))):
        place(np.array([0.2, 0.2]), float(rng.uniform(3.0, 4.5)), 2)  # lamp posts
    for _ in range(int(rng.integers(3, 7))):
        place(rng.uniform(1.0, 2.0, 2), float(rng.uniform(0.5, 0.9)), 3)  # planters
    caption = f"a paved town square under a {sky_words} sky, with a fountain, benches and lamp posts"
    return Scene(seed=seed, boxes=boxes, caption=caption, atlas=atlas_pyramid(textures), palette=palette,
                 family="plaza", ground=Ground(ground_y, texture=0, tile=float(rng.uniform(1.0, 2.5)), detail=3,
                                               detail_tile=float(rng.uniform(2.0, 4.0))), sky=sky,
                 fog_distance=float(rng.uniform(80.0, 250.0)), fog_colour=sky.horizon)


# ---------------------------------------------------------------- dispatch and per-seed cameras

_BUILDERS = {"room": build_room, "terrain": build_terrain, "street": build_street, "plaza": build_plaza}


def build_family_scene(family: str, seed: int, keep_free: np.ndarray | None = None,
                       clearance: float = 0.9) -> Scene:
    """Build a scene of ``family`` (one of :data:`ALL_FAMILIES`) from ``seed``."""
    if family not in _BUILDERS:
        raise ValueError(f"unknown scene family {family!r}; known: {', '.join(ALL_FAMILIES)}")
    return _BUILDERS[family](seed, keep_free, clearance)


@dataclass(frozen=True)
class CameraSetup:
    """How a case films a family's scene: horizontal field of view, speed (a multiple of the
    suite's step sizes) and the start pitch (which moves the horizon, and so the sky's share)."""

    fov_deg: float
    step_scale: float
    start_pitch_deg: float


def camera_setup(family: str, seed: int, variant: int = 0) -> CameraSetup:
    """A per-seed camera for validation and calibration renders: FOV 60-90 deg, speed 0.5-2x
    (log-uniform), start pitch within +-8 deg outdoors; ``variant`` draws another one for the
    same scene. Rooms keep the suites' 75 deg, 1x, level."""
    if family == "room":
        return CameraSetup(75.0, 1.0, 0.0)
    rng = np.random.default_rng([seed, ALL_FAMILIES.index(family), 7, variant])
    return CameraSetup(float(rng.uniform(60.0, 90.0)), float(np.exp(rng.uniform(np.log(0.5), np.log(2.0)))),
                       float(rng.uniform(-8.0, 8.0)))
