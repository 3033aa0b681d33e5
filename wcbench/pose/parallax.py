"""One latent window's correspondences and parallax, as the OpenCV estimator measures them.

Per window (:func:`measure_window`): track corners through the window, and on video without a
coding grid a grid of points too (:mod:`wcbench.pose.tracking`); drop tracks on straight edges
and smooth ramps; fit a rotation-only model (a camera that only turns) to the last frame and to
each frame between, and measure the window's **parallax**, the motion the rotations do not
explain (:func:`steady_lengths`); and fit a robust essential matrix, keeping the decomposition
whose rotation is small (rejects the "twisted pair" twin that flips pitch and forward/backward).
:mod:`wcbench.pose.opencv` decides the window's motion from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import cv2
import numpy as np

from wcbench.pose import geometry as geo
from wcbench.pose.tracking import TrackerConfig, WindowTracks, track_window

if TYPE_CHECKING:
    from wcbench.pose.opencv import OpenCVEstimatorConfig


@dataclass
class Correspondences:
    """One window's tracks and fits: what the parallel stage hands the sequential one."""

    tracks: WindowTracks
    x1: np.ndarray  # bearings in the first frame (N, 3)
    x2: np.ndarray  # bearings in the last frame (N, 3)
    R_rot: np.ndarray  # rotation-only fit
    coherent_px: float  # the window's steady parallax left by the rotation-only fit (see steady_parallax)
    rotation_px: float  # the same statistic without the aperture weighting (what the 4-DoF fit's rest is put against)
    inside: np.ndarray  # tracks clear of the image border, the ones both statistics count
    R_essential: np.ndarray | None
    t_essential: np.ndarray | None
    # per inside track, its steady motion (px) with no rotation undone and no neighbourhood median
    fixed_px: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # per inside track, the steady parallax (px) coherent_px is the quantile of (see steady_lengths)
    steady_px: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # the inside tracks' geometry.neighbour_index (parallax_neighbours), shared by the parallax statistics;
    # whoever subsets tracks or inside recomputes it (inside_neighbours)
    neighbours: np.ndarray | None = None


def measure_window(window: list[np.ndarray], plain_first: np.ndarray, K: np.ndarray, tracker: TrackerConfig,
                   config: OpenCVEstimatorConfig, mask: np.ndarray | None = None) -> Correspondences:
    """One window's tracks and the fits read off them: the rotation-only fit and its parallax
    (:func:`steady_lengths`), the essential-matrix pose; no track touches ``mask``."""
    tracks = track_window(window, tracker, mask)
    # corners on a smooth ramp or a straight edge of the plain frame (a plain sky's bands,
    # foreshortened ground near the horizon) slide along it: contrast normalisation makes
    # them trackable, not informative; under a turn they drag the fits towards "no turn"
    ramp = _coherence_at(plain_first, tracks.first) > config.max_coherence
    if ramp.any() and np.count_nonzero(~ramp) >= config.min_tracks:
        tracks = tracks.subset(~ramp)
    x1, x2 = geo.compute_bearings(tracks.first, K), geo.compute_bearings(tracks.last, K)
    inside = inside_tracks(tracks, window[0].shape, config)
    if len(x1) < config.min_tracks:
        return Correspondences(tracks, x1, x2, np.eye(3), 0.0, 0.0, inside, None, None)
    focal = K[0, 0]
    R_rot = geo.fit_rotation(x1, x2, config.robust_px / focal)
    residual_px = geo.compensated_displacement(x1, x2, R_rot) * focal
    tensors = _structure_at(window[0], tracks.first, config.tracker.win_size)
    near = inside_neighbours(tracks, inside, config)
    steady_px = steady_lengths(tracks, x1, frame_rotations(tracks, x1, R_rot, K, config), K, tensors, inside, config,
                               index=near)
    fixed_px = steady_lengths(tracks, x1, spread_rotation(np.eye(3), len(tracks.path) - 1), K, tensors, inside, config,
                              smooth=False)
    rotation_px = window_parallax(tracks.first[inside], residual_px[inside], config, near)
    R_e, t_e = _essential_pose(tracks, K, config)
    return Correspondences(tracks, x1, x2, R_rot, parallax_of(steady_px, config), rotation_px, inside, R_e, t_e,
                           fixed_px, steady_px, near)


def inside_neighbours(tracks: WindowTracks, inside: np.ndarray, config: OpenCVEstimatorConfig) -> np.ndarray | None:
    """The :func:`geometry.neighbour_index` of the ``inside`` tracks (None when under two)."""
    points = tracks.first[inside]
    return geo.neighbour_index(points, config.parallax_neighbours) if len(points) >= 2 else None


def parallax_of(lengths: np.ndarray, config: OpenCVEstimatorConfig) -> float:
    """The window's parallax from per-track steady lengths: their ``parallax_quantile``."""
    return float(np.quantile(lengths, config.parallax_quantile)) if len(lengths) > 1 else 0.0


def steady_parallax(tracks: WindowTracks, x1: np.ndarray, R_rot: np.ndarray, K: np.ndarray,
                    tensors: np.ndarray, inside: np.ndarray, config: OpenCVEstimatorConfig) -> float:
    """The window's parallax (px) left by ``R_rot`` spread evenly over the window: the
    ``parallax_quantile`` of :func:`steady_lengths` over the tracks clear of the border."""
    return parallax_of(steady_lengths(tracks, x1, spread_rotation(R_rot, len(tracks.path) - 1), K, tensors, inside,
                                      config), config)


def spread_rotation(R: np.ndarray, hops: int) -> list[np.ndarray]:
    """``R`` spread evenly over ``hops`` frames: the rotation at each frame from the first."""
    spin = geo.rotation_vector(R)
    return [geo.rodrigues(spin * k / hops) for k in range(1, hops + 1)]


def frame_rotations(tracks: WindowTracks, x1: np.ndarray, R_rot: np.ndarray, K: np.ndarray,
                    config: OpenCVEstimatorConfig) -> list[np.ndarray]:
    """The rotation-only fit from the first frame to each later frame of the window (the last
    is ``R_rot``, the window's). A hand-held camera rolls and shakes back and forth inside a
    window; spread evenly, its rotation would leave that shake in every track's path as wander,
    which :func:`steady_lengths` takes off a translation's parallax."""
    scale = config.robust_px / K[0, 0]
    some = geo.even_subset(len(x1), config.max_refine_points)  # a few hundred tracks fix a rotation
    inner = [geo.fit_rotation(x1[some], geo.compute_bearings(points[some], K), scale) for points in tracks.path[1:-1]]
    return inner + [R_rot]


def steady_lengths(tracks: WindowTracks, x1: np.ndarray, rotations: list[np.ndarray], K: np.ndarray,
                   tensors: np.ndarray, inside: np.ndarray, config: OpenCVEstimatorConfig,
                   smooth: bool = True, index: np.ndarray | None = None) -> np.ndarray:
    """Per track clear of the border, the parallax (px) left by ``rotations`` (from the first
    frame to each later one: :func:`frame_rotations`, or one rotation spread evenly by
    :func:`spread_rotation`), counting only what moves steadily through the window: each
    track's rotation-compensated position at every frame, aperture weighted and replaced by
    its neighbourhood median, then its net displacement less its frame-to-frame wander
    (:func:`geometry.steady_length`). Without ``smooth``, each track on its own (no
    neighbourhood median). ``index``: the inside tracks' :func:`geometry.neighbour_index`, when
    already known.

    A translation moves content steadily, frame after frame; a generated video's wobble,
    tracking noise and compression blocks move it back and forth, and their net
    displacement over the window is about as large as one frame's. Counted whole, that would
    read as a slow translation, and the calibrated threshold would sit above slow moves past
    mostly distant content."""
    focal = K[0, 0]
    points = tracks.first[inside]
    hops = len(tracks.path) - 1
    residuals = []
    for k in range(1, hops + 1):
        xk = geo.compute_bearings(tracks.path[k], K)
        residual = geo.compensated_displacement(x1, xk, rotations[k - 1]) * focal
        residuals.append(geo.aperture_weighted(residual, tensors)[inside])
    values = np.concatenate(residuals, axis=1)
    if smooth:  # one neighbourhood median for all frames (it is taken per component)
        values = geo.neighbour_median(points, values, config.parallax_neighbours, index)
    frames = values.reshape(len(points), hops, 2).swapaxes(0, 1)
    trajectory = np.concatenate([np.zeros((1, len(points), 2)), frames])
    return geo.steady_length(trajectory, config.unsteady_weight)


def window_parallax(points: np.ndarray, residuals: np.ndarray, config: OpenCVEstimatorConfig,
                    index: np.ndarray | None = None) -> float:
    """The window's parallax (px): the ``parallax_quantile`` of the tracks' coherent
    residual motion (:func:`geometry.coherent_parallax`), over the tracks clear of the
    border (:func:`inside_tracks`).

    A high quantile, not the median: on open scenes most tracks may sit on sky and distant
    hills that move with the rotation alone, and a translation shows only on the nearer
    part of the frame, whichever way the camera moves (forward, the ground at the bottom
    of the frame streams past although the middle barely moves)."""
    return geo.coherent_parallax(points, residuals, config.parallax_neighbours, config.parallax_quantile, index)


def inside_tracks(tracks: WindowTracks, shape: tuple[int, ...], config: OpenCVEstimatorConfig) -> np.ndarray:
    """Tracks whose patch stays clear of the image border in the first and last frame (all
    of them when too few are): patches that leave the picture drag."""
    margin = config.tracker.win_size // 2 + 1
    height, width = shape[:2]
    inside = np.ones(len(tracks.first), bool)
    for points in (tracks.first, tracks.last):
        inside &= (points[:, 0] >= margin) & (points[:, 0] <= width - 1 - margin)
        inside &= (points[:, 1] >= margin) & (points[:, 1] <= height - 1 - margin)
    if np.count_nonzero(inside) < config.min_tracks:
        inside[:] = True
    return inside


def _structure_at(gray: np.ndarray, points: np.ndarray, window: int) -> np.ndarray:
    """Structure-tensor eigen-decomposition (N, 6) of each point's tracking window."""
    eigen = cv2.cornerEigenValsAndVecs(gray, window, 3)
    xy = np.rint(points).astype(int)
    return eigen[np.clip(xy[:, 1], 0, gray.shape[0] - 1), np.clip(xy[:, 0], 0, gray.shape[1] - 1)].astype(float)


def _coherence_at(gray: np.ndarray, points: np.ndarray, window: int = 9) -> np.ndarray:
    """Orientation coherence ((l1 - l2) / (l1 + l2))^2 of the gradient structure around each
    point: 1 on a straight edge or a smooth ramp, near 0 on two-dimensional texture."""
    image = cv2.GaussianBlur(gray.astype(np.float32), (0, 0), 1.0)
    gx = cv2.Sobel(image, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(image, cv2.CV_32F, 0, 1, ksize=3)
    xy = np.rint(points).astype(int)
    rows, cols = np.clip(xy[:, 1], 0, gray.shape[0] - 1), np.clip(xy[:, 0], 0, gray.shape[1] - 1)
    jxx, jyy, jxy = (cv2.boxFilter(a * b, -1, (window, window))[rows, cols] for a, b in ((gx, gx), (gy, gy), (gx, gy)))
    spread = np.sqrt((jxx - jyy) ** 2 + 4 * jxy**2)
    return (spread / np.maximum(jxx + jyy, 1e-9)) ** 2


def _essential_pose(tracks: WindowTracks, K: np.ndarray,
                    config: OpenCVEstimatorConfig) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Essential-matrix pose with the small-rotation decomposition (twisted pair rejected);
    ``(None, None)`` when it cannot be fitted."""
    if len(tracks.first) < 8:
        return None, None
    E, _ = cv2.findEssentialMat(tracks.first, tracks.last, K, method=cv2.USAC_ACCURATE, prob=0.999,
                                threshold=config.ransac_px)
    if E is None or E.shape[0] < 3:
        return None, None
    R1, R2, t_cv = cv2.decomposeEssentialMat(E[:3])
    candidates = [geo.pose_from_opencv(R_cv, t_cv) for R_cv in (R1, R2)]
    R, t = min(candidates, key=lambda pose: geo.rotation_angle_deg(pose[0]))
    if geo.rotation_angle_deg(R) > config.max_window_rotation_deg:
        return None, None
    return R, t
