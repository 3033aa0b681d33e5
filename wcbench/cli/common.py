"""What the ``wcbench`` commands share: their settings and scorers, the results folder (checked,
claimed, finished into results.json and report.html), the ``--mask`` check and the process launcher."""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator

from wcbench.core.environment import this_process_uses_a_gpu
from wcbench.core.storage import FolderBusyError, write_json
from wcbench.core.terminal import console
from wcbench.results.outdir import OutDirError, check_out_dir, claim_out_dir, require_folder
from wcbench.results.record import load_records


class UsageError(Exception):
    """Bad input the user can fix; printed without a traceback, exit status 2."""


def load_config(overrides: list[str]) -> Any:
    """The checked settings of ``wcbench run`` and ``score`` (:class:`wcbench.core.settings.RunSettings`)
    with ``key=value`` overrides; a bad one is a UsageError."""
    from wcbench.core.settings import SettingsError, load_run_settings

    try:
        return load_run_settings(overrides)
    except SettingsError as err:
        raise UsageError(str(err)) from err


def build_scorers(cfg: Any):
    """Estimator + quality scorer + mode from the settings, built as a results header names them."""
    from wcbench.results.scorers import build_scorers as build_named_scorers

    try:
        return build_named_scorers({"estimator": {"name": cfg.estimator, "options": dict(cfg.estimator_options)},
                                    "quality": {"name": cfg.quality, "options": dict(cfg.quality_options)},
                                    "mode": cfg.mode})
    except ValueError as err:  # an unknown mode or a scorer option the constructor does not take
        raise UsageError(str(err)) from err


def finish(out_dir: Path, header: dict, extra: dict | None = None) -> int:
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


def check_out(path: str) -> Path:
    """``--out`` as a folder path, refused (OutDirError) if it is a file."""
    out_dir = Path(path)
    require_folder(out_dir)
    return out_dir


@contextmanager
def claim(out_dir: Path, header: dict, accelerator: Any = None) -> Iterator[None]:
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


def checked_mask(spec: str | None) -> str | None:
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


class SingleProcess:
    """What cmd_run needs of an Accelerator, for installs without accelerate (one CPU process)."""

    is_main_process, process_index, num_processes, device = True, 0, 1, "cpu"

    def wait_for_everyone(self) -> None:
        pass


def launcher(device: str) -> Any:
    """An accelerate Accelerator (one per process under ``accelerate launch``), or one CPU process."""
    try:
        import torch
        from accelerate import Accelerator
    except ImportError:
        if device == "cuda":
            raise UsageError("device=cuda needs torch and accelerate: pip install -e '.[train]'") from None
        return SingleProcess()
    return Accelerator(cpu=device == "cpu" or not this_process_uses_a_gpu(torch))
