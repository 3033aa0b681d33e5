"""Where one video's scoring CPU goes: decoding, the camera estimate and the quality scorer,
each run alone on one thread over the clips ``wcbench score`` scores, in CPU seconds (which
waiting for a core does not add to, so they hold on a shared machine).

    .venv/bin/python -m benchmarks.profile_stages                       # a textured 381-frame 832x480 mp4
    .venv/bin/python -m benchmarks.profile_stages --video V.mp4 --script "right-95"

The default video is bench_jobs.py's: a blurred random texture panned back and forth with moves
between (mp4), the kind of content where tracking finds features everywhere.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from wcbench.cli.common import build_scorers, load_config
from wcbench.core.actions import clip_step_ranges, parse_script
from wcbench.core.video import VideoSource
from wcbench.scoring.case import clip_view, score_clip_following, score_clip_quality

from benchmarks.bench_memory import make_script, write_video


def cpu_seconds(work) -> tuple[float, object]:
    started = time.process_time()
    result = work()
    return time.process_time() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--video", default=None, help="an mp4/avi [a generated textured pan]")
    parser.add_argument("--script", default=None, help="its action script [bench_memory's pattern]")
    parser.add_argument("--frames", type=int, default=381)
    args = parser.parse_args()
    cv2.setNumThreads(1)
    with tempfile.TemporaryDirectory(prefix="profile_stages_") as tmp:
        video = Path(args.video) if args.video else Path(tmp) / "pan.mp4"
        if not args.video:
            write_video(video, args.frames, 832, 480, seed=0, fps=24)
        decode_s, frames = cpu_seconds(lambda: np.stack(list(VideoSource(video))))
    script = parse_script(args.script or make_script(len(frames)))
    scorers = build_scorers(load_config([]))
    clips = range(len(clip_step_ranges(script.num_steps, 4)))
    views = [clip_view(frames, script, clip) for clip in clips]
    estimate_s, _ = cpu_seconds(lambda: [score_clip_following(view, scorers) for view in views])
    quality_s, _ = cpu_seconds(lambda: [score_clip_quality(view, scorers) for view in views])
    total = decode_s + estimate_s + quality_s
    print(f"{len(frames)} frames {frames.shape[2]}x{frames.shape[1]}, one OpenCV thread, CPU seconds:")
    for name, seconds in (("decode", decode_s), ("camera estimate", estimate_s), ("quality", quality_s)):
        print(f"  {name:16s} {seconds:6.2f} s  {1000 * seconds / len(frames):5.1f} ms a frame  {seconds / total:4.0%}")
    print(f"  {'total':16s} {total:6.2f} s  = {total / (len(frames) / 24):.2f}x playback at 24 frames/s on one core")


if __name__ == "__main__":
    main()
