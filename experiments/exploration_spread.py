"""Within-group IF spread of tinywm's rollouts: how many groups give RL a following signal.

    OMP_NUM_THREADS=1 python -m experiments.exploration_spread [--groups 16] [--eta 0 1 1] [--explore 0 0 1]
        [--episodes training|strafe-yaw]

For each (eta, explore) setting, the same ``--groups`` episodes are rolled out at clip
level with G = 8 candidates exactly as the trainer does, and each candidate is scored with
the trainer's IF reward. ``training``: combined-track training episodes, target clip cycling
0..3. ``strafe-yaw``: one label held for the whole clip, cycling over the four labels tinywm
fails most (left/right while yawing left/right), target clip 1. Prints the share of groups
whose 8 candidates do not all score the same (a group without spread has advantage 0), the
share of groups where at least one candidate's latent hits its full label, the mean IF and
the mean of each group's best IF.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from wcbench.core.actions import script_from_steps
from wcbench.data.suite import load_suite
from wcbench.pose import build_estimator
from wcbench.data.scenes.packs import synthetic_world
from wcbench.scoring.case import Scorers
from wcbench.scoring.quality import build_quality_scorer
from wctrain.config import RLConfig
from wctrain.models.tinywm import load_tinywm
from wctrain.rl.episodes import sample_episode
from wctrain.rl.exploration import Exploration
from wctrain.rl.rewards import FollowingReward
from wctrain.rl.rollout import Episode, rollout_clip_level

from experiments.per_label_following import STRAFE_YAW

def episodes(kind: str, count: int, suite) -> list[tuple[Episode, int]]:
    """(episode, target clip) pairs of one kind, the same for every setting."""
    if kind == "training":
        rl = RLConfig(combined_fraction=1.0, seed=7)
        return [(sample_episode(rl, suite, step, 0, set()), step % 4) for step in range(count)]
    pairs = []
    for index in range(count):
        script = script_from_steps([STRAFE_YAW[index % len(STRAFE_YAW)]] * 7)
        world = synthetic_world(suite, script, 555 + index)
        pairs.append((Episode(world.image, script, world.prompt), 1))
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=16)
    parser.add_argument("--eta", type=float, nargs="+", default=[0.0, 1.0, 1.0])
    parser.add_argument("--explore", type=float, nargs="+", default=[0.0, 0.0, 1.0])
    parser.add_argument("--episodes", choices=["training", "strafe-yaw"], default="training")
    args = parser.parse_args()
    if len(args.eta) != len(args.explore):
        parser.error("--eta and --explore need one value per setting each")

    model = load_tinywm().eval()
    suite = load_suite("wc-mini")
    reward = FollowingReward(Scorers(build_estimator("opencv"), build_quality_scorer("default")),
                             fov_deg=suite.fov_deg)
    cases = episodes(args.episodes, args.groups, suite)
    for eta, explore in zip(args.eta, args.explore):
        spread, any_hit, means, best = [], [], [], []
        for step, (episode, clip) in enumerate(cases):
            rollout = rollout_clip_level(model, episode, clip, 8, model.default_sigmas(),
                                         torch.Generator().manual_seed(step), eta=eta,
                                         exploration=Exploration(explore))
            latents = np.array(reward(rollout.views))  # (8, L)
            values = latents.mean(axis=1)
            spread.append(values.std() > 0)
            any_hit.append(latents.max(axis=0).mean())
            means.append(values.mean())
            best.append(values.max())
        print(f"eta {eta:.1f} explore {explore:.1f}: groups with spread {np.mean(spread):.0%}, "
              f"latents hit by some candidate {np.mean(any_hit):.0%}, mean IF {np.mean(means):.3f}, "
              f"mean best-of-8 IF {np.mean(best):.3f}", flush=True)


if __name__ == "__main__":
    main()
