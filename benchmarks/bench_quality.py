"""Visual-quality benchmark: does the default scorer order damage right on every kind of content,
and is it fast enough at full size?

    OMP_NUM_THREADS=1 python -m benchmarks.bench_quality              # everything (about 25 min idle)
    python -m benchmarks.bench_quality --parts orderings --seeds 4    # a quicker look

Parts (``--parts``, comma-separated):
- ``orderings``: for every content family (each synthetic scene family the renderer offers, a
  pixel-scale texture from ``benchmarks.vq_probes``, and the real footage in
  ../shared/realvid when present), every video is scored clean and under every damage level
  (blur sigma 0.5-5, noise sigma 2-40, JPEG quality 90-5, brightness flicker 5-20): prints how
  many damaged versions score below their clean video, how many videos keep every level in
  order, and the mean vq per level. Then damage growing clip by clip after the start image
  (blur +0.5 sigma, colour cast +5 % per 4-frame clip): how many consecutive clip pairs have
  falling per-clip vq, scored as the benchmark scores a clip.
- ``costs``: CPU ms per frame of each term and of the whole default scorer, one thread, at
  160x160 and 480x832 (target: <= 15 ms at 480x832), with the ratio to the target.
- ``score``: ``wcbench score`` of one 381-frame 480x832 video on 2 cores, against playback at
  24 frames/s (target: faster), for the same frames in each kind of video it meets: the lossless
  video ``wcbench run`` stores (HuffYUV), FFV1 (another lossless codec), and the mp4 files users bring
  (MPEG-4 part 2; H.264 when ``imageio-ffmpeg`` is installed, whose ffmpeg can encode it): file
  size, decoding CPU per frame, wall and CPU time of the whole command; then the CPU the camera
  estimator and the quality scorer take over the clips, and the wall time of the rest of the
  main thread's path (imports and scorers; writing the report). Wall time is the target's
  measure: the benchmark prints beside it the CPU other processes used during the run (0 on an
  idle machine).
The machine these figures are taken on may be shared: CPU time (which waiting for a core does
not add to) stands in for idle wall time, every figure is printed with its ratio to the target,
the load average is printed too, and the times are best-of-``--repeats``.
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from wcbench.core.camera import StepSizes
from wcbench.core.noise import compute_noise_sigma
from wcbench.pose.calibration_videos import MotionCase
from wcbench.data.scenes.synthetic import SCENE_FAMILIES, camera_setup
from wcbench.scoring import vq_terms
from wcbench.scoring.quality import DefaultVQConfig, build_quality_scorer, compute_default_raw

from benchmarks.vq_probes import DAMAGE_LEVELS, GRADUAL_KINDS, damage_orderings, gradual, per_clip_vq, texture_video

REALVID = Path(__file__).resolve().parents[2] / "shared" / "realvid"
SCRIPTS = ("w+left-6", "d+up-6", "a+right-6", "s-6", "right-6", "w-6", "left+down-6", "d-6")
GRADUAL_STEPS = {"blur": 0.5, "colour": 0.05}
VQ_TARGET_MS = 15.0
PLAYBACK_FPS = 24.0


def render(seed: int, width: int, height: int, script: str, family: str = "room") -> np.ndarray:
    """A scripted camera move through a synthetic scene, filmed as the estimator's validation
    films that family (its field of view, speed and start pitch per seed)."""
    camera = camera_setup(family, seed)
    steps = StepSizes(0.05 * camera.step_scale, 0.75 * camera.step_scale)
    case = MotionCase(family, seed, "basic", script, steps, camera.fov_deg, camera.start_pitch_deg)
    return case.render(width, height)[0]


def family_videos(family: str, seeds: list[int], size: int = 160) -> dict[str, np.ndarray]:
    """25-frame videos (6 clips of 4 frames after the start image) of one content family."""
    if family == "texture":
        return {f"texture-{s}": texture_video(s, size, size, 25) for s in seeds}
    if family == "real":
        from wcbench.core.video import read_video

        cases = sorted(p.name for p in REALVID.iterdir() if p.is_dir()) if REALVID.exists() else []
        return {case: read_video(REALVID / case) for case in cases}
    return {f"{family}-{s}": render(s, size, size, SCRIPTS[s % len(SCRIPTS)], family) for s in seeds}


def bench_orderings(families: list[str], seeds: list[int]) -> None:
    scorer = build_quality_scorer("default")
    print(f"\n== orderings (default scorer v{scorer.version}) ==")
    print("damaged below clean: pairs (video, level) whose damaged version scores below the clean video;"
          " in order: videos whose every level scores below the one before")
    level_means: dict[str, dict] = {}
    grand = [0, 0]
    for family in families:
        videos = family_videos(family, seeds)
        if not videos:
            print(f"{family:>8}: no videos (../shared/realvid absent?)")
            continue
        orderings = [damage_orderings(scorer, frames, seed=i) for i, frames in enumerate(videos.values())]
        level_means[family] = {"clean": np.mean([o.clean for o in orderings])}
        for kind, levels in DAMAGE_LEVELS.items():
            below = sum(o.below_clean()[(kind, lv)] for o in orderings for lv in levels)
            total = len(orderings) * len(levels)
            margin = min(o.clean - o.damaged[(kind, lv)] for o in orderings for lv in levels)
            in_order = sum(o.in_order(kind) for o in orderings)
            grand[0] += below
            grand[1] += total
            level_means[family][kind] = [np.mean([o.damaged[(kind, lv)] for o in orderings]) for lv in levels]
            print(f"{family:>8} {kind:>8}: below clean {below:>3}/{total:<3} (smallest gap {margin:+.4f})  "
                  f"in order {in_order}/{len(orderings)} videos")
        for kind in GRADUAL_KINDS:
            falling = total = 0
            for frames in videos.values():
                values = np.diff(per_clip_vq(scorer, gradual(frames, kind, GRADUAL_STEPS[kind])))
                falling, total = falling + int(np.sum(values < 0)), total + values.size
            print(f"{family:>8} {'gradual ' + kind:>15}: per-clip vq falling {falling}/{total} clip pairs")
    print(f"all families: damaged below clean {grand[0]}/{grand[1]} ({100 * grand[0] / max(grand[1], 1):.1f} %)")
    print("\nmean vq per level (clean first):")
    for family, means in level_means.items():
        for kind, levels in DAMAGE_LEVELS.items():
            cells = " / ".join(f"{m:.3f}" for m in [means["clean"], *means[kind]])
            print(f"{family:>8} {kind:>8} {'0/' + '/'.join(f'{lv:g}' for lv in levels):>22}: {cells}")


def best_ms_per_frame(fn, num_frames: int, repeats: int, clock=time.process_time) -> float:
    """Best of ``repeats`` runs of ``fn``, in ms per frame. The default clock is this process's
    CPU time: on one thread it is the wall time an idle machine would show, however many other
    jobs share the cores (waiting for a core costs no CPU time)."""
    fn()  # warm-up (allocation, flow initialisation)
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times) / num_frames * 1e3


def bench_costs(sizes: list[tuple[int, int]], repeats: int) -> None:
    cv2.setNumThreads(1)
    config = DefaultVQConfig()
    print(f"\n== cost, CPU ms per frame, one thread (best of {repeats} runs; 17-frame video) {load_note()} ==")
    print(f"{'size HxW':>10} {'blur':>6} {'noise':>6} {'blocks':>7} {'temporal':>9} {'colour':>7} {'default':>8}"
          f"  vs {VQ_TARGET_MS:g} ms")
    for height, width in sizes:
        frames = render(7, width, height, "w+left-4")
        gray = vq_terms.to_gray(frames)
        n = len(frames)
        every = np.arange(n)
        costs = [best_ms_per_frame(lambda: [vq_terms.compute_blur_effect(g) for g in gray], n, repeats),
                 best_ms_per_frame(lambda: [compute_noise_sigma(g) for g in gray], n, repeats),
                 best_ms_per_frame(lambda: [vq_terms.compute_blockiness(g) for g in gray], n, repeats),
                 best_ms_per_frame(lambda: vq_terms.compute_temporal(gray, config.temporal), n, repeats),
                 best_ms_per_frame(lambda: vq_terms.compute_colour_shift(frames, every), n, repeats),
                 best_ms_per_frame(lambda: compute_default_raw(frames, config), n, repeats)]
        print(f"{height:>4}x{width:<5} " + " ".join(f"{c:>{w}.1f}" for c, w in zip(costs, (6, 6, 7, 9, 7, 8)))
              + f"  {costs[-1] / VQ_TARGET_MS:.2f}x the target")
    print("(blur, noise, blocks and colour run on every frame here; the scorer runs them on every "
          f"{config.spatial_stride}th)")


def clip_seconds(frames: np.ndarray, script: str, fov_deg: float) -> tuple[float, float]:
    """CPU seconds the camera estimator and the quality scorer take over every clip of
    ``frames``, each clip cut and scored as ``wcbench score`` does (``wcbench.scoring.case``)."""
    from wcbench.core.actions import clip_step_ranges, parse_script as parse
    from wcbench.pose import build_estimator
    from wcbench.scoring.case import Scorers, clip_view, score_clip_following, score_clip_quality

    parsed = parse(script)
    scorers = Scorers(build_estimator("opencv"), build_quality_scorer("default"))
    following = quality = 0.0
    for clip in range(len(clip_step_ranges(parsed.num_steps, 4))):
        view = clip_view(frames, parsed, clip)
        start = time.process_time()
        score_clip_following(view, scorers, fov_deg=fov_deg)
        middle = time.process_time()
        score_clip_quality(view, scorers)
        following, quality = following + middle - start, quality + time.process_time() - middle
    return following, quality


def decode_seconds(path: Path) -> float:
    """CPU seconds (all threads) that decoding the whole video takes, as ``wcbench score`` decodes it."""
    from wcbench.core.video import VideoSource

    start = time.process_time()
    for _ in VideoSource(path):
        pass
    return time.process_time() - start


def write_with_opencv(path: Path, frames: np.ndarray, fourcc: str) -> None:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), PLAYBACK_FPS, frames.shape[2:0:-1])
    if not writer.isOpened():
        raise OSError(f"OpenCV cannot write {fourcc} to {path}")
    for frame in frames:
        writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    writer.release()


def write_h264(path: Path, frames: np.ndarray, crf: int = 18) -> bool:
    """An H.264 mp4 (libx264 at ``crf``, yuv420p) through the ffmpeg of ``imageio-ffmpeg``, when it
    is installed: OpenCV's wheel decodes H.264 but has no H.264 encoder. False when it is not."""
    try:
        import imageio_ffmpeg
    except ImportError:
        return False
    height, width = frames.shape[1:3]
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24",
                    "-s", f"{width}x{height}", "-r", f"{PLAYBACK_FPS:g}", "-i", "-", "-c:v", "libx264", "-crf",
                    str(crf), "-pix_fmt", "yuv420p", str(path)], input=frames.tobytes(), check=True)
    return True


def score_formats(folder: Path, frames: np.ndarray) -> dict[str, Path]:
    """The same frames as each kind of video ``wcbench score`` meets: the lossless video ``wcbench
    run`` stores (HuffYUV), FFV1 (another lossless codec), and the mp4 files users bring
    (MPEG-4 part 2 from OpenCV; H.264 when an encoder is installed)."""
    from wcbench.core.video import write_video

    videos = {"stored (HuffYUV .avi)": folder / "stored.avi", "FFV1 .avi": folder / "ffv1.avi",
              "MPEG-4 .mp4 (mp4v)": folder / "mp4v.mp4"}
    write_video(videos["stored (HuffYUV .avi)"], frames)
    write_with_opencv(videos["FFV1 .avi"], frames, "FFV1")
    write_with_opencv(videos["MPEG-4 .mp4 (mp4v)"], frames, "mp4v")
    if write_h264(folder / "h264.mp4", frames):
        videos["H.264 .mp4 (libx264 crf 18)"] = folder / "h264.mp4"
    else:
        print("H.264: skipped (OpenCV's wheel cannot encode it; `pip install imageio-ffmpeg` brings an ffmpeg "
              "that can)")
    return videos


def busy_cpu_seconds() -> float:
    """CPU seconds every process of the machine has used since boot (Linux ``/proc/stat``)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def time_score(manifest: Path, out: Path) -> tuple[float, float, float]:
    """Wall and CPU seconds of one ``wcbench score`` process, and the CPU seconds other processes
    used meanwhile (the machine's busy time less the command's: 0 on an otherwise idle machine)."""
    start, cpu, busy = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN), busy_cpu_seconds()
    subprocess.run([sys.executable, "-m", "wcbench", "score", "--manifest", str(manifest), "--out", str(out)],
                   check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    return wall, used, max(0.0, busy_cpu_seconds() - busy - used)


def setup_seconds() -> float:
    """Wall seconds a fresh process takes to import what ``wcbench score`` needs and build its scorers."""
    code = ("import time; t = time.perf_counter(); from wcbench.cli.common import build_scorers, load_config; "
            "import wcbench.run.manifest, wcbench.report.results; build_scorers(load_config([])); "
            "print(time.perf_counter() - t)")
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)


def report_seconds(results_dir: Path) -> float:
    """Wall seconds of writing a scored run's results and report (figures included) again."""
    from wcbench.report.results import rebuild

    start = time.perf_counter()
    rebuild(results_dir)
    return time.perf_counter() - start


def bench_score(repeats: int) -> None:
    script = "w+left-30, d+right-30, s+up-35"  # 95 latent steps: 381 frames
    playback = 381 / PLAYBACK_FPS
    print(f"\n== wcbench score: one 381-frame 480x832 video, 2 cores; playback at {PLAYBACK_FPS:g} frames/s takes "
          f"{playback:.1f} s ==")
    print(load_note())
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        frames = render(11, 832, 480, script)
        videos = score_formats(tmp, frames)
        print(f"process start, decoding, scoring and report included; best of {repeats} runs; 'others': the CPU "
              "seconds other processes used during the fastest run (0: the machine was the command's alone)")
        print(f"{'video':>28} {'MB':>6} {'decode ms/frame':>16} {'wall s':>7} {'x playback':>11} {'CPU s':>6} "
              f"{'others':>7}  target (< {playback:.1f} s wall)")
        for name, path in videos.items():
            with (tmp / "manifest.csv").open("w", newline="") as handle:
                csv.writer(handle).writerows([["id", "video", "actions", "fov_deg"], ["long", path.name, script, 75.0]])
            runs = [time_score(tmp / "manifest.csv", tmp / f"out-{path.stem}-{k}") for k in range(repeats)]
            wall, cpu, others = min(runs)
            decode_ms = 1e3 * min(decode_seconds(path) for _ in range(repeats)) / len(frames)
            print(f"{name:>28} {path.stat().st_size / 1e6:>6.0f} {decode_ms:>16.1f} {wall:>7.1f} "
                  f"{playback / wall:>10.2f}x {cpu:>6.1f} {others:>7.1f}  "
                  f"{'met' if wall < playback else 'NOT met'}")
        setup = min(setup_seconds() for _ in range(repeats))
        report = min(report_seconds(tmp / "out-stored-0") for _ in range(repeats))
        cv2.setNumThreads(1)
        parts = [min(values) for values in zip(*(clip_seconds(frames, script, 75.0) for _ in range(repeats)))]
    print("the scorers' CPU over the clips on one thread (inside the runs above they run side by side, quality in a "
          "second thread):")
    for name, seconds in zip(("camera estimator", "quality scorer"), parts):
        print(f"  {name:>16}: {seconds:.1f} CPU s ({1e3 * seconds / len(frames):.1f} ms per frame)")
    print("the rest of the main thread's path, wall: "
          f"imports, config and scorers {setup:.2f} s (a fresh process); report {report:.2f} s (rebuilt from the "
          "stored video's results folder)")
    print("wall time on a shared machine includes waiting for a core: where others used CPU during a run, its wall "
          "figure is an upper bound")


def load_note() -> str:
    """The machine's load while timing (others may share it): read the times as upper bounds."""
    one, five, _ = os.getloadavg()
    return f"(load average {one:.1f} over 1 min, {five:.1f} over 5, on {os.cpu_count()} cores)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="orderings,costs,score")
    parser.add_argument("--seeds", type=int, default=8, help="videos per synthetic family")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seed of the first video (8 with --seeds 8: the held-out seeds 8-15)")
    parser.add_argument("--families", default=None,
                        help=f"comma-separated; default: {','.join(SCENE_FAMILIES)},texture,real")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-large", action="store_true", help="costs at 160x160 only")
    args = parser.parse_args()
    parts = args.parts.split(",")
    families = args.families.split(",") if args.families else [*SCENE_FAMILIES, "texture", "real"]
    if "orderings" in parts:
        bench_orderings(families, list(range(args.first_seed, args.first_seed + args.seeds)))
    if "costs" in parts:
        bench_costs([(160, 160)] if args.skip_large else [(160, 160), (480, 832)], args.repeats)
    if "score" in parts:
        bench_score(args.repeats)


if __name__ == "__main__":
    main()
