"""Post-training table: per-track IF and VQ (with 95% bootstrap CIs) of wcbench runs, and the
change against a baseline run.

    python benchmarks/wctrain_table.py BASELINE_RUN NAME=RUN [NAME=RUN ...] [--markdown FILE]

Every RUN is a ``wcbench run`` output folder on the same suite (or a trainer's
``RUN_DIR/eval/step-N`` folder: only the per-case records are read); the first is the baseline. Track values are means over the track's cases; the CIs resample cases.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from wcbench.report import bootstrap_ci, load_records


def track_block(records: list[dict], track: str) -> dict:
    cases = [c for c in records if c["track"] == track and c["status"] == "ok"]
    block = {}
    for metric in ("if_acc", "vq"):
        values = [c[metric] for c in cases]
        block[metric], block[metric + "_ci"] = float(np.mean(values)), bootstrap_ci(values)
    block["n"] = len(cases)
    return block


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline", help="the baseline run folder (the model before post-training)")
    parser.add_argument("runs", nargs="+", help="NAME=RUN_FOLDER")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()

    runs = [("baseline (shipped tinywm)", Path(args.baseline))] + [
        (item.split("=", 1)[0], Path(item.split("=", 1)[1])) for item in args.runs]
    blocks = {}
    for name, folder in runs:
        records = load_records(folder)
        blocks[name] = {track: track_block(records, track) for track in ("basic", "combined")}
    base = blocks[runs[0][0]]
    lines = ["| run | combined IF | Δ | basic IF | Δ | combined VQ (95% CI) | basic VQ (95% CI) |",
             "|---|---|---|---|---|---|---|"]
    for name, _ in runs:
        b = blocks[name]
        def delta(track: str) -> str:
            return "" if b is base else f"{100 * (b[track]['if_acc'] - base[track]['if_acc']):+.1f}"
        def vq(track: str) -> str:
            lo, hi = b[track]["vq_ci"]
            return f"{b[track]['vq']:.3f} ({lo:.3f}–{hi:.3f})"
        lines.append(f"| {name} | {b['combined']['if_acc']:.3f} | {delta('combined')} | {b['basic']['if_acc']:.3f} | "
                     f"{delta('basic')} | {vq('combined')} | {vq('basic')} |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")


if __name__ == "__main__":
    main()
