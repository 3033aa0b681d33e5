"""Weight-free per-frame terms of the default visual-quality scorer besides BRISQUE.

- ``compute_blur_effect``: perceptual blur of Crete-Roffet et al. (2007), "The blur effect:
  perception and estimation with a new no-reference perceptual blur metric". It re-blurs the
  frame and measures how much of its neighbour-difference energy survives: a sharp frame loses
  a lot (value near 0), an already blurred one loses little (value near 1). Being a ratio, it
  is normalised for content (unlike the raw variance of the Laplacian, which mostly measures
  how much texture a scene has). Computed at native resolution: blur is a pixel-scale property.
- ``compute_noise_sigma``: Immerkaer's fast noise estimate over the flattest tiles.
- ``compute_blockiness``: how much the luma steps favour an aligned 8x8 block grid.
- ``compute_warp_error``: temporal flicker as the photometric error left after warping the
  previous frame onto the current one with dense optical flow (DIS), the standard warping
  error of video temporal-consistency work (Lai et al. 2018), on luma at a fixed analysis
  size so that videos of different resolutions are measured alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

BLUR_WINDOW = 11  # re-blur box size of the blur-effect metric (scikit-image's default)
MEDIAN_SIZE = 5  # denoising before the blur measure
_MIN_EDGE = 0.5  # grey levels per pixel: weaker steps are quantisation, not edges


def _span(array: np.ndarray, start: int, stop: int, axis: int) -> np.ndarray:
    return array[start:stop] if axis == 0 else array[:, start:stop]


def _blur_effect_axis(image: np.ndarray, strength: np.ndarray, axis: int, window: int, edge_share: float) -> float:
    """Blur effect along one axis.

    Differences of the re-blurred frame need no blur pass: for a box of ``window`` = 2h + 1
    pixels along the same axis, blurred[i+1] - blurred[i] = (I[i+h+1] - I[i-h]) / window.
    Only positions h <= i < n - h - 1 are used (the box never leaves the frame)."""
    half = window // 2
    lo, hi = half, image.shape[axis] - half - 1
    diff = np.abs(_span(image, lo + 1, hi + 1, axis) - _span(image, lo, hi, axis))  # int16 |I[i+1] - I[i]|
    diff_blurred = np.abs(_span(image, lo + half + 1, hi + half + 1, axis) - _span(image, lo - half, hi - half, axis))
    kept = np.maximum(window * diff - diff_blurred, 0)  # window x max(0, D - D_blurred)
    strength = _span(strength, lo, hi, axis)
    # The edge threshold from every other row and column: a quarter of the sorting, same ranks.
    sample = strength[::2, ::2].ravel()
    rank = min(sample.size - 1, int((1.0 - edge_share) * sample.size))
    threshold = max(float(np.partition(sample, rank)[rank]), _MIN_EDGE)
    edges = cv2.compare(strength, threshold, cv2.CMP_GE)  # uint8 mask; cv2 sums under it in double
    total = cv2.mean(diff, mask=edges)[0] * window
    if total <= 0:
        return 1.0
    return (total - cv2.mean(kept, mask=edges)[0]) / total


def compute_blur_effect(gray: np.ndarray, window: int = BLUR_WINDOW, edge_share: float = 0.1) -> float:
    """Blur effect of one grayscale frame in [0, 1]: 0 sharp, 1 fully blurred.

    Per axis: D = |neighbour differences| of the frame, V = max(0, D - D of the frame
    box-blurred along that axis); blur = 1 - sum(V) / sum(D); the worse axis is returned.
    Two departures from the original, both so that noise cannot pass for sharpness (noise adds
    steep neighbour differences everywhere, which would make a noisy frame look sharper): the
    frame is first median-filtered (5x5: removes noise and grain, keeps the steepness of
    edges), and the sums run over the ``edge_share`` strongest edges only (ranked on a lightly
    smoothed copy): blur is a property of edges. A frame with no edges counts as fully blurred."""
    gray = np.ascontiguousarray(gray, dtype=np.uint8)
    if min(gray.shape) < window + 4:
        raise ValueError(f"blur effect needs frames of at least {window + 4} pixels, got {gray.shape}")
    median = cv2.medianBlur(gray, MEDIAN_SIZE)
    image = median.astype(np.int16)
    smooth = cv2.GaussianBlur(median.astype(np.float32), (0, 0), 1.0)
    strength_rows = cv2.absdiff(smooth[1:], smooth[:-1])  # edge strength between rows i and i+1
    strength_cols = cv2.absdiff(smooth[:, 1:], smooth[:, :-1])
    return max(_blur_effect_axis(image, strength_rows, 0, window, edge_share),
               _blur_effect_axis(image, strength_cols, 1, window, edge_share))


@dataclass(frozen=True)
class FlowConfig:
    """How the flicker term aligns consecutive frames."""

    analysis_side: int = 256  # longer side of the luma frames the flow runs on (no upscaling)
    border: int = 4  # pixels ignored along the edges (flow is least reliable there)


def _analysis_frames(gray_frames: np.ndarray, side: int) -> np.ndarray:
    height, width = gray_frames.shape[1:3]
    scale = min(1.0, side / max(height, width))
    if scale == 1.0:
        return gray_frames
    size = (max(16, round(width * scale)), max(16, round(height * scale)))
    return np.stack([cv2.resize(frame, size, interpolation=cv2.INTER_AREA) for frame in gray_frames])


def _dis() -> cv2.DISOpticalFlow:
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_FAST)
    # Variational refinement keeps the flow smooth where texture is weak. A global brightness
    # jump stays in the residual (measured: +-20 grey levels leave a median residual of 12-22).
    dis.setVariationalRefinementIterations(3)
    return dis


def compute_warp_error(gray_frames: np.ndarray, config: FlowConfig = FlowConfig()) -> np.ndarray:
    """Median absolute luma error (grey levels, 0-255) after warping frame t-1 onto frame t.

    Returns (T,) with NaN at frame 0 (no predecessor): value t belongs to the transition
    t-1 -> t, the same alignment as the action-following scores. Pixels whose flow points
    outside the previous frame are left out (nothing there to compare with)."""
    frames = _analysis_frames(np.asarray(gray_frames, dtype=np.uint8), config.analysis_side)
    num_frames, height, width = frames.shape
    errors = np.full(num_frames, np.nan)
    grid_x, grid_y = np.meshgrid(np.arange(width, dtype=np.float32), np.arange(height, dtype=np.float32))
    dis = _dis()
    b = config.border
    for t in range(1, num_frames):
        # Flow from frame t to frame t-1: where each pixel of t came from.
        flow = dis.calc(frames[t], frames[t - 1], None)
        map_x, map_y = grid_x + flow[..., 0], grid_y + flow[..., 1]
        warped = cv2.remap(frames[t - 1].astype(np.float32), map_x, map_y, cv2.INTER_LINEAR,
                           borderMode=cv2.BORDER_REPLICATE)
        residual = np.abs(frames[t].astype(np.float32) - warped)[b:height - b, b:width - b]
        inside = ((map_x >= 0) & (map_x <= width - 1) & (map_y >= 0) & (map_y <= height - 1))
        inside = inside[b:height - b, b:width - b]
        # The median ignores what motion legitimately leaves unmatched (disocclusions, flow
        # failures at large motion) while a global brightness or colour jump, or temporal
        # noise, moves it fully.
        errors[t] = float(np.median(residual[inside])) if inside.any() else np.nan
    return errors


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


def compute_blockiness(gray: np.ndarray, grid: int = 8, min_step: float = 1.0, cap: float = 8.0) -> float:
    """Block-grid artefacts of one grayscale frame, in [-1, 1]: about 0 for clean content,
    towards 1 as codec-like blocks take over.

    A luma step "stands out" where it exceeds both neighbouring steps on the same line by more
    than ``min_step`` grey levels; its excess (capped at ``cap`` so that a few long straight
    edges cannot dominate) is summed per gap phase modulo ``grid``. The result is the share of
    the phase on the grid (the gap between pixels 8k+7 and 8k+8) minus the median share of the
    phases two or more pixels off it. Content puts its edges on every phase alike; codecs put
    their block edges on the grid (JPEG/H.264 transforms are 8-pixel aligned; VAE decoders tile
    8x- or 16x-downsampled latents likewise). The worse axis is returned."""
    image = np.asarray(gray, dtype=np.float32)
    values = []
    for axis in (0, 1):
        steps = np.abs(np.diff(image, axis=axis))
        if axis == 1:
            steps = steps.T  # gaps along the first axis from here on
        # excess[i] compares gap i + 1 with its neighbours, gaps i and i + 2.
        excess = steps[1:-1] - np.maximum(steps[:-2], steps[2:])
        weight_by_gap = np.where(excess > min_step, np.minimum(excess, cap), 0.0).sum(axis=1)
        phase = np.arange(1, steps.shape[0] - 1) % grid
        by_phase = np.array([weight_by_gap[phase == p].mean() if np.any(phase == p) else 0.0
                             for p in range(grid)])
        total = by_phase.sum()
        if total <= 0:
            values.append(0.0)
            continue
        share = by_phase / total
        values.append(float(share[grid - 1] - np.median(share[1:grid - 2])))
    return max(values)
