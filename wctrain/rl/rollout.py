"""Rollouts: make G candidate versions of a target clip and what the loss and rewards need.

Clip level (WorldCompass): generate the prefix clips 0..n-1 once with the old policy, then G
candidates of clip n from the same prefix with independent noise: n + G clip generations.
(The paper's sample-level ablation, ``rl.rollout=sample``, lives in
:mod:`wctrain.experimental.sample_rollout` and builds on the functions here.)

``eta`` > 0 samples with the flow's ancestral sampler (more spread within a group; see
:func:`wctrain.models.sampling.stochastic_step`); 0 is the deterministic Euler sampler that
``wcbench run`` uses. An :class:`~wctrain.rl.exploration.Exploration` perturbs each candidate's
action conditioning while its target clip is sampled (models that expose it); prefixes are
never perturbed.

Frames reach the rewards exactly as ``wcbench run`` shows them: decoded, converted to uint8
and resized to the output size with the adapter's own function. Latents stay on the model's
device; random draws come from CPU generators (the same on every device).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from wcbench.core.actions import Script, clip_step_actions, script_from_steps
from wcbench.scoring.case import ClipView
from wctrain.models.base import actions_to_tensor, frames_to_tensor, sample_clip, tensor_to_frames
from wctrain.models.wcbench_adapter import resize_frames, to_model_size
from wctrain.rl.exploration import Exploration, exploring
from wctrain.rl.schedule import count_clip_generations


@dataclass
class Episode:
    """A training case: start image (uint8, output size), its script and caption."""

    image: np.ndarray
    script: Script
    prompt: str = ""


@dataclass
class GroupRollout:
    """One group: G candidates of target clip ``clip`` and the context they share (or not)."""

    clip: int
    context: torch.Tensor      # (G, P, ...) latents each candidate was conditioned on
    candidates: torch.Tensor   # (G, L, ...) sampled clean latents of the target clip
    actions: torch.Tensor      # (G, L * frames_per_latent, 4) per-frame action signs
    views: list[ClipView]      # what the rewards score, one per candidate
    clip_generations: int


def _start(model, image: np.ndarray) -> tuple[torch.Tensor, np.ndarray]:
    """Start latent and frame 0 exactly as the wcbench adapter makes them."""
    small = to_model_size(image, model)
    pixels = frames_to_tensor(small[None]).to(next(model.parameters()).device)
    return model.start_latent(pixels), resize_frames(small[None], output_size(image))[0]


def output_size(image: np.ndarray) -> tuple[int, int]:
    """(width, height) of the frames the rewards see: the start image's."""
    return image.shape[1], image.shape[0]


def clip_actions(model, script: Script, clip: int, latents_per_clip: int) -> tuple[torch.Tensor, list]:
    """Clip ``clip``'s per-frame action signs (1, L * frames_per_latent, 4) and its per-latent actions."""
    actions = clip_step_actions(script, clip, latents_per_clip)
    return actions_to_tensor(actions, model.frames_per_latent)[None], actions


def decode_frames(model, latents: torch.Tensor, size: tuple[int, int]) -> list[np.ndarray]:
    """Each video of ``latents`` (B, L, ...) decoded to uint8 frames at ``size``, as ``wcbench run`` shows them."""
    frames = model.decode(latents)  # (B, T, 3, h, w)
    return [resize_frames(tensor_to_frames(video), size) for video in frames]


@torch.no_grad()
def generate_prefix(model, episode: Episode, clip: int, sigmas: torch.Tensor, generator: torch.Generator,
                    latents_per_clip: int = 4, eta: float = 0.0) -> tuple[torch.Tensor, np.ndarray, np.ndarray]:
    """Clips 0..clip-1 generated once: (context latents, frame 0, last frame before ``clip``)."""
    size = output_size(episode.image)
    history, frame0 = _start(model, episode.image)
    last = frame0
    keep = model.context_latents
    for index in range(clip):
        actions, _ = clip_actions(model, episode.script, index, latents_per_clip)
        latents = sample_clip(model, history, actions, sigmas, generator, eta=eta)
        history = torch.cat([history, latents], dim=1)[:, -keep:]
        last = decode_frames(model, latents[:, -1:], size)[0][-1]
    return history, frame0, last


@torch.no_grad()
def rollout_clip_level(model, episode: Episode, clip: int, group_size: int, sigmas: torch.Tensor,
                       generator: torch.Generator, latents_per_clip: int = 4, eta: float = 0.0,
                       exploration: Exploration = Exploration()) -> GroupRollout:
    """Shared prefix (generated once), then ``group_size`` candidates of clip ``clip``."""
    size = output_size(episode.image)
    history, frame0, last = generate_prefix(model, episode, clip, sigmas, generator, latents_per_clip, eta)
    actions, step_actions = clip_actions(model, episode.script, clip, latents_per_clip)
    context = history.expand(group_size, *history.shape[1:]).contiguous()
    actions = actions.expand(group_size, -1, -1).contiguous()
    with exploring(model, exploration, group_size, generator):
        candidates = sample_clip(model, context, actions, sigmas, generator, eta=eta)
    views = [clip_view(frame0, last, frames, step_actions) for frames in decode_frames(model, candidates, size)]
    return GroupRollout(clip, context, candidates, actions, views,
                        count_clip_generations(clip, group_size, rollout="clip"))


def clip_view(frame0: np.ndarray, last: np.ndarray, clip_frames: np.ndarray, step_actions: list) -> ClipView:
    """What the rewards score of one candidate: the frame before the clip, the clip, its actions."""
    return ClipView(frames=np.concatenate([last[None], clip_frames]), script=script_from_steps(step_actions),
                    reference=frame0)
