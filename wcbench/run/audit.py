"""Checks that a results folder holds what its records claim, for ``submit`` and ``verify``:
every video inside the folder, named by its case, present with the hash its record holds, and
the cases re-scored from their videos with the recorded scorers, giving the same labels and
numbers.

``submit`` re-scores every case (or, with ``--sample``, a sample drawn under a seed made fresh
at that moment, so nobody can know beforehand which cases it will be). :func:`rescore_all`
spreads the work over the process pool of ``wcbench score --jobs``
(:func:`wcbench.run.pool.map_scored`): each job is a picklable :class:`RescoreJob`,
:func:`rescore_job` the top-level function the workers run.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from wcbench.core.actions import Thresholds, parse_script
from wcbench.core.video import VIDEO_SUFFIXES, VideoReadError, VideoSource
from wcbench.pose import build_estimator
from wcbench.run.pool import map_scored
from wcbench.scoring.case import CaseScorer, Scorers, sha256_file
from wcbench.scoring.quality import build_quality_scorer
from wcbench.scoring.record import CaseRecord

MIN_SAMPLE = 3
SAMPLE_SHARE = 0.10
VQ_TOLERANCE = 1e-6
IF_TOLERANCE = 1e-9


@dataclass
class Finding:
    """One problem with one case."""

    case: str
    problem: str


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


def sample_size(num_cases: int, requested: int | None = None) -> int:
    """``requested``, or at least :data:`MIN_SAMPLE` and :data:`SAMPLE_SHARE` of the cases; never more than exist."""
    size = requested if requested is not None else max(MIN_SAMPLE, math.ceil(SAMPLE_SHARE * num_cases))
    return max(0, min(size, num_cases))


def fresh_seed() -> int:
    """A sample seed from the operating system's randomness, drawn when the check runs: nothing
    in a results folder (ids, videos, their hashes) can predict or steer it."""
    return secrets.randbits(32)


def choose_sample(records: list[CaseRecord], size: int, seed: int) -> list[CaseRecord]:
    """``size`` records drawn without replacement under ``seed``, in id order."""
    ordered = sorted(records, key=lambda r: r.id)
    chosen = np.random.default_rng(seed).choice(len(ordered), size, replace=False) if size else []
    return [ordered[i] for i in sorted(chosen)]


def recorded_scorers(results: dict) -> Scorers:
    """The scorers a results.json names, with the thresholds and options it recorded."""
    estimator_options = dict(results["estimator"].get("options") or {})
    quality_options = dict(results["quality"].get("options") or {})
    estimator = build_estimator(results["estimator"]["name"], **estimator_options)
    estimator.thresholds = Thresholds(**results["estimator"]["thresholds"])
    quality = build_quality_scorer(results["quality"]["name"], **quality_options)
    return Scorers(estimator, quality, results["mode"],
                   options={"estimator": estimator_options, "quality": quality_options})


def rescore(results_dir: Path, record: CaseRecord, scorers: Scorers) -> dict:
    """Score a record's stored video again, streaming, as the run did (same script, prompt,
    field of view and clip length)."""
    scorer = CaseScorer(parse_script(record.script), scorers, prompt=record.prompt, fov_deg=record.fov_deg,
                        latents_per_clip=record.latents_per_clip or 4)
    for frame in VideoSource(video_path(results_dir, record)):
        scorer.add(frame[None])
    return scorer.finish()


def _first_difference(stored: list, now: list) -> str:
    if len(stored) != len(now):
        return f"{len(now)} labels now, {len(stored)} stored"
    differing = [i for i, (a, b) in enumerate(zip(stored, now)) if a != b]
    return f"{len(differing)} of {len(now)} transitions differ (first: transition {differing[0] + 1})"


def compare_rescored(record: CaseRecord, fields: dict) -> str | None:
    """What differs between a stored record and its re-score (None: nothing)."""
    labels = record.labels or {}
    for kind in ("commanded", "detected"):
        if list(labels.get(kind) or []) != list(fields["labels"][kind]):
            return (f"re-scoring its video gives other {kind} labels than the stored ones: "
                    f"{_first_difference(list(labels.get(kind) or []), fields['labels'][kind])}")
    for key in ("if_acc", "if_trans_acc", "if_rot_acc"):
        stored = getattr(record, key)
        if stored is None or abs(fields[key] - stored) > IF_TOLERANCE:
            return f"re-scoring its video gives {key}={fields[key]:.6f}, the record holds {stored}"
    stored_vq, vq = record.vq, fields["vq"]
    if (stored_vq is None) != (vq is None) or (vq is not None and abs(vq - stored_vq) > VQ_TOLERANCE):
        return f"re-scoring its video gives vq={vq}, the record holds {stored_vq}"
    return None


@dataclass(frozen=True)
class RescoreJob:
    """One case to re-score: everything a pool worker needs besides the scorers, picklable."""

    results_dir: Path
    record: CaseRecord


def rescore_job(job: RescoreJob, scorers: Scorers) -> tuple[str, dict | None, Finding | None]:
    """Re-score one case (the function :func:`wcbench.run.pool.map_scored` runs, in whatever
    process): (case id, its fields now or None, a finding or None)."""
    fields, finding = audit_case(job.results_dir, job.record, scorers)
    return job.record.id, fields, finding


def rescore_all(results_dir: Path, records: list[CaseRecord], scorers: Scorers,
                workers: int = 1) -> Iterator[tuple[str, dict | None, Finding | None]]:
    """Re-score ``records`` from their videos in ``workers`` processes (the pool of ``wcbench
    score --jobs``: :func:`wcbench.run.pool.map_scored`), yielding (case id, fields, finding) in
    the records' order. Close it (``contextlib.closing``) when stopping early: that stops the pool."""
    return map_scored(rescore_job, [RescoreJob(results_dir, record) for record in records], scorers, workers)


def audit_case(results_dir: Path, record: CaseRecord, scorers: Scorers) -> tuple[dict | None, Finding | None]:
    """Re-score one case: (the fields now, or None when its video cannot be read; a finding, or None)."""
    try:
        fields = rescore(results_dir, record, scorers)
    except (VideoReadError, ValueError, OSError) as err:
        return None, Finding(record.id, f"cannot re-score its video: {err}")
    problem = compare_rescored(record, fields)
    return fields, Finding(record.id, problem) if problem else None
