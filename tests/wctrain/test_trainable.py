"""Which weights train (rl.trainable), their learning rates, and per-latent credit in the loss."""

import pytest
import torch

from wcbench.core.actions import Action
from wctrain.config import RLConfig
from wctrain.models.base import actions_to_tensor
from wctrain.rl.loss import VelocityField, group_loss
from wctrain.rl.policy import build_frozen_copy
from wctrain.rl.rollout import GroupRollout
from wctrain.rl.trainable import names_module, optimizer_groups, resolve_trainable, select_trainable


@pytest.fixture()
def model(make_small_tinywm):
    return make_small_tinywm()


def test_the_model_declares_what_trains_by_default(model):
    assert resolve_trainable(model, None) == ["action_embedding", "action_proj"]
    assert resolve_trainable(model, ["all"]) is None
    assert resolve_trainable(model, ["cond_emb_proj"]) == ["cond_emb_proj"]
    assert resolve_trainable(torch.nn.Linear(2, 2), None) is None  # declares nothing: every weight


def test_select_trainable_freezes_the_rest_and_rejects_a_typo(model):
    assert select_trainable(model, ["action_embedding"]) == ["action_embedding.weight"]
    assert not any(p.requires_grad for n, p in model.named_parameters() if not n.startswith("action_embedding"))
    assert len(select_trainable(model, None)) == len(list(model.parameters()))
    with pytest.raises(ValueError, match="action_embeding"):
        select_trainable(model, ["action_embeding"])


def test_select_trainable_names_a_module_inside_every_block(model):
    """``cond_emb_proj`` (the FiLM projection) sits in every block, not at the top level."""
    trained = select_trainable(model, ["action_proj", "cond_emb_proj"])
    film = [n for n, _ in model.named_parameters() if ".cond_emb_proj." in n]
    assert len(film) >= 4 and set(film) <= set(trained)
    assert set(trained) - set(film) == {n for n, _ in model.action_proj.named_parameters(prefix="action_proj")}
    assert not model.action_embedding.weight.requires_grad
    # whole path components only: no match on a substring of a name
    assert not names_module("cond_emb_projection.weight", "cond_emb_proj")
    assert not names_module("xaction_proj.0.weight", "action_proj")
    assert names_module("down_blocks.0.cond_emb_proj.weight", "down_blocks.0")


def test_optimizer_groups_give_the_table_and_the_shared_weights_their_own_rates(model):
    select_trainable(model, ["action_embedding", "action_proj"])
    table, shared = optimizer_groups(model, 1e-2, 1e-3)
    assert table["lr"] == 1e-2 and [p.shape for p in table["params"]] == [model.action_embedding.weight.shape]
    assert shared["lr"] == 1e-3 and {id(p) for p in shared["params"]} == {id(p) for p in model.action_proj.parameters()}
    select_trainable(model, ["action_embedding"])
    assert [g["lr"] for g in optimizer_groups(model, 1e-2, 1e-3)] == [1e-2]  # no empty group


def test_per_latent_credit_reaches_only_the_latents_own_action(model):
    """With r per latent, a latent at r = 1/2 moves nothing: at v_theta = v_old the embedding row
    of an action only that latent commands gets no gradient, while a clip-level r moves it."""
    with torch.no_grad():  # a non-zero output layer, so the action embeddings get gradients
        model.conv_out.weight.normal_(std=0.05)
    select_trainable(model, ["action_embedding"])
    old, field = build_frozen_copy(model), VelocityField(model)
    first, second = Action(forward=1, yaw=-1), Action(right=1, yaw=1)
    actions = actions_to_tensor([first, second])[None].expand(3, -1, -1)
    latents = torch.randn(3, 2, model.latent_channels, 32, 32)
    rollout = GroupRollout(0, torch.randn(3, 1, model.latent_channels, 32, 32), latents, actions, [], 3)
    rl, sigmas = RLConfig(timestep_fraction=1.0), model.default_sigmas()

    def row_grads(r):
        model.zero_grad()
        loss, deviation = group_loss(field, old, rollout, r, torch.arange(3), sigmas,
                                     torch.Generator().manual_seed(0), rl)
        loss.backward()
        assert deviation == 0.0
        grad = model.action_embedding.weight.grad
        return grad[first.label].abs().sum().item(), grad[second.label].abs().sum().item()

    per_latent = row_grads(torch.tensor([[1.0, 0.5], [0.0, 0.5], [1.0, 0.5]]))
    assert per_latent[0] > 0 and per_latent[1] == 0.0
    per_clip = row_grads(torch.tensor([1.0, 0.0, 1.0]))
    assert per_clip[0] > 0 and per_clip[1] > 0
