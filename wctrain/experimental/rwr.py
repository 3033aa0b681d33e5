"""``rl.loss=rwr``: reward-weighted regression, the paper's ablation of the DiffusionNFT loss, as a
pure function with the conventions and shapes of :mod:`wctrain.rl.nft`."""

from __future__ import annotations

import torch

from wctrain.rl.nft import adaptive_weight, check_r, check_same_shape, left_broadcast, per_sample_mean


def rwr_loss(v_theta: torch.Tensor, x_t: torch.Tensor, x0: torch.Tensor,
             t: float | torch.Tensor, r: float | torch.Tensor) -> torch.Tensor:
    """Reward-weighted regression baseline (the ablation of :func:`wctrain.rl.nft.nft_loss`), per sample ``(B,)``.

    ``r ||x0_hat - x0||^2 / w`` with ``x0_hat = x_t - t v_theta``: only the positive term, no old
    policy. The same adaptive weight ``w = stopgrad(mean |x0_hat - x0|)`` as ``nft_loss`` keeps
    the two losses on one scale, so the ablation changes the objective, not the step size. Its
    minimiser is ``v_target`` for every ``r > 0``: bad samples are imitated less, never avoided.
    """
    check_same_shape(v_theta=v_theta, x_t=x_t, x0=x0)
    r = torch.as_tensor(r, dtype=v_theta.dtype, device=v_theta.device).expand(v_theta.shape[0])
    check_r(r)
    x0_pred = x_t - left_broadcast(t, x_t) * v_theta
    return r * per_sample_mean((x0_pred - x0).square()) / adaptive_weight(x0_pred, x0)
