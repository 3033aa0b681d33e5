"""Visual-quality scorer benchmark: per-frame cost of each term and separation of clean renders
from degraded ones.

    OMP_NUM_THREADS=1 python benchmarks/bench_quality.py [--seeds 8] [--threads 1]

Prints (1) ms per frame of BRISQUE, blur effect, noise sigma, blockiness, warp error (flow) and
the whole ``default`` scorer (BRISQUE on every frame and on every 4th) at 160x160 and
480x832; (2) mean vq of clean vs blurred / noised / JPEG-compressed renders over several
seeds, with how many seeds rank every level in order; (3) flicker and drift separation;
(4) BRISQUE and vq of real footage when ../shared/realvid is present.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import cv2
import numpy as np

from wcbench.actions import StepSizes, intrinsics_from_fov, parse_script, script_trajectory
from wcbench.scenes.synthetic import build_scene, render_frames
from wcbench.scoring import vq_terms
from wcbench.scoring.brisque import compute_brisque, to_gray
from wcbench.scoring.quality import build_quality_scorer

REALVID = Path(__file__).resolve().parents[2] / "shared" / "realvid"
SCRIPTS = ("w+left-3", "d+up-3", "a+right-3", "s-3", "right-3")


def render(seed: int, width: int, height: int, script: str = "w+left-3") -> np.ndarray:
    poses = script_trajectory(parse_script(script), StepSizes(0.05, 0.75))
    scene = build_scene(seed, poses[:, :3, 3])
    return render_frames(scene, poses, intrinsics_from_fov(width, height, 75.0), width, height)


def blur(frames, sigma):
    return np.stack([cv2.GaussianBlur(f, (0, 0), sigma) for f in frames]) if sigma else frames


def noise(frames, sigma):
    return np.clip(frames + np.random.default_rng(0).normal(0, sigma, frames.shape), 0, 255).astype(np.uint8)


def jpeg(frames, quality):
    if quality >= 100:
        return frames
    return np.stack([cv2.imdecode(cv2.imencode(".jpg", f, [cv2.IMWRITE_JPEG_QUALITY, quality])[1],
                                  cv2.IMREAD_UNCHANGED) for f in frames])


def ms_per_frame(fn, num_frames: int, repeats: int = 3) -> float:
    fn()  # warm-up (model parsing, flow allocation)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats / num_frames * 1e3


def bench_costs(sizes: list[tuple[int, int]]) -> None:
    print("\n== cost, ms per frame (single video, 9 frames) ==")
    print(f"{'size HxW':>10} {'brisque':>8} {'blur':>6} {'noise':>6} {'blocks':>7} {'flow':>6} "
          f"{'default':>8} {'stride4':>8}")
    for height, width in sizes:
        frames = render(7, width, height, "w+left-2")
        gray = to_gray(frames)
        n = len(frames)
        costs = [
            ms_per_frame(lambda: compute_brisque(gray), n),
            ms_per_frame(lambda: [vq_terms.compute_blur_effect(g) for g in gray], n),
            ms_per_frame(lambda: [vq_terms.compute_noise_sigma(g) for g in gray], n),
            ms_per_frame(lambda: [vq_terms.compute_blockiness(g) for g in gray], n),
            ms_per_frame(lambda: vq_terms.compute_warp_error(gray), n),
            ms_per_frame(lambda: build_quality_scorer("default").score(frames), n),
            ms_per_frame(lambda: build_quality_scorer("default", brisque_stride=4).score(frames), n),
        ]
        print(f"{height:>4}x{width:<5} " + " ".join(f"{c:>{w}.1f}" for c, w in zip(costs, (8, 6, 6, 7, 6, 8, 8))))


def bench_separation(seeds: list[int]) -> None:
    scorer = build_quality_scorer("default")
    videos = {seed: render(seed, 160, 160, SCRIPTS[seed % len(SCRIPTS)]) for seed in seeds}
    print(f"\n== separation: mean vq over {len(seeds)} seeds (13-frame 160x160 renders) ==")
    for name, degrade, levels in (("blur sigma", blur, (0, 1, 2, 3, 5)), ("noise sigma", noise, (0, 5, 10, 20, 40)),
                                  ("jpeg quality", jpeg, (100, 70, 50, 30, 15, 5))):
        table = np.array([[scorer.score(degrade(v, lv)).per_frame.mean() for lv in levels] for v in videos.values()])
        in_order = int(np.sum(np.all(np.diff(table, axis=1) < 0, axis=1)))
        cells = "  ".join(f"{lv}: {m:.3f}+-{s:.3f}" for lv, m, s in zip(levels, table.mean(0), table.std(0)))
        gaps = np.diff(table, axis=1)
        print(f"{name:>13}  {cells}  | all levels in order: {in_order}/{len(seeds)} seeds, "
              f"smallest drop {-gaps.max():.3f}")

    flicker_gap, drift_end, steady_end = [], [], []
    drift_scorer = build_quality_scorer("default-drift")
    for seed, frames in videos.items():
        offsets = np.random.default_rng(seed).choice([-20, 0, 20], size=len(frames))
        flickering = np.clip(frames.astype(np.int16) + offsets[:, None, None, None], 0, 255).astype(np.uint8)
        flicker_gap.append(scorer.score(frames).per_frame.mean() - scorer.score(flickering).per_frame.mean())
        decaying = np.stack([blur(f[None], s)[0] for f, s in zip(frames, np.linspace(0, 3, len(frames)))])
        drift_end.append(drift_scorer.score(decaying).per_frame[-1])
        steady_end.append(drift_scorer.score(frames).per_frame[-1])
    print(f"      flicker  clean - (+-20 grey-level jumps) vq: {np.mean(flicker_gap):.3f} "
          f"(min {np.min(flicker_gap):.3f})")
    print(f"        drift  default-drift at the last frame: steady {np.mean(steady_end):+.3f} "
          f"(|max| {np.abs(steady_end).max():.3f}), blurring 0->3 {np.mean(drift_end):+.3f} "
          f"(max {np.max(drift_end):+.3f})")


def bench_real_footage() -> None:
    if not REALVID.exists():
        print("\n(real footage skipped: ../shared/realvid is absent)")
        return
    from wcbench.video import read_video

    print("\n== real footage (default scorer) ==")
    scorer = build_quality_scorer("default")
    for case in ("kitti00-straight", "kitti00-left-turn", "euroc-v101-static"):
        result = scorer.score(read_video(REALVID / case))
        raw = result.raw
        print(f"{case:>20}  vq {result.per_frame.mean():.3f}  brisque {np.nanmean(raw['brisque']):.1f}  "
              f"blur {raw['blur_effect'].mean():.2f}  noise {raw['noise_sigma'].mean():.2f}  "
              f"blocks {raw['blockiness'].mean():.2f}  warp {np.nanmean(raw['warp_error']):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1, help="OpenCV threads (1: per-core cost)")
    parser.add_argument("--skip-large", action="store_true", help="time 160x160 only")
    args = parser.parse_args()
    cv2.setNumThreads(args.threads)
    bench_costs([(160, 160)] if args.skip_large else [(160, 160), (480, 832)])
    bench_separation(list(range(args.seeds)))
    bench_real_footage()


if __name__ == "__main__":
    main()
