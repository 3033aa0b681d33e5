"""Which of tinywm's weights can express strafing while yawing, given the right data?

    OMP_NUM_THREADS=1 python benchmarks/bench_trainable_capacity.py [--sets emb proj film all] [--steps 300]

The shipped tinywm strafes without turning when told to do both (held-out IF 0.00-0.16 on the
four left/right-while-yawing labels), and post-training that trains the action-embedding table
alone did not change that. This asks whether it could: for each trainable set, a copy of the
shipped model is trained by plain supervised flow matching (the pretraining loss) on 48
rendered trajectories made only of those four labels, then rolled out (8 candidates of clip 1,
ancestral sampler, no exploration) on the 8 ``strafe-yaw`` episodes of
``bench_exploration.py`` and scored with the trainer's IF reward. A set that stays near 0 here
cannot be taught the motion by RL either, whatever the reward. About 4 minutes per set on one
core (the shared weights' backward pass makes ``film`` and ``all`` slower).

Sets: ``emb`` the action-embedding table; ``proj`` + the action projection MLP; ``film`` +
every block's FiLM projection; ``all`` every weight. lr 1e-2 for the table, 1e-3 for the rest
(``all``: 3e-4 everywhere), Adam, batch 8 windows of 4 latents.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from bench_exploration import STRAFE_YAW, episodes
from wcbench.actions import Script, Segment, label_name
from wcbench.pose import build_estimator
from wcbench.scoring.case import Scorers
from wcbench.scoring.quality import build_quality_scorer
from wcbench.suite import load_suite
from wctrain.models.tinywm import load_tinywm
from wctrain.pretrain import (FRAMES_PER_LATENT, TrajectoryData, flow_matching_loss, render_latent_trajectory,
                              sample_batch)
from wctrain.rewards import FollowingReward
from wctrain.rollout import rollout_clip_level
from wctrain.trainable import optimizer_groups, select_trainable

SETS = {"emb": ["action_embedding"], "proj": ["action_embedding", "action_proj"],
        "film": ["action_embedding", "action_proj", "cond_emb_proj"], "all": None}
NUM_LATENTS = 9  # start latent + 8 steps per training trajectory


def strafe_yaw_data(suite, count: int, seed: int = 0) -> TrajectoryData:
    """``count`` trajectories of four segments, each one of the four strafe-while-yawing labels."""
    rng = np.random.default_rng(seed)
    frames, actions = [], []
    for _ in range(count):
        script = Script(tuple(Segment(STRAFE_YAW[int(rng.integers(4))], int(rng.integers(2, 6))) for _ in range(4)))
        aligned, signs = render_latent_trajectory(script, int(rng.integers(2**31)), suite, (64, 64), 1.5)
        frames.append(aligned[:FRAMES_PER_LATENT * NUM_LATENTS])
        actions.append(signs[:NUM_LATENTS])
    return TrajectoryData(np.stack(frames), np.stack(actions), np.array(["combined"] * count))


def train_set(data: TrajectoryData, paths: list[str] | None, steps: int):
    """A copy of the shipped model with only the modules ``paths`` (None: all) trained on ``data``."""
    model = load_tinywm().train()
    select_trainable(model, paths)
    lr, shared_lr = (1e-2, 1e-3) if paths else (3e-4, 3e-4)
    optimizer = torch.optim.Adam(optimizer_groups(model, lr, shared_lr))
    rng, generator = np.random.default_rng(1), torch.Generator().manual_seed(0)
    for _ in range(steps):
        loss = flow_matching_loss(model, sample_batch(data, rng, 8, 4, 1), generator, 0.05, 0.5, 1.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    suite = load_suite("wc-mini")
    data = strafe_yaw_data(suite, 48)
    reward = FollowingReward(Scorers(build_estimator("opencv"), build_quality_scorer("default")),
                             fov_deg=suite.fov_deg)
    cases = episodes("strafe-yaw", 8, suite)
    for name in args.sets:
        start = time.perf_counter()
        model = train_set(data, SETS[name], args.steps)
        per_label = {}
        with torch.no_grad():
            for step, (episode, clip) in enumerate(cases):
                rollout = rollout_clip_level(model, episode, clip, 8, model.default_sigmas(),
                                             torch.Generator().manual_seed(step), eta=1.0)
                per_label.setdefault(step % 4, []).append(np.mean(reward(rollout.views)))
        cells = ", ".join(f"{label_name(STRAFE_YAW[k].label)} {np.mean(v):.2f}" for k, v in sorted(per_label.items()))
        print(f"{name:5s} ({args.steps} steps, {time.perf_counter() - start:.0f} s): {cells}", flush=True)


if __name__ == "__main__":
    main()
