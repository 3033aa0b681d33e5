"""Re-scoring a results folder's videos: ``wcbench submit`` and ``wcbench verify``.

Both check that a folder holds what its records claim (every video present with the hash its
record holds: :mod:`wcbench.results.videos`), then score the cases again from their videos with
the scorers its results.json names (:func:`wcbench.results.scorers.build_scorers`) and compare:
the same labels and numbers, or the case is named. ``submit`` first runs the leaderboard's checks
(:func:`wcbench.report.leaderboard.check_submission`), re-scores every case (or, with
``--sample``, a sample drawn under a seed made fresh at that moment, so nobody can know beforehand
which cases it will be) and adds the row the board computed itself; ``verify`` re-scores a sample
and flags every case that differs, going on to the next.

:func:`rescore_all` spreads the work over the process pool of ``wcbench score --jobs``
(:func:`wcbench.run.pool.map_scored`): each job is a picklable :class:`RescoreJob`,
:func:`rescore_job` the top-level function the workers run.
"""

from __future__ import annotations

import time
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

from rich.console import Console
from rich.table import Table

from wcbench.core.actions import parse_script
from wcbench.core.ids import IdError, check_name
from wcbench.core.storage import read_json
from wcbench.core.video import VideoReadError, VideoSource
from wcbench.report.board import fmt, print_leaderboard
from wcbench.report.leaderboard import (Checked, SubmissionError, add_to_board, check_submission, choose_rescored,
                                        choose_sample, default_submitter, fresh_seed, sample_size)
from wcbench.results.record import CaseRecord, load_records
from wcbench.results.scorers import build_scorers
from wcbench.results.videos import Finding, check_video, video_path
from wcbench.run.pool import default_workers, map_scored
from wcbench.scoring.case import CaseScorer, Scorers

VQ_TOLERANCE = 1e-6
IF_TOLERANCE = 1e-9
# What a re-score replaces in a submitted record (the commanded path is drawn, not scored).
RESCORED_FIELDS = ("if_acc", "if_trans_acc", "if_rot_acc", "vq", "vq_raw", "per_clip", "labels")


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


# ---------------------------------------------------------------- submit and verify

def rescore_workers(jobs: int | None, scorers: Scorers) -> int:
    """``--jobs`` of submit and verify: the processes that re-score side by side; when not
    given, those ``wcbench score`` would use (:func:`wcbench.run.pool.default_workers`)."""
    if jobs is None:
        return default_workers(scorers)
    if jobs < 1:
        raise SubmissionError(f"--jobs {jobs}: give a number of processes >= 1")
    return jobs


def _rescore(results_dir: Path, results: dict, records: list[CaseRecord], chosen: list[CaseRecord],
             jobs: int | None) -> list[CaseRecord]:
    """Re-score ``chosen`` in the scoring pool; a difference from the submitted record refuses,
    naming the case (the first in id order). Returns the records with each re-scored one's fields
    from its re-score."""
    by_id = {r.id: r for r in records}
    scorers = build_scorers(results)
    with closing(rescore_all(results_dir, chosen, scorers, rescore_workers(jobs, scorers))) as rescored:
        for case_id, fields, finding in rescored:
            if finding:
                raise SubmissionError(f"{results_dir}: case {finding.case}: {finding.problem}")
            by_id[case_id] = replace(by_id[case_id], **{k: v for k, v in fields.items() if k in RESCORED_FIELDS})
    return [by_id[r.id] for r in records]


def validate(results_dir: Path, sample: int | None = None, jobs: int | None = None) -> Checked:
    """Check a results folder end to end and re-score its videos (all, or ``sample`` cases under
    a seed drawn now) in ``jobs`` processes; raises SubmissionError naming the file, case or field."""
    results, model_name, records = check_submission(results_dir)
    chosen, seed = choose_rescored(records, sample, results["mode"])
    started = time.perf_counter()
    board_records = _rescore(results_dir, results, records, chosen, jobs)
    return Checked(results, model_name, board_records, {"cases": len(chosen), "of": len(records), "seed": seed},
                   time.perf_counter() - started)


def submit(results_dir: Path, boards: Path, console: Console, sample: int | None = None,
           submitter: str | None = None, update: bool = False, jobs: int | None = None) -> int:
    """Validate and re-score (:func:`validate`), then add the board's own row to the suite's
    board for the run's mode. A model name is one row per submitter: a second submission under
    it is refused unless ``update``, which replaces the row."""
    try:
        submitter = check_name(submitter or default_submitter(), "--submitter")
    except IdError as err:
        raise SubmissionError(str(err)) from None
    checked = validate(results_dir, sample, jobs)
    results = checked.results
    suite, mode = results["suite"], results["mode"]
    jsonl = add_to_board(boards, checked, results_dir, submitter, update)
    rescored = checked.rescored
    how = (f"all {rescored['of']} cases" if rescored["seed"] is None
           else f"{rescored['cases']} of {rescored['of']} cases (sample seed {rescored['seed']})")
    console.print(f"re-scored {how} from their videos in {checked.seconds:.1f} s")
    console.print(f"accepted: {checked.model_name} on {suite} ({mode}) -> {jsonl}")
    return print_leaderboard(suite, boards, console, mode)


def verify(results_dir: Path, sample: int | None, seed: int | None, console: Console, jobs: int | None = None) -> int:
    """Check every stored video's hash and re-score a sample of cases (default: at least 3 or
    10 %, under ``seed`` or one drawn now and printed) with the recorded scorers; flag every case
    that differs or whose video is missing, and go on to the next. Exit status 1 when any case is
    flagged."""
    results_path = results_dir / "results.json"
    if not results_path.exists():
        raise SubmissionError(f"{results_path}: not found; nothing to verify")
    results = read_json(results_path)
    if results["estimator"]["name"] == "gt":
        raise SubmissionError("gt-scored runs read the model's poses, not the video: nothing to re-score")
    scorers = build_scorers(results)
    records = [r for r in load_records(results_dir) if r.is_ok]
    video_findings = {r.id: check_video(results_dir, r) for r in records}
    seed = fresh_seed() if seed is None else seed
    chosen = choose_sample(records, sample_size(len(records), sample), seed)
    table = Table(title=f"verify {results_dir}: {len(records)} video hashes, {len(chosen)} cases re-scored "
                        f"(seed {seed})")
    for column in ("case", "video", "if_acc stored", "if_acc now", "vq stored", "vq now", "verdict"):
        table.add_column(column)
    flagged = []
    readable = [r for r in chosen if video_findings[r.id] is None]
    with closing(rescore_all(results_dir, readable, scorers, rescore_workers(jobs, scorers))) as rescored:
        now = {case_id: (fields, finding) for case_id, fields, finding in rescored}
    for record in sorted(records, key=lambda r: r.id):
        video_finding = video_findings[record.id]
        finding, fields = video_finding, None
        if finding is None and record.id in now:
            fields, finding = now[record.id]
        elif finding is None:
            continue  # hash checked, not in the re-scored sample
        if finding:
            flagged.append(finding)
        video = "ok" if video_finding is None else "missing" if "missing" in video_finding.problem else "changed"
        table.add_row(record.id, video if video == "ok" else f"[red]{video}[/red]", fmt(record.if_acc),
                      fmt(fields["if_acc"]) if fields else "-", fmt(record.vq),
                      fmt(fields["vq"]) if fields else "-", "[red]DIFFERS[/red]" if finding else "[green]same[/green]")
    Console().print(table)
    for finding in flagged:
        console.print(f"[red]flagged[/red] case {finding.case}: {finding.problem}")
    return 1 if flagged else 0
