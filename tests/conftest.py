"""Fixtures shared by the wcbench and wctrain tests: small variants of the built-in suite and
the scorers most tests score with."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

from wcbench.pose import build_estimator
from wcbench.scoring.case import Scorers
from wcbench.scoring.quality import build_quality_scorer


def _write_tiny_suite(folder: Path, name: str = "tiny", resolution: tuple[int, int] = (64, 48),
                      cases_per_cell: int = 1, tracks: tuple[str, ...] = ()) -> Path:
    """``folder/<name>.yaml``: wc-mini at a small resolution, short horizon only, ``cases_per_cell``
    cases per track (``tracks``: only those)."""
    text = (f"base: wc-mini\nname: {name}\nresolution: [{resolution[0]}, {resolution[1]}]\n"
            f"horizons: {{short: 125}}\ncases_per_cell: {cases_per_cell}\n")
    if tracks:
        text += f"tracks: [{', '.join(tracks)}]\n"
    path = Path(folder) / f"{name}.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="session")
def write_tiny_suite() -> Callable[..., Path]:
    """Writes a small suite file: ``write_tiny_suite(folder, name=, resolution=, cases_per_cell=, tracks=)``."""
    return _write_tiny_suite


@pytest.fixture(scope="session")
def make_scorers() -> Callable[..., Scorers]:
    """Builds Scorers by name: ``make_scorers("gt")`` (true poses), ``make_scorers()`` (opencv)."""

    def make(estimator: str = "opencv", quality: str = "default") -> Scorers:
        return Scorers(build_estimator(estimator), build_quality_scorer(quality))

    return make


@pytest.fixture(scope="session")
def two_process_env() -> dict[str, str]:
    """The environment for ``accelerate launch --num_processes 2`` in a test: one thread each, and
    the GPUs hidden unless there are two (two processes on one GPU is an error, not a test)."""
    import torch

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if torch.cuda.device_count() < 2:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env
