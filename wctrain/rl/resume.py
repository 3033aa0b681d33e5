"""What a ``wctrain train`` resume restores besides the weights, the optimiser and the EMAs (the
:class:`TrainingState`), and what it must match to go on: the scorers the rewards were computed
with and the trajectories the episodes came from (recorded in ``RUN_DIR/config.json``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wctrain.rl.curriculum import initial_label_accuracy


@dataclass
class TrainingState:
    """What resumes a run besides weights and optimiser: the step reached and the curriculum's
    running IF per label (one float per label)."""

    step: int = 0
    label_accuracy: np.ndarray = field(default_factory=initial_label_accuracy)

    def state_dict(self) -> dict[str, Any]:
        return {"step": self.step, "label_accuracy": self.label_accuracy.tolist()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step = int(state["step"])
        self.label_accuracy = np.asarray(state["label_accuracy"], dtype=float)


def check_same_reward_scorers(run_dir: Path, scorers: dict) -> None:
    """Refuse to resume a run whose rewards came from other scorers (another estimator version
    or thresholds, another quality scorer, as after upgrading wcbench mid-run): its steps would
    mix two rewards. ``scorers`` is :meth:`wcbench.scoring.case.Scorers.header`; a run folder
    whose config.json records none is not checked."""
    config = run_dir / "config.json"
    if not ((run_dir / "latest").exists() and config.exists()):
        return
    recorded = json.loads(config.read_text()).get("reward_scorers")
    if recorded is None or recorded == scorers:
        return
    raise ValueError(f"{run_dir}: cannot resume: its rewards were scored by {describe_scorers(recorded)}, and this "
                     f"wcbench scores them with {describe_scorers(scorers)}, so its steps would mix two rewards. "
                     f"Resume it with the wcbench it was started with, or pass a new run_dir.")


def check_same_trajectories(run_dir: Path, trajectories: dict | None) -> None:
    """Refuse to resume a run whose episodes came from another trajectory set (another content
    hash, or none): its steps would not be the ones an uninterrupted run makes. ``trajectories``
    is :meth:`wctrain.rl.trajectories.TrajectorySet.header` or ``None``; a run folder whose
    config.json has no ``trajectories`` entry is not checked."""
    config = run_dir / "config.json"
    if not ((run_dir / "latest").exists() and config.exists()):
        return
    recorded = json.loads(config.read_text())
    if "trajectories" not in recorded:
        return
    before = recorded["trajectories"]
    if _hash_of(before) != _hash_of(trajectories):
        raise ValueError(f"{run_dir}: cannot resume: it trained on {_describe_trajectories(before)}, and this run "
                         f"would train on {_describe_trajectories(trajectories)}. Resume it with the data.trajectories "
                         f"it was started with (config.json), or pass a new run_dir.")


def _hash_of(trajectories: dict | None) -> str | None:
    return None if trajectories is None else trajectories["hash"]


def _describe_trajectories(trajectories: dict | None) -> str:
    if trajectories is None:
        return "generated scripts only"
    return f"the trajectories of {trajectories['folder']} (hash {trajectories['hash']})"


def describe_scorers(header: dict) -> str:
    """The scorers of a :meth:`~wcbench.scoring.case.Scorers.header` in words: the estimator's name,
    version and thresholds, and the quality scorer's name and version."""
    estimator, quality = header.get("estimator", {}), header.get("quality", {})
    thresholds = estimator.get("thresholds", {})
    text = f"estimator {estimator.get('name')} v{estimator.get('version')}"
    if thresholds:
        text += f" (translation {thresholds.get('translation'):.5g}, rotation {thresholds.get('rotation_deg'):.3g} deg)"
    return text + f" and quality {quality.get('name')} v{quality.get('version')}"
