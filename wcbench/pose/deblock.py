"""Compression-block detection and a light deblocking filter for tracking.

Block-coded video (JPEG, MPEG at low quality) draws an 8x8 grid of edges that stays fixed in
the image while the scene moves. Corners on that grid do not move with the scene: tracks
stick to them and read as parallax, so a camera that only turns looks as if it translated.
The grid is found from where horizontal / vertical intensity steps concentrate (averaged
over several frames, so scene edges average out), and only pixels next to grid lines are
smoothed across them.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

BLOCK = 8


@dataclass(frozen=True)
class BlockGrid:
    """Grid lines between pixel ``phase + k * BLOCK`` and the next, per axis (None: no grid)."""

    phase_x: int | None
    phase_y: int | None

    @property
    def is_blocky(self) -> bool:
        return self.phase_x is not None or self.phase_y is not None


def _phase(steps: np.ndarray, min_ratio: float) -> int | None:
    """Grid phase of mean absolute steps along one axis, if one phase stands out."""
    usable = len(steps) - len(steps) % BLOCK
    if usable < 4 * BLOCK:
        return None
    per_phase = steps[:usable].reshape(-1, BLOCK).mean(axis=0)
    best = int(np.argmax(per_phase))
    baseline = float(np.median(np.delete(per_phase, best)))
    return best if per_phase[best] > min_ratio * max(baseline, 1e-6) else None


def detect_block_grid(grays: list[np.ndarray], samples: int = 8, min_ratio: float = 1.3) -> BlockGrid:
    """Find an 8x8 coding grid in (native-resolution) grayscale frames.

    A coding grid shows on both axes; requiring both keeps scene edges that happen to stay
    put (a horizon while the camera yaws) from passing for one. Codecs start their blocks at
    the frame's top-left pixel, so the grid lines fall after pixels 7, 15, ...; a periodic
    pattern at another phase is scene texture (a checkered wall seen by a slow camera).
    """
    picks = grays[:: max(1, len(grays) // samples)][:samples]
    stack = np.stack(picks).astype(np.float32)
    phase_x = _phase(np.abs(np.diff(stack, axis=2)).mean(axis=(0, 1)), min_ratio)
    phase_y = _phase(np.abs(np.diff(stack, axis=1)).mean(axis=(0, 2)), min_ratio)
    if phase_x != BLOCK - 1 or phase_y != BLOCK - 1:
        return BlockGrid(None, None)
    return BlockGrid(phase_x, phase_y)


def _boundary_weights(length: int, phase: int) -> np.ndarray:
    """1 on the two pixels that touch a grid line, 0.5 on the next ones out, else 0."""
    index = np.arange(length)
    distance = (index - phase - 0.5) % BLOCK
    distance = np.minimum(distance, BLOCK - distance)  # 0.5 next to a line, 1.5 one further
    return np.clip(1.5 - 0.5 * (distance + 0.5), 0.0, 1.0).astype(np.float32)


def deblock(gray: np.ndarray, grid: BlockGrid) -> np.ndarray:
    """Smooth across the grid lines of ``grid`` only (uint8 in, uint8 out)."""
    if not grid.is_blocky:
        return gray
    image = gray.astype(np.float32)
    if grid.phase_x is not None:
        weight = _boundary_weights(image.shape[1], grid.phase_x)[None, :]
        image = image * (1.0 - weight) + cv2.blur(image, (4, 1)) * weight
    if grid.phase_y is not None:
        weight = _boundary_weights(image.shape[0], grid.phase_y)[:, None]
        image = image * (1.0 - weight) + cv2.blur(image, (1, 4)) * weight
    return np.clip(image + 0.5, 0, 255).astype(np.uint8)
