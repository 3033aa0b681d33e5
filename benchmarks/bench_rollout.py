"""Rollout efficiency: wall time of a sample-level group against a clip-level group.

    OMP_NUM_THREADS=2 python -m benchmarks.bench_rollout [--clips 8] [--group 8] [--repeats 3]

For an N-clip episode and G candidates of its last clip (target index N - 1), a clip-level
rollout generates the prefix once and then G candidates: N + G - 1 clip generations. A
sample-level rollout generates G whole videos: N * G. The theoretical ratio is
(N * G) / (N + G - 1) (64 / 15 = 4.27 for N = G = 8). Both rollouts run exactly as the
trainer calls them (``wctrain.rl.rollout``, ``wctrain.experimental.sample_rollout``), on the
shipped tinywm and a wc-mini-sized episode; the best of ``--repeats`` timings is used.
"""

from __future__ import annotations

import argparse
import time

import torch

from wcbench.data.suite import load_suite
from wctrain.config import RLConfig
from wctrain.experimental.sample_rollout import rollout_sample_level
from wctrain.models.tinywm import load_tinywm
from wctrain.rl.episodes import sample_episode
from wctrain.rl.rollout import rollout_clip_level


def best_time(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=8, help="N: clips in the episode (target = the last)")
    parser.add_argument("--group", type=int, default=8, help="G: candidates of the target clip")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--eta", type=float, default=1.0, help="sampler noise, as the trainer's default")
    args = parser.parse_args()

    model = load_tinywm().eval()
    sigmas = model.default_sigmas()
    rl = RLConfig(episode_clips=args.clips, combined_fraction=1.0)
    episode = sample_episode(rl, load_suite("wc-mini"), 0, 0, set())
    target = args.clips - 1
    rollout_clip_level(model, episode, 0, 2, sigmas, torch.Generator().manual_seed(0))  # warm-up

    rows = {}
    for name, fn in (("clip", rollout_clip_level), ("sample", rollout_sample_level)):
        seconds, rollout = best_time(lambda: fn(model, episode, target, args.group, sigmas,
                                                torch.Generator().manual_seed(1), eta=args.eta), args.repeats)
        rows[name] = (seconds, rollout.clip_generations)
        print(f"{name:>6}-level: {rollout.clip_generations:3d} clip generations, {seconds:6.2f} s "
              f"({seconds / rollout.clip_generations * 1000:.0f} ms per clip generation)")
    theory = args.clips * args.group / (args.clips + args.group - 1)
    measured = rows["sample"][0] / rows["clip"][0]
    print(f"sample/clip wall-time ratio {measured:.2f} (theory (N*G)/(N+G-1) = {theory:.2f}; "
          f"N={args.clips}, G={args.group})")


if __name__ == "__main__":
    main()
