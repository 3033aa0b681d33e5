"""Rewards: the benchmark's own scorers as plain callables (TRL style).

A reward takes a list of :class:`wcbench.scoring.case.ClipView` (a candidate target clip with
the frame before it, its actions and frame 0) and returns one float per clip. Each calls the
``wcbench.scoring`` function that ``wcbench score`` uses for the same clip, so a reward and a
benchmark number are the same number (``tests/test_rewards.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from wcbench.scoring.case import ClipView, Scorers, score_clip_following, score_clip_quality


@dataclass
class FollowingReward:
    """Interaction following of a clip: ``full`` = 81-class accuracy, ``mean`` = the mean of
    translation and rotation accuracy (a denser signal while the full label is rarely hit)."""

    scorers: Scorers
    variant: str = "full"
    fov_deg: float | None = None
    name: str = "if"

    def __post_init__(self) -> None:
        if self.variant not in ("full", "mean"):
            raise ValueError(f"following reward variant must be 'full' or 'mean', got {self.variant!r}")

    def __call__(self, clips: list[ClipView], prompts: list[str] | None = None) -> list[float]:
        rewards = []
        for view in clips:
            result, _ = score_clip_following(view, self.scorers, self.fov_deg)
            rewards.append(result.if_acc if self.variant == "full"
                           else 0.5 * (result.if_trans_acc + result.if_rot_acc))
        return rewards

    def per_latent(self, clips: list[ClipView], prompts: list[str] | None = None) -> list[list[float]]:
        """The same score for each of a clip's latents (its 4 transitions each): a list of L
        floats per clip, whose mean is what ``__call__`` returns. Per-latent credit: a latent
        is rewarded for its own motion, not for the other labels its clip commands."""
        return [score_clip_following(view, self.scorers, self.fov_deg)[0].step_accuracy(self.variant).tolist()
                for view in clips]


@dataclass
class QualityReward:
    """Visual quality of a clip with the scorer the benchmark uses (``default`` or its drift
    variant ``default-drift``: pick it when building ``scorers``)."""

    scorers: Scorers
    name: str = "vq"

    def __call__(self, clips: list[ClipView], prompts: list[str] | None = None) -> list[float]:
        prompts = prompts or [""] * len(clips)
        return [score_clip_quality(view, self.scorers, prompt)[0] for view, prompt in zip(clips, prompts)]
