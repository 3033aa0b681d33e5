"""The terminal every command writes to: one console on stderr (stdout stays free for tables a
user may pipe) and the progress bar that long commands show."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console(stderr=True)


def progress_bar() -> Progress:
    """A bar with the task's description, done / total, elapsed and remaining time."""
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=console)
