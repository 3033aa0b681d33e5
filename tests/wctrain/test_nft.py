"""The NFT loss: hand-computed value, fixed points, minimiser, the v_old bug, and the baselines."""

from __future__ import annotations

import pytest
import torch

from wctrain.experimental.rwr import rwr_loss
from wctrain.models.sampling import add_noise, euler_step
from wctrain.rl.nft import nft_loss, subsample_timesteps, target_velocity

SHAPE = (3, 2, 1, 2, 2)  # (B, T, C, H, W), tiny


def make_batch(seed: int = 0, t: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """A rollout sample x0, fresh noise at flow time t, and an old-policy prediction (float64)."""
    generator = torch.Generator().manual_seed(seed)
    x0 = torch.randn(SHAPE, generator=generator, dtype=torch.float64)
    noise = torch.randn(SHAPE, generator=generator, dtype=torch.float64)
    t = torch.tensor([0.3, 0.6, 0.9], dtype=torch.float64) if t is None else t
    x_t = add_noise(x0, noise, t)
    v_old = (noise - x0) + 0.5 * torch.randn(SHAPE, generator=generator, dtype=torch.float64)
    return {"x0": x0, "noise": noise, "t": t, "x_t": x_t, "v_old": v_old}


def grad_wrt_theta(batch: dict[str, torch.Tensor], v_theta: torch.Tensor, r, beta: float = 1.0) -> torch.Tensor:
    v_theta = v_theta.clone().requires_grad_(True)
    nft_loss(v_theta, batch["v_old"], batch["x_t"], batch["x0"], batch["t"], r, beta).sum().backward()
    return v_theta.grad


def minimise(loss_fn, start: torch.Tensor, steps: int = 300) -> torch.Tensor:
    """Adam with a decaying step on a free tensor: the stationary point of ``loss_fn``."""
    v_theta = start.clone().requires_grad_(True)
    optimiser = torch.optim.Adam([v_theta], lr=0.05)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, steps)
    for _ in range(steps):
        optimiser.zero_grad()
        loss_fn(v_theta).sum().backward()
        optimiser.step()
        scheduler.step()
    return v_theta.detach()


def per_frame_t(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1, 1).expand(-1, SHAPE[1])


def test_hand_computed_value():
    # v+ = 1, v- = -1; x0+ = 1 - 0.5 = 0.5, x0- = 1.5; w = 0.5
    one = torch.ones(1, 1)
    loss = nft_loss(one, 0 * one, one, 0 * one, torch.tensor([0.5]), 0.25, beta=1.0)
    assert loss.shape == (1,)
    assert loss.item() == pytest.approx((0.25 * 0.25 + 0.75 * 2.25) / 0.5)
    scaled = nft_loss(one, 0 * one, one, 0 * one, torch.tensor([0.5]), 0.25, beta=1.0, scale_by_z=2.0)
    assert scaled.item() == pytest.approx(2 * loss.item())


def test_convention_matches_the_euler_sampler():
    batch = make_batch()
    v_target = target_velocity(batch["x_t"], batch["x0"], batch["t"])
    torch.testing.assert_close(v_target, batch["noise"] - batch["x0"])
    # one Euler step to t = 0 with the target velocity lands on x0: x_{t-dt} = x_t - dt v
    t = batch["t"].reshape(-1, 1, 1, 1, 1)
    torch.testing.assert_close(euler_step(batch["x_t"], v_target, t, 0.0), batch["x0"])


def test_half_reward_at_old_policy_gives_zero_gradient():
    batch = make_batch()
    for beta in (0.5, 1.0, 2.0):
        grad = grad_wrt_theta(batch, batch["v_old"], 0.5, beta)
        assert grad.abs().max().item() < 1e-12
    # and a non-trivial one elsewhere, so the zero above is not vacuous
    assert grad_wrt_theta(batch, batch["v_old"], 0.9).abs().max().item() > 1e-3


def test_gradient_at_old_policy_is_proportional_to_2r_minus_1():
    batch = make_batch()
    grad_at_one = grad_wrt_theta(batch, batch["v_old"], 1.0)
    # closed form at v_theta = v_old: 2 t^2 (1 - 2r) (v_target - v_old) / (n w), n = elements per sample
    v_target = target_velocity(batch["x_t"], batch["x0"], batch["t"])
    t = batch["t"].reshape(-1, 1, 1, 1, 1)
    residual = t * (v_target - batch["v_old"])  # x_t - t v_old - x0
    weight = residual.abs().flatten(1).mean(1).reshape(-1, 1, 1, 1, 1)
    numel = residual[0].numel()
    torch.testing.assert_close(grad_at_one, -2 * t * residual / (numel * weight))
    for r in (0.0, 0.2, 0.5, 0.7, 1.0):
        grad = grad_wrt_theta(batch, batch["v_old"], r)
        torch.testing.assert_close(grad, (2 * r - 1) * grad_at_one)
    # direction: descending moves v_theta toward v_target when r > 1/2, away when r < 1/2
    step = -grad_wrt_theta(batch, batch["v_old"], 0.8)
    assert (step * (v_target - batch["v_old"])).sum() > 0
    step = -grad_wrt_theta(batch, batch["v_old"], 0.2)
    assert (step * (v_target - batch["v_old"])).sum() < 0


def test_per_sample_r_acts_per_sample():
    batch = make_batch()
    r = torch.tensor([0.5, 1.0, 0.0], dtype=torch.float64)
    grad = grad_wrt_theta(batch, batch["v_old"], r)
    grad_at_one = grad_wrt_theta(batch, batch["v_old"], 1.0)
    assert grad[0].abs().max().item() < 1e-12
    torch.testing.assert_close(grad[1], grad_at_one[1])
    torch.testing.assert_close(grad[2], -grad_at_one[2])


@pytest.mark.parametrize("r, beta, is_per_frame", [(0.9, 1.0, False), (0.2, 1.0, False),
                                                   (0.75, 0.5, True), (0.3, 2.0, False)])
def test_minimiser(r: float, beta: float, is_per_frame: bool):
    batch = make_batch(seed=1)
    t = per_frame_t(batch["t"]) if is_per_frame else batch["t"]
    v_target = target_velocity(batch["x_t"], batch["x0"], t)
    expected = batch["v_old"] + (2 * r - 1) * (v_target - batch["v_old"]) / beta
    # closed form: the gradient vanishes there ...
    v_theta = expected.clone().requires_grad_(True)
    nft_loss(v_theta, batch["v_old"], batch["x_t"], batch["x0"], t, r, beta).sum().backward()
    assert v_theta.grad.abs().max().item() < 1e-10
    # ... and optimising a free tensor from the old policy converges to it
    found = minimise(lambda v: nft_loss(v, batch["v_old"], batch["x_t"], batch["x0"], t, r, beta), batch["v_old"])
    torch.testing.assert_close(found, expected, atol=1e-4, rtol=0)


def test_old_prediction_gets_no_gradient():
    batch = make_batch()
    v_old = batch["v_old"].clone().requires_grad_(True)
    v_theta = (batch["v_old"] + 0.1).requires_grad_(True)
    nft_loss(v_theta, v_old, batch["x_t"], batch["x0"], batch["t"], 0.8).sum().backward()
    assert v_old.grad is None
    assert v_theta.grad is not None


def test_old_prediction_from_current_weights_is_a_different_loss():
    """The released bug: v_old := v_theta.detach() turns NFT into (2r-1)-weighted regression."""
    batch = make_batch(seed=2)
    r, beta = 0.8, 1.0
    v_theta = batch["v_old"] + 0.3  # the policy has moved since the rollout
    proper = grad_wrt_theta(batch, v_theta, r, beta)
    bugged_theta = v_theta.clone().requires_grad_(True)
    nft_loss(bugged_theta, bugged_theta.detach(), batch["x_t"], batch["x0"], batch["t"], r, beta).sum().backward()
    bugged = bugged_theta.grad
    assert (proper - bugged).abs().max().item() > 1e-3
    # the bugged gradient is (2r-1) times plain regression's, whatever v_old was
    regression_theta = v_theta.clone().requires_grad_(True)
    rwr_loss(regression_theta, batch["x_t"], batch["x0"], batch["t"], 1.0).sum().backward()
    torch.testing.assert_close(bugged, (2 * r - 1) * regression_theta.grad)
    # so it has no trust region: it runs all the way to v_target instead of stopping half-way
    found = minimise(lambda v: nft_loss(v, v.detach(), batch["x_t"], batch["x0"], batch["t"], r, beta),
                     batch["v_old"])
    v_target = target_velocity(batch["x_t"], batch["x0"], batch["t"])
    torch.testing.assert_close(found, v_target, atol=1e-4, rtol=0)
    proper_minimiser = batch["v_old"] + (2 * r - 1) * (v_target - batch["v_old"]) / beta
    assert (found - proper_minimiser).abs().max().item() > 0.1


@pytest.mark.parametrize("r", [0.3, 1.0])
def test_rwr_minimiser_is_the_target_velocity(r: float):
    batch = make_batch(seed=3)
    found = minimise(lambda v: rwr_loss(v, batch["x_t"], batch["x0"], batch["t"], r), batch["v_old"])
    v_target = target_velocity(batch["x_t"], batch["x0"], batch["t"])
    torch.testing.assert_close(found, v_target, atol=1e-4, rtol=0)


def test_rwr_ignores_zero_reward_samples():
    batch = make_batch()
    v_theta = batch["v_old"].clone().requires_grad_(True)
    r = torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64)
    loss = rwr_loss(v_theta, batch["x_t"], batch["x0"], batch["t"], r)
    loss.sum().backward()
    assert loss[0].item() == 0.0 and loss[1].item() > 0
    assert v_theta.grad[0].abs().max().item() == 0.0


def test_bad_arguments_are_loud():
    batch = make_batch()
    args = (batch["v_old"], batch["v_old"], batch["x_t"], batch["x0"], batch["t"])
    with pytest.raises(ValueError, match="beta"):
        nft_loss(*args, 0.5, beta=0.0)
    with pytest.raises(ValueError, match="r must lie"):
        nft_loss(*args, 1.5)
    with pytest.raises(ValueError, match="leading part"):
        nft_loss(*args[:4], torch.tensor([0.5, 0.5]), 0.5)
    with pytest.raises(ValueError, match="one shape"):
        nft_loss(batch["v_old"][:2], *args[1:], 0.5)


def test_subsample_timesteps():
    first = subsample_timesteps(10, 0.3, torch.Generator().manual_seed(0))
    again = subsample_timesteps(10, 0.3, torch.Generator().manual_seed(0))
    assert torch.equal(first, again)
    assert len(first) == 3 and len(set(first.tolist())) == 3
    assert torch.equal(first, first.sort().values) and 0 <= first.min() and first.max() < 10
    assert torch.equal(subsample_timesteps(4, 1.0, torch.Generator()), torch.arange(4))
    assert len(subsample_timesteps(4, 0.5, torch.Generator())) == 2
    assert len(subsample_timesteps(4, 0.01, torch.Generator())) == 1
    draws = {tuple(subsample_timesteps(10, 0.3, torch.Generator().manual_seed(seed)).tolist()) for seed in range(8)}
    assert len(draws) > 1
    with pytest.raises(ValueError):
        subsample_timesteps(4, 0.0, torch.Generator())
