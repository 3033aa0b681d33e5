"""benchmarks/refresh_estimator.sh re-measures every figure the estimator decides: its dry run
lists the steps, and each step's arguments parse with the tool that runs it (a renamed
option or row would otherwise fail an hour into the run)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _steps(tmp_path: Path) -> dict[str, list[str]]:
    result = subprocess.run(["bash", "benchmarks/refresh_estimator.sh", str(tmp_path / "out")], cwd=ROOT,
                            capture_output=True, text=True, env={**os.environ, "DRY_RUN": "1"}, timeout=60)
    assert result.returncode == 0, result.stderr
    steps = {}
    for line in result.stdout.splitlines():
        name, _, command = line.partition(": ")
        assert name not in steps, f"step {name} twice"
        steps[name] = shlex.split(command)
    return steps


def test_the_dry_run_lists_every_step_and_writes_nothing(tmp_path):
    steps = _steps(tmp_path)
    assert not (tmp_path / "out").exists()
    names = list(steps)
    assert names[0] == "calibrate" and steps["calibrate"][-1] == "--write"  # the thresholds come first
    assert {"synthetic", "regressions", "stressors", "heldout-movers", "heldout-overlays", "fresh-seeds",
            "run-tinywm-heldout", "speed-6", "memory"} <= set(names)
    assert names.index("speed-1") > names.index("run-tinywm-heldout")  # timing alone, after the rest


def test_each_step_parses_its_arguments(tmp_path):
    commands = {}
    for name, command in _steps(tmp_path).items():
        if command[0] == "python" and command[1] == "-m":
            commands.setdefault(tuple(command[2:]), name)
        elif command[0] == "wcbench":
            commands.setdefault(("wcbench", *command[1:]), name)
    assert len(commands) >= 20
    for args, name in commands.items():
        # argparse checks every argument before --help prints and exits
        result = subprocess.run([sys.executable, "-m", *args, "--help"], cwd=ROOT, capture_output=True, text=True,
                                env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=120)
        assert result.returncode == 0, f"step {name}: {' '.join(args)}: {result.stderr[-400:]}"
