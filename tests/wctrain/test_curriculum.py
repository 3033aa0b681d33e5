"""The label curriculum: running IF per label and episode choice (wctrain.rl.curriculum)."""

import numpy as np
import pytest

from wcbench.core.actions import NUM_LABELS, Action, parse_script
from wctrain.rl.curriculum import (PRIOR_ACCURACY, clip_labels, episode_weights, initial_label_accuracy, label_mask,
                                label_scores, update_label_accuracy)

FORWARD, STRAFE_TURN, TURN = Action(forward=1).label, Action(right=1, yaw=1).label, Action(yaw=-1).label


def test_clip_labels_follow_the_clip_layout():
    script = parse_script("w-2, d+right-3, left-2")  # steps 1-2 w, 3-5 d+right, 6-7 left
    assert clip_labels(script, 0) == {FORWARD, STRAFE_TURN}  # clip 0: steps 1-3
    assert clip_labels(script, 1) == {STRAFE_TURN, TURN}  # clip 1: steps 4-7


def test_update_moves_only_visited_labels_towards_their_groups_mean():
    accuracy = initial_label_accuracy()
    mask = label_mask([{FORWARD, STRAFE_TURN}, {STRAFE_TURN}])
    updated = update_label_accuracy(accuracy, mask, np.array([1.0, 0.0]), rate=0.5)
    assert updated[FORWARD] == pytest.approx(0.5 * PRIOR_ACCURACY + 0.5 * 1.0)
    assert updated[STRAFE_TURN] == pytest.approx(0.5 * PRIOR_ACCURACY + 0.5 * 0.5)  # mean of both groups
    untouched = np.ones(NUM_LABELS, dtype=bool)
    untouched[[FORWARD, STRAFE_TURN]] = False
    assert np.array_equal(updated[untouched], accuracy[untouched])
    with pytest.raises(ValueError, match="rate"):
        update_label_accuracy(accuracy, mask, np.array([1.0, 0.0]), rate=0.0)


def test_spread_scores_labels_a_group_can_learn_from():
    # IF 0.0 or 1.0: every candidate of a group gets the same reward, so nothing to learn
    accuracy = np.array([0.0, 0.02, 0.3, 0.5, 0.85, 1.0])
    scores = label_scores(accuracy, group_size=8)
    assert scores[0] == scores[-1] == 0.0
    # a group of 8 at IF 0.3 holds a follower and a non-follower with chance 1 - 0.3^8 - 0.7^8
    assert scores[2] == pytest.approx(0.7 * (1 - 0.3**8 - 0.7**8))
    assert scores[2] > scores[3] > scores[1] > 0.0 and scores[3] > scores[4] > 0.0
    # a label nobody follows is drawn no more than one every rollout follows (the floor alone)
    accuracy = initial_label_accuracy()
    accuracy[FORWARD], accuracy[STRAFE_TURN], accuracy[TURN] = 1.0, 0.0, 0.4
    spread = episode_weights(accuracy, [{FORWARD}, {STRAFE_TURN}, {TURN}])
    assert spread.sum() == pytest.approx(1.0)
    assert spread[2] > spread[1] > 0.0 and spread[1] == pytest.approx(spread[0])


def test_focused_sampler_visits_the_failing_labels_more_often():
    from wcbench.data.suite import load_suite
    from wctrain.config import RLConfig
    from wctrain.rl.episodes import sample_episode

    suite = load_suite("wc-mini")
    failing = {Action(forward=f, right=r, yaw=y).label for f, r in ((0, 1), (0, -1)) for y in (1, -1)}

    def share(candidates: int, failing_if: float = 0.3, others: float = 1.0, floor: float = 0.05) -> float:
        """Share of 40 drawn episodes whose target clip commands a failing label (IF ``failing_if``),
        the other labels at IF ``others``."""
        accuracy = np.full(NUM_LABELS, others)
        accuracy[sorted(failing)] = failing_if
        rl = RLConfig(focus_candidates=candidates, combined_fraction=1.0, focus_floor=floor)
        hits = [bool(clip_labels(sample_episode(rl, suite, step, 0, set(), accuracy, 1).script, 1) & failing)
                for step in range(40)]
        return float(np.mean(hits))

    uniform, focused, floored = share(1), share(6), share(6, floor=10.0)
    assert focused > uniform + 0.2, (uniform, focused)
    # a high floor (rl.focus_floor) keeps drawing scripts whose labels are all followed
    assert floored < focused - 0.2, (floored, focused)
    # labels no rollout follows teach nothing: with the other labels half followed, they are
    # drawn less often than a uniform draw
    learnable = share(6, failing_if=0.0, others=0.5)
    assert learnable < uniform - 0.1, (learnable, uniform)


def test_curriculum_settings_are_checked_when_the_config_is_built():
    from wctrain.config import RLConfig

    with pytest.raises(ValueError, match="rl.focus_candidates must be at least 1"):
        RLConfig(focus_candidates=0)
    with pytest.raises(ValueError, match=r"rl.focus_rate must be in \(0, 1\]"):
        RLConfig(focus_rate=1.5)
    with pytest.raises(ValueError, match="rl.focus_floor must be above 0"):
        RLConfig(focus_floor=0.0)
