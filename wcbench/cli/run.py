"""``wcbench run``: generate and score every case of a suite with a world model."""

from __future__ import annotations

import argparse
from contextlib import contextmanager, nullcontext
from typing import Any, Iterator

from rich.table import Table

from wcbench.cli.common import UsageError, build_scorers, check_out, checked_mask, claim, finish, launcher, load_config
from wcbench.core.ids import check_name
from wcbench.core.terminal import console, progress_bar
from wcbench.models.plugin import parse_model_args
from wcbench.results.record import load_records


def cmd_run(args: argparse.Namespace) -> int:
    from wcbench.data.suite import load_suite
    from wcbench.run.isolated import IsolatedModel
    from wcbench.run.runner import RunConfig, interactivity, run_header, run_suite

    cfg = load_config(args.overrides)
    suite = load_suite(args.suite)
    if args.limit < 0:
        raise UsageError(f"--limit {args.limit}: give a number of cases >= 1 (0: all)")
    if args.score_workers < 0:
        raise UsageError(f"--score-workers {args.score_workers}: give a number of processes >= 0 (0: score in this "
                         "process, between the model's calls)")
    out_dir = check_out(args.out)
    accelerator = launcher(cfg.device)
    options = model_options(cfg, args.model_args)
    run = RunConfig(model=args.model, model_options=options, seed=cfg.seed, timeout_s=cfg.timeout_s,
                    mask=checked_mask(args.mask))
    scorers = build_scorers(cfg)
    header = run_header(suite, run, scorers)
    cases = suite.cases[:args.limit] if args.limit else suite.cases
    with _run_model(args, cfg.isolate_model, options) as (model, model_name), claim(out_dir, header, accelerator):
        if accelerator.is_main_process:
            console.print(f"[bold]wcbench run[/bold] suite {suite.name} ({len(cases)} of {len(suite.cases)} cases, "
                          f"hash {suite.content_hash()}) model {args.model} -> {out_dir}"
                          + (f" on {accelerator.num_processes} processes" if accelerator.num_processes > 1 else ""))
        progress = progress_bar() if accelerator.is_main_process else None
        with progress or nullcontext():
            run_suite(suite, model, run, scorers, out_dir, rank=accelerator.process_index,
                      world_size=accelerator.num_processes, limit=args.limit, progress=progress,
                      device=str(accelerator.device), score_workers=args.score_workers)
        if isinstance(model, IsolatedModel):
            model.close()  # its memory (a GPU's too) is free before the report is built
        accelerator.wait_for_everyone()
        if not accelerator.is_main_process:
            return 0
        records = load_records(out_dir)
        done = {r.id for r in records}
        missing = [c.id for c in cases if c.id not in done]
        if missing:
            raise UsageError(f"{out_dir}: no record for case(s) {missing[:5]}; rerun the same command to finish them")
        header["model_name"] = model_name
        speed = interactivity(records, reports_speed=getattr(model, "reports_speed", True))
        _print_interactivity(args.model, speed, getattr(model, "reports_speed", True))
        return finish(out_dir, header, {"interactivity": speed})


def model_options(cfg: Any, model_args: str | None) -> dict[str, Any]:
    """Model options from ``model_options.KEY=...`` settings and ``--model-args k=v,...`` (not both for one key)."""
    options = dict(cfg.model_options)
    extra = parse_model_args(model_args) if model_args else {}
    twice = sorted(set(options) & set(extra))
    if twice:
        raise UsageError(f"model option(s) {twice} given both in --model-args and as model_options settings")
    return {**options, **extra}


@contextmanager
def _run_model(args: argparse.Namespace, is_isolated: bool, options: dict) -> Iterator[tuple[Any, str]]:
    """The run's model and its checked name, built before the output folder is claimed (a model
    that cannot be built, or has a bad name, is a usage error with nothing written). Isolated
    (``isolate_model``): in a child process, which ends with the block however it ends."""
    from wcbench.models.registry import build_model
    from wcbench.run.isolated import IsolatedModel

    if not is_isolated:
        model = build_model(args.model, include_paths=args.include_path or (), **options)
        yield model, check_name(getattr(model, "name", args.model), f"the name of model {args.model!r}")
        return
    model = IsolatedModel(args.model, args.include_path or (), options)
    try:
        yield model, check_name(getattr(model, "name", args.model), f"the name of model {args.model!r}")
    finally:
        model.close()


def _print_interactivity(model: str, speed: dict, reports_speed: bool) -> None:
    if not reports_speed:
        console.print(f"[dim]{model}: no frames/s reported (a stand-in that generates nothing: its speed says "
                      "nothing about a world model)[/dim]")
        return
    if not speed:
        return
    table = Table(title=f"interactivity: {model} on {speed['hardware']}")
    for column in ("clip latency (s)", "p95 (s)", "frames/s", "peak memory (MB)"):
        table.add_column(column, justify="right")
    fps = f"{speed['fps']:.1f}" if "fps" in speed else "- (mixed hardware)"
    table.add_row(f"{speed['clip_latency_s']:.3f}", f"{speed['clip_latency_p95_s']:.3f}", fps,
                  f"{speed['peak_mem_mb']:.0f}")
    console.print(table)
