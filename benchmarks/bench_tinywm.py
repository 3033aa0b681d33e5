"""tinywm speed on this machine: generation frames/s and the cost of one RL group.

    OMP_NUM_THREADS=2 python -m benchmarks.bench_tinywm [--checkpoint DIR] [--group 8] [--target-clip 4]

1. streaming generation through the wcbench adapter on a wc-mini short case (125 frames,
   frames upsampled to the suite's 160x160): frames per second, latency per clip;
2. one clip-level group as the trainer makes it: the prefix clips 0..n-1 generated once
   (batch 1), then G candidate target clips n with independent noise (batch G);
   prints both times and their sum.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from wcbench.core.actions import clip_step_ranges
from wcbench.data.suite import load_suite
from wcbench.run.runner import generate_case
from wctrain.models.base import actions_to_tensor, frames_to_tensor, sample_clip
from wctrain.models.wcbench_adapter import TinyWMWorldModel, load_tinywm


def bench_streaming(checkpoint: str | None, num_inference_steps: int | None) -> None:
    suite = load_suite("wc-mini")
    case = next(c for c in suite.cases if c.horizon == "short")
    model = TinyWMWorldModel(checkpoint, num_inference_steps=num_inference_steps)
    generate_case(model, suite, case, seed=0)  # warm-up (oneDNN kernel selection)
    video, timing, _ = generate_case(model, suite, case, seed=1)
    latency = np.array(timing["clip_latency_s"])
    print(f"streaming ({case.id}, {len(video)} frames at {suite.width}x{suite.height}, "
          f"{len(model.sigmas) - 1} Euler steps/latent): {timing['fps']:.1f} frames/s, "
          f"clip latency mean {latency.mean():.3f}s (max {latency.max():.3f}s)")


@torch.no_grad()
def bench_group(checkpoint: str | None, group: int, target_clip: int, num_inference_steps: int | None,
                repeats: int) -> None:
    suite = load_suite("wc-mini")
    case = next(c for c in suite.cases if c.horizon == "short")
    model = load_tinywm(checkpoint or "shipped")
    sigmas = model.default_sigmas(num_inference_steps)
    steps = case.parsed().step_actions()
    ranges = clip_step_ranges(len(steps), suite.latents_per_clip)
    image = frames_to_tensor(np.zeros((1, *model.resolution[::-1], 3), np.uint8))
    prefix_times, group_times = [], []
    for repeat in range(repeats + 1):  # the first round warms up
        generator = torch.Generator().manual_seed(repeat)
        started = time.perf_counter()
        history = model.start_latent(image)
        for clip in range(target_clip):
            actions = actions_to_tensor([steps[i - 1] for i in ranges[clip]])[None]
            history = torch.cat([history, sample_clip(model, history, actions, sigmas, generator)], dim=1)
        prefix_done = time.perf_counter()
        actions = actions_to_tensor([steps[i - 1] for i in ranges[target_clip]])[None].expand(group, -1, -1)
        candidates = sample_clip(model, history[:, -model.context_latents:].expand(group, -1, -1, -1, -1),
                                 actions, sigmas, generator)
        model.decode(candidates)
        if repeat:
            prefix_times.append(prefix_done - started)
            group_times.append(time.perf_counter() - prefix_done)
    prefix, candidates = float(np.median(prefix_times)), float(np.median(group_times))
    print(f"group (prefix clips 0..{target_clip - 1} once + G={group} candidates of clip {target_clip}, "
          f"{len(sigmas) - 1} Euler steps/latent): prefix {prefix:.3f}s + candidates {candidates:.3f}s "
          f"= {prefix + candidates:.3f}s (median of {repeats})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default=None, help="save_pretrained folder (default: the shipped one)")
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--target-clip", type=int, default=4)
    parser.add_argument("--num-inference-steps", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads "
          f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')})")
    bench_streaming(args.checkpoint, args.num_inference_steps)
    bench_group(args.checkpoint, args.group, args.target_clip, args.num_inference_steps, args.repeats)


if __name__ == "__main__":
    main()
