"""experiments/diagnose_windows.py, the tool the estimator docs send readers to, runs against the
current estimator (it reaches into the estimator's window steps, so a change there must keep it
working) and prints one row per latent window."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_diagnose_windows_prints_every_window():
    result = subprocess.run(
        [sys.executable, "-m", "experiments.diagnose_windows", "--seed", "7000", "--family", "room",
         "--track", "combined", "--degrade", "clean", "--size", "96", "--steps", "2", "--drop-misfit", "1.0"],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=120)
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [row[0] for row in rows] == ["0", "1"]
    assert all(row[-1] in ("yes", "NO") for row in rows)  # the --drop-misfit column is there
