"""The self-contained report.html: inline CSS, figures embedded as base64 PNG, no external assets.

Built from the results.json body (header + summary) and the full per-case records (the
confusion matrices and camera paths need their "labels" and "paths").
"""

from __future__ import annotations

import base64
import math
from html import escape
from pathlib import Path

import numpy as np

from wcbench.core.video import read_frames_at
from wcbench.report import plots
from wcbench.report.summary import (METRICS, command_runs, confusion_matrix, format_ci, format_value, group_key,
                                    per_clip_curves, top_confusions, vq_components, vq_digits)
from wcbench.results.record import CaseRecord
from wcbench.results.strip import load_strip, sample_indices, strip_path, thumbnail
from wcbench.results.videos import video_path
from wcbench.scoring.quality import COMPONENT_NOTES

CSS = """
body { font-family: -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1d2330;
       margin: 0; background: #f4f6f9; }
main { max-width: 1320px; margin: 0 auto; padding: 24px 32px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 19px; margin: 34px 0 10px; border-bottom: 2px solid #dde3ea;
     padding-bottom: 4px; } h3 { font-size: 15px; margin: 0 0 6px; }
.sub { color: #5b6575; margin: 0 0 16px; }
.card { background: white; border: 1px solid #dde3ea; border-radius: 8px; padding: 14px 18px; margin: 10px 0; }
.meta { margin: 0; display: grid; grid-template-columns: max-content 1fr; gap: 3px 18px; font-size: 14px; }
.meta dt { color: #5b6575; } .meta dd { margin: 0; font-family: ui-monospace, Menlo, monospace; font-size: 13px; }
.headline { display: flex; gap: 16px; flex-wrap: wrap; }
.big { flex: 1; min-width: 220px; } .big .value { font-size: 34px; font-weight: 600; }
.big .ci { color: #5b6575; font-size: 14px; } .big .label { font-size: 14px; color: #5b6575; }
.explain { font-size: 14px; line-height: 1.5; background: #eef4fb; border-color: #c9dcf0; }
.explain p { margin: 4px 0; }
table { border-collapse: collapse; font-size: 14px; background: white; }
th, td { padding: 5px 10px; border-bottom: 1px solid #e6eaef; text-align: left; }
th { background: #eef1f5; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.overall td { font-weight: 700; border-top: 2px solid #9aa5b4; }
.ci { color: #6a7383; font-size: 12px; }
.bar { display: inline-block; height: 9px; background: #1f6fb4; border-radius: 2px; margin-right: 6px;
       vertical-align: middle; }
.bar-bg { display: inline-block; width: 80px; background: #e3e8ee; border-radius: 2px; line-height: 0; }
.failed { color: #b3261e; } .muted { color: #6a7383; font-size: 13px; }
.row { display: flex; gap: 16px; align-items: flex-start; }
.row > .card { flex: 1 1 0; min-width: 0; margin: 0; }
.row > .fit { flex: 0 0 auto; }
table.runs { font-size: 13px; } table.runs td, table.runs th { padding: 3px 8px; }
td.hit { color: #2e9d5b; } td.miss { color: #d64541; font-weight: 600; }
img { max-width: 100%; }
code { font-size: 13px; background: #eef1f5; padding: 1px 4px; border-radius: 3px; }
"""


def render_report(results_dir: Path, results: dict, records: list[CaseRecord]) -> str:
    """The whole report page as one HTML string."""
    sections = [
        _header(results, records),
        _summary_section(results["summary"], results, records),
        _vq_components_section(records),
        _failed_section(records),
        _curves_section(records),
        _confusion_section(records),
        _examples_section(results_dir, records),
        _cases_section(records),
        f'<p class="muted">Rebuilt from the per-case records in <code>{escape(str(results_dir))}/cases</code>; '
        "re-create this page without re-scoring with <code>wcbench report DIR</code>.</p>",
    ]
    title = f"wcbench report: {_model_name(results)}"
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{CSS}</style></head><body><main>\n" + "\n".join(s for s in sections if s) +
            "\n</main></body></html>\n")


# ---------------------------------------------------------------- pieces


def _model_name(results: dict) -> str:
    model = results.get("model")
    if isinstance(model, dict):
        model = model.get("name") or model.get("spec")
    return str(model) if model else "videos scored from a manifest"


def _named(value) -> str:
    """An estimator/quality header entry ({"name", "version", ...}) as one line."""
    if not isinstance(value, dict):
        return "–" if value is None else str(value)
    text = str(value.get("name", "?"))
    if value.get("version") is not None:
        text += f" v{value['version']}"
    extra = {k: v for k, v in value.items() if k not in ("name", "version")}
    if extra:
        text += "  " + ", ".join(f"{k}={v}" for k, v in extra.items())
    return text


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def _header(results: dict, records: list[CaseRecord]) -> str:
    n_ok = sum(1 for r in records if r.is_ok)
    n_failed = len(records) - n_ok
    suite = results.get("suite") or "–"
    if results.get("suite_hash"):
        suite += f"  (hash {str(results['suite_hash'])[:12]})"
    model = _model_name(results)
    if results.get("model_name") and results["model_name"] != model:
        model += f"  (name: {results['model_name']})"
    fields = [("model", model), ("suite", suite), ("scoring mode", results.get("mode") or "–"),
              ("camera-motion estimator", _named(results.get("estimator"))),
              ("quality scorer", _named(results.get("quality"))),
              ("wcbench version", results.get("version") or "–"),
              ("config hash", results.get("config_hash") or "–"),
              ("cases", f"{len(records)} ({n_ok} scored, {n_failed} failed)")]
    meta = "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in fields)
    return (f"<h1>wcbench report: {escape(_model_name(results))}</h1>"
            f'<p class="sub">Does the camera follow the commanded actions, and does the video look good, '
            f"over short, mid and long horizons?</p>"
            f'<div class="card"><dl class="meta">{meta}</dl></div>')


def _explain(results: dict) -> str:
    named = results.get("quality")
    quality = f"<code>{escape(_named(named))}</code>" if named else "the quality scorer"
    return (
        '<div class="card explain">'
        "<p><b>IF (interaction following)</b>: the camera motion is estimated from the generated video, "
        "turned into a discrete action per frame transition (translation: none/forward/backward/right/left "
        "and pairs; rotation: none/yaw/pitch and pairs) and compared with the commanded action. "
        "<b>IF acc</b> is the share of transitions where both translation and rotation match "
        "(81 classes; always standing still scores only on 'none' commands), "
        "<b>trans</b> and <b>rot</b> score each part alone. 1.0 = follows every command.</p>"
        f"<p><b>VQ (visual quality)</b>: the score of {quality}, higher is better; "
        "compare VQ only between reports made with the same quality scorer.</p>"
        "<p>A case is the mean of its clips; a group is the mean of its cases. "
        "<span class='ci'>lo–hi</span> is a 95% bootstrap interval over cases: with few cases it is wide "
        "(one case: no interval at all), and overlapping intervals mean a difference may be noise.</p></div>")


def _summary_section(summary: dict, results: dict, records: list[CaseRecord]) -> str:
    overall = summary["overall"]
    digits = {"if_acc": 3, "vq": vq_digits(block.get("vq") for block in summary.values())}
    headline = '<div class="headline">' + "".join(
        f'<div class="card big"><div class="label">{label}</div>'
        f'<div class="value">{format_value(overall.get(metric), digits[metric])}</div>'
        f'<div class="ci">95% CI {format_ci(overall, metric, digits[metric])} · {overall["n"]} cases</div></div>'
        for metric, label in (("if_acc", "IF accuracy, all cases"), ("vq", "VQ, all cases"))) + "</div>"
    failed = {}
    for record in records:
        if not record.is_ok:
            key = group_key(record)
            failed[key] = failed.get(key, 0) + 1
    failed["overall"] = summary["overall"].get("n_failed", 0)
    head = ("<tr><th>track / horizon</th><th>IF acc</th><th>95% CI</th><th>IF trans</th><th>IF rot</th>"
            "<th>VQ</th><th>95% CI</th><th>n</th></tr>")
    rows = []
    for key, block in summary.items():
        n_text = str(block["n"]) + (f' <span class="failed">+{failed[key]} failed</span>'
                                    if failed.get(key) else "")
        rows.append(f'<tr class="{"overall" if key == "overall" else ""}" data-group="{escape(key)}">'
                    f"<td>{escape(key)}</td><td class='num'>{_bar(block.get('if_acc'))}"
                    f"{format_value(block.get('if_acc'))}</td>"
                    f"<td class='num ci'>{format_ci(block, 'if_acc')}</td>"
                    f"<td class='num'>{format_value(block.get('if_trans_acc'))}</td>"
                    f"<td class='num'>{format_value(block.get('if_rot_acc'))}</td>"
                    f"<td class='num'>{format_value(block.get('vq'), digits['vq'])}</td>"
                    f"<td class='num ci'>{format_ci(block, 'vq', digits['vq'])}</td><td class='num'>{n_text}</td></tr>")
    table = f'<table id="summary-table">{head}{"".join(rows)}</table>'
    return f"<h2>Summary</h2>{headline}{_explain(results)}{table}"


def _vq_components_section(records: list[CaseRecord]) -> str:
    """Each stored VQ component per track x horizon, with what it measures: what lowered VQ."""
    table = vq_components(records)
    if table.empty:
        return ""
    head = "<tr><th>component</th><th>what it measures</th>" + "".join(
        f"<th>{escape(str(key))}</th>" for key in table.columns) + "</tr>"
    rows = "".join(
        f"<tr data-component='{escape(name)}'><td><code>{escape(name)}</code></td>"
        f"<td class='muted'>{escape(COMPONENT_NOTES.get(name, ''))}</td>"
        + "".join(f"<td class='num'>{format_value(value)}</td>" for value in table.loc[name]) + "</tr>"
        for name in table.index)
    return ("<h2>What makes up VQ</h2><p class='muted'>The quality scorer's components, mean over the cases of "
            "each group. The q-terms are 1 for a flawless video; a low one is what lowered VQ.</p>"
            f"<table id='vq-components'>{head}{rows}</table>")


def _bar(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return ""
    width = max(0.0, min(1.0, value)) * 80
    return f'<span class="bar-bg"><span class="bar" style="width:{width:.0f}px"></span></span>'


def _failed_section(records: list[CaseRecord]) -> str:
    failed = [r for r in records if not r.is_ok]
    if not failed:
        return ""
    rows = "".join(f"<tr><td>{escape(r.id)}</td>"
                   f"<td class='failed'>{escape(str(r.error or 'no reason recorded'))}</td></tr>"
                   for r in failed)
    return (f"<h2 class='failed'>Failed cases ({len(failed)})</h2><p class='muted'>Counted, listed here, "
            "and left out of every mean.</p>"
            f"<table id='failed-table'><tr><th>case</th><th>error</th></tr>{rows}</table>")


def _curves_section(records: list[CaseRecord]) -> str:
    curves = per_clip_curves(records)
    if curves.empty:
        return "<h2>Over the horizon</h2><p class='muted'>No per-clip scores recorded.</p>"
    return ("<h2>Over the horizon</h2><p class='muted'>Mean score of each clip (clip 0 = the first frames). "
            "A falling line is drift: the model follows commands or holds quality less well the longer it "
            f"generates.</p><div class='card'>{_img(plots.plot_clip_curves(curves), 'per-clip curves')}</div>")


def _confusion_section(records: list[CaseRecord]) -> str:
    translation = confusion_matrix(records, "translation")
    if translation.to_numpy().sum() == 0:
        return "<h2>What the model did instead</h2><p class='muted'>No per-transition labels recorded.</p>"
    rotation = confusion_matrix(records, "rotation")
    top = top_confusions(confusion_matrix(records, "full"), k=12)
    rows = "".join(f"<tr><td>{escape(r.commanded)}</td><td>{escape(r.detected)}</td><td class='num'>{r.count}</td>"
                   f"<td class='num'>{r.share_of_commanded:.0%}</td></tr>" for r in top.itertuples())
    top_table = (f"<table id='top-confusions'><tr><th>commanded (translation | rotation)</th><th>detected</th>"
                 f"<th>transitions</th><th>share of command</th></tr>{rows}</table>" if rows
                 else "<p class='muted'>No confusions: every transition was detected as commanded.</p>")
    return ("<h2>What the model did instead</h2><p class='muted'>Rows: the commanded action, columns: the "
            "action detected in the video, over all frame transitions. A strong diagonal is good; colour is the "
            "share of each commanded row, numbers are counts.</p>"
            f"<div class='row'><div class='card'>"
            f"{_img(plots.plot_confusion(translation, 'translation'), 'translation')}"
            f"</div><div class='card'>{_img(plots.plot_confusion(rotation, 'rotation'), 'rotation')}</div></div>"
            f"<h3>Most frequent confusions of the full 81-class label</h3>{top_table}")


def _examples_section(results_dir: Path, records: list[CaseRecord], per_side: int = 1) -> str:
    scored = [r for r in records if r.is_ok and _finite(r.if_acc)]
    if not scored:
        return ""
    # Ties go to the first id, so the choice does not depend on the order of the records.
    best = sorted(scored, key=lambda r: (-r.if_acc, r.id))[:per_side]
    shown = {r.id for r in best}
    worst = [r for r in sorted(scored, key=lambda r: (r.if_acc, r.id))[:per_side] if r.id not in shown]
    picks = [("best", r) for r in best] + [("worst", r) for r in worst]
    cards = "".join(_case_card(results_dir, tag, record) for tag, record in picks)
    return ("<h2>Best and worst cases (by IF accuracy)</h2><p class='muted'>Sampled frames with the action "
            "commanded into each frame and the one detected (green: match, red: miss); below, every transition's "
            "translation and rotation hit. Right: the camera path seen from above, commanded vs estimated from the "
            "video, each scaled to unit size (estimators recover translation only up to scale).</p>" + cards)


def _case_card(results_dir: Path, tag: str, record: CaseRecord) -> str:
    digits = vq_digits([record.vq])
    metrics = " · ".join(f"{m} {format_value(getattr(record, m), digits if m == 'vq' else 3)}" for m in METRICS)
    title = (f"<h3>{tag}: {escape(record.id)}</h3>"
             f"<p class='muted'>script <code>{escape(str(record.script))}</code> · {metrics}</p>")
    try:
        indices = sample_indices(int(record.num_frames))
        frames = _strip_frames(results_dir, record, indices)
        strip = _img(plots.plot_case_strip(frames, indices, record.labels), f"frames of {record.id}")
    except (OSError, ValueError) as err:
        strip = f"<p class='muted'>Frames not shown: {escape(str(err))}</p>"
    paths = record.paths or {}
    path_img = _img(plots.plot_paths(paths.get("commanded"), paths.get("estimated")), f"paths of {record.id}")
    return (f"<div class='card'>{title}{strip}<div class='row'><div class='fit'>{path_img}</div>"
            f"<div>{_runs_table(record)}</div></div></div>")


def _strip_frames(results_dir: Path, record: CaseRecord, indices: list[int]):
    """The strip's frames: those stored while the video was scored (:mod:`wcbench.results.strip`), else
    decoded from the video (the frames shown only, never the whole video held)."""
    stored = load_strip(strip_path(results_dir, record.id), record)
    if stored is not None:
        return stored
    if not record.video:
        raise FileNotFoundError("the record names no video")
    return np.stack([thumbnail(frame) for frame in read_frames_at(video_path(results_dir, record), indices)])


def _runs_table(record: CaseRecord) -> str:
    """Per commanded run: what was detected most and how often it matched."""
    labels = record.labels
    if not labels or not labels.get("commanded"):
        return "<p class='muted'>No per-transition labels recorded.</p>"
    rows = []
    for run in command_runs(labels).itertuples():
        mark = "hit" if run.if_acc >= 0.5 else "miss"
        rows.append(f"<tr><td class='num'>{run.first}–{run.last}</td>"
                    f"<td><code>{plots.short_label(run.commanded)}</code></td>"
                    f"<td><code>{plots.short_label(run.detected_most)}</code></td>"
                    f"<td class='num {mark}'>{run.if_acc:.2f}</td><td class='num'>{run.if_trans_acc:.2f}</td>"
                    f"<td class='num'>{run.if_rot_acc:.2f}</td></tr>")
    return ("<table class='runs'><tr><th>transitions</th><th>commanded</th><th>detected most</th><th>IF</th>"
            f"<th>trans</th><th>rot</th></tr>{''.join(rows)}</table>"
            "<p class='muted'>Script tokens: w/s forward/back, d/a right/left, left/right yaw, up/down pitch.</p>")


def _finite(value) -> bool:
    return value is not None and math.isfinite(float(value))


TRACKING_NOTES = (
    ("overlay", "share of the frame left out of camera tracking as a burnt-in overlay (found, or the user's mask)"),
    ("movers", "share of the tracks left out as content moving on its own (people, vehicles)"),
    ("undecided", "share of the transitions whose camera motion could not be told from the movers' (labelled none)"),
)


def _tracking_cells(record: CaseRecord) -> str:
    """What camera tracking left out of a case, as percentages ('–' before it was scored)."""
    if not record.is_ok:
        return "<td class='num'>–</td>" * len(TRACKING_NOTES)
    values = (record.masked_share, record.mover_share, record.undecided_share)
    return "".join(f"<td class='num{' failed' if name == 'undecided' and value else ''}'>{(value or 0.0):.0%}</td>"
                   for (name, _), value in zip(TRACKING_NOTES, values))


def _cases_section(records: list[CaseRecord]) -> str:
    head = "<tr><th>case</th><th>track</th><th>horizon</th><th>status</th>" + "".join(
        f"<th>{m}</th>" for m in METRICS) + "".join(
        f"<th title='{escape(note)}'>{name}</th>" for name, note in TRACKING_NOTES) + "<th>script</th></tr>"
    rows = []
    digits = {m: 3 for m in METRICS} | {"vq": vq_digits(r.vq for r in records)}
    for r in records:
        status = "ok" if r.is_ok else f"<span class='failed'>{escape(str(r.status))}</span>"
        cells = "".join(f"<td class='num'>{format_value(getattr(r, m), digits[m])}</td>" for m in METRICS)
        rows.append(f"<tr data-case='{escape(r.id)}'><td>{escape(r.id)}</td>"
                    f"<td>{escape(str(r.track or '–'))}</td>"
                    f"<td>{escape(str(r.horizon or '–'))}</td><td>{status}</td>{cells}{_tracking_cells(r)}"
                    f"<td><code>{escape(str(r.script or ''))}</code></td></tr>")
    is_open = " open" if len(records) <= 40 else ""
    return (f"<h2>All cases</h2><details{is_open}><summary>{len(records)} cases</summary>"
            f"<table id='cases-table'>{head}{''.join(rows)}</table></details>")

