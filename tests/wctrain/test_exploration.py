"""Trainer-side exploration: offsets on an exposed action embedding, nothing for other models."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from wcbench.core.actions import NUM_LABELS, Action
from wctrain.rl.exploration import Exploration, build_exploration, exploring, supports_exploration


def probe(make_small_tinywm, batch: int):
    """A tiny tinywm with a non-zero output layer (so actions change the velocity), and one noisy
    latent, its noise level and an empty context repeated ``batch`` times."""
    model = make_small_tinywm().eval()
    with torch.no_grad():
        model.conv_out.weight.normal_(std=0.05)
    x = torch.randn(1, 1, model.latent_channels, 32, 32).expand(batch, -1, -1, -1, -1)
    ctx = model.build_context(torch.zeros(batch, 1, model.latent_channels, 32, 32))
    return model, x, torch.full((batch,), 0.5), ctx


def signs(action: Action, batch: int) -> torch.Tensor:
    values = [action.forward, action.right, action.yaw, action.pitch]
    return torch.tensor(values, dtype=torch.float32).expand(batch, 4, 4)


def test_exploration_varies_candidates_only_inside_the_block(make_small_tinywm):
    model, x, sigma, ctx = probe(make_small_tinywm, 3)
    actions = signs(Action(forward=1, yaw=-1), 3)
    plain = model.velocity(x, sigma, ctx, actions)
    # equal candidates give equal rows up to float32 roundoff (a batch's rows may take different kernels)
    assert torch.allclose(plain[0], plain[1], atol=1e-5) and torch.allclose(plain[1], plain[2], atol=1e-5)
    with exploring(model, Exploration(1.0), 3, torch.Generator().manual_seed(0)):
        explored = model.velocity(x, sigma, ctx, actions)
        with pytest.raises(ValueError, match="batch of 3 candidates"):
            model.velocity(x[:2], sigma[:2], model.build_context(torch.zeros(2, 1, 48, 32, 32)), actions[:2])
    assert not torch.allclose(explored[0], explored[1]) and not torch.allclose(explored[1], explored[2])
    assert torch.equal(model.velocity(x, sigma, ctx, actions), plain)  # the block leaves nothing behind
    with exploring(model, Exploration(0.0), 3, torch.Generator()):  # scale 0: no offsets
        assert torch.equal(model.velocity(x, sigma, ctx, actions), plain)


def test_label_scale_explores_each_label_by_its_own_factor(make_small_tinywm):
    """Each frame's offset times its label's factor: a label at 0 is not explored at all, one at
    2 twice as far as without it (same draw)."""
    model, x, sigma, ctx = probe(make_small_tinywm, 3)
    followed, failed = Action(forward=1), Action(right=1, yaw=1)
    scale = torch.ones(NUM_LABELS)
    scale[followed.label], scale[failed.label] = 0.0, 2.0
    with exploring(model, Exploration(1.0, scale), 3, torch.Generator().manual_seed(5)):
        still = model.velocity(x, sigma, ctx, signs(followed, 3))
        wide = model.velocity(x, sigma, ctx, signs(failed, 3))
    assert torch.allclose(still, model.velocity(x, sigma, ctx, signs(followed, 3)), atol=1e-6)
    assert not torch.allclose(wide[0], wide[1])
    with exploring(model, Exploration(2.0), 3, torch.Generator().manual_seed(5)):  # same draw, twice the offset
        assert torch.allclose(wide, model.velocity(x, sigma, ctx, signs(failed, 3)), atol=1e-5)
    with pytest.raises(ValueError, match="one entry per label"):
        Exploration(1.0, torch.ones(3))


def test_per_label_factors_come_from_the_running_accuracy():
    accuracy = np.full(NUM_LABELS, 0.5)
    accuracy[[0, 1]] = [0.0, 1.0]
    exploration = build_exploration(1.0, 0.5, accuracy)
    assert exploration.label_scale[:3].tolist() == [1.5, 0.5, 1.0]
    assert build_exploration(1.0, 0.0, accuracy).label_scale is None


def test_a_model_without_an_action_embedding_is_not_explored():
    sys.path.insert(0, str(Path(__file__).parents[1] / "plugins"))
    try:
        from outside_world_model import build
    finally:
        sys.path.pop(0)
    model = build()
    assert not supports_exploration(model)
    x, ctx = torch.randn(2, 1, 12, 16, 16), model.build_context(torch.zeros(2, 1, 12, 16, 16))
    actions, sigma = signs(Action(yaw=1), 2), torch.full((2,), 0.5)
    generator = torch.Generator().manual_seed(0)
    with exploring(model, Exploration(1.0), 2, generator):
        explored = model.velocity(x, sigma, ctx, actions)
    assert torch.equal(explored, model.velocity(x, sigma, ctx, actions))
    assert torch.equal(generator.get_state(), torch.Generator().manual_seed(0).get_state())  # nothing drawn
