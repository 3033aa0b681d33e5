"""The world model in a child process, so that the harness outlives it.

A model is code the harness does not control: it may call ``sys.exit`` or ``os._exit``, crash
in native code (a segfault), or hang where no Python exception reaches it. In the process of
the run, any of these ends or freezes the run (with exit status 0 for ``sys.exit(0)``: CI reads
success). :class:`IsolatedModel` builds the model in a child process (``spawn``: a fresh
interpreter, so CUDA and threads start clean) and forwards ``reset`` and ``step`` to it over a
pipe, with frames made numpy arrays there (the harness checks them as it would in one
process). A call that raises (``SystemExit`` included) fails with the child's traceback; a
child that dies fails the call with its exit code or signal; a call cut short by the run's
``timeout_s`` (the parent's timer, which always reaches the parent: it only waits on the pipe)
kills the child. After any failure the next call starts a fresh child, so the next case runs on
a newly built model.
"""

from __future__ import annotations

import multiprocessing
import signal
import traceback
from multiprocessing.connection import Connection
from typing import Any, Sequence

import numpy as np

from wcbench.core.environment import peak_memory_mb
from wcbench.models.frames import portable_frames
from wcbench.models.registry import build_model

# Attributes the harness reads from a model (besides reset/step), copied from the child's model.
PUBLIC_ATTRIBUTES = ("name", "resolution", "fps", "reports_speed")


class ModelProcessError(RuntimeError):
    """The model's call failed in its child process; ``trace`` is the child's traceback (or
    what is known of its death)."""

    def __init__(self, message: str, trace: str):
        super().__init__(message)
        self.trace = trace


def _reply(model: Any, result: Any) -> tuple:
    """What the child sends back for one call: the frames as numpy arrays and, for models that
    say what they really rendered (the oracle), those poses."""
    poses = getattr(model, "rendered_poses", None)
    return ("ok", portable_frames(result), None if poses is None else np.asarray(poses), peak_memory_mb())


def serve(conn: Connection, spec: str, include_paths: Sequence[str], options: dict) -> None:
    """The child: build the model, report its attributes, then answer calls until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it ends this child
    try:
        model = build_model(spec, include_paths=include_paths, **options)
    except BaseException as err:  # noqa: BLE001 - whatever happens, the parent hears of it
        conn.send(("error", f"{type(err).__name__}: {err}", traceback.format_exc()))
        return
    conn.send(("ok", {name: getattr(model, name) for name in PUBLIC_ATTRIBUTES if hasattr(model, name)}))
    while True:
        try:
            method, args = conn.recv()
        except EOFError:  # the parent is gone
            return
        try:
            conn.send(_reply(model, getattr(model, method)(*args)))
        except BaseException as err:  # noqa: BLE001 - SystemExit and KeyboardInterrupt fail the call too
            conn.send(("error", f"{type(err).__name__}: {err}", traceback.format_exc()))


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "it stopped answering"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class IsolatedModel:
    """A world model built and run in a child process (see the module doc). Behaves like the
    model for the harness: ``reset``, ``step`` and the attributes it reads."""

    def __init__(self, spec: str, include_paths: Sequence[str] = (), options: dict | None = None):
        self.spec, self.include_paths, self.options = spec, list(include_paths), dict(options or {})
        self._context = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._conn: Connection | None = None
        self.peak_memory_mb = 0.0  # of the child, as its last answer said
        self._poses: list[np.ndarray] | None = None
        for name, value in self._start().items():
            setattr(self, name, value)

    @property
    def rendered_poses(self) -> list[np.ndarray] | None:
        """What the model says its frames show (the oracle does), as its last answer gave them;
        one list, updated in place, since the scorer reads it as the case grows."""
        return self._poses

    def _start(self) -> dict:
        """Start a child and build the model there; ValueError with the child's message when it cannot."""
        parent_conn, child_conn = self._context.Pipe()
        self._process = self._context.Process(target=serve, args=(child_conn, self.spec, self.include_paths,
                                                                  self.options), daemon=True)
        self._process.start()
        child_conn.close()  # the child holds its end; a dead child then reads as EOF here
        self._conn = parent_conn
        try:
            status, *reply = self._conn.recv()
        except EOFError:
            code = self._stop()
            raise ValueError(f"model {self.spec!r}: its process ended while building it "
                             f"({_describe_exit(code)})") from None
        if status != "ok":
            self._stop()
            raise ValueError(f"model {self.spec!r}: {reply[0]}")
        return reply[0]

    def _stop(self) -> int | None:
        """Kill the child (if alive) and return its exit code; the next call starts another."""
        process, self._process = self._process, None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if process is None:
            return None
        if process.is_alive():
            process.kill()
        process.join(timeout=10)
        return process.exitcode

    def _call(self, method: str, *args: Any) -> Any:
        if self._process is None:
            self._start()
        try:
            self._conn.send((method, args))
            status, *reply = self._conn.recv()
        except EOFError:
            code = self._stop()
            message = f"the model's process died ({_describe_exit(code)})"
            raise ModelProcessError(message, message + "\n") from None
        except BaseException:  # the run's timeout (or Ctrl-C) while the child works: it must not live on
            self._stop()
            raise
        if status != "ok":
            self._stop()  # a model that raised may be in any state: the next case gets a fresh one
            raise ModelProcessError(reply[0], reply[1])
        frames, poses, self.peak_memory_mb = reply
        if poses is not None:
            self._poses = self._poses if self._poses is not None else []
            self._poses[:] = list(poses)
        return frames

    def reset(self, image: np.ndarray, prompt: str, seed: int, info: Any) -> np.ndarray:
        return self._call("reset", image, prompt, seed, info)

    def step(self, actions: list) -> np.ndarray:
        return self._call("step", actions)

    def close(self) -> None:
        self._stop()
