"""Burnt-in overlays: pixels that stay put while the rest of the picture moves.

World-model demo videos ship with a keyboard HUD burnt in; others carry a watermark, a logo,
letterbox bars or subtitles. Their corners never move, so tracked they vote for "no motion":
under a turn they read as parallax, and their crisp edges take a large share of the corners.
:func:`detect_static_overlay` finds them over a clip (the frames the estimator is given at once)
so that tracking leaves them out; a user may give the mask instead
(:func:`load_user_mask`: an image, or rectangles ``x,y,w,h;...``).

A pixel belongs to an overlay when, in the frame pairs where most of the textured picture
changes (the camera or the scene moves), it stays put in nearly all of them, or an edge stays at
it in nearly every frame (a translucent watermark changes with what is behind it, its edges do
not). Content at infinity also stays put while the camera only moves (a distant ridge under a
forward move), so a still region larger than ``max_share`` of the textured picture is taken for
the world, not an overlay.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")


class MaskError(ValueError):
    """A user-given overlay mask cannot be read or does not fit the video; the message says why."""


@dataclass(frozen=True)
class OverlayConfig:
    """Settings of :func:`detect_static_overlay` (grey levels and pixels of the working image)."""

    edge_floor: float = 2.0  # grey levels per px of gradient below which a pixel says nothing about motion
    moving_px: float = 0.3  # median apparent displacement from the first frame of a cell's textured pixels ...
    moving_share: float = 0.6  # ... in this share of the textured cells, for a frame to count as moved
    cells: int = 8  # the frame is judged in cells x cells cells, so that a large mover cannot move it
    still_px: float = 0.12  # a pixel whose apparent displacement stays under this ...
    still_grey: float = 1.5  # ... or whose value changes by less than this (plus twice the pixel noise) ...
    still_share: float = 0.9  # ... in this share of the moved frames stays put ...
    corner_floor: float = 1.0  # ... where the texture has two directions (weaker eigenvalue, (grey/px)^2)
    edge_strength: float = 6.0  # gradient (grey levels per px) an edge needs in 80 % of the frames (a faint
    # watermark over a pale sky: 6-10) ...
    edge_steadiness: float = 0.6  # ... at this ratio of its 20th to 80th percentile over the frames
    min_moved_frames: int = 2
    max_share: float = 0.3  # of the frame: more that stays put is the world (far content), not an overlay
    min_blob_px: int = 12  # smaller still specks are texture that happened not to change
    min_orientation: float = 0.15  # a blob's edges must run in several directions (eigenvalue ratio of its
    # structure tensor): a straight edge sliding along itself (a horizon, a wall's edge) looks still too
    max_span: tuple[float, float] = (0.6, 0.25)  # a still blob this wide and this tall (of the frame) is a far view
    density_px: int = 9  # in each such window ...
    min_density: float = 0.5  # ... this share of the textured pixels must be still for any of them to count
    ring_px: int = 6  # the picture this far around a blob ...
    min_ring_px: int = 20  # ... (at least this many textured pixels of it) must mostly move
    margin_px: int = 8  # dilation (working-image px): a tracking window that touches the overlay is dragged by it
    detect_side: int = 224  # overlays are looked for at this long side at most (they are large and crisp)


def _gradient(image: np.ndarray) -> np.ndarray:
    """Gradient magnitude in grey levels per pixel."""
    return np.hypot(cv2.Sobel(image, cv2.CV_32F, 1, 0), cv2.Sobel(image, cv2.CV_32F, 0, 1)) / 8.0


def detect_static_overlay(grays: list[np.ndarray], noise: float = 0.0,
                          config: OverlayConfig = OverlayConfig()) -> np.ndarray:
    """(H, W) bool mask of the burnt-in overlays of a clip's grayscale frames (all False when
    nothing stays put while the rest moves, or when too few frames move to tell).

    The clip is judged in two halves (a subtitle changes every second or two) at a long side of
    at most ``detect_side`` px. Each frame is compared with its half's first: a pixel's change
    over its gradient is how far the picture under it moved (its normal flow). In the frames
    where the picture moved (:func:`_moved_frames`), a textured pixel that stayed put in nearly
    all of them, or an edge that stayed in nearly every frame, is overlay (:func:`_overlay_blobs`
    keeps the blobs that look like one). Comparing with a first frame rather than the previous
    one keeps the slowly expanding middle of a forward move out: it drifts a little every frame
    and a lot over the clip."""
    height, width = grays[0].shape
    if len(grays) < 3:
        return np.zeros((height, width), bool)
    scale = min(1.0, config.detect_side / max(height, width))
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    small = [cv2.resize(g, size, interpolation=cv2.INTER_AREA) if scale < 1.0 else g for g in grays]
    stack = np.stack([cv2.GaussianBlur(g, (3, 3), 0).astype(np.float32) for g in small])
    edges = np.stack([_gradient(s) for s in stack])
    candidate = _flat_bars(stack)
    middle = len(stack) // 2
    halves = [(0, middle + 1), (middle, len(stack))] if len(stack) >= 9 else [(0, len(stack))]
    for first, stop in halves:
        candidate |= _still_blobs(stack[first:stop], edges[first:stop], noise, config)
    if not candidate.any():
        return np.zeros((height, width), bool)
    if scale < 1.0:
        candidate = cv2.resize(candidate.astype(np.uint8), (width, height), interpolation=cv2.INTER_NEAREST)
    margin = 2 * config.margin_px + 1
    return cv2.dilate(candidate.astype(np.uint8), np.ones((margin, margin), np.uint8)).astype(bool)


def _still_blobs(stack: np.ndarray, edges: np.ndarray, noise: float, config: OverlayConfig) -> np.ndarray:
    """The overlay blobs of one run of frames (see :func:`detect_static_overlay`)."""
    reference = edges[0]
    textured = reference > config.edge_floor
    if textured.mean() < 0.02:
        return np.zeros(reference.shape, bool)
    change = np.abs(stack[1:] - stack[0])
    displacement = change / np.maximum(reference, config.edge_floor)
    moved = _moved_frames(displacement, textured, config)
    if moved.sum() < config.min_moved_frames:
        return np.zeros(reference.shape, bool)
    stays = (displacement[moved] < config.still_px) | (change[moved] < config.still_grey + 2.0 * noise)
    # only texture with two directions says it stayed: an edge stays put under motion along it
    still = textured & (_weak_direction(stack[0]) > config.corner_floor) \
        & (np.mean(stays, axis=0) >= config.still_share)
    ordered = np.sort(edges.reshape(len(edges), -1).T, axis=1)  # per pixel, its edge strength over the frames
    low = ordered[:, int(0.2 * (len(edges) - 1))].reshape(reference.shape)
    high = ordered[:, int(np.ceil(0.8 * (len(edges) - 1)))].reshape(reference.shape)
    steady_edge = (low > config.edge_strength) & (low >= config.edge_steadiness * high)
    moving = np.mean(displacement[moved] > config.moving_px, axis=0) >= 0.5
    # an overlay stays put as a whole; texture that moves along its own edges leaves still specks
    size = (config.density_px, config.density_px)
    candidate = still | steady_edge
    density = cv2.boxFilter(candidate.astype(np.float32), -1, size, normalize=False) \
        / np.maximum(cv2.boxFilter(textured.astype(np.float32), -1, size, normalize=False), 1.0)
    candidate &= density >= config.min_density
    found = _overlay_blobs(candidate, stack[0], textured & moving, textured, config)
    return found if found.mean() <= config.max_share else np.zeros(reference.shape, bool)


def _weak_direction(image: np.ndarray, size: int = 5) -> np.ndarray:
    """Per pixel, the smaller eigenvalue of the gradient structure tensor over a ``size`` window
    ((grey levels per px)^2): large at corners and in two-dimensional texture, small on edges."""
    gx = cv2.Sobel(image, cv2.CV_32F, 1, 0) / 8.0
    gy = cv2.Sobel(image, cv2.CV_32F, 0, 1) / 8.0
    jxx, jyy, jxy = (cv2.boxFilter(a * b, -1, (size, size)) for a, b in ((gx, gx), (gy, gy), (gx, gy)))
    return (jxx + jyy) / 2.0 - np.sqrt(((jxx - jyy) / 2.0) ** 2 + jxy**2)


def _moved_frames(displacement: np.ndarray, textured: np.ndarray, config: OverlayConfig) -> np.ndarray:
    """Per frame, whether the picture moved: the median displacement of the textured pixels
    exceeds ``moving_px`` (more than half of them moved that far) in ``moving_share`` of the cells
    with texture. Cells, not pixels: a still camera before a large textured mover has moved
    pixels but unmoved cells."""
    frames, height, width = displacement.shape
    rows = np.minimum(np.arange(height) * config.cells // height, config.cells - 1)
    cols = np.minimum(np.arange(width) * config.cells // width, config.cells - 1)
    cell = (rows[:, None] * config.cells + cols[None, :])[textured]
    cells = config.cells**2
    counts = np.bincount(cell, minlength=cells)
    has_texture = counts >= 8
    if not has_texture.any():
        return np.zeros(frames, bool)
    above = displacement[:, textured] > config.moving_px
    index = (np.arange(frames)[:, None] * cells + cell[None, :]).ravel()
    moved_cells = np.bincount(index, above.ravel(), minlength=frames * cells).reshape(frames, cells)
    cell_moved = moved_cells[:, has_texture] > 0.5 * counts[has_texture]
    return cell_moved.mean(axis=1) >= config.moving_share


def _overlay_blobs(mask: np.ndarray, first: np.ndarray, moving: np.ndarray, textured: np.ndarray,
                   config: OverlayConfig) -> np.ndarray:
    """The connected blobs of still pixels (1-px gaps closed) that look like an overlay: at least
    ``min_blob_px``, edges in several directions, not a band spanning the view, and the picture
    around them moving (``moving``: textured pixels that moved in most moved frames). The last
    keeps out content at infinity while the camera only translates (a distant ridge): it stays put
    like an overlay, but so does the world around it, and its tracks pin the rotation."""
    closed = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(closed, connectivity=8)
    if count <= 1:
        return np.zeros_like(mask)
    height, width = mask.shape
    gx, gy = cv2.Sobel(first, cv2.CV_32F, 1, 0), cv2.Sobel(first, cv2.CV_32F, 0, 1)
    inside = mask.ravel()
    flat = labels.ravel()[inside]
    tensor = np.stack([np.bincount(flat, (a * b).ravel()[inside], minlength=count)
                       for a, b in ((gx, gx), (gy, gy), (gx, gy))])
    spread = np.sqrt((tensor[0] - tensor[1]) ** 2 + 4 * tensor[2] ** 2)
    largest, smallest = (tensor[0] + tensor[1] + spread) / 2, (tensor[0] + tensor[1] - spread) / 2
    keep = (stats[:, cv2.CC_STAT_AREA] >= config.min_blob_px) \
        & (smallest >= config.min_orientation * np.maximum(largest, 1e-9)) \
        & ~((stats[:, cv2.CC_STAT_WIDTH] > config.max_span[0] * width)
            & (stats[:, cv2.CC_STAT_HEIGHT] > config.max_span[1] * height))
    keep[0] = False
    ring_kernel = np.ones((2 * config.ring_px + 1, 2 * config.ring_px + 1), np.uint8)
    for label in np.flatnonzero(keep):
        x, y, w, h = stats[label, :4]
        pad = config.ring_px + 1
        box = (slice(max(0, y - pad), y + h + pad), slice(max(0, x - pad), x + w + pad))
        blob = (labels[box] == label).astype(np.uint8)
        ring = cv2.dilate(blob, ring_kernel).astype(bool) & ~cv2.dilate(blob, np.ones((3, 3), np.uint8)).astype(bool)
        around = ring & textured[box]
        if np.count_nonzero(around) >= config.min_ring_px and np.mean(moving[box][around]) < 0.5:
            keep[label] = False
    return keep[labels] & mask


def _flat_bars(stack: np.ndarray, max_std: float = 1.5, max_share: float = 0.25) -> np.ndarray:
    """Letterbox (or pillarbox) bars: runs of rows (columns) at both opposite edges of the frame,
    of alike size, each one flat colour, the same in every frame and in both bars. One flat
    band at one edge is more likely a plain sky or floor than a bar."""
    frames, height, width = stack.shape
    bars = np.zeros((height, width), bool)
    for axis, length in ((2, height), (1, width)):
        lines = stack.mean(axis=axis)  # (frames, length): each row's (column's) mean in every frame
        flat = (stack.std(axis=axis).max(axis=0) < max_std) & (np.ptp(lines, axis=0) < max_std)
        runs = []
        for order in (range(length), range(length - 1, -1, -1)):
            run, edge_value = 0, lines[:, order[0]]
            for index in order:
                if not flat[index] or np.abs(lines[:, index] - edge_value).max() >= max_std:
                    break
                run += 1
            runs.append(run)
        first, last = runs
        if not (0 < first <= max_share * length and 0 < last <= max_share * length) or max(runs) > 1.5 * min(runs):
            continue
        values = np.concatenate([lines[:, :first].ravel(), lines[:, length - last:].ravel()])
        if np.ptp(values) >= max_std:
            continue
        if axis == 2:
            bars[:first] = bars[height - last:] = True
        else:
            bars[:, :first] = bars[:, width - last:] = True
    return bars


def parse_rectangles(text: str) -> list[tuple[int, int, int, int]]:
    """``"x,y,w,h;x,y,w,h"`` (pixels of the video) -> rectangles; MaskError naming the bad one."""
    rectangles = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        try:
            x, y, w, h = (int(float(v)) for v in part.split(","))
        except ValueError:
            raise MaskError(f"mask rectangle {part!r}: write x,y,w,h in pixels, several separated by ';'") from None
        if w <= 0 or h <= 0 or x < 0 or y < 0:
            raise MaskError(f"mask rectangle {part!r}: x and y must be >= 0, w and h > 0")
        rectangles.append((x, y, w, h))
    if not rectangles:
        raise MaskError(f"mask {text!r}: no rectangle; write x,y,w,h in pixels, several separated by ';'")
    return rectangles


@dataclass(frozen=True)
class UserMask:
    """A user's overlay mask as given (an image path, or rectangles ``x,y,w,h;...``), made into
    pixels once the video's size is known (:meth:`for_size`)."""

    spec: str
    base: Path | None = None  # relative image paths resolve against it (a manifest's folder)

    def for_size(self, width: int, height: int) -> np.ndarray:
        return load_user_mask(self.spec, width, height, self.base)

    def check(self) -> None:
        """MaskError now, before any video is made, when the image is missing or the rectangles
        do not parse (whether they fit is known only with the video)."""
        path = self._image_path()
        if path is None:
            parse_rectangles(self.spec)
        elif cv2.imread(str(path), cv2.IMREAD_GRAYSCALE) is None:
            raise MaskError(f"{path}: mask image not found or not readable")

    def _image_path(self) -> Path | None:
        return _image_path(self.spec, self.base)


def _image_path(spec: str, base: Path | None) -> Path | None:
    """The image a mask spec names (None when it is rectangles)."""
    spec = str(spec).strip()
    path = Path(spec) if base is None or Path(spec).is_absolute() else base / spec
    return path if path.suffix.lower() in IMAGE_SUFFIXES else None


def load_user_mask(spec: str, width: int, height: int, base: Path | None = None) -> np.ndarray:
    """A user's overlay mask for (width x height) video: an image file (nonzero pixels are the
    overlay; resized to the video) or rectangles ``x,y,w,h;...`` in the video's pixels."""
    path = _image_path(spec, base)
    if path is not None:
        image = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        if image is None:
            raise MaskError(f"{path}: mask image not found or not readable")
        if image.shape != (height, width):
            image = cv2.resize(image, (width, height), interpolation=cv2.INTER_NEAREST)
        return image > 0
    mask = np.zeros((height, width), bool)
    for x, y, w, h in parse_rectangles(str(spec)):
        if x >= width or y >= height:
            raise MaskError(f"mask rectangle {x},{y},{w},{h} lies outside the {width}x{height} video")
        mask[y:y + h, x:x + w] = True
    return mask
