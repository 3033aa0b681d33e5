"""Following per commanded action label, from the labels a `wcbench run` stored per case.

    python -m experiments.per_label_following BASELINE_DIR [OTHER_DIR ...] [--track combined]
                                             [--positions 60 124 252 | --groups]

Prints, for every full label the track commands, the share of its frame transitions whose
estimated label was right in each results folder (no video is re-estimated: the per-case
records keep the commanded and detected label of every transition), and the label each
run most often detected instead. This is how the README's per-label post-training table
was made. With ``--positions``, it prints instead each run's accuracy over spans of frame
transitions (split at the given transition indices): where in a long video a gain is made.
With ``--groups``, each run's accuracy over two groups of labels: strafing while yawing (the
four labels tinywm does not follow) and every other label of the track.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np

from wcbench.core.actions import Action, label_name
from wcbench.report.summary import confusion_matrix
from wcbench.results.record import CaseRecord, load_records


def track_records(results_dir: Path, track: str) -> list[CaseRecord]:
    """The per-case records of one track in a results folder."""
    return [r for r in load_records(results_dir) if r.track == track]


def per_label(results_dir: Path, track: str) -> dict[int, tuple[float, int, int]]:
    """{commanded label: (accuracy, transitions, most frequent detected label)}, read off the
    report's full-label confusion matrix of the track's cases."""
    records = track_records(results_dir, track)
    counts = confusion_matrix(records, "full").to_numpy()
    totals = counts.sum(axis=1)
    return {int(label): (counts[label, label] / totals[label], int(totals[label]), int(np.argmax(counts[label])))
            for label in np.flatnonzero(totals)}


def by_position(results_dir: Path, track: str, edges: list[int]) -> list[tuple[float, int]]:
    """(accuracy, transitions) over each span of transition indices between ``edges``, read off
    the report's full-label confusion matrix of the track's cases cut to that span."""
    records = track_records(results_dir, track)
    bounds = [0, *edges, None]
    spans = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        cut = [replace(r, labels={k: r.labels[k][start:stop] for k in ("commanded", "detected")})
               if r.labels else r for r in records]
        counts = confusion_matrix(cut, "full").to_numpy()
        total = int(counts.sum())
        spans.append((np.trace(counts) / total if total else float("nan"), total))
    return spans


# strafing left or right while yawing, nothing else: the four labels tinywm drops the turn of
STRAFE_YAW = [Action(right=right, yaw=yaw) for right in (1, -1) for yaw in (1, -1)]


def strafe_yaw(label: int) -> bool:
    """Whether ``label`` is one of :data:`STRAFE_YAW`."""
    return label in {action.label for action in STRAFE_YAW}


def by_group(table: dict[int, tuple[float, int, int]]) -> list[tuple[float, int]]:
    """(accuracy, transitions) over the strafe-while-yawing labels and over the rest of a
    :func:`per_label` table, each label weighted by its transitions."""
    groups = []
    for wanted in (True, False):
        rows = [(acc, n) for label, (acc, n, _) in table.items() if strafe_yaw(label) == wanted]
        total = sum(n for _, n in rows)
        groups.append((sum(acc * n for acc, n in rows) / total if total else float("nan"), total))
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="wcbench results folders (the first is the reference)")
    parser.add_argument("--track", default="combined", help="basic or combined (default: combined)")
    parser.add_argument("--positions", nargs="+", type=int, metavar="INDEX",
                        help="print accuracy over spans of transitions split at these indices instead")
    parser.add_argument("--groups", action="store_true",
                        help="print accuracy over strafing-while-yawing labels and over the rest instead")
    args = parser.parse_args()
    if args.groups:
        print(f"{'run':<28} {'strafe-yaw':>14} {'other labels':>14}")
        for path in args.results:
            cells = " ".join(f"{acc:>7.2f} ({n:>4})" for acc, n in by_group(per_label(path, args.track)))
            print(f"{path.name[:28]:<28} {cells}")
        return
    if args.positions:
        edges = sorted(args.positions)
        names = [f"{a}-{b - 1}" for a, b in zip([0, *edges], edges)] + [f"{edges[-1]}+"]
        print(f"{'run':<28} " + " ".join(f"{name:>14}" for name in names))
        for path in args.results:
            cells = " ".join(f"{acc:>7.2f} ({n:>4})" for acc, n in by_position(path, args.track, edges))
            print(f"{path.name[:28]:<28} {cells}")
        return
    tables = [per_label(path, args.track) for path in args.results]
    header = f"{'label':<28} {'n':>5} " + " ".join(f"{path.name[:14]:>14}" for path in args.results)
    print(header + "   most often detected instead (last run)")
    for label, (_, count, _) in tables[0].items():
        cells = " ".join(f"{t[label][0]:>14.2f}" if label in t else f"{'-':>14}" for t in tables)
        instead = tables[-1].get(label, (0, 0, label))[2]
        print(f"{label_name(label):<28} {count:>5} {cells}   {label_name(instead) if instead != label else ''}")


if __name__ == "__main__":
    main()
