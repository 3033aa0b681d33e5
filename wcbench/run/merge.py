"""``wcbench merge``: the folders of ``wcbench score --shard i/N`` runs -> one results folder.

A manifest too large for one machine is scored as N shards (a Slurm array, N machines, or one
machine N times), each into its own folder; merging them checks that they are the N shards of
one manifest scored with one config, each complete, covering every row exactly once, and then
writes the folder one unsharded ``wcbench score`` would have written: the same case records,
byte for byte, and the results built from them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from wcbench.core.storage import atomic_path, read_json
from wcbench.results.outdir import IDENTITY_FILE
from wcbench.results.record import CaseRecord, load_record, load_records, record_path
from wcbench.results.strip import strip_path
from wcbench.run.manifest import ManifestError, keep_video, manifest_hash, read_manifest, shard_rows


class MergeError(ValueError):
    """The folders are not the complete shards of one manifest and config."""


def _shard_header(folder: Path) -> dict:
    path = folder / IDENTITY_FILE
    if not path.exists():
        raise MergeError(f"{folder}: no {IDENTITY_FILE}; not a results folder of `wcbench score --shard`")
    header = read_json(path)
    if header.get("command") != "score" or "shard" not in header:
        raise MergeError(f"{folder}: made by `wcbench {header.get('command', 'run')}` without --shard; merge takes "
                         "the folders of `wcbench score --shard i/N` runs")
    return header


def _check_same(headers: list[tuple[Path, dict]]) -> tuple[int, dict[int, Path]]:
    """The shard count N and the folder of each shard index; MergeError naming the folder whose
    manifest, config or N differs from the first's, a shard given twice, or one missing."""
    first, reference = headers[0]
    by_index: dict[int, Path] = {}
    count = int(reference["shard"].split("/")[1])
    for folder, header in headers:
        for field, what in (("manifest_hash", "manifest"), ("config_hash", "model/scorer config")):
            if header.get(field) != reference.get(field):
                raise MergeError(f"{folder} was scored from another {what} than {first} ({field} "
                                 f"{header.get(field)} != {reference.get(field)}); merge shards of one run only")
        index, total = (int(part) for part in header["shard"].split("/"))
        if total != count:
            raise MergeError(f"{folder} is shard {header['shard']} but {first} is shard {reference['shard']}: "
                             "the shards of one run share N")
        if index in by_index:
            raise MergeError(f"{folder} and {by_index[index]} are both shard {header['shard']}")
        by_index[index] = folder
    missing = sorted(set(range(count)) - set(by_index))
    if missing:
        raise MergeError(f"shard(s) {', '.join(f'{i}/{count}' for i in missing)} missing: give all {count} folders")
    return count, by_index


def _manifest_ids(manifest: Path, expected_hash: str) -> list:
    """The manifest's rows, after checking it is the file the shards were scored from."""
    if not manifest.exists():
        raise MergeError(f"{manifest}: the shards' manifest is not there; pass --manifest with its path here")
    if manifest_hash(manifest) != expected_hash:
        raise MergeError(f"{manifest} is not the manifest the shards were scored from (hash "
                         f"{manifest_hash(manifest)} != {expected_hash})")
    try:
        return read_manifest(manifest)
    except ManifestError as err:
        raise MergeError(str(err)) from err


def check_shards(shard_dirs: list[Path], manifest: Path | None = None) -> dict:
    """The header of the merged folder (the shards' own, less ``shard``), after checking that
    ``shard_dirs`` are all N shards of one manifest and config and that each holds a record for
    exactly its rows (scored or failed, as one run would). Reads only; raises MergeError."""
    headers = [(Path(folder), _shard_header(Path(folder))) for folder in shard_dirs]
    count, by_index = _check_same(headers)
    reference = _shard_header(by_index[0])
    rows = _manifest_ids(manifest or Path(reference["manifest"]), reference["manifest_hash"])
    for index, folder in sorted(by_index.items()):
        wanted = [raw.id for raw in shard_rows(rows, (index, count))]
        held = {record.id for record in load_records(folder)} if (folder / "cases").is_dir() else set()
        lacking = [case_id for case_id in wanted if case_id not in held]
        if lacking:
            raise MergeError(f"{folder} (shard {index}/{count}) has no record for case(s) {lacking[:5]}: rerun its "
                             "`wcbench score --shard` command to finish it")
        extra = sorted(held - set(wanted))
        if extra:
            raise MergeError(f"{folder} (shard {index}/{count}) holds case(s) {extra[:5]} outside its share")
    return {key: value for key, value in reference.items() if key != "shard"}


def copy_shards(out_dir: Path, shard_dirs: list[Path]) -> int:
    """Copy every shard's case records (and report strips, and the videos a manifest that names
    its suite keeps in the folder, ``videos/<id>.<ext>``) into ``out_dir``, byte for byte and
    atomically; returns the number of cases. Call after :func:`check_shards`, holding the lock
    on ``out_dir``."""
    copied = 0
    for folder in map(Path, shard_dirs):
        for path in sorted((folder / "cases").glob("*.json")):
            if path.name.startswith("."):  # the temporary half of an atomic write
                continue
            case_id = path.stem
            _copy_kept_video(folder, out_dir, load_record(path))
            for source, target in ((strip_path(folder, case_id), strip_path(out_dir, case_id)),
                                   (path, record_path(out_dir, case_id))):  # the strip first, as score writes
                if source.exists():
                    with atomic_path(target) as tmp:
                        tmp.write_bytes(source.read_bytes())
            copied += 1
    return copied


def _copy_kept_video(folder: Path, out_dir: Path, record: CaseRecord) -> None:
    """A video the shard holds (relative ``videos/...``: `score` of a suite's manifest keeps each
    video in its folder, which `submit` requires) goes to the same place in ``out_dir``, a hard
    link where possible, before the record that names it; absolute paths stay where they point."""
    video = Path(str(record.video or ""))
    if not record.is_ok or video.is_absolute() or video.parts[:1] != ("videos",) or ".." in video.parts:
        return
    keep_video(out_dir, replace(record, video=str(folder / video)))
