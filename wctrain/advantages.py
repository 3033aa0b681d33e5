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

from dataclasses import dataclass, field
from typing import Literal, Mapping, Sequence

import numpy as np
import torch

StdMode = Literal["group", "global"]
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


def reward_std(rewards: RewardValues) -> float:
    """Population std of all applicable rewards together (every group, every rank); 0 if none.

    The ``global_std`` to pass to ``group_normalize`` when each rank holds only its own groups.
    """
    data, applies = _as_rewards(rewards)
    values = data[applies]
    return float(values.std(unbiased=False)) if values.numel() > 0 else 0.0


def group_normalize(rewards: RewardValues, std_mode: StdMode = "group", eps: float = 1e-6,
                    global_std: float | None = None) -> torch.Tensor:
    """Advantages ``(reward - group mean) / (std + eps)``, same shape as ``rewards``.

    ``std_mode="group"``: the population std (ddof 0) of each group. ``"global"``: one std over
    every reward given (``reward_std``), or ``global_std`` when passed (each rank then passes
    the std of the gathered rewards and gets the same numbers as a single process would). A
    global std keeps a group whose rewards barely differ from having its noise blown up to unit
    scale. A constant group gets advantage 0; ``None`` rewards get 0 and are left out of the
    mean and std.
    """
    data, applies = _as_rewards(rewards)
    count = applies.sum(dim=-1, keepdim=True).clamp_min(1)
    mean = data.sum(dim=-1, keepdim=True) / count
    centred = torch.where(applies, data - mean, torch.zeros_like(data))
    if std_mode == "group":
        std = (centred.square().sum(dim=-1, keepdim=True) / count).sqrt()
    elif std_mode == "global":
        std = torch.tensor(reward_std(rewards) if global_std is None else global_std, dtype=torch.float64)
    else:
        raise ValueError(f"std_mode must be 'group' or 'global', got {std_mode!r}")
    return centred / (std + eps)


def full_marks_mask(rewards: RewardValues) -> torch.Tensor:
    """Per group (last axis), whether every applicable reward is 1.0, the most a reward in
    [0, 1] can give: ``(..., 1)`` bool, False for a group with no applicable reward."""
    return _full_marks(*_as_rewards(rewards))


def _full_marks(data: torch.Tensor, applies: torch.Tensor) -> torch.Tensor:
    all_full = torch.where(applies, data == 1.0, torch.ones_like(applies)).all(dim=-1, keepdim=True)
    return all_full & applies.any(dim=-1, keepdim=True)


def anchor_full_marks(advantage: torch.Tensor, rewards: RewardValues, value: float) -> torch.Tensor:
    """``advantage`` (from ``group_normalize``) with ``value`` wherever the whole group scored
    full marks (applicable rewards only).

    Normalisation gives such a group advantage 0: r = 1/2, no push either way, so nothing holds
    an action the policy already follows while updates for the other actions move the weights
    they share; a positive ``value`` reinforces what every candidate did there instead. A group
    that all failed keeps 0: that says nothing about which way to go.
    """
    if value == 0.0:
        return advantage
    data, applies = _as_rewards(rewards)
    return torch.where(_full_marks(data, applies) & applies, torch.full_like(advantage, value), advantage)


def combine(a_if: torch.Tensor, a_vq: torch.Tensor, lam: float) -> torch.Tensor:
    """``lam * a_if + (1 - lam) * a_vq``: lam = 1 trains on following only, 0 on looks only."""
    if not 0 <= lam <= 1:
        raise ValueError(f"lambda must lie in [0, 1], got {lam}")
    return lam * a_if + (1 - lam) * a_vq


def lambda_weights(lam: float) -> dict[str, float]:
    """``{"if": lam, "vq": 1 - lam}``: the weights for ``AdvantageConfig`` from one lambda."""
    if not 0 <= lam <= 1:
        raise ValueError(f"lambda must lie in [0, 1], got {lam}")
    return {"if": lam, "vq": 1.0 - lam}


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
    """How rewards become r: per-reward weights (lambda and 1 - lambda for IF and VQ), the
    advantage clip Z, the std mode, and best-of-N's k (None keeps every candidate)."""

    weights: dict[str, float] = field(default_factory=lambda: lambda_weights(0.5))
    z: float = 1.0
    std_mode: StdMode = "group"
    top_k: int | None = None
    eps: float = 1e-6
    full_marks: dict[str, float] = field(default_factory=dict)  # reward -> advantage where a whole
    #                                  group scored 1.0 (see anchor_full_marks; absent: 0)


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
    if not set(config.full_marks) <= set(rewards):
        raise ValueError(f"full_marks names {sorted(set(config.full_marks) - set(rewards))}, which are not rewards "
                         f"here ({sorted(rewards)})")


def _normalised(name: str, values: RewardValues, config: AdvantageConfig,
                global_std: Mapping[str, float] | None) -> torch.Tensor:
    """One reward's advantage per group (last axis): normalised, then anchored at full marks."""
    std = None if global_std is None else global_std[name]
    return anchor_full_marks(group_normalize(values, config.std_mode, config.eps, std), values,
                             config.full_marks.get(name, 0.0))


def compute_group_advantages(rewards: Mapping[str, RewardValues], config: AdvantageConfig,
                             global_std: Mapping[str, float] | None = None) -> GroupAdvantages:
    """Normalise each reward within its group, weight and sum them, map to r, pick best-of-N.

    ``rewards`` maps a reward name to its values (all the same shape); ``config.weights`` must
    name exactly the same rewards. ``global_std`` (per reward name) is used with
    ``std_mode="global"`` when the caller holds only part of the gathered rewards.
    Best-of-N ranks the combined advantage before clipping (clipping would create ties).
    """
    _check_reward_names(rewards, config)
    per_reward = {name: _normalised(name, values, config, global_std) for name, values in rewards.items()}
    shapes = {name: tuple(value.shape) for name, value in per_reward.items()}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"every reward needs one value per candidate, got shapes {shapes}")
    advantage = sum(config.weights[name] * value for name, value in per_reward.items())
    rows = advantage.reshape(-1, advantage.shape[-1])
    selected = torch.stack([best_of_n(row, config.top_k) for row in rows])
    selected = selected.reshape(advantage.shape[:-1] + selected.shape[-1:])
    return GroupAdvantages(per_reward, advantage, to_r(advantage, config.z), selected)


def _shape(values: RewardValues) -> tuple[int, ...]:
    return tuple(values.shape) if isinstance(values, (torch.Tensor, np.ndarray)) else np.shape(
        np.asarray(values, dtype=object))


def compute_latent_advantages(rewards: Mapping[str, RewardValues], config: AdvantageConfig,
                              global_std: Mapping[str, float] | None = None) -> GroupAdvantages:
    """Per-latent credit for one group: advantages and r per (candidate, latent), ``(G, L)``.

    A reward given per latent, ``(G, L)``, is normalised over the G candidates separately at
    each latent, so a latent is compared only with the same latent of the other candidates
    (same commanded action, same position in the clip). A reward given per clip, ``(G,)``, is
    normalised as in ``compute_group_advantages`` and then counts for each of the clip's
    latents. Best-of-N ranks the candidates by their mean advantage over the latents;
    ``selected`` is ``(m,)``. At least one reward must be per latent (it sets L).
    """
    _check_reward_names(rewards, config)
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
            normalised[name] = _normalised(name, rows, config, global_std).T  # rows: (L, G)
        else:
            normalised[name] = _normalised(name, values, config, global_std)[:, None].expand(size, latents)
    advantage = sum(config.weights[name] * value for name, value in normalised.items())
    selected = best_of_n(advantage.mean(dim=1), config.top_k)
    return GroupAdvantages(normalised, advantage, to_r(advantage, config.z), selected)
