"""Flow-matching sampling: the shifted sigma schedule and a pure Euler step.

Convention (rectified flow, as diffusers' ``FlowMatchEulerDiscreteScheduler``):
``x_t = (1 - sigma) * x0 + sigma * noise``, the model predicts the velocity
``v = noise - x0``, so ``x0 = x_t - sigma * v`` and an Euler step moves
``x_next = x + (sigma_next - sigma) * v``.

diffusers' scheduler keeps hidden state (``set_timesteps``, ``_step_index``); RL needs
to re-evaluate any step of a stored trajectory, so here the schedule is a plain tensor
and the step a pure function. ``tests/wctrain/test_sampling.py`` checks both against the
scheduler itself.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

NUM_TRAIN_TIMESTEPS = 1000  # diffusers' default; only the smallest sigma depends on it


def shift_sigmas(sigmas: np.ndarray | torch.Tensor, shift: float) -> np.ndarray | torch.Tensor:
    """Timestep shift ``shift * s / (1 + (shift - 1) * s)``: shift > 1 spends more steps at
    high noise, where a clip's coarse layout (and so its camera motion) is decided."""
    return shift * sigmas / (1 + (shift - 1) * sigmas)


def flow_sigmas(num_steps: int, shift: float = 1.0,
                num_train_timesteps: int = NUM_TRAIN_TIMESTEPS) -> torch.Tensor:
    """The ``num_steps + 1`` sigmas (the last one 0) of diffusers'
    ``FlowMatchEulerDiscreteScheduler(shift=shift).set_timesteps(num_steps)``.

    As in diffusers, the end points come from the shifted training grid and the
    inference grid is then shifted again (so the smallest sigma is shift applied twice to
    1 / num_train_timesteps); we keep that so a schedule here equals the scheduler's.
    """
    if num_steps < 1:
        raise ValueError(f"num_steps must be at least 1, got {num_steps}")
    if shift <= 0:
        raise ValueError(f"shift must be positive, got {shift}")
    # 1. the training grid's end points (already shifted once)
    train_sigmas = np.linspace(1, num_train_timesteps, num_train_timesteps, dtype=np.float32)[::-1]
    train_sigmas = shift_sigmas(train_sigmas / num_train_timesteps, shift)
    sigma_max, sigma_min = float(train_sigmas[0]), float(train_sigmas[-1])
    # 2. evenly spaced inference sigmas between them, shifted
    timesteps = np.linspace(sigma_max * num_train_timesteps, sigma_min * num_train_timesteps, num_steps)
    sigmas = shift_sigmas(timesteps / num_train_timesteps, shift)
    # 3. terminal sigma 0 (the clean sample)
    return torch.cat([torch.from_numpy(sigmas).to(torch.float32), torch.zeros(1)])


def euler_step(x: torch.Tensor, velocity: torch.Tensor, sigma: float | torch.Tensor,
               sigma_next: float | torch.Tensor) -> torch.Tensor:
    """One Euler step of the flow ODE from ``sigma`` to ``sigma_next`` (pure)."""
    return x + (sigma_next - sigma) * velocity


def stochastic_step(x: torch.Tensor, velocity: torch.Tensor, sigma: float | torch.Tensor,
                    sigma_next: float | torch.Tensor, fresh_noise: torch.Tensor, eta: float) -> torch.Tensor:
    """One step of the flow's ancestral sampler: move to ``sigma_next`` along the predicted x0 with
    the predicted noise partly replaced by ``fresh_noise`` (pure).

    ``x_next = (1 - s') x0 + s' (sqrt(1 - eta^2) eps + eta fresh)`` with ``x0`` and ``eps`` the
    clean sample and noise that the velocity implies. ``eta = 0`` is exactly :func:`euler_step`
    (the deterministic DDIM/Euler path); ``eta = 1`` draws the noise afresh at every step. The
    marginals stay those of the forward process, so the samples come from the same model; only
    the candidates of a group differ more, which RL needs to find out which ones follow the
    actions (NFT trains on clean samples and does not care how they were drawn).
    """
    if not 0 <= eta <= 1:
        raise ValueError(f"eta must lie in [0, 1], got {eta}")
    x0 = predict_x0(x, velocity, sigma)
    eps = x + (1 - sigma) * velocity  # the noise end of the straight path through x
    eps = (1 - eta ** 2) ** 0.5 * eps + eta * fresh_noise
    return (1 - sigma_next) * x0 + sigma_next * eps


def predict_x0(x_t: torch.Tensor, velocity: torch.Tensor, sigma: float | torch.Tensor) -> torch.Tensor:
    """The clean sample implied by a velocity prediction at ``sigma``."""
    return x_t - sigma * velocity


def add_noise(x0: torch.Tensor, noise: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """``x_t = (1 - sigma) x0 + sigma noise``; ``sigma`` broadcasts from the left (one per sample)."""
    sigma = sigma.reshape(sigma.shape + (1,) * (x0.dim() - sigma.dim()))
    return (1 - sigma) * x0 + sigma * noise


def sample_ode(velocity_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], noise: torch.Tensor,
               sigmas: torch.Tensor) -> torch.Tensor:
    """Integrate the flow ODE from ``noise`` (at ``sigmas[0]``) to ``sigmas[-1]`` with Euler steps.

    ``velocity_fn(x, sigma)`` gets ``sigma`` as a (batch,) tensor.
    """
    x = noise
    for index in range(len(sigmas) - 1):
        sigma = sigmas[index].expand(x.shape[0])
        x = euler_step(x, velocity_fn(x, sigma), sigmas[index], sigmas[index + 1])
    return x
