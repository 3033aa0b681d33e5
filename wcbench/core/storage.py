"""Files a run leaves behind: atomic writes (a reader, or a resumed run, sees a whole file or
none, never half of one) and the folder lock that keeps two processes out of one folder."""

from __future__ import annotations

import csv
import datetime as dt
import io
import fcntl
import json
import os
import re
import secrets
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

LOCK_NAME = ".wcbench.lock"
# The temporary name atomic_path gives a file being written: .<stem>.<pid>-<8 hex>.partial<suffix>
PARTIAL_NAME = re.compile(r"\..*\.(?P<pid>\d+)-[0-9a-f]{8}\.partial(\.[^/]*)?")


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


def remove_partials(folder: str | Path, depth: int = 1) -> list[Path]:
    """Delete the temporary files of atomic writes whose writer is dead (``kill -9``, a power cut)
    in ``folder`` and its subfolders down to ``depth`` levels; returns them. A live writer's
    (its pid still running on this machine) are left alone."""
    folder = Path(folder)
    found = [p for level in range(depth + 1) for p in folder.glob("/".join(["*"] * level + [".*.partial*"]))]
    removed = []
    for path in found:
        match = PARTIAL_NAME.fullmatch(path.name)
        if match and path.is_file() and not _is_running(int(match["pid"])):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


# OWASP's rule against CSV injection: a spreadsheet runs a cell that starts with one of these as a
# formula (=cmd|' /C calc'!A0), so such text cells get a leading apostrophe, which shows as text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralize_cell(value: Any) -> Any:
    """``value`` with a leading apostrophe if it is text a spreadsheet would read as a formula;
    numbers (a negative one is a number, not a formula) and other text unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_text(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """``rows`` as CSV text with a header, every text cell neutralised (:func:`neutralize_cell`).
    Every CSV wcbench writes goes through here."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows({k: neutralize_cell(v) for k, v in row.items()} for row in rows)
    return buffer.getvalue()


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
