"""Accuracy and speed of a pose estimator (default: opencv with its shipped thresholds).

Prints, on held-out synthetic scenes (seeds 7000+, disjoint from the calibration seeds
9000-9005), one table per scene family (room, open terrain with sky, street): full-label /
translation / rotation accuracy per transition for each track (basic, combined, car, diagonal) at each
size, clean and under JPEG q30, Gaussian blur sigma 1 and noise sigma 5, and with wobbling
content (each frame displaced by its own smooth random field, 0.3 px RMS at 160 px, as a
generated video's content wobbles); a
leave-one-family-out row per family (thresholds calibrated on the other families' calibration
scenes, scored on this family's held-out clean videos); how alike the same speed reads
forward and sideways; the real clips of ../shared/realvid (direction checks per latent
window); videos that do not follow their script (static, yaw-mirrored, lagging); the video
codecs users bring (MPEG-4 part 2 and, when ``imageio-ffmpeg`` is installed, H.264 at CRF 23
and 35; combined and car tracks at 256 px); and frames per second on a 381-frame 480x832 video
next to the time OpenCV takes only to decode it.

    OMP_NUM_THREADS=1 python -m benchmarks.bench_estimator [--seeds 12] [--families room terrain street]
        [--tracks basic combined car diagonal] [--sizes 160 256] [--calibration-seeds 6] [--workers 1 2]
        [--skip synthetic lofo invariance realvid wrong codecs speed] [--option KEY=VALUE ...]
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

from wcbench.core.actions import Action, parse_script
from wcbench.core.camera import (StepSizes, classify_relative_pose, intrinsics_from_fov, relative_pose,
                                 trajectory_from_actions, yaw_pitch_deg)
from wcbench.pose import build_estimator, latent_windows
from wcbench.pose.calibration import calibrate, estimate_video
from wcbench.pose.calibration_videos import (DEGRADATIONS, CalibrationSpec, MotionCase, degrade, motion_case,
                                             render_calibration_videos)
from wcbench.data.scenes.synthetic import SCENE_FAMILIES, build_scene, render_frames
from wcbench.data.suite import generate_script
from wcbench.core.video import read_video, write_video

from benchmarks.bench_quality import write_h264, write_with_opencv  # the same encoders as the speed benchmark
from benchmarks.options import numeric_options

REALVID = Path(__file__).resolve().parents[2] / "shared" / "realvid"
HELD_OUT_SEED = 7000  # scene seeds 7000+; calibration uses 9000-9005
HELD_OUT = CalibrationSpec(static_steps=0)  # cases as calibration makes them, without the standing-still tail


def accuracy(estimate, actions: list[Action], thresholds) -> np.ndarray:
    """Per-transition hits (full, translation, rotation) as a (N, 3) bool array."""
    hits = []
    for frame, action in enumerate(actions, start=1):
        t_label, r_label = classify_relative_pose(relative_pose(estimate.poses[frame - 1], estimate.poses[frame]),
                                             thresholds)
        t_hit, r_hit = t_label == action.translation_label, r_label == action.rotation_label
        hits.append((t_hit and r_hit, t_hit, r_hit))
    return np.array(hits, dtype=bool)


def held_out_case(family: str, index: int, track: str, num_steps: int, first_seed: int) -> MotionCase:
    return motion_case(family, first_seed + index, track, num_steps, 0, HELD_OUT)


def render_case(seed: int, track: str, num_steps: int, size: int, family: str = "room",
                mirror: bool = False) -> tuple[np.ndarray, np.ndarray, list[Action]]:
    """A held-out case's frames, intrinsics and commanded per-transition actions; ``mirror``
    executes every yaw the wrong way round."""
    case = motion_case(family, seed, track, num_steps, 0, HELD_OUT)
    if mirror:
        actions = parse_script(case.script).frame_actions()
        poses = case.poses()[:1] @ trajectory_from_actions([replace(a, yaw=-a.yaw) for a in actions], case.steps)
        K = intrinsics_from_fov(size, size, case.fov_deg)
        scene = build_scene(case.seed, poses[:, :3, 3], family=family)
        return render_frames(scene, poses, K, size, size), K, actions
    frames, K, _ = case.render(size, size)
    return frames, K, parse_script(case.script).frame_actions()


def bench_synthetic(estimator, args) -> dict:
    """One table per family; returns the clean estimates at the first size per family (for the
    leave-one-family-out rows): family -> list of (estimate, actions)."""
    clean_estimates: dict[str, list] = {}
    for family in args.families:
        print(f"\n== {family}: held-out renders (seeds {args.first_seed}-{args.first_seed + args.seeds - 1} per "
              f"track, {args.steps} latent steps each) ==")
        print(f"{'size':>5} {'track':>9} {'variant':>8} {'full':>7} {'transl':>7} {'rotat':>7} {'trans.':>7} "
              f"{'s/video':>8}")
        for size in args.sizes:
            for track in args.tracks:
                videos = [render_case(args.first_seed + i, track, args.steps, size, family) for i in range(args.seeds)]
                for kind in DEGRADATIONS:
                    hits, start = [], time.perf_counter()
                    for index, (frames, K, actions) in enumerate(videos):
                        estimate = estimator.estimate(degrade(frames, kind, seed=index), K=K)
                        hits.append(accuracy(estimate, actions, estimator.thresholds))
                        if kind == "clean" and size == args.sizes[0]:
                            clean_estimates.setdefault(family, []).append((estimate, actions))
                    elapsed = (time.perf_counter() - start) / len(videos)
                    mean = np.concatenate(hits).mean(axis=0)
                    print(f"{size:>5} {track:>9} {kind:>8} {mean[0]:>7.4f} {mean[1]:>7.4f} {mean[2]:>7.4f} "
                          f"{sum(len(h) for h in hits):>7} {elapsed:>8.2f}", flush=True)
    return clean_estimates


def held_out_clean_estimates(estimator, args) -> dict:
    """The held-out clean estimates at the first size that ``bench_synthetic`` also returns, for
    a leave-one-family-out run on its own (``--skip synthetic``)."""
    size = args.sizes[0]
    return {family: [(estimator.estimate(frames, K=K), actions)
                     for frames, K, actions in (render_case(args.first_seed + i, track, args.steps, size, family)
                                                for track in args.tracks for i in range(args.seeds))]
            for family in args.families}


def bench_leave_one_family_out(estimator, clean_estimates: dict, args) -> None:
    """Thresholds calibrated without a family (clean calibration videos of the others), scored
    on that family's held-out clean videos at the first size."""
    print(f"\n== leave one family out (calibrated on the other families' seeds {args.calibration_first}-"
          f"{args.calibration_first + args.calibration_seeds - 1}, clean, {args.sizes[0]} px) ==")
    spec = CalibrationSpec(seeds=tuple(range(args.calibration_first, args.calibration_first + args.calibration_seeds)),
                           resolution=(args.sizes[0], args.sizes[0]), degradations=("clean",))
    per_family: dict[str, tuple[list, list]] = {}
    for video in render_calibration_videos(spec):
        estimates, scripts = per_family.setdefault(video.case.family, ([], []))
        estimates.append(estimate_video(estimator, video))
        scripts.append(video.script)
    print(f"{'left out':>9} {'translation':>12} {'rotation':>9} {'full':>7} {'transl':>7} {'rotat':>7}")
    for family in args.families:
        others = [f for f in SCENE_FAMILIES if f != family and f in per_family]
        thresholds = calibrate([e for f in others for e in per_family[f][0]],
                               [s for f in others for s in per_family[f][1]]).thresholds
        hits = np.concatenate([accuracy(estimate, actions, thresholds)
                               for estimate, actions in clean_estimates[family]])
        mean = hits.mean(axis=0)
        print(f"{family:>9} {thresholds.translation:>12.5f} {thresholds.rotation_deg:>9.3f} "
              f"{mean[0]:>7.4f} {mean[1]:>7.4f} {mean[2]:>7.4f}")


def bench_invariance(estimator, args) -> None:
    """Translation length read per unit of commanded speed, forward/backward against sideways,
    on basic-track windows (the same speed should read alike)."""
    print(f"\n== the same speed forward and sideways ({args.sizes[0]} px, clean, basic track) ==")
    print(f"{'family':>9} {'fwd/bwd':>9} {'sideways':>9} {'ratio':>6}   (window translation length / commanded step)")
    size = args.sizes[0]
    for family in args.families:
        reads: dict[str, list[float]] = {"along": [], "side": []}
        for i in range(args.seeds):
            case = held_out_case(family, i, "basic", args.steps, args.first_seed)
            frames, K, _ = case.render(size, size)
            poses = estimator.estimate(frames, K=K).poses
            for (first, last), action in zip(latent_windows(len(frames)), parse_script(case.script).step_actions()):
                if action.is_translation:
                    length = np.linalg.norm(relative_pose(poses[first], poses[last])[:3, 3]) / (last - first)
                    reads["along" if action.forward else "side"].append(length / case.steps.translation)
        along, side = np.median(reads["along"]), np.median(reads["side"])
        print(f"{family:>9} {along:>9.4f} {side:>9.4f} {along / side:>6.2f}")


def bench_wrong_videos(estimator, args) -> None:
    size = args.sizes[0]
    print(f"\n== videos that do not follow their script ({size} px, combined track) ==")
    print(f"{'family':>9} {'video':>13} {'full':>7} {'transl':>7} {'rotat':>7}")
    for family in args.families:
        rows: dict[str, list] = {"exact": [], "static": [], "yaw-mirrored": [], "lagging": []}
        for i in range(args.seeds):
            frames, K, actions = render_case(args.first_seed + i, "combined", args.steps, size, family)
            still = np.repeat(frames[:1], len(frames), axis=0)
            lagging = np.concatenate([np.repeat(frames[:1], 8, axis=0), frames[:-8]])  # two latent steps late
            mirrored, _, _ = render_case(args.first_seed + i, "combined", args.steps, size, family, mirror=True)
            for name, video in (("exact", frames), ("static", still), ("yaw-mirrored", mirrored), ("lagging", lagging)):
                rows[name].append(accuracy(estimator.estimate(video, K=K), actions, estimator.thresholds))
        for name, hits in rows.items():
            full, trans, rot = np.concatenate(hits).mean(axis=0)
            print(f"{family:>9} {name:>13} {full:>7.4f} {trans:>7.4f} {rot:>7.4f}")


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


def encoded(frames: np.ndarray, codec: str, folder: Path) -> np.ndarray | None:
    """``frames`` after a round trip through ``codec`` (``mp4v`` or ``h264-crfN``); None when no
    encoder for it is installed (OpenCV's wheel has none for H.264)."""
    path = folder / f"{codec}.mp4"
    if codec == "mp4v":
        write_with_opencv(path, frames, "mp4v")
    elif not write_h264(path, frames, int(codec.removeprefix("h264-crf"))):
        return None
    return read_video(path)


def bench_codecs(estimator, args, size: int = 256) -> None:
    """Full / translation / rotation accuracy of the combined and car tracks after a video codec."""
    print(f"\n== video codecs ({size} px, seeds {args.first_seed}-{args.first_seed + args.seeds - 1}) ==")
    print(f"{'family':>9} {'track':>9} {'codec':>12} {'full':>7} {'transl':>7} {'rotat':>7}")
    for family in args.families:
        for track in ("combined", "car"):
            videos = [render_case(args.first_seed + i, track, args.steps, size, family) for i in range(args.seeds)]
            for codec in ("mp4v", "h264-crf23", "h264-crf35"):
                hits = []
                with tempfile.TemporaryDirectory() as folder:
                    for frames, K, actions in videos:
                        video = encoded(frames, codec, Path(folder))
                        if video is None:
                            break
                        hits.append(accuracy(estimator.estimate(video, K=K), actions, estimator.thresholds))
                if not hits:
                    print(f"{family:>9} {track:>9} {codec:>12} skipped: `pip install imageio-ffmpeg` brings an encoder")
                    continue
                full, trans, rot = np.concatenate(hits).mean(axis=0)
                print(f"{family:>9} {track:>9} {codec:>12} {full:>7.4f} {trans:>7.4f} {rot:>7.4f}", flush=True)


def bench_speed(name: str, workers: list[int], options: dict) -> None:
    print("\n== speed: 381 frames, 480x832 (rendered at 120x208, upscaled) ==")
    steps = StepSizes(0.05, 0.75)
    script = parse_script(generate_script(np.random.default_rng(5), "combined", 95, steps.degrees))
    poses = trajectory_from_actions(script.frame_actions(), steps)
    K_small = intrinsics_from_fov(208, 120, 75.0)
    small = render_frames(build_scene(HELD_OUT_SEED, poses[:, :3, 3]), poses, K_small, 208, 120)
    frames = np.stack([cv2.resize(f, (832, 480), interpolation=cv2.INTER_CUBIC) for f in small])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "video.avi"
        write_video(path, frames)
        start = time.perf_counter()
        decoded = read_video(path)
        decode_s = time.perf_counter() - start
    print(f"decode (read_video, stored HuffYUV): {decode_s:.2f} s = {len(decoded) / decode_s:.0f} frames/s")
    opencv_threads = cv2.getNumThreads()
    for count in workers:
        # one worker: one thread in all, OpenCV's own included, as each `wcbench score --jobs N`
        # worker runs; more: the worker threads plus OpenCV's pool
        cv2.setNumThreads(1 if count == 1 else opencv_threads)
        estimator = build_estimator(name, num_workers=count, **options)
        start, cpu_start = time.perf_counter(), time.process_time()
        estimator.estimate(decoded, fov_deg=75.0)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        # On a shared machine the wall time includes waiting for a core and the CPU time does not;
        # the CPU time counts every thread of the process, so with several it is the figure to quote
        label = "one thread" if count == 1 else f"{count} worker threads and OpenCV's pool"
        print(f"{name}, {label}: {seconds:.2f} s = {len(decoded) / seconds:.0f} frames/s wall, "
              f"{cpu:.2f} s = {len(decoded) / cpu:.0f} frames/s of CPU time "
              f"({seconds / decode_s:.2f}x the decode time)")
    cv2.setNumThreads(opencv_threads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--estimator", default="opencv")
    parser.add_argument("--seeds", type=int, default=12, help="held-out scenes per family and track")
    parser.add_argument("--first-seed", type=int, default=HELD_OUT_SEED,
                        help="first held-out scene seed (keep clear of calibration's 9000+)")
    parser.add_argument("--steps", type=int, default=12, help="latent steps per script")
    parser.add_argument("--families", nargs="+", default=list(SCENE_FAMILIES), choices=SCENE_FAMILIES)
    parser.add_argument("--tracks", nargs="+", default=["basic", "combined", "car", "diagonal"],
                        choices=["basic", "combined", "car", "diagonal"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[160, 256],
                        help="square render sizes; every size gets the clean, the three degraded and the wobbling rows")
    parser.add_argument("--calibration-seeds", type=int, default=6, help="calibration scenes per family (LOFO rows)")
    parser.add_argument("--calibration-first", type=int, default=9000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["synthetic", "lofo", "invariance", "realvid", "wrong", "codecs", "speed"])
    parser.add_argument("--option", nargs="*", default=[], metavar="KEY=VALUE", help="numeric estimator options")
    args = parser.parse_args()
    options = numeric_options(parser, args.option)
    estimator = build_estimator(args.estimator, **options)
    print(f"estimator {estimator.name} v{estimator.version}, thresholds {estimator.thresholds}")
    clean_estimates = {}
    if "synthetic" not in args.skip:
        clean_estimates = bench_synthetic(estimator, args)
    if "lofo" not in args.skip:
        bench_leave_one_family_out(estimator, clean_estimates or held_out_clean_estimates(estimator, args), args)
    if "invariance" not in args.skip:
        bench_invariance(estimator, args)
    if "realvid" not in args.skip:
        bench_realvid(estimator)
    if "wrong" not in args.skip:
        bench_wrong_videos(estimator, args)
    if "codecs" not in args.skip:
        bench_codecs(estimator, args)
    if "speed" not in args.skip:
        bench_speed(args.estimator, args.workers, options)


if __name__ == "__main__":
    main()
