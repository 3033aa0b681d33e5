"""The ``wcbench`` command line.

    wcbench run --suite wc-mini --model oracle --out runs/oracle      generate + score a suite
    wcbench score --manifest videos.csv --out runs/mine               score videos made elsewhere
    wcbench merge runs/all runs/shard-0 runs/shard-1                  join `score --shard i/N` folders
    wcbench report runs/oracle                                        rebuild tables and report.html
    wcbench export --suite wc600 --out export/                        start images, prompts, scripts, poses
    wcbench calibrate --estimator opencv                              choose an estimator's thresholds
    wcbench submit runs/oracle | verify runs/oracle | leaderboard wc-mini

Scorer settings are hydra overrides after the options: ``estimator=gt seed=3 mode=worldcompass-compat``.
Exit status: 0 all cases scored, 1 some cases failed, 2 bad input (the message says what to fix).
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterator

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from wcbench.core.controls import FORMATS
from wcbench.core.environment import this_process_uses_a_gpu
from wcbench.core.ids import check_name
from wcbench.core.storage import FolderBusyError, folder_lock, write_json
from wcbench.core.terminal import console, progress_bar
from wcbench.models.plugin import parse_model_args
from wcbench.results.outdir import OutDirError, check_out_dir, claim_out_dir, require_folder
from wcbench.results.record import load_records

MASK_HELP = ("a burnt-in overlay (keyboard HUD, watermark) to leave out of camera tracking: an image whose nonzero "
             "pixels cover it, or rectangles x,y,w,h;... in the video's pixels (overlays that stay put while the "
             "picture moves are found without it; docs/estimator.md)")

# Each command imports its own modules when it runs: together they load pandas, matplotlib, OpenCV,
# SciPy and hydra (1.6 s on 2 CPU cores; `wcbench --help` takes 0.26 s without them).


class UsageError(Exception):
    """Bad input the user can fix; printed without a traceback, exit status 2."""


def load_config(overrides: list[str], name: str = "run") -> Any:
    """The checked settings of ``conf/<name>/<name>.yaml`` with ``key=value`` overrides."""
    from wcbench.core.settings import SettingsError, load_settings

    try:
        return load_settings(overrides, name)
    except SettingsError as err:
        raise UsageError(str(err)) from err


def build_scorers(cfg: Any):
    """Estimator + quality scorer + mode from the settings, built as a results header names them."""
    from wcbench.results.scorers import build_scorers as build_named_scorers

    return build_named_scorers({"estimator": {"name": cfg.estimator, "options": dict(cfg.estimator_options)},
                                "quality": {"name": cfg.quality, "options": dict(cfg.quality_options)},
                                "mode": cfg.mode})


def _finish(out_dir: Path, header: dict, extra: dict | None = None) -> int:
    """Merge the per-case records into results.json, summary.csv, cases.csv and report.html;
    print the table."""
    from wcbench.report.results import build_results, results_header, write_report
    from wcbench.report.summary import print_summary

    records = load_records(out_dir)
    results = build_results(results_header({**header, **(extra or {})}), records)
    write_json(out_dir / "results.json", results)
    write_report(out_dir, results)
    print_summary(results["summary"], title=f"{header.get('model', 'videos')} on "
                                                   f"{header.get('suite', 'manifest')}")
    failed = [r for r in records if not r.is_ok]
    for record in failed:
        console.print(f"[red]failed[/red] {record.id}: {record.error}")
    for record in records:
        for warning in record.warnings:
            console.print(f"[yellow]warning[/yellow] {record.id}: {warning}")
    console.print(f"results: {out_dir / 'results.json'}   report: {out_dir / 'report.html'}")
    return 1 if failed else 0


def _check_out(path: str) -> Path:
    out_dir = Path(path)
    require_folder(out_dir)
    return out_dir


# ---------------------------------------------------------------- commands

class _SingleProcess:
    """What cmd_run needs of an Accelerator, for installs without accelerate (one CPU process)."""

    is_main_process, process_index, num_processes, device = True, 0, 1, "cpu"

    def wait_for_everyone(self) -> None:
        pass


def _launcher(device: str) -> Any:
    """An accelerate Accelerator (one per process under ``accelerate launch``), or one CPU process."""
    try:
        import torch
        from accelerate import Accelerator
    except ImportError:
        if device == "cuda":
            raise UsageError("device=cuda needs torch and accelerate: pip install -e '.[train]'") from None
        return _SingleProcess()
    return Accelerator(cpu=device == "cpu" or not this_process_uses_a_gpu(torch))


def model_options(cfg: Any, model_args: str | None) -> dict[str, Any]:
    """Model options from ``model_options.KEY=...`` settings and ``--model-args k=v,...`` (not both for one key)."""
    options = dict(cfg.model_options)
    extra = parse_model_args(model_args) if model_args else {}
    twice = sorted(set(options) & set(extra))
    if twice:
        raise UsageError(f"model option(s) {twice} given both in --model-args and as model_options settings")
    return {**options, **extra}


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
    out_dir = _check_out(args.out)
    accelerator = _launcher(cfg.device)
    options = model_options(cfg, args.model_args)
    run = RunConfig(model=args.model, model_options=options, seed=cfg.seed, timeout_s=cfg.timeout_s,
                    mask=_checked_mask(args.mask))
    scorers = build_scorers(cfg)
    header = run_header(suite, run, scorers)
    cases = suite.cases[:args.limit] if args.limit else suite.cases
    with _run_model(args, cfg.isolate_model, options) as (model, model_name), _claim(out_dir, header, accelerator):
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
        return _finish(out_dir, header, {"interactivity": speed})


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


def _checked_mask(spec: str | None) -> str | None:
    """``--mask`` after checking that it reads (a UsageError naming the problem), an image's
    path made absolute (the header records it; a resumed run may start elsewhere)."""
    from wcbench.pose.overlay import IMAGE_SUFFIXES, MaskError, UserMask

    if not spec:
        return None
    try:
        UserMask(spec, Path.cwd()).check()
    except MaskError as err:
        raise UsageError(f"--mask: {err}") from None
    return str(Path(spec).absolute()) if Path(spec).suffix.lower() in IMAGE_SUFFIXES else spec


@contextmanager
def _claim(out_dir: Path, header: dict, accelerator: Any = None) -> Iterator[None]:
    """Claim and lock the folder (:func:`wcbench.results.outdir.claim_out_dir`) for the whole block, on
    rank 0 of a sharded run; the other ranks learn whether it could and then check the claim
    themselves. A refusal is a UsageError (exit 2), with the folder untouched."""
    is_main = accelerator is None or accelerator.is_main_process
    with ExitStack() as stack:
        refusal = None
        if is_main:
            try:
                stack.enter_context(claim_out_dir(out_dir, header))
            except (OutDirError, FolderBusyError) as err:
                refusal = str(err)
        if accelerator is not None and accelerator.num_processes > 1:
            from accelerate.utils import broadcast_object_list

            refusal = broadcast_object_list([refusal])[0]
        if refusal:
            raise UsageError(refusal)
        if not is_main:
            check_out_dir(out_dir, header)
        yield


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


def cmd_score(args: argparse.Namespace) -> int:
    from wcbench.run.manifest import (manifest_suite, parse_shard, read_manifest, score_header, score_manifest,
                                      shard_rows)

    cfg = load_config(args.overrides)
    scorers = build_scorers(cfg)
    out_dir = _check_out(args.out)
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
    mask = _checked_mask(args.mask)
    header = score_header(manifest, scorers, model_name, suite, mask, shard)
    # accelerate only under `accelerate launch` (which sets WORLD_SIZE): importing torch costs a second
    accelerator = _launcher(cfg.device) if int(os.environ.get("WORLD_SIZE", "1")) > 1 else _SingleProcess()
    ranks = (accelerator.process_index, accelerator.num_processes)
    with _claim(out_dir, header, accelerator):
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
        return _finish(out_dir, header)


def cmd_merge(args: argparse.Namespace) -> int:
    from wcbench.run.merge import MergeError, check_shards, copy_shards

    out_dir = _check_out(args.out)
    try:
        header = check_shards([Path(d) for d in args.shard_dirs], Path(args.manifest) if args.manifest else None)
    except MergeError as err:
        raise UsageError(str(err)) from None
    with _claim(out_dir, header):
        count = copy_shards(out_dir, [Path(d) for d in args.shard_dirs])
        console.print(f"merged {count} cases from {len(args.shard_dirs)} shards into {out_dir}")
        return _finish(out_dir, header)


def cmd_report(args: argparse.Namespace) -> int:
    from wcbench.report.results import rebuild
    from wcbench.report.summary import print_summary

    try:
        with folder_lock(Path(args.results_dir), "wcbench report"):
            results = rebuild(Path(args.results_dir))
    except FolderBusyError as err:
        raise UsageError(str(err)) from err
    print_summary(results["summary"], title=str(args.results_dir))
    console.print(f"rebuilt {Path(args.results_dir) / 'report.html'}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from wcbench.data.suite import load_suite
    from wcbench.run.export import export_suite

    suite = load_suite(args.suite)
    with progress_bar() as progress:
        task = progress.add_task("exporting", total=len(suite.cases))
        manifest = export_suite(suite, args.out, on_case=lambda case: progress.advance(task),
                                formats=args.format or ["worldplay"])
    console.print(f"exported {len(suite.cases)} cases; put each generated video at videos/<id>.mp4 under "
                  f"{args.out} and run:  wcbench score --manifest {manifest} --out <results dir>")
    return 0


def cmd_suites(args: argparse.Namespace) -> int:
    from wcbench.data.suite import list_suites, load_suite

    table = Table(title="built-in suites")
    for column in ("name", "cases", "resolution", "hash", "description"):
        table.add_column(column)
    for name in list_suites():
        suite = load_suite(name)
        table.add_row(name, str(len(suite.cases)), f"{suite.width}x{suite.height}", suite.content_hash(),
                      suite.description)
    Console().print(table)
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from wcbench.models.registry import available_models

    for name in available_models():
        print(name)
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from wcbench.pose.calibrate_cli import run_calibration

    return run_calibration(args, console)


def cmd_submit(args: argparse.Namespace) -> int:
    from wcbench.run.audit import submit

    return submit(Path(args.results_dir), Path(args.leaderboards), console, args.sample, args.submitter, args.update,
                  args.jobs)


def cmd_verify(args: argparse.Namespace) -> int:
    from wcbench.run.audit import verify

    return verify(Path(args.results_dir), args.sample, args.seed, console, args.jobs)


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from wcbench.report.board import print_leaderboard

    return print_leaderboard(args.suite, Path(args.leaderboards), console, args.mode)


# ---------------------------------------------------------------- parser

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wcbench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    settings_help = "hydra-style settings, e.g. estimator=gt quality=default-drift seed=3 mode=worldcompass-compat"

    p = sub.add_parser("run", help="generate and score every case of a suite with a world model",
                       description="Generate each case clip by clip with MODEL, store the video and a record per "
                                   "case, score them, and write results.json, summary.csv, cases.csv and "
                                   "report.html. A rerun into the same --out finishes an interrupted run; a folder "
                                   "made by another command, suite or config, or in use by another process, is "
                                   "refused untouched. A model that raises or runs past timeout_s (per call) fails "
                                   "its case only. Shard across processes with "
                                   "`accelerate launch --multi_gpu --num_processes N -m wcbench run ...`.")
    p.add_argument("--suite", default="wc-mini", help="suite name (see `wcbench suites`) or YAML path [wc-mini]")
    p.add_argument("--model", default="oracle",
                   help="registered name (see `wcbench models`), videos:DIR, or MODULE:FACTORY, e.g. "
                        "examples.my_model:PanZoomModel (imported from the current folder or --include-path) [oracle]")
    p.add_argument("--model-args", metavar="K=V,...",
                   help="options for the model's factory, e.g. weights=/ckpt/mg2,mouse_value=0.1 "
                        "(values read as numbers, true/false, null or text)")
    p.add_argument("--include-path", action="append", metavar="DIR",
                   help="a folder to import MODULE:FACTORY (and loaders) from, repeatable")
    p.add_argument("--out", required=True, help="results folder (created; reused to resume)")
    p.add_argument("--limit", type=int, default=0,
                   help="run only the first N cases (a smoke test; rerun without --limit into the same --out to "
                        "finish the suite)")
    p.add_argument("--mask", default=None, metavar="IMAGE|x,y,w,h;...", help=MASK_HELP)
    p.add_argument("--score-workers", type=int, default=1, metavar="N",
                   help="processes that score clips while the model makes the next ones (per process under "
                        "accelerate); 0 scores in this process between the model's calls. The numbers do not "
                        "depend on it [1]")
    p.add_argument("overrides", nargs="*", help=settings_help)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("score", help="score videos made elsewhere, listed in a manifest",
                       description="Score every row of a CSV/JSONL manifest (columns id, video, actions; optional "
                                   "prompt, fov_deg, step_translation, step_degrees, mask). A bad row fails only its "
                                   "case. "
                                   "A manifest from `wcbench export` names its suite: its rows are checked against "
                                   "the suite, and the results folder can be submitted to the suite's leaderboard. "
                                   "A rerun into the same --out skips rows already scored from the same video. "
                                   "Shard across processes and machines with `accelerate launch --num_processes N "
                                   "-m wcbench score ...` (one --out that every process sees), or with --shard "
                                   "and `wcbench merge`.")
    p.add_argument("--manifest", required=True, help="CSV or JSONL manifest")
    p.add_argument("--out", required=True, help="results folder (created; reused to resume)")
    p.add_argument("--model-name", default=None,
                   help="the model that made the videos, as results and leaderboards name it "
                        "[videos:<the manifest's folder name>]")
    p.add_argument("--suite", default=None,
                   help="the suite's YAML file, when the manifest's suite is not built in (or to check a "
                        "manifest without suite columns against a suite)")
    p.add_argument("--mask", default=None, metavar="IMAGE|x,y,w,h;...", help=MASK_HELP)
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="videos scored side by side, one process and one thread each; the results do not depend "
                        "on it [the cores this process may use; 1 with learned scorers such as HPSv3]")
    p.add_argument("--shard", default=None, metavar="i/N",
                   help="score only shard i of N (every N-th row from the i-th), into its own --out; then "
                        "`wcbench merge` the N folders (a Slurm array: docs/runs.md)")
    p.add_argument("overrides", nargs="*", help=settings_help)
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("merge", help="merge the folders of `wcbench score --shard i/N` runs into one",
                       description="Check that SHARD_DIRS are all N shards of one manifest scored with one config, "
                                   "each complete, covering every row once; then write into OUT the folder one "
                                   "unsharded `wcbench score` would have written (the same case records, byte for "
                                   "byte).")
    p.add_argument("out", help="results folder to write (new, or an earlier merge of the same shards)")
    p.add_argument("shard_dirs", nargs="+", metavar="SHARD_DIR")
    p.add_argument("--manifest", default=None,
                   help="the manifest, when it is no longer where the shards recorded it (checked by its hash)")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser("report", help="rebuild results.json, summary.csv, cases.csv and report.html from stored "
                                      "records")
    p.add_argument("results_dir")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("export", help="write start images, prompts, scripts and native controls for a suite",
                       description="Write per case start.png, prompt.txt, script.txt, labels.json and the script in "
                                   "each --format, plus manifest.csv for `wcbench score` (units: docs/models.md).")
    p.add_argument("--suite", default="wc-mini")
    p.add_argument("--out", required=True)
    p.add_argument("--format", action="append", choices=FORMATS,
                   help="native controls to write, repeatable: worldplay (pose.json, the default), matrix-game "
                        "(matrix_game.json: per-frame keyboard + mouse arrays), text-actions (text_actions.json: "
                        "Yume/GameCraft-style key and camera strings with action sentences)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("calibrate", help="choose an estimator's thresholds on renders with known motion")
    p.add_argument("--estimator", default="opencv", help="registered estimator to calibrate (default: opencv)")
    p.add_argument("--scenes", type=int, default=6,
                   help="calibration scenes per family and track (basic, combined, diagonal and car scripts)")
    p.add_argument("--families", nargs="+", default=None, metavar="FAMILY",
                   help="scene families to calibrate on (default: all: room terrain street)")
    p.add_argument("--resolution", type=int, nargs=2, default=(160, 160), metavar=("W", "H"),
                   help="render size of the calibration videos (default: 160 160)")
    p.add_argument("--degrade", action="store_true",
                   help="also render JPEG, blur, noise and wobbling-content (warp) copies")
    p.add_argument("--stressors", action="store_true",
                   help="also render what generated video carries: still and moving cameras among people, animals "
                        "and vehicles, a keyboard HUD, subtitles, a smooth wobble")
    p.add_argument("--seed", type=int, default=9000, help="calibration seeds start here (keep apart from suites)")
    p.add_argument("--write", action="store_true", help="write the chosen thresholds into the estimator's config")
    p.set_defaults(func=cmd_calibrate)

    sub.add_parser("suites", help="list built-in suites").set_defaults(func=cmd_suites)
    sub.add_parser("models", help="list registered world models").set_defaults(func=cmd_models)

    default_boards = os.environ.get("WCBENCH_LEADERBOARDS", "leaderboards")
    sample_help = "cases to re-score from their videos [at least 3 or 10%%]"
    seed_help = "seed of the re-scored sample [drawn now, and printed]"
    rescore_jobs_help = ("videos re-scored side by side, one process each (the pool of `score --jobs`); the result "
                         "does not depend on it [the cores this process may use; 1 with learned scorers]")
    p = sub.add_parser("submit", help="check a results folder, re-score its videos, add it to leaderboards/<suite>",
                       description="Check a results folder of `wcbench run` (or of `wcbench score` on an exported "
                                   "manifest) end to end: suite, scorers, model name, every case exactly once, "
                                   "numbers against labels, summary groups, every video inside the folder against "
                                   "its hash. Then score every video again and compare (any difference refuses, "
                                   "naming the case), and add the row computed here to leaderboards/<suite>.jsonl "
                                   "(<suite>.worldcompass-compat.jsonl for compat-mode runs), re-rendering the .md.")
    p.add_argument("results_dir")
    p.add_argument("--leaderboards", default=default_boards)
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="quick mode: re-score only N cases, drawn under a seed made now and recorded in the entry "
                        "[all cases]")
    p.add_argument("--submitter", default=None,
                   help="who submits; a model name is one row per submitter [your login name]")
    p.add_argument("--update", action="store_true",
                   help="replace this submitter's row of the same model name instead of refusing")
    p.add_argument("--jobs", type=int, default=None, metavar="N", help=rescore_jobs_help)
    p.set_defaults(func=cmd_submit)
    p = sub.add_parser("verify", help="check every video's hash, re-score a sample, flag cases that differ",
                       description="Check every stored video against its record's hash and re-score a sample of "
                                   "cases with the recorded scorers; every missing or changed video and every "
                                   "differing case is flagged (exit status 1), and the check goes on.")
    p.add_argument("results_dir")
    p.add_argument("--sample", type=int, default=None, help=sample_help)
    p.add_argument("--seed", type=int, default=None, help=seed_help)
    p.add_argument("--jobs", type=int, default=None, metavar="N", help=rescore_jobs_help)
    p.set_defaults(func=cmd_verify)
    p = sub.add_parser("leaderboard", help="print a suite's leaderboard")
    p.add_argument("suite")
    p.add_argument("--leaderboards", default=default_boards)
    p.add_argument("--mode", default="default", choices=("default", "worldcompass-compat"),
                   help="which board: default-mode runs, or those scored with mode=worldcompass-compat")
    p.set_defaults(func=cmd_leaderboard)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/yellow]: finished cases are saved; rerun the same command to resume")
        return 130
    except (UsageError, OSError, ValueError, RuntimeError) as err:
        if os.environ.get("WCBENCH_DEBUG"):
            raise
        console.print(f"[red]error:[/red] {escape(str(err))}")  # escape: messages hold [brackets]
        console.print("[dim](set WCBENCH_DEBUG=1 for the full traceback)[/dim]")
        return 2


if __name__ == "__main__":
    sys.exit(main())
