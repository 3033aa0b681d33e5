"""What RL post-training needs from a world model: the trainer-side protocol.

A trainable world model is a ``torch.nn.Module`` that denoises latents with flow matching.
The trainer
1. encodes the start image (``start_latent``) and builds a context from the latents before a
   clip (``build_context(prefix, clip=None)``; it keeps the last ``context_latents`` of them),
2. samples the clip with the Euler ODE over ``default_sigmas()`` (:func:`sample_clip`), which
   asks the model for ``velocity(x_t, sigma, ctx, actions)``, ``latents_per_denoise`` latents
   at a time (``None``: the whole clip jointly),
3. decodes the clip (``decode``) and scores its frames as ``wcbench run`` shows them,
4. for the loss, re-evaluates ``velocity`` on a noised copy of the sampled clip with the
   context ``build_context(prefix, clip)``: models that generate a clip latent by latent take
   each latent's own clean predecessors from ``clip`` (teacher forcing, exactly the
   conditioning the sampler used); models that denoise the whole clip jointly ignore it.

Layouts at this boundary: pixel video ``(B, T, 3, H, W)`` float in [0, 1]; latents
``(B, L, ...)`` with ``frames_per_latent`` frames per latent (the rest of the latent's shape
is the model's own); actions per frame ``(B, L * frames_per_latent, 4)`` float, the signs
(forward, right, yaw, pitch) of :class:`wcbench.core.actions.Action`; ``sigma`` ``(B,)`` or
``(B, L)``. :func:`frames_to_tensor` / :func:`tensor_to_frames` convert from and to the
benchmark's ``(T, H, W, 3)`` uint8, in one place.

Optional capabilities, each used when present and never required:
- ``action_embedding``: an ``nn.Embedding`` with one row per wcbench action label
  (``Action.label``, 81), called once per ``velocity`` on per-frame labels shaped ``(B, ...)``.
  The trainer explores through it (:mod:`wctrain.rl.exploration`) and gives it ``rl.lr``.
- ``trainable_modules``: the module paths ``rl.trainable=null`` trains (else every weight).
- ``enable_gradient_checkpointing()``: called when ``gradient_checkpointing=true``.
- diffusers ``ModelMixin``: exported with ``save_pretrained`` (others: a safetensors state dict).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

from wcbench.core.actions import FRAMES_PER_LATENT, Action
from wctrain.models.sampling import euler_step, stochastic_step


@runtime_checkable
class TrainableWorldModel(Protocol):
    """A flow-matching video world model that wctrain can roll out and post-train."""

    frames_per_latent: int  # frames per latent (per latent step of an action script)
    latents_per_denoise: int | None  # latents denoised together; None: the whole clip at once
    context_latents: int  # latents of history the model conditions on (rollouts keep this many)
    resolution: tuple[int, int]  # (width, height) of the frames it makes

    def encode(self, frames: torch.Tensor) -> torch.Tensor:
        """Frames (B, T, 3, H, W) in [0, 1] -> latents (B, T / frames_per_latent, ...)."""

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Latents (B, L, ...) -> frames (B, L * frames_per_latent, 3, H, W) in [0, 1]."""

    def start_latent(self, image: torch.Tensor) -> torch.Tensor:
        """The latent standing for a start image (B, 3, H, W): the first context (B, 1, ...)."""

    def build_context(self, prefix: torch.Tensor, clip: torch.Tensor | None = None) -> Any:
        """Context from the prefix latents (B, P, ...) and, for teacher forcing, the clean clip."""

    def velocity(self, x_t: torch.Tensor, sigma: torch.Tensor, ctx: Any, actions: torch.Tensor) -> torch.Tensor:
        """Flow velocity (noise - x0) for noisy clip latents ``x_t`` (B, L, ...) at ``sigma``
        (B,) or (B, L), given the context and per-frame actions (B, L * frames_per_latent, 4)."""

    def default_sigmas(self, num_inference_steps: int | None = None) -> torch.Tensor:
        """The sampler's sigma schedule, from 1 down to 0 (e.g. :func:`wctrain.models.sampling.flow_sigmas`)."""


PROTOCOL_MEMBERS = ("frames_per_latent", "latents_per_denoise", "context_latents", "resolution", "encode",
                    "decode", "start_latent", "build_context", "velocity", "default_sigmas")


def check_trainable(model: Any, spec: str) -> nn.Module:
    """``model`` if it is an ``nn.Module`` with every member of :class:`TrainableWorldModel`; else a
    ValueError that names what is missing (``spec``: where the model came from)."""
    missing = [name for name in PROTOCOL_MEMBERS if not hasattr(model, name)]
    if not isinstance(model, nn.Module):
        missing.insert(0, "torch.nn.Module as a base class")
    if missing:
        raise ValueError(f"model {spec!r} built a {type(model).__name__}, which is not a TrainableWorldModel: "
                         f"missing {', '.join(missing)} (the protocol: wctrain/models/base.py, docs/wctrain.md)")
    return model


def draw_noise(shape: tuple[int, ...], generator: torch.Generator | None, like: torch.Tensor) -> torch.Tensor:
    """Standard normal noise drawn on the generator's device (the CPU for a CPU generator) and moved
    to ``like``'s device and dtype: the same draws on every device, so a run is reproducible
    wherever it trains."""
    device = generator.device if generator is not None else torch.device("cpu")
    return torch.randn(shape, generator=generator, device=device).to(like.device, like.dtype)


def sample_clip(model: TrainableWorldModel, prefix: torch.Tensor, actions: torch.Tensor, sigmas: torch.Tensor,
                generator: torch.Generator | None = None, noise: torch.Tensor | None = None,
                eta: float = 0.0) -> torch.Tensor:
    """Sample the clip that follows ``prefix`` latents under per-frame ``actions``.

    Returns latents (B, L, ...) with L = actions.shape[1] / frames_per_latent. ``noise``
    (same shape) replaces fresh noise from ``generator``. Latents are generated
    ``model.latents_per_denoise`` at a time, each group by a full Euler ODE over ``sigmas``
    conditioned on the prefix and the latents already made. ``eta > 0`` takes ancestral steps
    (:func:`wctrain.models.sampling.stochastic_step`) with fresh noise from ``generator``.
    """
    fpl = model.frames_per_latent
    if actions.shape[1] % fpl:
        raise ValueError(f"actions cover {actions.shape[1]} frames, not a multiple of {fpl} frames per latent")
    num_latents = actions.shape[1] // fpl
    shape = (prefix.shape[0], num_latents) + tuple(prefix.shape[2:])
    if noise is None:
        noise = draw_noise(shape, generator, prefix)
    elif tuple(noise.shape) != shape:
        raise ValueError(f"noise has shape {tuple(noise.shape)}, expected {shape}")
    sigmas, actions = sigmas.to(prefix.device), actions.to(prefix.device)
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
                fresh = draw_noise(tuple(x.shape), generator, x)
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
    pixels = (frames.detach().float().clamp(0, 1) * 255.0).round().to(torch.uint8)
    return pixels.permute(0, 2, 3, 1).contiguous().cpu().numpy()
