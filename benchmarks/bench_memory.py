"""Peak memory of scoring a long video: `wcbench score` streams decoding, pose estimation and
quality clip by clip, so its peak RSS must not grow with the video's length.

    .venv/bin/python -m benchmarks.bench_memory                  # 10,001 frames at 832x480 (and 1,001 to compare)
    .venv/bin/python -m benchmarks.bench_memory --frames 2001 --compare 201 --size 416 240   # quicker

Writes a panning mp4 (4L-3 frames, a script of alternating pans and moves) and scores it through
the command line (default settings, or the ``key=value`` settings given), each length in a
fresh process whose own peak RSS (``ru_maxrss``) is printed, as soon as it is measured, beside
the memory the whole video would take as one array. Figures and the command are in docs/runs.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TARGET_MB = 2048


def make_script(num_frames: int) -> str:
    """A script of 4L-3 = ``num_frames`` frames: pans right and left with moves between."""
    steps = (num_frames + 3) // 4 - 1
    pattern = ["right-6", "d-4", "left-6", "w-4"]
    segments, total, index = [], 0, 0
    while total < steps:
        action, count = pattern[index % len(pattern)].split("-")
        count = min(int(count), steps - total)
        segments.append(f"{action}-{count}")
        total += count
        index += 1
    return ", ".join(segments)


def write_video(path: Path, num_frames: int, width: int, height: int, seed: int = 0, fps: int = 16) -> None:
    """A blurred random texture panned 2 px a frame, back and forth (mp4, as most generators write)."""
    rng = np.random.default_rng(seed)
    span = 240
    texture = cv2.GaussianBlur((rng.random((height, width + span, 3)) * 255).astype(np.uint8), (0, 0), 2.0)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (width, height))
    for t in range(num_frames):
        offset = (2 * t) % (2 * span)
        offset = offset if offset < span else 2 * span - offset
        writer.write(np.ascontiguousarray(texture[:, offset:offset + width]))
    writer.release()


def score_once(video: Path, num_frames: int, out_dir: Path, settings: list[str]) -> None:
    """Child process: score one video through the CLI, then print its own peak RSS."""
    from wcbench.cli import main

    manifest = out_dir / "manifest.csv"
    manifest.write_text(f'id,video,actions\nlong,{video},"{make_script(num_frames)}"\n')
    started = time.perf_counter()
    code = main(["score", "--manifest", str(manifest), "--out", str(out_dir / "results"), *settings])
    seconds = time.perf_counter() - started
    record = json.loads((out_dir / "results" / "cases" / "long.json").read_text())
    print(json.dumps({"exit": code, "status": record["status"], "error": record.get("error"), "seconds": seconds,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}))


def measure(num_frames: int, width: int, height: int, settings: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        video = Path(tmp) / "long.mp4"
        write_video(video, num_frames, width, height)
        child = subprocess.run([sys.executable, __file__, "--child", str(video), "--frames", str(num_frames),
                                "--out", tmp, *settings], capture_output=True, text=True, cwd=ROOT)
        if child.returncode != 0:
            raise SystemExit(f"child failed:\n{child.stderr[-3000:]}")
        result = json.loads(child.stdout.strip().splitlines()[-1])
        result["video_mb"] = video.stat().st_size / 2**20
    result.update(frames=num_frames, whole_array_mb=num_frames * width * height * 3 / 2**20)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=10001, help="frames of the long video (4L-3) [10001]")
    parser.add_argument("--compare", type=int, default=1001, help="frames of the short one to compare [1001]")
    parser.add_argument("--size", type=int, nargs=2, default=(832, 480), metavar=("W", "H"))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    parser.add_argument("settings", nargs="*",
                        help="settings for `wcbench score`, e.g. quality_options.spatial_stride=8")
    args = parser.parse_args()
    if args.child:
        score_once(Path(args.child), args.frames, Path(args.out), args.settings)
        return
    width, height = args.size
    print(f"wcbench score {' '.join(args.settings) or '(default settings)'}, {width}x{height} mp4, "
          "one process per length", flush=True)
    print(f"{'frames':>7} {'whole video as one array':>25} {'peak RSS':>10} {'time':>9} {'frames/s':>9}  status",
          flush=True)
    rows = []
    for num_frames in (args.compare, args.frames):
        row = measure(num_frames, width, height, args.settings)
        rows.append(row)
        print(f"{row['frames']:>7} {row['whole_array_mb']:>22.0f} MB {row['peak_rss_mb']:>7.0f} MB "
              f"{row['seconds']:>8.0f}s {row['frames'] / row['seconds']:>9.1f}  {row['status']} {row['error'] or ''}",
              flush=True)
    growth = rows[1]["peak_rss_mb"] - rows[0]["peak_rss_mb"]
    print(f"peak RSS grows by {growth:.0f} MB from {rows[0]['frames']} to {rows[1]['frames']} frames; "
          f"target: under {TARGET_MB} MB at {rows[1]['frames']} -> "
          f"{'met' if rows[1]['peak_rss_mb'] < TARGET_MB else 'NOT met'}")


if __name__ == "__main__":
    main()
