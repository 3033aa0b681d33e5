"""Feature tracking through one latent window: corners, pyramidal Lucas-Kanade chained frame
to frame with a forward-backward check, then a direct first-to-last re-track that only refines.

Chaining keeps each hop small (about 20 px per hop on KITTI at 480 px), so tracks survive
fast turns; the direct re-track removes the drift the chain accumulates but never drops a
track that merely fails it (near foliage under a fast turn it keeps too few tracks and skews
the translation direction).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np


@dataclass(frozen=True)
class TrackerConfig:
    """Tracking parameters, in pixels of the working image."""

    max_corners: int = 500
    quality_level: float = 0.001  # low: small, weakly textured frames need every usable corner
    min_distance: float = 3.0
    block_size: int = 5
    win_size: int = 15  # 15x15 gave better translation directions than 21x21
    max_level: int = 3  # pyramid levels of the long first-to-last re-track
    hop_max_level: int = 2  # frame-to-frame hops move less; one level fewer saves a third of the time
    fb_threshold: float = 0.5  # forward-backward round trip, px
    # ... on video with a coding grid: blocks that differ from frame to frame cost fast-moving near
    # texture its round trip at 0.5 px, which left only far tracks (versions 1-6)
    compressed_fb_threshold: float = 2.0
    refine_agreement: float = 1.0  # px between a direct re-track and the chain that still agree


@dataclass
class WindowTracks:
    """Tracks through a window (pixels, working image): where each is in every frame."""

    path: np.ndarray  # (F, N, 2): positions in the window's F frames; the last one refined by the direct re-track
    num_detected: int
    disagreement: float = float("nan")  # median px between chained and direct tracks (tracking noise)

    @property
    def first(self) -> np.ndarray:
        """(N, 2) positions in the window's first frame."""
        return self.path[0]

    @property
    def last(self) -> np.ndarray:
        """(N, 2) positions in the window's last frame."""
        return self.path[-1]

    def subset(self, keep: np.ndarray) -> WindowTracks:
        """The tracks selected by the boolean mask ``keep``."""
        return WindowTracks(self.path[:, keep], self.num_detected, self.disagreement)


def _lk(prev: np.ndarray, nxt: np.ndarray, points: np.ndarray, config: TrackerConfig, levels: int,
        guess: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 20, 0.03)
    flags = cv2.OPTFLOW_USE_INITIAL_FLOW if guess is not None else 0
    moved, status, _ = cv2.calcOpticalFlowPyrLK(
        prev, nxt, points, None if guess is None else guess.copy(),
        winSize=(config.win_size, config.win_size), maxLevel=levels, criteria=criteria, flags=flags)
    return moved, status.ravel().astype(bool)


def _round_trip(prev: np.ndarray, nxt: np.ndarray, points: np.ndarray, config: TrackerConfig, levels: int,
                guess: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Track forward and back; keep points that come home within ``fb_threshold`` px."""
    forward, ok_fwd = _lk(prev, nxt, points, config, levels, guess)
    back, ok_back = _lk(nxt, prev, forward, config, levels, points)
    error = np.linalg.norm((back - points).reshape(-1, 2), axis=1)
    return forward, ok_fwd & ok_back & (error < config.fb_threshold)


def detect_corners(gray: np.ndarray, config: TrackerConfig) -> np.ndarray:
    """Shi-Tomasi corners (N, 1, 2) float32; empty when the image has no texture."""
    corners = cv2.goodFeaturesToTrack(gray, maxCorners=config.max_corners, qualityLevel=config.quality_level,
                                      minDistance=config.min_distance, blockSize=config.block_size)
    if corners is None:
        return np.zeros((0, 1, 2), np.float32)
    return corners.astype(np.float32)


def track_window(grays: list[np.ndarray], config: TrackerConfig) -> WindowTracks:
    """Track corners of ``grays[0]`` through every frame of the window to ``grays[-1]``."""
    start = detect_corners(grays[0], config)
    num_detected = len(start)
    if num_detected == 0 or len(grays) < 2:
        return WindowTracks(np.stack([start.reshape(-1, 2)] * 2).astype(np.float64), num_detected)
    # 1. chain hop by hop, dropping tracks that fail a round trip
    points, history = start, [start]  # history: every frame's positions of the tracks still alive
    for prev, nxt in zip(grays[:-1], grays[1:]):
        moved, keep = _round_trip(prev, nxt, points, config, config.hop_max_level)
        points = moved[keep]
        history = [h[keep] for h in history] + [points]
        if len(points) == 0:
            return WindowTracks(np.zeros((len(grays), 0, 2)), num_detected)
    # 2. direct re-track first -> last. Unseeded, it is an independent check: where it comes
    #    home but lands elsewhere than the chain, the chain has stuck to something that does
    #    not move with the scene (compression blocks, overlays) -> drop the track. Where it
    #    fails, keep the chain (fast turns lose long-gap matches) refined by a seeded re-track.
    if len(grays) > 2:
        origin = history[0]
        direct, is_direct = _round_trip(grays[0], grays[-1], origin, config, config.max_level)
        gap = np.linalg.norm((direct - points).reshape(-1, 2), axis=1)
        keep = ~is_direct | (gap < config.refine_agreement)
        points = np.where(is_direct[:, None, None], direct, points)
        seeded = ~is_direct
        if seeded.any():
            refined, is_refined = _round_trip(grays[0], grays[-1], origin[seeded], config, config.max_level,
                                              guess=points[seeded])
            close = np.linalg.norm((refined - points[seeded]).reshape(-1, 2), axis=1) < config.refine_agreement
            points[seeded] = np.where((is_refined & close)[:, None, None], refined, points[seeded])
        both = is_direct & keep
        disagreement = float(np.median(gap[both])) if both.any() else float("nan")
        history = [h[keep] for h in history[:-1]] + [points[keep]]
    else:
        disagreement = float("nan")
    return WindowTracks(np.stack([h.reshape(-1, 2) for h in history]).astype(np.float64), num_detected, disagreement)
