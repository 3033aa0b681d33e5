"""Packaging: the built-in suites ship inside the package; the CLIs answer --help."""

import subprocess
import sys
import tomllib
from pathlib import Path

from wcbench.cli import build_parser
from wcbench.data.suite import builtin_suites_dir, list_suites

REPO = Path(__file__).resolve().parents[2]


def test_builtin_suites_ship_as_package_data():
    """The suites are YAML files in wcbench/suites/, installed by the package-data globs (a wheel
    carries what they match, nothing else)."""
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert builtin_suites_dir() == REPO / "wcbench" / "suites"
    shipped = {path.name for glob in package_data["wcbench"] for path in (REPO / "wcbench").glob(glob)}
    assert {"wc-mini.yaml", "wc-mini-heldout.yaml", "wc600.yaml"} <= shipped
    assert "wc-mini" in list_suites()


def test_help_explains_every_command():
    parser = build_parser()
    text = parser.format_help()
    for command in ("run", "score", "report", "export", "calibrate", "submit", "verify", "leaderboard"):
        assert command in text
    out = subprocess.run([sys.executable, "-m", "wcbench", "run", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "resume" in out.stdout.lower()


_WITHOUT_TORCH = """
import sys
from importlib.abc import MetaPathFinder

class Absent(MetaPathFinder):  # as on a core install: no torch, accelerate or diffusers
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "accelerate", "diffusers"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Absent())
from wcbench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_core_install_runs_without_torch(tmp_path, write_tiny_suite):
    """Core dependencies hold no torch; scoring, export and a one-process run need none."""
    core = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not [d for d in core if d.split(">")[0].split("=")[0] in ("torch", "accelerate", "diffusers")]
    suite = write_tiny_suite(tmp_path)

    def wcbench(*argv):
        return subprocess.run([sys.executable, "-c", _WITHOUT_TORCH, *argv], capture_output=True, text=True,
                              cwd=tmp_path, timeout=600)

    listed = wcbench("models")
    assert listed.returncode == 0 and "tinywm" in listed.stdout.split()  # listed, imported only when built
    run = wcbench("run", "--suite", str(suite), "--model", "oracle", "--out", "run", "--limit", "1", "estimator=gt")
    assert run.returncode == 0, run.stderr[-2000:]
    # in this process: the stand-in for a missing torch (Absent) does not reach the model's child process
    tinywm = wcbench("run", "--suite", str(suite), "--model", "tinywm", "--out", "run2", "isolate_model=false")
    assert tinywm.returncode == 2 and "pip install -e '.[train]'" in tinywm.stderr.replace("\n", " ")
    assert wcbench("export", "--suite", str(suite), "--out", "export", "--format", "matrix-game").returncode == 0
