"""Records -> files: results.json (a run's header, the cases and their summary), summary.csv,
cases.csv and report.html, written atomically; ``rebuild`` re-creates them all from the
per-case records, never re-scoring a video."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from wcbench.core.environment import environment
from wcbench.core.storage import neutralize_cell, read_json, write_json, write_text
from wcbench.report.html import render_report
from wcbench.report.summary import case_table, summarize, summary_table
from wcbench.results.record import CaseRecord, load_records

# The layout of results.json, recorded in each file: bump it when a field is added or changes meaning.
RESULTS_SCHEMA_VERSION = 2


def table_csv(table: pd.DataFrame) -> str:
    """A table as CSV text (full precision; empty cells for missing), its text cells neutralised
    against spreadsheet formulas (:func:`wcbench.core.storage.neutralize_cell`): ids, scripts,
    errors and warnings can hold anything a manifest or a model put there."""
    return table.map(neutralize_cell).to_csv(index=False)


def write_summary_csv(path: str | Path, summary: dict) -> None:
    """Write :func:`summary_table` as CSV atomically."""
    write_text(path, table_csv(summary_table(summary)))


def strip_record(record: CaseRecord) -> dict:
    """A record as stored in results.json: without the bulky "labels" and "paths"."""
    return {k: v for k, v in record.to_dict().items() if k not in ("labels", "paths")}


def results_header(header: dict) -> dict:
    """A run's header for results.json, stamped with the schema version and the environment
    (package versions, hardware, time) it is written in."""
    return {"schema_version": RESULTS_SCHEMA_VERSION, **header, "environment": environment()}


def build_results(header: dict, records: list[CaseRecord]) -> dict:
    """The results.json body: ``header`` fields, then "cases" (sorted by id, so the file does not
    depend on the order in which processes finished) and "summary"."""
    clash = {"cases", "summary"} & set(header)
    if clash:
        raise ValueError(f"header must not hold {sorted(clash)}: build_results computes them")
    cases = [strip_record(r) for r in sorted(records, key=lambda r: r.id)]
    return {**header, "cases": cases, "summary": summarize(records)}


def write_report(results_dir: str | Path, results: dict, records: list[CaseRecord] | None = None) -> Path:
    """Write DIR/summary.csv, DIR/cases.csv (one row per case) and the self-contained
    DIR/report.html; return the HTML path.

    ``records`` default to DIR/cases/*.json (the full records: the confusion matrices and
    camera paths need the "labels" and "paths" that results.json leaves out).
    """
    results_dir = Path(results_dir)
    if records is None:
        records = load_records(results_dir)
    write_summary_csv(results_dir / "summary.csv", results["summary"])
    write_text(results_dir / "cases.csv", table_csv(case_table(records)))
    html_path = results_dir / "report.html"
    write_text(html_path, render_report(results_dir, results, records))
    return html_path


def rebuild(results_dir: str | Path, header: dict | None = None) -> dict:
    """Re-create results.json, summary.csv, cases.csv and report.html from DIR/cases/*.json, no re-scoring.

    The header (version, estimator, quality, suite, model...) comes from the existing
    results.json unless ``header`` is given. Returns the new results body.
    """
    results_dir = Path(results_dir)
    if header is None:
        results_path = results_dir / "results.json"
        if not results_path.exists():
            raise FileNotFoundError(f"{results_path}: missing; rebuild keeps its header (version, estimator, "
                                    "quality scorer, suite, model), so pass header=... to rebuild without it")
        header = {k: v for k, v in read_json(results_path).items() if k not in ("cases", "summary")}
    records = load_records(results_dir)
    results = build_results(header, records)
    write_json(results_dir / "results.json", results)
    write_report(results_dir, results, records)
    return results
