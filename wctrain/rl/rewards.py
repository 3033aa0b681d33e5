"""Rewards: plain callables (TRL style), the benchmark's own scorers among them.

A reward is a function (or a callable object) ``reward(clips, prompts)``: ``clips`` a list of
:class:`wcbench.scoring.case.ClipView` (one candidate target clip each, with the frame before
it, its actions and frame 0 of the video), ``prompts`` their captions. It returns one value
per clip (a float, or ``None`` where it does not apply), or one list per clip with a value per
latent of the clip (per-latent credit: a latent is rewarded for its own motion). ``reward.funcs``
names them: a built-in name or ``package.module:function`` (a class there is instantiated
without arguments); ``reward.weights`` weights their group-normalised advantages.

The built-ins call the ``wcbench.scoring`` function that ``wcbench score`` uses for the same
clip, so a reward and a benchmark number are the same number (``tests/wctrain/test_rewards.py``):

- ``following``: IF accuracy (81-class) of each latent of the clip, per latent;
- ``quality``: the clip's visual quality with the configured scorer, per clip (for
  ``hpsv3-worldcompass`` the release's training form of it);
- ``fine_action``: the released WorldCompass training reward, one number per clip
  (``wcbench.scoring.following.compat_fine_action``: one compat translation threshold for the
  whole clip, chosen by its 81-class accuracy after seeing the answer; the mean of translation
  and rotation accuracy), equal to the ``fine_action`` that ``wcbench score
  mode=worldcompass-compat`` reports per clip;
- ``fine_action_latent``: a per-latent variant (a threshold per latent, the mean of
  translation and rotation accuracy per latent), for per-latent credit; it is never lower than
  ``fine_action`` on a clip, since each latent picks its own best threshold.

A built-in is a builder from the run's :class:`RewardContext`; adding one that calls another
wcbench scorer is one registration (``fine_action`` below), or for any per-clip scorer
``REWARDS.register(name)(lambda ctx: ClipScorer(score, ctx))``. The built-ins score one clip at a
time (:class:`PerClipReward`), so :func:`score_group` can hand a group's clips to a pool of scoring
processes (``reward.jobs``) with the numbers of scoring them here; your own functions run here.
"""

from __future__ import annotations

import importlib
import os
import pickle
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from wcbench.core.registry import Registry
from wcbench.run.pool import ScoringPool, default_workers, weight_free
from wcbench.scoring.case import (ClipView, Scorers, score_clip_fine_action, score_clip_following,
                                  score_clip_quality_reward)
from wcbench.scoring.following import COMPAT_MODE

Reward = Callable[[list[ClipView], list[str]], Sequence[Any]]


@dataclass(frozen=True)
class RewardContext:
    """What a built-in reward may need from the run: its scorers and the field of view."""

    scorers: Scorers
    fov_deg: float | None = None


REWARDS: Registry[Callable[[RewardContext], Reward]] = Registry("reward")


class PerClipReward:
    """A reward computed clip by clip (:meth:`one`), each clip alone: what a pool may score."""

    def one(self, view: ClipView, prompt: str) -> Any:
        raise NotImplementedError

    def __call__(self, clips: list[ClipView], prompts: list[str] | None = None) -> list[Any]:
        return [self.one(view, prompt) for view, prompt in zip(clips, prompts or [""] * len(clips))]


@dataclass
class FollowingReward(PerClipReward):
    """Interaction following per latent: each latent's accuracy over its 4 transitions;
    ``accuracy`` ``full`` is the 81-class label (their mean is the clip's ``if_acc`` in
    ``wcbench score``), ``mean`` the mean of translation and rotation accuracy."""

    scorers: Scorers
    fov_deg: float | None = None
    accuracy: str = "full"

    def one(self, view: ClipView, prompt: str) -> list[float]:
        return score_clip_following(view, self.scorers, self.fov_deg)[0].step_accuracy(self.accuracy).tolist()


@dataclass
class QualityReward(PerClipReward):
    """Visual quality of a clip with the scorer the benchmark uses (``default``, its drift
    variant ``default-drift``, or ``hpsv3-worldcompass``: pick it when building ``scorers``):
    the clip's vq, or the scorer's own training form where it has one (``hpsv3-worldcompass``:
    the release's training reward, see ``wcbench.scoring.case.score_clip_quality_reward``)."""

    scorers: Scorers

    def one(self, view: ClipView, prompt: str) -> float:
        return score_clip_quality_reward(view, self.scorers, prompt)


@dataclass
class ClipScorer(PerClipReward):
    """A reward from any per-clip wcbench scorer ``score(view, scorers, fov_deg) -> float or
    list of floats`` (one per latent)."""

    score: Callable[[ClipView, Scorers, float | None], Any]
    context: RewardContext

    def one(self, view: ClipView, prompt: str) -> Any:
        return self.score(view, self.context.scorers, self.context.fov_deg)


REWARDS.register("following")(lambda ctx: FollowingReward(ctx.scorers, ctx.fov_deg))
REWARDS.register("quality")(lambda ctx: QualityReward(ctx.scorers))
REWARDS.register("fine_action")(lambda ctx: ClipScorer(score_clip_fine_action, ctx))
REWARDS.register("fine_action_latent")(lambda ctx: FollowingReward(replace(ctx.scorers, mode=COMPAT_MODE),
                                                                   ctx.fov_deg, "mean"))


def build_reward(spec: str, context: RewardContext) -> Reward:
    """A built-in by name, or the function (or class, instantiated) ``package.module:name``."""
    if ":" not in spec:
        return REWARDS.get(spec, hint="; or give package.module:function")(context)
    module_name, _, attr = spec.partition(":")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"reward {spec!r}: cannot import {attr!r} from {module_name!r}: {err}") from err
    reward = target() if isinstance(target, type) else target
    if not callable(reward):
        raise ValueError(f"reward {spec!r} is a {type(reward).__name__}, not a callable reward(clips, prompts)")
    return reward


def build_rewards(specs: list[str], context: RewardContext) -> dict[str, Reward]:
    """``{spec: reward}`` in ``reward.funcs`` order."""
    return {spec: build_reward(spec, context) for spec in specs}


def check_reward_values(name: str, values: Any, clips: list[ClipView], latents: int) -> list:
    """``values`` as a list if it holds one value per clip or one list of ``latents`` values per
    clip; a ValueError naming the reward and the shape it returned otherwise."""
    try:
        shape = np.shape(np.asarray(values, dtype=object))
    except ValueError:  # ragged lists
        shape = ("ragged",)
    if shape not in ((len(clips),), (len(clips), latents)):
        raise ValueError(f"reward {name!r} returned values of shape {shape} for {len(clips)} clips of {latents} "
                         f"latents; a reward returns ({len(clips)},) one per clip, or ({len(clips)}, {latents}) "
                         f"one per latent")
    return list(values)


def reward_jobs(jobs: int, scorers: Scorers) -> int:
    """Scoring processes per training process: ``jobs`` (``reward.jobs``), or for 0 the cores this
    process may use shared out among the training processes on this machine (``LOCAL_WORLD_SIZE``,
    which accelerate sets); 1 with learned scorers (:func:`wcbench.run.pool.default_workers`)."""
    if jobs > 1 and not weight_free(scorers):
        raise ValueError(f"reward.jobs={jobs} needs weight-free scorers (estimator opencv or gt, quality default or "
                         f"default-drift): a learned scorer would go to every process with its weights; set "
                         f"reward.jobs=0")
    if jobs:
        return jobs
    return max(1, default_workers(scorers) // int(os.environ.get("LOCAL_WORLD_SIZE", "1")))


def _picklable(reward: PerClipReward) -> bool:
    """Whether a pool can be sent ``reward`` (a built-in made from a lambda cannot: it runs here)."""
    try:
        pickle.dumps(reward)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


def _one_clip(job: tuple[PerClipReward, ClipView, str], scorers: Any) -> Any:
    """One built-in reward of one clip (what :func:`score_group`'s pool runs)."""
    reward, view, prompt = job
    return reward.one(view, prompt)


def score_group(rewards: dict[str, Reward], views: list[ClipView], prompts: list[str], latents: int,
                pool: ScoringPool | None = None) -> dict[str, list]:
    """Each reward's values for a group's candidates, checked (see :func:`check_reward_values`).
    With ``pool``, every (built-in reward, clip) pair is scored in its processes at once."""
    pooled = [name for name, reward in rewards.items()
              if pool is not None and pool.workers > 1 and isinstance(reward, PerClipReward) and _picklable(reward)]
    jobs = [(rewards[name], view, prompt) for name in pooled for view, prompt in zip(views, prompts)]
    values = list(pool.map(_one_clip, jobs)) if jobs else []
    from_pool = {name: values[k * len(views):(k + 1) * len(views)] for k, name in enumerate(pooled)}
    return {name: check_reward_values(name, from_pool[name] if name in from_pool else reward(views, prompts),
                                      views, latents)
            for name, reward in rewards.items()}
