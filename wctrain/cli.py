"""The ``wctrain`` command line.

    wctrain pretrain [key=value ...]     supervised flow matching
    wctrain train [key=value ...]        clip-level NFT post-training

The model: model=tinywm (default), model=tinywan, or model=package.module:factory, with the
factory's arguments as model_options.KEY=VALUE (e.g. model_options.checkpoint=PATH). Rewards:
reward.funcs=[following,quality] reward.weights=[0.9,0.1] (or package.module:function).
Both commands resume when rerun with the same run_dir. Multi-process / multi-GPU:
    accelerate launch --multi_gpu --num_processes 2 -m wctrain train rl.steps=20
    accelerate launch --config_file wctrain/conf/accelerate/fsdp.yaml -m wctrain train ...
"""

from __future__ import annotations

import argparse
import os
import sys

from rich.console import Console

from wcbench.core.settings import settings_help
from wctrain.config import SCHEMAS, load_config

__all__ = ["load_config", "main"]
console = Console(stderr=True)
COMMANDS = {"pretrain": "pretrain a model (tinywm by default) with supervised flow matching on rendered trajectories",
            "train": "post-train a model with clip-level NFT against wcbench's scorers"}


def settings_text(name: str) -> str:
    """Every setting of ``wctrain <name>`` with its default and help, for ``--help``."""
    return settings_help(SCHEMAS[name], f"settings of wctrain {name} (key=value; conf/{name}.yaml overrides the "
                                       "defaults):")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="wctrain", description=__doc__,
                                     epilog="\n\n".join(settings_text(name) for name in ("train", "pretrain")),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in COMMANDS.items():
        p = sub.add_parser(name, help=text, description=text, epilog=settings_text(name),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("overrides", nargs="*", help=f"settings as key=value (listed below), e.g. "
                       f"{'rl.steps=20' if name == 'train' else 'train.steps=200'} run_dir=runs/x")
    args = parser.parse_args(argv)
    try:
        cfg = load_config(args.command, args.overrides)
        # imported here, not on top: they need torch (the [train] extra); `wctrain --help` does not
        if args.command == "pretrain":
            from wctrain.pretrain import pretrain

            console.print(f"exported {pretrain(cfg)}")
        else:
            from wctrain.rl.trainer import train

            console.print(f"run folder {train(cfg)}")
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/yellow]: rerun the same command to resume from the last checkpoint")
        return 130
    except Exception as err:  # noqa: BLE001 - one readable line unless debugging
        bad_input = (ValueError, FileNotFoundError)  # a bad setting is a ValueError (SettingsError)
        if os.environ.get("WCBENCH_DEBUG") or not isinstance(err, bad_input):
            raise
        console.print(f"[red]error:[/red] {err}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
