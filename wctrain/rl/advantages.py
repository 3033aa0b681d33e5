"""Group advantages: rewards -> per-reward normalised advantages -> weighted sum -> r in [0, 1],
and best-of-N selection of the candidates to train on. Pure functions on CPU tensors.

A group is the G candidates generated for the same target clip (same prefix, independent
noise). Rewards arrive as ``(G,)`` for one group or ``(n_groups, G)`` for several (for example
every rank's groups after a gather); every function works per group along the last axis.
Computations run in float64 (advantages are compared across ranks for the 2-process = 1-process
invariant; ``nft_loss`` casts ``r`` to the model's dtype).

Rewards that do not apply (``None``, as a TRL-style reward returns for a clip it cannot judge)
are left out of their group's mean and std and get advantage 0 for that reward, so they neither
push nor pull; a candidate's combined advantage then comes from its other rewards only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import torch

from wctrain.config import STD_SCOPES

RewardValues = torch.Tensor | np.ndarray | Sequence[float | None] | Sequence[Sequence[float | None]]


def _as_rewards(values: RewardValues) -> tuple[torch.Tensor, torch.Tensor]:
    """``(rewards float64, applies bool)``; ``None`` entries -> not applicable (value 0)."""
    if isinstance(values, torch.Tensor):
        data = values.detach().to("cpu", torch.float64)
        applies = torch.ones_like(data, dtype=torch.bool)
    else:
        array = np.asarray(values, dtype=object)
        is_given = np.vectorize(lambda value: value is not None, otypes=[bool])(array)
        data = torch.from_numpy(np.where(is_given, array, 0.0).astype(np.float64))
        applies = torch.from_numpy(is_given)
    if data.dim() not in (1, 2):
        raise ValueError(f"rewards must be (G,) or (n_groups, G), got shape {tuple(data.shape)}")
    if torch.isnan(data[applies]).any():
        raise ValueError("a reward is NaN; a reward that does not apply must be None, a NaN is a scorer bug")
    return torch.where(applies, data, torch.zeros_like(data)), applies


def group_normalize(rewards: RewardValues, eps: float = 1e-6, ddof: int = 0,
                    std: float | None = None) -> torch.Tensor:
    """Advantages ``(reward - group mean) / (group std + eps)`` per group (last axis), same shape
    as ``rewards``, with the population std (``ddof`` 0) or the unbiased one (1). ``std``: one
    given std for every group instead of each group's own (the release's ``--std_type global``,
    :func:`compute_pooled_std`). A constant group gets advantage 0; ``None`` rewards get 0 and
    are left out of the mean and std."""
    data, applies = _as_rewards(rewards)
    count = applies.sum(dim=-1, keepdim=True)
    mean = data.sum(dim=-1, keepdim=True) / count.clamp_min(1)
    centred = torch.where(applies, data - mean, torch.zeros_like(data))
    if std is None:
        # a group of one (after ddof) has no spread: its std is 0, so its advantage is 0
        spread = (centred.square().sum(dim=-1, keepdim=True) / (count - ddof).clamp_min(1)).sqrt()
    else:
        spread = torch.full_like(mean, float(std))
    return centred / (spread + eps)


def compute_pooled_std(groups: RewardValues, ddof: int = 0) -> float:
    """One std over every candidate of every group (``(n_groups, G)``, or ``(G,)``; ``None`` or NaN
    left out): the release's ``--std_type global``, each reward's std over all candidates of all
    ranks' groups, about the mean of them all. 0 when fewer than ``ddof + 1`` values apply."""
    values = np.asarray(groups, dtype=object).reshape(-1)
    given = np.array([v for v in values.tolist() if v is not None], dtype=np.float64)
    given = given[~np.isnan(given)]
    if len(given) <= ddof:
        return 0.0
    return float(np.std(given, ddof=ddof))


def normalized_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """The weights divided by their sum (the release's ``w_k / sum w``); all 0 is an error."""
    total = sum(weights.values())
    if total <= 0:
        raise ValueError(f"reward weights {dict(weights)} sum to {total}; normalising them needs a positive sum")
    return {name: weight / total for name, weight in weights.items()}


def to_r(advantage: torch.Tensor, z: float) -> torch.Tensor:
    """The optimality probability ``clamp(1/2 + 1/2 clip(A / Z, -1, 1), 0, 1)`` of ``nft_loss``.

    ``A = 0`` maps to 1/2 (no push either way); ``|A| >= Z`` saturates at 0 or 1.
    """
    if not z > 0:
        raise ValueError(f"the advantage clip Z must be positive, got {z}")
    return (0.5 + 0.5 * (advantage / z).clamp(-1, 1)).clamp(0, 1)


def best_of_n(scores: torch.Tensor, k: int | None) -> torch.Tensor:
    """Indices (ascending) of the top ``k`` and bottom ``k`` of ``scores`` ``(G,)``.

    One ranking, score descending and ties by lower index first; the first k and the last k of
    it are kept, so the two sets never overlap. ``k=None`` or ``2k >= G`` keeps all G.
    """
    if scores.dim() != 1:
        raise ValueError(f"scores must be (G,), got shape {tuple(scores.shape)}")
    if torch.isnan(scores).any():
        raise ValueError("a best-of-N score is NaN")
    size = scores.shape[0]
    if k is None or 2 * k >= size:
        return torch.arange(size)
    if k < 1:
        raise ValueError(f"k must be at least 1 (or None to keep all), got {k}")
    values = scores.tolist()
    ranking = sorted(range(size), key=lambda index: (-values[index], index))
    return torch.tensor(sorted(ranking[:k] + ranking[-k:]))


@dataclass
class AdvantageConfig:
    """How rewards become r: one weight per reward (by name), the advantage clip Z, best-of-N's k
    (None keeps every candidate), and how each reward is normalised: by its group's std or one
    std pooled over every group of every rank (``std_scope`` ``global``, the release's), the
    population std or the unbiased one, and whether the weights are divided by their sum."""

    weights: dict[str, float]
    z: float = 1.0
    top_k: int | None = None
    eps: float = 1e-6
    std_scope: str = "group"
    unbiased_std: bool = False
    normalize_weights: bool = False

    def __post_init__(self) -> None:
        if self.std_scope not in STD_SCOPES:
            raise ValueError(f"std_scope must be one of {list(STD_SCOPES)}, got {self.std_scope!r}")

    @property
    def ddof(self) -> int:
        return 1 if self.unbiased_std else 0

    @property
    def applied_weights(self) -> dict[str, float]:
        """The weights the advantages are summed with (normalised to sum 1 when asked)."""
        return normalized_weights(self.weights) if self.normalize_weights else dict(self.weights)


@dataclass
class GroupAdvantages:
    """Per-candidate results, shaped like the rewards (``(G,)`` or ``(n_groups, G)``).

    ``selected`` holds the kept candidates' indices per group, ascending: ``(m,)`` or
    ``(n_groups, m)`` with m = 2k (or G).
    """

    per_reward: dict[str, torch.Tensor]
    advantage: torch.Tensor
    r: torch.Tensor
    selected: torch.Tensor

    @property
    def is_selected(self) -> torch.Tensor:
        """Boolean mask of the kept candidates, shaped like ``advantage``."""
        mask = torch.zeros_like(self.advantage, dtype=torch.bool)
        return mask.scatter(-1, self.selected, True)


def _check_reward_names(rewards: Mapping[str, RewardValues], config: AdvantageConfig) -> None:
    if not rewards:
        raise ValueError("no rewards given; pass at least one, e.g. {'if': [...], 'vq': [...]}")
    if set(rewards) != set(config.weights):
        raise ValueError(f"rewards {sorted(rewards)} and weights {sorted(config.weights)} must name the same "
                         "rewards; give a weight of 0 to a reward that is computed but not trained on")


def _pooled(pooled_std: Mapping[str, float] | None, config: AdvantageConfig, name: str) -> float | None:
    """The std to normalise reward ``name`` by: its pooled one under ``std_scope`` global."""
    if config.std_scope == "group":
        return None
    if pooled_std is None or name not in pooled_std:
        raise ValueError(f"std_scope 'global' needs each reward's std over every group of every rank "
                         f"(compute_pooled_std); none given for {name!r}")
    return pooled_std[name]


def compute_group_advantages(rewards: Mapping[str, RewardValues], config: AdvantageConfig,
                             pooled_std: Mapping[str, float] | None = None) -> GroupAdvantages:
    """Normalise each reward within its group, weight and sum them, map to r, pick best-of-N.

    ``rewards`` maps a reward name to its values (all the same shape); ``config.weights`` must
    name exactly the same rewards. Under ``std_scope`` global, ``pooled_std`` gives each reward's
    std over every group of every rank. Best-of-N ranks the combined advantage before clipping
    (clipping would create ties).
    """
    _check_reward_names(rewards, config)
    per_reward = {name: group_normalize(values, config.eps, config.ddof, _pooled(pooled_std, config, name))
                  for name, values in rewards.items()}
    shapes = {name: tuple(value.shape) for name, value in per_reward.items()}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"every reward needs one value per candidate, got shapes {shapes}")
    weights = config.applied_weights
    advantage = sum(weights[name] * value for name, value in per_reward.items())
    rows = advantage.reshape(-1, advantage.shape[-1])
    selected = torch.stack([best_of_n(row, config.top_k) for row in rows])
    selected = selected.reshape(advantage.shape[:-1] + selected.shape[-1:])
    return GroupAdvantages(per_reward, advantage, to_r(advantage, config.z), selected)


def _shape(values: RewardValues) -> tuple[int, ...]:
    return tuple(values.shape) if isinstance(values, (torch.Tensor, np.ndarray)) else np.shape(
        np.asarray(values, dtype=object))


def compute_latent_advantages(rewards: Mapping[str, RewardValues], config: AdvantageConfig) -> GroupAdvantages:
    """Per-latent credit for one group: advantages and r per (candidate, latent), ``(G, L)``.

    A reward given per latent, ``(G, L)``, is normalised over the G candidates separately at
    each latent, so a latent is compared only with the same latent of the other candidates
    (same commanded action, same position in the clip). A reward given per clip, ``(G,)``, is
    normalised as in ``compute_group_advantages`` and then counts for each of the clip's
    latents. Best-of-N ranks the candidates by their mean advantage over the latents;
    ``selected`` is ``(m,)``. At least one reward must be per latent (it sets L).
    """
    _check_reward_names(rewards, config)
    if config.std_scope != "group":
        raise ValueError("std_scope 'global' (the release's) normalises per-clip rewards; a per-latent reward "
                         "(following, fine_action_latent) needs reward.std_scope=group")
    shapes = {name: _shape(values) for name, values in rewards.items()}
    per_latent = {name for name, shape in shapes.items() if len(shape) == 2}
    if not per_latent or any(len(shape) not in (1, 2) for shape in shapes.values()):
        raise ValueError(f"per-latent advantages need rewards shaped (G, L) or (G,), at least one (G, L); "
                         f"got shapes {shapes}")
    size, latents = shapes[min(per_latent)]
    if any(shape[0] != size or (len(shape) == 2 and shape[1] != latents) for shape in shapes.values()):
        raise ValueError(f"every reward needs one value per candidate (and per latent), got shapes {shapes}")
    normalised = {}
    for name, values in rewards.items():
        if name in per_latent:
            rows = values.T if isinstance(values, torch.Tensor) else np.asarray(values, dtype=object).T.tolist()
            normalised[name] = group_normalize(rows, config.eps, config.ddof).T  # rows: (L, G)
        else:
            normalised[name] = group_normalize(values, config.eps, config.ddof)[:, None].expand(size, latents)
    weights = config.applied_weights
    advantage = sum(weights[name] * value for name, value in normalised.items())
    selected = best_of_n(advantage.mean(dim=1), config.top_k)
    return GroupAdvantages(normalised, advantage, to_r(advantage, config.z), selected)


def compute_advantages(rewards: Mapping[str, RewardValues], config: AdvantageConfig,
                       pooled_std: Mapping[str, float] | None = None) -> GroupAdvantages:
    """One group's advantages: per latent (``(G, L)``) when any reward is given per latent, else
    per candidate (``(G,)``; ``pooled_std`` under ``std_scope`` global)."""
    if any(len(_shape(values)) == 2 for values in rewards.values()):
        return compute_latent_advantages(rewards, config)
    return compute_group_advantages(rewards, config, pooled_std)
