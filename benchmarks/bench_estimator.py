"""Accuracy and speed of a pose estimator (default: opencv with its shipped thresholds).

Prints, on held-out synthetic scenes (seeds disjoint from the calibration seeds 9000-9005):
full-label / translation / rotation accuracy per transition for basic and combined scripts
at 128 and 160 px, under JPEG q30, Gaussian blur sigma 1 and noise sigma 5 at 160 px (other
sizes: ``--sizes`` and ``--degraded-sizes``); the real clips
of ../shared/realvid (direction checks per latent window); a static video and a yaw-mirrored
video scored against their scripts; and frames per second on a 381-frame 480x832 video next
to the time OpenCV takes only to decode it.

    OMP_NUM_THREADS=1 python benchmarks/bench_estimator.py [--seeds 12] [--first-seed 7000] [--steps 12] [--workers 2]
        [--sizes 128 160] [--degraded-sizes 160 224 256]
        [--option contrast_sigma=0 ...]   # estimator options, e.g. to measure one step switched off
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np

from wcbench.actions import (
    Action,
    StepSizes,
    classify_relative_pose,
    intrinsics_from_fov,
    parse_script,
    relative_pose,
    trajectory_from_actions,
    yaw_pitch_deg,
)
from wcbench.pose import build_estimator, latent_windows
from wcbench.pose.calibration import degrade
from wcbench.scenes.synthetic import build_scene, render_frames
from wcbench.suite import TRACKS, generate_script
from wcbench.video import read_video, write_video

REALVID = Path(__file__).resolve().parents[2] / "shared" / "realvid"
STEPS = StepSizes(0.05, 0.75)
HELD_OUT_SEED = 7000  # scene seeds 7000+; calibration uses 9000-9005


def accuracy(estimate, actions: list[Action], thresholds) -> np.ndarray:
    """Per-transition hits (full, translation, rotation) as a (N, 3) bool array."""
    hits = []
    for frame, action in enumerate(actions, start=1):
        t_label, r_label = classify_relative_pose(relative_pose(estimate.poses[frame - 1], estimate.poses[frame]),
                                                  thresholds)
        t_hit, r_hit = t_label == action.translation_label, r_label == action.rotation_label
        hits.append((t_hit and r_hit, t_hit, r_hit))
    return np.array(hits, dtype=bool)


def render_case(seed: int, track: str, num_steps: int, size: int,
                mirror: bool = False) -> tuple[np.ndarray, np.ndarray, list[Action]]:
    script = parse_script(generate_script(np.random.default_rng([seed, TRACKS.index(track)]), track, num_steps, STEPS.degrees))
    actions = script.frame_actions()
    executed = [replace(a, yaw=-a.yaw) for a in actions] if mirror else actions
    poses = trajectory_from_actions(executed, STEPS)
    K = intrinsics_from_fov(size, size, 75.0)
    return render_frames(build_scene(seed, poses[:, :3, 3]), poses, K, size, size), K, actions


def bench_synthetic(estimator, seeds: int, num_steps: int, first_seed: int = HELD_OUT_SEED,
                    sizes: tuple[int, ...] = (128, 160), degraded_sizes: tuple[int, ...] = (160,)) -> None:
    """Rows per size x track: clean at every size of ``sizes`` and ``degraded_sizes``, the
    three degradations too at those of ``degraded_sizes``."""
    print(f"\n== held-out renders (scenes {first_seed}-{first_seed + seeds - 1} per track, "
          f"{num_steps} latent steps each) ==")
    print(f"{'size':>5} {'track':>9} {'variant':>8} {'full':>7} {'transl':>7} {'rotat':>7} {'trans.':>7} {'s/video':>8}")
    for size in sorted(set(sizes) | set(degraded_sizes)):
        for track in ("basic", "combined"):
            videos = [render_case(first_seed + i, track, num_steps, size) for i in range(seeds)]
            kinds = ("clean", "jpeg", "blur", "noise") if size in degraded_sizes else ("clean",)
            for kind in kinds:
                hits, start = [], time.perf_counter()
                for index, (frames, K, actions) in enumerate(videos):
                    estimate = estimator.estimate(degrade(frames, kind, seed=index), K=K)
                    hits.append(accuracy(estimate, actions, estimator.thresholds))
                elapsed = (time.perf_counter() - start) / len(videos)
                mean = np.concatenate(hits).mean(axis=0)
                print(f"{size:>5} {track:>9} {kind:>8} {mean[0]:>7.4f} {mean[1]:>7.4f} {mean[2]:>7.4f} "
                      f"{sum(len(h) for h in hits):>7} {elapsed:>8.2f}")


def bench_wrong_videos(estimator, seeds: int, num_steps: int) -> None:
    print("\n== videos that do not follow their script (160 px, combined track) ==")
    static_hits, mirror_hits, exact_hits = [], [], []
    for i in range(seeds):
        frames, K, actions = render_case(HELD_OUT_SEED + i, "combined", num_steps, 160)
        still = np.repeat(frames[:1], len(frames), axis=0)
        static_hits.append(accuracy(estimator.estimate(still, K=K), actions, estimator.thresholds))
        exact_hits.append(accuracy(estimator.estimate(frames, K=K), actions, estimator.thresholds))
        mirrored, K, _ = render_case(HELD_OUT_SEED + i, "combined", num_steps, 160, mirror=True)
        mirror_hits.append(accuracy(estimator.estimate(mirrored, K=K), actions, estimator.thresholds))
    for name, hits in (("exact", exact_hits), ("static", static_hits), ("yaw-mirrored", mirror_hits)):
        full, trans, rot = np.concatenate(hits).mean(axis=0)
        print(f"{name:>13}: full {full:.4f}  translation {trans:.4f}  rotation {rot:.4f}")


def bench_realvid(estimator) -> None:
    manifest = REALVID / "manifest.csv"
    print("\n== real footage (../shared/realvid) ==")
    if not manifest.exists():
        print("skipped: ../shared/realvid not found")
        return
    with manifest.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        frames = read_video(REALVID / row["video"])
        estimate = estimator.estimate(frames, fov_deg=float(row["fov_deg"]))
        script = parse_script(row["actions"])
        transition_hits = accuracy(estimate, script.frame_actions(), estimator.thresholds).mean(axis=0)
        right = 0
        windows = list(zip(latent_windows(len(frames)), script.step_actions()))
        for (first, last), action in windows:
            rel = relative_pose(estimate.poses[first], estimate.poses[last])
            t_label, _ = classify_relative_pose(rel, estimator.thresholds)
            yaw = yaw_pitch_deg(rel[:3, :3])[0]
            turn_ok = np.sign(yaw) == action.yaw if action.yaw else abs(yaw) < 4 * estimator.thresholds.rotation_deg
            right += int(t_label == action.translation_label and turn_ok)
        print(f"{row['id']:>26} {frames.shape[2]}x{frames.shape[1]}: direction+turn right in {right}/{len(windows)} "
              f"windows; per transition full {transition_hits[0]:.3f} transl {transition_hits[1]:.3f} "
              f"rot {transition_hits[2]:.3f}")


def bench_speed(name: str, workers: list[int]) -> None:
    print("\n== speed: 381 frames, 480x832 (rendered at 120x208, upscaled) ==")
    script = parse_script(generate_script(np.random.default_rng(5), "combined", 95, STEPS.degrees))
    poses = trajectory_from_actions(script.frame_actions(), STEPS)
    K_small = intrinsics_from_fov(208, 120, 75.0)
    small = render_frames(build_scene(HELD_OUT_SEED, poses[:, :3, 3]), poses, K_small, 208, 120)
    frames = np.stack([cv2.resize(f, (832, 480), interpolation=cv2.INTER_CUBIC) for f in small])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "video.avi"
        write_video(path, frames)
        start = time.perf_counter()
        decoded = read_video(path)
        decode_s = time.perf_counter() - start
    print(f"decode (read_video, FFV1): {decode_s:.2f} s = {len(decoded) / decode_s:.0f} frames/s")
    for count in workers:
        estimator = build_estimator(name, num_workers=count)
        start = time.perf_counter()
        estimator.estimate(decoded, fov_deg=75.0)
        seconds = time.perf_counter() - start
        print(f"{name} with {count} worker thread(s): {seconds:.2f} s = {len(decoded) / seconds:.0f} frames/s "
              f"({seconds / decode_s:.2f}x the decode time)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--estimator", default="opencv")
    parser.add_argument("--seeds", type=int, default=12, help="held-out scenes per track")
    parser.add_argument("--first-seed", type=int, default=HELD_OUT_SEED,
                        help="first scene seed of the synthetic rows (keep clear of calibration's 9000+)")
    parser.add_argument("--steps", type=int, default=12, help="latent steps per script")
    parser.add_argument("--sizes", type=int, nargs="*", default=[128, 160], help="square render sizes, clean rows")
    parser.add_argument("--degraded-sizes", type=int, nargs="*", default=[160],
                        help="square render sizes with JPEG, blur and noise rows beside the clean one")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--skip", nargs="*", default=[], choices=["synthetic", "wrong", "realvid", "speed"])
    parser.add_argument("--option", nargs="*", default=[], metavar="KEY=VALUE",
                        help="numeric estimator options (speed runs use the defaults)")
    args = parser.parse_args()
    # integer options (window and block sizes in pixels) must reach OpenCV as ints
    options = {key: int(value) if value.lstrip("-").isdigit() else float(value)
               for key, value in (item.split("=", 1) for item in args.option)}
    estimator = build_estimator(args.estimator, **options)
    print(f"estimator {estimator.name} v{estimator.version}, thresholds {estimator.thresholds}")
    if "synthetic" not in args.skip:
        bench_synthetic(estimator, args.seeds, args.steps, args.first_seed, tuple(args.sizes),
                        tuple(args.degraded_sizes))
    if "wrong" not in args.skip:
        bench_wrong_videos(estimator, args.seeds, args.steps)
    if "realvid" not in args.skip:
        bench_realvid(estimator)
    if "speed" not in args.skip:
        bench_speed(args.estimator, args.workers)


if __name__ == "__main__":
    main()
