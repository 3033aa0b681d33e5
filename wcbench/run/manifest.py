"""``wcbench score --manifest``: score videos made anywhere.

A manifest is CSV or JSONL (UTF-8, a byte-order mark is fine), one case per row: ``id``,
``video`` (an mp4/avi file or a folder of numbered frames, relative paths against the
manifest's folder), ``actions`` (a script), optional ``prompt``, ``fov_deg`` (horizontal),
``step_translation``, ``step_degrees``, ``mask`` (a burnt-in overlay to leave out of camera
tracking: an image whose nonzero pixels cover it, or rectangles ``x,y,w,h;...`` in the video's
pixels; overrides ``score --mask``). A bad row fails its own case with a reason; the other
cases are still scored. Videos are decoded and scored clip by clip, never held whole.

A manifest written by ``wcbench export`` also names its suite (``suite``, ``suite_hash``,
``track``, ``horizon`` columns): its rows are then checked against that suite's cases, each
scored video is kept in the results folder (``videos/<id>.<ext>``, hard-linked where possible),
and the results can be submitted to the suite's leaderboard like those of ``wcbench run``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import time
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import wcbench
from wcbench.core.actions import ScriptError, parse_script
from wcbench.core.camera import StepSizes, script_trajectory
from wcbench.core.ids import id_path, id_problem
from wcbench.core.storage import atomic_path
from wcbench.core.video import VideoReadError, VideoSource
from wcbench.data.suite import Suite, SuiteError, load_suite
from wcbench.pose.overlay import UserMask
from wcbench.results.record import CaseRecord, load_record, record_path, save_record
from wcbench.results.strip import StripFrames, save_strip, strip_path
from wcbench.results.videos import sha256_file
from wcbench.run.pool import map_scored
from wcbench.run.runner import RunConfig, config_hash
from wcbench.scoring.case import CaseScorer, Scorers, frame_count_error

REQUIRED = ("id", "video", "actions")
OPTIONAL = ("prompt", "fov_deg", "step_translation", "step_degrees", "mask")


class ManifestError(ValueError):
    """The manifest as a whole is unreadable (as opposed to one bad row)."""


@dataclass
class RawRow:
    """One manifest row as read: its line in the file, its values by column, and any values
    beyond the header's columns (CSV only: a sign of unquoted commas)."""

    line: int
    values: dict
    extra: list = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.values.get("id"))


@dataclass
class ManifestRow:
    id: str
    video: Path
    actions: str
    prompt: str = ""
    fov_deg: float | None = None
    step_translation: float | None = None
    step_degrees: float | None = None
    mask: str | None = None  # as the manifest gives it (see the module doc)


def _optional_float(value, name: str, row_id: str) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"case {row_id}: {name}={value!r} is not a number") from None


def _decode(path: Path) -> str:
    """The file as text: UTF-8 with any byte-order mark dropped; otherwise an error naming the line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise ManifestError(f"{path}: line {line}: not UTF-8 (byte 0x{data[err.start]:02x}); save the manifest "
                            "as UTF-8") from None


def _read_rows(path: Path, text: str) -> list[RawRow]:
    if path.suffix.lower() in (".jsonl", ".json"):
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                values = json.loads(line)
            except json.JSONDecodeError as err:
                raise ManifestError(f"{path}: line {number}: not valid JSON ({err})") from err
            if not isinstance(values, dict):
                raise ManifestError(f"{path}: line {number}: each line must be a JSON object")
            rows.append(RawRow(number, values))
        return rows
    reader = csv.DictReader(io.StringIO(text, newline=""), restkey="\0extra")
    rows = []
    for values in reader:
        extra = values.pop("\0extra", None) or []
        rows.append(RawRow(reader.line_num, values, extra))
    return rows


def read_manifest(path: str | Path) -> list[RawRow]:
    """The rows of a CSV or JSONL manifest; raises ManifestError naming the file (and line)."""
    path = Path(path)
    if not path.exists():
        raise ManifestError(f"{path}: manifest not found")
    if path.is_dir():
        raise ManifestError(f"{path} is a folder; give the manifest file inside it (CSV or JSONL), "
                            f"e.g. {path / 'manifest.csv'}")
    rows = _read_rows(path, _decode(path))
    if not rows:
        raise ManifestError(f"{path}: no rows")
    missing = [col for col in REQUIRED if col not in rows[0].values]
    if missing:
        raise ManifestError(f"{path}: missing column(s) {missing}; needs {', '.join(REQUIRED)} "
                            f"(optional: {', '.join(OPTIONAL)})")
    ids = [row.id for row in rows]
    for row in rows:
        problem = id_problem(row.values.get("id"))
        if problem:
            raise ManifestError(f"{path}: line {row.line}: {problem}")
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ManifestError(f"{path}: duplicate id(s) {duplicates}")
    return rows


def manifest_hash(path: str | Path) -> str:
    """Content hash of the manifest file: what a results folder made by ``score`` is tied to."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def manifest_suite(rows: list[RawRow], path: Path, suite_path: str | None = None) -> Suite | None:
    """The suite the manifest was exported from (``suite``/``suite_hash`` columns), or the one
    ``suite_path`` names; None for a manifest of free-standing videos. Raises ManifestError when
    the suite cannot be found or is not the version the manifest was exported from."""
    declared = {(str(r.values.get("suite") or ""), str(r.values.get("suite_hash") or "")) for r in rows}
    if len(declared) > 1:
        raise ManifestError(f"{path}: rows name different suites {sorted(declared)[:3]}; one manifest, one suite")
    name, expected_hash = declared.pop()
    if not name and not suite_path:
        return None
    try:
        suite = load_suite(suite_path or name)
    except SuiteError as err:
        raise ManifestError(f"{path}: exported from suite {name!r}, which this wcbench cannot load ({err}); "
                            "pass --suite with the suite's YAML file") from err
    if expected_hash and suite.content_hash() != expected_hash:
        raise ManifestError(f"{path}: exported from suite {name!r} with hash {expected_hash}, but this suite "
                            f"{suite.name!r} has hash {suite.content_hash()}; re-export with `wcbench export`")
    return suite


def score_header(manifest: Path, scorers: Scorers, model_name: str, suite: Suite | None,
                 mask: str | None = None, shard: tuple[int, int] | None = None) -> dict:
    """What ``run.json`` and results.json record about a ``score`` folder (``shard``: the
    share of the manifest it holds, ``"i/N"``; absent for the whole manifest)."""
    run = RunConfig(model=model_name)
    header = {"command": "score", "version": wcbench.__version__, **scorers.header(),
              "manifest": str(manifest.resolve()), "manifest_hash": manifest_hash(manifest), "model": model_name,
              "model_name": model_name, "model_options": {}, "seed": run.seed, "config_hash": config_hash(run, scorers)}
    if mask:
        header["mask"] = mask
    if shard is not None:
        header["shard"] = f"{shard[0]}/{shard[1]}"
    if suite is not None:
        header.update(suite=suite.name, suite_source=suite.source, suite_hash=suite.content_hash())
    return header


def parse_row(raw: RawRow, base: Path) -> ManifestRow:
    """One manifest row; relative video paths resolve against the manifest's folder."""
    values, row_id = raw.values, raw.id
    if raw.extra:
        raise ValueError(f"line {raw.line}: {len(raw.extra)} more field(s) than the header has columns: "
                         f"an actions script with commas must be quoted, e.g. \"w-3, d-2\"")
    # absolute, so that the record finds its video from wherever report, submit or verify run
    video = (base / Path(str(values["video"]))).absolute()
    return ManifestRow(
        id=row_id, video=video, actions=str(values["actions"]),
        prompt=str(values.get("prompt") or ""),
        fov_deg=_optional_float(values.get("fov_deg"), "fov_deg", row_id),
        step_translation=_optional_float(values.get("step_translation"), "step_translation", row_id),
        step_degrees=_optional_float(values.get("step_degrees"), "step_degrees", row_id),
        mask=str(values["mask"]).strip() if str(values.get("mask") or "").strip() else None,
    )


def _check_against_suite(row: ManifestRow, suite: Suite) -> dict:
    """The suite's case for a row (track, horizon, latents per clip); ValueError when the row
    is not that case as exported."""
    case = next((c for c in suite.cases if c.id == row.id), None)
    if case is None:
        raise ValueError(f"case {row.id} is not in suite {suite.name!r}")
    if parse_script(row.actions).format() != case.script:
        raise ValueError(f"case {row.id}: actions {row.actions!r} are not suite {suite.name!r}'s "
                         f"script {case.script!r}")
    for name, value, wanted in (("fov_deg", row.fov_deg, suite.fov_deg),
                                ("step_translation", row.step_translation, suite.step_translation),
                                ("step_degrees", row.step_degrees, suite.step_degrees)):
        if value is not None and abs(value - wanted) > 1e-9:
            raise ValueError(f"case {row.id}: {name}={value:g} but suite {suite.name!r} has {wanted:g}")
    return {"track": case.track, "horizon": case.horizon, "latents_per_clip": suite.latents_per_clip}


def _check_length(source: VideoSource, script) -> None:
    """Refuse a video of the wrong length before scoring any of it, when its container says so
    (and counting confirms: some containers only estimate); the scorer checks again at the end."""
    stated = source.stated_frame_count()
    if stated and stated != script.num_frames:
        actual = source.count_frames()
        if actual != script.num_frames:
            raise ValueError(frame_count_error(actual, script))


def _decoder_warning(source: VideoSource, video: Path) -> list[str]:
    messages = source.decoder_messages
    if not messages:
        return []
    return [f"the decoder reported {len(messages)} error(s) in {video}: frames may be damaged "
            f"(first: {messages[0]})"]


def score_row(raw: RawRow, base: Path, scorers: Scorers, suite: Suite | None = None,
              mask: str | None = None) -> tuple[CaseRecord, StripFrames | None]:
    """The record of one manifest row (scored, or failed with the reason) and, when scored, the
    report's strip frames, kept as the video streamed past (:mod:`wcbench.results.strip`). ``mask``:
    the overlay mask of rows that give none (``score --mask``)."""
    values = raw.values
    record = CaseRecord(id=raw.id, track=values.get("track"), horizon=values.get("horizon"),
                        script=str(values.get("actions")), prompt=str(values.get("prompt") or ""),
                        video=str(values.get("video")))
    started = time.perf_counter()
    source = None
    try:
        row = parse_row(raw, base)
        record.video = str(row.video)
        script = parse_script(row.actions)
        if suite is not None:
            record = replace(record, **_check_against_suite(row, suite))
        latents_per_clip = record.latents_per_clip or 4
        steps = StepSizes(row.step_translation or StepSizes().translation, row.step_degrees or StepSizes().degrees)
        spec = row.mask or mask
        scorer = CaseScorer(script, scorers, prompt=row.prompt, fov_deg=row.fov_deg, latents_per_clip=latents_per_clip,
                            mask=UserMask(spec, base) if spec else None)
        source = VideoSource(row.video)
        _check_length(source, script)
        strip = StripFrames(script.num_frames)
        for frame in source:
            scorer.add(frame[None])
            strip.add(frame[None])
        fields = scorer.finish(commanded_poses=script_trajectory(script, steps))
    except (ScriptError, VideoReadError, ValueError, OSError) as err:
        record.error = str(err)  # IO errors name the video's path; script errors the segment
        if source is not None and source.decoder_messages:
            record.error += f" ({_decoder_warning(source, row.video)[0]})"
        return record, None
    record = replace(record, **fields, status="ok", script=script.format(), num_frames=scorer.num_frames,
                     fov_deg=row.fov_deg, latents_per_clip=latents_per_clip, video_sha256=sha256_file(row.video),
                     timing={"score_s": time.perf_counter() - started})
    warnings = _decoder_warning(source, row.video)
    if warnings:
        record.warnings = record.warnings + warnings
        record.decoder_errors = len(source.decoder_messages)
    return record, strip


def keep_video(out_dir: Path, record: CaseRecord) -> CaseRecord:
    """Put a scored video inside the results folder, as ``videos/<id><suffix>`` (a folder of
    frames as ``videos/<id>/``), and point the record there: a submission holds its own videos.
    A hard link where the file system allows one (no second copy on disk), a copy otherwise."""
    source = Path(str(record.video))
    suffix = "" if source.is_dir() else source.suffix.lower()
    target = id_path(out_dir, record.id, "videos/{id}" + suffix)
    if source.is_dir():
        staging = id_path(out_dir, record.id, "videos/.{id}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(source, staging, copy_function=_link_or_copy)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    else:
        with atomic_path(target) as tmp:
            tmp.unlink()
            _link_or_copy(source, tmp)
    return replace(record, video=str(target.relative_to(out_dir)))


def _link_or_copy(source: str | Path, target: str | Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or one without hard links
        shutil.copy2(source, target)


def _is_current(out_dir: Path, raw: RawRow, base: Path) -> bool:
    """A row already scored ok in ``out_dir`` from the video that is there now."""
    path = record_path(out_dir, raw.id)
    if not path.exists():
        return False
    try:
        record = load_record(path)
        video = parse_row(raw, base).video
        return record.is_ok and record.video_sha256 == sha256_file(video)
    except (ValueError, OSError):
        return False


@dataclass(frozen=True)
class RowJob:
    """One manifest row to score, with what :func:`score_row` needs besides the scorers (what a
    pool worker receives: no frames, it opens the video itself)."""

    raw: RawRow
    base: Path
    suite: Suite | None = None
    mask: str | None = None


def score_job(job: RowJob, scorers: Scorers) -> tuple[CaseRecord, StripFrames | None]:
    """:func:`score_row` of one job (the function :func:`wcbench.run.pool.map_scored` runs)."""
    return score_row(job.raw, job.base, scorers, job.suite, job.mask)


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/N"`` (0 <= i < N) as (i, N); ValueError naming the problem otherwise."""
    index, slash, count = text.partition("/")
    try:
        index_value, count_value = int(index), int(count)
    except ValueError:
        index_value = count_value = -1
    if not slash or not 0 <= index_value < count_value:
        raise ValueError(f"--shard {text!r}: give i/N with 0 <= i < N, e.g. 0/4 for the first of four shards")
    return index_value, count_value


def shard_rows(rows: list[RawRow], shard: tuple[int, int] | None) -> list[RawRow]:
    """The rows shard (i, N) scores (or rank i of N processes): every N-th row from the i-th,
    in the manifest's order, so that N shards cover each row once whatever machine runs them;
    all rows without a shard."""
    if shard is None:
        return rows
    index, count = shard
    return rows[index::count]


def score_manifest(manifest: str | Path, out_dir: str | Path, scorers: Scorers, suite: Suite | None = None,
                   on_case: Callable[[CaseRecord], None] | None = None, mask: str | None = None,
                   workers: int = 1, shard: tuple[int, int] | None = None,
                   ranks: tuple[int, int] = (0, 1)) -> list[CaseRecord]:
    """Score every row (of ``shard`` (i, N) only, when given; of that, this process's share
    ``ranks`` (rank, processes) under ``accelerate launch``) into ``out_dir/cases/<id>.json``,
    atomically; returns the records written. A rerun skips rows already scored from the same
    video. ``mask``: the overlay mask of rows without a ``mask`` column value. ``workers``
    processes score rows side by side (:func:`wcbench.run.pool.map_scored`); records are
    written, and ``on_case`` called, in the manifest's order whatever their number."""
    manifest, out_dir = Path(manifest), Path(out_dir)
    rows = shard_rows(shard_rows(read_manifest(manifest), shard), ranks)
    todo = [raw for raw in rows if not _is_current(out_dir, raw, manifest.parent)]
    todo_ids = {raw.id for raw in todo}
    records = []
    jobs = [RowJob(raw, manifest.parent, suite, mask) for raw in todo]
    with closing(map_scored(score_job, jobs, scorers, workers)) as scored:  # closing: stops the pool on an error
        for raw in rows:
            if raw.id not in todo_ids:
                record = load_record(record_path(out_dir, raw.id))
            else:
                record, strip = next(scored)
                if suite is not None and record.is_ok:  # submittable: the folder must hold its videos
                    record = keep_video(out_dir, record)
                if strip is not None:  # before the record: a record is what makes a case done
                    save_strip(strip_path(out_dir, record.id), strip, record.video_sha256)
                save_record(out_dir, record)
                records.append(record)
            if on_case:
                on_case(record)
    return records
