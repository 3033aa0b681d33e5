"""GPU check of the HPSv3 quality scorers on real weights (run by benchmarks/gpu_check.sh).

    python -m benchmarks.check_hpsv3 --base /models/Qwen2-VL-7B-Instruct --checkpoint /models/HPSv3.safetensors

Renders a 17-frame 480x832 oracle video, scores it and a copy whose frames after the start
image are blurred (Gaussian sigma 3, as a world model that loses detail would make) with
``hpsv3`` and ``hpsv3-worldcompass``, and prints per-frame values, seconds per scored frame and
peak GPU memory. Exits 1 if, under either definition, the blurred copy does not score below the
clean video. Needs the [hpsv3] extra and a CUDA GPU; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import sys
import time

import cv2
import numpy as np
import torch

from wcbench.core.actions import parse_script
from wcbench.core.camera import StepSizes, intrinsics_from_fov, script_trajectory
from wcbench.data.scenes.synthetic import build_scene, render_frames
from wcbench.scoring.quality import build_quality_scorer


def render(width: int = 832, height: int = 480) -> np.ndarray:
    poses = script_trajectory(parse_script("w+left-4"), StepSizes(0.05, 0.75))
    scene = build_scene(7, poses[:, :3, 3])
    return render_frames(scene, poses, intrinsics_from_fov(width, height, 75.0), width, height)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="local Qwen2-VL-7B-Instruct folder")
    parser.add_argument("--checkpoint", required=True, help="local HPSv3.safetensors")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    clean = render()
    blurred = np.stack([clean[0]] + [cv2.GaussianBlur(frame, (0, 0), 3.0) for frame in clean[1:]])
    options = {"base_model_path": args.base, "checkpoint_path": args.checkpoint, "device": args.device}
    failures = []
    for name in ("hpsv3", "hpsv3-worldcompass"):
        scorer = build_quality_scorer(name, **options)
        means = {}
        for label, frames in (("clean", clean), ("blur3", blurred)):
            start = time.perf_counter()
            result = scorer.score(frames, prompt="a room with textured walls and boxes")
            seconds = time.perf_counter() - start
            scored = int(sum(np.isfinite(v).sum() for k, v in result.raw.items() if k != "hpsv3_caption"))
            means[label] = float(result.per_frame[1:].mean())
            print(f"{name:>20} {label:>5}: mean vq {means[label]:+.3f}  per frame {np.round(result.per_frame, 3)}  "
                  f"{seconds / max(scored, 1):.2f} s per scored frame")
        if means["blur3"] >= means["clean"]:
            failures.append(f"{name}: blurred {means['blur3']:.3f} >= clean {means['clean']:.3f}")
    if torch.cuda.is_available():
        print(f"peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
    for failure in failures:
        print("FAIL", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
