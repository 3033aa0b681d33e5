"""wctrain's trainable models: where they come from (entry points, dotted paths), the protocol check, and how an
exported model is found again (by wctrain and by `wcbench run`)."""

from pathlib import Path

import numpy as np
import pytest
import torch

from wcbench.core.actions import Action
from wctrain.models.registry import available_models, build_trainable, load_trained, save_model

PLUGINS = Path(__file__).parents[1] / "plugins"


@pytest.fixture()
def plugins(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))


def test_entry_points_name_the_shipped_models():
    assert {"tinywm", "tinywan"} <= set(available_models())


def test_a_factory_by_dotted_path_with_options(plugins):
    model = build_trainable("outside_world_model:build", {"hidden": 4})
    assert model.conv_in.out_channels == 4
    with pytest.raises(ValueError, match=r"refused model_options \{'width': 3\}"):
        build_trainable("outside_world_model:build", {"width": 3})
    with pytest.raises(ValueError, match="has no attribute 'nothing'"):
        build_trainable("outside_world_model:nothing")
    with pytest.raises(ValueError, match="cannot import module"):
        build_trainable("no_such_module_here:build")


def test_an_object_that_is_not_a_trainable_world_model_names_what_it_lacks(plugins):
    with pytest.raises(ValueError) as error:
        build_trainable("outside_world_model:not_a_world_model")
    message = str(error.value)
    assert "Linear" in message and "not a TrainableWorldModel" in message
    for member in ("frames_per_latent", "latents_per_denoise", "context_latents", "encode", "velocity",
                   "default_sigmas"):
        assert member in message


def test_exports_are_rebuilt_with_their_weights(plugins, tmp_path):
    """A plain module is saved as a safetensors state dict, a diffusers model with save_pretrained;
    both come back with their weights, and `wcbench run --model wctrain` runs them."""
    from wctrain.models.tinywm import TinyWM
    from wctrain.models.wcbench_adapter import TrainedWorldModel

    torch.manual_seed(0)
    outside = build_trainable("outside_world_model:build", {"hidden": 4})
    save_model(outside, tmp_path / "outside", "outside_world_model:build", {"hidden": 4})
    assert (tmp_path / "outside" / "model.safetensors").exists()
    restored = load_trained(tmp_path / "outside")
    assert all(torch.equal(a, b) for a, b in zip(outside.state_dict().values(), restored.state_dict().values()))

    tiny = dict(height=16, width=16, block_out_channels=[8, 16], cond_embed_dim=16, attention_heads=2)
    model = build_trainable("tinywm", {"checkpoint": None, **tiny})
    save_model(model, tmp_path / "tinywm", "tinywm", {"checkpoint": None, **tiny})
    assert (tmp_path / "tinywm" / "config.json").exists()
    assert TinyWM.from_pretrained(tmp_path / "tinywm").config.cond_embed_dim == 16  # --model tinywm loads it too
    adapter = TrainedWorldModel(tmp_path / "tinywm")
    adapter.reset(np.zeros((40, 40, 3), np.uint8), "", seed=0)
    assert adapter.step([Action(yaw=1)]).shape == (4, 40, 40, 3)
    with pytest.raises(FileNotFoundError, match="wctrain_model.json"):
        load_trained(tmp_path)


def test_the_generic_adapter_streams_a_whole_clip_model(plugins):
    from wctrain.models.wcbench_adapter import TrainableWorldModelAdapter

    adapter = TrainableWorldModelAdapter(build_trainable("outside_world_model:build"))
    first = adapter.reset(np.full((48, 48, 3), 100, np.uint8), "", seed=1)
    assert first.shape == (48, 48, 3)
    clip = adapter.step([Action(forward=1)] * 4)
    assert clip.shape == (16, 48, 48, 3) and clip.dtype == np.uint8
    assert adapter._history.shape[1] == 2  # the model's context_latents
