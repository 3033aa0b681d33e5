"""Results folders the leaderboard tests submit, forge and verify: made once per session."""

import pytest

from wcbench.cli import main


@pytest.fixture(scope="session")
def honest_run(tmp_path_factory, write_tiny_suite):
    """(suite file, results folder) of `wcbench run` with oracle-lag on a 2-case 96x96 suite."""
    root = tmp_path_factory.mktemp("lb")
    suite = write_tiny_suite(root, name="lbtiny", resolution=(96, 96))
    out = root / "run"
    assert main(["run", "--suite", str(suite), "--model", "oracle-lag", "--out", str(out)]) == 0
    return suite, out
