"""Packaging: every package folder is listed in pyproject.toml; the CLIs answer --help."""

import subprocess
import sys
import tomllib
from pathlib import Path

from wcbench.cli import build_parser

REPO = Path(__file__).resolve().parents[1]


def test_every_package_is_listed():
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for top in ("wcbench", "wctrain")
             for p in (REPO / top).rglob("__init__.py")}
    found.add("wcbench.suites")
    assert found == listed


def test_help_explains_every_command():
    parser = build_parser()
    text = parser.format_help()
    for command in ("run", "score", "report", "export", "calibrate", "submit", "verify", "leaderboard"):
        assert command in text
    out = subprocess.run([sys.executable, "-m", "wcbench", "run", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "resume" in out.stdout.lower()
