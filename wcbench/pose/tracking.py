"""Feature tracking through one latent window: corners, pyramidal Lucas-Kanade chained frame
to frame with a forward-backward check, then a direct first-to-last re-track that only refines.

Chaining keeps each hop small (about 20 px per hop on KITTI at 480 px), so tracks survive
fast turns; the direct re-track removes the drift the chain accumulates but never drops a
track that merely fails it (near foliage under a fast turn it keeps too few tracks and skews
the translation direction).

Beside the corners, on video without a coding grid, a regular grid of points is tracked with
dense optical flow (DIS) as the guess and Lucas-Kanade as the judge (:func:`track_dense`):
corners gather on strong texture, often on a few objects at one depth, while the ground of an
open scene, whose parallax tells a slow move from a turn, has faint grain that yields few
corners but carries a flow.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from wcbench.core.noise import compute_noise_sigma


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
    # texture its round trip at 0.5 px, which leaves only far tracks
    compressed_fb_threshold: float = 2.0
    refine_agreement: float = 1.0  # px between a direct re-track and the chain that still agree
    # dense tracks (px of the flow image: the working image shrunk to a long side of dense_max_side)
    dense_step: int = 8  # grid spacing (0: no dense tracks)
    dense_min_std: float = 4.0  # local grey-level std a grid point needs (of the contrast-normalised frame) ...
    dense_noise_floor: float = 3.0  # ... and this many times the frame's pixel noise (flow follows noise)
    dense_round_trip: float = 1.0  # forward-backward limit
    dense_max_side: int = 224  # the flow and the grid grow with this side; 224 keeps 480x832 video above 50 frames/s


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

    def with_paths(self, path: np.ndarray) -> WindowTracks:
        """These tracks plus the (F, M, 2) ``path`` of M more; the tracking noise stays this one's."""
        if path.shape[1] == 0:
            return self
        return WindowTracks(np.concatenate([self.path, path], axis=1), self.num_detected + path.shape[1],
                            self.disagreement)


def _lk(prev: np.ndarray, nxt: np.ndarray, points: np.ndarray, config: TrackerConfig, levels: int,
        guess: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 20, 0.03)
    flags = cv2.OPTFLOW_USE_INITIAL_FLOW if guess is not None else 0
    moved, status, _ = cv2.calcOpticalFlowPyrLK(
        prev, nxt, points, None if guess is None else guess.copy(),
        winSize=(config.win_size, config.win_size), maxLevel=levels, criteria=criteria, flags=flags)
    return moved, status.ravel().astype(bool)


def _round_trip(prev: np.ndarray, nxt: np.ndarray, points: np.ndarray, config: TrackerConfig, levels: int,
                guess: np.ndarray | None = None, limit: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Track forward and back; keep points that come home within ``limit`` px (default:
    ``fb_threshold``)."""
    forward, home = _lk(prev, nxt, points, config, levels, guess)
    if not home.any():
        return forward, home
    # only points that arrived go back (Lucas-Kanade tracks each point on its own)
    out, origin = (forward, points) if home.all() else (forward[home], points[home])
    back, ok_back = _lk(nxt, prev, out, config, levels, origin)
    error = np.linalg.norm((back - origin).reshape(-1, 2), axis=1)
    home[home] = ok_back & (error < (config.fb_threshold if limit is None else limit))
    return forward, home


def detect_corners(gray: np.ndarray, config: TrackerConfig, mask: np.ndarray | None = None) -> np.ndarray:
    """Shi-Tomasi corners (N, 1, 2) float32, none inside ``mask`` (True: leave out); empty when
    the image has no texture."""
    allowed = None if mask is None else (~mask).astype(np.uint8)
    corners = cv2.goodFeaturesToTrack(gray, maxCorners=config.max_corners, qualityLevel=config.quality_level,
                                      minDistance=config.min_distance, blockSize=config.block_size, mask=allowed)
    if corners is None:
        return np.zeros((0, 1, 2), np.float32)
    return corners.astype(np.float32)


def track_window(grays: list[np.ndarray], config: TrackerConfig, mask: np.ndarray | None = None) -> WindowTracks:
    """Every track of the window: corners (:func:`track_corners`), then the dense grid
    (:func:`track_dense`, when ``config.dense_step`` > 0). With ``mask`` (True on a burnt-in
    overlay) no track starts inside it, and a track that enters it is dropped: content that
    slides under an overlay drags its tracking window onto the overlay's edge."""
    tracks = track_corners(grays, config, mask).with_paths(track_dense(grays, config, mask))
    if mask is None or tracks.path.shape[1] == 0:
        return tracks
    height, width = mask.shape
    xy = np.rint(tracks.path).astype(int)
    hit = mask[np.clip(xy[..., 1], 0, height - 1), np.clip(xy[..., 0], 0, width - 1)].any(axis=0)
    return tracks.subset(~hit) if hit.any() else tracks


def track_corners(grays: list[np.ndarray], config: TrackerConfig, mask: np.ndarray | None = None) -> WindowTracks:
    """Track corners of ``grays[0]`` (outside ``mask``) through every frame of the window to ``grays[-1]``."""
    start = detect_corners(grays[0], config, mask)
    num_detected = len(start)
    if num_detected == 0:
        return WindowTracks(np.zeros((len(grays), 0, 2)), 0)
    if len(grays) < 2:
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
        direct, is_direct, gap = direct_retrack(grays, origin, points, config)
        keep = ~is_direct | (gap < config.refine_agreement)
        points = np.where(is_direct[:, None, None], direct.reshape(-1, 1, 2), points)
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


def track_dense(grays: list[np.ndarray], config: TrackerConfig, mask: np.ndarray | None = None) -> np.ndarray:
    """(F, N, 2) paths (working-image px) of grid points through the window: :func:`chain_dense`,
    then, as for the corners, a direct first-to-last re-track (:func:`direct_retrack`): a point
    is kept only where it comes home and lands within ``refine_agreement`` px of the chain's end,
    and ends where the direct re-track lands. Stricter than the corners' rule (which keeps a
    chain whose direct re-track fails): grid points are plentiful, and half of those the check
    drops had drifted over 1 px by the window's end, against 8 % of those it keeps (clean
    terrain and street renders at 160 px, ``benchmarks/bench_tracks.py``)."""
    path = chain_dense(grays, config, mask)
    if len(grays) < 3 or path.shape[1] == 0:
        return path
    direct, keep = dense_direct_check(grays, path, config)
    path[-1] = direct
    return path[:, keep]


def dense_direct_check(grays: list[np.ndarray], path: np.ndarray,
                       config: TrackerConfig) -> tuple[np.ndarray, np.ndarray]:
    """The grid points' direct check on chained ``path`` (F, N, 2): where each point's direct
    first-to-last re-track lands (N, 2), and whether the point is kept (N,): it came home and
    landed within ``refine_agreement`` px of the chain's end."""
    direct, is_direct, gap = direct_retrack(grays, path[0], path[-1], config)
    return direct, is_direct & (gap < config.refine_agreement)


def chain_dense(grays: list[np.ndarray], config: TrackerConfig, mask: np.ndarray | None = None) -> np.ndarray:
    """(F, N, 2) paths (working-image px) of grid points chained hop by hop through the window.

    Grid points every ``dense_step`` px of the flow image (the frames shrunk to a long side of
    at most ``dense_max_side``) whose local grey-level std (9x9) there exceeds both
    ``dense_min_std`` and ``dense_noise_floor`` times the first frame's pixel noise (on noisy
    video faint texture moves with the noise). Each hop, DIS optical flow on the flow image
    guesses where a point went, and Lucas-Kanade at the working size refines the guess and
    tracks it back: a point is kept while it comes home within ``dense_round_trip`` px. The flow
    alone was a few per cent off on smooth texture (more on shrunk frames) and was fooled by a
    plain sky's banding; the refinement puts the points where the corner tracks would."""
    if config.dense_step <= 0 or len(grays) < 2:
        return np.zeros((len(grays), 0, 2))
    height, width = grays[0].shape
    scale = min(1.0, config.dense_max_side / max(height, width))
    small = grays
    if scale < 1.0:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        small = [cv2.resize(gray, size, interpolation=cv2.INTER_AREA) for gray in grays]
    small_h, small_w = small[0].shape
    ratio = np.array([width / small_w, height / small_h])  # flow-image px -> working px
    step = config.dense_step
    ys, xs = np.mgrid[step // 2:small_h:step, step // 2:small_w:step]
    first = small[0].astype(np.float32)
    mean = cv2.blur(first, (9, 9))
    std = np.sqrt(np.maximum(cv2.blur(first * first, (9, 9)) - mean * mean, 0.0))
    floor = max(config.dense_min_std, config.dense_noise_floor * compute_noise_sigma(small[0]))
    textured = std[ys.ravel(), xs.ravel()] > floor
    if mask is not None:  # grid points on an overlay: the mask is at the working size
        rows = np.minimum(((ys.ravel() + 0.5) * ratio[1]).astype(int), height - 1)
        cols = np.minimum(((xs.ravel() + 0.5) * ratio[0]).astype(int), width - 1)
        textured &= ~mask[rows, cols]
    points = np.stack([xs.ravel(), ys.ravel()], axis=1)[textured].astype(np.float64)
    if len(points) == 0:
        return np.zeros((len(grays), 0, 2))
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
    path, alive = [(points + 0.5) * ratio - 0.5], np.ones(len(points), bool)  # pixel-centre convention
    for k in range(len(grays) - 1):
        live = np.flatnonzero(alive)  # points lost on an earlier hop stay where they were lost
        here = path[-1][live]
        flow = _flow_at(dis.calc(small[k], small[k + 1], None), (here + 0.5) / ratio - 0.5)
        start = here.astype(np.float32).reshape(-1, 1, 2)
        guess = (here + flow * ratio).astype(np.float32).reshape(-1, 1, 2)
        moved, home = _round_trip(grays[k], grays[k + 1], start, config, 1, guess, config.dense_round_trip)
        there = moved.reshape(-1, 2).astype(np.float64)
        inside = (there >= 0).all(axis=1) & (there[:, 0] < width - 1) & (there[:, 1] < height - 1)
        alive[live] = inside & home
        step_positions = path[-1].copy()
        step_positions[live] = there
        path.append(step_positions)
        if not alive.any():
            return np.zeros((len(grays), 0, 2))
    return np.stack(path)[:, alive]


def direct_retrack(grays: list[np.ndarray], origin: np.ndarray, chained: np.ndarray,
                   config: TrackerConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Track ``origin`` (N, 2) straight from the window's first frame to its last, with a round
    trip: (where it lands (N, 2), whether it came home (N,), its distance in px from the chained
    end ``chained`` (N,)). Unseeded, it is independent of the chain: where both come home but
    disagree, the chain has drifted or stuck to something that does not move with the scene."""
    chained = chained.reshape(-1, 2)
    start = origin.astype(np.float32).reshape(-1, 1, 2)
    direct, is_direct = _round_trip(grays[0], grays[-1], start, config, config.max_level)
    direct = direct.reshape(-1, 2).astype(chained.dtype)
    return direct, is_direct, np.linalg.norm(direct - chained, axis=1)


def _flow_at(flow: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(N, 2) flow bilinearly interpolated at ``points``."""
    return cv2.remap(flow, points[:, 0].astype(np.float32), points[:, 1].astype(np.float32), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE).reshape(-1, 2)
