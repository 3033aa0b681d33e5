"""A world model written outside wctrain that follows only the documented protocol
(wctrain/models/base.py, docs/wctrain.md): a plain ``nn.Module`` (no diffusers), its own latent
format (4 frames averaged over 2 x 2 pixels and stacked as 12 channels), whole-clip denoising
(``latents_per_denoise = None``), no ``action_embedding`` (so no exploration), random weights.

``wctrain train model=outside_world_model:build`` with this folder on PYTHONPATH.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class OutsideWorldModel(nn.Module):
    frames_per_latent = 4
    latents_per_denoise = None
    context_latents = 2
    resolution = (32, 32)

    def __init__(self, hidden: int = 16):
        super().__init__()
        channels = 3 * self.frames_per_latent
        self.conv_in = nn.Conv2d(2 * channels, hidden, 3, padding=1)
        self.condition = nn.Linear(1 + 4, 2 * hidden)
        self.conv_out = nn.Conv2d(hidden, channels, 3, padding=1)

    def encode(self, frames: torch.Tensor) -> torch.Tensor:
        batch, num_frames = frames.shape[:2]
        pooled = F.avg_pool2d(2 * frames.flatten(0, 1) - 1, 2)
        return pooled.reshape(batch, num_frames // 4, 12, *pooled.shape[-2:])

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        batch, num_latents = latents.shape[:2]
        frames = F.interpolate(latents.flatten(0, 1).reshape(-1, 3, *latents.shape[-2:]), scale_factor=2.0)
        return ((frames + 1) / 2).reshape(batch, num_latents * 4, 3, *frames.shape[-2:])

    def start_latent(self, image: torch.Tensor) -> torch.Tensor:
        return self.encode(image[:, None].expand(-1, 4, -1, -1, -1))

    def build_context(self, prefix: torch.Tensor, clip: torch.Tensor | None = None) -> torch.Tensor:
        if prefix.shape[1] < self.context_latents:
            prefix = torch.cat([prefix[:, :1]] * (self.context_latents - prefix.shape[1]) + [prefix], dim=1)
        return prefix[:, -self.context_latents:]

    def velocity(self, x_t: torch.Tensor, sigma: torch.Tensor, ctx: torch.Tensor,
                 actions: torch.Tensor) -> torch.Tensor:
        batch, num_latents = x_t.shape[:2]
        sigma = sigma[:, None].expand(batch, num_latents) if sigma.dim() == 1 else sigma
        last = ctx[:, -1:].expand(-1, num_latents, -1, -1, -1)
        hidden = self.conv_in(torch.cat([x_t, last], dim=2).flatten(0, 1))
        per_latent = torch.cat([sigma[..., None], actions.reshape(batch, num_latents, 4, 4).mean(dim=2)], dim=-1)
        scale, shift = self.condition(per_latent.flatten(0, 1))[:, :, None, None].chunk(2, dim=1)
        out = self.conv_out(F.silu(hidden * (1 + scale) + shift))
        return out.reshape(x_t.shape)

    def default_sigmas(self, num_inference_steps: int | None = None) -> torch.Tensor:
        return torch.linspace(1.0, 0.0, (num_inference_steps or 3) + 1)


def build(hidden: int = 16) -> OutsideWorldModel:
    return OutsideWorldModel(hidden)


def not_a_world_model() -> nn.Module:
    return nn.Linear(2, 2)
