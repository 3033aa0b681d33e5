"""``wcbench score`` (videos made elsewhere, listed in a manifest) and ``wcbench merge`` (the
folders of ``score --shard i/N``)."""

from __future__ import annotations

import argparse
import os
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from wcbench.cli.common import (SingleProcess, UsageError, build_scorers, check_out, checked_mask, claim, finish,
                                launcher, load_config)
from wcbench.core.ids import check_name
from wcbench.core.terminal import console, progress_bar
from wcbench.results.record import load_records


def cmd_score(args: argparse.Namespace) -> int:
    from wcbench.run.manifest import (manifest_suite, parse_shard, read_manifest, score_header, score_manifest,
                                      shard_rows)

    cfg = load_config(args.overrides)
    scorers = build_scorers(cfg)
    out_dir = check_out(args.out)
    jobs = _jobs(args.jobs, scorers)
    try:
        shard = parse_shard(args.shard) if args.shard else None
    except ValueError as err:
        raise UsageError(str(err)) from None
    manifest = Path(args.manifest)
    rows = read_manifest(manifest)
    suite = manifest_suite(rows, manifest, args.suite)
    model_name = check_name(args.model_name or f"videos:{manifest.resolve().parent.name}",
                            "--model-name" if args.model_name else "the default --model-name (videos:<folder>)")
    mask = checked_mask(args.mask)
    header = score_header(manifest, scorers, model_name, suite, mask, shard)
    # accelerate only under `accelerate launch` (which sets WORLD_SIZE): importing torch costs a second
    accelerator = launcher(cfg.device) if int(os.environ.get("WORLD_SIZE", "1")) > 1 else SingleProcess()
    ranks = (accelerator.process_index, accelerator.num_processes)
    with claim(out_dir, header, accelerator):
        progress = progress_bar() if accelerator.is_main_process else None
        with progress or nullcontext():
            on_case = None
            if progress:
                task = progress.add_task("scoring", total=len(shard_rows(shard_rows(rows, shard), ranks)))
                on_case = lambda record: progress.update(task, advance=1, description=f"scored {record.id}")  # noqa: E731
            score_manifest(manifest, out_dir, scorers, suite, mask=mask, workers=jobs, shard=shard, ranks=ranks,
                           on_case=on_case)
        accelerator.wait_for_everyone()
        if not accelerator.is_main_process:
            return 0
        done = {record.id for record in load_records(out_dir)}
        missing = [raw.id for raw in shard_rows(rows, shard) if raw.id not in done]
        if missing:
            raise UsageError(f"{out_dir}: no record for case(s) {missing[:5]}; rerun the same command to finish them")
        return finish(out_dir, header)


def _jobs(value: int | None, scorers: Any) -> int:
    """``--jobs``: the processes that score videos side by side; when not given, all the cores
    this process may use (one for learned scorers: :func:`wcbench.run.pool.default_workers`),
    shared among the processes ``accelerate launch`` started on this machine."""
    from wcbench.run.pool import default_workers

    if value is None:
        return max(1, default_workers(scorers) // int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    if value < 1:
        raise UsageError(f"--jobs {value}: give a number of processes >= 1")
    return value


def cmd_merge(args: argparse.Namespace) -> int:
    from wcbench.run.merge import MergeError, check_shards, copy_shards

    out_dir = check_out(args.out)
    try:
        header = check_shards([Path(d) for d in args.shard_dirs], Path(args.manifest) if args.manifest else None)
    except MergeError as err:
        raise UsageError(str(err)) from None
    with claim(out_dir, header):
        count = copy_shards(out_dir, [Path(d) for d in args.shard_dirs])
        console.print(f"merged {count} cases from {len(args.shard_dirs)} shards into {out_dir}")
        return finish(out_dir, header)
