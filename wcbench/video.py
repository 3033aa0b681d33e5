"""Video IO: read mp4/avi/mkv files or folders of numbered frames; write lossless video.

Frames are (T, H, W, 3) uint8 RGB at every boundary; grayscale input becomes 3 channels.
Stored videos are FFV1 (lossless), so re-scoring a stored video gives the same numbers.
"""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import numpy as np

from wcbench.storage import atomic_path

VIDEO_SUFFIXES = (".mp4", ".avi", ".mkv", ".mov", ".webm")
FRAME_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")


class VideoReadError(ValueError):
    """A video file or frame folder cannot be read; the message names it."""


def _to_rgb(frame: np.ndarray) -> np.ndarray:
    if frame.ndim == 2:
        return cv2.cvtColor(frame, cv2.COLOR_GRAY2RGB)
    if frame.shape[2] == 4:
        return cv2.cvtColor(frame, cv2.COLOR_BGRA2RGB)
    return cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)


def _frame_number(path: Path) -> int:
    digits = re.findall(r"\d+", path.stem)
    if not digits:
        raise VideoReadError(f"{path}: frame file names must contain a frame number")
    return int(digits[-1])


def read_frames_folder(folder: Path) -> np.ndarray:
    files = sorted((p for p in folder.iterdir() if p.suffix.lower() in FRAME_SUFFIXES), key=_frame_number)
    if not files:
        raise VideoReadError(f"{folder}: no frames ({', '.join(FRAME_SUFFIXES)}) in this folder")
    frames = []
    for file in files:
        image = cv2.imread(str(file), cv2.IMREAD_UNCHANGED)
        if image is None:
            raise VideoReadError(f"{file}: not a readable image")
        if image.dtype != np.uint8:
            image = cv2.convertScaleAbs(image, alpha=255.0 / max(float(image.max()), 1.0))
        frames.append(_to_rgb(image))
    if len({f.shape for f in frames}) > 1:
        raise VideoReadError(f"{folder}: frames differ in size")
    return np.stack(frames)


def read_video(path: str | Path) -> np.ndarray:
    """Read a video file or a folder of numbered frames as (T, H, W, 3) uint8 RGB."""
    path = Path(path)
    if not path.exists():
        raise VideoReadError(f"{path}: no such file or folder")
    if path.is_dir():
        return read_frames_folder(path)
    capture = cv2.VideoCapture(str(path))
    if not capture.isOpened():
        raise VideoReadError(f"{path}: cannot open as a video (supported: {', '.join(VIDEO_SUFFIXES)} "
                             "or a folder of numbered frames)")
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(_to_rgb(frame))
    capture.release()
    if not frames:
        raise VideoReadError(f"{path}: the video holds no readable frames")
    return np.stack(frames)


def write_video(path: str | Path, frames: np.ndarray, fps: int = 16) -> None:
    """Write (T, H, W, 3) uint8 RGB frames atomically as lossless FFV1 (use a .avi or .mkv path)."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[3] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"{path}: expected (T, H, W, 3) uint8 frames, got {frames.shape} {frames.dtype}")
    height, width = frames.shape[1:3]
    with atomic_path(path) as tmp:
        writer = cv2.VideoWriter(str(tmp), cv2.VideoWriter_fourcc(*"FFV1"), float(fps), (width, height))
        if not writer.isOpened():
            raise OSError(f"{path}: OpenCV cannot write FFV1 video here")
        for frame in frames:
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        writer.release()
