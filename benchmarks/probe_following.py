"""Quick following probe of a tinywm: mean clip IF and VQ on fixed 61-frame training-style episodes.

    OMP_NUM_THREADS=1 python benchmarks/probe_following.py [CHECKPOINT]

CHECKPOINT: a ``save_pretrained`` folder, a trainer ``checkpoint.pt`` (its evaluation EMA is
used) or nothing for the shipped model. 12 combined and 6 basic 4-clip episodes (seed 4242,
none of them a training or held-out case), every clip sampled deterministically (Euler, no
exploration) after its own generated prefix and scored with the trainer's rewards. About a
minute on one core; used to compare post-training settings before a full ``wcbench run``.
"""

from __future__ import annotations

import sys

import numpy as np
import torch

from wcbench.pose import build_estimator
from wcbench.scoring.case import Scorers
from wcbench.scoring.quality import build_quality_scorer
from wcbench.suite import load_suite
from wctrain.models.wcbench_adapter import load_tinywm
from wctrain.rewards import FollowingReward, QualityReward
from wctrain.rollout import rollout_clip_level
from wctrain.trainer import RLConfig, TrainerConfig, sample_episode


def load(path: str | None):
    if path and path.endswith(".pt"):
        model = load_tinywm(None)
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=False)["eval_ema"]["shadow"])
        return model.eval()
    return load_tinywm(path).eval()


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else None
    model = load(path)
    suite = load_suite("wc-mini")
    scorers = Scorers(build_estimator("opencv"), build_quality_scorer("default"))
    following, quality = FollowingReward(scorers, fov_deg=suite.fov_deg), QualityReward(scorers)
    results = []
    for track, fraction, episodes in (("combined", 1.0, 12), ("basic", 0.0, 6)):
        cfg = TrainerConfig(rl=RLConfig(combined_fraction=fraction, seed=4242))
        ifs, vqs = [], []
        for index in range(episodes):
            episode = sample_episode(cfg, suite, index, 0, set())
            for clip in range(4):
                views = rollout_clip_level(model, episode, clip, 1, model.default_sigmas(),
                                           torch.Generator().manual_seed(index)).views
                ifs += following(views)
                vqs += quality(views)
        results.append(f"{track}: IF {np.mean(ifs):.3f} VQ {np.mean(vqs):.3f}")
    print(path or "shipped tinywm", " ".join(results))


if __name__ == "__main__":
    main()
