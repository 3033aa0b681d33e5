"""The contract of a results folder: what made it, and who may write into it.

Every results folder holds ``run.json``: the command that made it (``run`` or ``score``), the
hash of its input (the suite, or the manifest) and the hash of its config. Writing into a
folder is allowed only to the same command with the same input and config (that is how an
interrupted run resumes); anything else is refused before a byte of the folder changes. A
lock file keeps a second process out while one is writing; the half-written files a killed
run left behind are deleted when the folder is claimed again.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from wcbench.core.storage import LOCK_NAME, folder_lock, read_json, remove_partials, write_json

IDENTITY_FILE = "run.json"
# Per command: the key of its input's hash and what to call that input in a message.
INPUT_KEYS = {"run": ("suite_hash", "suite"), "score": ("manifest_hash", "manifest")}


class OutDirError(ValueError):
    """An output folder holds something else than what this command would write there."""


def require_folder(out_dir: Path) -> None:
    """Refuse an output path that is a file (checked first, before anything slow is built)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise OutDirError(f"--out {out_dir} is a file; give a folder (new, or one this command made before)")


def check_out_dir(out_dir: Path, header: dict) -> None:
    """Refuse to mix: ``out_dir`` must be new, empty, or made by the same command with the same
    input and config (``header["command"]``, its input hash, ``config_hash``). Reads only."""
    command = header["command"]
    require_folder(out_dir)
    stored_path = out_dir / IDENTITY_FILE
    if not stored_path.exists():
        others = sorted(p.name for p in out_dir.iterdir() if p.name != LOCK_NAME) if out_dir.exists() else []
        if others:
            raise OutDirError(f"{out_dir} is not empty ({', '.join(others[:3])}{', ...' if len(others) > 3 else ''}) "
                              f"and has no {IDENTITY_FILE}: it is not a wcbench results folder. Use a new folder.")
        return
    stored = read_json(stored_path)
    stored_command = stored.get("command", "run")  # folders from before this file named its command
    if stored_command != command:
        raise OutDirError(f"{out_dir} was made by `wcbench {stored_command}`; `wcbench {command}` cannot write into "
                          "it. Use another --out folder.")
    if stored.get("shard") != header.get("shard"):  # absent in both for unsharded folders
        raise OutDirError(f"{out_dir} holds {_share(stored.get('shard'))} of its manifest; this command scores "
                          f"{_share(header.get('shard'))}. Use another --out folder per shard.")
    key, what = INPUT_KEYS[command]
    checks = ((key, f"another {what}"), ("config_hash", "another model/scorer config"))
    for field, description in checks:
        if stored.get(field) != header[field]:
            raise OutDirError(
                f"{out_dir} holds results of {description} ({field} {stored.get(field)} != {header[field]}; "
                f"{what} {stored.get(what)!r}, model {stored.get('model')!r}). Use a new --out folder, or "
                "delete this one to start over.")


def _share(shard: str | None) -> str:
    return f"shard {shard}" if shard else "all rows"


@contextmanager
def claim_out_dir(out_dir: Path, header: dict) -> Iterator[None]:
    """Check ``out_dir`` (:func:`check_out_dir`), lock it for this process, check again under
    the lock (another process may have claimed it meanwhile) and record ``header`` in
    ``run.json`` if the folder is new. Raises OutDirError or FolderBusyError, folder untouched."""
    check_out_dir(out_dir, header)
    out_dir.mkdir(parents=True, exist_ok=True)
    with folder_lock(out_dir, f"wcbench {header['command']}"):
        check_out_dir(out_dir, header)
        if not (out_dir / IDENTITY_FILE).exists():
            write_json(out_dir / IDENTITY_FILE, header)
        remove_partials(out_dir)  # an earlier run killed mid-write left these (cases/, videos/)
        yield
