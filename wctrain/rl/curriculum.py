"""Label curriculum: spend rollouts on the actions the policy still fails to follow.

A pretrained world model fails a few action labels (for tinywm: strafing while turning),
and a uniform episode sampler visits each of them rarely. The curriculum keeps a running
IF reward per full action label, fed by every group's rollouts (with per-latent credit, the
candidates' mean IF of each latent, credited to that latent's label; with clip credit, the
group's mean IF, credited to each label its target clip commands), and picks each training episode from a
few candidate scripts with probability proportional to how much a group on the candidate's
target clip can teach: how badly the policy follows the clip's labels (1 - IF) times the
chance that a group of G candidates holds both a follower and a non-follower. Under IF-only
rewards only such a group carries a gradient: a label no candidate ever follows (tinywm:
strafing while turning, IF near 0) would draw the most episodes if weighted by failure alone,
and teach nothing. Nothing here looks at held-out cases: the figures come from training
rollouts only.

Pure functions on numpy arrays, so every rank computes the same choice from the same
gathered numbers, and the state (one float per label) goes into the checkpoint.
"""

from __future__ import annotations

import numpy as np

from wcbench.core.actions import NUM_LABELS, Script, clip_step_actions

PRIOR_ACCURACY = 0.5  # a label no rollout has visited yet counts as half followed


def initial_label_accuracy() -> np.ndarray:
    """Running IF reward per full action label before any rollout."""
    return np.full(NUM_LABELS, PRIOR_ACCURACY)


def clip_labels(script: Script, clip: int, latents_per_clip: int = 4) -> set[int]:
    """Full labels commanded in clip ``clip`` of ``script``."""
    return {action.label for action in clip_step_actions(script, clip, latents_per_clip)}


def label_mask(labels: list[set[int]]) -> np.ndarray:
    """(groups, NUM_LABELS) 0/1 mask of the labels each group's target clip commands."""
    mask = np.zeros((len(labels), NUM_LABELS))
    for row, group in enumerate(labels):
        mask[row, sorted(group)] = 1.0
    return mask


def update_label_accuracy(accuracy: np.ndarray, mask: np.ndarray, group_if: np.ndarray,
                          rate: float) -> np.ndarray:
    """Move each visited label's running IF towards the mean IF of the groups that visited it.

    accuracy: (NUM_LABELS,); mask: (rows, NUM_LABELS) from :func:`label_mask`; group_if:
    (rows,) mean IF reward of each row's candidates (a row is a group, or one latent of a
    group); rate in (0, 1].
    """
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"curriculum rate must be in (0, 1], got {rate}")
    visits = mask.sum(axis=0)
    visited = visits > 0
    mean_if = np.divide(mask.T @ group_if, visits, out=np.zeros(NUM_LABELS), where=visited)
    return np.where(visited, (1.0 - rate) * accuracy + rate * mean_if, accuracy)


def label_scores(accuracy: np.ndarray, group_size: int = 8) -> np.ndarray:
    """What a group on each label can teach, from its running IF ``accuracy`` (read as the chance
    that one candidate follows it): (1 - IF) x (1 - IF^G - (1 - IF)^G), the failure times the
    chance that G candidates neither all follow nor all fail."""
    failure = 1.0 - accuracy
    return failure * (1.0 - accuracy**group_size - failure**group_size)


def exploration_scales(accuracy: np.ndarray, focus: float) -> np.ndarray:
    """Per-label factor on the exploration offset: ``1 + focus * (1 - 2 IF)``, so at ``focus``
    0.5 a label no rollout follows is explored at 1.5 x and one every rollout follows at 0.5 x.
    Followed labels then draw candidates that move alike (r near 1/2: NFT holds them), while
    failed ones draw the wider readings a follower is found among."""
    if not 0.0 <= focus < 1.0:
        raise ValueError(f"exploration focus must be in [0, 1), got {focus}")
    return 1.0 + focus * (1.0 - 2.0 * accuracy)


def episode_weights(accuracy: np.ndarray, candidates: list[set[int]], floor: float = 0.05,
                    group_size: int = 8) -> np.ndarray:
    """Choice probabilities of candidate episodes: the mean :func:`label_scores` of the labels of
    each candidate's target clip, plus ``floor`` so none is ever excluded."""
    scores = label_scores(accuracy, group_size)
    weights = np.array([np.mean([scores[label] for label in labels]) for labels in candidates]) + floor
    return weights / weights.sum()
