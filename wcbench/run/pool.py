"""Score many videos at once: a pool of worker processes, one thread each.

Scoring one video keeps about one core busy (its decoder, camera estimate and quality run side
by side in threads, but the estimate dominates), so a machine with more cores scores more
videos at once. :func:`map_scored` runs ``func(job, scorers)`` for every job in ``workers``
processes and yields the results in the jobs' order, so that the caller writes, counts and
reports exactly what one process would. Workers receive the scorers once, when they start,
and each opens and streams its own video: the parent never holds a frame, and memory is
``workers`` streaming decoders, not ``workers`` whole videos.

``wcbench score --jobs N`` uses it over a manifest's rows; anything else that re-scores videos
(``verify``, ``submit``) can hand it its own module-level ``func``. A :class:`ScoringPool` keeps
its processes for many calls (``wctrain`` scores every training step's clips with one).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import islice
from typing import Any, Callable, Iterable, Iterator, TypeVar

import cv2

Job = TypeVar("Job")
Result = TypeVar("Result")

# Jobs handed to the pool ahead of the one the caller waits for (per worker): enough that a
# slow video at the head of the line does not leave the other workers idle, few enough that
# the finished results waiting for it stay small (a record and eight thumbnails each).
AHEAD_PER_WORKER = 4
PARENT_POLL_S = 0.5
CPU_ESTIMATORS = ("opencv", "gt")  # weight-free scorers: cheap to build once per process
CPU_QUALITY = ("default", "default-drift")
ONE_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

_scorers: Any = None  # the worker's scorers, set once by _start_worker


class ScoringWorkerError(RuntimeError):
    """A scoring worker process died (killed, out of memory, crashed in native code)."""


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a scheduler such as Slurm
    sets), not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def weight_free(scorers: Any) -> bool:
    """Whether ``scorers`` are the weight-free CPU ones, cheap to build once per process."""
    return scorers.estimator.name in CPU_ESTIMATORS and scorers.quality.name in CPU_QUALITY


def default_workers(scorers: Any) -> int:
    """Processes to score with when the user names none: every available core for the
    weight-free CPU scorers; one for learned ones (HPSv3, learned estimators), which would load
    their weights, often onto one GPU, once per process."""
    return available_cores() if weight_free(scorers) else 1


def limit_threads() -> None:
    """One thread for this process's numeric libraries: N workers on N cores, each spawning a
    thread per core, would run N^2 threads and thrash. Libraries that read the environment
    when loaded get it from the variables; those already loaded are told directly."""
    for name in ONE_THREAD_ENV:
        os.environ[name] = "1"
    cv2.setNumThreads(1)
    if "torch" in sys.modules:  # only when a scorer uses it (learned estimators, HPSv3)
        sys.modules["torch"].set_num_threads(1)


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def watch_parent(parent: int) -> None:
    """Exit this worker process when its parent ``parent`` is gone (``kill -9``: nothing else
    tells a worker, which would otherwise score on, or wait for work, forever)."""
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="wcbench-parent-watch").start()


def _start_worker(parent: int, scorers_pickle: bytes) -> None:
    """A worker's start: a watch on the parent, one thread, then the scorers (unpickled after
    the limit, so that any library they load reads it)."""
    global _scorers
    watch_parent(parent)
    limit_threads()
    _scorers = pickle.loads(scorers_pickle)
    limit_threads()  # again: unpickling may have loaded torch


def _run_job(func: Callable[[Any, Any], Any], job: Any) -> Any:
    return func(job, _scorers)


class ScoringPool:
    """``workers`` scoring processes holding ``scorers``, started at the first :meth:`map` and kept
    for the next (the trainer scores a group every step; starting processes each time would cost
    more than it saves). With ``workers`` <= 1 everything runs in this process. Close it (or use
    it as a context manager) to stop the processes."""

    def __init__(self, scorers: Any, workers: int):
        self.scorers, self.workers = scorers, workers
        self._executor: ProcessPoolExecutor | None = None

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            # spawn: a forked copy of a process holding an output folder's lock or a model would inherit both
            self._executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=_start_worker,
                                                 initargs=(os.getpid(), pickle.dumps(self.scorers)))
        return self._executor

    def map(self, func: Callable[[Job, Any], Result], jobs: Iterable[Job]) -> Iterator[Result]:
        """``func(job, scorers)`` for every job, yielded in the jobs' order (see :func:`map_scored`)."""
        jobs = list(jobs)
        if self.workers <= 1 or len(jobs) <= 1:
            for job in jobs:
                yield func(job, self.scorers)
            return
        pool = self._pool()
        waiting = iter(jobs)
        pending: deque[Future] = deque(pool.submit(_run_job, func, job)
                                       for job in islice(waiting, AHEAD_PER_WORKER * self.workers))
        done = 0
        try:
            while pending:
                try:
                    result = pending.popleft().result()
                except BrokenProcessPool as err:
                    raise ScoringWorkerError(
                        f"a scoring worker process died (killed, or out of memory?) with {len(jobs) - done} of "
                        f"{len(jobs)} jobs unfinished; finished ones are kept: rerun the same command to resume, "
                        f"with fewer scoring processes (--jobs, reward.jobs: {self.workers} now) if memory ran "
                        "out") from err
                pending.extend(pool.submit(_run_job, func, job) for job in islice(waiting, 1))
                done += 1
                yield result
        finally:
            for future in pending:  # an error or an abandoned generator: drop what has not started
                future.cancel()

    def close(self) -> None:
        """Stop the processes: what has not started is dropped, running jobs finish first."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> ScoringPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def map_scored(func: Callable[[Job, Any], Result], jobs: Iterable[Job], scorers: Any,
               workers: int) -> Iterator[Result]:
    """``func(job, scorers)`` for every job, yielded in the jobs' order.

    ``workers`` <= 1 (or a single job) runs in this process, exactly as a plain loop; otherwise
    in that many fresh processes (:class:`ScoringPool`), stopped when the last result is
    yielded. ``func`` must be a module-level function and jobs and results picklable. An
    exception in ``func`` is raised here, with the worker's traceback as its cause, as it would
    be in a loop; a worker that dies raises :class:`ScoringWorkerError`.
    """
    jobs = list(jobs)
    with ScoringPool(scorers, min(workers, len(jobs))) as pool:
        yield from pool.map(func, jobs)
