"""The ``--option KEY=VALUE`` estimator settings the estimator benchmarks and experiments accept."""

from __future__ import annotations

import argparse


def numeric_options(parser: argparse.ArgumentParser, items: list[str]) -> dict[str, int | float]:
    """``KEY=VALUE`` items as estimator options. Integers stay ints: window and block sizes in
    pixels must reach OpenCV as ints. A malformed item ends the program through ``parser``."""
    options: dict[str, int | float] = {}
    for item in items:
        key, _, value = item.partition("=")
        try:
            options[key] = int(value) if value.lstrip("-").isdigit() else float(value)
        except ValueError:
            parser.error(f"--option {item}: expected KEY=NUMBER")
    return options
