"""Pixel noise of a frame: what the quality scorer reports as noise and what the camera
estimator's dense tracks must rise above (one estimate for both)."""

from __future__ import annotations

import cv2
import numpy as np

_NOISE_MASK = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], dtype=np.float32)


def compute_noise_sigma(gray: np.ndarray, block: int = 8, quantile: float = 0.1) -> float:
    """Noise standard deviation (grey levels) of one grayscale frame.

    Immerkaer's estimator (1996): the mask above cancels locally linear image structure, so its
    mean absolute response over a region is 6 sqrt(2/pi) sigma for white noise of std sigma.
    Texture and edges also respond, so it is averaged per ``block`` x ``block`` tile and the
    ``quantile`` of the tiles is kept: the flattest tiles hold mostly noise. Blurring can only
    lower it, added noise raises every tile."""
    response = np.abs(cv2.filter2D(np.asarray(gray, dtype=np.float32), -1, _NOISE_MASK,
                                   borderType=cv2.BORDER_REFLECT))[1:-1, 1:-1]
    height, width = (response.shape[0] // block) * block, (response.shape[1] // block) * block
    tiles = response[:height, :width].reshape(height // block, block, width // block, block).mean(axis=(1, 3))
    return float(np.sqrt(np.pi / 2) / 6 * np.quantile(tiles, quantile))
