"""The DiffusionNFT negative-aware loss, as pure functions (the reward-weighted regression
ablation beside it: :mod:`wctrain.experimental.rwr`).

Convention (the one ``wctrain/models/sampling.py`` uses, rectified flow as in diffusers'
``FlowMatchEulerDiscreteScheduler``): a clean sample ``x0`` is noised to
``x_t = (1 - t) * x0 + t * noise``; the model predicts the velocity ``v = noise - x0``, so the
clean sample it implies is ``x0_hat = x_t - t * v`` and an Euler sampler steps
``x_{t - dt} = x_t - dt * v``. The velocity that reproduces a given ``x0`` from ``x_t`` exactly is
``v_target = (x_t - x0) / t`` (equal to ``noise - x0`` when ``x_t`` was made from that noise).

Shapes: every tensor argument is ``(B, ...)`` (for tinywm ``(B, T, C, H, W)`` latents); ``t`` is a
number, ``(B,)`` (one flow time per sample) or any leading part of the sample shape such as
``(B, T)`` (one per latent frame); it broadcasts from the left. ``r`` is a number or ``(B,)``.
Every loss returns one value per sample, ``(B,)``; the trainer takes the mean.

"||.||^2" below is the mean (not the sum) of squares over all non-batch dimensions, so the loss
scale does not depend on the latent size; the adaptive weight ``w`` is a mean too, so the two
cancel dimensionally and the loss is O(1) per sample (as in DiffusionNFT's released code).
"""

from __future__ import annotations

import math

import torch

WEIGHT_MIN = 1e-5  # floor of the adaptive weight w (DiffusionNFT's value)


def left_broadcast(value: float | torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``value`` as a tensor of ``like``'s dtype/device whose shape is a leading part of
    ``like.shape`` padded with trailing 1s, so it broadcasts per sample (or per frame)."""
    value = torch.as_tensor(value, dtype=like.dtype, device=like.device)
    if value.dim() > like.dim() or tuple(like.shape[:value.dim()]) != tuple(value.shape):
        raise ValueError(f"shape {tuple(value.shape)} must be a leading part of the sample shape "
                         f"{tuple(like.shape)} (one value per sample, e.g. (B,), or per frame, e.g. (B, T))")
    return value.reshape(value.shape + (1,) * (like.dim() - value.dim()))


def per_sample_mean(x: torch.Tensor) -> torch.Tensor:
    """Mean over every dimension but the first: ``(B, ...) -> (B,)``."""
    return x.reshape(x.shape[0], -1).mean(dim=1)


def check_same_shape(**tensors: torch.Tensor) -> None:
    """A ValueError unless every tensor has the same shape."""
    shapes = {name: tuple(tensor.shape) for name, tensor in tensors.items()}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"these tensors must share one shape (B, ...): {shapes}")


def check_r(r: torch.Tensor) -> None:
    """A ValueError unless every r lies in [0, 1]."""
    # One host sync per call; cheap next to a model forward, and a wrong r silently flips the sign.
    if torch.any((r < 0) | (r > 1)) or torch.any(torch.isnan(r)):
        raise ValueError("r must lie in [0, 1]; map advantages with wctrain.rl.advantages.to_r")


def target_velocity(x_t: torch.Tensor, x0: torch.Tensor, t: float | torch.Tensor) -> torch.Tensor:
    """``(x_t - x0) / t``: the velocity whose implied clean sample ``x_t - t v`` is exactly ``x0``."""
    return (x_t - x0) / left_broadcast(t, x_t)


def adaptive_weight(x0_pred: torch.Tensor, x0: torch.Tensor) -> torch.Tensor:
    """``stopgrad(mean |x0_pred - x0|)`` per sample, floored at ``WEIGHT_MIN``: ``(B,)``.

    Computed in float64 (a mean of many small residuals) and returned in ``x0_pred``'s dtype.
    """
    with torch.no_grad():
        weight = per_sample_mean((x0_pred.double() - x0.double()).abs()).clamp_min(WEIGHT_MIN)
    return weight.to(x0_pred.dtype)


def nft_loss(v_theta: torch.Tensor, v_old: torch.Tensor, x_t: torch.Tensor, x0: torch.Tensor,
             t: float | torch.Tensor, r: float | torch.Tensor, beta: float = 1.0,
             scale_by_z: float | None = None) -> torch.Tensor:
    """DiffusionNFT's negative-aware loss, per sample ``(B,)`` (see the module doc for shapes).

    With ``v+ = (1 - beta) v_old + beta v_theta`` and its mirror image about ``v_old``,
    ``v- = (1 + beta) v_old - beta v_theta``, the implied clean samples ``x0± = x_t - t v±`` and
    ``w = stopgrad(mean |x0+ - x0|)`` floored at 1e-5::

        loss = r ||x0+ - x0||^2 / (w beta) + (1 - r) ||x0- - x0||^2 / (w beta)   [* Z]

    Its minimiser over ``v_theta`` is ``v_old + (2r - 1) (v_target - v_old) / beta`` (move toward
    the rollout's clean sample when ``r > 1/2``, away from it when ``r < 1/2``, stay when
    ``r = 1/2``), and at ``v_theta = v_old`` its gradient is ``(2r - 1)`` times that of
    ``r = 1``. ``beta`` is the NFT step size.

    ``v_old`` is the old (EMA) policy's prediction at the same ``(x_t, t)`` and conditioning. The
    caller computes it under ``torch.no_grad()`` from the frozen old-policy copy
    (``wctrain.rl.policy``), never from the weights being trained: feeding ``v_theta.detach()``
    keeps the values but removes the trust region anchored at ``v_old``, and the loss degrades
    to (2r - 1)-weighted regression onto ``x0``. It is detached here as a second guard.

    ``w`` is one weight per sample taken from the positive branch, as DESIGN.md states. The
    released DiffusionNFT code normalises the negative branch by its own ``mean |x0- - x0|``;
    the two agree at ``v_theta = v_old`` (so the first gradient of an iteration is identical), and
    one shared ``w`` keeps the loss an exact quadratic in ``v_theta`` with the minimiser above.

    ``scale_by_z``: multiply by the advantage clip ``Z`` as DiffusionNFT does, so that the
    gradient per unit of advantage does not shrink when ``Z`` grows; ``None`` leaves it out.
    """
    check_same_shape(v_theta=v_theta, v_old=v_old, x_t=x_t, x0=x0)
    if not beta > 0:
        raise ValueError(f"beta must be positive, got {beta}")
    v_old = v_old.detach()
    t = left_broadcast(t, x_t)
    r = torch.as_tensor(r, dtype=v_theta.dtype, device=v_theta.device).expand(v_theta.shape[0])
    check_r(r)
    # 1. the positive policy and its mirror image about the old policy
    v_pos = (1 - beta) * v_old + beta * v_theta
    v_neg = (1 + beta) * v_old - beta * v_theta
    # 2. the clean samples they imply, and their squared errors against the rollout's sample
    x0_pos = x_t - t * v_pos
    x0_neg = x_t - t * v_neg
    weight = adaptive_weight(x0_pos, x0)
    error_pos = per_sample_mean((x0_pos - x0).square())
    error_neg = per_sample_mean((x0_neg - x0).square())
    # 3. reward-weighted mix of the two, normalised per sample
    loss = (r * error_pos + (1 - r) * error_neg) / (weight * beta)
    return loss if scale_by_z is None else loss * scale_by_z


def subsample_timesteps(num_steps: int, fraction: float, generator: torch.Generator) -> torch.Tensor:
    """Sorted indices of ``ceil(fraction * num_steps)`` distinct sampler steps (at least one).

    Timestep subsampling: each candidate is trained on a random subset of the sampler's
    ``num_steps`` flow times ``sigmas[:-1]`` (never the terminal 0, where ``x_t = x0`` carries
    no signal), each with fresh noise. The generator makes the choice reproducible per rank.
    """
    if num_steps < 1:
        raise ValueError(f"num_steps must be at least 1, got {num_steps}")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction}")
    count = max(1, math.ceil(fraction * num_steps - 1e-9))  # 1e-9: 0.5 * 4 is not 2.0000001
    return torch.randperm(num_steps, generator=generator)[:count].sort().values
