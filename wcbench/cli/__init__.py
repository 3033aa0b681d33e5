"""The ``wcbench`` command line.

    wcbench run --suite wc-mini --model oracle --out runs/oracle      generate + score a suite
    wcbench score --manifest videos.csv --out runs/mine               score videos made elsewhere
    wcbench merge runs/all runs/shard-0 runs/shard-1                  join `score --shard i/N` folders
    wcbench report runs/oracle                                        rebuild tables and report.html
    wcbench export --suite wc600 --out export/                        start images, prompts, scripts, poses
    wcbench calibrate --estimator opencv                              choose an estimator's thresholds
    wcbench submit runs/oracle | verify runs/oracle | leaderboard wc-mini

Settings are key=value after the options: ``estimator=gt seed=3 mode=worldcompass-compat`` (every setting,
its default and meaning: ``wcbench run --help-settings``).
Exit status: 0 all cases scored, 1 some cases failed, 2 bad input (the message says what to fix).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from rich.markup import escape

# The command modules import what each command needs (pandas, matplotlib, OpenCV, SciPy, hydra)
# when it runs, so that `wcbench --help` answers at once.
from wcbench.cli.common import UsageError
from wcbench.cli.prepare import cmd_calibrate, cmd_export, cmd_models, cmd_suites
from wcbench.cli.report import cmd_leaderboard, cmd_report, cmd_submit, cmd_verify
from wcbench.cli.run import cmd_run
from wcbench.cli.score import cmd_merge, cmd_score
from wcbench.core.controls import FORMATS
from wcbench.core.terminal import console

MASK_HELP = ("a burnt-in overlay (keyboard HUD, watermark) to leave out of camera tracking: an image whose nonzero "
             "pixels cover it, or rectangles x,y,w,h;... in the video's pixels (overlays that stay put while the "
             "picture moves are found without it; docs/estimator.md)")


class PrintSettings(argparse.Action):
    """``--help-settings``: print every setting of ``run`` and ``score`` with its default and help, and exit."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        from wcbench.core.settings import RunSettings, settings_help

        print(settings_help(RunSettings, "settings of wcbench run and score (key=value after the options):"))
        parser.exit()


def _add_settings(p: argparse.ArgumentParser, func: Callable[[argparse.Namespace], int]) -> None:
    """The ``key=value`` settings that ``run`` and ``score`` share, their ``--help-settings``, and the command."""
    p.add_argument("overrides", nargs="*",
                   help="settings as key=value, e.g. quality=default-drift seed=3 mode=worldcompass-compat "
                        "(every setting: --help-settings)")
    p.add_argument("--help-settings", action=PrintSettings, help="print every setting with its default and exit")
    p.set_defaults(func=func)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wcbench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
    _add_settings(p, cmd_run)

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
    _add_settings(p, cmd_score)

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
