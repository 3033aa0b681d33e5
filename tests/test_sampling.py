"""The flow-matching schedule and Euler step equal diffusers' FlowMatchEulerDiscreteScheduler."""

import pytest
import torch
from diffusers import FlowMatchEulerDiscreteScheduler

from wctrain.sampling import add_noise, euler_step, flow_sigmas, predict_x0, sample_ode


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
