"""``videos:DIR``: replay videos generated elsewhere (for example from ``wcbench export``),
matched to cases by id: ``DIR/<id>.mp4`` (or .avi/.mkv) or a frame folder ``DIR/<id>/``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wcbench.models.base import CaseInfo, WholeVideoModel
from wcbench.video import VIDEO_SUFFIXES, read_video


class VideoFolderModel(WholeVideoModel):
    """Serves each case's stored video clip by clip, as if a model were generating it."""

    def __init__(self, folder: str, fps: int = 16):
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise FileNotFoundError(f"videos:{folder}: no such folder")
        self.name = f"videos:{self.folder.name}"
        self.fps = fps

    def _find(self, case_id: str) -> Path:
        for suffix in VIDEO_SUFFIXES:
            candidate = self.folder / f"{case_id}{suffix}"
            if candidate.exists():
                return candidate
        if (self.folder / case_id).is_dir():
            return self.folder / case_id
        raise FileNotFoundError(f"{self.folder}: no video for case {case_id!r} "
                                f"(looked for {case_id}.mp4/.avi/.mkv or a folder {case_id}/)")

    def generate(self, image: np.ndarray, prompt: str, seed: int, info: CaseInfo) -> np.ndarray:
        path = self._find(info.id)
        frames = read_video(path)
        if len(frames) != info.num_frames:
            raise ValueError(f"{path}: {len(frames)} frames, but case {info.id} needs {info.num_frames} (4L-3)")
        return frames
