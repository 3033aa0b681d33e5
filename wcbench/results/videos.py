"""The videos a results folder's records name: where each one is, its content hash, and whether
it is still the video that was scored (what ``submit`` and ``verify`` check before re-scoring)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from wcbench.core.video import VIDEO_SUFFIXES
from wcbench.results.record import CaseRecord


@dataclass
class Finding:
    """One problem with one case."""

    case: str
    problem: str


def sha256_file(path: str | Path) -> str:
    """Content hash of a stored video (a file, or every frame file of a folder in order)."""
    path = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    for file in files:
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def video_path(results_dir: Path, record: CaseRecord) -> Path:
    """A record's video: relative paths are inside the results folder (``run``), absolute ones
    where the manifest pointed (``score``)."""
    video = Path(str(record.video or ""))
    return video if video.is_absolute() else results_dir / video


def outside_problem(results_dir: Path, record: CaseRecord) -> str | None:
    """Why a record's video is not its own file in the folder (None: it is): a submission holds
    its videos, each at ``videos/<id>.<ext>`` (or a frame folder ``videos/<id>/``), resolving
    (links followed) to a path inside the folder."""
    video = Path(str(record.video or ""))
    is_named = video.parent == Path("videos") and (
        video.name == record.id or (video.stem == record.id and video.suffix.lower() in VIDEO_SUFFIXES))
    if video.is_absolute() or not is_named:
        return (f"video {record.video} is not the folder's own videos/{record.id}.<ext>: a submission holds "
                "every case's video, named by its case")
    if not (results_dir / video).resolve().is_relative_to(results_dir.resolve()):
        return f"video {record.video} links to a file outside {results_dir}"
    return None


def check_video(results_dir: Path, record: CaseRecord, is_inside: bool = False) -> Finding | None:
    """The video must exist and hash to the record's ``video_sha256``; with ``is_inside``, also be
    the folder's own file for the case (:func:`outside_problem`)."""
    if not record.video:
        return Finding(record.id, "the record names no video")
    problem = outside_problem(results_dir, record) if is_inside else None
    if problem:
        return Finding(record.id, problem)
    path = video_path(results_dir, record)
    if not path.exists():
        return Finding(record.id, f"video {path} is missing")
    if sha256_file(path) != record.video_sha256:
        return Finding(record.id, f"video {path} is not the one scored (its sha256 differs from the record's)")
    return None
