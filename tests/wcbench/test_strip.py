"""The report's strip frames: kept while a video is scored, stored beside the record, drawn by
the report without decoding the video again; a strip of another video is never shown, and
folders without strips still get their frames (decoded)."""

import csv
from dataclasses import replace

import cv2
import numpy as np
import pytest

from wcbench.cli import main
from wcbench.core.video import read_frames_at, write_video
from wcbench.report import html
from wcbench.report.results import rebuild
from wcbench.results.record import load_records
from wcbench.results.strip import (STRIP_WIDTH, StripFrames, load_strip, sample_indices, save_strip, strip_path,
                                   thumbnail)

SCRIPT = "d-2, right-3"  # 5 latent steps: 21 frames


def _panning(num_frames: int, height: int, width: int) -> np.ndarray:
    rng = np.random.default_rng(5)
    texture = cv2.GaussianBlur((rng.random((height, width + 2 * num_frames, 3)) * 255).astype(np.uint8), (0, 0), 1.5)
    return np.stack([texture[:, 2 * t:2 * t + width] for t in range(num_frames)])


def test_strip_frames_are_the_sampled_frames_shrunk():
    frames = _panning(17, 60, 400)
    strip = StripFrames(17)
    for start in (0, 1, 5, 6, 13):  # chunks of any size, as a model or a decoder hands them over
        strip.add(frames[start:{0: 1, 1: 5, 5: 6, 6: 13, 13: 17}[start]])
    kept = strip.frames()
    assert strip.indices == sample_indices(17) == [0, 2, 5, 7, 9, 11, 14, 16]
    assert kept.shape == (8, round(60 * STRIP_WIDTH / 400), STRIP_WIDTH, 3)
    assert np.array_equal(kept, np.stack([thumbnail(frames[i]) for i in strip.indices]))
    assert thumbnail(frames[0][:, :200]).shape == (60, 200, 3)  # narrow frames are kept as they are
    half = StripFrames(17)
    half.add(frames[:9])
    assert half.frames() is None  # not every strip frame went past: nothing to store


@pytest.fixture()
def scored(tmp_path):
    """A results folder of `wcbench score` on one 21-frame video."""
    write_video(tmp_path / "pan.avi", _panning(21, 48, 64))
    with (tmp_path / "m.csv").open("w", newline="") as handle:
        csv.writer(handle).writerows([["id", "video", "actions", "fov_deg"], ["pan", "pan.avi", SCRIPT, 75.0]])
    out = tmp_path / "out"
    assert main(["score", "--manifest", str(tmp_path / "m.csv"), "--out", str(out)]) == 0
    return out


def test_score_stores_the_strip_and_the_report_draws_it_without_decoding(scored, monkeypatch):
    record = load_records(scored)[0]
    stored = load_strip(strip_path(scored, "pan"), record)
    assert np.array_equal(stored, read_frames_at(scored.parent / "pan.avi", sample_indices(21)))
    drawn_from_strip = (scored / "report.html").read_text()
    assert "frames of pan" in drawn_from_strip and "Frames not shown" not in drawn_from_strip

    def no_decoding(*args):
        raise AssertionError("the report decoded the video although its strip is stored")

    monkeypatch.setattr(html, "read_frames_at", no_decoding)
    rebuild(scored)
    assert (scored / "report.html").read_text() == drawn_from_strip
    monkeypatch.undo()
    strip_path(scored, "pan").unlink()  # a folder from before strips were stored: decoded, same page
    rebuild(scored)
    assert (scored / "report.html").read_text() == drawn_from_strip


def test_a_strip_of_another_video_is_not_shown(scored):
    record = load_records(scored)[0]
    path = strip_path(scored, "pan")
    fake = StripFrames(21)
    fake.add(np.zeros((21, 48, 64, 3), np.uint8))
    save_strip(path, fake, "f" * 64)
    assert load_strip(path, record) is None  # another video's hash
    save_strip(path, fake, record.video_sha256)
    assert load_strip(path, replace(record, num_frames=25)) is None  # other frame indices
    path.write_bytes(b"not a zip file")
    assert load_strip(path, record) is None
    rebuild(scored)  # falls back to decoding the video
    assert "frames of pan" in (scored / "report.html").read_text()
