"""Leaderboards: ``submit`` validates a results folder and appends it to
``leaderboards/<suite>.jsonl`` (re-rendering ``<suite>.md``); ``verify`` re-scores stored
videos; ``leaderboard`` prints the table.

Submit trusts nothing it can recompute: every case's accuracy is recomputed from its stored
labels, every aggregate from the cases, and the suite hash and scorer versions must be the
ones this wcbench has.
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

from wcbench.actions import NUM_ROTATION
from wcbench.storage import read_json, write_text

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


def _recompute_case(record: dict, where: str) -> None:
    """Recompute a case's per-clip and overall IF accuracy from its stored labels."""
    labels = record.get("labels") or {}
    commanded, detected = np.asarray(labels.get("commanded", [])), np.asarray(labels.get("detected", []))
    if len(commanded) != record.get("num_frames", 0) - 1 or len(detected) != len(commanded):
        raise SubmissionError(f"{where}: stored labels do not cover the video's {record.get('num_frames')} frames")
    if record.get("mode", "default") != "default":
        return  # compat hits depend on three thresholds; only default mode is recomputed from labels
    hits = {"if_acc": detected == commanded,
            "if_trans_acc": detected // NUM_ROTATION == commanded // NUM_ROTATION,
            "if_rot_acc": detected % NUM_ROTATION == commanded % NUM_ROTATION}
    for key, hit in hits.items():
        per_clip = [float(hit[c["frames"][0] - 1:c["frames"][1]].mean()) for c in record["per_clip"]]
        if not _close(per_clip, [c[key] for c in record["per_clip"]]):
            raise SubmissionError(f"{where}: per-clip {key} does not match its stored labels")
        if not _close(float(np.mean(per_clip)), record[key]):
            raise SubmissionError(f"{where}: {key}={record[key]} does not match its clips ({np.mean(per_clip)})")
    vq_clips = [c["vq"] for c in record["per_clip"] if c.get("vq") is not None]
    if vq_clips and not _close(float(np.mean(vq_clips)), record["vq"]):
        raise SubmissionError(f"{where}: vq={record['vq']} does not match its clips ({np.mean(vq_clips)})")


def validate(results_dir: Path) -> tuple[dict, list[dict]]:
    """Check a results folder end to end; returns (results, full case records)."""
    from wcbench.pose import build_estimator
    from wcbench.report import load_records, summarize
    from wcbench.scoring.quality import build_quality_scorer
    from wcbench.suite import load_suite

    results_path = results_dir / "results.json"
    if not results_path.exists():
        raise SubmissionError(f"{results_path}: not found; run `wcbench run` first")
    results = read_json(results_path)
    missing = [k for k in _HEADER_KEYS if k not in results]
    if missing:
        raise SubmissionError(f"{results_path}: missing {missing} (only `wcbench run` results can be submitted)")
    try:
        suite = load_suite(results["suite"])
    except ValueError:  # not a built-in suite: the file the run used
        suite = load_suite(results.get("suite_source") or results["suite"])
    if results["suite_hash"] != suite.content_hash():
        raise SubmissionError(f"{results_path}: suite hash {results['suite_hash']} is not the current "
                              f"{suite.name} ({suite.content_hash()}); rerun on the current suite")
    estimator = build_estimator(results["estimator"]["name"])
    if estimator.name == "gt":
        raise SubmissionError(f"{results_path}: scored with the gt estimator, which reads the model's own "
                              "poses; leaderboards need an estimator that reads the video")
    if results["estimator"]["version"] != estimator.version:
        raise SubmissionError(f"{results_path}: estimator {estimator.name} version "
                              f"{results['estimator']['version']} != current {estimator.version}; re-score")
    quality = build_quality_scorer(results["quality"]["name"])
    if results["quality"]["version"] != quality.version:
        raise SubmissionError(f"{results_path}: quality scorer {quality.name} version "
                              f"{results['quality']['version']} != current {quality.version}; re-score")
    records = load_records(results_dir)
    by_id = {r["id"]: r for r in records}
    absent = sorted({c.id for c in suite.cases} - set(by_id))
    failed = sorted(r["id"] for r in records if r.get("status") != "ok")
    if absent or failed:
        raise SubmissionError(f"{results_dir}: incomplete run: {len(absent)} case(s) missing {absent[:3]}, "
                              f"{len(failed)} failed {failed[:3]}; rerun `wcbench run` into it to finish")
    listed = {c["id"]: c for c in results["cases"]}
    for record in records:
        where = f"{results_dir}: case {record['id']}"
        _recompute_case({**record, "mode": results["mode"]}, where)
        row = listed.get(record["id"])
        if row is None or any(not _close(row.get(k), record.get(k))
                              for k in ("if_acc", "if_trans_acc", "if_rot_acc", "vq")):
            raise SubmissionError(f"{where}: results.json row differs from the case record")
    summary = summarize(records)
    for key, block in summary.items():
        stored = results["summary"].get(key, {})
        for field, value in block.items():
            if not _close(value, stored.get(field)):
                raise SubmissionError(f"{results_path}: summary {key}.{field}={stored.get(field)} but the cases "
                                      f"give {value}; numbers were edited or the run is mixed")
    return results, records


def _entry(results: dict, results_dir: Path) -> dict:
    return {
        "model": results["model"], "model_name": results.get("model_name", results["model"]),
        "model_options": results.get("model_options", {}), "suite": results["suite"],
        "suite_hash": results["suite_hash"], "config_hash": results["config_hash"],
        "estimator": results["estimator"], "quality": results["quality"], "mode": results["mode"],
        "wcbench_version": results["version"], "summary": results["summary"],
        "interactivity": results.get("interactivity", {}), "submitted": dt.date.today().isoformat(),
        "source": results_dir.name,
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
        speed = entry.get("interactivity", {})
        rows.append([str(rank), entry["model_name"], _fmt(overall["if_acc"], overall.get("if_acc_ci")),
                     _fmt(overall["if_trans_acc"]), _fmt(overall["if_rot_acc"]),
                     _fmt(float(np.mean(combined)) if combined else None), _fmt(overall["vq"], overall.get("vq_ci")),
                     f"{speed['fps']:.1f}" if speed.get("fps") else "-", str(overall.get("n_ok", basic.get("n", "")))])
    return rows


_COLUMNS = ["#", "model", "IF acc [95% CI]", "IF trans", "IF rot", "IF combined", "VQ [95% CI]", "frames/s", "cases"]


def render_markdown(suite: str, entries: list[dict]) -> str:
    lines = [f"# Leaderboard: {suite}", "",
             "IF acc: share of frame transitions whose estimated camera motion matches the commanded action "
             "(81 classes); VQ: visual quality, higher is better. Brackets: bootstrap 95% intervals over cases. "
             "Generated by `wcbench submit`; do not edit by hand.", "",
             "| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(entries)]
    scorers = {(e["estimator"]["name"], e["estimator"]["version"], e["quality"]["name"], e["mode"]) for e in entries}
    lines += ["", "Scorers: " + "; ".join(f"estimator {a} v{b}, quality {c}, mode {d}" for a, b, c, d in sorted(scorers))]
    return "\n".join(lines) + "\n"


def read_entries(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def submit(results_dir: Path, boards: Path, console: Console) -> int:
    """Validate and append; refuses duplicates (same suite, model and config hash)."""
    results, _ = validate(results_dir)
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


def verify(results_dir: Path, sample: int, seed: int, console: Console) -> int:
    """Re-score ``sample`` stored videos with the recorded scorers; flag differing cases."""
    from wcbench.actions import Thresholds, parse_script
    from wcbench.pose import build_estimator
    from wcbench.report import load_records
    from wcbench.scoring.case import Scorers, score_frames, sha256_file
    from wcbench.scoring.quality import build_quality_scorer
    from wcbench.video import read_video

    results = read_json(results_dir / "results.json")
    estimator = build_estimator(results["estimator"]["name"])
    if estimator.name == "gt":
        raise SubmissionError("gt-scored runs read the model's poses, not the video: nothing to re-score")
    estimator.thresholds = Thresholds(**results["estimator"]["thresholds"])
    scorers = Scorers(estimator, build_quality_scorer(results["quality"]["name"]), results["mode"])
    records = [r for r in load_records(results_dir) if r.get("status") == "ok"]
    rng = np.random.default_rng(seed)
    chosen = [records[i] for i in sorted(rng.choice(len(records), min(sample, len(records)), replace=False))]
    table = Table(title=f"verify {results_dir} ({len(chosen)} of {len(records)} cases)")
    for column in ("case", "video hash", "if_acc stored", "if_acc now", "vq stored", "vq now", "verdict"):
        table.add_column(column)
    flagged = 0
    for record in chosen:
        video = Path(record["video"])
        video = video if video.is_absolute() else results_dir / video
        hash_ok = sha256_file(video) == record.get("video_sha256")
        fields = score_frames(read_video(video), parse_script(record["script"]), scorers,
                                    prompt=record.get("prompt", ""), fov_deg=record.get("fov_deg"),
                                    latents_per_clip=record.get("latents_per_clip", 4))
        same = hash_ok and all(_close(fields[k], record[k]) for k in ("if_acc", "if_trans_acc", "if_rot_acc")) \
            and (record["vq"] is None or abs(fields["vq"] - record["vq"]) <= 1e-6)
        flagged += not same
        table.add_row(record["id"], "ok" if hash_ok else "[red]changed[/red]", _fmt(record["if_acc"]),
                      _fmt(fields["if_acc"]), _fmt(record["vq"]), _fmt(fields["vq"]),
                      "[green]same[/green]" if same else "[red]DIFFERS[/red]")
    Console().print(table)
    return 1 if flagged else 0
