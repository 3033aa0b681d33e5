"""Group advantages on hand-computed numbers: normalisation, None rewards, r, best-of-N."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from wctrain.rl.advantages import (AdvantageConfig, best_of_n, compute_advantages, compute_group_advantages,
                                compute_latent_advantages, group_normalize, to_r)


def close(actual: torch.Tensor, expected) -> None:
    # atol: eps = 1e-6 in the std
    torch.testing.assert_close(actual, torch.tensor(expected, dtype=torch.float64), atol=1e-5, rtol=0)


def test_group_normalize_known_numbers():
    # mean 2.5, population std sqrt(1.25)
    std = math.sqrt(1.25)
    close(group_normalize([1.0, 2.0, 3.0, 4.0]), [-1.5 / std, -0.5 / std, 0.5 / std, 1.5 / std])
    # input types: list, numpy, tensor give the same numbers
    close(group_normalize(np.array([1.0, 2.0, 3.0, 4.0])), [-1.5 / std, -0.5 / std, 0.5 / std, 1.5 / std])
    close(group_normalize(torch.tensor([1.0, 2.0, 3.0, 4.0])), [-1.5 / std, -0.5 / std, 0.5 / std, 1.5 / std])


def test_constant_group_has_zero_advantage_and_half_r():
    advantage = group_normalize([0.7, 0.7, 0.7, 0.7])
    close(advantage, [0.0] * 4)
    close(to_r(advantage, 1.0), [0.5] * 4)


def test_each_group_is_normalised_by_its_own_std():
    close(group_normalize([[0.0, 1.0], [10.0, 12.0]]), [[-1.0, 1.0], [-1.0, 1.0]])


def test_rewards_that_do_not_apply():
    close(group_normalize([1.0, None, 3.0]), [-1.0, 0.0, 1.0])
    close(group_normalize([None, None]), [0.0, 0.0])
    close(group_normalize([[1.0, None, 3.0], [None, 5.0, 5.0]]), [[-1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="NaN"):
        group_normalize([1.0, float("nan"), 3.0])
    with pytest.raises(ValueError, match="shape"):
        group_normalize(torch.zeros(2, 2, 2))


def test_to_r():
    advantage = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0], dtype=torch.float64)
    close(to_r(advantage, 1.0), [0.0, 0.25, 0.5, 0.75, 1.0])
    close(to_r(advantage, 2.0), [0.0, 0.375, 0.5, 0.625, 1.0])
    with pytest.raises(ValueError):
        to_r(advantage, 0.0)


def test_best_of_n():
    scores = torch.tensor([0.1, 0.9, 0.5, 0.9, -0.3, 0.0])
    # ranking: 1, 3 (tie, lower index first), 2, 0, 5, 4
    assert best_of_n(scores, 2).tolist() == [1, 3, 4, 5]
    assert best_of_n(scores, 1).tolist() == [1, 4]
    assert best_of_n(torch.zeros(6), 2).tolist() == [0, 1, 4, 5]  # all tied: still disjoint
    assert best_of_n(scores, 3).tolist() == list(range(6))
    assert best_of_n(scores, None).tolist() == list(range(6))
    with pytest.raises(ValueError):
        best_of_n(scores, 0)
    with pytest.raises(ValueError, match="NaN"):
        best_of_n(torch.tensor([0.0, float("nan"), 1.0]), 1)


def test_compute_group_advantages_known_numbers():
    std = math.sqrt(1.25)
    a = [-1.5 / std, -0.5 / std, 0.5 / std, 1.5 / std]
    config = AdvantageConfig(weights={"if": 0.75, "vq": 0.25}, z=1.0, top_k=1)
    result = compute_group_advantages({"if": [1.0, 2.0, 3.0, 4.0], "vq": [4.0, 3.0, 2.0, 1.0]}, config)
    close(result.per_reward["if"], a)
    close(result.per_reward["vq"], [-value for value in a])
    combined = [0.5 * value for value in a]  # 0.75 a - 0.25 a
    close(result.advantage, combined)
    close(result.r, [0.5 + 0.5 * value for value in combined])
    assert result.selected.tolist() == [0, 3]
    assert result.is_selected.tolist() == [True, False, False, True]


def test_compute_group_advantages_several_groups_and_none():
    config = AdvantageConfig(weights={"if": 1.0, "vq": 0.0}, z=0.5, top_k=1)
    rewards = {"if": [[1.0, None, 3.0], [2.0, 2.0, 2.0]], "vq": [[0.0, 0.0, 1.0], [5.0, None, 6.0]]}
    result = compute_group_advantages(rewards, config)
    close(result.advantage, [[-1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    close(result.r, [[0.0, 0.5, 1.0], [0.5, 0.5, 0.5]])
    assert result.selected.tolist() == [[0, 2], [0, 2]]


def test_compute_group_advantages_rejects_mismatches():
    config = AdvantageConfig(weights={"if": 0.5, "vq": 0.5})
    with pytest.raises(ValueError, match="same"):
        compute_group_advantages({"if": [1.0, 2.0]}, config)
    with pytest.raises(ValueError, match="one value per candidate"):
        compute_group_advantages({"if": [1.0, 2.0], "vq": [1.0, 2.0, 3.0]}, config)


def test_latent_advantages_normalise_each_latent_over_the_candidates():
    # IF per (candidate, latent); VQ per candidate, counted for every latent of its clip
    config = AdvantageConfig(weights={"if": 0.5, "vq": 0.5}, z=2.0, top_k=1)
    result = compute_latent_advantages({"if": [[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]], "vq": [0.5, 0.6, 0.7]}, config)
    a, b = 1 / np.sqrt(2), np.sqrt(2)  # IF advantages of (1, 0, 1) and (0, 0, 1) over the group
    vq = np.sqrt(1.5)                  # VQ advantage of 0.7 in (0.5, 0.6, 0.7)
    expected = 0.5 * np.array([[a, -b / 2], [-b, -b / 2], [a, b]]) + 0.5 * np.array([[-vq], [0.0], [vq]])
    assert result.advantage.numpy() == pytest.approx(expected, abs=1e-5)
    assert result.r.numpy() == pytest.approx(0.5 + 0.5 * np.clip(expected / 2.0, -1, 1), abs=1e-5)
    assert result.selected.tolist() == [0, 2]  # ranked by the mean over latents: c2 best, c0 worst
    # a latent that every candidate follows alike pushes nothing, whatever the other latents do
    flat = compute_latent_advantages({"if": [[1.0, 0.0], [1.0, 1.0]], "vq": [0.5, 0.5]}, config)
    assert flat.r[:, 0].tolist() == [0.5, 0.5] and flat.r[0, 1] < 0.5 < flat.r[1, 1]


def test_latent_advantages_reject_bad_shapes():
    config = AdvantageConfig(weights={"if": 0.5, "vq": 0.5})
    with pytest.raises(ValueError, match="at least one"):
        compute_latent_advantages({"if": [1.0, 0.0], "vq": [0.5, 0.6]}, config)
    with pytest.raises(ValueError, match="one value per candidate"):
        compute_latent_advantages({"if": [[1.0, 0.0], [0.0, 1.0]], "vq": [0.5, 0.6, 0.7]}, config)


def test_advantages_are_per_latent_when_a_reward_is():
    config = AdvantageConfig(weights={"following": 1.0, "quality": 0.0})
    per_latent = compute_advantages({"following": [[1.0, 0.0], [0.0, 0.0]], "quality": [0.5, 0.6]}, config)
    assert tuple(per_latent.r.shape) == (2, 2)
    per_clip = compute_advantages({"following": [1.0, 0.0], "quality": [0.5, 0.6]}, config)
    assert tuple(per_clip.r.shape) == (2,) and per_clip.r[0] > 0.5 > per_clip.r[1]
