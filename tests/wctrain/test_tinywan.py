"""tinywan: a whole-clip video diffusion transformer from diffusers' Wan blocks."""

import numpy as np
import pytest
import torch

from wcbench.core.actions import Action
from wctrain.models.base import TrainableWorldModel, actions_to_tensor, sample_clip
from wctrain.models.tinywan import SHIPPED_CHECKPOINT, TinyWan, load_tinywan
from wctrain.rl.exploration import Exploration, exploring, supports_exploration

TINY = dict(height=16, width=16, token_patch=2, dim=32, ffn_dim=64, heads=2, layers=2, num_inference_steps=3)


def tiny_model(seed: int = 0, **overrides) -> TinyWan:
    torch.manual_seed(seed)
    model = TinyWan(**{**TINY, **overrides})
    torch.nn.init.normal_(model.proj_out.weight, std=0.05)  # the output layer starts at zero
    return model.eval()


def clip_inputs(batch: int = 2, latents: int = 3):
    actions = actions_to_tensor([Action(forward=1), Action(yaw=-1), Action(right=1, pitch=1)][:latents])
    return torch.randn(batch, latents, 48, 8, 8), torch.full((batch,), 0.6), actions[None].expand(batch, -1, -1)


def test_implements_the_protocol_and_denoises_the_whole_clip_jointly():
    model = tiny_model()
    assert isinstance(model, TrainableWorldModel) and model.latents_per_denoise is None
    assert supports_exploration(model)
    x_t, sigma, actions = clip_inputs()
    ctx = model.build_context(torch.randn(2, 1, 48, 8, 8))
    with torch.no_grad():
        velocity = model.velocity(x_t, sigma, ctx, actions)
        changed = x_t.clone()
        changed[:, 2] += 1.0  # only the last latent's noise
        other = model.velocity(changed, sigma, ctx, actions)
    assert velocity.shape == x_t.shape
    assert not torch.allclose(velocity[:, 0], other[:, 0])  # the first latent attends to the last
    # the sampler asks for the whole clip at once: one velocity call per Euler step
    calls = []
    original = model.velocity
    model.velocity = lambda *args: calls.append(args[0].shape[1]) or original(*args)
    with torch.no_grad():
        clip = sample_clip(model, torch.randn(2, 1, 48, 8, 8), actions, model.default_sigmas(),
                           torch.Generator().manual_seed(0))
    assert clip.shape == (2, 3, 48, 8, 8) and calls == [3, 3, 3]


def test_an_untrained_model_repeats_the_last_frame():
    torch.manual_seed(0)
    model = TinyWan(**TINY).eval()  # zero output layer: no displacement, no residual
    frames = torch.rand(1, 4, 3, 16, 16)
    x_t, sigma, actions = clip_inputs(1, 2)
    ctx = model.build_context(model.encode(frames))
    with torch.no_grad():
        clean = model.decode(x_t - sigma.reshape(-1, 1, 1, 1, 1) * model.velocity(x_t, sigma, ctx, actions))[0]
    torch.testing.assert_close(clean, frames[0, 3:].expand(8, -1, -1, -1), atol=1e-5, rtol=1e-5)


def test_save_load_round_trip_and_the_factory(tmp_path):
    model = tiny_model(context_latents=2)
    model.save_pretrained(tmp_path)
    loaded = load_tinywan(tmp_path)
    x_t, sigma, actions = clip_inputs()
    ctx = model.build_context(torch.randn(2, 3, 48, 8, 8))
    with torch.no_grad():
        torch.testing.assert_close(loaded.velocity(x_t, sigma, ctx, actions), model.velocity(x_t, sigma, ctx, actions))
    assert isinstance(load_tinywan(None, **TINY), TinyWan)  # a new model for `wctrain pretrain`
    with pytest.raises(ValueError, match="apply to a new model only"):
        load_tinywan(tmp_path, dim=64)
    with pytest.raises(FileNotFoundError, match="no TinyWan checkpoint"):
        load_tinywan(tmp_path / "missing")


def test_gradient_checkpointing_gives_the_same_gradients():
    x_t, sigma, actions = clip_inputs()
    prefix = torch.randn(2, 1, 48, 8, 8)
    grads = []
    for checkpointing in (False, True):
        model = tiny_model().train()
        if checkpointing:
            model.enable_gradient_checkpointing()
        model.velocity(x_t, sigma, model.build_context(prefix), actions).square().mean().backward()
        grads.append(model.action_embedding.weight.grad.clone())
    torch.testing.assert_close(grads[0], grads[1])


def test_exploration_reaches_the_clip_through_the_action_embedding():
    model = tiny_model()
    x_t, sigma, actions = clip_inputs(3)
    x_t = x_t[:1].expand(3, -1, -1, -1, -1)
    ctx = model.build_context(torch.randn(1, 1, 48, 8, 8).expand(3, -1, -1, -1, -1))
    with torch.no_grad(), exploring(model, Exploration(1.0), 3, torch.Generator().manual_seed(0)):
        explored = model.velocity(x_t, sigma, ctx, actions)
    assert not torch.allclose(explored[0], explored[1])


def test_a_few_pretraining_steps_lower_the_loss_on_a_fixed_batch():
    from wctrain.config import DataConfig
    from wctrain.pretrain import flow_matching_loss, render_dataset, sample_batch

    data = render_dataset(DataConfig(num_trajectories=2, num_steps=4, render_scale=1, seed=3), (16, 16), 2, 0)
    batch = sample_batch(data, np.random.default_rng(0), 4, 3, 1)
    torch.manual_seed(0)
    model = TinyWan(**TINY)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    def fixed_loss() -> float:
        with torch.no_grad():
            return flow_matching_loss(model, batch, torch.Generator().manual_seed(9)).item()

    before = fixed_loss()
    generator = torch.Generator().manual_seed(1)
    for _ in range(30):
        loss = flow_matching_loss(model, batch, generator)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert fixed_loss() < 0.9 * before


def test_runs_under_the_wcbench_harness():
    from wcbench.run.runner import generate_case
    from wcbench.data.suite import load_suite
    from wctrain.models.wcbench_adapter import TrainableWorldModelAdapter

    suite = load_suite("wc-mini")
    case = next(c for c in suite.cases if c.horizon == "short")
    video, _, _ = generate_case(TrainableWorldModelAdapter(tiny_model()), suite, case, seed=1)
    assert video.shape == (case.num_frames, suite.height, suite.width, 3) and video.dtype == np.uint8


@pytest.mark.skipif(not (SHIPPED_CHECKPOINT / "config.json").exists(), reason="no shipped tinywan checkpoint")
def test_shipped_checkpoint_loads_by_default():
    model = load_tinywan()
    assert model.resolution == (64, 64) and sum(p.numel() for p in model.parameters()) < 5_000_000
