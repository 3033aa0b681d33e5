"""Within-group IF spread of tinywm's rollouts: how many groups give RL a following signal.

    OMP_NUM_THREADS=1 python benchmarks/bench_exploration.py [--groups 16] [--eta 0 1 1] [--explore 0 0 1]

For each (eta, explore) setting, the same ``--groups`` combined-track training episodes (target
clip cycling 0..3) are rolled out at clip level with G = 8 candidates exactly as the trainer
does, and each candidate is scored with the trainer's IF reward. Prints the share of groups
whose 8 candidates do not all score the same (a group without spread has advantage 0), the
mean IF and the mean of each group's best IF.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from wcbench.pose import build_estimator
from wcbench.scoring.case import Scorers
from wcbench.scoring.quality import build_quality_scorer
from wcbench.suite import load_suite
from wctrain.models.wcbench_adapter import load_tinywm
from wctrain.rewards import FollowingReward
from wctrain.rollout import rollout_clip_level
from wctrain.trainer import RLConfig, TrainerConfig, sample_episode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=16)
    parser.add_argument("--eta", type=float, nargs="+", default=[0.0, 1.0, 1.0])
    parser.add_argument("--explore", type=float, nargs="+", default=[0.0, 0.0, 1.0])
    args = parser.parse_args()
    if len(args.eta) != len(args.explore):
        parser.error("--eta and --explore need one value per setting each")

    model = load_tinywm(None).eval()
    suite = load_suite("wc-mini")
    reward = FollowingReward(Scorers(build_estimator("opencv"), build_quality_scorer("default")),
                             fov_deg=suite.fov_deg)
    cfg = TrainerConfig(rl=RLConfig(combined_fraction=1.0, seed=7))
    for eta, explore in zip(args.eta, args.explore):
        spread, means, best = [], [], []
        for step in range(args.groups):
            episode = sample_episode(cfg, suite, step, 0, set())
            rollout = rollout_clip_level(model, episode, step % 4, 8, model.default_sigmas(),
                                         torch.Generator().manual_seed(step), eta=eta, explore=explore)
            values = np.array(reward(rollout.views))
            spread.append(values.std() > 0)
            means.append(values.mean())
            best.append(values.max())
        print(f"eta {eta:.1f} explore {explore:.1f}: groups with spread {np.mean(spread):.0%}, "
              f"mean IF {np.mean(means):.3f}, mean best-of-8 IF {np.mean(best):.3f}", flush=True)


if __name__ == "__main__":
    main()
