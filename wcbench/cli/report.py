"""The commands on results folders: ``wcbench report`` rebuilds a folder's tables and report,
``submit`` and ``verify`` re-score it, ``leaderboard`` prints a suite's board."""

from __future__ import annotations

import argparse
from pathlib import Path

from wcbench.cli.common import UsageError
from wcbench.core.storage import FolderBusyError, folder_lock
from wcbench.core.terminal import console


def cmd_report(args: argparse.Namespace) -> int:
    from wcbench.report.results import rebuild
    from wcbench.report.summary import print_summary

    try:
        with folder_lock(Path(args.results_dir), "wcbench report"):
            results = rebuild(Path(args.results_dir))
    except FolderBusyError as err:
        raise UsageError(str(err)) from err
    print_summary(results["summary"], title=str(args.results_dir))
    console.print(f"rebuilt {Path(args.results_dir) / 'report.html'}")
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    from wcbench.run.audit import submit

    return submit(Path(args.results_dir), Path(args.leaderboards), console, args.sample, args.submitter, args.update,
                  args.jobs)


def cmd_verify(args: argparse.Namespace) -> int:
    from wcbench.run.audit import verify

    return verify(Path(args.results_dir), args.sample, args.seed, console, args.jobs)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from wcbench.report.board import print_leaderboard

    return print_leaderboard(args.suite, Path(args.leaderboards), console, args.mode)
