"""The ``wctrain`` command line.

    wctrain pretrain [key=value ...]     supervised flow matching for tinywm (conf/pretrain.yaml)
    wctrain train [key=value ...]        clip-level NFT post-training (conf/train.yaml)

Both resume when rerun with the same run_dir. Multi-process:
    accelerate launch --multi_gpu --num_processes 2 -m wctrain train rl.steps=20
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

console = Console(stderr=True)
CONF_DIR = Path(__file__).parent / "conf"


def load_config(name: str, overrides: list[str]) -> Any:
    """Compose ``conf/<name>.yaml`` with hydra-style ``key=value`` overrides."""
    from hydra import compose, initialize_config_dir

    bad = [item for item in overrides if "=" not in item]
    if bad:
        raise ValueError(f"unexpected argument(s) {bad}: settings are key=value, e.g. rl.steps=20")
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name=name, overrides=overrides)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="wctrain", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in (("pretrain", "pretrain tinywm with supervised flow matching on rendered trajectories"),
                       ("train", "post-train with clip-level NFT against wcbench's IF and VQ scorers")):
        p = sub.add_parser(name, help=text, description=text + f"; settings from wctrain/conf/{name}.yaml")
        p.add_argument("overrides", nargs="*", help="hydra-style settings, e.g. rl.steps=20 run_dir=runs/x")
    args = parser.parse_args(argv)
    try:
        cfg = load_config(args.command, args.overrides)
        if args.command == "pretrain":
            from wctrain.pretrain import pretrain

            console.print(f"exported {pretrain(cfg)}")
        else:
            from wctrain.trainer import train

            console.print(f"run folder {train(cfg)}")
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/yellow]: rerun the same command to resume from the last checkpoint")
        return 130
    except Exception as err:  # noqa: BLE001 - one readable line unless debugging
        if os.environ.get("WCBENCH_DEBUG") or not isinstance(err, (ValueError, FileNotFoundError)):
            raise
        console.print(f"[red]error:[/red] {err}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
