"""Records -> numbers: per track x horizon summaries with bootstrap intervals, the tables of
summary.csv and cases.csv, per-clip curves, confusion matrices and the terminal table
(:mod:`wcbench.report.results` writes them to files, :mod:`wcbench.report.html` the page).

Everything here reads the per-case records (:class:`wcbench.results.record.CaseRecord`) and
never re-scores a video: a report can always be rebuilt from the records alone.

Means are taken over cases (a case is the mean of its clips, a clip the mean of its frame
transitions), so every case weighs the same whatever its length. Failed cases are counted
and listed, never averaged in.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
import pandas as pd
from rich import box
from rich.console import Console
from rich.table import Table

from wcbench.core.actions import NUM_LABELS, NUM_ROTATION, ROTATION_LABELS, TRANSLATION_LABELS, label_hits, label_name
from wcbench.results.record import CaseRecord
from wcbench.scoring.quality import COMPONENT_NOTES

TRACK_ORDER = ("basic", "combined")
HORIZON_ORDER = ("short", "mid", "long")
METRICS = ("if_acc", "if_trans_acc", "if_rot_acc", "vq")
# Stand-ins for records without a track or horizon (videos scored from a manifest).
NO_TRACK = "external"
NO_HORIZON = "any"


# ---------------------------------------------------------------- statistics


def bootstrap_ci(values: Iterable[float | None], n_boot: int = 2000, seed: int = 0,
                 alpha: float = 0.05) -> tuple[float, float]:
    """Percentile bootstrap interval (1 - alpha) of the mean; NaN/None values are dropped.

    Deterministic under ``seed`` and independent of the order of ``values`` (they are sorted
    first, so a report rebuilt from records read in another order gives the same interval).
    No values -> (nan, nan); one value v -> (v, v).
    """
    data = np.sort(_finite(values))
    if data.size == 0:
        return (math.nan, math.nan)
    if data.size == 1:
        return (float(data[0]), float(data[0]))
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    # Chunked so a large suite does not build an n_boot x n index array at once.
    chunk = max(1, 2_000_000 // data.size)
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        means[start:stop] = data[rng.integers(0, data.size, size=(stop - start, data.size))].mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi))


def _finite(values: Iterable[float | None]) -> np.ndarray:
    data = np.array([math.nan if v is None else float(v) for v in values], dtype=float)
    return data[np.isfinite(data)]


def _mean(values: Iterable[float | None]) -> float | None:
    data = _finite(values)
    return float(data.mean()) if data.size else None


def _or_none(value: float) -> float | None:
    """NaN -> None, so results.json stays strict JSON."""
    return None if value is None or math.isnan(value) else float(value)


# ---------------------------------------------------------------- summary


def group_key(record: CaseRecord) -> str | None:
    """"<track>/<horizon>", or None for records that have neither (they count only in overall)."""
    track, horizon = record.track, record.horizon
    if track is None or horizon is None:
        return None
    return f"{track}/{horizon}"


def _order(values: Iterable[str], known: tuple[str, ...]) -> list[str]:
    values = set(values)
    return [v for v in known if v in values] + sorted(values - set(known))


def ordered_groups(records: list[CaseRecord]) -> list[str]:
    """Track x horizon keys present in ``records``: basic before combined, short < mid < long."""
    pairs = {(r.track, r.horizon) for r in records if group_key(r) is not None}
    tracks = _order((t for t, _ in pairs), TRACK_ORDER)
    horizons = _order((h for _, h in pairs), HORIZON_ORDER)
    return [f"{t}/{h}" for t in tracks for h in horizons if (t, h) in pairs]


def summarize_group(records: list[CaseRecord]) -> dict:
    """Means over the ok cases of ``records`` with 95% bootstrap intervals for IF and VQ."""
    ok = [r for r in records if r.is_ok]
    block: dict[str, Any] = {}
    for metric in METRICS:
        values = [getattr(r, metric) for r in ok]
        block[metric] = _mean(values)
        if metric in ("if_acc", "vq"):
            block[f"{metric}_ci"] = [_or_none(v) for v in bootstrap_ci(values)]
    block["n"] = len(ok)
    return block


def summarize(records: list[CaseRecord]) -> dict:
    """The results.json "summary" block: one entry per track x horizon present, then "overall".

    Groups include a track x horizon whose cases all failed (n = 0, means None). Missing means
    and intervals are None (JSON null), never NaN.
    """
    summary = {key: summarize_group([r for r in records if group_key(r) == key])
               for key in ordered_groups(records)}
    overall = summarize_group(records)
    overall["n_ok"] = overall["n"]
    overall["n_failed"] = sum(1 for r in records if not r.is_ok)
    summary["overall"] = overall
    return summary


def summary_table(summary: dict) -> pd.DataFrame:
    """The summary as a flat table: one row per group, CI bounds as *_lo / *_hi columns."""
    rows = []
    for key, block in summary.items():
        track, _, horizon = key.partition("/")
        row = {"group": key, "track": track if horizon else "all", "horizon": horizon or "all",
               "n": block["n"]}
        for metric in METRICS:
            row[metric] = block.get(metric)
            if f"{metric}_ci" in block:
                row[f"{metric}_lo"], row[f"{metric}_hi"] = block[f"{metric}_ci"]
        row["n_failed"] = block.get("n_failed")
        rows.append(row)
    columns = ["group", "track", "horizon", "n", "if_acc", "if_acc_lo", "if_acc_hi", "if_trans_acc",
               "if_rot_acc", "vq", "vq_lo", "vq_hi", "n_failed"]
    table = pd.DataFrame(rows, columns=columns)
    float_columns = [c for c in columns if c not in ("group", "track", "horizon", "n", "n_failed")]
    table[float_columns] = table[float_columns].astype(float)  # None -> NaN
    table["n_failed"] = table["n_failed"].astype("Int64")
    return table


# ---------------------------------------------------------------- VQ components


def vq_components(records: list[CaseRecord]) -> pd.DataFrame:
    """Mean of each stored VQ component (a record's "vq_raw") over the ok cases of every track x
    horizon and overall: one row per component (the scorer's documented ones first, in
    ``COMPONENT_NOTES`` order), one column per group. Empty when no record stores components."""
    ok = [r for r in records if r.is_ok and isinstance(r.vq_raw, dict)]
    names = {name for r in ok for name in r.vq_raw}
    order = [n for n in COMPONENT_NOTES if n in names] + sorted(names - set(COMPONENT_NOTES))
    groups = {key: [r for r in ok if group_key(r) == key] for key in ordered_groups(ok)}
    groups["overall"] = ok
    table = pd.DataFrame({key: [_mean(r.vq_raw.get(name) for r in members) for name in order]
                          for key, members in groups.items()}, index=order, dtype=float)
    return table if order else pd.DataFrame()


# ---------------------------------------------------------------- per clip and confusion


CASE_COLUMNS = ["id", "track", "horizon", "status", *METRICS, "num_frames", "generate_s", "score_s", "fps",
                "hardware", "masked_share", "mover_share", "undecided_share", "video", "video_sha256", "warnings",
                "error", "script"]


def case_table(records: list[CaseRecord]) -> pd.DataFrame:
    """One row per case (cases.csv): id, track, horizon, status, the metrics, frame count,
    timings, the hardware they were measured on, what camera tracking left out (overlay, movers,
    undecided transitions), the video and its hash, warnings, error, script."""
    rows = []
    for r in sorted(records, key=lambda r: r.id):
        timing = r.timing or {}
        rows.append({"id": r.id, "track": r.track, "horizon": r.horizon, "status": r.status,
                     **{m: getattr(r, m) for m in METRICS}, "num_frames": r.num_frames,
                     **{k: timing.get(k) for k in ("generate_s", "score_s", "fps", "hardware")},
                     **{k: getattr(r, k) for k in ("masked_share", "mover_share", "undecided_share")},
                     "video": r.video, "video_sha256": r.video_sha256,
                     "warnings": " | ".join(r.warnings) or None, "error": r.error, "script": r.script})
    table = pd.DataFrame(rows, columns=CASE_COLUMNS)
    float_columns = [*METRICS, "generate_s", "score_s", "fps", "masked_share", "mover_share", "undecided_share"]
    table[float_columns] = table[float_columns].astype(float)
    table["num_frames"] = table["num_frames"].astype("Int64")
    return table


def per_clip_curves(records: list[CaseRecord]) -> pd.DataFrame:
    """Mean per-clip metrics over ok cases by (track, horizon, clip): where a model drifts.

    Columns track, horizon, clip, if_acc, if_trans_acc, if_rot_acc, vq, n (cases with that
    clip). Records without a track/horizon are grouped as "external"/"any".
    """
    rows = []
    for record in records:
        if not record.is_ok:
            continue
        for clip in record.per_clip:
            rows.append({"track": record.track or NO_TRACK, "horizon": record.horizon or NO_HORIZON,
                         "clip": int(clip["clip"]), **{m: clip.get(m) for m in METRICS}})
    columns = ["track", "horizon", "clip", *METRICS, "n"]
    if not rows:
        return pd.DataFrame(columns=columns)
    table = pd.DataFrame(rows)
    table[list(METRICS)] = table[list(METRICS)].astype(float)
    grouped = table.groupby(["track", "horizon", "clip"], sort=False)
    curves = grouped[list(METRICS)].mean()
    curves["n"] = grouped.size()
    curves = curves.reset_index()
    track_rank = {t: i for i, t in enumerate(_order(curves["track"], TRACK_ORDER))}
    horizon_rank = {h: i for i, h in enumerate(_order(curves["horizon"], HORIZON_ORDER))}
    curves["_t"], curves["_h"] = curves["track"].map(track_rank), curves["horizon"].map(horizon_rank)
    curves = curves.sort_values(["_t", "_h", "clip"])
    return curves[columns].reset_index(drop=True)


CONFUSION_KINDS = ("full", "translation", "rotation")


def confusion_matrix(records: list[CaseRecord], kind: str = "full") -> pd.DataFrame:
    """Counts of commanded (rows) vs detected (columns) labels over all ok cases' transitions.

    ``kind`` "translation"/"rotation" gives 9x9 over those label names; "full" gives 81x81
    over :func:`wcbench.core.actions.label_name` names. Every label gets a row and a column.
    """
    if kind not in CONFUSION_KINDS:
        raise ValueError(f"confusion kind {kind!r}: choose one of {', '.join(CONFUSION_KINDS)}")
    names = {"full": [label_name(i) for i in range(NUM_LABELS)],
             "translation": list(TRANSLATION_LABELS), "rotation": list(ROTATION_LABELS)}[kind]
    counts = np.zeros((len(names), len(names)), dtype=np.int64)
    for record in records:
        labels = record.labels
        if not record.is_ok or not labels:
            continue
        commanded, detected = np.asarray(labels["commanded"], int), np.asarray(labels["detected"], int)
        if commanded.shape != detected.shape:
            raise ValueError(f"case {record.id}: {commanded.size} commanded labels but "
                             f"{detected.size} detected ones")
        if kind == "translation":
            commanded, detected = commanded // NUM_ROTATION, detected // NUM_ROTATION
        elif kind == "rotation":
            commanded, detected = commanded % NUM_ROTATION, detected % NUM_ROTATION
        np.add.at(counts, (commanded, detected), 1)
    table = pd.DataFrame(counts, index=pd.Index(names, name="commanded"),
                         columns=pd.Index(names, name="detected"))
    return table


def top_confusions(matrix: pd.DataFrame, k: int = 10) -> pd.DataFrame:
    """The ``k`` largest off-diagonal cells of a confusion matrix, with the share of their row."""
    counts = matrix.to_numpy()
    row_totals = counts.sum(axis=1)
    cells = [(counts[i, j], i, j) for i in range(counts.shape[0]) for j in range(counts.shape[1])
             if i != j and counts[i, j] > 0]
    cells.sort(key=lambda c: (-c[0], c[1], c[2]))
    rows = [{"commanded": matrix.index[i], "detected": matrix.columns[j], "count": int(n),
             "share_of_commanded": n / row_totals[i]} for n, i, j in cells[:k]]
    return pd.DataFrame(rows, columns=["commanded", "detected", "count", "share_of_commanded"])


def command_runs(labels: dict) -> pd.DataFrame:
    """One row per run of an unchanged commanded label in a case: what was commanded, what was
    detected most often, and the hit rates over the run.

    Columns: first, last (frame transitions, 1-based: transition f enters frame f), commanded,
    detected_most (full label ints), transitions, if_acc, if_trans_acc, if_rot_acc.
    """
    commanded = np.asarray(labels["commanded"], int)
    detected = np.asarray(labels["detected"], int)
    if commanded.shape != detected.shape:
        raise ValueError(f"{commanded.size} commanded labels but {detected.size} detected ones")
    rows = []
    start = 0
    for end in range(1, commanded.size + 1):
        if end < commanded.size and commanded[end] == commanded[start]:
            continue
        cmd, det = commanded[start:end], detected[start:end]
        values, counts = np.unique(det, return_counts=True)
        full, trans, rot = label_hits(cmd, det)
        rows.append({"first": start + 1, "last": end, "commanded": int(cmd[0]),
                     "detected_most": int(values[np.argmax(counts)]), "transitions": end - start,
                     "if_acc": float(full.mean()), "if_trans_acc": float(trans.mean()),
                     "if_rot_acc": float(rot.mean())})
        start = end
    return pd.DataFrame(rows, columns=["first", "last", "commanded", "detected_most", "transitions",
                                       "if_acc", "if_trans_acc", "if_rot_acc"])


# ---------------------------------------------------------------- terminal


def format_value(value: float | None, digits: int = 3) -> str:
    """A metric for people: fixed decimals, an en dash for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}"


def format_ci(block: dict, metric: str, digits: int = 3) -> str:
    """The 95% interval of ``metric`` as "0.771–0.850" ("–" when missing)."""
    lo, hi = block.get(f"{metric}_ci") or (None, None)
    if lo is None or hi is None:
        return "–"
    return f"{format_value(lo, digits)}–{format_value(hi, digits)}"


def vq_digits(values: Iterable[float | None]) -> int:
    """Decimals for VQ: scorers differ in scale (0..1 or 0..100), keep about 3 significant digits."""
    largest = float(np.max(np.abs(_finite(values)), initial=0.0))
    return 3 if largest < 10 else 2 if largest < 100 else 1


def print_summary(summary: dict, title: str = "wcbench results", console: Any = None) -> None:
    """Print the summary as a rich table: IF accuracy and VQ with 95% intervals, per group."""
    console = console or Console()
    digits = vq_digits(block.get("vq") for block in summary.values())
    # No vertical rules: the table must fit an 80-column terminal.
    table = Table(title=title, title_style="bold", box=box.SIMPLE_HEAD, pad_edge=False,
                  padding=(0, 1), collapse_padding=True)
    for name in ("group", "IF acc", "95% CI", "trans", "rot", "VQ", "95% CI", "n"):
        table.add_column(name, justify="left" if name == "group" else "right",
                         style="dim" if name == "95% CI" else None, no_wrap=True)
    keys = list(summary)
    for index, (key, block) in enumerate(summary.items()):
        table.add_row(key, format_value(block.get("if_acc")), format_ci(block, "if_acc"),
                      format_value(block.get("if_trans_acc")), format_value(block.get("if_rot_acc")),
                      format_value(block.get("vq"), digits), format_ci(block, "vq", digits), str(block["n"]),
                      style="bold" if key == "overall" else None, end_section=index == len(keys) - 2)
    console.print(table)
    failed = summary.get("overall", {}).get("n_failed")
    if failed:
        console.print(f"[red]{failed} failed case(s)[/red] left out of every mean (see report.html).")
    console.print("[dim]IF: share of frame transitions whose detected camera motion matches the command "
                  "(full label; trans / rot alone). VQ: higher is better. CI: 95% bootstrap over cases.[/dim]")
