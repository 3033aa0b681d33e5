"""Where a training step's time goes: the rollout, the rewards (wcbench's scorers) and the update,
and how busy the machine's cores are meanwhile. Scoring cannot run beside generation (a group's
rewards need its whole rollout, the next rollout needs this step's update), so the question is
whether ``reward.jobs`` processes scoring a group's clips side by side pay: compare
``--processes 1 reward.jobs=1`` with ``reward.jobs=2``.

    OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.bench_train_phases                  # 30 steps, 2 processes
    OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.bench_train_phases --steps 10 --processes 1

Each rank writes its own phase times; rank 0's are in ``metrics.jsonl`` (``seconds_rollout``,
``seconds_rewards``, the rest of ``seconds`` is the update, logging and checkpoints). Printed: the
mean of each over the steps after the first (start-up), and the cores the process tree kept
busy (CPU time / wall). Figures and the command are in docs/wctrain.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_quality import load_note


def launch_command(processes: int, run_dir: Path, settings: list[str]) -> list[str]:
    """``wctrain train`` on ``processes`` CPU processes (accelerate when more than one)."""
    train = ["-m", "wctrain", "train", f"run_dir={run_dir}", *settings]
    if processes == 1:
        return [sys.executable, *train]
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or "accelerate"
    return [accelerate, "launch", "--multi_gpu", "--num_processes", str(processes), "--num_machines", "1",
            "--mixed_precision", "no", "--dynamo_backend", "no", *train]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("settings", nargs="*", help="more wctrain settings (key=value)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_train_phases_") as tmp:
        run_dir = Path(tmp) / "run"
        command = launch_command(args.processes, run_dir,
                                 [f"rl.steps={args.steps}", "eval.every=0", f"checkpoint_every={args.steps}",
                                  *args.settings])
        started = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()][1:]
    step = np.mean([r["seconds"] for r in rows])
    rollout = np.mean([r["seconds_rollout"] for r in rows])
    rewards = np.mean([r["seconds_rewards"] for r in rows])
    update = step - rollout - rewards
    print(f"{args.steps} steps on {args.processes} process(es) {' '.join(args.settings)} {load_note()}")
    print(f"  a step (mean of steps 2-{args.steps}, rank 0): {step:.2f} s")
    for name, seconds in (("rollout", rollout), ("rewards", rewards), ("update and the rest", update)):
        print(f"    {name:20s} {seconds:6.2f} s  {seconds / step:4.0%}")
    cpu = usage.ru_utime + usage.ru_stime
    print(f"  the whole run: {wall:.1f} s wall, {cpu:.1f} s CPU: {cpu / wall:.2f} cores busy")


if __name__ == "__main__":
    main()
