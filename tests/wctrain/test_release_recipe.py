"""`recipe=worldcompass-release`: the released WorldCompass advantage and old-policy rules, each
written here from its description (the issue, docs/release-fidelity.md), independently of the
implementation, and compared with it (equal to 1e-9); then the recipe trains end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

from wctrain.cli import load_config
from wctrain.config import to_trainer_config
from wctrain.rl.advantages import compute_advantages, compute_pooled_std
from wctrain.rl.policy import EMA
from wctrain.rl.schedule import accumulation_plan
from wctrain.rl.trainer import advantage_config, old_policy_schedule, train

RECIPE = ["recipe=worldcompass-release"]


def release_r(groups: dict[str, np.ndarray], weights: dict[str, float], clip: float) -> tuple[np.ndarray, np.ndarray]:
    """The release's advantages for rewards ``(n_groups, G)`` per name: each reward minus its
    group's mean, over ONE unbiased std of that reward across every group (+1e-8); the advantages
    summed with the weights divided by their sum; clamped to +-clip; r = A / clip / 2 + 1/2 in
    [0, 1]. Returns (A, r)."""
    total = sum(weights.values())
    advantage = 0.0
    for name, rewards in groups.items():
        std = torch.tensor(rewards).reshape(-1).std().item() + 1e-8  # torch's default: unbiased
        advantage = advantage + weights[name] / total * (rewards - rewards.mean(axis=1, keepdims=True)) / std
    advantage = np.clip(advantage, -clip, clip)
    return advantage, np.clip(advantage / clip / 2 + 0.5, 0, 1)


def release_decay(step: int) -> float:
    """The release's old-policy decay after the optimiser step of training step ``step`` (from 1)."""
    return min(0.9, 0.2 + 0.01 * step)


@pytest.fixture(scope="module")
def recipe():
    return to_trainer_config(load_config("train", RECIPE))


def test_recipe_advantages_are_the_releases(recipe):
    rng = np.random.default_rng(0)
    groups = {"fine_action": rng.integers(0, 33, (3, 12)) / 32,  # 16 transitions: multiples of 1/32
              "quality": -np.abs(rng.normal(0, 0.3, (3, 12)))}
    config = advantage_config(recipe)
    pooled = {name: compute_pooled_std(values, config.ddof) for name, values in groups.items()}
    ours = [compute_advantages({name: values[g].tolist() for name, values in groups.items()}, config, pooled)
            for g in range(3)]
    expected_a, expected_r = release_r(groups, {"fine_action": 2.0, "quality": 1.0}, clip=2.0)
    np.testing.assert_allclose(np.stack([a.r.numpy() for a in ours]), expected_r, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.stack([a.advantage.clamp(-2, 2).numpy() for a in ours]), expected_a, atol=1e-9)
    # best-of-N: the top 3 and the bottom 3 of 12 (--bestofn 6) by the combined advantage
    for group, result in zip(expected_a, ours):
        order = np.argsort(group)
        assert sorted(result.selected.tolist()) == sorted(order[:3].tolist() + order[-3:].tolist())
    # the default (each group's own population std, raw weights) gives other numbers on the same rewards
    default = advantage_config(to_trainer_config(load_config("train", ["reward.funcs=[fine_action,quality]",
                                                                        "reward.weights=[2.0,1.0]"])))
    other = compute_advantages({name: values[0].tolist() for name, values in groups.items()}, default)
    assert np.abs(other.r.numpy() - expected_r[0]).max() > 0.05


def test_global_std_refuses_per_latent_rewards(recipe):
    with pytest.raises(ValueError, match=r"per-latent reward .* needs reward\.std_scope=group"):
        compute_advantages({"fine_action": [[0.5, 1.0]] * 4, "quality": [0.1] * 4}, advantage_config(recipe))


def test_recipe_old_policy_decay_is_the_releases(recipe):
    schedule = old_policy_schedule(recipe)
    for update in range(200):  # update n (0-based) follows the release's training step n + 1
        assert schedule(update) == pytest.approx(release_decay(update + 1), abs=1e-9)
    # and the shadow moves as the release's does: shadow <- d shadow + (1 - d) weights
    torch.manual_seed(0)
    model = nn.Linear(3, 2).double()
    ema = EMA(model, schedule)
    expected = {name: p.detach().clone() for name, p in model.named_parameters()}
    for step in range(1, 40):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p))
        ema.update(model)
        for name, p in model.named_parameters():
            expected[name] = release_decay(step) * expected[name] + (1 - release_decay(step)) * p.detach()
    for name, shadow in ema.module.named_parameters():
        torch.testing.assert_close(shadow, expected[name], rtol=0, atol=1e-9)


def test_default_old_policy_schedule_is_unchanged():
    schedule = old_policy_schedule(to_trainer_config(load_config("train", [])))
    assert [schedule(n) for n in (0, 1, 10, 25, 100)] == [0.0, 0.02, 0.2, 0.5, 0.5]


def test_recipe_steps_the_optimiser_as_the_release_accumulates(recipe):
    # --bestofn 6 with --gradient_accumulation_steps 2: an optimiser step every 2 selected samples, 3 a step
    assert (recipe.rl.num_selected, recipe.rl.grad_accum_samples) == (6, 2)
    assert [list(chunk) for chunk in accumulation_plan(recipe.rl.num_selected, recipe.rl.grad_accum_samples)] == [
        [0, 1], [2, 3], [4, 5]]
    assert to_trainer_config(load_config("train", [])).rl.grad_accum_samples is None  # the default: one step
    with pytest.raises(ValueError, match=r"grad_accum_samples=4 must .* divide the 6 selected"):
        to_trainer_config(load_config("train", [*RECIPE, "rl.grad_accum_samples=4"]))


def test_recipe_trains_end_to_end_on_tinywm(tmp_path, make_small_tinywm):
    init = tmp_path / "init"
    make_small_tinywm().save_pretrained(init)
    run = train(load_config("train", [*RECIPE, f"run_dir={tmp_path / 'run'}", f"+model_options.checkpoint={init}",
                                      "rl.group_size=4", "rl.top_k=2", "rl.episode_clips=2", "rl.steps=2",
                                      "eval.every=0", "rl.trainable=[all]", "rl.lr=1e-4", "rl.shared_lr=1e-4"]))
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert [row["optimizer_steps"] for row in rows] == [2, 2]  # 4 selected, a step every 2
    assert {"reward_fine_action", "reward_quality"} <= set(rows[0]) and "reward_following" not in rows[0]
    config = json.loads((run / "config.json").read_text())
    assert config["reward"]["std_scope"] == "global" and config["policy"]["old_min_decay"] == 0.2
    assert (run / "final" / "wctrain_model.json").exists()
