"""Leaderboards: what a results folder must pass to go on a suite's board, which of its cases get
re-scored, and the row the board adds to ``leaderboards/<suite>.jsonl`` (re-rendering
``<suite>.md``; compat-mode runs go to their own board, :mod:`wcbench.report.board`). The
re-scoring, and the ``submit`` and ``verify`` commands that compose it with these checks, are
:mod:`wcbench.run.audit`: everything here only reads.

A board entry is what the board computed. Submit trusts nothing it can recompute: the suite hash,
scorer versions and thresholds must be this wcbench's; every suite case must be present exactly
once and nothing else; each case's script and commanded labels must be the suite's, its accuracy
must follow from its labels, the summary must have exactly the suite's groups and follow from the
cases; every video must be the folder's own file for its case, with the hash its record holds,
and no two cases may share one. Then every video is scored again (``--sample N``: N cases, drawn
under a seed made at that moment and recorded in the entry) and the submitted numbers are only
compared: any difference refuses the submission, naming the case. The model name follows a plain
rule and is one row per submitter (``--update`` replaces it); the reported speed is shown as
reported, never ranked. Results of ``wcbench run`` and of ``wcbench score`` on a manifest
exported from the suite are accepted alike.
"""

from __future__ import annotations

import datetime as dt
import getpass
import json
import math
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wcbench.core.actions import label_hits
from wcbench.core.ids import IdError, check_name
from wcbench.core.storage import read_json, write_text
from wcbench.data.suite import SuiteError, load_suite
from wcbench.pose import build_estimator
from wcbench.report.board import DEFAULT_MODE, board_path, read_entries, render_markdown
from wcbench.report.summary import summarize
from wcbench.results.record import CaseRecord, load_records
from wcbench.results.videos import check_video
from wcbench.scoring.following import commanded_labels
from wcbench.scoring.quality import build_quality_scorer

TOLERANCE = 1e-9
_HEADER_KEYS = ("version", "estimator", "quality", "mode", "suite", "suite_hash", "model", "config_hash",
                "cases", "summary")
MAX_HARDWARE_LENGTH = 100
MIN_SAMPLE = 3
SAMPLE_SHARE = 0.10


class SubmissionError(ValueError):
    """A results folder cannot go on the leaderboard; the message says why."""


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return abs(float(a) - float(b)) <= TOLERANCE


def _recompute_case(record: CaseRecord, mode: str, where: str) -> None:
    """Recompute a case's per-clip and overall IF accuracy from its stored labels."""
    labels = record.labels or {}
    commanded, detected = np.asarray(labels.get("commanded", [])), np.asarray(labels.get("detected", []))
    if len(commanded) != (record.num_frames or 0) - 1 or len(detected) != len(commanded):
        raise SubmissionError(f"{where}: stored labels do not cover the video's {record.num_frames} frames")
    if mode != "default":
        return  # compat hits depend on three thresholds; only default mode is recomputed from labels
    hits = dict(zip(("if_acc", "if_trans_acc", "if_rot_acc"), label_hits(commanded, detected)))
    for key, hit in hits.items():
        per_clip = [float(hit[c["frames"][0] - 1:c["frames"][1]].mean()) for c in record.per_clip]
        if not _close(per_clip, [c[key] for c in record.per_clip]):
            raise SubmissionError(f"{where}: per-clip {key} does not match its stored labels")
        stored = getattr(record, key)
        if not _close(float(np.mean(per_clip)), stored):
            raise SubmissionError(f"{where}: {key}={stored} does not match its clips ({np.mean(per_clip)})")
    vq_clips = [c["vq"] for c in record.per_clip if c.get("vq") is not None]
    if vq_clips and not _close(float(np.mean(vq_clips)), record.vq):
        raise SubmissionError(f"{where}: vq={record.vq} does not match its clips ({np.mean(vq_clips)})")


def _load_suite(results: dict, results_path: Path):
    try:
        suite = load_suite(results["suite"])
    except SuiteError:  # not a built-in suite: the file the run used
        try:
            suite = load_suite(results.get("suite_source") or results["suite"])
        except SuiteError as err:
            raise SubmissionError(f"{results_path}: cannot load suite {results['suite']!r}: {err}") from err
    if results["suite_hash"] != suite.content_hash():
        raise SubmissionError(f"{results_path}: suite hash {results['suite_hash']} is not the current "
                              f"{suite.name} ({suite.content_hash()}); rerun on the current suite")
    return suite


def _check_scorers(results: dict, results_path: Path) -> None:
    estimator = build_estimator(results["estimator"]["name"])
    if estimator.name == "gt":
        raise SubmissionError(f"{results_path}: scored with the gt estimator, which reads the model's own "
                              "poses; leaderboards need an estimator that reads the video")
    if results["estimator"]["version"] != estimator.version:
        raise SubmissionError(f"{results_path}: estimator {estimator.name} version "
                              f"{results['estimator']['version']} != current {estimator.version}; re-score")
    current = estimator.thresholds
    stored = results["estimator"].get("thresholds") or {}
    if any(not _close(stored.get(k), getattr(current, k)) for k in ("translation", "rotation_deg", "secondary_ratio")):
        raise SubmissionError(f"{results_path}: estimator thresholds {stored} are not this wcbench's "
                              f"{estimator.name} thresholds; re-score with them")
    quality = build_quality_scorer(results["quality"]["name"])
    if results["quality"]["version"] != quality.version:
        raise SubmissionError(f"{results_path}: quality scorer {quality.name} version "
                              f"{results['quality']['version']} != current {quality.version}; re-score")


def _check_case_set(results_dir: Path, suite, records: list[CaseRecord]) -> None:
    """Every suite case exactly once (one record file, named by its id), nothing else, all ok."""
    stems = {p.stem for p in (results_dir / "cases").glob("*.json") if not p.name.startswith(".")}
    for record in records:
        if record.id not in stems:
            raise SubmissionError(f"{results_dir}: case {record.id}: its record is stored under another name")
    ids = [r.id for r in records]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise SubmissionError(f"{results_dir}: case {repeated[0]}: recorded more than once")
    wanted = {c.id for c in suite.cases}
    extra = sorted(set(ids) - wanted)
    if extra:
        raise SubmissionError(f"{results_dir}: case {extra[0]} is not in suite {suite.name!r}"
                              + (f" (nor {extra[1:4]})" if len(extra) > 1 else "") + "; remove it")
    absent = sorted(wanted - set(ids))
    failed = sorted(r.id for r in records if not r.is_ok)
    if absent or failed:
        raise SubmissionError(f"{results_dir}: incomplete run: {len(absent)} case(s) missing {absent[:3]}, "
                              f"{len(failed)} failed {failed[:3]}; rerun the same command into it to finish")


def _check_case(record: CaseRecord, case, mode: str, where: str) -> None:
    """The record is the suite's case: same script, track, horizon, length, commanded labels;
    its accuracies follow from its labels."""
    for key, wanted in (("script", case.script), ("track", case.track), ("horizon", case.horizon),
                        ("num_frames", case.num_frames)):
        if getattr(record, key) != wanted:
            raise SubmissionError(f"{where}: {key}={getattr(record, key)!r} but the suite's case has {wanted!r}")
    stored = list((record.labels or {}).get("commanded") or [])
    if stored != commanded_labels(case.parsed()).tolist():
        raise SubmissionError(f"{where}: stored commanded labels are not the ones its script commands")
    _recompute_case(record, mode, where)


def _check_header(results: dict, results_path: Path) -> str:
    """The fields a board row shows that no re-score can check: the model name (the rule of
    :func:`check_name`) and the self-reported speed (a number and a short hardware label).
    Returns the model name."""
    try:
        name = check_name(results.get("model_name", results["model"]), "model_name")
    except IdError as err:
        raise SubmissionError(f"{results_path}: {err}") from None
    speed = results.get("interactivity") or {}
    if not isinstance(speed, dict):
        raise SubmissionError(f"{results_path}: interactivity must be a mapping")
    fps = speed.get("fps")
    if fps is not None and not (isinstance(fps, (int, float)) and math.isfinite(fps) and fps > 0):
        raise SubmissionError(f"{results_path}: interactivity.fps={fps!r} is not a positive number")
    hardware = speed.get("hardware")
    if hardware is not None and not (isinstance(hardware, str) and len(hardware) <= MAX_HARDWARE_LENGTH):
        raise SubmissionError(f"{results_path}: interactivity.hardware must be text of at most "
                              f"{MAX_HARDWARE_LENGTH} characters")
    return name


def _check_summary(results: dict, results_path: Path, suite, records: list[CaseRecord]) -> None:
    """results.json's summary has exactly the suite's groups (track/horizon, overall), each with
    the numbers its cases give."""
    wanted = {f"{c.track}/{c.horizon}" for c in suite.cases} | {"overall"}
    stored = results.get("summary")
    if not isinstance(stored, dict):
        raise SubmissionError(f"{results_path}: summary must be a mapping of groups")
    odd = sorted(set(stored) ^ wanted)
    if odd:
        what = "is not one of" if odd[0] in stored else "is missing from the summary; the suite has"
        raise SubmissionError(f"{results_path}: summary group {odd[0]!r} {what} suite {suite.name!r}'s groups "
                              f"{sorted(wanted)}")
    for key, block in summarize(records).items():
        if not isinstance(stored[key], dict):
            raise SubmissionError(f"{results_path}: summary group {key!r} is not a mapping of numbers")
        for field, value in block.items():
            if not _close(value, stored[key].get(field)):
                raise SubmissionError(f"{results_path}: summary {key}.{field}={stored[key].get(field)} but the cases "
                                      f"give {value}; numbers were edited or the run is mixed")


def _check_videos(results_dir: Path, cases: dict, records: list[CaseRecord]) -> None:
    """Every video is the folder's own file for its case, hashes as recorded, and no two cases
    share one unless they are the same case (same script, start scene or image, prompt)."""
    for record in records:
        finding = check_video(results_dir, record, is_inside=True)
        if finding:
            raise SubmissionError(f"{results_dir}: case {finding.case}: {finding.problem}")
    first_with: dict[str, CaseRecord] = {}
    for record in sorted(records, key=lambda r: r.id):
        other = first_with.setdefault(record.video_sha256, record)
        same_case = _content(cases[other.id]) == _content(cases[record.id])
        if other is not record and not same_case:
            raise SubmissionError(f"{results_dir}: case {record.id}: its video is the same file (sha256) as case "
                                  f"{other.id}'s, a different case")


def _content(case) -> tuple:
    return case.script, case.scene_seed, case.image, case.prompt


@dataclass
class Checked:
    """A submission that passed: its results.json, the model name, the records the board
    computed (re-scored ones in place of the submitted) and what was re-scored."""

    results: dict
    model_name: str
    records: list[CaseRecord]
    rescored: dict  # {"cases": n, "of": total, "seed": seed or None}
    seconds: float


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


def choose_rescored(records: list[CaseRecord], sample: int | None, mode: str) -> tuple[list[CaseRecord], int | None]:
    """The cases a submission re-scores: every record, or with ``sample`` that many drawn under a
    fresh seed (and the seed; None when all)."""
    if sample is None or sample >= len(records):
        return records, None
    if mode != DEFAULT_MODE:
        raise SubmissionError(f"--sample: a {mode} run is only accepted whole (its cases' numbers cannot be "
                              "recomputed from stored labels); submit without --sample")
    if sample < 1:
        raise SubmissionError(f"--sample {sample}: give at least 1 case (or leave it out to re-score all)")
    seed = fresh_seed()
    return choose_sample(records, sample, seed), seed


def check_submission(results_dir: Path) -> tuple[dict, str, list[CaseRecord]]:
    """Everything a submission must pass before its videos are re-scored (the suite, scorers,
    cases, summary and videos: see the module's docstring); raises SubmissionError naming the
    file, case or field. Returns its results.json, the model name and its records."""
    results_path = results_dir / "results.json"
    if not results_path.exists():
        raise SubmissionError(f"{results_path}: not found; run `wcbench run` (or `wcbench score` on an exported "
                              "manifest) first")
    results = read_json(results_path)
    missing = [k for k in _HEADER_KEYS if k not in results]
    if missing:
        raise SubmissionError(f"{results_path}: missing {missing} (only results of `wcbench run`, or of `wcbench "
                              "score` on a manifest from `wcbench export`, can be submitted)")
    model_name = _check_header(results, results_path)
    suite = _load_suite(results, results_path)
    _check_scorers(results, results_path)
    records = load_records(results_dir)
    _check_case_set(results_dir, suite, records)
    cases = {c.id: c for c in suite.cases}
    listed = [c["id"] for c in results["cases"]]
    if sorted(listed) != sorted(r.id for r in records):
        odd = sorted(set(listed) ^ {r.id for r in records} or {i for i in listed if listed.count(i) > 1})
        raise SubmissionError(f"{results_path}: case {odd[0]}: results.json's cases are not the records' cases")
    rows = {c["id"]: c for c in results["cases"]}
    for record in records:
        where = f"{results_dir}: case {record.id}"
        _check_case(record, cases[record.id], results["mode"], where)
        row = rows[record.id]
        for key in ("if_acc", "if_trans_acc", "if_rot_acc", "vq"):
            if not _close(row.get(key), getattr(record, key)):
                raise SubmissionError(f"{where}: results.json's {key} differs from the case record's")
    _check_summary(results, results_path, suite, records)
    _check_videos(results_dir, cases, records)
    return results, model_name, records


def _entry(checked: Checked, results_dir: Path, submitter: str) -> dict:
    """The board row, from the board's own records; timing and hardware as the submitter reported them."""
    results = checked.results
    return {
        "model": results["model"], "model_name": checked.model_name, "submitter": submitter,
        "model_options": results.get("model_options", {}), "suite": results["suite"],
        "suite_hash": results["suite_hash"], "config_hash": results["config_hash"],
        "estimator": results["estimator"], "quality": results["quality"], "mode": results["mode"],
        "wcbench_version": results["version"], "summary": summarize(checked.records),
        "rescored": checked.rescored, "interactivity": results.get("interactivity", {}),
        "submitted": dt.date.today().isoformat(), "source": results_dir.name, "command": results.get("command", "run"),
    }


def default_submitter() -> str:
    """The login name: who submits, unless ``--submitter`` says otherwise."""
    return getpass.getuser()


def add_to_board(boards: Path, checked: Checked, results_dir: Path, submitter: str, update: bool) -> Path:
    """Add the board's own row for ``checked`` to its suite's board for the run's mode (``.jsonl``,
    re-rendering ``.md``); returns the ``.jsonl`` path. A model name is one row per submitter: a
    second row under it is refused unless ``update``, which replaces the row."""
    suite, mode = checked.results["suite"], checked.results["mode"]
    jsonl = board_path(boards, suite, mode, ".jsonl")
    entries = read_entries(jsonl)
    same = [e for e in entries if (e["model_name"], e.get("submitter")) == (checked.model_name, submitter)]
    if same and not update:
        raise SubmissionError(f"{jsonl}: model_name {checked.model_name!r} from {submitter} is already on the "
                              "leaderboard; pass --update to replace that row, or name the model differently")
    entries = [e for e in entries if e not in same] + [_entry(checked, results_dir, submitter)]
    write_text(jsonl, "".join(json.dumps(e, sort_keys=True) + "\n" for e in entries))
    write_text(board_path(boards, suite, mode, ".md"), render_markdown(suite, entries, mode))
    return jsonl
