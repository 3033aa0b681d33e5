"""Action model: grammar, labels, frame and clip alignment."""

import pytest

from wcbench.core.actions import (NUM_LABELS, Action, ScriptError, clip_step_ranges, frames_for_latents, label_hits,
                                  latents_for_frames, parse_script, script_from_steps, step_of_frame)


@pytest.mark.parametrize("text", [
    "w-3, w+left-4, d+up-2, none-1",
    "s-1",
    "w+a-2, s+d+right+down-5, left+up-1",
    "a+left-7, d+right-1, up-2, down-3",
])
def test_round_trip_canonical(text):
    script = parse_script(text)
    assert script.format() == text
    assert parse_script(script.format()) == script


def test_parse_normalises_order_and_spaces():
    assert parse_script(" left + w -3 ,up+a-2").format() == "w+left-3, a+up-2"


def test_example_counts_and_frames():
    script = parse_script("w-3, w+left-4, d+up-2, none-1")
    assert script.num_steps == 10
    assert script.num_frames == 41
    assert [a.format() for a in script.step_actions()][:4] == ["w", "w", "w", "w+left"]


@pytest.mark.parametrize("text, fragment", [
    ("w-3, jump-2", "unknown component 'jump'"),
    ("w+s-2", "oppose"),
    ("a+d-1", "oppose"),
    ("left+right-1", "oppose"),
    ("up+down-4", "oppose"),
    ("w-3, left", "missing count"),
    ("w-0", "at least 1"),
    ("w-x", "not a whole number"),
    ("w+w-2", "twice"),
    ("none+w-2", "'none' cannot"),
    ("w-1,,s-1", "empty segment"),
    ("", "empty script"),
    ("-3", "missing count"),
    ("w+-2", "empty component"),
])
def test_errors_name_the_segment(text, fragment):
    with pytest.raises(ScriptError) as err:
        parse_script(text)
    assert fragment in str(err.value)
    bad = [seg.strip() for seg in text.split(",") if seg.strip()]
    if bad and fragment not in ("empty script", "empty segment"):
        assert any(repr(seg) in str(err.value) for seg in bad)


@pytest.mark.parametrize("latents, frames", [(32, 125), (64, 253), (96, 381), (1, 1)])
def test_frame_counts(latents, frames):
    assert frames_for_latents(latents) == frames
    assert latents_for_frames(frames) == latents


def test_bad_frame_count():
    with pytest.raises(ValueError):
        latents_for_frames(124)


@pytest.mark.parametrize("frames", [125, 253, 381])
def test_transition_alignment(frames):
    """Transition into frame f carries latent step ceil(f/4); the script covers every one."""
    steps = latents_for_frames(frames) - 1
    actions = [Action.from_label(k % NUM_LABELS) for k in range(steps)]
    script = script_from_steps(actions)
    assert script.num_frames == frames
    per_frame = script.frame_actions()
    assert len(per_frame) == frames - 1
    for f in range(1, frames):
        assert per_frame[f - 1] == actions[step_of_frame(f) - 1]
    assert [step_of_frame(f) for f in (1, 4, 5, 8, 9)] == [1, 1, 2, 2, 3]
    with pytest.raises(ValueError):
        step_of_frame(0)


def test_clip_ranges_worldplay_chunks():
    ranges = clip_step_ranges(31, 4)
    assert len(ranges) == 8
    assert list(ranges[0]) == [1, 2, 3]
    assert list(ranges[1]) == [4, 5, 6, 7]
    assert ranges[-1].stop - 1 == 31
    assert len(clip_step_ranges(63, 4)) == 16 and len(clip_step_ranges(95, 4)) == 24


def test_label_hits_split_full_translation_and_rotation():
    def label(text: str) -> int:
        return parse_script(f"{text}-1").step_actions()[0].label

    commanded = [label("w+left"), label("w+left"), label("w+left"), label("none")]
    detected = [label("w+left"), label("w"), label("left"), label("a+up")]
    full, trans, rot = label_hits(commanded, detected)
    assert full.tolist() == [True, False, False, False]
    assert trans.tolist() == [True, True, False, False]
    assert rot.tolist() == [True, False, True, False]
