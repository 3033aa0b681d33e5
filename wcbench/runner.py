"""``wcbench run``: generate every case of a suite with a world model, store it, score it.

Per case: reset the model on the start image, step it clip by clip with the case's actions,
check each clip (frame count, shape, dtype, NaN), write the video and then the record
atomically, score with the shared scorers. A rerun into the same folder skips finished
cases; a folder made with another suite or config is refused. Cases are split across
processes (``accelerate launch``) by index; every rank writes its own records and rank 0
merges them, so N processes give the same results as one.
"""

from __future__ import annotations

import hashlib
import json
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

import wcbench
from wcbench.actions import clip_step_ranges
from wcbench.models.base import CaseInfo, WorldModel
from wcbench.models.frames import FrameError, to_video
from wcbench.scenes import case_world
from wcbench.scoring.case import Scorers, score_frames, sha256_file
from wcbench.storage import read_json, write_json
from wcbench.suite import Case, Suite
from wcbench.video import write_video


class RunMismatchError(RuntimeError):
    """An output folder holds a run of another suite or config."""


class ModelOutputError(RuntimeError):
    """A model returned frames the harness cannot accept."""


@dataclass
class RunConfig:
    """Everything besides the suite that decides a run's numbers."""

    model: str
    model_options: dict = field(default_factory=dict)
    seed: int = 0

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
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def run_header(suite: Suite, run: RunConfig, scorers: Scorers) -> dict:
    return {"version": wcbench.__version__, **scorers.header(), "suite": suite.name,
            "suite_source": suite.source, "suite_hash": suite.content_hash(), "model": run.model, "model_options": run.model_options,
            "seed": run.seed, "config_hash": config_hash(run, scorers)}


def check_out_dir(out_dir: Path, header: dict) -> None:
    """Refuse to mix runs: an existing run.json must have the same suite and config hash."""
    stored_path = out_dir / "run.json"
    if not stored_path.exists():
        return
    stored = read_json(stored_path)
    for key, what in (("suite_hash", "suite"), ("config_hash", "model/scorer config")):
        if stored.get(key) != header[key]:
            raise RunMismatchError(
                f"{out_dir} holds a run with another {what} ({key} {stored.get(key)} != {header[key]}; "
                f"suite {stored.get('suite')!r}, model {stored.get('model')!r}). Use a new --out folder, "
                "or delete this one to start over.")


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


def _peak_memory_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.cuda.is_available():
            peak = max(peak, torch.cuda.max_memory_allocated() / 2**20)
    return peak


def generate_case(model: WorldModel, suite: Suite, case: Case, seed: int,
                  on_clip: Callable[[], None] | None = None,
                  placement: Placement = Placement()) -> tuple[np.ndarray, dict, Any]:
    """Drive the model through one case; returns frames, timing and the case's world."""
    world = case_world(suite, case)
    script = case.parsed()
    info = CaseInfo(id=case.id, script=script, commanded_poses=world.poses, K=world.K, fov_deg=suite.fov_deg,
                    resolution=suite.resolution, latents_per_clip=suite.latents_per_clip, steps=suite.steps,
                    device=placement.device, rank=placement.rank, world_size=placement.world_size,
                    scene=world.scene)
    image = world.image
    resolution = getattr(model, "resolution", None)
    if resolution is not None and tuple(resolution) != suite.resolution:
        import cv2

        image = cv2.resize(image, tuple(resolution), interpolation=cv2.INTER_AREA)
    started = time.perf_counter()
    frames = [_check_frames(model.reset(image, world.prompt, seed, info), 1, None, case.id, -1)]
    shape = frames[0].shape[1:3]
    steps = script.step_actions()
    latencies = []
    for clip, step_range in enumerate(clip_step_ranges(script.num_steps, suite.latents_per_clip)):
        clip_start = time.perf_counter()
        out = model.step([steps[i - 1] for i in step_range])
        latencies.append(time.perf_counter() - clip_start)
        frames.append(_check_frames(out, 4 * len(step_range), shape, case.id, clip))
        if on_clip:
            on_clip()
    elapsed = time.perf_counter() - started
    video = np.concatenate(frames)
    timing = {"generate_s": elapsed, "clip_latency_s": latencies, "fps": (len(video) - 1) / max(elapsed, 1e-9),
              "peak_mem_mb": _peak_memory_mb()}
    return video, timing, world


def run_case(model: WorldModel, suite: Suite, case: Case, run: RunConfig, scorers: Scorers, out_dir: Path,
             on_clip: Callable[[], None] | None = None, placement: Placement = Placement()) -> dict:
    """Generate, store and score one case; a model failure gives a failed record, not an exception."""
    record: dict[str, Any] = {"id": case.id, "track": case.track, "horizon": case.horizon, "status": "failed",
                              "error": None, "script": case.script, "prompt": case.prompt,
                              "num_frames": case.num_frames, "latents_per_clip": suite.latents_per_clip,
                              "fov_deg": suite.fov_deg, "if_acc": None, "if_trans_acc": None,
                              "if_rot_acc": None, "vq": None, "vq_raw": None, "per_clip": []}
    try:
        video, timing, world = generate_case(model, suite, case, run.case_seed(case.id), on_clip, placement)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as err:  # noqa: BLE001 - any model failure fails this case only
        record["error"] = f"model {run.model!r} failed: {type(err).__name__}: {err}"
        return record
    record["prompt"] = world.prompt
    video_path = out_dir / "videos" / f"{case.id}.avi"
    write_video(video_path, video, fps=getattr(model, "fps", suite.fps))
    started = time.perf_counter()
    true_poses = getattr(model, "rendered_poses", None)
    fields = score_frames(video, case.parsed(), scorers, prompt=world.prompt, fov_deg=suite.fov_deg,
                                latents_per_clip=suite.latents_per_clip, commanded_poses=world.poses,
                                true_poses=None if true_poses is None else np.asarray(true_poses))
    timing["score_s"] = time.perf_counter() - started
    record.update(fields, status="ok", video=f"videos/{case.id}.avi", video_sha256=sha256_file(video_path),
                  timing=timing)
    return record


def is_finished(out_dir: Path, case_id: str) -> bool:
    path = out_dir / "cases" / f"{case_id}.json"
    if not path.exists():
        return False
    try:
        return read_json(path).get("status") == "ok"
    except ValueError:
        return False


def shard(cases: tuple[Case, ...], rank: int, world_size: int) -> list[Case]:
    """The cases one process runs: every world_size-th, starting at its rank."""
    return list(cases[rank::world_size])


def run_suite(suite: Suite, model: WorldModel, run: RunConfig, scorers: Scorers, out_dir: Path, *,
              rank: int = 0, world_size: int = 1, progress: Any = None, device: str = "cpu") -> list[dict]:
    """Run this rank's share of the suite into ``out_dir``; returns the records it wrote.

    ``progress`` is an optional rich Progress; finished cases (from an earlier, interrupted
    run) are skipped, so a rerun finishes the rest. ``device`` reaches the model in CaseInfo.
    """
    placement = Placement(device, rank, world_size)
    header = run_header(suite, run, scorers)
    check_out_dir(out_dir, header)
    if rank == 0 and not (out_dir / "run.json").exists():
        write_json(out_dir / "run.json", header)
    todo = [case for case in shard(suite.cases, rank, world_size) if not is_finished(out_dir, case.id)]
    n_clips = sum(len(clip_step_ranges(c.parsed().num_steps, suite.latents_per_clip)) for c in todo)
    case_task = progress.add_task("cases", total=len(todo)) if progress else None
    clip_task = progress.add_task("clips", total=n_clips) if progress else None
    records = []
    for case in todo:
        if progress:
            progress.update(case_task, description=f"case {case.id}")
        record = run_case(model, suite, case, run, scorers, out_dir,
                          on_clip=(lambda: progress.advance(clip_task)) if progress else None, placement=placement)
        write_json(out_dir / "cases" / f"{case.id}.json", record)
        records.append(record)
        if progress:
            progress.advance(case_task)
    return records


def interactivity(records: list[dict]) -> dict:
    """Per-model generation speed: mean clip latency, frames per second, peak memory."""
    timed = [r["timing"] for r in records if r.get("status") == "ok" and r.get("timing", {}).get("clip_latency_s")]
    if not timed:
        return {}
    latencies = [x for t in timed for x in t["clip_latency_s"]]
    return {"clip_latency_s": float(np.mean(latencies)), "clip_latency_p95_s": float(np.percentile(latencies, 95)),
            "fps": float(np.mean([t["fps"] for t in timed])),
            "peak_mem_mb": float(max(t["peak_mem_mb"] for t in timed))}
