"""Rewards: train/eval parity (a reward equals the number `wcbench score` reports for that clip),
user rewards by dotted path, and the shape check."""

import csv
import json

import numpy as np
import pytest

from wcbench.cli import main
from wcbench.core.actions import Action, parse_script
from wcbench.core.camera import StepSizes, intrinsics_from_fov, trajectory_from_actions
from wcbench.core.video import write_video
from wcbench.data.scenes.synthetic import build_scene, render_frames
from wcbench.run.pool import ScoringPool
from wcbench.scoring.case import Scorers, clip_view, score_clip_following
from wctrain.rl.rewards import (REWARDS, ClipScorer, FollowingReward, QualityReward, RewardContext, build_rewards,
                             score_group)

SCRIPT = parse_script("w-3, w+left-4, d+up-4, s+right-2")


@pytest.fixture(scope="module")
def lagging_video():
    """A video whose camera carries each action one latent step late (so scores are not all 1)."""
    frame_actions = SCRIPT.frame_actions()
    late = [Action()] * 4 + frame_actions[:-4]
    poses = trajectory_from_actions(late, StepSizes(0.05, 0.75))
    scene = build_scene(5, poses[:, :3, 3])
    return render_frames(scene, poses, intrinsics_from_fov(160, 128, 75.0), 160, 128)


def test_rewards_equal_wcbench_score_per_clip(lagging_video, tmp_path, make_scorers):
    write_video(tmp_path / "v.avi", lagging_video)
    manifest = tmp_path / "m.csv"
    with manifest.open("w", newline="") as handle:
        csv.writer(handle).writerows([["id", "video", "actions", "fov_deg"], ["c", "v.avi", SCRIPT.format(), 75.0]])
    main(["score", "--manifest", str(manifest), "--out", str(tmp_path / "out")])
    per_clip = json.loads((tmp_path / "out" / "cases" / "c.json").read_text())["per_clip"]
    scorers = make_scorers()
    views = [clip_view(lagging_video, SCRIPT, n) for n in range(len(per_clip))]
    rewards = build_rewards(["following", "quality"], RewardContext(scorers, 75.0))
    per_latent = rewards["following"](views, [""] * len(views))
    vq_rewards = rewards["quality"](views, [""] * len(views))
    expected_if = [c["if_acc"] for c in per_clip]
    assert [len(values) for values in per_latent] == [(len(view.frames) - 1) // 4 for view in views] == [3, 4, 4, 2]
    assert [np.mean(values) for values in per_latent] == pytest.approx(expected_if, abs=1e-12)
    assert vq_rewards == pytest.approx([c["vq"] for c in per_clip], abs=1e-12)
    assert min(expected_if) < 1.0  # the lag is visible: the parity is not 1 == 1
    assert any(len(set(values)) > 1 for values in per_latent)  # latents of one clip score apart
    assert isinstance(rewards["following"], FollowingReward) and isinstance(rewards["quality"], QualityReward)


def test_fine_action_equals_what_wcbench_score_reports_in_compat_mode(lagging_video, tmp_path, make_scorers):
    """The released WorldCompass training reward (one number per clip) equals the per-clip
    ``fine_action`` of `wcbench score mode=worldcompass-compat`; its per-latent variant averages
    to the mean of translation and rotation accuracy that mode reports per clip."""
    write_video(tmp_path / "v.avi", lagging_video)
    manifest = tmp_path / "m.csv"
    with manifest.open("w", newline="") as handle:
        csv.writer(handle).writerows([["id", "video", "actions", "fov_deg"], ["c", "v.avi", SCRIPT.format(), 75.0]])
    main(["score", "--manifest", str(manifest), "--out", str(tmp_path / "out"), "mode=worldcompass-compat"])
    per_clip = json.loads((tmp_path / "out" / "cases" / "c.json").read_text())["per_clip"]
    scorers = make_scorers()
    views = [clip_view(lagging_video, SCRIPT, n) for n in range(len(per_clip))]
    rewards = build_rewards(["fine_action", "fine_action_latent"], RewardContext(scorers, 75.0))
    fine = rewards["fine_action"](views, [""] * len(views))
    per_latent = rewards["fine_action_latent"](views, [""] * len(views))
    assert fine == pytest.approx([c["fine_action"] for c in per_clip], abs=1e-12)
    assert [np.mean(v) for v in per_latent] == pytest.approx(
        [0.5 * (c["if_trans_acc"] + c["if_rot_acc"]) for c in per_clip], abs=1e-12)
    assert all(np.mean(latent) >= clip - 1e-12 for latent, clip in zip(per_latent, fine))
    assert scorers.mode == "default"  # the run's own scorers are left as they were


def clip_number(clips, prompts):
    """A user reward: the clip's index among the candidates, per clip."""
    return [float(i) for i in range(len(clips))]


def wrong_length(clips, prompts):
    return [0.0] * (len(clips) + 1)


class PerLatentBrightness:
    """A user reward as a class (instantiated without arguments): mean brightness per latent."""

    def __call__(self, clips, prompts):
        return [[float(view.frames[1 + 4 * k:5 + 4 * k].mean()) for k in range((len(view.frames) - 1) // 4)]
                for view in clips]


def test_user_rewards_by_dotted_path_and_their_shapes_are_checked(monkeypatch):
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parent))
    video = np.random.default_rng(0).integers(0, 255, (SCRIPT.num_frames, 8, 8, 3), dtype=np.uint8)
    views = [clip_view(video, SCRIPT, 1)] * 3
    context = RewardContext(Scorers(None, None))
    rewards = build_rewards(["test_rewards:clip_number", "test_rewards:PerLatentBrightness"], context)
    scores = score_group(rewards, views, [""] * 3, latents=4)
    assert scores["test_rewards:clip_number"] == [0.0, 1.0, 2.0]
    assert np.shape(scores["test_rewards:PerLatentBrightness"]) == (3, 4)
    with pytest.raises(ValueError, match=r"reward 'test_rewards:wrong_length' returned values of shape \(4,\) "
                                         r"for 3 clips of 4 latents"):
        score_group(build_rewards(["test_rewards:wrong_length"], context), views, [""] * 3, latents=4)
    with pytest.raises(ValueError, match=r"shape \(3, 4\) for 3 clips of 2 latents"):
        score_group(rewards, views, [""] * 3, latents=2)
    with pytest.raises(ValueError, match="Did you mean 'following'"):
        build_rewards(["folowing"], context)
    with pytest.raises(ValueError, match="cannot import"):
        build_rewards(["test_rewards:no_such_reward"], context)


def test_a_wcbench_scorer_becomes_a_builtin_in_one_registration(lagging_video, make_scorers):
    """How issue 30's fine_action joins: one line mapping a name to a wcbench scorer call."""
    from wcbench.scoring.case import score_clip_following

    REWARDS.register("rotation_accuracy")(lambda ctx: ClipScorer(
        lambda view, scorers, fov: score_clip_following(view, scorers, fov)[0].if_rot_acc, ctx))
    scorers = make_scorers()
    views = [clip_view(lagging_video, SCRIPT, n) for n in range(2)]
    values = build_rewards(["rotation_accuracy"], RewardContext(scorers, 75.0))["rotation_accuracy"](views, ["", ""])
    assert values == [score_clip_following(v, scorers, 75.0)[0].if_rot_acc for v in views]


def test_a_pool_of_scoring_processes_gives_the_numbers_of_scoring_here(lagging_video, make_scorers, monkeypatch):
    """reward.jobs: the built-ins score a group's clips in worker processes with exactly the values
    computed in the training process; user functions and built-ins a pool cannot be sent (made
    from a lambda) run here."""
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parent))
    scorers = make_scorers()
    REWARDS.register("rotation_accuracy_here")(lambda ctx: ClipScorer(
        lambda view, scorers, fov: score_clip_following(view, scorers, fov)[0].if_rot_acc, ctx))
    names = ["following", "quality", "fine_action", "fine_action_latent", "test_rewards:clip_number",
             "rotation_accuracy_here"]
    rewards = build_rewards(names, RewardContext(scorers, 75.0))
    views = [clip_view(lagging_video, SCRIPT, n) for n in (1, 2, 1)]
    here = score_group(rewards, views, ["a", "b", "c"], latents=4)
    with ScoringPool(None, 2) as pool:  # as the trainer: each job carries its reward and scorers
        pooled = score_group(rewards, views, ["a", "b", "c"], latents=4, pool=pool)
        assert pool._executor is not None  # the clips went to the workers
        assert score_group(rewards, views, ["a", "b", "c"], latents=4, pool=pool) == pooled  # the pool is kept
    assert pooled == here
    assert here["test_rewards:clip_number"] == [0.0, 1.0, 2.0]
    assert min(min(v) for v in here["following"]) < 1.0  # the lag shows: not 1 == 1


def test_clip_view_bounds():
    video = np.zeros((SCRIPT.num_frames, 8, 8, 3), np.uint8)
    view = clip_view(video, SCRIPT, 1)
    assert len(view.frames) == 17 and view.script.format() == "w+left-4"
    with pytest.raises(ValueError, match="outside"):
        clip_view(video, SCRIPT, 9)
    with pytest.raises(ValueError, match="ends at frame"):
        clip_view(video[:20], SCRIPT, 1)
