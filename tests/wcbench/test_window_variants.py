"""experiments/window_variants.py scores window-step settings over cached windows: it runs against
the current estimator (it calls the estimator's window step), reports what an option mends and
breaks, reuses its cache, and measures fresh windows for options that change the tracks."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.window_variants", *args], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300)


def test_an_option_is_scored_against_the_shipped_settings_from_a_cache(tmp_path):
    # a still camera before a pond (street 7104): the shipped rules read it still, the median rule alone does not
    args = ("--rows", "still nonrigid", "--seeds", "7104", "7104", "--families", "street", "--steps", "2",
            "--option", "bottom_still_share=0.5", "two_way_share=1", "--cache", str(tmp_path), "--show")
    first = _run(*args)
    assert first.returncode == 0, first.stderr
    row = next(line.split() for line in first.stdout.splitlines() if line.strip().startswith("still nonrigid"))
    assert row[2] == "1.000" and row[5] == "0.000" and row[-2:] == ["0", "2"]  # shipped, options, mended, broken
    assert first.stdout.count("street 7104 window") == 2
    assert len(list(tmp_path.glob("*.pkl"))) == 1
    assert _run(*args).stdout == first.stdout  # the second run scores the cached windows alike


def test_an_option_that_changes_tracking_measures_its_own_windows(tmp_path):
    args = ("--rows", "still clean", "--seeds", "7104", "7104", "--families", "street", "--steps", "2",
            "--option", "dense_step=0", "--cache", str(tmp_path))
    result = _run(*args)
    assert result.returncode == 0, result.stderr
    assert "(fresh windows)" in result.stdout
    names = sorted(path.name for path in tmp_path.glob("*.pkl"))
    assert len(names) == 2 and "+dense_step=0-" in names[0] and "+" not in names[1]  # "+" sorts first
    assert _run(*args).stdout == result.stdout


def test_an_unknown_option_is_refused(tmp_path):
    result = _run("--rows", "still clean", "--option", "parallax_quantil=0.5", "--cache", str(tmp_path))
    assert result.returncode == 2 and "unknown option" in result.stderr
    assert not list(tmp_path.iterdir())
