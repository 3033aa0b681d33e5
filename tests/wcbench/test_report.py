"""Report: bootstrap intervals, summaries, confusion matrices, and files that agree with the records."""

from __future__ import annotations

import base64
import json
import math
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from wcbench.core.actions import NUM_LABELS, Action
from wcbench.core.storage import read_json, write_json
from wcbench.core.video import write_video
from wcbench.report.results import build_results, rebuild, write_report, write_summary_csv
from wcbench.report.summary import (bootstrap_ci, command_runs, confusion_matrix, per_clip_curves, print_summary,
                                    summarize, top_confusions, vq_components)
from wcbench.results.record import CaseRecord, load_records, save_record

HEADER = {"version": "0.1.0", "estimator": {"name": "gt", "version": "1", "thresholds": {"translation": 0.01}},
          "quality": {"name": "sharpness", "version": "1"}, "mode": "default", "suite": "wc-test",
          "suite_hash": "0123456789abcdef", "model": "oracle", "config_hash": "cafe"}

FORWARD = Action(forward=1).label
LEFT_YAW = Action(yaw=-1).label
FORWARD_LEFT_YAW = Action(forward=1, yaw=-1).label
NONE = Action().label


def make_record(case_id: str, track: str | None, horizon: str | None, commanded: list[int], detected: list[int],
                vq_per_clip: list[float], video: str | None = None) -> CaseRecord:
    """A record with 3 clips of 4 transitions each (13 frames); metrics computed here by hand."""
    assert len(commanded) == len(detected) == 12 and len(vq_per_clip) == 3
    per_clip = []
    for clip in range(3):
        cmd, det = commanded[4 * clip:4 * clip + 4], detected[4 * clip:4 * clip + 4]
        per_clip.append({"clip": clip, "frames": [4 * clip + 1, 4 * clip + 4],
                         "if_acc": sum(c == d for c, d in zip(cmd, det)) / 4,
                         "if_trans_acc": sum(c // 9 == d // 9 for c, d in zip(cmd, det)) / 4,
                         "if_rot_acc": sum(c % 9 == d % 9 for c, d in zip(cmd, det)) / 4,
                         "vq": vq_per_clip[clip]})
    path = [[0.0, 0.0, 0.1 * f] for f in range(13)]
    return CaseRecord(id=case_id, track=track, horizon=horizon, status="ok", script="w-3", prompt="a room",
                      num_frames=13, latents_per_clip=2, video=video, video_sha256="0" * 64,
                      **{m: sum(c[m] for c in per_clip) / 3 for m in ("if_acc", "if_trans_acc", "if_rot_acc", "vq")},
                      vq_raw={"sharpness": 1.0}, per_clip=per_clip,
                      labels={"commanded": commanded, "detected": detected},
                      paths={"commanded": path, "estimated": [[x * 7, y, z * 7] for x, y, z in path]},
                      confidence_mean=0.9)


def failed_record(case_id: str, track: str | None, horizon: str | None, error: str) -> CaseRecord:
    return CaseRecord(id=case_id, track=track, horizon=horizon, error=error, script="w-3")


@pytest.fixture
def records() -> list[CaseRecord]:
    perfect = [FORWARD] * 12
    return [
        # basic/short: 12/12 and 6/12 (6 forward transitions seen as standing still).
        make_record("basic-short-000", "basic", "short", perfect, perfect, [0.9, 0.8, 0.7],
                    "videos/basic-short-000.avi"),
        make_record("basic-short-001", "basic", "short", perfect, [FORWARD] * 6 + [NONE] * 6, [0.6, 0.6, 0.3]),
        # basic/long is listed before as "long" but must sort after short.
        make_record("basic-long-002", "basic", "long", [LEFT_YAW] * 12, [LEFT_YAW] * 9 + [NONE] * 3, [0.5, 0.5, 0.5]),
        # combined: translation right, rotation missed on every transition.
        make_record("combined-short-003", "combined", "short", [FORWARD_LEFT_YAW] * 12, [FORWARD] * 12,
                    [0.2, 0.4, 0.6], "videos/missing.avi"),
        failed_record("combined-mid-004", "combined", "mid", "RuntimeError: out of memory in clip 2"),
        # A manifest video: no track or horizon; counts only in overall.
        make_record("external-005", None, None, [NONE] * 12, [NONE] * 12, [1.0, 1.0, 1.0]),
    ]


def write_results_dir(tmp_path: Path, records: list[CaseRecord]) -> Path:
    rng = np.random.default_rng(0)
    write_video(tmp_path / "videos" / "basic-short-000.avi", rng.integers(0, 255, (13, 24, 32, 3), dtype=np.uint8))
    for record in records:
        save_record(tmp_path, record)
    write_json(tmp_path / "results.json", build_results(HEADER, records))
    return tmp_path


class TableParser(HTMLParser):
    """Cell texts of every <table id=...> in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.images: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and attrs.get("id"):
            self._table = attrs["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []
        elif tag == "img":
            self.images.append(attrs.get("src", ""))

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def parse_tables(html: str) -> TableParser:
    parser = TableParser()
    parser.feed(html)
    return parser


# ---------------------------------------------------------------- bootstrap


def test_bootstrap_ci_width_matches_normal_theory_and_is_deterministic():
    values = np.random.default_rng(1).normal(3.0, 2.0, size=400)
    lo, hi = bootstrap_ci(values, n_boot=4000, seed=5)
    normal_half_width = 1.96 * values.std(ddof=1) / math.sqrt(values.size)
    assert lo < values.mean() < hi
    assert (hi - lo) / 2 == pytest.approx(normal_half_width, rel=0.1)
    assert (lo + hi) / 2 == pytest.approx(values.mean(), abs=0.1 * normal_half_width)
    assert bootstrap_ci(values, n_boot=4000, seed=5) == (lo, hi)
    assert bootstrap_ci(values, n_boot=4000, seed=6) != (lo, hi)


def test_bootstrap_ci_covers_the_true_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(2)
    hits = 0
    for trial in range(400):
        sample = rng.normal(1.0, 1.0, size=40)
        lo, hi = bootstrap_ci(sample, n_boot=500, seed=trial)
        hits += lo <= 1.0 <= hi
    # Binomial sd of the rate is ~0.011 at 400 trials; the percentile bootstrap runs a little
    # under nominal at n = 40.
    assert 0.90 <= hits / 400 <= 0.98


def test_bootstrap_ci_degenerate_inputs_and_nan_values():
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert all(math.isnan(v) for v in bootstrap_ci([float("nan"), None]))
    assert bootstrap_ci([0.7]) == (0.7, 0.7)
    assert bootstrap_ci([0.5, float("nan"), None, 0.5]) == (0.5, 0.5)
    lo, hi = bootstrap_ci([0.0, 1.0, None])
    assert 0.0 <= lo <= hi <= 1.0


# ---------------------------------------------------------------- summary


def test_summarize_equals_hand_computed_means(records):
    summary = summarize(records)
    assert list(summary) == ["basic/short", "basic/long", "combined/short", "combined/mid", "overall"]
    basic_short = summary["basic/short"]
    assert basic_short["n"] == 2
    assert basic_short["if_acc"] == pytest.approx((1.0 + 0.5) / 2)
    assert basic_short["if_trans_acc"] == pytest.approx((1.0 + 0.5) / 2)
    assert basic_short["if_rot_acc"] == pytest.approx(1.0)  # forward vs none: rotation "none" both times
    assert basic_short["vq"] == pytest.approx((0.8 + 0.5) / 2)
    assert basic_short["if_acc_ci"][0] <= basic_short["if_acc"] <= basic_short["if_acc_ci"][1]
    combined = summary["combined/short"]
    assert (combined["if_acc"], combined["if_trans_acc"], combined["if_rot_acc"]) == (0.0, 1.0, 0.0)
    assert combined["vq_ci"] == [pytest.approx(0.4), pytest.approx(0.4)]
    # A group whose only case failed: listed, n = 0, no means.
    assert summary["combined/mid"]["n"] == 0 and summary["combined/mid"]["if_acc"] is None
    overall = summary["overall"]
    assert (overall["n"], overall["n_ok"], overall["n_failed"]) == (5, 5, 1)
    assert overall["if_acc"] == pytest.approx((1.0 + 0.5 + 0.75 + 0.0 + 1.0) / 5)  # external case included
    assert overall["vq"] == pytest.approx((0.8 + 0.5 + 0.5 + 0.4 + 1.0) / 5)
    json.dumps(summary, allow_nan=False)  # strict JSON: missing values are null, never NaN


def test_summary_table_and_csv_round_trip(tmp_path, records):
    summary = summarize(records)
    write_summary_csv(tmp_path / "summary.csv", summary)
    table = pd.read_csv(tmp_path / "summary.csv")
    assert list(table["group"]) == list(summary)
    for row in table.itertuples():
        block = summary[row.group]
        for metric in ("if_acc", "if_trans_acc", "if_rot_acc", "vq"):
            expected = math.nan if block[metric] is None else block[metric]
            assert getattr(row, metric) == pytest.approx(expected, nan_ok=True)
        assert row.n == block["n"]
    overall = table.set_index("group").loc["overall"]
    assert overall["n_failed"] == 1 and overall["track"] == "all"
    assert overall["if_acc_lo"] == pytest.approx(summary["overall"]["if_acc_ci"][0])


def test_per_clip_curves_average_cases_per_clip(records):
    curves = per_clip_curves(records)
    basic_short = curves[(curves.track == "basic") & (curves.horizon == "short")].set_index("clip")
    assert list(basic_short.index) == [0, 1, 2]
    assert basic_short.loc[2, "if_acc"] == pytest.approx((1.0 + 0.0) / 2)  # clip 2 of case 001 missed all
    assert basic_short.loc[1, "if_acc"] == pytest.approx((1.0 + 0.5) / 2)
    assert basic_short.loc[2, "vq"] == pytest.approx((0.7 + 0.3) / 2)
    assert basic_short.loc[0, "n"] == 2
    assert list(dict.fromkeys(zip(curves.track, curves.horizon))) == [
        ("basic", "short"), ("basic", "long"), ("combined", "short"), ("external", "any")]


def test_confusion_matrix_counts(records):
    translation = confusion_matrix(records, "translation")
    assert translation.shape == (9, 9)
    assert translation.loc["forward", "forward"] == 12 + 6 + 12
    assert translation.loc["forward", "none"] == 6
    assert translation.loc["none", "none"] == 12 + 12  # yaw-only case + external case
    assert translation.to_numpy().sum() == 5 * 12  # the failed case adds nothing
    rotation = confusion_matrix(records, "rotation")
    assert rotation.loc["yaw-left", "none"] == 3 + 12
    assert rotation.loc["yaw-left", "yaw-left"] == 9
    full = confusion_matrix(records)
    assert full.shape == (NUM_LABELS, NUM_LABELS)
    assert full.to_numpy()[FORWARD_LEFT_YAW, FORWARD] == 12
    assert np.trace(full.to_numpy()) == 12 + 6 + 9 + 12
    top = top_confusions(full, k=2)
    assert list(top["count"]) == [12, 6]
    assert top["share_of_commanded"].iloc[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="translation"):
        confusion_matrix(records, "yaw")


def test_command_runs_split_at_command_changes():
    commanded = [FORWARD] * 4 + [LEFT_YAW] * 2
    runs = command_runs({"commanded": commanded, "detected": [FORWARD, NONE, FORWARD, FORWARD, NONE, NONE]})
    assert list(runs["first"]) == [1, 5] and list(runs["last"]) == [4, 6]
    assert list(runs["if_acc"]) == [0.75, 0.0]
    assert list(runs["detected_most"]) == [FORWARD, NONE]


def test_print_summary_shows_groups_intervals_and_failures(records):
    console = Console(record=True, width=80)
    summary = summarize(records)
    print_summary(summary, title="test run", console=console)
    text = console.export_text()
    assert "basic/short" in text and "overall" in text and "1 failed" in text
    lo, hi = summary["overall"]["if_acc_ci"]
    assert f"{lo:.3f}–{hi:.3f}" in text
    assert f"{summary['overall']['if_acc']:.3f}" in text


# ---------------------------------------------------------------- files


def test_load_records_names_a_bad_file_and_skips_partial_writes(tmp_path, records):
    write_results_dir(tmp_path, records)
    (tmp_path / "cases" / ".x.partial.json").write_text("{")
    loaded = load_records(tmp_path)
    assert loaded == sorted(records, key=lambda r: r.id)  # a record survives its file unchanged
    stored = read_json(tmp_path / "cases" / "combined-mid-004.json")
    assert "labels" not in stored and "video" not in stored and "warnings" not in stored  # failed: only what is known
    (tmp_path / "cases" / "zz-broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="zz-broken.json"):
        load_records(tmp_path)
    (tmp_path / "cases" / "zz-broken.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="zz-broken.json"):
        load_records(tmp_path)
    ok = read_json(tmp_path / "cases" / "basic-short-000.json")
    for edited, problem in (({**ok, "if_accuracy": 1.0}, r"unknown case record field\(s\) \['if_accuracy'\]"),
                            ({k: v for k, v in ok.items() if k != "labels"}, r"lacks field\(s\) \['labels'\]"),
                            ({**ok, "status": "done"}, "status 'done'")):
        write_json(tmp_path / "cases" / "zz-broken.json", edited)
        with pytest.raises(ValueError, match=f"zz-broken.json: .*{problem}"):
            load_records(tmp_path)
    with pytest.raises(FileNotFoundError, match="cases"):
        load_records(tmp_path / "nowhere")


def test_build_results_strips_bulky_fields(records):
    results = build_results(HEADER, records)
    assert list(results)[:len(HEADER)] == list(HEADER)
    assert all("labels" not in c and "paths" not in c for c in results["cases"])
    assert [c["id"] for c in results["cases"]] == sorted(r.id for r in records)
    by_id = {r.id: r for r in records}
    assert all(c["per_clip"] == by_id[c["id"]].per_clip for c in results["cases"])
    with pytest.raises(ValueError, match="summary"):
        build_results({**HEADER, "summary": {}}, records)


def test_report_html_and_csv_numbers_equal_the_records(tmp_path, records):
    results_dir = write_results_dir(tmp_path, records)
    results = read_json(results_dir / "results.json")
    html_path = write_report(results_dir, results)
    html = html_path.read_text()
    page = parse_tables(html)

    # Every case row shows the record's numbers (3 decimals), failed ones as missing.
    rows = {row[0]: row for row in page.tables["cases-table"][1:]}
    assert set(rows) == {r.id for r in records}
    for record in records:
        row = rows[record.id]
        shown = [float(v) if v != "–" else None for v in row[4:8]]
        expected = [None if getattr(record, m) is None else round(getattr(record, m), 3)
                    for m in ("if_acc", "if_trans_acc", "if_rot_acc", "vq")]
        assert shown == expected, record.id
    # The summary table shows summary.csv's numbers.
    csv = pd.read_csv(results_dir / "summary.csv").set_index("group")
    summary_rows = {row[0]: row for row in page.tables["summary-table"][1:]}
    assert list(summary_rows) == list(results["summary"])
    for group, row in summary_rows.items():
        for cell, metric in ((row[1], "if_acc"), (row[3], "if_trans_acc"), (row[4], "if_rot_acc"), (row[5], "vq")):
            value = csv.loc[group, metric]
            assert cell == ("–" if math.isnan(value) else f"{value:.3f}"), (group, metric)
        if group == "overall":
            assert row[2] == f"{csv.loc[group, 'if_acc_lo']:.3f}–{csv.loc[group, 'if_acc_hi']:.3f}"
    # The failed case is listed with its reason.
    assert page.tables["failed-table"][1] == ["combined-mid-004", "RuntimeError: out of memory in clip 2"]
    # Self-contained: every image is an embedded PNG, nothing is fetched from elsewhere.
    assert page.images and all(src.startswith("data:image/png;base64,") for src in page.images)
    assert all(base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n" for src in page.images)
    assert "http://" not in html and "https://" not in html and "<link" not in html and "<script" not in html
    # Best and worst cases: the worst one's video is missing, which is noted rather than fatal.
    assert "best: basic-short-000" in html and "worst: combined-short-003" in html
    assert "Frames not shown" in html and "missing.avi" in html
    for text in ("oracle", "wc-test", "sharpness", "gt v1"):
        assert text in html


def test_rebuild_reproduces_results_json(tmp_path, records):
    results_dir = write_results_dir(tmp_path, records)
    original = read_json(results_dir / "results.json")
    # Damage the top-level files: rebuild must re-create them from the records alone.
    write_json(results_dir / "results.json", {**HEADER, "cases": [], "summary": {}})
    rebuilt = rebuild(results_dir)
    assert read_json(results_dir / "results.json") == original == json.loads(json.dumps(rebuilt))
    assert (results_dir / "summary.csv").exists() and (results_dir / "report.html").exists()
    (results_dir / "results.json").unlink()
    with pytest.raises(FileNotFoundError, match="header"):
        rebuild(results_dir)


def test_vq_components_per_horizon_with_plain_words(tmp_path, records):
    """Each stored VQ component is averaged per track x horizon and explained in the report."""
    components = {"basic-short-000": {"q_noise": 0.9, "q_sharpness": 0.8, "flicker": 1.0},
                  "basic-short-001": {"q_noise": 0.5, "q_sharpness": 0.6, "flicker": 3.0},
                  "basic-long-002": {"q_noise": 1.0, "q_sharpness": 0.4, "flicker": 0.0},
                  "combined-short-003": {"q_noise": 0.7, "q_sharpness": None, "flicker": 2.0},
                  "external-005": {"q_noise": 0.2, "q_sharpness": 0.9, "flicker": 4.0, "unknown_term": 7.0}}
    for record in records:
        if record.id in components:
            record.vq_raw = components[record.id]
    table = vq_components(records)
    # Documented components first, in the scorer's order; undocumented ones after.
    assert list(table.index) == ["q_sharpness", "q_noise", "flicker", "unknown_term"]
    assert list(table.columns) == ["basic/short", "basic/long", "combined/short", "overall"]
    assert table.loc["q_noise", "basic/short"] == pytest.approx(0.7)
    assert table.loc["q_sharpness", "combined/short"] != table.loc["q_sharpness", "combined/short"]  # NaN: none stored
    assert table.loc["flicker", "overall"] == pytest.approx(2.0)
    results_dir = write_results_dir(tmp_path, records)
    html = write_report(results_dir, read_json(results_dir / "results.json")).read_text()
    rows = {row[0]: row for row in parse_tables(html).tables["vq-components"][1:]}
    assert rows["q_noise"][1].startswith("noise: falls with grain")
    assert rows["q_noise"][2:] == ["0.700", "1.000", "0.700", "0.660"]
    assert rows["q_sharpness"][4] == "–" and rows["unknown_term"][1] == ""
    assert vq_components([r for r in records if r.id == "combined-mid-004"]).empty
