"""The figures the README shows are the ones the leaderboard holds: the README's command-1 table
is the oracle's wc-mini entry of ``leaderboards/wc-mini.jsonl``, cell for cell. A re-run board
that moves a number fails here until the README is updated with it."""

from __future__ import annotations

import json
import re
from pathlib import Path

from wcbench.report.summary import format_ci, format_value

ROOT = Path(__file__).resolve().parents[2]


def _readme_table() -> dict[str, list[str]]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"Command 1 ends with this table.*?```\n(.*?)```", text, re.S)
    assert block, "README.md: the table after 'Command 1 ends with this table' is missing"
    rows = {}
    for line in block.group(1).splitlines():
        cells = line.split()
        if cells and re.fullmatch(r"[a-z]+/[a-z]+|overall", cells[0]):
            rows[cells[0]] = cells[1:]
    return rows


def _board_entry(model: str) -> dict:
    entries = [json.loads(line) for line in (ROOT / "leaderboards/wc-mini.jsonl").read_text().splitlines() if line]
    found = [entry for entry in entries if entry["model"] == model]
    assert len(found) == 1, f"leaderboards/wc-mini.jsonl: {len(found)} entries for {model}"
    return found[0]


def test_the_readme_table_is_the_oracle_board_entry():
    readme, summary = _readme_table(), _board_entry("oracle")["summary"]
    assert sorted(readme) == sorted(summary)
    for group, block in summary.items():
        want = [format_value(block["if_acc"]), format_ci(block, "if_acc"), format_value(block["if_trans_acc"]),
                format_value(block["if_rot_acc"]), format_value(block["vq"]), format_ci(block, "vq"), str(block["n"])]
        assert readme[group] == want, f"README.md row {group}: {readme[group]} != the board's {want}"
