"""Quick following probe of a trainable model: mean clip IF and VQ on fixed 61-frame training-style episodes.

    OMP_NUM_THREADS=1 python benchmarks/probe_following.py [EXPORT]

EXPORT: a ``wctrain train`` or ``wctrain pretrain`` export folder (RUN_DIR/final, any model),
or nothing for the shipped tinywm. 12 combined and 6 basic 4-clip episodes (seed 4242,
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
from wctrain.config import RLConfig
from wctrain.episodes import sample_episode
from wctrain.models.registry import load_trained
from wctrain.models.tinywm import load_tinywm
from wctrain.rewards import FollowingReward, QualityReward
from wctrain.rollout import rollout_clip_level


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else None
    model = load_trained(path) if path else load_tinywm()
    suite = load_suite("wc-mini")
    scorers = Scorers(build_estimator("opencv"), build_quality_scorer("default"))
    following, quality = FollowingReward(scorers, fov_deg=suite.fov_deg), QualityReward(scorers)
    results = []
    for track, fraction, episodes in (("combined", 1.0, 12), ("basic", 0.0, 6)):
        rl = RLConfig(combined_fraction=fraction, seed=4242)
        ifs, vqs = [], []
        for index in range(episodes):
            episode = sample_episode(rl, suite, index, 0, set())
            for clip in range(4):
                views = rollout_clip_level(model, episode, clip, 1, model.default_sigmas(),
                                           torch.Generator().manual_seed(index)).views
                ifs += [float(np.mean(values)) for values in following(views)]
                vqs += quality(views)
        results.append(f"{track}: IF {np.mean(ifs):.3f} VQ {np.mean(vqs):.3f}")
    print(path or "shipped tinywm", " ".join(results))


if __name__ == "__main__":
    main()
