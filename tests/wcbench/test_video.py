"""Streaming video IO and scoring: clip-by-clip writing equals writing at once and is atomic,
stored videos are lossless HuffYUV and FFV1 videos of earlier runs still read exactly,
decoding counts the decoder's complaints, the decoding thread runs ahead of its reader by a
byte budget, stops with its reader and passes other stderr output on unchanged, and the case
scorer holds one clip, never the video, scores a clip's quality beside its camera motion and
gives the numbers of whole-video scoring."""

import gc
import os
import threading
import time
import weakref

import cv2
import numpy as np
import pytest

from wcbench.core.actions import parse_script
from wcbench.core.video import (STORED_FOURCC, VideoReadError, VideoSource, prefetched, read_frames_at, read_video,
                                video_writer, write_video)
from wcbench.scoring.case import CaseScorer, score_frames


def _panning(num_frames: int, height: int = 48, width: int = 64) -> np.ndarray:
    """A textured strip panned sideways by 1 px a frame."""
    rng = np.random.default_rng(3)
    texture = cv2.GaussianBlur((rng.random((height, width + num_frames, 3)) * 255).astype(np.uint8), (0, 0), 1.5)
    return np.stack([texture[:, t:t + width] for t in range(num_frames)])


def test_streamed_writing_equals_writing_at_once(tmp_path):
    frames = _panning(33)
    write_video(tmp_path / "whole.avi", frames)
    with video_writer(tmp_path / "clips.avi") as writer:
        writer.write(frames[:1])
        for start in range(1, 33, 16):
            writer.write(frames[start:start + 16])
    assert np.array_equal(read_video(tmp_path / "clips.avi"), frames)  # stored video is lossless
    assert np.array_equal(read_video(tmp_path / "whole.avi"), frames)
    assert np.array_equal(read_frames_at(tmp_path / "clips.avi", [0, 7, 32]), frames[[0, 7, 32]])
    assert VideoSource(tmp_path / "clips.avi").count_frames() == 33


def _fourcc(path) -> str:
    code = int(cv2.VideoCapture(str(path)).get(cv2.CAP_PROP_FOURCC))
    return "".join(chr((code >> 8 * k) & 0xFF) for k in range(4))


@pytest.mark.parametrize("suffix", [".avi", ".mkv"])
def test_stored_videos_are_huffyuv_and_exact_on_any_content(tmp_path, suffix):
    """Every value of every channel survives (noise, saturated and black pixels, colours no
    smooth video has), in both containers the writer takes."""
    rng = np.random.default_rng(5)
    frames = rng.integers(0, 256, (5, 48, 66, 3), dtype=np.uint8)
    frames[:, :8] = 255
    frames[:, -8:] = 0
    path = tmp_path / f"v{suffix}"
    write_video(path, frames)
    assert _fourcc(path) == STORED_FOURCC == "HFYU"
    assert np.array_equal(read_video(path), frames)


def test_ffv1_videos_of_earlier_runs_still_read_exactly(tmp_path):
    frames = _panning(9)
    writer = cv2.VideoWriter(str(tmp_path / "old.avi"), cv2.VideoWriter_fourcc(*"FFV1"), 16, (64, 48))
    for frame in frames:
        writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    writer.release()
    assert _fourcc(tmp_path / "old.avi").upper() == "FFV1"
    assert np.array_equal(read_video(tmp_path / "old.avi"), frames)


def test_a_failed_write_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError, match="model died"):
        with video_writer(tmp_path / "v.avi") as writer:
            writer.write(_panning(5))
            raise RuntimeError("model died")
    with pytest.raises(ValueError, match="after frames of 64x48"):
        with video_writer(tmp_path / "v.avi") as writer:
            writer.write(_panning(5))
            writer.write(np.zeros((4, 10, 10, 3), np.uint8))
    with pytest.raises(ValueError, match="frames of 63x47: a stored video needs a positive, even width and height"):
        write_video(tmp_path / "v.avi", np.zeros((2, 47, 63, 3), np.uint8))
    assert list(tmp_path.iterdir()) == []


def test_decoder_complaints_are_counted(tmp_path):
    frames = _panning(60, 96, 128)
    clean = tmp_path / "clean.mp4"
    writer = cv2.VideoWriter(str(clean), cv2.VideoWriter_fourcc(*"mp4v"), 16, (128, 96))
    for frame in frames:
        writer.write(frame)
    writer.release()
    data = bytearray(clean.read_bytes())
    for k in range(2000, len(data) - 2000, 997):  # flip bits all through the coded frames
        data[k] ^= 0x55
    damaged = tmp_path / "damaged.mp4"
    damaged.write_bytes(bytes(data))
    source = VideoSource(clean)
    assert sum(1 for _ in source) == 60 and source.decoder_messages == []
    source = VideoSource(damaged)
    list(source)
    assert source.decoder_messages and all(m.startswith("[mpeg4 @") for m in source.decoder_messages)


def test_unreadable_videos_are_named(tmp_path):
    (tmp_path / "text.mp4").write_text("not a video")
    with pytest.raises(VideoReadError, match="text.mp4"):
        list(VideoSource(tmp_path / "text.mp4"))
    with pytest.raises(VideoReadError, match="no such file"):
        VideoSource(tmp_path / "absent.mp4")


SCRIPT = parse_script("d-2, right-3, w-3")  # 8 latent steps: 33 frames, clips of 4 steps



def test_streamed_scoring_equals_whole_video_scoring(make_scorers):
    frames = _panning(SCRIPT.num_frames)
    whole = score_frames(frames, SCRIPT, make_scorers(), fov_deg=75.0)
    scorer = CaseScorer(SCRIPT, make_scorers(), fov_deg=75.0)
    for frame in frames:
        scorer.add(frame[None])
    assert scorer.finish() == whole


def _meeting(call, barrier: threading.Barrier, threads: list[str]):
    """``call``, made to wait until the other scorer of the clip is running too."""

    def run(*args, **kwargs):
        threads.append(threading.current_thread().name)
        barrier.wait()
        return call(*args, **kwargs)

    return run


def test_a_clips_quality_is_scored_beside_its_camera_motion(make_scorers):
    """Each clip's estimator and quality calls are in flight at the same time (the barrier
    breaks, an error, if either waits for the other to finish first); the numbers are those of
    scorers that are not watched."""
    scorers, threads = make_scorers(), []
    barrier = threading.Barrier(2, timeout=30)
    scorers.estimator.estimate = _meeting(scorers.estimator.estimate, barrier, threads)
    scorers.quality.score = _meeting(scorers.quality.score, barrier, threads)
    frames = _panning(SCRIPT.num_frames)
    fields = score_frames(frames, SCRIPT, scorers, fov_deg=75.0)
    assert fields == score_frames(frames, SCRIPT, make_scorers(), fov_deg=75.0)
    clips = len(fields["per_clip"])
    assert len(threads) == 2 * clips and sum(name.startswith("wcbench-quality") for name in threads) == clips


@pytest.mark.parametrize("broken", ["estimator", "quality"])
def test_an_error_in_either_scorer_reaches_the_caller(make_scorers, broken):
    scorers = make_scorers()

    def fail(*args, **kwargs):
        raise RuntimeError(f"{broken} broke")

    setattr(getattr(scorers, broken), "estimate" if broken == "estimator" else "score", fail)
    with pytest.raises(RuntimeError, match=f"{broken} broke"):
        score_frames(_panning(SCRIPT.num_frames), SCRIPT, scorers, fov_deg=75.0)
    assert not [t for t in threading.enumerate() if t.name.startswith("wcbench-quality")]


def test_the_scorer_holds_one_clip_not_the_video(make_scorers):
    """Frames handed over one at a time are released once their clip is scored: at any time at
    most one clip (16 frames) plus the frame before it are alive."""
    scorer = CaseScorer(SCRIPT, make_scorers(), fov_deg=75.0)
    alive = []
    most = 0
    for frame in _panning(SCRIPT.num_frames):
        chunk = frame[None].copy()
        alive.append(weakref.ref(chunk))
        scorer.add(chunk)
        del chunk, frame
        gc.collect()
        most = max(most, sum(ref() is not None for ref in alive))
    assert most <= 17
    scorer.finish()


def test_wrong_length_is_an_error_after_streaming(make_scorers):
    scorer = CaseScorer(SCRIPT, make_scorers(), fov_deg=75.0)
    scorer.add(_panning(SCRIPT.num_frames + 4))
    with pytest.raises(ValueError, match="video has 37 frames but the script .* needs 33"):
        scorer.finish()


def _alive_prefetchers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "wcbench-prefetch"]


def test_stopping_early_stops_the_decoding_thread(tmp_path):
    frames = _panning(33)
    write_video(tmp_path / "v.avi", frames)
    for index, frame in enumerate(VideoSource(tmp_path / "v.avi")):
        assert np.array_equal(frame, frames[index])
        if index == 2:
            break
    assert _alive_prefetchers() == []
    assert np.array_equal(read_frames_at(tmp_path / "v.avi", [1, 4]), frames[[1, 4]])  # stops after frame 4
    assert _alive_prefetchers() == []


def test_the_decoding_thread_runs_ahead_by_its_byte_budget():
    """With 35 bytes of room for items of 10, the producer holds 3 ready and a fourth in hand,
    and no more however long the reader waits; an item larger than the budget still passes."""
    made = []

    def items():
        for k in range(20):
            made.append(k)
            yield np.zeros(10, np.uint8)

    reader = prefetched(items, 35)
    next(reader)
    deadline = time.monotonic() + 10
    while len(made) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert len(made) == 5  # the one read, three held, one waiting for room
    assert sum(1 for _ in reader) == 19
    large = (np.zeros(99, np.uint8) for _ in range(3))
    assert [len(item) for item in prefetched(lambda: large, 35)] == [99] * 3
    assert _alive_prefetchers() == []


def test_a_producer_error_reaches_the_reader_and_closes_the_producer():
    closed = []

    def frames():
        try:
            yield 1
            yield 2
            raise VideoReadError("v.avi: frame 2 is damaged")
        finally:
            closed.append(True)

    got = []
    with pytest.raises(VideoReadError, match="frame 2 is damaged"):
        for item in prefetched(frames, 1, size_of=lambda item: 1):
            got.append(item)
    assert got == [1, 2] and closed == [True] and _alive_prefetchers() == []


def test_other_output_passes_through_while_decoding(tmp_path, capfd):
    """While the decoding thread points stderr at its scratch file, what else is written there (a
    progress bar redrawing its line) reaches the real stderr unchanged."""
    write_video(tmp_path / "v.avi", _panning(33))
    for _ in VideoSource(tmp_path / "v.avi"):
        os.write(2, b"step 1\rstep 2\r")
    assert capfd.readouterr().err == "step 1\rstep 2\r" * 33
