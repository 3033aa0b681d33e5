"""Target-clip schedule and rollout cost counts."""

from __future__ import annotations

import pytest

from wctrain.rl.schedule import accumulation_plan, count_clip_generations, reachable_clips, target_clip


def test_cycle_visits_every_clip_in_turn():
    assert [target_clip(step, 4) for step in range(9)] == [0, 1, 2, 3, 0, 1, 2, 3, 0]
    assert [target_clip(step, 1) for step in range(3)] == [0, 0, 0]


def test_progressive_reach_grows_in_equal_stages():
    # 4 clips from 1: stages of 12 / 4 = 3 steps with 1, 2, 3, 4 clips in play, then 4 for good
    assert [reachable_clips(step, 4, 12) for step in range(15)] == [1] * 3 + [2] * 3 + [3] * 3 + [4] * 6
    assert [reachable_clips(step, 4, 6, start_clips=3) for step in range(7)] == [3, 3, 3, 4, 4, 4, 4]
    assert reachable_clips(10 ** 6, 4, 12) == 4


def test_progressive_targets_stay_within_reach_and_cover_the_horizon():
    targets = [target_clip(step, 4, "progressive", ramp_steps=12) for step in range(24)]
    assert targets[:3] == [0, 0, 0]
    assert targets[3:6] == [1, 0, 1]  # step mod 2
    assert all(target < reachable_clips(step, 4, 12) for step, target in enumerate(targets))
    assert set(targets[12:]) == {0, 1, 2, 3}
    assert max(targets[:6]) == 1  # the late clips wait until the horizon reaches them


def test_schedule_rejects_bad_settings():
    with pytest.raises(ValueError, match="mode"):
        target_clip(0, 4, "random")
    with pytest.raises(ValueError):
        target_clip(-1, 4)
    with pytest.raises(ValueError):
        target_clip(0, 4, "progressive", ramp_steps=0)
    with pytest.raises(ValueError):
        reachable_clips(0, 4, 10, start_clips=5)


def test_clip_generation_counts():
    assert count_clip_generations(0, 8, "clip") == 8
    assert count_clip_generations(0, 8, "sample") == 8
    # N = 8 clips, G = 8 candidates of the last clip: 15 against 64
    assert count_clip_generations(7, 8, "clip") == 15
    assert count_clip_generations(7, 8, "sample") == 64
    assert count_clip_generations(7, 8, "sample") / count_clip_generations(7, 8, "clip") == pytest.approx(
        8 * 8 / (8 + 8 - 1))
    with pytest.raises(ValueError):
        count_clip_generations(3, 8, "video")


def test_accumulation_plan_steps_every_k_selected_candidates_in_order():
    # the release: best-of-6 of 12 and --gradient_accumulation_steps 2 -> 3 optimiser steps a training step
    assert [list(chunk) for chunk in accumulation_plan(6, 2)] == [[0, 1], [2, 3], [4, 5]]
    assert [list(chunk) for chunk in accumulation_plan(6, None)] == [[0, 1, 2, 3, 4, 5]]  # the default: one
    assert [list(chunk) for chunk in accumulation_plan(6, 1)] == [[k] for k in range(6)]
    assert [list(chunk) for chunk in accumulation_plan(4, 4)] == [[0, 1, 2, 3]]
    with pytest.raises(ValueError, match="must be at least 1 and divide the 6 selected"):
        accumulation_plan(6, 4)
    with pytest.raises(ValueError, match="must be at least 1"):
        accumulation_plan(6, 0)
