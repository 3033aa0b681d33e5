"""``wcbench score --manifest``: score videos made anywhere.

A manifest is CSV or JSONL, one case per row: ``id``, ``video`` (an mp4/avi file or a folder
of numbered frames, relative paths against the manifest's folder), ``actions`` (a script),
optional ``prompt``, ``fov_deg`` (horizontal), ``step_translation``, ``step_degrees``.
A bad row fails its own case with a reason; the other cases are still scored.
"""

from __future__ import annotations

import csv
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from wcbench.actions import ScriptError, StepSizes, parse_script, script_trajectory
from wcbench.scoring.case import Scorers, score_frames, sha256_file
from wcbench.storage import write_json
from wcbench.video import VideoReadError, read_video

REQUIRED = ("id", "video", "actions")
SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")  # ids name files: no slashes, no spaces
OPTIONAL = ("prompt", "fov_deg", "step_translation", "step_degrees")


class ManifestError(ValueError):
    """The manifest as a whole is unreadable (as opposed to one bad row)."""


@dataclass
class ManifestRow:
    id: str
    video: Path
    actions: str
    prompt: str = ""
    fov_deg: float | None = None
    step_translation: float | None = None
    step_degrees: float | None = None


def _optional_float(value, name: str, row_id: str) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"case {row_id}: {name}={value!r} is not a number") from None


def read_manifest(path: str | Path) -> list[dict]:
    """Raw rows of a CSV or JSONL manifest; raises ManifestError naming the file and line."""
    path = Path(path)
    if not path.exists():
        raise ManifestError(f"{path}: manifest not found")
    if path.suffix.lower() in (".jsonl", ".json"):
        rows = []
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ManifestError(f"{path}: line {number}: not valid JSON ({err})") from err
    else:
        with path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
    if not rows:
        raise ManifestError(f"{path}: no rows")
    missing = [col for col in REQUIRED if col not in rows[0]]
    if missing:
        raise ManifestError(f"{path}: missing column(s) {missing}; needs {', '.join(REQUIRED)} "
                            f"(optional: {', '.join(OPTIONAL)})")
    ids = [str(r.get("id")) for r in rows]
    unsafe = [i for i in ids if not SAFE_ID.match(i)]
    if unsafe:
        raise ManifestError(f"{path}: id(s) {unsafe[:5]} must be letters, digits, '.', '_' or '-' "
                            "(they name the per-case record files)")
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ManifestError(f"{path}: duplicate id(s) {duplicates}")
    return rows


def parse_row(raw: dict, base: Path) -> ManifestRow:
    """One manifest row; relative video paths resolve against the manifest's folder."""
    row_id = str(raw["id"])
    video = Path(str(raw["video"]))
    return ManifestRow(
        id=row_id, video=video if video.is_absolute() else base / video, actions=str(raw["actions"]),
        prompt=str(raw.get("prompt") or ""),
        fov_deg=_optional_float(raw.get("fov_deg"), "fov_deg", row_id),
        step_translation=_optional_float(raw.get("step_translation"), "step_translation", row_id),
        step_degrees=_optional_float(raw.get("step_degrees"), "step_degrees", row_id),
    )


def score_row(raw: dict, base: Path, scorers: Scorers) -> dict:
    """The record of one manifest row: scored, or failed with the reason."""
    record = {"id": str(raw.get("id")), "track": raw.get("track"), "horizon": raw.get("horizon"),
              "status": "failed", "error": None, "script": str(raw.get("actions")),
              "prompt": str(raw.get("prompt") or ""), "video": str(raw.get("video")),
              "if_acc": None, "if_trans_acc": None, "if_rot_acc": None, "vq": None, "vq_raw": None,
              "per_clip": []}
    started = time.perf_counter()
    try:
        row = parse_row(raw, base)
        record["video"] = str(row.video)
        script = parse_script(row.actions)
        frames = read_video(row.video)
        steps = StepSizes(row.step_translation or StepSizes().translation, row.step_degrees or StepSizes().degrees)
        fields = score_frames(frames, script, scorers, prompt=row.prompt, fov_deg=row.fov_deg,
                                    commanded_poses=script_trajectory(script, steps))
    except (ScriptError, VideoReadError, ValueError, FileNotFoundError) as err:
        record["error"] = str(err)  # IO errors name the video's path; script errors the segment
        return record
    record.update(fields, status="ok", script=script.format(), num_frames=len(frames), fov_deg=row.fov_deg,
                  video_sha256=sha256_file(row.video), timing={"score_s": time.perf_counter() - started})
    return record


def score_manifest(manifest: str | Path, out_dir: str | Path, scorers: Scorers,
                   on_case: Callable[[dict], None] | None = None) -> list[dict]:
    """Score every row, writing ``out_dir/cases/<id>.json`` atomically as each finishes."""
    manifest = Path(manifest)
    rows = read_manifest(manifest)
    records = []
    for raw in rows:
        record = score_row(raw, manifest.parent, scorers)
        write_json(Path(out_dir) / "cases" / f"{record['id']}.json", record)
        records.append(record)
        if on_case:
            on_case(record)
    return records
