"""``wcbench run``: generate every case of a suite with a world model, store it, score it.

Per case: reset the model on the start image, step it clip by clip with the case's actions,
check each clip (frame count, shape, dtype, NaN), append it to the case's video and score it
as soon as it is complete, so that memory holds one clip, never the whole video. The video
and then the record are written atomically. A rerun into the same folder skips finished
cases; a folder made by another command, suite or config is refused (:mod:`wcbench.results.outdir`).
Cases are split across processes (``accelerate launch``) by index; every rank writes its own
records and rank 0 merges them, so N processes give the same results as one.

Every call into the model runs under a time limit (``timeout_s``); a model that raises, hangs
or returns bad frames fails its own case (with the traceback in ``cases/<id>.log``) and the
run goes on.
"""

from __future__ import annotations

import hashlib
import json
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

import cv2
import numpy as np

import wcbench
from wcbench.core.actions import clip_step_ranges
from wcbench.core.deadline import CallTimeout, time_limit
from wcbench.core.environment import hardware, hardware_label, peak_memory_mb
from wcbench.core.ids import id_path
from wcbench.core.storage import write_text
from wcbench.core.video import video_writer
from wcbench.data.suite import Case, Suite
from wcbench.models.base import CaseInfo, WorldModel
from wcbench.models.frames import FrameError, to_video
from wcbench.run.isolated import ModelProcessError
from wcbench.data.scenes import case_world
from wcbench.results.record import CaseRecord, load_record, record_path, save_record
from wcbench.results.strip import StripFrames, save_strip, strip_path
from wcbench.results.videos import sha256_file
from wcbench.run.background import CaseScore, CaseSpec, InlineScoring, Scoring, build_scoring
from wcbench.scoring.case import Scorers

DEFAULT_TIMEOUT_S = 600.0
VIDEO_TEMPLATE = "videos/{id}.avi"  # a case's lossless video, relative to the results folder


class ModelOutputError(RuntimeError):
    """A model returned frames the harness cannot accept."""


class ModelFailure(RuntimeError):
    """A model raised; ``trace`` is its formatted traceback."""

    def __init__(self, message: str, trace: str):
        super().__init__(message)
        self.trace = trace


@dataclass
class RunConfig:
    """Everything besides the suite that decides a run's numbers (``timeout_s`` does not: it
    only decides whether a slow case gets a number at all)."""

    model: str
    model_options: dict = field(default_factory=dict)
    seed: int = 0
    timeout_s: float = DEFAULT_TIMEOUT_S
    mask: str | None = None  # a burnt-in overlay the model draws, left out of camera tracking (run --mask)

    def case_seed(self, case_id: str) -> int:
        digest = hashlib.sha256(f"{self.seed}:{case_id}".encode()).digest()
        return int.from_bytes(digest[:4], "little")


@dataclass(frozen=True)
class Placement:
    """Where this process runs; models read it from CaseInfo. Not part of the config hash."""

    device: str = "cpu"
    rank: int = 0
    world_size: int = 1


def config_hash(run: RunConfig, scorers: Scorers) -> str:
    payload = {"model": run.model, "model_options": run.model_options, "seed": run.seed, **scorers.header()}
    if run.mask:  # only when given, so that the hashes of runs without one stay as they were
        payload["mask"] = run.mask
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def run_header(suite: Suite, run: RunConfig, scorers: Scorers) -> dict:
    """What ``run.json`` and results.json record about a run (the whole suite, even when
    ``--limit`` runs only its first cases, so that the folder can be extended to all of them)."""
    return {"command": "run", "version": wcbench.__version__, **scorers.header(), "suite": suite.name,
            "suite_source": suite.source, "suite_hash": suite.content_hash(), "model": run.model,
            "model_options": run.model_options, "seed": run.seed, "config_hash": config_hash(run, scorers),
            **({"mask": run.mask} if run.mask else {})}


def _check_frames(frames: Any, expected: int, shape: tuple[int, int] | None, case_id: str, clip: int) -> np.ndarray:
    where = f"case {case_id}, " + (f"clip {clip}" if clip >= 0 else "reset")
    try:
        frames = to_video(frames)
    except FrameError as err:
        raise ModelOutputError(f"{where}: {err}") from err
    if len(frames) != expected:
        raise ModelOutputError(f"{where}: expected {expected} frames (4 per latent step), got {len(frames)}")
    if shape is not None and frames.shape[1:3] != shape:
        raise ModelOutputError(f"{where}: frames are {frames.shape[2]}x{frames.shape[1]}, "
                               f"the video so far is {shape[1]}x{shape[0]}")
    return frames


def _call_model(call: Callable[[], Any], what: str, timeout_s: float) -> tuple[Any, float]:
    """Call into the model under the time limit; returns (result, seconds). A model's
    exception becomes :class:`ModelFailure` carrying its traceback."""
    started = time.perf_counter()
    with time_limit(timeout_s, what):
        try:
            result = call()
        except ModelProcessError as err:  # raised in the model's own process: its traceback is the one to keep
            raise ModelFailure(f"{what} failed: {err}", err.trace) from err
        except Exception as err:  # noqa: BLE001 - any model failure fails this case only
            raise ModelFailure(f"{what} failed: {type(err).__name__}: {err}", traceback.format_exc()) from err
    return result, time.perf_counter() - started


class CaseGeneration:
    """One case being generated: :meth:`clips` drives the model (reset, then a step per clip,
    each call under the time limit) and yields frame 0 and then each checked clip, so that the
    caller can store and score them as they come; the timing accumulates meanwhile."""

    def __init__(self, model: WorldModel, suite: Suite, case: Case, seed: int, timeout_s: float = 0.0,
                 label: str = "model", placement: Placement = Placement()):
        self.model, self.suite, self.case, self.seed = model, suite, case, seed
        self.timeout_s, self.label, self.placement = timeout_s, f"{label}, case {case.id}", placement
        self.world = case_world(suite, case)
        self.latencies: list[float] = []
        self.generate_s = 0.0

    def clips(self) -> Iterator[np.ndarray]:
        suite, case, world, placement = self.suite, self.case, self.world, self.placement
        script = case.parsed()
        info = CaseInfo(id=case.id, script=script, commanded_poses=world.poses, K=world.K, fov_deg=suite.fov_deg,
                        resolution=suite.resolution, latents_per_clip=suite.latents_per_clip, steps=suite.steps,
                        device=placement.device, rank=placement.rank, world_size=placement.world_size,
                        scene=world.scene)
        image = world.image
        resolution = getattr(self.model, "resolution", None)
        if resolution is not None and tuple(resolution) != suite.resolution:
            image = cv2.resize(image, tuple(resolution), interpolation=cv2.INTER_AREA)
        first, self.generate_s = _call_model(lambda: self.model.reset(image, world.prompt, self.seed, info),
                                             f"{self.label}: reset", self.timeout_s)
        frames = _check_frames(first, 1, None, case.id, -1)
        shape = frames.shape[1:3]
        yield frames
        steps = script.step_actions()
        for clip, step_range in enumerate(clip_step_ranges(script.num_steps, suite.latents_per_clip)):
            actions = [steps[i - 1] for i in step_range]
            out, seconds = _call_model(lambda: self.model.step(actions), f"{self.label}: clip {clip}", self.timeout_s)
            self.latencies.append(seconds)
            self.generate_s += seconds
            yield _check_frames(out, 4 * len(step_range), shape, case.id, clip)

    def timing(self) -> dict:
        """Generation time, per-clip latency, frames per second, peak memory and the hardware."""
        return {"generate_s": self.generate_s, "clip_latency_s": self.latencies,
                "fps": (self.case.num_frames - 1) / max(self.generate_s, 1e-9),
                # a model in its own process (IsolatedModel) reports that process's peak
                "peak_mem_mb": max(peak_memory_mb(), getattr(self.model, "peak_memory_mb", 0.0)),
                "hardware": hardware_label(hardware())}


def generate_case(model: WorldModel, suite: Suite, case: Case, seed: int,
                  placement: Placement = Placement()) -> tuple[np.ndarray, dict, Any]:
    """The whole video of one case in memory, its timing and world (for short cases: tests, speed
    benchmarks; :func:`run_case` streams instead)."""
    generation = CaseGeneration(model, suite, case, seed, placement=placement)
    video = np.concatenate(list(generation.clips()))
    return video, generation.timing(), generation.world


def generate_case_into(model: WorldModel, suite: Suite, case: Case, run: RunConfig, scoring: Scoring,
                       writer: Any, on_clip: Callable[[], None] | None = None,
                       placement: Placement = Placement(),
                       strip: StripFrames | None = None) -> tuple[dict, Any]:
    """Drive the model through one case, appending each clip to ``writer`` and handing it to
    ``scoring`` as it comes (and keeping the report's strip frames in ``strip``); returns
    (timing, the case's world). The case is finished in ``scoring`` (its score comes back from
    ``scoring.results()``) when the model made it whole, and aborted there when not."""
    generation = CaseGeneration(model, suite, case, run.case_seed(case.id), run.timeout_s, f"model {run.model!r}",
                                placement)
    world = generation.world
    started, sent_poses = False, 0
    try:
        for frames in generation.clips():
            # the poses the frames really show (oracle renders), which the gt estimator reads
            rendered = getattr(model, "rendered_poses", None)
            if not started:  # after reset
                scoring.start(case.id, CaseSpec(case.parsed(), world.prompt, suite.fov_deg, suite.latents_per_clip,
                                                run.mask, Path.cwd(), uses_true_poses=rendered is not None))
                started = True
            elif on_clip:
                on_clip()
            writer.write(frames)
            if strip is not None:
                strip.add(frames)
            scoring.add(case.id, frames, None if rendered is None else list(rendered[sent_poses:]))
            sent_poses = 0 if rendered is None else len(rendered)
    except BaseException:
        if started:
            scoring.abort(case.id)
        raise
    scoring.finish(case.id, world.poses)
    return generation.timing(), world


@dataclass
class GeneratedCase:
    """A case the model made whole and stored, waiting for its score."""

    record: CaseRecord
    strip: StripFrames
    timing: dict


def generate_case_stored(model: WorldModel, suite: Suite, case: Case, run: RunConfig, scoring: Scoring,
                         out_dir: Path, on_clip: Callable[[], None] | None = None,
                         placement: Placement = Placement()) -> GeneratedCase | CaseRecord:
    """Generate and store one case, handing its clips to ``scoring``; a model failure gives a
    failed record, not an exception."""
    record = CaseRecord(id=case.id, track=case.track, horizon=case.horizon, script=case.script, prompt=case.prompt,
                        num_frames=case.num_frames, latents_per_clip=suite.latents_per_clip, fov_deg=suite.fov_deg)
    video_path = id_path(out_dir, case.id, VIDEO_TEMPLATE)
    log_path = id_path(out_dir, case.id, "cases/{id}.log")
    strip = StripFrames(case.num_frames)
    try:
        with video_writer(video_path, fps=getattr(model, "fps", suite.fps)) as writer:
            timing, world = generate_case_into(model, suite, case, run, scoring, writer, on_clip, placement, strip)
    except ModelFailure as err:
        write_text(log_path, err.trace)
        record.error = f"{err} (traceback: cases/{log_path.name})"
        return record
    except (ModelOutputError, CallTimeout) as err:
        record.error = str(err)
        return record
    log_path.unlink(missing_ok=True)  # an earlier attempt's failure is history now
    return GeneratedCase(replace(record, prompt=world.prompt, video=VIDEO_TEMPLATE.format(id=case.id)), strip,
                         timing)


def scored_record(out_dir: Path, generated: GeneratedCase, score: CaseScore) -> CaseRecord:
    """The record of a generated case from its score; stores the report's strip frames first.
    A video no scorer can measure (:class:`~wcbench.scoring.case.UnscorableVideo`: frames too
    small, all flat) fails its case and its video is deleted, as a model failure leaves none;
    scoring that raised otherwise (a bug, not a model failure) stops the run, as it would inline."""
    if score.unscorable:
        (out_dir / generated.record.video).unlink(missing_ok=True)
        return replace(generated.record, video=None, error=score.unscorable)
    if score.error:
        raise RuntimeError(f"scoring case {generated.record.id} failed:\n{score.error}")
    video_sha256 = sha256_file(out_dir / generated.record.video)
    save_strip(strip_path(out_dir, generated.record.id), generated.strip, video_sha256)  # before the record
    return replace(generated.record, **score.fields, status="ok", video_sha256=video_sha256,
                   timing={**generated.timing, "score_s": score.score_s})


def run_case(model: WorldModel, suite: Suite, case: Case, run: RunConfig, scorers: Scorers, out_dir: Path,
             on_clip: Callable[[], None] | None = None, placement: Placement = Placement()) -> CaseRecord:
    """Generate, store and score one case in this process; a model failure gives a failed record."""
    with InlineScoring(scorers) as scoring:
        generated = generate_case_stored(model, suite, case, run, scoring, out_dir, on_clip, placement)
        if isinstance(generated, CaseRecord):
            return generated
        return scored_record(out_dir, generated, next(scoring.results()))


def is_finished(out_dir: Path, case_id: str) -> bool:
    """A case scored in an earlier (interrupted) run; an unreadable record is run again."""
    path = record_path(out_dir, case_id)
    if not path.exists():
        return False
    try:
        return load_record(path).is_ok
    except ValueError:
        return False


def shard(cases: tuple[Case, ...], rank: int, world_size: int) -> list[Case]:
    """The cases one process runs: every world_size-th, starting at its rank."""
    return list(cases[rank::world_size])


def run_suite(suite: Suite, model: WorldModel, run: RunConfig, scorers: Scorers, out_dir: Path, *,
              rank: int = 0, world_size: int = 1, limit: int = 0, progress: Any = None,
              device: str = "cpu", score_workers: int = 0) -> list[CaseRecord]:
    """Run this rank's share of the suite (its first ``limit`` cases when ``limit`` > 0) into
    ``out_dir``, which the caller has claimed (:func:`wcbench.results.outdir.claim_out_dir`); returns
    the records it wrote, in the suite's order.

    ``progress`` is an optional rich Progress; finished cases (from an earlier, interrupted
    run) are skipped, so a rerun finishes the rest. ``device`` reaches the model in CaseInfo.
    ``score_workers`` > 0 scores in that many background processes while the model goes on
    with the next clip and case (:mod:`wcbench.run.background`); 0 scores between its calls.
    """
    placement = Placement(device, rank, world_size)
    cases = suite.cases[:limit] if limit > 0 else suite.cases
    todo = [case for case in shard(cases, rank, world_size) if not is_finished(out_dir, case.id)]
    n_clips = sum(len(clip_step_ranges(c.parsed().num_steps, suite.latents_per_clip)) for c in todo)
    case_task = progress.add_task("cases", total=len(todo)) if progress else None
    clip_task = progress.add_task("clips", total=n_clips) if progress else None
    records: list[CaseRecord] = []
    waiting: dict[str, GeneratedCase] = {}  # generated and stored, score not back yet

    def save(record: CaseRecord) -> None:
        save_record(out_dir, record)
        records.append(record)
        if progress:
            progress.advance(case_task)

    def collect(scoring: Scoring, wait: bool) -> None:
        for score in scoring.results(wait):
            save(scored_record(out_dir, waiting.pop(score.key), score))

    with build_scoring(scorers, score_workers) as scoring:
        for case in todo:
            if progress:
                progress.update(case_task, description=f"case {case.id}")
            generated = generate_case_stored(model, suite, case, run, scoring, out_dir,
                                             on_clip=(lambda: progress.advance(clip_task)) if progress else None,
                                             placement=placement)
            if isinstance(generated, CaseRecord):  # the model failed it
                save(generated)
            else:
                waiting[case.id] = generated
            collect(scoring, wait=False)
        collect(scoring, wait=True)
    order = {case.id: index for index, case in enumerate(todo)}
    return sorted(records, key=lambda record: order[record.id])


def interactivity(records: list[CaseRecord], reports_speed: bool = True) -> dict:
    """Per-model generation speed: mean clip latency, frames per second, peak memory, and the
    hardware they were measured on. Empty for stand-in models whose speed says nothing about
    a world model (``reports_speed`` False: oracle renders, replayed videos). Without one
    hardware for every timed case (a resume elsewhere) there is no frames/s."""
    timed = [r.timing for r in records if r.is_ok and (r.timing or {}).get("clip_latency_s")]
    if not timed or not reports_speed:
        return {}
    latencies = [x for t in timed for x in t["clip_latency_s"]]
    machines = sorted({t.get("hardware", "unknown") for t in timed})
    speed = {"clip_latency_s": float(np.mean(latencies)), "clip_latency_p95_s": float(np.percentile(latencies, 95)),
             "peak_mem_mb": float(max(t["peak_mem_mb"] for t in timed)), "hardware": "; ".join(machines)}
    if len(machines) == 1 and machines[0] != "unknown":
        speed["fps"] = float(np.mean([t["fps"] for t in timed]))
    return speed
