"""Interaction-following score: alignment, per-clip/per-case accuracy, degraded motions, compat mode."""

import numpy as np
import pytest

from wcbench.core.actions import Action, parse_script
from wcbench.core.camera import StepSizes, Thresholds, script_trajectory, trajectory_from_actions
from wcbench.scoring.following import clip_transitions, score_following

TH = Thresholds(translation=0.02, rotation_deg=0.3)
STEPS = StepSizes(0.05, 0.75)


def test_true_poses_score_one():
    script = parse_script("w-3, w+left-4, d+up-2, none-1, s+right-5, a-4, down-2, up-4, left-6")
    result = score_following(script_trajectory(script, STEPS), script, TH)
    assert result.if_acc == result.if_trans_acc == result.if_rot_acc == 1.0
    assert [c.frames for c in result.per_clip][:3] == [(1, 12), (13, 28), (29, 44)]
    assert np.array_equal(result.commanded, result.detected)


def test_clip_transitions_cover_every_transition_once():
    for frames in (125, 253, 381):
        covered = [i for r in clip_transitions(frames, 4) for i in r]
        assert covered == list(range(frames - 1))


def test_static_video_scores_by_share_of_standing_still():
    script = parse_script("w-3, none-4")
    static = np.repeat(np.eye(4)[None], script.num_frames, axis=0)
    result = score_following(static, script, TH)
    assert result.per_clip[0].if_acc == 0.0 and result.per_clip[1].if_acc == 1.0
    assert result.if_acc == pytest.approx(0.5)


def test_mirrored_yaw_breaks_rotation_only():
    script = parse_script("w+left-3, s+right-4, d-4")
    mirrored = [Action(a.forward, a.right, -a.yaw, a.pitch) for a in script.frame_actions()]
    result = score_following(trajectory_from_actions(mirrored, STEPS), script, TH)
    assert result.if_trans_acc == 1.0
    assert result.per_clip[0].if_rot_acc == 0.0 and result.per_clip[2].if_rot_acc == 1.0


def test_one_frame_off_is_caught():
    """A video that carries each action one frame late must not score perfectly."""
    script = parse_script("w-3, left-4, d-4")
    late = [Action()] + script.frame_actions()[:-1]
    result = score_following(trajectory_from_actions(late, STEPS), script, TH)
    assert result.if_acc < 1.0
    missed = np.flatnonzero(result.detected != result.commanded) + 1
    assert list(missed) == [1, 13, 29]  # the first transition of each new action


def test_step_accuracy_is_per_latent_and_averages_to_the_clip():
    """Lagging one latent: each step scores on its own, and a clip is the mean of its steps."""
    script = parse_script("w-3, left-2, d+up-2, d-2")
    late = [Action()] * 4 + script.frame_actions()[:-4]
    result = score_following(trajectory_from_actions(late, STEPS), script, TH)
    # steps 1-9 command w, w, w, left, left, d+up, d+up, d, d; the camera does the step before's
    assert result.step_accuracy("full").tolist() == [0, 1, 1, 0, 1, 0, 1, 0, 1]
    # standing for w, d after d+up: one axis right; left after w, d+up after left: both wrong
    assert result.step_accuracy("mean").tolist() == [0.5, 1, 1, 0, 1, 0, 1, 0.5, 1]
    steps = result.step_accuracy()
    for clip, transitions in zip(result.per_clip, clip_transitions(script.num_frames, 4)):
        assert clip.if_acc == pytest.approx(steps[transitions.start // 4:transitions.stop // 4].mean())
    with pytest.raises(ValueError, match="'full' or 'mean'"):
        result.step_accuracy("rotation")


def test_wrong_frame_count_is_an_error():
    script = parse_script("w-3")
    with pytest.raises(ValueError, match="needs 13"):
        score_following(np.repeat(np.eye(4)[None], 12, axis=0), script, TH)


def test_compat_mode_reads_motion_the_default_threshold_misses():
    """0.005 per frame forward passes the lowest compat threshold; the default one (0.02) misses it."""
    script = parse_script("w-3")
    poses = script_trajectory(script, StepSizes(0.005, 0.75))
    assert score_following(poses, script, TH).if_acc == 0.0
    assert score_following(poses, script, TH, mode="worldcompass-compat").if_acc == 1.0
    with pytest.raises(ValueError, match="unknown scoring mode"):
        score_following(poses, script, TH, mode="best")


def _per_frame_poses(script: str, translation: float, degrees: float) -> tuple[np.ndarray, object]:
    parsed = parse_script(script)
    return script_trajectory(parsed, StepSizes(translation, degrees)), parsed


@pytest.mark.parametrize("translation, expected", [(0.0015, 0.0), (0.003, 1.0)])
def test_compat_labels_every_transition_against_strict_thresholds(translation, expected):
    """0.0015 per frame is under every compat threshold, 0.003 over the lowest one (units: the
    estimator's translation per frame; here the true poses')."""
    poses, script = _per_frame_poses("w-3", translation, 0.75)
    result = score_following(poses, script, TH, mode="worldcompass-compat")
    assert result.if_acc == expected and result.if_trans_acc == expected and result.if_rot_acc == 1.0


@pytest.mark.parametrize("degrees, expected", [(0.1, 0.0), (0.3, 1.0)])
def test_compat_rotation_is_0_2_degrees_per_frame(degrees, expected):
    poses, script = _per_frame_poses("left-3", 0.05, degrees)
    result = score_following(poses, script, TH, mode="worldcompass-compat")
    assert result.if_acc == expected and result.if_rot_acc == expected and result.if_trans_acc == 1.0


def test_compat_takes_the_best_threshold_per_chunk_and_averages_chunks():
    """Chunk 1 moves 0.004 per frame (right at 0.002 only), chunk 2 0.02 (right at all three),
    chunk 3 stands still (right at all): every chunk scores 1 at its best threshold. The
    fine_action reward is the mean of translation and rotation accuracy per chunk."""
    script = parse_script("w-2, none-1")
    steps = [0.004] * 4 + [0.02] * 4 + [0.0] * 4
    poses = [np.eye(4)]
    for step in steps:
        move = np.eye(4)
        move[2, 3] = step
        poses.append(poses[-1] @ move)
    result = score_following(np.stack(poses), script, TH, mode="worldcompass-compat")
    assert result.if_acc == 1.0
    np.testing.assert_array_equal(result.step_accuracy("mean"), [1.0, 1.0, 1.0])
    # a chunk half of whose transitions pass only the highest threshold scores its best, 0.5
    poses = [np.eye(4)]
    for step in [0.001, 0.001, 0.02, 0.02] + [0.02] * 4 + [0.0] * 4:
        move = np.eye(4)
        move[2, 3] = step
        poses.append(poses[-1] @ move)
    result = score_following(np.stack(poses), script, TH, mode="worldcompass-compat")
    np.testing.assert_array_equal(result.step_accuracy(), [0.5, 1.0, 1.0])
    assert result.if_acc == pytest.approx(2.5 / 3)  # the mean over chunks, not over clips


def test_a_video_too_plain_to_track_is_flagged_not_confidently_still(make_scorers):
    """A grey video with one straight edge (no corner to track; a wholly flat one is refused as
    unscorable) commanded to move: every window has too few tracks, so its labels fall back to
    'none'; the record says so instead of passing it off as standing still."""
    from wcbench.scoring.case import low_confidence_warning, score_frames

    script = parse_script("w-2, left-1")
    plain = np.full((script.num_frames, 48, 48, 3), 120, np.uint8)
    plain[:, :, 24:] = 136
    record = score_frames(plain, script, make_scorers())
    assert record["confidence_mean"] == 0.0 and record["if_acc"] == 0.0
    assert "low confidence in 100% of transitions" in record["warnings"][0]
    assert low_confidence_warning(np.ones(12)) is None
    assert low_confidence_warning(np.r_[np.zeros(4), np.ones(8)]) is not None  # a third of transitions
