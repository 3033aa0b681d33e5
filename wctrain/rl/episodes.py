"""Training episodes: a fresh script and scene per group and step, never an evaluation case.

Every draw comes from a generator seeded by (seed, step, group), so a resumed run repeats
exactly what an uninterrupted one would do, and N processes with one group each draw what one
process draws with N groups. With ``data.trajectories``, a share of the scripts are WorldPlay
pose trajectories converted by the benchmark's rule (:mod:`wctrain.rl.trajectories`).
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch

from wcbench.core.actions import Script, parse_script
from wcbench.data.suite import Suite, generate_script
from wcbench.data.scenes.packs import synthetic_world
from wctrain.config import RLConfig
from wctrain.rl.curriculum import clip_labels, episode_weights
from wctrain.rl.rollout import Episode
from wctrain.rl.trajectories import TrajectoryMix


def derive_seed(*parts: int) -> int:
    """A 64-bit seed from integers (a hash, so nearby inputs give unrelated streams)."""
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "little")


def step_generator(seed: int, step: int, group: int, stream: int) -> torch.Generator:
    """The CPU generator of one group's ``stream`` (1: rollouts, 2: the loss) at ``step``."""
    return torch.Generator().manual_seed(derive_seed(seed, step, group, stream))


def draw_script(rng: np.random.Generator, rl: RLConfig, suite: Suite, mix: TrajectoryMix | None) -> Script:
    """One episode's script: a pose trajectory's (a ``mix.share`` of episodes) or a generated one
    (the combined track for ``rl.combined_fraction`` of those). Without ``mix`` no draw is spent
    on trajectories: the episodes are those of the generated scripts alone."""
    script = mix.draw(rng) if mix is not None else None
    if script is not None:
        return script
    track = "combined" if rng.random() < rl.combined_fraction else "basic"
    return parse_script(generate_script(rng, track, 4 * rl.episode_clips - 1, suite.step_degrees,
                                        tuple(rl.segment_steps)))


def sample_episode(rl: RLConfig, suite: Suite, step: int, group: int, held_out: set[int],
                   label_accuracy: np.ndarray | None = None, clip: int = 0,
                   mix: TrajectoryMix | None = None) -> Episode:
    """The training case of one group: a fresh script and scene, never one of the eval cases.

    With ``rl.focus_candidates`` > 1 (and ``label_accuracy``), the script is drawn from that
    many candidates, weighted towards those whose target clip ``clip`` commands the labels
    the policy follows worst (:mod:`wctrain.rl.curriculum`); not with ``rl.episode_pool``, whose
    episodes stay fixed. ``mix``: pose trajectories a share of the scripts come from.
    """
    draw = step % rl.episode_pool if rl.episode_pool else step
    rng = np.random.default_rng(derive_seed(rl.seed, draw, group))
    focused = label_accuracy is not None and not rl.episode_pool
    scripts = [draw_script(rng, rl, suite, mix) for _ in range(rl.focus_candidates if focused else 1)]
    script = scripts[0]
    if len(scripts) > 1:
        weights = episode_weights(label_accuracy, [clip_labels(s, clip) for s in scripts], rl.focus_floor,
                                  rl.group_size)
        script = scripts[int(rng.choice(len(scripts), p=weights))]
    scene_seed = int(rng.integers(2**31))
    while scene_seed in held_out:
        scene_seed = int(rng.integers(2**31))
    world = synthetic_world(suite, script, scene_seed)
    return Episode(world.image, script, world.prompt)
