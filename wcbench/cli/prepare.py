"""The commands around a run: ``wcbench export`` (a suite's inputs for models run elsewhere),
``suites`` and ``models`` (what is available), ``calibrate`` (an estimator's thresholds)."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from wcbench.core.terminal import console, progress_bar


def cmd_export(args: argparse.Namespace) -> int:
    from wcbench.data.suite import load_suite
    from wcbench.run.export import export_suite

    suite = load_suite(args.suite)
    with progress_bar() as progress:
        task = progress.add_task("exporting", total=len(suite.cases))
        manifest = export_suite(suite, args.out, on_case=lambda case: progress.advance(task),
                                formats=args.format or ["worldplay"])
    console.print(f"exported {len(suite.cases)} cases; put each generated video at videos/<id>.mp4 under "
                  f"{args.out} and run:  wcbench score --manifest {manifest} --out <results dir>")
    return 0


def cmd_suites(args: argparse.Namespace) -> int:
    from wcbench.data.suite import list_suites, load_suite

    table = Table(title="built-in suites")
    for column in ("name", "cases", "resolution", "hash", "description"):
        table.add_column(column)
    for name in list_suites():
        suite = load_suite(name)
        table.add_row(name, str(len(suite.cases)), f"{suite.width}x{suite.height}", suite.content_hash(),
                      suite.description)
    Console().print(table)
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from wcbench.models.registry import available_models

    for name in available_models():
        print(name)
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from wcbench.pose.calibrate_cli import run_calibration

    return run_calibration(args, console)
