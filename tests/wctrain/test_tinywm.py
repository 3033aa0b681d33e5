"""tinywm: latent packing, save/load, seeded sampling, teacher forcing, pretraining, wcbench adapter."""

from pathlib import Path

import numpy as np
import pytest
import torch

from wcbench.core.actions import Action
from wcbench.models.base import WorldModel
from wctrain.models.base import TrainableWorldModel, actions_to_tensor, sample_clip
from wctrain.models.tinywm import TinyWM
from wctrain.models.wcbench_adapter import DEFAULT_CHECKPOINT, TinyWMWorldModel, load_tinywm
from wctrain.pretrain import (Batch, DataConfig, flow_matching_loss, load_pretrain_config, pretrain, render_dataset,
                              sample_batch)

TINY = dict(height=16, width=16, block_out_channels=(8, 16), cond_embed_dim=16, attention_heads=2,
            num_inference_steps=3)


def tiny_model(seed: int = 0, **overrides) -> TinyWM:
    torch.manual_seed(seed)
    model = TinyWM(**{**TINY, **overrides})
    # the output layer starts at zero; give it weights so outputs depend on the inputs
    torch.nn.init.normal_(model.conv_out.weight, std=0.05)
    return model.eval()


def public_config(model: TinyWM) -> dict:
    return {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in model.config.items()
            if not k.startswith("_")}


def test_latent_packing_is_exact_and_start_latent_repeats_the_image():
    model = tiny_model()
    frames = torch.rand(2, 8, 3, 16, 16)
    latents = model.encode(frames)
    assert latents.shape == (2, 2, 48, 8, 8)
    torch.testing.assert_close(model.decode(latents), frames)
    start = model.decode(model.start_latent(frames[:, 0]))
    torch.testing.assert_close(start, frames[:, :1].expand(-1, 4, -1, -1, -1))
    with pytest.raises(ValueError, match="multiple of 4"):
        model.encode(frames[:, :3])


def test_clean_prediction_is_a_learned_warp_of_the_last_frame_plus_a_residual():
    torch.manual_seed(0)
    model = TinyWM(**TINY).eval()  # output layer starts at zero: no displacement, no residual
    frames = torch.rand(1, 4, 3, 16, 16)
    ctx = model.build_context(model.encode(frames))
    x_t, sigma = torch.randn(1, 1, 48, 8, 8), torch.tensor([0.6])
    actions = actions_to_tensor([Action(yaw=1)])[None]

    def clean_frames() -> torch.Tensor:
        with torch.no_grad():
            return model.decode(x_t - sigma * model.velocity(x_t, sigma, ctx, actions))[0]

    torch.testing.assert_close(clean_frames(), frames[0, 3:].expand(4, -1, -1, -1), atol=1e-5, rtol=1e-5)
    # a displacement of +1 px in x everywhere (the output bias of the x channels) samples one pixel
    # to the right: the picture moves left
    with torch.no_grad():
        model.conv_out.bias[model.latent_channels::2] = 1.0
    torch.testing.assert_close(clean_frames()[:, :, :, :-1], frames[0, 3, :, :, 1:].expand(4, -1, -1, -1),
                               atol=1e-5, rtol=1e-5)


def test_implements_the_trainer_protocol():
    assert isinstance(tiny_model(), TrainableWorldModel)


def test_save_load_round_trip(tmp_path):
    model = tiny_model(context_latents=2)
    model.save_pretrained(tmp_path)
    assert (tmp_path / "diffusion_pytorch_model.safetensors").exists()
    loaded = TinyWM.from_pretrained(tmp_path).eval()
    assert public_config(loaded) == public_config(model)
    x = torch.randn(1, 1, 48, 8, 8)
    ctx = model.build_context(torch.randn(1, 1, 48, 8, 8))
    actions = actions_to_tensor([Action(yaw=1)])[None]
    sigma = torch.tensor([0.7])
    torch.testing.assert_close(loaded.velocity(x, sigma, ctx, actions), model.velocity(x, sigma, ctx, actions))


def test_sampling_is_seeded_and_shapes_follow_the_actions():
    model = tiny_model()
    prefix = model.start_latent(torch.rand(2, 3, 16, 16))
    actions = actions_to_tensor([Action(forward=1), Action(yaw=-1), Action(right=1, pitch=1)])[None].expand(2, -1, -1)
    sigmas = model.default_sigmas()

    def sample(seed: int) -> torch.Tensor:
        with torch.no_grad():
            return sample_clip(model, prefix, actions, sigmas, torch.Generator().manual_seed(seed))

    first = sample(5)
    assert first.shape == (2, 3, 48, 8, 8)
    torch.testing.assert_close(sample(5), first, rtol=0, atol=0)
    assert not torch.allclose(sample(6), first)
    # the actions reach the output: another action changes the clip under the same noise
    with torch.no_grad():
        other = sample_clip(model, prefix, torch.zeros_like(actions), sigmas, torch.Generator().manual_seed(5))
    assert not torch.allclose(other, first)


def test_teacher_forced_velocity_equals_latent_by_latent_velocity():
    """What the trainer re-evaluates on a sampled clip is what the sampler computed."""
    model = tiny_model(context_latents=2)
    prefix, clip, x_t = torch.randn(2, 1, 48, 8, 8), torch.randn(2, 3, 48, 8, 8), torch.randn(2, 3, 48, 8, 8)
    actions = actions_to_tensor([Action(forward=1), Action(yaw=1), Action(pitch=-1)])[None].expand(2, -1, -1)
    sigma = torch.tensor([[0.9, 0.5, 0.2], [0.3, 0.6, 0.8]])
    with torch.no_grad():
        together = model.velocity(x_t, sigma, model.build_context(prefix, clip), actions)
        for k in range(3):
            ctx = model.build_context(torch.cat([prefix, clip[:, :k]], dim=1))
            alone = model.velocity(x_t[:, k:k + 1], sigma[:, k], ctx, actions[:, 4 * k:4 * k + 4])
            # float32 convolutions round differently at other batch sizes on some CPUs (1.7e-5 seen);
            # a wrong context is off by about 20
            torch.testing.assert_close(together[:, k:k + 1], alone, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="one latent at a time"):
        model.velocity(x_t, sigma, model.build_context(prefix), actions)


@pytest.fixture(scope="module")
def tiny_data():
    data = DataConfig(num_trajectories=3, num_steps=4, render_scale=1, seed=3, basic_fraction=1.0, still_fraction=0.0)
    return render_dataset(data, (16, 16), 3, 0)


def test_rendered_data_is_latent_aligned(tiny_data):
    assert tiny_data.frames.shape == (3, 4 * 5, 16, 16, 3)
    # latent 0 is the start image four times, and the camera moves afterwards
    assert (tiny_data.frames[:, :4] == tiny_data.frames[:, :1]).all()
    assert np.abs(tiny_data.frames[:, -1].astype(int) - tiny_data.frames[:, 0].astype(int)).mean() > 3
    # basic scripts: one component per latent step; row 0 (the start latent) carries none
    assert (np.abs(tiny_data.actions[:, 1:]).sum(axis=-1) == 1).all() and not tiny_data.actions[:, 0].any()


def test_a_few_pretraining_steps_lower_the_loss_on_a_fixed_batch(tiny_data):
    batch = sample_batch(tiny_data, np.random.default_rng(0), 4, 2, 1)
    assert isinstance(batch, Batch) and batch.clip.shape == (4, 8, 3, 16, 16) and batch.actions.shape == (4, 8, 4)
    torch.manual_seed(0)
    model = TinyWM(**TINY)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    def fixed_loss() -> float:
        with torch.no_grad():
            return flow_matching_loss(model, batch, torch.Generator().manual_seed(9)).item()

    before = fixed_loss()
    generator = torch.Generator().manual_seed(1)
    for _ in range(40):
        loss = flow_matching_loss(model, batch, generator, context_noise=0.05)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert fixed_loss() < 0.95 * before


def test_pretrain_resumes_exactly(tmp_path):
    overrides = ["data.num_trajectories=2", "data.val_trajectories=1", "data.num_steps=3", "data.render_scale=1",
                 "+model_options.height=16", "+model_options.width=16", "+model_options.block_out_channels=[8,16]",
                 "+model_options.cond_embed_dim=16", "+model_options.attention_heads=2",
                 "train.batch_size=2", "train.clip_latents=2", "train.warmup_steps=2",
                 "train.checkpoint_every=2", "train.val_every=100", "train.log_every=1",
                 "train.device=cpu"]  # bitwise on CPU; GPU kernels need not be deterministic
    straight = pretrain(load_pretrain_config(overrides + [f"run_dir={tmp_path / 'a'}", "train.steps=4"]))
    pretrain(load_pretrain_config(overrides + [f"run_dir={tmp_path / 'b'}", "train.steps=2"]))
    resumed = pretrain(load_pretrain_config(overrides + [f"run_dir={tmp_path / 'b'}", "train.steps=4"]))
    assert (tmp_path / "b" / "latest").read_text().strip() == "step-000004"
    a, b = TinyWM.from_pretrained(straight), TinyWM.from_pretrained(resumed)
    for (name, pa), pb in zip(a.state_dict().items(), b.state_dict().values()):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0, msg=name)


def test_adapter_frames_and_seeding():
    adapter = TinyWMWorldModel(model=tiny_model())
    assert isinstance(adapter, WorldModel) and adapter.resolution is None and adapter.frames_per_clip == 16
    image = np.random.default_rng(0).integers(0, 256, (40, 48, 3), dtype=np.uint8)
    first = adapter.reset(image, "a room", seed=3)
    assert first.shape == (40, 48, 3) and first.dtype == np.uint8
    clip0 = adapter.step([Action(forward=1)] * 3)
    clip1 = adapter.step([Action(yaw=1), Action(yaw=1), Action(pitch=-1), Action(right=-1)])
    assert clip0.shape == (12, 40, 48, 3) and clip1.shape == (16, 40, 48, 3) and clip1.dtype == np.uint8
    adapter.reset(image, "a room", seed=3)
    np.testing.assert_array_equal(adapter.step([Action(forward=1)] * 3), clip0)
    adapter.reset(image, "a room", seed=4)
    assert not np.array_equal(adapter.step([Action(forward=1)] * 3), clip0)
    native = TinyWMWorldModel(model=tiny_model(), upsample=False)
    assert native.resolution == (16, 16)
    native.reset(image[:16, :16], "", seed=0)
    assert native.step([Action(yaw=-1)] * 2).shape == (8, 16, 16, 3)


def test_adapter_runs_under_the_harness():
    from wcbench.run.runner import generate_case
    from wcbench.data.suite import load_suite

    suite = load_suite("wc-mini")
    case = next(c for c in suite.cases if c.horizon == "short")
    video, timing, _ = generate_case(TinyWMWorldModel(model=tiny_model()), suite, case, seed=1)
    assert video.shape == (case.num_frames, suite.height, suite.width, 3) and video.dtype == np.uint8
    assert len(timing["clip_latency_s"]) == 8


@pytest.mark.skipif(not (DEFAULT_CHECKPOINT / "config.json").exists(), reason="no shipped checkpoint yet")
def test_shipped_checkpoint_loads_by_default_and_is_small():
    size = sum(p.stat().st_size for p in Path(DEFAULT_CHECKPOINT).iterdir())
    assert size <= 20 * 2**20
    adapter = TinyWMWorldModel()
    assert public_config(adapter.model) == public_config(load_tinywm(DEFAULT_CHECKPOINT))
    assert public_config(load_tinywm()) == public_config(adapter.model)  # "shipped" is the default
    adapter.reset(np.zeros((64, 64, 3), np.uint8), "", seed=0)
    assert adapter.step([Action(yaw=1)]).shape == (4, 64, 64, 3)


@pytest.mark.skipif(not (DEFAULT_CHECKPOINT / "config.json").exists(), reason="no shipped checkpoint yet")
def test_shipped_checkpoint_moves_the_picture_the_commanded_way():
    """Turning right moves the picture left, turning left moves it right, looking up moves it down
    (measured by phase correlation on native 64x64 frames of an unseen scene)."""
    import cv2

    from wcbench.core.camera import intrinsics_from_fov
    from wcbench.data.scenes.synthetic import build_scene

    scene = build_scene(seed=4242)
    image = scene.render(np.eye(4), intrinsics_from_fov(64, 64, 75.0), 64, 64)

    def shift(action: Action) -> tuple[float, float]:
        adapter = TinyWMWorldModel(upsample=False)
        first = adapter.reset(image, "", seed=0)
        last = adapter.step([action] * 3)[-1]
        gray = [cv2.cvtColor(f, cv2.COLOR_RGB2GRAY).astype(np.float32) for f in (first, last)]
        (dx, dy), _ = cv2.phaseCorrelate(gray[0], gray[1])
        return dx, dy

    # 3 latent steps of 3 degrees: about 6.5 px at 64 px and a 75 degree field of view
    assert shift(Action(yaw=1))[0] < -3 and shift(Action(yaw=-1))[0] > 3
    assert shift(Action(pitch=1))[1] > 3 and abs(shift(Action())[0]) < 1
