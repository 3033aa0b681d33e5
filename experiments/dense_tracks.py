"""Would dense-flow tracks help the camera estimator? Calibration seeds only.

    OMP_NUM_THREADS=1 python experiments/dense_tracks.py                 # ~15 min on 2 cores
    OMP_NUM_THREADS=1 python experiments/dense_tracks.py --noise-floor 3 --skip-shipped
    OMP_NUM_THREADS=1 python experiments/dense_tracks.py --noise-floor 3 --cost   # CPU ms a frame

Beside the shipped corner tracks, the variant tracks a regular grid of points (every ``--step``
px of the working image, where the first frame's local grey-level std exceeds ``--min-std`` and
``--noise-floor`` times its pixel noise, the quality scorer's estimate) through each latent
window with DIS optical flow (``--preset``), frame to frame, keeping points whose forward-backward round trip comes home
within ``--round-trip`` px; on video with a coding grid only with ``--compressed``. Both
estimators run on the calibration spec of ``wcbench calibrate --degrade`` (seeds 9000-9005,
every family, track and degradation, 160 px or ``--size``), each is calibrated on its own
estimates, and the full-label accuracy per degradation and family is printed.

This is a research tool: the variant is patched in here (``wcbench.pose.opencv.track_window``),
not offered by the estimator. Findings: docs/estimator.md, "Tried and not taken (yet)".
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

import cv2
import numpy as np

import wcbench.pose.opencv as opencv_estimator
from wcbench.core.actions import StepSizes
from wcbench.pose import build_estimator
from wcbench.pose.calibration import (DEGRADATIONS, CalibrationSpec, MotionCase, calibrate, confusion_report,
                                      estimate_video, render_calibration_videos)
from wcbench.pose.tracking import TrackerConfig, WindowTracks, track_window
from wcbench.scoring.vq_terms import compute_noise_sigma
from wcbench.data.scenes.families import SCENE_FAMILIES


def dense_window_tracks(grays: list[np.ndarray], step: int, min_std: float, round_trip: float,
                        noise_floor: float = 0.0, preset: str = "medium", flow_scale: float = 1.0) -> np.ndarray:
    """(F, N, 2) paths of grid points through the window by DIS flow, round-trip checked. A point
    needs a local std above ``min_std`` and above ``noise_floor`` x the frame's pixel noise."""
    dis = cv2.DISOpticalFlow_create(getattr(cv2, f"DISOPTICAL_FLOW_PRESET_{preset.upper()}"))
    height, width = grays[0].shape
    ys, xs = np.mgrid[step // 2:height:step, step // 2:width:step]
    first = grays[0].astype(np.float32)
    mean = cv2.blur(first, (9, 9))
    std = np.sqrt(np.maximum(cv2.blur(first * first, (9, 9)) - mean * mean, 0.0))
    floor = max(min_std, noise_floor * compute_noise_sigma(grays[0])) if noise_floor > 0 else min_std
    textured = std[ys.ravel(), xs.ravel()] > floor
    points = np.stack([xs.ravel(), ys.ravel()], axis=1)[textured].astype(np.float64)
    if len(points) == 0:  # nothing textured enough (remap refuses an empty map)
        return np.zeros((len(grays), 0, 2))

    def flow_at(flow: np.ndarray, at: np.ndarray) -> np.ndarray:
        return cv2.remap(flow, at[:, 0].astype(np.float32), at[:, 1].astype(np.float32), cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_REPLICATE).reshape(-1, 2)

    def flow(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # computed at flow_scale, in full-size pixels
        if flow_scale == 1.0:
            return dis.calc(a, b, None)
        small = [cv2.resize(g, None, fx=flow_scale, fy=flow_scale, interpolation=cv2.INTER_AREA) for g in (a, b)]
        return cv2.resize(dis.calc(*small, None), (width, height), interpolation=cv2.INTER_LINEAR) / flow_scale

    path, alive = [points], np.ones(len(points), bool)
    for prev, nxt in zip(grays[:-1], grays[1:]):
        here = path[-1]
        there = here + flow_at(flow(prev, nxt), here)
        home = there + flow_at(flow(nxt, prev), there)
        inside = (there >= 0).all(axis=1) & (there[:, 0] < width - 1) & (there[:, 1] < height - 1)
        alive &= inside & (np.linalg.norm(home - here, axis=1) < round_trip)
        path.append(there)
    return np.stack(path)[:, alive]


def use_dense_tracks(step: int, min_std: float, round_trip: float, compressed: bool, noise_floor: float,
                     preset: str, flow_scale: float) -> None:
    """Patch the estimator's tracker: corner tracks plus dense ones."""

    def tracks(grays: list[np.ndarray], config: TrackerConfig) -> WindowTracks:
        corners = track_window(grays, config)
        is_compressed = config.fb_threshold == config.compressed_fb_threshold
        if is_compressed and not compressed:
            return corners
        dense = dense_window_tracks(grays, step, min_std, round_trip, noise_floor, preset, flow_scale)
        return WindowTracks(np.concatenate([corners.path, dense], axis=1), corners.num_detected + dense.shape[1],
                            corners.disagreement)

    opencv_estimator.track_window = tracks


def _estimate_all(args: tuple[argparse.Namespace | None, CalibrationSpec]) -> list[tuple[str, str, str, object]]:
    variant, spec = args
    if variant is not None:
        use_dense_tracks(variant.step, variant.min_std, variant.round_trip, variant.compressed, variant.noise_floor,
                         variant.preset, variant.flow_scale)
    estimator = build_estimator("opencv")
    return [(video.degradation, video.case.family, video.script, estimate_video(estimator, video))
            for video in render_calibration_videos(spec)]


def estimate_spec(variant: argparse.Namespace | None, spec: CalibrationSpec, workers: int) -> list:
    """Estimates of every calibration video, split over ``workers`` processes by seed."""
    jobs = [(variant, replace(spec, seeds=(seed,))) for seed in spec.seeds]
    with ProcessPoolExecutor(workers) as pool:
        return [row for rows in pool.map(_estimate_all, jobs) for row in rows]


def report(name: str, rows: list) -> None:
    estimates, scripts = [row[3] for row in rows], [row[2] for row in rows]
    result = calibrate(estimates, scripts)
    th = result.thresholds
    overall = confusion_report(estimates, scripts, th)["accuracy"]
    print(f"\n{name}: translation threshold {th.translation:.5f} (plateau {result.translation.low:.5f}-"
          f"{result.translation.high:.5f}), rotation {th.rotation_deg:.3f} deg; full {overall['full']:.4f}, "
          f"translation {overall['translation']:.4f}")
    print(f"{'':8}" + "".join(f"{family:>10}" for family in SCENE_FAMILIES))
    for kind in DEGRADATIONS:
        cells = []
        for family in SCENE_FAMILIES:
            chosen = [row for row in rows if row[0] == kind and row[1] == family]
            accuracy = confusion_report([r[3] for r in chosen], [r[2] for r in chosen], th)["accuracy"]["full"]
            cells.append(f"{accuracy:>10.4f}")
        print(f"{kind:8}" + "".join(cells))


def dense_cost(args: argparse.Namespace, repeats: int = 3) -> None:
    """CPU ms a frame the dense tracks add on one thread, 480x832 video at the working size."""
    cv2.setNumThreads(1)
    frames = MotionCase("room", 11, "basic", "w+left-3", StepSizes(), 75.0).render(832, 480)[0]
    config = opencv_estimator.OpenCVEstimatorConfig()
    size = opencv_estimator.working_size(832, 480, config.max_side, config.min_height)
    grays = [cv2.resize(opencv_estimator.to_gray(frame), size, interpolation=cv2.INTER_AREA) for frame in frames]
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for first in range(0, len(grays) - 4, 4):
            dense_window_tracks(grays[first:first + 5], args.step, args.min_std, args.round_trip, args.noise_floor,
                                args.preset, args.flow_scale)
        best = min(best, time.process_time() - start)
    per_frame = 1e3 * best / (len(grays) - 1)
    print(f"dense tracks at {size[0]}x{size[1]}: {per_frame:.1f} CPU ms a frame (best of {repeats})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", type=int, default=8, help="grid spacing, px of the working image")
    parser.add_argument("--min-std", type=float, default=2.0, help="local grey-level std a grid point needs")
    parser.add_argument("--round-trip", type=float, default=1.0, help="forward-backward limit, px")
    parser.add_argument("--noise-floor", type=float, default=0.0,
                        help="a grid point's local std must also exceed this x the frame's pixel noise (0: off)")
    parser.add_argument("--skip-shipped", action="store_true", help="measure the variant only")
    parser.add_argument("--cost", action="store_true", help="only time the dense tracks at 480x832")
    parser.add_argument("--preset", default="medium", choices=["ultrafast", "fast", "medium"], help="DIS preset")
    parser.add_argument("--flow-scale", type=float, default=1.0, help="compute the flow on frames scaled by this")
    parser.add_argument("--compressed", action="store_true", help="add dense tracks on video with a coding grid too")
    parser.add_argument("--size", type=int, default=160, help="frame size of the calibration scenes, px")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if args.cost:
        dense_cost(args)
        return
    spec = CalibrationSpec(resolution=(args.size, args.size))
    if not args.skip_shipped:
        report("shipped estimator", estimate_spec(None, spec, args.workers))
    report(f"with dense tracks (DIS {args.preset} at scale {args.flow_scale}, step {args.step}, "
           f"min std {args.min_std}, noise floor {args.noise_floor}, "
           f"round trip {args.round_trip}, "
           f"{'all video' if args.compressed else 'video without a coding grid'})",
           estimate_spec(args, spec, args.workers))


if __name__ == "__main__":
    main()
