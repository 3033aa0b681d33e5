"""``wcbench export``: everything a user needs to generate a suite's videos with their own
pipeline, and a manifest to score them with ``wcbench score`` afterwards.

Per case ``DIR/<id>/``: ``start.png``, ``prompt.txt``, ``script.txt``, ``labels.json``
(the commanded label of every frame transition) and the script in each requested native
control format (:mod:`wcbench.core.controls`): ``pose.json`` (WorldPlay, one entry per latent,
the default), ``matrix_game.json`` (per-frame keyboard and mouse arrays) and
``text_actions.json`` (key/camera strings and action sentences). Each case folder is built
under a temporary name and renamed when complete, a format asked for later is added to the
finished folders, and ``manifest.csv`` is written last, so an interrupted export leaves
nothing that looks finished. The manifest names the suite and its content hash on every row.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable, Sequence

import cv2

from wcbench.core import controls
from wcbench.core.actions import label_name
from wcbench.core.camera import intrinsics_from_fov, script_trajectory
from wcbench.core.ids import id_path
from wcbench.core.storage import csv_text, remove_partials, write_json, write_text
from wcbench.data.suite import Case, Suite
from wcbench.data.scenes import case_world
from wcbench.scoring.following import commanded_labels


def write_controls(suite: Suite, case: Case, folder: Path, formats: Sequence[str]) -> None:
    """Write the case's script in each format of ``formats`` that ``folder`` lacks."""
    script = case.parsed()
    poses = script_trajectory(script, suite.steps)
    K = intrinsics_from_fov(suite.width, suite.height, suite.fov_deg)
    for fmt in formats:
        path = folder / controls.FORMAT_FILES[fmt]
        if not path.exists():
            write_json(path, controls.encode(script, fmt, poses, K))


def export_case(suite: Suite, case: Case, out_dir: Path, formats: Sequence[str] = ("worldplay",)) -> Path:
    """Write one case folder atomically (build under a temporary name, then rename)."""
    final = id_path(out_dir, case.id)
    if final.exists():
        write_controls(suite, case, final, formats)
        return final
    staging = id_path(out_dir, case.id, ".{id}.partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    world = case_world(suite, case)
    script = case.parsed()
    cv2.imwrite(str(staging / "start.png"), cv2.cvtColor(world.image, cv2.COLOR_RGB2BGR))
    (staging / "prompt.txt").write_text(world.prompt + "\n")
    (staging / "script.txt").write_text(script.format() + "\n")
    labels = commanded_labels(script).tolist()
    (staging / "labels.json").write_text(json.dumps({
        "num_frames": script.num_frames,
        "note": "entry f-1 is the commanded label of the transition from frame f-1 to frame f",
        "labels": labels, "names": [label_name(x) for x in labels]}))
    write_controls(suite, case, staging, formats)
    staging.rename(final)
    return final


def export_suite(suite: Suite, out_dir: str | Path, on_case: Callable[[Case], None] | None = None,
                 formats: Sequence[str] = ("worldplay",)) -> Path:
    """Export every case, then write ``manifest.csv`` pointing at ``videos/<id>.mp4``; its
    ``suite`` and ``suite_hash`` columns tie the videos to this suite version, so that their
    scores (``wcbench score``) can go on the suite's leaderboard."""
    unknown = sorted(set(formats) - set(controls.FORMATS))
    if unknown:
        raise ValueError(f"unknown export format(s) {unknown}; known: {', '.join(controls.FORMATS)}")
    out_dir = Path(out_dir)
    suite_hash = suite.content_hash()
    out_dir.mkdir(parents=True, exist_ok=True)
    remove_partials(out_dir, depth=1)  # a killed export's half-written files, here and in case folders
    rows = []
    for case in suite.cases:
        export_case(suite, case, out_dir, formats)
        rows.append({"id": case.id, "video": f"videos/{case.id}.mp4", "actions": case.script,
                     "prompt": (id_path(out_dir, case.id) / "prompt.txt").read_text().strip(), "fov_deg": suite.fov_deg,
                     "step_translation": suite.step_translation, "step_degrees": suite.step_degrees,
                     "track": case.track, "horizon": case.horizon, "suite": suite.name, "suite_hash": suite_hash})
        if on_case:
            on_case(case)
    manifest = out_dir / "manifest.csv"
    write_text(manifest, csv_text(rows, list(rows[0])))
    return manifest
