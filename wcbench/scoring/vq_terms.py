"""Weight-free measurements of the default visual-quality scorer.

Single-frame, at native resolution (blur, noise and blocks are pixel-scale properties; the
noise estimate, :func:`wcbench.core.noise.compute_noise_sigma`, is shared with the camera
estimator):
- ``compute_blur_effect``: perceptual blur of Crete-Roffet et al. (2007), "The blur effect:
  perception and estimation with a new no-reference perceptual blur metric". It re-blurs the
  frame and measures how much of its neighbour-difference energy survives: a sharp frame loses
  a lot (value near 0), an already blurred one loses little (value near 1). Being a ratio, it
  is normalised for content (unlike the raw variance of the Laplacian, which mostly measures
  how much texture a scene has).
- ``compute_blockiness``: how much the luma steps favour an aligned 8x8 block grid.

Frame to frame (``compute_temporal``): after dense optical flow (DIS) aligns frame t-1 onto
frame t, the brightness jump left (flicker) and the temporal noise: what is new at the pixel
scale once every pixel is matched to the best patch around where the flow points. Residuals
after warping are the standard measure of video temporal consistency (Lai et al. 2018); the
whole-pixel matching is what keeps aliased, pixel-scale texture from reading as noise.

Global (``compute_colour_stats``): colour balance, saturation, exposure and contrast, for the
drift from the first frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

BLUR_WINDOW = 11  # re-blur box size of the blur-effect metric (scikit-image's default)
MEDIAN_SIZE = 5  # denoising before the blur measure
_MIN_EDGE = 0.5  # grey levels per pixel: weaker steps are quantisation, not edges


def to_gray(frames: np.ndarray) -> np.ndarray:
    """(T, H, W, 3) uint8 RGB -> (T, H, W) uint8 luma (BT.601)."""
    return np.stack([cv2.cvtColor(np.ascontiguousarray(frame), cv2.COLOR_RGB2GRAY) for frame in frames])


def _along(array: np.ndarray, axis: int) -> np.ndarray:
    """A view whose first index runs along ``axis`` (rows for 0, columns for 1)."""
    return array if axis == 0 else array.T


def _span(array: np.ndarray, start: int, stop: int, axis: int) -> np.ndarray:
    return array[start:stop] if axis == 0 else array[:, start:stop]


def _blur_effect_axis(image: np.ndarray, strength: np.ndarray, axis: int, window: int, edge_share: float,
                      grid: int) -> float:
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
    # Gaps on the codec block grid (between pixels 8k+7 and 8k+8) are never edges: a block
    # boundary is sharp however blurred the blocks are.
    on_grid = np.flatnonzero((np.arange(lo, hi) % grid) == grid - 1) if grid else np.zeros(0, int)
    # The edge threshold from every other row and column: a quarter of the sorting, same ranks.
    sample = strength[::2, ::2].copy()
    _along(sample, axis)[on_grid[on_grid % 2 == 0] // 2] = 0
    sample = sample.ravel()
    rank = min(sample.size - 1, int((1.0 - edge_share) * sample.size))
    threshold = max(float(np.partition(sample, rank)[rank]), _MIN_EDGE)
    edges = cv2.compare(strength, threshold, cv2.CMP_GE)  # uint8 mask, 255 on the edges
    _along(edges, axis)[on_grid] = 0
    total = _masked_mean(diff, edges) * window
    if total <= 0:
        return 1.0
    return (total - _masked_mean(kept, edges)) / total


def _masked_mean(values: np.ndarray, mask: np.ndarray) -> float:
    """The mean of integer ``values`` where ``mask`` (uint8, 0 or 255) is set, 0 where it is
    nowhere set; exact (summed in integers), so it does not depend on the order of summation.
    cv2.mean's IPP path rounds its last bit differently with the number of OpenCV threads,
    which made a video's vq differ between machines with other core counts, and between
    ``score --jobs 1`` and the one-thread workers of ``--jobs N``."""
    count = np.count_nonzero(mask)
    if count == 0:
        return 0.0
    return float(int(np.einsum("ij,ij->", values, mask, dtype=np.int64)) // 255 / count)


def compute_blur_effect(gray: np.ndarray, window: int = BLUR_WINDOW, edge_share: float = 0.1, grid: int = 8) -> float:
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
    return max(_blur_effect_axis(image, strength_rows, 0, window, edge_share, grid),
               _blur_effect_axis(image, strength_cols, 1, window, edge_share, grid))


@dataclass(frozen=True)
class TemporalConfig:
    """How consecutive frames are aligned and compared (flicker and temporal noise)."""

    analysis_side: int = 256  # longer side of the luma frames the flow runs on (no upscaling)
    border: int = 4  # analysis pixels ignored along the edges (flow is least reliable there)
    tile: int = 32  # side of the full-resolution tiles the pixel-scale comparison runs on
    max_tiles: int = 20  # tiles per transition (a 160x160 frame is covered almost whole)
    keep: float = 0.5  # share of best-matching tile pixels the noise is measured on


def _analysis_frames(gray_frames: np.ndarray, side: int) -> np.ndarray:
    """Frames shrunk by the smallest whole factor that brings the longer side to ``side`` or less
    (area averaging; the frame is first cropped to a multiple of the factor, which keeps OpenCV
    on its fast path)."""
    height, width = gray_frames.shape[1:3]
    factor = -(-max(height, width) // side)
    if factor <= 1:
        return gray_frames
    height, width = height - height % factor, width - width % factor
    size = (width // factor, height // factor)
    return np.stack([cv2.resize(frame[:height, :width], size, interpolation=cv2.INTER_AREA) for frame in gray_frames])


def _dis() -> cv2.DISOpticalFlow:
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_FAST)
    # Variational refinement keeps the flow smooth where texture is weak.
    dis.setVariationalRefinementIterations(3)
    return dis


def _tile_pixels(height: int, width: int, tile: int, max_tiles: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) int32 coordinates of up to ``max_tiles`` tiles on a regular grid, laid side
    by side in one (tile, n * tile) image."""
    tile = min(tile, height, width)
    rows, cols = max(1, height // tile), max(1, width // tile)
    while rows * cols > max_tiles:  # thin the denser direction first
        if rows * width >= cols * height:
            rows -= 1
        else:
            cols -= 1
    top = np.linspace(0, height - tile, rows).round().astype(np.int32)
    left = np.linspace(0, width - tile, cols).round().astype(np.int32)
    yy, xx = np.mgrid[0:tile, 0:tile].astype(np.int32)
    tiles = [(y, x) for y in top for x in left]
    return (np.concatenate([yy + y for y, _ in tiles], axis=1),
            np.concatenate([xx + x for _, x in tiles], axis=1))


def _trimmed_mean(values: np.ndarray, trim: float = 0.25) -> float:
    """Mean of the values left after dropping the ``trim`` share at each end (by rank, so ties
    at integer residuals split evenly): a location estimate that ignores what motion leaves
    unmatched (disocclusions, flow failures) and is not quantised like a median."""
    values = np.asarray(values, dtype=np.float32).ravel()
    cut = int(trim * values.size)
    if values.size - 2 * cut < 1:
        return float(values.mean()) if values.size else 0.0
    middle = np.partition(values, (cut, values.size - cut - 1))[cut:values.size - cut]
    return float(middle.mean())


def _trimmed_rms(values: np.ndarray, keep: float) -> float:
    """RMS of the ``keep`` share of values smallest in magnitude."""
    magnitude = np.abs(values).ravel()
    count = max(1, int(keep * magnitude.size))
    kept = np.partition(magnitude, count - 1)[:count].astype(np.float64)
    return float(np.sqrt(np.mean(kept**2)))


def _global_shift(small_cur: np.ndarray, small_prev: np.ndarray, flow: np.ndarray, border: int) -> float:
    """Brightness change (grey levels) of the analysis frame ``small_cur`` against ``small_prev``
    warped onto it by ``flow``."""
    height, width = small_cur.shape
    grid_x, grid_y = np.meshgrid(np.arange(width, dtype=np.float32), np.arange(height, dtype=np.float32))
    map_x, map_y = grid_x + flow[..., 0], grid_y + flow[..., 1]
    warped = cv2.remap(small_prev.astype(np.float32), map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    inside = (map_x >= 0) & (map_x <= width - 1) & (map_y >= 0) & (map_y <= height - 1)
    b = border if min(height, width) > 4 * border else 0
    # Every other row and column: a location estimate needs no more, and sorting costs.
    residual = (small_cur.astype(np.float32) - warped)[b:height - b:2, b:width - b:2]
    inside = inside[b:height - b:2, b:width - b:2]
    return _trimmed_mean(residual[inside]) if inside.any() else 0.0


def _matched_residual(cur: np.ndarray, prev: np.ndarray, flow: np.ndarray, factor: float,
                      pixels: tuple[np.ndarray, np.ndarray], shift: float) -> np.ndarray:
    """Residual of full-resolution tile pixels of ``cur`` (less ``shift``) against the best
    3x3-patch match in ``prev`` within one pixel of where the (upscaled) flow points.

    Matching whole pixels, not interpolating, is what keeps aliased or pixel-scale texture
    from reading as noise: that texture is still there, one pixel over, in the previous frame,
    while noise is new in every frame."""
    rows, cols = pixels
    height, width = cur.shape
    # The analysis-resolution flow at the tile pixels, in full-resolution pixels.
    at_x, at_y = (cols + 0.5) / factor - 0.5, (rows + 0.5) / factor - 0.5
    source_x = np.rint(cols + factor * cv2.remap(flow[..., 0], at_x, at_y, cv2.INTER_LINEAR,
                                                 borderMode=cv2.BORDER_REPLICATE))
    source_y = np.rint(rows + factor * cv2.remap(flow[..., 1], at_x, at_y, cv2.INTER_LINEAR,
                                                 borderMode=cv2.BORDER_REPLICATE))
    target = cv2.remap(cur, cols, rows, cv2.INTER_NEAREST).astype(np.float32) - shift
    best_cost = np.full(target.shape, np.inf, np.float32)
    best = np.zeros(target.shape, np.float32)
    for dy in (-1.0, 0.0, 1.0):
        for dx in (-1.0, 0.0, 1.0):
            candidate = cv2.remap(prev, source_x + dx, source_y + dy, cv2.INTER_NEAREST,
                                  borderMode=cv2.BORDER_REPLICATE)
            diff = cv2.subtract(target, candidate, dtype=cv2.CV_32F)
            cost = cv2.boxFilter(cv2.multiply(diff, diff), -1, (3, 3), normalize=False, borderType=cv2.BORDER_REFLECT)
            better = cost < best_cost
            np.copyto(best_cost, cost, where=better)
            np.copyto(best, diff, where=better)
    inside = (source_x >= 1) & (source_x <= width - 2) & (source_y >= 1) & (source_y <= height - 2)
    return best[inside]


def compute_temporal(gray_frames: np.ndarray,
                     config: TemporalConfig = TemporalConfig()) -> tuple[np.ndarray, np.ndarray]:
    """Per transition t-1 -> t: (flicker, noise), each (T,) with NaN at frame 0.

    Dense optical flow (DIS) aligns frame t-1 onto frame t on luma downscaled to
    ``analysis_side``. Flicker is the signed brightness change left after alignment (grey
    levels): the trimmed mean of the warped residual, refined on the matched
    full-resolution residual below. Noise is the temporal noise level (grey levels): each pixel
    of full-resolution tiles is matched to the best 3x3 patch within a pixel of where the flow
    points in frame t-1, and the RMS of the best-matching ``keep`` share of the residual,
    divided by sqrt(2) (the difference of two noisy pixels), is kept. Pixel noise, grain and
    codec artefacts are new in every frame and raise it; texture, even aliased texture, does
    not, and neither does blur (unlike a single-frame noise estimate, which a blur lowers).
    Value t belongs to the transition t-1 -> t, the same alignment as the action-following
    scores."""
    gray_frames = np.asarray(gray_frames, dtype=np.uint8)
    num_frames, height, width = gray_frames.shape
    small = _analysis_frames(gray_frames, config.analysis_side)
    factor = width // small.shape[2]  # the whole shrink factor of _analysis_frames
    pixels = tuple(p.astype(np.float32) for p in _tile_pixels(height, width, config.tile, config.max_tiles))
    flicker, noise = np.full(num_frames, np.nan), np.full(num_frames, np.nan)
    dis = _dis()
    for t in range(1, num_frames):
        # Flow from frame t to frame t-1: where each pixel of t came from.
        flow = dis.calc(small[t], small[t - 1], None)
        shift = _global_shift(small[t], small[t - 1], flow, config.border)
        residual = _matched_residual(gray_frames[t], gray_frames[t - 1], flow, factor, pixels, shift)
        if residual.size == 0:
            continue
        refinement = _trimmed_mean(residual)
        flicker[t] = shift + refinement
        noise[t] = _trimmed_rms(residual - refinement, config.keep) / np.sqrt(2.0)
    return flicker, noise


@dataclass(frozen=True)
class ColourConfig:
    """How colour casts are measured: log-chromaticity histograms registered against frame 0."""

    side: int = 128  # pixels across the strided sample the histogram is made of
    bins: int = 96  # per axis, over [-span, span]
    span: float = 1.5  # log(R/G) and log(B/G) range
    smooth: float = 1.5  # histogram smoothing, bins


def _chroma_histogram(frame: np.ndarray, config: ColourConfig) -> np.ndarray | None:
    """Square root of the smoothed 2-D histogram of (log R/G, log B/G) over well-exposed pixels;
    None if there are none."""
    step = max(1, max(frame.shape[:2]) // config.side)
    red, green, blue = (frame[::step, ::step, c].ravel() for c in range(3))
    lowest, highest = np.minimum(np.minimum(red, green), blue), np.maximum(np.maximum(red, green), blue)
    exposed = (lowest >= 8) & (highest <= 250)  # dark or clipped pixels have no hue
    if not exposed.any():
        return None
    log_red, log_green, log_blue = (np.log(c[exposed].astype(np.float32) + 1.0) for c in (red, green, blue))
    chroma = np.stack([log_red - log_green, log_blue - log_green], axis=1)[None]
    hist = cv2.calcHist([chroma], [0, 1], None, [config.bins] * 2,
                        [-config.span, config.span] * 2).astype(np.float64)
    # The square root evens out the modes: a camera that turns from sky to ground changes how
    # much of each colour there is, which must not move the registration's peak.
    return np.sqrt(cv2.GaussianBlur(hist, (0, 0), config.smooth))


def _peak_offset(values: np.ndarray, index: int) -> float:
    """Sub-bin position of a peak of circular ``values`` at ``index`` (parabola through 3 bins)."""
    before, at, after = values[(index - 1) % values.size], values[index], values[(index + 1) % values.size]
    curvature = before - 2 * at + after
    return index + (0.5 * (before - after) / curvature if curvature < 0 else 0.0)


def register_histograms(reference: np.ndarray, current: np.ndarray) -> tuple[float, float]:
    """(rows, cols) shift, in bins, of ``current`` against ``reference``: the peak of their
    cross-correlation (zero-padded, so nothing wraps), to a fraction of a bin. Plain
    correlation, not phase correlation: a histogram that changes shape (blur mixes colours)
    must move the peak a little, not to a random place."""
    size = 2 * max(reference.shape)
    spectra = []
    for hist in (current, reference):
        padded = np.zeros((size, size), np.float64)
        padded[:hist.shape[0], :hist.shape[1]] = hist
        spectra.append(cv2.dft(padded, flags=cv2.DFT_COMPLEX_OUTPUT))
    correlation = cv2.idft(cv2.mulSpectrums(spectra[0], spectra[1], 0, conjB=True),
                           flags=cv2.DFT_REAL_OUTPUT | cv2.DFT_SCALE)
    row, col = np.unravel_index(int(np.argmax(correlation)), correlation.shape)
    shifts = (_peak_offset(correlation[:, col], row), _peak_offset(correlation[row, :], col))
    return tuple(float(v - size if v > size / 2 else v) for v in shifts)


def compute_colour_shift(frames: np.ndarray, indices: np.ndarray, config: ColourConfig = ColourConfig()) -> np.ndarray:
    """Colour cast of frames ``indices`` against frame 0, (T,) with NaN at the other frames.

    A cast multiplies the colour channels by gains, which moves every pixel's log chromaticity
    (log R/G, log B/G) by the same amount whatever the content; a camera that turns to a wall
    of another colour changes which colours are there, not where the shared ones sit. So the
    histograms of log chromaticity are registered (cross-correlation) and the shift's
    |d log R/G| + |d log B/G| is the cast. Measured: clean renders and real footage move it by
    at most 0.03 over 25 frames; a 5 % cast (red up, blue down) by 0.1. Grey frames have all pixels at the origin,
    and a cast moves them off it. A frame (or frame 0) without a well-exposed pixel counts 0."""
    frames = np.asarray(frames)
    if frames.ndim == 3:
        frames = np.repeat(frames[..., None], 3, axis=-1)
    shift = np.full(len(frames), np.nan)
    reference = _chroma_histogram(frames[0], config)
    for i in indices:
        current = _chroma_histogram(frames[i], config)
        if reference is None or current is None:
            shift[i] = 0.0
            continue
        du, dv = register_histograms(reference, current)
        shift[i] = (abs(du) + abs(dv)) * 2 * config.span / config.bins
    return shift


def compute_blockiness(gray: np.ndarray, grid: int = 8, min_step: float = 1.0, cap: float = 8.0) -> float:
    """Block-grid artefacts of one grayscale frame: how much more the luma steps on the 8x8 grid
    stand out than the steps off it, in grey levels (about 0 for clean content, growing without
    bound as compression gets coarser).

    A luma step "stands out" where it exceeds both neighbouring steps on the same line by more
    than ``min_step`` grey levels (the scorer raises it with the frame's noise, so that noise
    cannot drown block edges); its excess is capped at ``cap``. Each gap line (all the gaps
    between two pixel rows, or columns) gets its mean excess, and each phase modulo ``grid``
    the median over its lines, so that one long straight content edge that happens to lie on
    the grid moves nothing. The result is the phase on the grid (the gap between pixels 8k+7
    and 8k+8) less the median of the phases two or more pixels off it. Content puts its edges
    on every phase alike; codecs put their block edges on the grid, on every grid line
    (JPEG/H.264 transforms are 8-pixel aligned; VAE decoders tile 8x- or 16x-downsampled
    latents likewise). The worse axis is returned."""
    image = np.ascontiguousarray(gray, dtype=np.uint8)
    values = []
    for axis in (0, 1):
        lines = image if axis == 0 else np.ascontiguousarray(image.T)  # gaps between rows from here on
        steps = cv2.absdiff(lines[1:], lines[:-1])
        # excess[i] compares gap i + 1 with its neighbours, gaps i and i + 2 (uint8: negative -> 0).
        excess = cv2.subtract(steps[1:-1], cv2.max(steps[:-2], steps[2:]))
        _, kept = cv2.threshold(excess, min_step, 0, cv2.THRESH_TOZERO)  # keeps steps above min_step
        weight_by_line = cv2.reduce(cv2.min(kept, cap), 1, cv2.REDUCE_AVG, dtype=cv2.CV_32F).ravel()
        phase = np.arange(1, steps.shape[0] - 1) % grid
        by_phase = np.array([np.median(weight_by_line[phase == p]) if np.any(phase == p) else 0.0
                             for p in range(grid)])
        values.append(float(by_phase[grid - 1] - np.median(by_phase[1:grid - 2])))
    return max(values)
