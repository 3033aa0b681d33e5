"""The frames as the OpenCV estimator tracks them: gray, at a working size, cleaned.

Frames are converted to gray, deblocked when a compression grid shows
(:mod:`wcbench.pose.deblock`), smoothed when the video is noisy, downscaled to a working size
(long side ``max_side``, at least ``min_height`` tall, never upscaled) with the intrinsics scaled
to match, and, unless compressed, contrast-normalised so that faint texture (pale floors and
walls) is tracked too: tracks spread over many depths are what tell a turn from a sideways step.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from wcbench.core.noise import compute_noise_sigma
from wcbench.pose.deblock import BlockGrid, deblock, detect_block_grid


def working_size(width: int, height: int, max_side: int, min_height: int) -> tuple[int, int]:
    """(width, height) of the working image: long side ``max_side`` but at least
    ``min_height`` tall, never larger than the input."""
    scale = min(1.0, max_side / max(width, height))
    if height * scale < min_height:
        scale = min(1.0, min_height / height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def scale_intrinsics(K: np.ndarray, sx: float, sy: float) -> np.ndarray:
    """Intrinsics of an image resized by (sx, sy), pixel-centre convention of OpenCV."""
    scaled = np.array(K, dtype=float)
    scaled[0, 0] *= sx
    scaled[0, 1] *= sx
    scaled[1, 1] *= sy
    scaled[0, 2] = (K[0, 2] + 0.5) * sx - 0.5
    scaled[1, 2] = (K[1, 2] + 0.5) * sy - 0.5
    return scaled


def to_gray(frame: np.ndarray) -> np.ndarray:
    """One frame as contiguous uint8 grayscale."""
    gray = frame[..., 0] if frame.ndim == 3 and frame.shape[2] == 1 else frame
    if gray.ndim == 3:
        gray = cv2.cvtColor(np.ascontiguousarray(gray), cv2.COLOR_RGB2GRAY)
    if gray.dtype != np.uint8:
        gray = np.clip(gray, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(gray)


def normalize_contrast(gray: np.ndarray, sigma_frac: float, floor: float,
                       left_out: np.ndarray | None = None) -> np.ndarray:
    """Local contrast normalisation: (gray - local mean) / max(local std, ``floor``), Gaussian
    windows of ``sigma_frac`` x the short side, back to uint8 around mid-grey.

    Faint texture (a pale floor, a plain wall: local std of 1-3 grey levels) then yields corners
    as readily as strong texture does; without it the tracks all sit on the few strongly
    textured objects, at one depth, where a turn and a sideways step look alike. It is the same
    operation at every pixel, so the normalised texture moves with the scene (CLAHE's fixed
    tiles did not: their gain stays put while content moves through them).

    ``left_out`` (True on a burnt-in overlay) is left out of the local statistics and drawn flat
    mid-grey: a letterbox bar or a HUD panel inside the window would otherwise set the gain of
    the picture beside it, a pattern that stays put while the content slides past and drags the
    tracks up to 40 px from the overlay's edge."""
    image = gray.astype(np.float32)
    sigma = sigma_frac * min(image.shape)
    if left_out is None:
        detail = image - _smooth(image, sigma)
        spread = np.sqrt(_smooth(detail * detail, sigma))
    else:
        weight = (~left_out).astype(np.float32)
        cover = np.maximum(_smooth(weight, sigma), 1e-3)
        detail = (image - _smooth(image * weight, sigma) / cover) * weight
        spread = np.sqrt(_smooth(detail * detail, sigma) / cover)
    return np.clip(128.0 + 40.0 * detail / np.maximum(spread, floor), 0, 255).astype(np.uint8)


def _smooth(image: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian blur of a wide ``sigma``, computed on a copy shrunk until sigma is ~2 px (the
    result is smooth at that scale, and a full-size wide blur cost as much as the tracking)."""
    factor = max(1, int(sigma / 2))
    height, width = image.shape
    small = cv2.resize(image, (max(1, width // factor), max(1, height // factor)), interpolation=cv2.INTER_AREA)
    small = cv2.GaussianBlur(small, (0, 0), sigma / factor)
    return cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR)


@dataclass
class WorkingVideo:
    """A video at the working size, grayscale uint8: ``plain`` (deblocked) and ``tracked``, what
    the tracker sees (contrast-normalised unless compressed)."""

    plain: list[np.ndarray]
    tracked: list[np.ndarray]
    compressed: bool = False  # a coding grid was found (JPEG / MPEG blocks)


def prepare_gray(frames: np.ndarray, size: tuple[int, int], use_deblock: bool = True,
                 contrast_sigma: float = 0.0, contrast_floor: float = 8.0,
                 denoise_above: float = 0.0, denoise_sigma: float = 1.0) -> WorkingVideo:
    """Grayscale frames at the working size; compression blocks are smoothed at the native
    resolution first when a coding grid is found, and pixel noise (a Gaussian of
    ``denoise_sigma`` px) when the video's noise (:func:`video_noise`) exceeds ``denoise_above``
    grey levels (0: never). With ``contrast_sigma`` > 0, the tracked frames have their local
    contrast normalised (:func:`normalize_contrast`), except on video with a coding grid, whose
    faint texture is mostly what the codec left and would be amplified with it."""
    grays = [to_gray(frame) for frame in frames]
    grid = detect_block_grid(grays) if use_deblock else BlockGrid(None, None)
    enhance = contrast_sigma > 0 and not grid.is_blocky
    # the contrast normalisation lifts noise with faint texture: corners and grid points then
    # follow the noise, and a slow move in a pale room fell under the noise-raised gate
    denoise = not grid.is_blocky and 0 < denoise_above < video_noise(grays)  # no noise estimate on compressed video
    plain = []
    for gray in grays:
        gray = deblock(gray, grid)
        if denoise:
            gray = cv2.GaussianBlur(gray, (0, 0), denoise_sigma)
        if (gray.shape[1], gray.shape[0]) != size:
            gray = cv2.resize(gray, size, interpolation=cv2.INTER_AREA)
        plain.append(gray)
    tracked = [normalize_contrast(gray, contrast_sigma, contrast_floor) for gray in plain] if enhance else plain
    return WorkingVideo(plain, tracked, grid.is_blocky)


def video_noise(grays: list[np.ndarray], samples: int = 8) -> float:
    """Pixel noise of a grayscale video (grey levels): the median of
    :func:`~wcbench.core.noise.compute_noise_sigma` over up to ``samples`` frames spread over it."""
    picks = grays[:: max(1, len(grays) // samples)][:samples]
    return float(np.median([compute_noise_sigma(gray) for gray in picks]))
