"""``rl.rollout=sample``: the paper's sample-level rollout, the ablation of the clip-level one
(:func:`wctrain.rl.rollout.rollout_clip_level`).

G whole videos up to clip n, each with its own prefix, scored at the same clip:
G * (n + 1) clip generations, against n + G for the clip level. Frames, views and random
draws are made exactly as there, with its functions.
"""

from __future__ import annotations

import torch

from wctrain.models.base import sample_clip
from wctrain.rl.exploration import Exploration, exploring
from wctrain.rl.rollout import (Episode, GroupRollout, clip_actions, clip_view, decode_frames, generate_prefix,
                                output_size)
from wctrain.rl.schedule import count_clip_generations


@torch.no_grad()
def rollout_sample_level(model, episode: Episode, clip: int, group_size: int, sigmas: torch.Tensor,
                         generator: torch.Generator, latents_per_clip: int = 4, eta: float = 0.0,
                         exploration: Exploration = Exploration()) -> GroupRollout:
    """``group_size`` independent videos up to clip ``clip``, each with its own prefix."""
    size = output_size(episode.image)
    contexts, candidates, views = [], [], []
    actions, step_actions = clip_actions(model, episode.script, clip, latents_per_clip)
    for _ in range(group_size):
        history, frame0, last = generate_prefix(model, episode, clip, sigmas, generator, latents_per_clip, eta)
        with exploring(model, exploration, 1, generator):
            latents = sample_clip(model, history, actions, sigmas, generator, eta=eta)
        contexts.append(history)
        candidates.append(latents)
        views.append(clip_view(frame0, last, decode_frames(model, latents, size)[0], step_actions))
    return GroupRollout(clip, torch.cat(contexts), torch.cat(candidates),
                        actions.expand(group_size, -1, -1).contiguous(), views,
                        count_clip_generations(clip, group_size, rollout="sample"))
