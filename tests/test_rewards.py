"""Train/eval parity: a reward equals the number `wcbench score` reports for that clip."""

import csv
import json

import numpy as np
import pytest

from wcbench.actions import Action, StepSizes, intrinsics_from_fov, parse_script, trajectory_from_actions
from wcbench.cli import main
from wcbench.pose import build_estimator
from wcbench.scenes.synthetic import build_scene, render_frames
from wcbench.scoring.case import Scorers, clip_view
from wcbench.scoring.quality import build_quality_scorer
from wcbench.video import write_video
from wctrain.rewards import FollowingReward, QualityReward

SCRIPT = parse_script("w-3, w+left-4, d+up-4, s+right-2")


@pytest.fixture(scope="module")
def lagging_video():
    """A video whose camera carries each action one latent step late (so scores are not all 1)."""
    frame_actions = SCRIPT.frame_actions()
    late = [Action()] * 4 + frame_actions[:-4]
    poses = trajectory_from_actions(late, StepSizes(0.05, 0.75))
    scene = build_scene(5, poses[:, :3, 3])
    return render_frames(scene, poses, intrinsics_from_fov(160, 128, 75.0), 160, 128)


@pytest.mark.parametrize("variant", ["full", "mean"])
def test_rewards_equal_wcbench_score_per_clip(lagging_video, tmp_path, variant):
    write_video(tmp_path / "v.avi", lagging_video)
    manifest = tmp_path / "m.csv"
    with manifest.open("w", newline="") as handle:
        csv.writer(handle).writerows([["id", "video", "actions", "fov_deg"], ["c", "v.avi", SCRIPT.format(), 75.0]])
    main(["score", "--manifest", str(manifest), "--out", str(tmp_path / "out")])
    per_clip = json.loads((tmp_path / "out" / "cases" / "c.json").read_text())["per_clip"]
    scorers = Scorers(build_estimator("opencv"), build_quality_scorer("default"))
    views = [clip_view(lagging_video, SCRIPT, n) for n in range(len(per_clip))]
    if_rewards = FollowingReward(scorers, variant=variant, fov_deg=75.0)(views)
    vq_rewards = QualityReward(scorers)(views)
    expected_if = [c["if_acc"] if variant == "full" else 0.5 * (c["if_trans_acc"] + c["if_rot_acc"]) for c in per_clip]
    assert if_rewards == pytest.approx(expected_if, abs=1e-12)
    assert vq_rewards == pytest.approx([c["vq"] for c in per_clip], abs=1e-12)
    assert min(expected_if) < 1.0  # the lag is visible: the parity is not 1 == 1
    per_latent = FollowingReward(scorers, variant=variant, fov_deg=75.0).per_latent(views)
    assert [len(values) for values in per_latent] == [(len(view.frames) - 1) // 4 for view in views] == [3, 4, 4, 2]
    assert [np.mean(values) for values in per_latent] == pytest.approx(expected_if, abs=1e-12)
    assert any(len(set(values)) > 1 for values in per_latent)  # latents of one clip score apart


def test_clip_view_bounds():
    video = np.zeros((SCRIPT.num_frames, 8, 8, 3), np.uint8)
    view = clip_view(video, SCRIPT, 1)
    assert len(view.frames) == 17 and view.script.format() == "w+left-4"
    with pytest.raises(ValueError, match="outside"):
        clip_view(video, SCRIPT, 9)
    with pytest.raises(ValueError, match="ends at frame"):
        clip_view(video[:20], SCRIPT, 1)
