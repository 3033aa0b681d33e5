"""``wcbench calibrate``: render videos with known motion, run an estimator, show how its
labels confuse, choose its thresholds and (with ``--write``) store them in its config.

The maths lives in :mod:`wcbench.pose.calibration`; this module is the command's front end.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from wcbench.core.camera import StepSizes
from wcbench.core.terminal import progress_bar
from wcbench.pose import build_estimator
from wcbench.pose.base import save_estimator_thresholds
from wcbench.pose.calibration import calibrate, calibration_record, confusion_report, estimate_video
from wcbench.pose.calibration_videos import (CALIBRATION_STRESSORS, DEGRADATIONS, CalibrationSpec,
                                             render_calibration_videos)
from wcbench.data.scenes.families import SCENE_FAMILIES


def _confusion_table(title: str, labels: list[str], matrix: list[list[int]]) -> Table:
    table = Table(title=title, show_lines=False)
    table.add_column("commanded \\ estimated")
    short = [name.replace("forward", "fwd").replace("backward", "bwd").replace("pitch-", "p-").replace("yaw-", "y-")
             for name in labels]
    for name in short:
        table.add_column(name, justify="right")
    for i, (name, row) in enumerate(zip(short, matrix)):
        if sum(row):  # leave out actions no calibration video commands
            cells = [("." if not v else f"[bold]{v}[/bold]" if i == j else str(v)) for j, v in enumerate(row)]
            table.add_row(name, *cells)
    return table


def run_calibration(args: argparse.Namespace, console: Console) -> int:
    """Calibrate ``args.estimator``; print the confusion matrices and per-axis precision/recall."""
    estimator = build_estimator(args.estimator)
    families = tuple(args.families) if args.families else SCENE_FAMILIES
    unknown = sorted(set(families) - set(SCENE_FAMILIES))
    if unknown:
        console.print(f"[red]unknown scene famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
                      f"known: {', '.join(SCENE_FAMILIES)}[/red]")
        return 2
    spec = CalibrationSpec(seeds=tuple(range(args.seed, args.seed + args.scenes)), steps=StepSizes(),
                           resolution=tuple(args.resolution), families=families,
                           degradations=DEGRADATIONS if args.degrade else ("clean",),
                           stressors=CALIBRATION_STRESSORS if args.stressors else ())
    total = spec.num_videos
    estimates, scripts = [], []
    with progress_bar() as progress:
        task = progress.add_task(f"calibrating {estimator.name}", total=total)
        for video in render_calibration_videos(spec):
            estimates.append(estimate_video(estimator, video))
            scripts.append(video.script)
            progress.advance(task)
    result = calibrate(estimates, scripts)
    report = confusion_report(estimates, scripts, result.thresholds)
    out = Console()
    out.print(_confusion_table("translation", report["translation_labels"], report["translation_confusion"]))
    out.print(_confusion_table("rotation", report["rotation_labels"], report["rotation_confusion"]))
    table = Table(title="per component")
    for column in ("component", "precision", "recall", "support"):
        table.add_column(column, justify="right")
    for name, row in report["components"].items():
        table.add_row(name, f"{row['precision']:.3f}", f"{row['recall']:.3f}", str(row["support"]))
    out.print(table)
    th = result.thresholds
    acc = report["accuracy"]
    out.print(f"thresholds: translation {th.translation:.5g} "
              f"({result.translation.low:.4g}-{result.translation.high:.4g}), "
              f"rotation {th.rotation_deg:.4g} deg ({result.rotation.low:.3g}-{result.rotation.high:.3g}), "
              f"secondary ratio {th.secondary_ratio:.3g}; accuracy full {acc['full']:.4f} "
              f"translation {acc['translation']:.4f} rotation {acc['rotation']:.4f} over {report['transitions']} "
              "transitions")
    if args.write:
        path = save_estimator_thresholds(estimator.name, th, calibration=calibration_record(estimator, spec, result))
        out.print(f"wrote {path}")
    else:
        out.print("(dry run: add --write to store these thresholds in the estimator's config)")
    return 0
