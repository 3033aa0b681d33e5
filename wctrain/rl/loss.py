"""One group's training loss: NFT on the selected candidates at a random subset of the sampler's
timesteps, with fresh noise, ``v_old`` from the frozen old policy (``rl.loss=rwr``: the
ablation in :mod:`wctrain.experimental.rwr`)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from wctrain.config import RLConfig
from wctrain.experimental.rwr import rwr_loss
from wctrain.models.base import draw_noise
from wctrain.models.sampling import add_noise
from wctrain.rl.nft import nft_loss, subsample_timesteps
from wctrain.rl.rollout import GroupRollout


class VelocityField(nn.Module):
    """The trained model with ``velocity`` as its ``forward``: what ``accelerator.prepare`` wraps,
    so DDP synchronises gradients, FSDP gathers shards and mixed precision applies on the call
    that the loss differentiates (they all act on ``forward``)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        # what FSDP's transformer auto-wrap shards one by one (accelerate reads it from the root)
        self._no_split_modules = getattr(model, "_no_split_modules", None)

    def forward(self, x_t: torch.Tensor, sigma: torch.Tensor, prefix: torch.Tensor, clip: torch.Tensor,
                actions: torch.Tensor) -> torch.Tensor:
        return self.model.velocity(x_t, sigma, self.model.build_context(prefix, clip), actions)


def _repeat(x: torch.Tensor, times: int) -> torch.Tensor:
    return x.repeat(times, *([1] * (x.dim() - 1)))


def group_loss(model: nn.Module, old: nn.Module, rollout: GroupRollout, r: torch.Tensor, selected: np.ndarray,
               sigmas: torch.Tensor, generator: torch.Generator, rl: RLConfig) -> tuple[torch.Tensor, float]:
    """The ``rl.loss`` loss of one group's selected candidates; returns (loss, mean |v_theta - v_old|).

    ``model`` is the prepared :class:`VelocityField`, ``old`` the frozen old policy. ``r`` is
    ``(G,)`` (one per candidate) or ``(G, L)`` (per-latent credit: each latent of a candidate is
    then its own sample of the loss, with its own r and adaptive weight).
    """
    device = rollout.candidates.device
    index = torch.as_tensor(selected)
    x0, prefix = rollout.candidates[index.to(device)], rollout.context[index.to(device)]
    actions = rollout.actions[index].to(device)
    steps = subsample_timesteps(len(sigmas) - 1, rl.timestep_fraction, generator)
    n = len(index)
    # all chosen timesteps in one batch: (len(steps) * n) samples
    sigma = torch.cat([sigmas[int(s)].expand(n) for s in steps]).to(device)
    x0_all, prefix_all, actions_all = (_repeat(x, len(steps)) for x in (x0, prefix, actions))
    r_all = _repeat(r[index], len(steps)).to(device)
    x_t = add_noise(x0_all, draw_noise(tuple(x0_all.shape), generator, x0_all), sigma)
    v_theta = model(x_t, sigma, prefix_all, x0_all, actions_all)
    with torch.no_grad():
        v_old = old.velocity(x_t, sigma, old.build_context(prefix_all, x0_all), actions_all).to(v_theta.dtype)
    if r_all.dim() == 2:
        latents = x0_all.shape[1]
        v_theta, v_old, x_t, x0_all = (x.flatten(0, 1)[:, None] for x in (v_theta, v_old, x_t, x0_all))
        sigma, r_all = sigma.repeat_interleave(latents), r_all.flatten()
    if rl.loss == "rwr":  # the ablation: no old policy in the objective
        loss = rwr_loss(v_theta, x_t, x0_all, sigma, r_all)
    else:
        loss = nft_loss(v_theta, v_old, x_t, x0_all, sigma, r_all, beta=rl.beta)
    return loss.mean(), float((v_theta.detach() - v_old).abs().mean())
