"""Procedural textures for the synthetic scenes, their mip-mapped atlas and trilinear lookup.

Every texture is tileable and follows from a random generator, so a scene renders the same
pixels from its seed. The atlas stacks all of a scene's textures (with wrap padding) per mip
level; :func:`sample_atlas` samples it bilinearly in the two nearest levels (no shimmer at
distance).
"""

from __future__ import annotations

import cv2
import numpy as np

TEXTURE_SIZE = 128
MIP_LEVELS = 5
_PAD = 2  # wrap padding around each atlas tile so bilinear taps never bleed across tiles

MATERIALS = ("marble", "brick", "striped", "speckled", "mossy", "checkered")  # what rooms draw from
GROUND_MATERIALS = ("gravel", "grass", "speckled")  # natural ground: grainy, 1/f-like, no stripes
PALETTES = {
    "warm": [(196, 120, 80), (236, 200, 150), (120, 60, 40)],
    "cool": [(70, 110, 170), (170, 200, 230), (30, 50, 90)],
    "earth": [(120, 140, 70), (200, 190, 140), (70, 60, 40)],
    "stone": [(130, 130, 135), (200, 200, 195), (60, 60, 70)],
    "vivid": [(200, 60, 90), (240, 210, 70), (40, 130, 120)],
    "pastel": [(220, 170, 200), (180, 220, 200), (150, 160, 220)],
}


def periodic_noise(rng: np.random.Generator, size: int, beta: float) -> np.ndarray:
    """Tileable noise with a 1/f^beta spectrum, scaled to [0, 1]."""
    freq = np.fft.fftfreq(size)
    radius = np.sqrt(freq[:, None] ** 2 + freq[None, :] ** 2)
    radius[0, 0] = 1.0
    spectrum = np.fft.fft2(rng.standard_normal((size, size))) / radius**beta
    spectrum[0, 0] = 0.0
    img = np.real(np.fft.ifft2(spectrum))
    img -= img.min()
    return img / max(img.max(), 1e-9)


def make_texture(rng: np.random.Generator, material: str, palette: str, contrast: float = 1.0) -> np.ndarray:
    """One tileable RGB texture (float32 in [0, 255]); ``contrast`` < 1 pulls it towards its
    mean colour (faint texture, as on a hazy field or a plain facade)."""
    n = TEXTURE_SIZE
    colours = np.array(PALETTES[palette], dtype=np.float32)
    base = periodic_noise(rng, n, 1.6)
    detail = periodic_noise(rng, n, 0.9)
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
    elif material in ("gravel", "grass"):
        # 1/f noise (as in natural images: equal contrast in every octave, so the ground stays
        # textured from the camera's feet to the haze), stretched; gravel adds stones
        grain = np.clip(0.5 + 2.5 * (periodic_noise(rng, n, 1.0) - 0.5), 0.0, 1.0)
        field_ = 0.7 * grain + 0.3 * ((detail > 0.6) if material == "gravel" else base)
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
    if contrast != 1.0:
        mean = rgb.reshape(-1, 3).mean(axis=0)
        rgb = mean + contrast * (rgb - mean)
    return rgb.astype(np.float32)


def atlas_pyramid(textures: list[np.ndarray]) -> list[np.ndarray]:
    """Per mip level, the textures stacked vertically with wrap padding."""
    levels = []
    current = textures
    for _ in range(MIP_LEVELS):
        padded = [cv2.copyMakeBorder(t, _PAD, _PAD, _PAD, _PAD, cv2.BORDER_WRAP) for t in current]
        levels.append(np.ascontiguousarray(np.concatenate(padded, axis=0)))
        current = [cv2.pyrDown(t) for t in current]
    return levels


def extend_atlas(atlas: list[np.ndarray], textures: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """``atlas`` with ``textures`` appended, and the index of the first of them."""
    first = atlas[0].shape[0] // (TEXTURE_SIZE + 2 * _PAD)
    extra = atlas_pyramid(textures)
    return [np.ascontiguousarray(np.concatenate([old, new], axis=0)) for old, new in zip(atlas, extra)], first


def mip_level(footprint: np.ndarray) -> np.ndarray:
    """Mip level (fractional) for a pixel footprint measured in level-0 texels."""
    return np.clip(np.log2(np.maximum(footprint, 1e-6)), 0, MIP_LEVELS - 1)


def sample_atlas(atlas: list[np.ndarray], u: np.ndarray, v: np.ndarray, tex_index: np.ndarray,
                 level: np.ndarray) -> np.ndarray:
    """Trilinear lookup of texture ``tex_index`` at (u, v) in [0, 1): bilinear in the two nearest
    mip levels, blended by the fraction. Returns (N, 3) float32."""
    lower = np.floor(level).astype(int)
    frac = level - lower
    out = np.zeros((u.size, 3), dtype=np.float32)
    # the samples grouped by their lower level once, rather than a mask over all of them per level
    order = np.argsort(lower, kind="stable")
    bounds = np.searchsorted(lower[order], np.arange(MIP_LEVELS + 1))
    groups = [order[bounds[lvl]:bounds[lvl + 1]] for lvl in range(MIP_LEVELS)]
    for lvl in range(MIP_LEVELS):
        # a sample blends its lower level (weight 1 - frac) with the next one up (frac)
        low = groups[lvl]
        high = groups[lvl - 1] if lvl > 0 else low[:0]
        index = np.concatenate([high, low])
        if len(index) == 0:
            continue
        weight = np.concatenate([frac[high], 1.0 - frac[low]])
        if lvl == MIP_LEVELS - 1:  # the top level is its own next level
            weight[len(high):] += frac[low]
        size = TEXTURE_SIZE >> lvl
        pad_size = size + 2 * _PAD
        map_x = (u[index] * size + _PAD - 0.5).astype(np.float32)
        map_y = (tex_index[index] * pad_size + v[index] * size + _PAD - 0.5).astype(np.float32)
        sampled = _remap_flat(atlas[lvl], map_x, map_y)
        out[index] += sampled * weight[:, None].astype(np.float32)
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
