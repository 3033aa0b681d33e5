"""Leaderboards: ``submit`` validates a results folder and appends it to
``leaderboards/<suite>.jsonl`` (re-rendering ``<suite>.md``); ``verify`` re-scores stored
videos; ``leaderboard`` prints the table.

Submit trusts nothing it can recompute: the suite hash, scorer versions and thresholds must be
this wcbench's; every suite case must be present exactly once and nothing else; each case's
script and commanded labels must be the suite's, its accuracy must follow from its labels, every
aggregate from the cases; every video must be present with the hash its record holds; and a
seeded sample of cases is re-scored from the videos (:mod:`wcbench.report.audit`). Results of
``wcbench run`` and of ``wcbench score`` on a manifest exported from the suite are accepted alike.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from wcbench.core.actions import label_hits
from wcbench.core.storage import read_json, write_text
from wcbench.data.suite import SuiteError, load_suite
from wcbench.pose import build_estimator
from wcbench.report import audit
from wcbench.report.summary import summarize
from wcbench.scoring.following import commanded_labels
from wcbench.scoring.quality import build_quality_scorer
from wcbench.scoring.record import CaseRecord, load_records

TOLERANCE = 1e-9
_HEADER_KEYS = ("version", "estimator", "quality", "mode", "suite", "suite_hash", "model", "config_hash",
                "cases", "summary")


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


def validate(results_dir: Path, sample: int | None = None, seed: int | None = None) -> tuple[dict, list[CaseRecord]]:
    """Check a results folder end to end; returns (results, full case records).

    ``sample`` cases (default: at least 3 or 10 %) are re-scored from their videos under
    ``seed`` (default: derived from the videos' hashes). Raises SubmissionError naming the case.
    """
    results_path = results_dir / "results.json"
    if not results_path.exists():
        raise SubmissionError(f"{results_path}: not found; run `wcbench run` (or `wcbench score` on an exported "
                              "manifest) first")
    results = read_json(results_path)
    missing = [k for k in _HEADER_KEYS if k not in results]
    if missing:
        raise SubmissionError(f"{results_path}: missing {missing} (only results of `wcbench run`, or of `wcbench "
                              "score` on a manifest from `wcbench export`, can be submitted)")
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
        if any(not _close(row.get(k), getattr(record, k)) for k in ("if_acc", "if_trans_acc", "if_rot_acc", "vq")):
            raise SubmissionError(f"{where}: results.json row differs from the case record")
    summary = summarize(records)
    for key, block in summary.items():
        stored = results["summary"].get(key, {})
        for field, value in block.items():
            if not _close(value, stored.get(field)):
                raise SubmissionError(f"{results_path}: summary {key}.{field}={stored.get(field)} but the cases "
                                      f"give {value}; numbers were edited or the run is mixed")
    for record in records:
        finding = audit.check_video(results_dir, record)
        if finding:
            raise SubmissionError(f"{results_dir}: case {finding.case}: {finding.problem}")
    scorers = audit.recorded_scorers(results)
    seed = audit.default_seed(records) if seed is None else seed
    for record in audit.choose_sample(records, audit.sample_size(len(records), sample), seed):
        _, finding = audit.audit_case(results_dir, record, scorers)
        if finding:
            raise SubmissionError(f"{results_dir}: case {finding.case}: {finding.problem}")
    return results, records


def _entry(results: dict, results_dir: Path) -> dict:
    return {
        "model": results["model"], "model_name": results.get("model_name", results["model"]),
        "model_options": results.get("model_options", {}), "suite": results["suite"],
        "suite_hash": results["suite_hash"], "config_hash": results["config_hash"],
        "estimator": results["estimator"], "quality": results["quality"], "mode": results["mode"],
        "wcbench_version": results["version"], "summary": results["summary"],
        "interactivity": results.get("interactivity", {}), "submitted": dt.date.today().isoformat(),
        "source": results_dir.name, "command": results.get("command", "run"),
    }


def _fmt(value: float | None, ci: list | None = None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    text = f"{value:.3f}"
    if ci and all(x is not None and not math.isnan(x) for x in ci):
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return text


def _rows(entries: list[dict]) -> list[list[str]]:
    ranked = sorted(entries, key=lambda e: (-e["summary"]["overall"]["if_acc"], -(e["summary"]["overall"]["vq"] or 0)))
    rows = []
    for rank, entry in enumerate(ranked, start=1):
        overall = entry["summary"]["overall"]
        basic = entry["summary"].get("basic/short", {})
        combined = [v["if_acc"] for k, v in entry["summary"].items() if k.startswith("combined/")]
        rows.append([str(rank), entry["model_name"], _fmt(overall["if_acc"], overall.get("if_acc_ci")),
                     _fmt(overall["if_trans_acc"]), _fmt(overall["if_rot_acc"]),
                     _fmt(float(np.mean(combined)) if combined else None), _fmt(overall["vq"], overall.get("vq_ci")),
                     _speed(entry.get("interactivity") or {}), str(overall.get("n_ok", basic.get("n", "")))])
    return rows


def _speed(interactivity: dict) -> str:
    """Frames/s with the hardware it was measured on; "-" without one of them (stand-in models
    such as the oracle record none, and a frame rate without its machine means nothing)."""
    if not interactivity.get("fps") or not interactivity.get("hardware"):
        return "-"
    return f"{interactivity['fps']:.1f} on {interactivity['hardware']}"


_COLUMNS = ["#", "model", "IF acc [95% CI]", "IF trans", "IF rot", "IF combined", "VQ [95% CI]", "frames/s", "cases"]


def render_markdown(suite: str, entries: list[dict]) -> str:
    lines = [f"# Leaderboard: {suite}", "",
             "IF acc: share of frame transitions whose estimated camera motion matches the commanded action "
             "(81 classes); VQ: visual quality, higher is better. Brackets: bootstrap 95% intervals over cases. "
             "frames/s: generation speed on the hardware named (none for stand-ins that generate nothing, "
             "such as the oracle or replayed videos). Generated by `wcbench submit`; do not edit by hand.", "",
             "| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(entries)]
    scorers = {(e["estimator"]["name"], e["estimator"]["version"], e["quality"]["name"], e["mode"]) for e in entries}
    lines += ["", "Scorers: " + "; ".join(f"estimator {a} v{b}, quality {c}, mode {d}"
                                        for a, b, c, d in sorted(scorers))]
    return "\n".join(lines) + "\n"


def read_entries(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def submit(results_dir: Path, boards: Path, console: Console, sample: int | None = None,
           seed: int | None = None) -> int:
    """Validate (re-scoring ``sample`` cases under ``seed``) and append; refuses duplicates
    (same suite, model and config hash)."""
    results, _ = validate(results_dir, sample, seed)
    jsonl = boards / f"{results['suite']}.jsonl"
    entries = read_entries(jsonl)
    for entry in entries:
        if (entry["config_hash"], entry["suite_hash"], entry["model"]) == \
                (results["config_hash"], results["suite_hash"], results["model"]):
            raise SubmissionError(f"{jsonl}: {results['model']} with config {results['config_hash']} is already "
                                  "on the leaderboard")
    entries.append(_entry(results, results_dir))
    write_text(jsonl, "".join(json.dumps(e, sort_keys=True) + "\n" for e in entries))
    write_text(boards / f"{results['suite']}.md", render_markdown(results["suite"], entries))
    console.print(f"accepted: {results['model']} on {results['suite']} -> {jsonl}")
    return print_leaderboard(results["suite"], boards, console)


def print_leaderboard(suite: str, boards: Path, console: Console) -> int:
    entries = read_entries(boards / f"{suite}.jsonl")
    if not entries:
        raise SubmissionError(f"no leaderboard for suite {suite!r} in {boards}; submit with `wcbench submit DIR`")
    table = Table(title=f"leaderboard: {suite}")
    for column in _COLUMNS:
        table.add_column(column, justify="left" if column == "model" else "right")
    for row in _rows(entries):
        table.add_row(*row)
    Console().print(table)
    return 0


def verify(results_dir: Path, sample: int | None, seed: int | None, console: Console) -> int:
    """Check every stored video's hash and re-score a sample of cases (default: at least 3 or
    10 %, seeded by the videos' hashes) with the recorded scorers; flag every case that differs
    or whose video is missing, and go on to the next. Exit status 1 when any case is flagged."""
    results_path = results_dir / "results.json"
    if not results_path.exists():
        raise SubmissionError(f"{results_path}: not found; nothing to verify")
    results = read_json(results_path)
    if results["estimator"]["name"] == "gt":
        raise SubmissionError("gt-scored runs read the model's poses, not the video: nothing to re-score")
    scorers = audit.recorded_scorers(results)
    records = [r for r in load_records(results_dir) if r.is_ok]
    video_findings = {r.id: audit.check_video(results_dir, r) for r in records}
    seed = audit.default_seed(records) if seed is None else seed
    chosen = audit.choose_sample(records, audit.sample_size(len(records), sample), seed)
    table = Table(title=f"verify {results_dir}: {len(records)} video hashes, {len(chosen)} cases re-scored")
    for column in ("case", "video", "if_acc stored", "if_acc now", "vq stored", "vq now", "verdict"):
        table.add_column(column)
    flagged = []
    chosen_ids = {r.id for r in chosen}
    for record in sorted(records, key=lambda r: r.id):
        video_finding = video_findings[record.id]
        finding, fields = video_finding, None
        if finding is None and record.id in chosen_ids:
            fields, finding = audit.audit_case(results_dir, record, scorers)
        elif finding is None:
            continue  # hash checked, not in the re-scored sample
        if finding:
            flagged.append(finding)
        video = "ok" if video_finding is None else "missing" if "missing" in video_finding.problem else "changed"
        table.add_row(record.id, video if video == "ok" else f"[red]{video}[/red]", _fmt(record.if_acc),
                      _fmt(fields["if_acc"]) if fields else "-", _fmt(record.vq),
                      _fmt(fields["vq"]) if fields else "-", "[red]DIFFERS[/red]" if finding else "[green]same[/green]")
    Console().print(table)
    for finding in flagged:
        console.print(f"[red]flagged[/red] case {finding.case}: {finding.problem}")
    return 1 if flagged else 0
