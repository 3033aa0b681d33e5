"""Run-folder bookkeeping: atomic checkpoints through ``accelerator.save_state``, the metrics file.

A checkpoint is ``RUN_DIR/checkpoints/step-NNNNNN/``, written by ``accelerator.save_state``
(the model, the optimiser, and the objects registered for checkpointing: both EMAs and the
:class:`TrainingState`) into a temporary folder that is renamed into place; ``RUN_DIR/latest``
names the newest and is itself written atomically, so a kill at any point leaves the previous
checkpoint usable. With FSDP or DeepSpeed, ``save_state`` writes what those need to resume.

``metrics.jsonl`` gets one row per step from rank 0; on resume, rows past the checkpoint (the
steps a killed run logged but did not save) are dropped, so they are not logged twice.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wcbench.core.storage import atomic_path, write_text
from wctrain.curriculum import initial_label_accuracy

KEEP_CHECKPOINTS = 2


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


def publish_checkpoint(folder: Path, final: Path, run_dir: Path, keep: int = KEEP_CHECKPOINTS) -> None:
    """Move the complete checkpoint ``folder`` to ``final``, point ``run_dir/latest`` at it and
    drop all but the newest ``keep`` checkpoints named like it (``<kind>-<step>``)."""
    if final.exists():
        shutil.rmtree(final)
    os.replace(folder, final)
    write_text(run_dir / "latest", final.name + "\n")
    kind = final.name.rsplit("-", 1)[0]
    for old in sorted(final.parent.glob(f"{kind}-*"))[:-keep]:
        shutil.rmtree(old)


def save_checkpoint(accelerator, run_dir: Path, step: int) -> Path:
    """Every rank calls this; rank 0 moves the finished folder into place and prunes old ones."""
    folders = run_dir / "checkpoints"
    final, partial = folders / f"step-{step:06d}", folders / f".step-{step:06d}.partial"
    if accelerator.is_main_process and partial.exists():
        shutil.rmtree(partial)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(partial))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        publish_checkpoint(partial, final, run_dir)
    accelerator.wait_for_everyone()
    return final


def load_checkpoint(accelerator, run_dir: Path) -> bool:
    """Restore the newest checkpoint of ``run_dir`` into everything ``prepare`` and
    ``register_for_checkpointing`` know; False when there is none."""
    pointer = run_dir / "latest"
    if not pointer.exists():
        if (run_dir / "checkpoint.pt").exists():
            raise ValueError(f"{run_dir / 'checkpoint.pt'}: a checkpoint of an earlier wctrain (before model "
                             f"plug-ins) cannot be resumed; pass a new run_dir")
        return False
    folder = run_dir / "checkpoints" / pointer.read_text().strip()
    try:
        accelerator.load_state(str(folder))
    except (ValueError, RuntimeError) as error:  # torch names neither the folder nor the setting that differs
        raise ValueError(f"{folder}: cannot resume: its model or optimiser state does not match this run ({error}). "
                         f"The run was started with another model or rl.trainable; resume with the settings it "
                         f"was started with (config.json), or pass a new run_dir.") from error
    return True


def check_same_reward_scorers(run_dir: Path, scorers: dict) -> None:
    """Refuse to resume a run whose rewards came from other scorers (another estimator version
    or thresholds, another quality scorer, as after upgrading wcbench mid-run): its steps would
    mix two rewards. ``scorers`` is :meth:`wcbench.scoring.case.Scorers.header`; runs that
    recorded none (made before wctrain recorded it) are not checked."""
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
    is :meth:`wctrain.trajectories.TrajectorySet.header` or ``None``; runs that recorded no
    ``trajectories`` entry (made before wctrain recorded it) are not checked."""
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
    """``estimator opencv v9 (translation 0.00086, rotation 0.283 deg) and quality default v2``."""
    estimator, quality = header.get("estimator", {}), header.get("quality", {})
    thresholds = estimator.get("thresholds", {})
    text = f"estimator {estimator.get('name')} v{estimator.get('version')}"
    if thresholds:
        text += f" (translation {thresholds.get('translation'):.5g}, rotation {thresholds.get('rotation_deg'):.3g} deg)"
    return text + f" and quality {quality.get('name')} v{quality.get('version')}"


def truncate_metrics(run_dir: Path, step: int) -> None:
    """Keep only the rows of steps up to ``step`` (atomically)."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return
    rows = [line for line in path.read_text().splitlines() if line.strip() and json.loads(line)["step"] <= step]
    with atomic_path(path) as tmp:
        tmp.write_text("".join(row + "\n" for row in rows))


def append_metrics(run_dir: Path, row: dict) -> None:
    with (run_dir / "metrics.jsonl").open("a") as handle:
        handle.write(json.dumps(row) + "\n")
