"""The few frames a report's case strip shows, kept while a video streams past the scorer.

Decoding a long lossless video costs about as much CPU as scoring it, so the report must not
decode it a second time to show eight frames: ``wcbench run`` and ``wcbench score`` keep those
frames (:class:`StripFrames`), shrunk to what the strip draws, and store them beside the case
record as ``cases/<id>.strip.npz``. The report uses them when they belong to the record's
video (same frame indices, same video hash) and decodes the video otherwise (folders made
before these files existed). The file is display only: nothing that checks or ranks results
(``submit``, ``verify``, the leaderboards) reads it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import cv2
import numpy as np

from wcbench.core.ids import id_path
from wcbench.core.storage import atomic_path
from wcbench.results.record import CaseRecord

STRIP_WIDTH = 256  # px per frame; the report draws each about 180 px wide (1.65 in at 110 dpi)
STRIP_SUFFIX = ".strip.npz"


def sample_indices(num_frames: int, count: int = 8) -> list[int]:
    """``count`` frame indices spread evenly from the first frame to the last."""
    if num_frames <= 0:
        return []
    return sorted({int(round(i)) for i in np.linspace(0, num_frames - 1, min(count, num_frames))})


def thumbnail(frame: np.ndarray) -> np.ndarray:
    """A frame shrunk to :data:`STRIP_WIDTH` pixels wide (aspect kept); narrower frames as they are."""
    height, width = frame.shape[:2]
    if width <= STRIP_WIDTH:
        return np.ascontiguousarray(frame)
    size = (STRIP_WIDTH, max(1, round(height * STRIP_WIDTH / width)))
    return cv2.resize(frame, size, interpolation=cv2.INTER_AREA)


def strip_path(results_dir: Path, case_id: str) -> Path:
    return id_path(results_dir, case_id, "cases/{id}" + STRIP_SUFFIX)


class StripFrames:
    """Keeps the thumbnails of a ``num_frames``-frame video's strip frames as its frames pass
    (:meth:`add` takes (T, H, W, 3) chunks in order)."""

    def __init__(self, num_frames: int):
        self.indices = sample_indices(num_frames)
        self._wanted = set(self.indices)
        self._kept: dict[int, np.ndarray] = {}
        self._seen = 0

    def add(self, frames: np.ndarray) -> None:
        for offset, frame in enumerate(frames):
            if self._seen + offset in self._wanted:
                self._kept[self._seen + offset] = thumbnail(frame)
        self._seen += len(frames)

    def frames(self) -> np.ndarray | None:
        """The kept thumbnails in index order, or None unless every strip frame went past."""
        if not self.indices or set(self._kept) != self._wanted:
            return None
        return np.stack([self._kept[i] for i in self.indices])


def save_strip(path: Path, strip: StripFrames, video_sha256: str) -> None:
    """Store the kept frames atomically, tied to the video they came from (nothing when incomplete)."""
    frames = strip.frames()
    if frames is None:
        return
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.savez_compressed(handle, frames=frames, indices=np.asarray(strip.indices, dtype=np.int64),
                            video_sha256=np.asarray(video_sha256))


def load_strip(path: Path, record: CaseRecord) -> np.ndarray | None:
    """The stored strip frames of ``record``'s video, or None when the file is absent, unreadable,
    or not of this record's video and frame count (the caller then decodes the video)."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            frames, indices, sha = stored["frames"], stored["indices"], str(stored["video_sha256"])
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None
    wanted = sample_indices(int(record.num_frames or 0))
    fits = (sha == record.video_sha256 and indices.tolist() == wanted and frames.dtype == np.uint8
            and frames.ndim == 4 and len(frames) == len(wanted) and frames.shape[3] == 3)
    return frames if fits else None
