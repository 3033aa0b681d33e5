"""Run-folder bookkeeping of ``wctrain train`` and ``wctrain pretrain``: atomic checkpoints through
``accelerator.save_state``, the metrics file.

A checkpoint is ``RUN_DIR/checkpoints/step-NNNNNN/``, written by ``accelerator.save_state``
(the model, the optimiser, and the objects registered for checkpointing: the EMAs and the
command's training state, e.g. :class:`wctrain.rl.resume.TrainingState`) into a temporary
folder that is renamed into place; ``RUN_DIR/latest`` names the newest and is itself written
atomically, so a kill at any point leaves the previous checkpoint usable. With FSDP or
DeepSpeed, ``save_state`` writes what those need to resume.

``metrics.jsonl`` gets one row per step (or per logged step) from rank 0; on resume, rows past
the checkpoint (the steps a killed run logged but did not save) are dropped, so they are not
logged twice.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from wcbench.core.storage import atomic_path, write_text

KEEP_CHECKPOINTS = 2


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
            raise ValueError(f"{run_dir / 'checkpoint.pt'} is not a checkpoint wctrain can resume (it resumes "
                             f"RUN_DIR/latest); pass a new run_dir")
        return False
    folder = run_dir / "checkpoints" / pointer.read_text().strip()
    if not folder.is_dir():
        raise ValueError(f"{pointer} names {folder.name}, which is not a folder in {folder.parent}: this run_dir "
                         f"was not written by wctrain's checkpoints; pass a new run_dir")
    try:
        accelerator.load_state(str(folder))
    except (ValueError, RuntimeError) as error:  # torch names neither the folder nor the setting that differs
        raise ValueError(f"{folder}: cannot resume: its model or optimiser state does not match this run ({error}). "
                         f"The run was started with another model or other trained weights (rl.trainable); resume "
                         f"with the settings it was started with (config.json), or pass a new run_dir.") from error
    return True


def truncate_metrics(run_dir: Path, step: int) -> None:
    """Keep only the rows of steps up to ``step`` (atomically)."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return
    rows = [line for line in path.read_text().splitlines() if line.strip() and json.loads(line)["step"] <= step]
    with atomic_path(path) as tmp:
        tmp.write_text("".join(row + "\n" for row in rows))


def append_metrics(run_dir: Path, row: dict) -> None:
    """Add one row to ``metrics.jsonl``."""
    with (run_dir / "metrics.jsonl").open("a") as handle:
        handle.write(json.dumps(row) + "\n")
