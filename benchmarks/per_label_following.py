"""Following per commanded action label, from the labels a `wcbench run` stored per case.

    python benchmarks/per_label_following.py BASELINE_DIR [OTHER_DIR ...] [--track combined]

Prints, for every full label the track commands, the share of its frame transitions whose
estimated label was right in each results folder (no video is re-estimated: the per-case
records keep the commanded and detected label of every transition), and the label each
run most often detected instead. This is how the README's per-label post-training table
was made.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from wcbench.actions import label_name
from wcbench.report import load_records


def per_label(results_dir: Path, track: str) -> dict[int, tuple[float, int, int]]:
    """{commanded label: (accuracy, transitions, most frequent detected label)}."""
    detected_by_label: dict[int, list[int]] = defaultdict(list)
    for record in load_records(results_dir):
        if record.get("track") != track or record.get("status") != "ok":
            continue
        labels = record["labels"]
        for want, got in zip(labels["commanded"], labels["detected"]):
            detected_by_label[int(want)].append(int(got))
    return {label: (float(np.mean(np.array(got) == label)), len(got), Counter(got).most_common(1)[0][0])
            for label, got in sorted(detected_by_label.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="wcbench results folders (the first is the reference)")
    parser.add_argument("--track", default="combined", help="basic or combined (default: combined)")
    args = parser.parse_args()
    tables = [per_label(path, args.track) for path in args.results]
    header = f"{'label':<28} {'n':>5} " + " ".join(f"{path.name[:14]:>14}" for path in args.results)
    print(header + "   most often detected instead (last run)")
    for label, (_, count, _) in tables[0].items():
        cells = " ".join(f"{t[label][0]:>14.2f}" if label in t else f"{'-':>14}" for t in tables)
        instead = tables[-1].get(label, (0, 0, label))[2]
        print(f"{label_name(label):<28} {count:>5} {cells}   {label_name(instead) if instead != label else ''}")


if __name__ == "__main__":
    main()
