"""What RL post-training needs from a world model: the trainer-side protocol.

A trainable world model denoises latents with flow matching. The trainer
1. encodes the prefix frames (``encode``) and builds a context from them
   (``build_context(prefix, clip=None)``),
2. samples the target clip with the Euler ODE (:func:`sample_clip`), which asks the model for
   ``velocity(x_t, sigma, ctx, actions)``,
3. for the loss, re-evaluates ``velocity`` on a noised copy of the sampled clip with the
   context ``build_context(prefix, clip)``: models that generate a clip latent by latent
   (``latents_per_denoise`` set) take each latent's own clean predecessors from ``clip``
   (teacher forcing, exactly the conditioning the sampler used); models that denoise the
   whole clip jointly ignore it.

Layouts at this boundary: pixel video ``(B, T, 3, H, W)`` float in [0, 1]; latents
``(B, L, C, h, w)`` with ``frames_per_latent`` frames per latent; actions per frame
``(B, T, 4)`` float, the signs (forward, right, yaw, pitch) of :class:`wcbench.actions.Action`.
:func:`frames_to_tensor` / :func:`tensor_to_frames` convert from and to the benchmark's
``(T, H, W, 3)`` uint8, in one place.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from wcbench.actions import FRAMES_PER_LATENT, Action
from wctrain.sampling import euler_step, stochastic_step


@runtime_checkable
class TrainableWorldModel(Protocol):
    """A flow-matching video world model that wctrain can roll out and post-train."""

    frames_per_latent: int  # frames per latent (per latent step of an action script)
    latents_per_denoise: int | None  # latents denoised together; None: the whole clip at once
    resolution: tuple[int, int]  # (width, height) of the frames it makes

    def encode(self, frames: torch.Tensor) -> torch.Tensor:
        """Frames (B, T, 3, H, W) in [0, 1] -> latents (B, T / frames_per_latent, C, h, w)."""

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Latents (B, L, C, h, w) -> frames (B, L * frames_per_latent, 3, H, W) in [0, 1]."""

    def start_latent(self, image: torch.Tensor) -> torch.Tensor:
        """The latent standing for a start image (B, 3, H, W): the first context (B, 1, C, h, w)."""

    def build_context(self, prefix: torch.Tensor, clip: torch.Tensor | None = None) -> Any:
        """Context from the prefix latents (B, P, C, h, w) and, for teacher forcing, the clean clip."""

    def velocity(self, x_t: torch.Tensor, sigma: torch.Tensor, ctx: Any, actions: torch.Tensor) -> torch.Tensor:
        """Flow velocity (noise - x0) for noisy clip latents ``x_t`` (B, L, C, h, w) at ``sigma``
        (B,) or (B, L), given the context and per-frame actions (B, L * frames_per_latent, 4)."""


def sample_clip(model: TrainableWorldModel, prefix: torch.Tensor, actions: torch.Tensor, sigmas: torch.Tensor,
                generator: torch.Generator | None = None, noise: torch.Tensor | None = None,
                eta: float = 0.0) -> torch.Tensor:
    """Sample the clip that follows ``prefix`` latents under per-frame ``actions``.

    Returns latents (B, L, C, h, w) with L = actions.shape[1] / frames_per_latent. ``noise``
    (same shape) replaces fresh noise from ``generator``. Latents are generated
    ``model.latents_per_denoise`` at a time, each group by a full Euler ODE over ``sigmas``
    conditioned on the prefix and the latents already made. ``eta > 0`` takes ancestral steps
    (:func:`wctrain.sampling.stochastic_step`) with fresh noise from ``generator``.
    """
    fpl = model.frames_per_latent
    if actions.shape[1] % fpl:
        raise ValueError(f"actions cover {actions.shape[1]} frames, not a multiple of {fpl} frames per latent")
    num_latents = actions.shape[1] // fpl
    shape = (prefix.shape[0], num_latents) + tuple(prefix.shape[2:])
    if noise is None:
        noise = torch.randn(shape, generator=generator, dtype=prefix.dtype)
    elif tuple(noise.shape) != shape:
        raise ValueError(f"noise has shape {tuple(noise.shape)}, expected {shape}")
    chunk = model.latents_per_denoise or num_latents
    made: list[torch.Tensor] = []
    for start in range(0, num_latents, chunk):
        stop = min(start + chunk, num_latents)
        ctx = model.build_context(torch.cat([prefix] + made, dim=1))
        chunk_actions = actions[:, start * fpl:stop * fpl]
        x = noise[:, start:stop]
        for index in range(len(sigmas) - 1):
            sigma = sigmas[index].expand(x.shape[0])
            velocity = model.velocity(x, sigma, ctx, chunk_actions)
            if eta > 0:
                fresh = torch.randn(x.shape, generator=generator, dtype=x.dtype)
                x = stochastic_step(x, velocity, sigmas[index], sigmas[index + 1], fresh, eta)
            else:
                x = euler_step(x, velocity, sigmas[index], sigmas[index + 1])
        made.append(x)
    return torch.cat(made, dim=1)


def actions_to_tensor(step_actions: list[Action], frames_per_latent: int = FRAMES_PER_LATENT) -> torch.Tensor:
    """Per-step actions -> per-frame signs (len * frames_per_latent, 4) float
    (forward, right, yaw, pitch), each step's action repeated for its frames."""
    signs = [[a.forward, a.right, a.yaw, a.pitch] for a in step_actions for _ in range(frames_per_latent)]
    return torch.tensor(signs, dtype=torch.float32).reshape(-1, 4)


def frames_to_tensor(frames: np.ndarray) -> torch.Tensor:
    """(T, H, W, 3) uint8 -> (T, 3, H, W) float in [0, 1]."""
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(f"expected frames (T, H, W, 3), got shape {frames.shape}")
    return torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).float() / 255.0


def tensor_to_frames(frames: torch.Tensor) -> np.ndarray:
    """(T, 3, H, W) float in [0, 1] -> (T, H, W, 3) uint8 (rounded, clipped)."""
    pixels = (frames.detach().clamp(0, 1) * 255.0).round().to(torch.uint8)
    return pixels.permute(0, 2, 3, 1).contiguous().numpy()
