"""How far the estimator's tracks drift from the true motion, on renders whose depth is known.

    OMP_NUM_THREADS=1 python -m benchmarks.bench_tracks [--families terrain street] [--track diagonal]
                                                        [--size 160] [--seeds 12] [--every 3]

For held-out scenes (seeds 7000 on), every ``--every``-th latent window: each track's position in
the window's last frame against where the scene point under its first position truly goes (the
renderer's depth and the camera's true motion). Prints, per family, the share of tracks more than
1 px off and the median error, for the corners and for the grid points, and the grid points
split by the direct first-to-last check (:func:`wcbench.pose.tracking.dense_direct_check`): those it
keeps and those it drops. Tracks on the sky (no depth) are left out.
"""

from __future__ import annotations

import argparse

import cv2
import numpy as np

from wcbench.data.scenes.families import SCENE_FAMILIES
from wcbench.data.scenes.synthetic import build_scene, depth_map
from wcbench.pose import build_estimator
from wcbench.pose.base import latent_windows
from wcbench.pose.calibration_videos import CalibrationSpec, motion_case
from wcbench.pose.tracking import chain_dense, dense_direct_check, track_corners

from benchmarks.bench_estimator import HELD_OUT_SEED  # the held-out scenes the estimator's tables use


def true_end(points: np.ndarray, depth: np.ndarray, K: np.ndarray, rel: np.ndarray) -> np.ndarray:
    """Where scene points under ``points`` (N, 2; OpenCV's pixel coordinates, a pixel's centre at
    an integer) of a frame with ``depth`` land in a camera at relative pose ``rel``; NaN on the
    sky. ``K`` is the renderer's (a pixel's centre at +0.5). Depth is interpolated as inverse
    depth, which is linear over a plane in the image."""
    inverse = np.where(np.isfinite(depth), 1.0 / depth, 0.0).astype(np.float32)
    xy = points.astype(np.float32)
    inv = cv2.remap(inverse, xy[:, 0], xy[:, 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE).ravel()
    rows = np.clip(np.rint(points[:, 1]).astype(int), 0, depth.shape[0] - 1)
    cols = np.clip(np.rint(points[:, 0]).astype(int), 0, depth.shape[1] - 1)
    sky = ~np.isfinite(depth[rows, cols]) | (inv <= 0)
    rays = np.c_[points + 0.5, np.ones(len(points))] @ np.linalg.inv(K).T
    scene = rays / np.where(sky, 1.0, inv)[:, None]
    there = (scene - rel[:3, 3]) @ rel[:3, :3]
    end = there[:, :2] / there[:, 2:3] * [K[0, 0], K[1, 1]] + K[:2, 2] - 0.5
    end[sky] = np.nan
    return end


def measure(family: str, track: str, size: int, seeds: range, every: int) -> dict[str, list[float]]:
    """Errors (px) of each kind of track over the family's held-out scenes."""
    estimator = build_estimator("opencv")
    errors: dict[str, list[float]] = {"corners": [], "grid": [], "grid kept": [], "grid dropped": []}
    for seed in seeds:
        case = motion_case(family, seed, track, 12, 0, CalibrationSpec(static_steps=0))
        frames, K, poses = case.render(size, size)
        scene = build_scene(seed, poses[:, :3, 3], family=family)
        video, _ = estimator.working_video(frames, K=K)
        tracker = estimator.tracker_for(video)
        for index, (first, last) in enumerate(latent_windows(len(frames))):
            if index % every:
                continue
            grays = video.tracked[first:last + 1]
            depth = depth_map(scene, poses[first], K, size, size)
            rel = np.linalg.inv(poses[first]) @ poses[last]

            def off(path: np.ndarray) -> np.ndarray:
                error = np.linalg.norm(path[-1] - true_end(path[0], depth, K, rel), axis=1)
                return error[np.isfinite(error)]

            errors["corners"] += list(off(track_corners(grays, tracker).path))
            chained = chain_dense(grays, tracker)
            if chained.shape[1] == 0:
                continue
            direct, keep = dense_direct_check(grays, chained, tracker)
            errors["grid"] += list(off(chained))
            errors["grid kept"] += list(off(np.stack([chained[0][keep], direct[keep]])))
            errors["grid dropped"] += list(off(chained[:, ~keep]))
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="+", default=["terrain", "street"], choices=SCENE_FAMILIES)
    parser.add_argument("--track", default="diagonal")
    parser.add_argument("--size", type=int, default=160)
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--every", type=int, default=3, help="measure every n-th latent window")
    args = parser.parse_args()
    seeds = range(HELD_OUT_SEED, HELD_OUT_SEED + args.seeds)
    print(f"track drift against the true motion: {args.track} track, {args.size} px, clean, seeds "
          f"{seeds.start}-{seeds.stop - 1}, one latent window in {args.every}")
    print(f"{'family':>8} {'tracks':>13} {'count':>7} {'> 1 px':>7} {'median px':>9}")
    for family in args.families:
        for kind, values in measure(family, args.track, args.size, seeds, args.every).items():
            values = np.asarray(values)
            if len(values):
                print(f"{family:>8} {kind:>13} {len(values):7d} {np.mean(values > 1.0):7.3f} {np.median(values):9.2f}")


if __name__ == "__main__":
    main()
