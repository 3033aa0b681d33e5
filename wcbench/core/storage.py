"""Files a run leaves behind: atomic writes (a reader, or a resumed run, sees a whole file or
none, never half of one) and the folder lock that keeps two processes out of one folder."""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import secrets
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

LOCK_NAME = ".wcbench.lock"


class FolderBusyError(RuntimeError):
    """Another process holds an output folder's lock; the message names it."""


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (same suffix); on success rename it over
    ``path``, on error delete it.

    The temporary file is created with mode 0666 filtered by the umask (as ``open`` would),
    not mkstemp's 0600, so results are as readable as any other file the user writes.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = path.parent / f".{path.stem}.{os.getpid()}-{secrets.token_hex(4)}.partial{path.suffix}"
    os.close(os.open(tmp_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_json(path: str | Path, data: Any) -> None:
    """Write JSON atomically (sorted keys are not forced: records keep their field order)."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=1, default=_jsonable) + "\n")


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def read_json(path: str | Path) -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from err


def _jsonable(value: Any) -> Any:
    """numpy scalars and arrays to plain JSON."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in JSON")


@contextmanager
def folder_lock(folder: str | Path, command: str) -> Iterator[None]:
    """Hold ``folder/.wcbench.lock`` exclusively (``flock``) for the duration, or raise
    :class:`FolderBusyError` naming the process that holds it. The folder must exist.

    The kernel drops the lock when its process dies, so a killed run leaves no stale lock. A
    refused process writes nothing: it opens the lock file that the holder created and reads it.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder")
    path = folder / LOCK_NAME
    handle = open(path, "a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise FolderBusyError(f"{folder} is in use by {holder}; wait for it to finish, or use another "
                                  "--out folder") from None
        handle.seek(0)
        handle.truncate()
        started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        handle.write(f"pid {os.getpid()} on {socket.gethostname()} ({command}, since {started})\n")
        handle.flush()
        yield
    finally:
        handle.close()  # closing the descriptor releases the lock
