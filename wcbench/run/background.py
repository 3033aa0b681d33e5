"""Score ``wcbench run``'s clips beside the model, not between its calls.

Scored inline, each clip waits for its camera estimate and quality before the model may make
the next one: on a GPU the generator idles while the CPU scores. :class:`BackgroundScoring`
hands each clip to a scoring process through a bounded queue and returns at once, so the
model's next clip starts as soon as the last one is handed over; the queue's bound (in clips)
holds the model back only when scoring falls that far behind, so memory stays bounded.
Every case is scored whole by one process, by the same :class:`CaseScorer` fed the same
clips, so the numbers are those of :class:`InlineScoring` (today's way, kept for
``--score-workers 0``). Several processes take whole cases in turn.

Both take ``start`` (a case), ``add`` (a clip, and the poses a renderer reports having drawn),
``finish`` or ``abort`` (a model that failed: its clips are dropped), and give back each
finished case's fields from :meth:`results`.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Union

import numpy as np

from wcbench.core.actions import Script
from wcbench.pose.overlay import UserMask
from wcbench.run.pool import ScoringWorkerError, limit_threads, watch_parent
from wcbench.scoring.case import CaseScorer, Scorers, UnscorableVideo

QUEUE_CLIPS = 4  # clips waiting per scoring process before the model is held back
POLL_S = 0.5  # how often a waiting parent checks that its scoring processes live


@dataclass(frozen=True)
class CaseSpec:
    """What a case's :class:`CaseScorer` is built from (no frames)."""

    script: Script
    prompt: str
    fov_deg: float | None
    latents_per_clip: int
    mask: str | None = None  # a ``--mask`` spec, read against ``mask_base``
    mask_base: Path | None = None
    uses_true_poses: bool = False  # the model reports the poses it drew (oracle renders), sent with each clip

    def build(self, scorers: Scorers, true_poses: list) -> CaseScorer:
        mask = UserMask(self.mask, self.mask_base) if self.mask else None
        return CaseScorer(self.script, scorers, prompt=self.prompt, fov_deg=self.fov_deg,
                          latents_per_clip=self.latents_per_clip,
                          true_poses=true_poses if self.uses_true_poses else None, mask=mask)


@dataclass
class CaseScore:
    """A finished case: its record fields; or why its video cannot be scored (``unscorable``,
    :class:`UnscorableVideo`: the case fails, the run goes on); or the scorer's traceback when
    scoring raised otherwise (``error``)."""

    key: str
    fields: dict | None
    score_s: float
    error: str | None = None
    unscorable: str | None = None


class _OpenCase:
    """One case inside a scorer: its CaseScorer, the true poses so far, the time spent."""

    def __init__(self, spec: CaseSpec, scorers: Scorers):
        self.true_poses: list = []
        self.scorer = spec.build(scorers, self.true_poses)
        self.seconds = 0.0
        self.error: str | None = None
        self.unscorable: str | None = None

    def add(self, frames: np.ndarray, poses: list | None) -> None:
        if self.error or self.unscorable:
            return
        started = time.perf_counter()
        try:
            self.true_poses.extend(poses or ())
            self.scorer.add(frames)
        except UnscorableVideo as err:  # the case fails with this reason at finish; the rest are not scored
            self.unscorable = str(err)
        except Exception:  # noqa: BLE001 - reported with the case at finish, as inline scoring would raise
            self.error = traceback.format_exc()
        self.seconds += time.perf_counter() - started

    def finish(self, key: str, commanded_poses: np.ndarray | None) -> CaseScore:
        if self.error or self.unscorable:
            return CaseScore(key, None, self.seconds, self.error, self.unscorable)
        started = time.perf_counter()
        try:
            fields = self.scorer.finish(commanded_poses=commanded_poses)
        except UnscorableVideo as err:
            return CaseScore(key, None, self.seconds, unscorable=str(err))
        except Exception:  # noqa: BLE001
            return CaseScore(key, None, self.seconds, traceback.format_exc())
        return CaseScore(key, fields, self.seconds + time.perf_counter() - started)


class InlineScoring:
    """Scores each clip in this process as it is added (``--score-workers 0``)."""

    def __init__(self, scorers: Scorers):
        self.scorers = scorers
        self._open: dict[str, _OpenCase] = {}
        self._done: list[CaseScore] = []

    def start(self, key: str, spec: CaseSpec) -> None:
        self._open[key] = _OpenCase(spec, self.scorers)

    def add(self, key: str, frames: np.ndarray, poses: list | None = None) -> None:
        self._open[key].add(frames, poses)

    def finish(self, key: str, commanded_poses: np.ndarray | None = None) -> None:
        self._done.append(self._open.pop(key).finish(key, commanded_poses))

    def abort(self, key: str) -> None:
        self._open.pop(key, None)

    def results(self, wait: bool = False) -> Iterator[CaseScore]:
        """The cases finished since the last call (all of them are, inline)."""
        done, self._done = self._done, []
        yield from done

    def close(self) -> None:
        pass

    def __enter__(self) -> InlineScoring:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _serve(inbox: Any, outbox: Any, scorers_pickle: bytes, parent: int) -> None:
    """A scoring process: build cases, feed them clips, send back each finished one, until None."""
    watch_parent(parent)
    limit_threads()
    scorers = pickle.loads(scorers_pickle)
    limit_threads()
    cases: dict[str, _OpenCase] = {}
    for kind, key, payload in map(pickle.loads, iter(inbox.get, None)):
        if kind == "start":
            cases[key] = _OpenCase(payload, scorers)
        elif kind == "add":
            cases[key].add(*payload)
        elif kind == "finish":
            outbox.put(cases.pop(key).finish(key, payload))
        else:  # "abort"
            cases.pop(key, None)


class BackgroundScoring:
    """Scores cases in ``workers`` processes (``spawn``, one thread each) while the caller goes
    on; :meth:`add` returns once the clip is queued (it waits only while the process's queue of
    :data:`QUEUE_CLIPS` clips is full)."""

    def __init__(self, scorers: Scorers, workers: int = 1):
        context = multiprocessing.get_context("spawn")
        self._outbox = context.Queue()
        self._inboxes = [context.Queue(maxsize=QUEUE_CLIPS) for _ in range(workers)]
        scorers_pickle = pickle.dumps(scorers)
        self._processes = [context.Process(target=_serve, args=(inbox, self._outbox, scorers_pickle, os.getpid()),
                                           name=f"wcbench-scoring-{i}", daemon=True)
                           for i, inbox in enumerate(self._inboxes)]
        for process in self._processes:
            process.start()
        self._owner: dict[str, int] = {}  # case key -> the process scoring it
        self._cases_started = 0
        self._waiting = 0  # cases finished here whose scores have not come back

    def _put(self, index: int, message: tuple) -> None:
        # Pickled here, not later in the queue's feeder thread: the clip is captured as it is now
        # (a model may reuse its output buffer), and a pickling error is raised to the caller
        # instead of being printed by that thread and the message lost.
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        while True:
            try:
                self._inboxes[index].put(data, timeout=POLL_S)
                return
            except queue.Full:
                self._check_alive()

    def _check_alive(self) -> None:
        dead = [p.name for p in self._processes if not p.is_alive()]
        if dead:
            raise ScoringWorkerError(f"scoring process {dead[0]} died (killed, or out of memory?); finished cases "
                                     "are saved: rerun the same command to resume, with --score-workers 0 to score "
                                     "in this process")

    def start(self, key: str, spec: CaseSpec) -> None:
        index = self._cases_started % len(self._processes)  # whole cases, in turn
        self._cases_started += 1
        self._owner[key] = index
        self._put(index, ("start", key, spec))

    def add(self, key: str, frames: np.ndarray, poses: list | None = None) -> None:
        self._put(self._owner[key], ("add", key, (frames, poses)))

    def finish(self, key: str, commanded_poses: np.ndarray | None = None) -> None:
        self._put(self._owner.pop(key), ("finish", key, commanded_poses))
        self._waiting += 1

    def abort(self, key: str) -> None:
        self._put(self._owner.pop(key), ("abort", key, None))

    def results(self, wait: bool = False) -> Iterator[CaseScore]:
        """The cases scored since the last call; ``wait``: until every finished case is back."""
        while self._waiting:
            try:
                score = self._outbox.get(timeout=POLL_S) if wait else self._outbox.get_nowait()
            except queue.Empty:
                if not wait:
                    return
                self._check_alive()
                continue
            self._waiting -= 1
            yield score

    def close(self, abandon: bool = False) -> None:
        """Stop the processes: each finishes what it holds first, unless ``abandon`` (the run
        is ending on an error: what they hold will not be saved)."""
        for index, process in enumerate(self._processes):
            if abandon:
                self._inboxes[index].cancel_join_thread()  # or exiting waits to flush clips nobody reads
                process.terminate()
            elif process.is_alive():
                try:
                    self._inboxes[index].put(None, timeout=POLL_S)
                except queue.Full:
                    process.terminate()
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()

    def __enter__(self) -> BackgroundScoring:
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.close(abandon=exc_type is not None)


Scoring = Union[InlineScoring, BackgroundScoring]


def build_scoring(scorers: Scorers, workers: int) -> Scoring:
    """Inline scoring for ``workers`` 0, otherwise that many background scoring processes."""
    return BackgroundScoring(scorers, workers) if workers > 0 else InlineScoring(scorers)
