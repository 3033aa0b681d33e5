"""The EMA old policy: decay schedule, known-value updates, frozen shadow, exact resume."""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn

from wctrain.rl.policy import EMA, DecaySchedule, build_frozen_copy, decay_schedule


def tiny_model(seed: int = 0) -> nn.Module:
    """Two linear layers around a batch norm (float and integer buffers)."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


def fill(model: nn.Module, value: float) -> None:
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(value)


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    optimizer.zero_grad()
    model(torch.randn(5, 3, generator=generator)).square().mean().backward()
    optimizer.step()


def test_decay_schedule():
    assert [decay_schedule(step) for step in (0, 1, 100, 500, 10_000)] == [0.0, 0.001, 0.1, 0.5, 0.5]
    assert decay_schedule(10, max_decay=0.999, ramp=0.0075, flat_steps=75) == 0.0
    assert decay_schedule(75, max_decay=0.999, ramp=0.0075, flat_steps=75) == 0.0
    assert decay_schedule(95, max_decay=0.999, ramp=0.0075, flat_steps=75) == pytest.approx(0.15)
    assert decay_schedule(1000, max_decay=0.999, ramp=0.0075, flat_steps=75) == 0.999
    assert decay_schedule(0, max_decay=0.9, ramp=None) == 0.9
    assert DecaySchedule(max_decay=0.2, ramp=0.1)(1) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        decay_schedule(0, max_decay=1.5)


def test_shadow_is_a_frozen_independent_copy():
    model = tiny_model()
    ema = EMA(model)
    assert all(not parameter.requires_grad for parameter in ema.module.parameters())
    assert not ema.module.training
    for shadow, parameter in zip(ema.module.parameters(), model.parameters()):
        assert torch.equal(shadow, parameter) and shadow.data_ptr() != parameter.data_ptr()
    fill(model, 3.0)
    assert not any(torch.equal(shadow, parameter) for shadow, parameter in zip(ema.module.parameters(),
                                                                               model.parameters()))
    # v_old from the shadow under no_grad carries no graph
    with torch.no_grad():
        assert not ema.module(torch.randn(2, 3)).requires_grad


def test_frozen_copy_drops_gradients():
    model = tiny_model()
    model(torch.randn(4, 3)).sum().backward()
    frozen = build_frozen_copy(model)
    assert all(parameter.grad is None and not parameter.requires_grad for parameter in frozen.parameters())
    assert all(parameter.requires_grad for parameter in model.parameters())


def test_decay_zero_copies_and_decay_one_keeps():
    model = tiny_model()
    ema = EMA(model, DecaySchedule(max_decay=0.0))
    fill(model, 0.1234567)
    assert ema.update(model) == 0.0
    for shadow, parameter in zip(ema.module.parameters(), model.parameters()):
        assert torch.equal(shadow, parameter)
    keeper = EMA(model, DecaySchedule(max_decay=1.0, ramp=None))
    fill(model, 7.0)
    assert keeper.update(model) == 1.0
    assert all(torch.equal(shadow, torch.full_like(shadow, 0.1234567)) for shadow in keeper.module.parameters())


def test_known_value_update():
    model = tiny_model()
    fill(model, 1.0)
    ema = EMA(model, DecaySchedule(max_decay=0.5, ramp=0.25))  # decays 0, 0.25, 0.5, 0.5
    for value, decay in zip((4.0, 5.0, 6.0, 7.0), (0.0, 0.25, 0.5, 0.5)):
        fill(model, value)
        assert ema.update(model) == decay
    # by hand: 4 (copy), 0.25*4 + 0.75*5 = 4.75, 0.5*4.75 + 0.5*6 = 5.375, 0.5*5.375 + 0.5*7 = 6.1875
    for shadow in ema.module.parameters():
        torch.testing.assert_close(shadow, torch.full_like(shadow, 6.1875))
    assert ema.num_updates == 4


def test_buffers_are_copied():
    model = tiny_model()
    ema = EMA(model, DecaySchedule(max_decay=0.9, ramp=None))
    model.train()
    model(torch.randn(8, 3))  # updates running stats and num_batches_tracked
    ema.update(model)
    assert torch.equal(ema.module[1].running_mean, model[1].running_mean)
    assert ema.module[1].num_batches_tracked.item() == 1


def test_copy_to():
    model = tiny_model()
    ema = EMA(model)
    target = tiny_model(seed=1)
    ema.copy_to(target)
    for mine, theirs in zip(target.state_dict().values(), model.state_dict().values()):
        assert torch.equal(mine, theirs)
    assert all(parameter.requires_grad for parameter in target.parameters())


def test_state_round_trip_resumes_exactly():
    schedule = DecaySchedule(max_decay=0.9, ramp=0.3)
    model = tiny_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ema = EMA(model, schedule)
    for step in range(3):
        train_step(model, optimizer, step)
        ema.update(model)
    buffer = io.BytesIO()
    torch.save(ema.state_dict(), buffer)
    # resume into a fresh EMA built from a different model, then both continue identically
    resumed = EMA(tiny_model(seed=5), schedule)
    buffer.seek(0)
    resumed.load_state_dict(torch.load(buffer))
    assert resumed.num_updates == 3 and resumed.next_decay == ema.next_decay
    for step in range(3, 5):
        train_step(model, optimizer, step)
        ema.update(model)
        resumed.update(model)
    for mine, theirs in zip(resumed.module.state_dict().values(), ema.module.state_dict().values()):
        assert torch.equal(mine, theirs)
    assert all(not parameter.requires_grad for parameter in resumed.module.parameters())
    with pytest.raises(ValueError, match="schedule"):
        EMA(model, DecaySchedule(max_decay=0.5)).load_state_dict(ema.state_dict())


def test_mismatched_model_is_loud():
    ema = EMA(tiny_model())
    with pytest.raises(ValueError, match="unwrap_model"):
        ema.update(nn.Sequential(nn.Linear(3, 4)))


def test_updates_that_do_not_advance_share_the_decay():
    # the release's gradient accumulation: 3 optimiser steps a training step, each followed by an EMA
    # update at that training step's decay min(0.9, 0.2 + 0.01 s)
    model = tiny_model()
    ema = EMA(model, DecaySchedule(max_decay=0.9, ramp=0.01, flat_steps=-1, min_decay=0.2))
    used = [ema.update(model, advance=k == 2) for _ in range(3) for k in range(3)]
    assert used == pytest.approx([0.21] * 3 + [0.22] * 3 + [0.23] * 3, abs=1e-12)
    assert ema.num_updates == 3 and ema.next_decay == pytest.approx(0.24)
