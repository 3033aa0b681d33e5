"""``videos:DIR``: replay videos generated elsewhere (for example from ``wcbench export``),
matched to cases by id: ``DIR/<id>.mp4`` (or .avi/.mkv) or a frame folder ``DIR/<id>/``.

Frames are decoded clip by clip as the harness asks for them, so a long video is never held
whole in memory."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from wcbench.core.actions import FRAMES_PER_LATENT, Action
from wcbench.core.ids import id_path
from wcbench.core.video import VIDEO_SUFFIXES, VideoSource
from wcbench.models.base import CaseInfo


class VideoFolderModel:
    """Serves each case's stored video clip by clip, as if a model were generating it."""

    resolution = None
    reports_speed = False  # it decodes videos made elsewhere: its frames/s say nothing about their model

    def __init__(self, folder: str, fps: int = 16):
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise FileNotFoundError(f"videos:{folder}: no such folder")
        self.name = f"videos:{self.folder.name}"
        self.fps = fps
        self._frames: Iterator[np.ndarray] | None = None

    def _find(self, case_id: str) -> Path:
        for suffix in VIDEO_SUFFIXES:
            candidate = id_path(self.folder, case_id, "{id}" + suffix)
            if candidate.exists():
                return candidate
        if id_path(self.folder, case_id).is_dir():
            return id_path(self.folder, case_id)
        raise FileNotFoundError(f"{self.folder}: no video for case {case_id!r} "
                                f"(looked for {case_id}.mp4/.avi/.mkv or a folder {case_id}/)")

    def reset(self, image: np.ndarray, prompt: str, seed: int, info: CaseInfo) -> np.ndarray:
        self._path = self._find(info.id)
        self._frames, self._next, self._needed = iter(VideoSource(self._path)), 0, info.num_frames
        return self._take(1)[0]

    def step(self, actions: list[Action]) -> np.ndarray:
        if self._frames is None:
            raise RuntimeError("call reset() before step()")
        clip = self._take(FRAMES_PER_LATENT * len(actions))
        if self._next == self._needed and next(self._frames, None) is not None:
            raise ValueError(f"{self._path}: more than the {self._needed} frames the case needs (4L-3)")
        return clip

    def _take(self, count: int) -> np.ndarray:
        frames = [frame for _, frame in zip(range(count), self._frames)]
        self._next += len(frames)
        if len(frames) < count:
            raise ValueError(f"{self._path}: only {self._next} frames, but the case needs {self._needed} (4L-3)")
        return np.stack(frames)
