"""The flow-matching schedule and Euler step equal diffusers' FlowMatchEulerDiscreteScheduler."""

import pytest
import torch
from diffusers import FlowMatchEulerDiscreteScheduler

from wctrain.models.sampling import add_noise, euler_step, flow_sigmas, predict_x0, sample_ode, stochastic_step


@pytest.mark.parametrize("num_steps,shift", [(1, 1.0), (4, 1.0), (4, 3.0), (8, 5.0), (25, 2.0)])
def test_sigmas_match_diffusers(num_steps, shift):
    scheduler = FlowMatchEulerDiscreteScheduler(shift=shift)
    scheduler.set_timesteps(num_steps)
    ours = flow_sigmas(num_steps, shift)
    assert ours.shape == (num_steps + 1,)
    torch.testing.assert_close(ours, scheduler.sigmas.float(), rtol=1e-6, atol=1e-6)
    assert ours[-1] == 0 and torch.all(ours[1:] < ours[:-1])


def test_shift_moves_steps_towards_noise():
    plain, shifted = flow_sigmas(6, 1.0), flow_sigmas(6, 4.0)
    assert torch.all(shifted[1:-1] > plain[1:-1])


def test_euler_steps_match_scheduler_over_a_whole_trajectory():
    generator = torch.Generator().manual_seed(0)
    scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0)
    scheduler.set_timesteps(5)
    sigmas = flow_sigmas(5, 3.0)
    x_ours = torch.randn(2, 3, 4, 4, generator=generator)
    x_theirs = x_ours.clone()
    for index, timestep in enumerate(scheduler.timesteps):
        # a velocity that depends on the state, so errors would compound
        velocity = torch.tanh(x_ours) + 0.1 * index
        x_theirs = scheduler.step(torch.tanh(x_theirs) + 0.1 * index, timestep, x_theirs).prev_sample
        x_ours = euler_step(x_ours, velocity, sigmas[index], sigmas[index + 1])
    torch.testing.assert_close(x_ours, x_theirs, rtol=1e-5, atol=1e-6)


def test_exact_velocity_recovers_the_clean_sample():
    generator = torch.Generator().manual_seed(1)
    x0 = torch.rand(3, 2, 5, generator=generator)
    noise = torch.randn(3, 2, 5, generator=generator)
    sigma = torch.tensor([0.9, 0.5, 0.1])
    x_t = add_noise(x0, noise, sigma)
    torch.testing.assert_close(predict_x0(x_t, noise - x0, sigma[:, None, None]), x0)
    # the straight-line flow is integrated exactly by Euler, whatever the schedule
    out = sample_ode(lambda x, s: noise - x0, noise, flow_sigmas(3, 2.0))
    torch.testing.assert_close(out, x0, rtol=1e-5, atol=1e-5)


def test_stochastic_step_at_eta_zero_is_the_euler_step():
    generator = torch.Generator().manual_seed(1)
    x, velocity, fresh = (torch.randn(3, 5, generator=generator) for _ in range(3))
    torch.testing.assert_close(stochastic_step(x, velocity, 0.7, 0.4, fresh, eta=0.0),
                               euler_step(x, velocity, 0.7, 0.4), rtol=1e-6, atol=1e-6)


def test_stochastic_step_keeps_the_forward_marginal():
    # with the exact velocity of a point mass x0, x_t = (1 - s) x0 + s eps stays on that law for any eta
    generator = torch.Generator().manual_seed(2)
    x0 = torch.full((200_000,), 0.3)
    x = add_noise(x0, torch.randn(x0.shape, generator=generator), torch.tensor(0.8))
    velocity = (x - x0) / 0.8
    for eta in (0.5, 1.0):
        nxt = stochastic_step(x, velocity, 0.8, 0.5, torch.randn(x0.shape, generator=generator), eta)
        assert abs(float(nxt.mean()) - 0.5 * 0.3) < 0.01 and abs(float(nxt.std()) - 0.5) < 0.01
    # eta = 1 forgets the noise the sample came from; eta = 0 keeps it exactly
    fresh = torch.randn(x0.shape, generator=generator)
    corr = torch.corrcoef(torch.stack([x, stochastic_step(x, velocity, 0.8, 0.5, fresh, 1.0)]))[0, 1]
    assert abs(float(corr)) < 0.01


def test_stochastic_step_rejects_eta_outside_unit_interval():
    with pytest.raises(ValueError, match="eta"):
        stochastic_step(torch.zeros(2), torch.zeros(2), 0.5, 0.2, torch.zeros(2), eta=1.5)
