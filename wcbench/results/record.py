"""The case record: one case's result, written by ``wcbench run`` and ``wcbench score`` to
``DIR/cases/<id>.json`` and read by reports, ``submit`` and ``verify``.

A record is failed until it is scored. A failed record keeps what was known before the
failure (its script, prompt, and whatever the case or manifest row gave); a scored one also
carries its video and hash, per-transition labels, camera paths, confidence and timing. The
JSON is the dataclass's fields in order, with ``warnings`` and ``decoder_errors`` only when
there are any and the scored-only fields of a failed record only when known, so a record file
keeps one layout. A file with a field this dataclass does not know, or without one it needs, is
refused with an error naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from wcbench.core.ids import id_path, id_problem
from wcbench.core.storage import read_json, write_json

STATUSES = ("ok", "failed")


@dataclass
class CaseRecord:
    """One case's result. The metrics are means over the case's clips (None when failed);
    ``per_clip`` holds one dict per clip: ``clip``, ``frames`` (first and last frame), the
    three IF accuracies and ``vq``."""

    id: str
    track: str | None = None  # None for videos scored from a manifest that names no suite
    horizon: str | None = None
    status: str = "failed"
    error: str | None = None
    script: str = ""
    prompt: str = ""
    num_frames: int | None = None
    latents_per_clip: int | None = None
    fov_deg: float | None = None  # horizontal; None: the estimator's default
    if_acc: float | None = None
    if_trans_acc: float | None = None
    if_rot_acc: float | None = None
    vq: float | None = None
    vq_raw: dict[str, float | None] | None = None  # the quality scorer's components, case means
    per_clip: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, list[int]] | None = None  # "commanded" and "detected": one full label per transition
    paths: dict[str, list | None] | None = None  # "commanded" and "estimated" camera centres, first camera's axes
    confidence_mean: float | None = None
    masked_share: float | None = None  # of the frame, left out of tracking as a burnt-in overlay (mean over clips)
    mover_share: float | None = None  # of the tracks, left out as content moving on its own (mean per transition)
    undecided_share: float | None = None  # of the transitions, camera motion not told from the movers'
    warnings: list[str] = field(default_factory=list)
    video: str | None = None  # relative to the results folder (run) or where the manifest pointed (score)
    video_sha256: str | None = None
    timing: dict[str, Any] | None = None
    decoder_errors: int | None = None

    @property
    def is_ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        """The record as stored: every field in order, less those it does not carry."""
        data = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in WHEN_ANY and not value:
                continue
            if f.name in SCORED and value is None and not self.is_ok:
                continue
            data[f.name] = value
        return data

    @classmethod
    def from_dict(cls, data: Any, source: str | Path) -> CaseRecord:
        """A record from its stored form; ValueError naming ``source`` (the file) when it is not one."""
        if not isinstance(data, dict):
            raise ValueError(f"{source}: not a case record (a JSON object), but {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{source}: unknown case record field(s) {unknown}; was it written by another "
                             "wcbench version, or edited?")
        status = data.get("status")
        if status not in STATUSES:
            raise ValueError(f"{source}: case record status {status!r} is not one of {', '.join(STATUSES)}")
        needed = ALWAYS + (SCORED if status == "ok" else ())
        missing = [name for name in needed if name not in data]
        if missing:
            raise ValueError(f"{source}: case record {data.get('id', '?')!r} ({status}) lacks field(s) {missing}")
        problem = id_problem(data["id"])
        if problem:
            raise ValueError(f"{source}: case record {problem}")
        return cls(**data)


# Fields every record carries; fields a scored record always carries (a failed one only when
# known); fields only present when there is something to say.
ALWAYS = ("id", "track", "horizon", "status", "error", "script", "prompt", "if_acc", "if_trans_acc", "if_rot_acc",
          "vq", "vq_raw", "per_clip")
SCORED = ("num_frames", "latents_per_clip", "fov_deg", "labels", "paths", "confidence_mean", "video",
          "video_sha256", "timing")
WHEN_ANY = ("masked_share", "mover_share", "undecided_share", "warnings", "decoder_errors")


def record_path(results_dir: str | Path, case_id: str) -> Path:
    return id_path(results_dir, case_id, "cases/{id}.json")


def save_record(results_dir: str | Path, record: CaseRecord) -> None:
    """Write ``DIR/cases/<id>.json`` atomically: a record on disk is what makes a case done."""
    write_json(record_path(results_dir, record.id), record.to_dict())


def load_record(path: str | Path) -> CaseRecord:
    """One stored record; ValueError naming the file when it is not valid JSON or not a record."""
    return CaseRecord.from_dict(read_json(path), source=path)


def load_records(results_dir: str | Path) -> list[CaseRecord]:
    """Every ``DIR/cases/*.json`` record, ordered by file name.

    Raises ValueError naming the file when one is not a case record, and FileNotFoundError
    when DIR/cases does not exist.
    """
    cases_dir = Path(results_dir) / "cases"
    if not cases_dir.is_dir():
        raise FileNotFoundError(f"{cases_dir}: no cases folder; is {results_dir} a wcbench results directory?")
    # Hidden files are the temporary halves of atomic writes in progress: not records yet.
    return [load_record(path) for path in sorted(p for p in cases_dir.glob("*.json") if not p.name.startswith("."))]
