"""Video IO: read mp4/avi/mkv files or folders of numbered frames; write lossless video.

Frames are (T, H, W, 3) uint8 RGB at every boundary; grayscale input becomes 3 channels.
Stored videos are lossless (HuffYUV in RGB), so re-scoring a stored video gives the same numbers.
HuffYUV, not FFV1: at 480x832 it decodes in about 4 ms of CPU a frame against FFV1's 21, and
encodes in 3 against 21, for files about 1.6 times larger (docs/quality.md, Speed). Reading does
not depend on the codec: FFV1 and other lossless files read the same way.

Both directions stream: :class:`VideoSource` decodes one frame at a time and
:func:`video_writer` encodes clip by clip, so memory does not grow with a video's length.
:func:`read_video` still returns a whole video as one array, for short clips.

A :class:`VideoSource` decodes in a background thread, up to two clips ahead of its reader
(FFV1, still read from older runs, costs about 20 ms of CPU a frame at 480x832, as much as
scoring it): OpenCV releases the GIL while it decodes, so on two cores decoding overlaps the
scoring of the frames before.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from collections import deque
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import cv2
import numpy as np

from wcbench.core.storage import atomic_path

VIDEO_SUFFIXES = (".mp4", ".avi", ".mkv", ".mov", ".webm")
FRAME_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
# FFmpeg's log lines look like "[h264 @ 0x55d1c0a3b2c0] error while decoding MB 3 7".
_FFMPEG_LINE = re.compile(r"^\[[\w\-. ]+ @ (0x)?[0-9a-fA-F]+\]")
# Decoded frames a VideoSource holds ready: two clips of 480x832 (16 frames each), so the decoder
# keeps working while the scorer spends half a second on a clip, and the next clip is ready when it
# asks for 16 frames at once (4 frames ahead left the scorer waiting for the decoder at every clip).
PREFETCH_BYTES = 40 << 20
# The lossless codec videos are stored in (see the module doc); its AVI/MKV tag.
STORED_FOURCC = "HFYU"
_STDERR = threading.Lock()  # descriptor 2 is the process's: one decoder points it elsewhere at a time
T = TypeVar("T")


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


def _read_image(file: Path) -> np.ndarray:
    image = cv2.imread(str(file), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise VideoReadError(f"{file}: not a readable image")
    if image.dtype != np.uint8:
        image = cv2.convertScaleAbs(image, alpha=255.0 / max(float(image.max()), 1.0))
    return _to_rgb(image)


class _DecoderLog:
    """Collects what FFmpeg prints while OpenCV decodes.

    FFmpeg reports corrupt packets only on the process's stderr (file descriptor 2), not
    through OpenCV's API, so descriptor 2 points at a scratch file during each ``read()``; its
    FFmpeg lines are kept and anything else (another thread's output, a progress bar) is
    passed on to the real stderr byte for byte. Decoders in several threads take turns.
    """

    def __init__(self) -> None:
        self.messages: list[str] = []
        self._scratch = tempfile.TemporaryFile()
        self._read_to = 0  # the scratch file only grows: a write still landing is read next time

    @contextmanager
    def capturing(self) -> Iterator[None]:
        with _STDERR:
            sys.stderr.flush()
            try:
                saved = os.dup(2)
            except OSError:  # no stderr at all: FFmpeg has nowhere to complain either
                yield
                return
            os.dup2(self._scratch.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
                os.close(saved)
                self._collect()

    def _collect(self) -> None:
        size = os.fstat(self._scratch.fileno()).st_size
        if size == self._read_to:
            return
        text = os.pread(self._scratch.fileno(), size - self._read_to, self._read_to).decode(errors="replace")
        self._read_to = size
        other = []
        for line in text.splitlines(keepends=True):
            if _FFMPEG_LINE.match(line):
                self.messages.append(line.rstrip("\r\n"))
            else:
                other.append(line)
        if other:
            os.write(2, "".join(other).encode())

    def close(self) -> None:
        with _STDERR:
            self._collect()
        self._scratch.close()


class VideoSource:
    """The frames of a video file or a folder of numbered frames, decoded one at a time.

    Iterate to get (H, W, 3) uint8 RGB frames. After (or during) iteration,
    ``decoder_messages`` holds what the decoder complained about (corrupt packets, concealed
    macroblocks): a video that decodes with complaints may show damaged frames.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.decoder_messages: list[str] = []
        if not self.path.exists():
            raise VideoReadError(f"{self.path}: no such file or folder")
        if self.path.is_dir():
            self._files = sorted((p for p in self.path.iterdir() if p.suffix.lower() in FRAME_SUFFIXES),
                                 key=_frame_number)
            if not self._files:
                raise VideoReadError(f"{self.path}: no frames ({', '.join(FRAME_SUFFIXES)}) in this folder")
        else:
            capture = cv2.VideoCapture(str(self.path))
            is_open = capture.isOpened()
            capture.release()
            if not is_open:
                raise VideoReadError(f"{self.path}: cannot open as a video (supported: {', '.join(VIDEO_SUFFIXES)} "
                                     "or a folder of numbered frames)")

    def count_frames(self) -> int:
        """The exact number of frames: counted for a folder, decoded and counted for a file."""
        if self.path.is_dir():
            return len(self._files)
        capture = cv2.VideoCapture(str(self.path))
        log = _DecoderLog()  # complaints are reported when the frames are read for real
        try:
            count = 0
            with log.capturing():
                while capture.grab():
                    count += 1
            return count
        finally:
            log.close()
            capture.release()

    def stated_frame_count(self) -> int:
        """The frame count the container states (0 when it states none); may be an estimate."""
        if self.path.is_dir():
            return len(self._files)
        capture = cv2.VideoCapture(str(self.path))
        try:
            return max(0, int(capture.get(cv2.CAP_PROP_FRAME_COUNT)))
        finally:
            capture.release()

    def __iter__(self) -> Iterator[np.ndarray]:
        shape = None
        count = 0
        make = self._folder_frames if self.path.is_dir() else self._file_frames
        with closing(prefetched(make, PREFETCH_BYTES)) as frames:  # a reader that stops early stops the thread
            for frame in frames:
                if shape is not None and frame.shape != shape:
                    raise VideoReadError(f"{self.path}: frame {count} is {frame.shape[1]}x{frame.shape[0]}, "
                                         f"earlier frames are {shape[1]}x{shape[0]}")
                shape = frame.shape
                count += 1
                yield frame
        if count == 0:
            raise VideoReadError(f"{self.path}: the video holds no readable frames")

    def _folder_frames(self) -> Iterator[np.ndarray]:
        for file in self._files:
            yield _read_image(file)

    def _file_frames(self) -> Iterator[np.ndarray]:
        capture = cv2.VideoCapture(str(self.path))
        log = _DecoderLog()
        try:
            while True:
                with log.capturing():
                    ok, frame = capture.read()
                self.decoder_messages = log.messages
                if not ok:
                    break
                yield _to_rgb(frame)
        finally:
            capture.release()
            log.close()


def prefetched(make: Callable[[], Iterator[T]], max_bytes: int,
               size_of: Callable[[T], int] = lambda item: item.nbytes) -> Iterator[T]:
    """The items of ``make()``, produced in a background thread ahead of the reader, holding
    at most ``max_bytes`` (``size_of`` each; always at least one item) ready.

    The iterator is made, run and closed (its ``finally`` blocks) in that thread; its exception
    is raised here, at the item where it happened. Stopping early (``break``, an error in the
    caller) stops the thread, at the latest after the item it is producing.
    """
    ready: deque[tuple[str, object, int]] = deque()  # (kind, value, bytes)
    held = 0
    stopped = False
    changed = threading.Condition()

    def hand_over(kind: str, value: object, size: int = 0) -> bool:
        nonlocal held
        with changed:
            changed.wait_for(lambda: stopped or held == 0 or held + size <= max_bytes)
            if stopped:
                return False
            ready.append((kind, value, size))
            held += size
            changed.notify_all()
            return True

    def produce() -> None:
        try:
            with closing(make()) as source:
                for item in source:
                    if not hand_over("item", item, size_of(item)):
                        return
        except BaseException as err:  # noqa: BLE001 - handed to the reader, who raises it
            hand_over("error", err)
            return
        hand_over("end", None)

    thread = threading.Thread(target=produce, name="wcbench-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            with changed:
                changed.wait_for(lambda: ready)
                kind, value, size = ready.popleft()
                held -= size
                changed.notify_all()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        with changed:
            stopped = True
            changed.notify_all()
        thread.join()


def read_video(path: str | Path) -> np.ndarray:
    """Read a whole video file or folder of numbered frames as (T, H, W, 3) uint8 RGB.

    The whole video is held in memory: for long videos iterate a :class:`VideoSource`."""
    return np.stack(list(VideoSource(path)))


def read_frames_at(path: str | Path, indices: list[int]) -> np.ndarray:
    """Only the frames at ``indices`` (sorted, distinct) of a video, decoding up to the last of them once."""
    wanted = set(indices)
    kept = {}
    for i, frame in enumerate(VideoSource(path)):
        if i in wanted:
            kept[i] = frame
        if i >= max(wanted, default=-1):
            break
    missing = sorted(wanted - set(kept))
    if missing:
        raise VideoReadError(f"{path}: has no frame {missing[0]} (it holds {max(kept, default=-1) + 1} or fewer)")
    return np.stack([kept[i] for i in sorted(wanted)])


def odd_size_problem(width: int, height: int) -> str | None:
    """Why frames of ``width`` x ``height`` cannot be stored exactly, or None: OpenCV's video
    writers (every codec) silently drop an odd last row or column."""
    if width <= 0 or height <= 0 or width % 2 or height % 2:
        return f"{width}x{height}: a stored video needs a positive, even width and height"
    return None


class _ClipWriter:
    """Appends (T, H, W, 3) uint8 RGB frames to a lossless video file; opened at the first frames."""

    def __init__(self, path: Path, fps: float, label: str):
        self.path, self.fps, self.label = path, fps, label
        self.count = 0
        self._writer: cv2.VideoWriter | None = None
        self._shape: tuple[int, ...] | None = None

    def write(self, frames: np.ndarray) -> None:
        frames = np.asarray(frames)
        if frames.ndim != 4 or frames.shape[3] != 3 or frames.dtype != np.uint8:
            raise ValueError(f"{self.label}: expected (T, H, W, 3) uint8 frames, got {frames.shape} {frames.dtype}")
        if self._writer is None:
            self._shape = frames.shape[1:]
            height, width = frames.shape[1:3]
            problem = odd_size_problem(width, height)
            if problem:
                raise ValueError(f"{self.label}: frames of {problem} (crop or resize the frames first)")
            self._writer = cv2.VideoWriter(str(self.path), cv2.VideoWriter_fourcc(*STORED_FOURCC), float(self.fps),
                                           (width, height))
            if not self._writer.isOpened():
                raise OSError(f"{self.label}: OpenCV cannot write {STORED_FOURCC} video here (use a .avi or .mkv path)")
        elif frames.shape[1:] != self._shape:
            raise ValueError(f"{self.label}: frames of {frames.shape[2]}x{frames.shape[1]} after frames of "
                             f"{self._shape[1]}x{self._shape[0]}")
        for frame in frames:
            self._writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        self.count += len(frames)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.release()


@contextmanager
def video_writer(path: str | Path, fps: float = 16) -> Iterator[_ClipWriter]:
    """Stream frames into a lossless video at ``path`` (use .avi or .mkv), atomically: the
    file appears when the block ends without error, and an error leaves nothing behind."""
    with atomic_path(path) as tmp:
        writer = _ClipWriter(tmp, fps, str(path))
        try:
            yield writer
        finally:
            writer.close()
        if writer.count == 0:
            raise ValueError(f"{path}: no frames were written")


def write_video(path: str | Path, frames: np.ndarray, fps: int = 16) -> None:
    """Write (T, H, W, 3) uint8 RGB frames atomically as lossless video (use a .avi or .mkv path)."""
    with video_writer(path, fps) as writer:
        writer.write(frames)
