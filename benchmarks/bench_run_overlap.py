"""`wcbench run` with scoring inline vs in a background process: does the model wait for the scorer?

    .venv/bin/python -m benchmarks.bench_run_overlap                        # wc-mini, 2 s per clip
    .venv/bin/python -m benchmarks.bench_run_overlap --limit 4 --pause 1    # quicker

The stand-in model replays the oracle's videos (rendered before the clock starts) with a pause
per clip: a GPU generator's pace that leaves the CPU to the scorer. Each setting
(``--score-workers 0``: inline, then 1) runs the suite into a fresh folder; printed per
setting: wall time, the model's own time (reset and steps, as the records time them), the
scoring time, and wall / model (target: within 5 % with a background scorer; inline it is
about (model + scoring) / model). The records of the
two settings must be identical (timing aside). Figures and the command are in docs/runs.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from wcbench.cli.common import build_scorers, load_config
from wcbench.data.suite import load_suite
from wcbench.models.oracle import OracleModel
from wcbench.run.runner import RunConfig, generate_case, run_suite

from benchmarks.bench_jobs import records


class PausingReplay:
    """Replays the oracle's videos (rendered before the clock starts), pausing ``pause_s`` in
    every clip as a GPU generator would: its time is the pause, and it leaves the CPU free."""

    reports_speed = False

    def __init__(self, videos: dict[str, np.ndarray], pause_s: float):
        self.videos, self.pause_s = videos, pause_s

    def reset(self, image, prompt, seed, info):
        self.video, self.next = self.videos[info.id], 1
        return self.video[:1]

    def step(self, actions):
        time.sleep(self.pause_s)
        frames = self.video[self.next:self.next + 4 * len(actions)]
        self.next += len(frames)
        return frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default="wc-mini")
    parser.add_argument("--pause", type=float, default=2.0, help="seconds per clip [2]")
    parser.add_argument("--limit", type=int, default=0, help="the first N cases only [all]")
    parser.add_argument("--score-workers", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    suite = load_suite(args.suite)
    scorers = build_scorers(load_config([]))
    print(f"{args.suite}, {args.limit or len(suite.cases)} cases, {args.pause:g} s per clip, "
          f"{len(os.sched_getaffinity(0))} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    cases = suite.cases[:args.limit] if args.limit else suite.cases
    run = RunConfig(model="pausing-replay")
    videos = {case.id: generate_case(OracleModel(), suite, case, run.case_seed(case.id))[0] for case in cases}
    reference = None
    with tempfile.TemporaryDirectory(prefix="bench_overlap_") as tmp:
        for workers in args.score_workers:
            out = Path(tmp) / f"workers-{workers}"
            started = time.perf_counter()
            done = run_suite(suite, PausingReplay(videos, args.pause), run, scorers, out, limit=args.limit,
                             score_workers=workers)
            wall = time.perf_counter() - started
            model_s = sum(r.timing["generate_s"] for r in done)
            score_s = sum(r.timing["score_s"] for r in done)
            found = records(out)
            reference = reference or found
            print(f"--score-workers {workers}: wall {wall:6.1f} s  model {model_s:6.1f} s  scoring {score_s:6.1f} s  "
                  f"wall / model {wall / model_s:5.3f}  records identical: {found == reference}", flush=True)
    print(f"load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
