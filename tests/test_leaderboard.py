"""Leaderboard: submit accepts an honest run, refuses tampered numbers, duplicates and
incomplete runs; verify re-scores stored videos."""

import json
import shutil

import pytest

from wcbench.cli import main
from wcbench.leaderboard import SubmissionError, validate


@pytest.fixture(scope="module")
def honest_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("lb")
    suite = root / "lbtiny.yaml"
    suite.write_text("base: wc-mini\nname: lbtiny\nresolution: [96, 96]\nhorizons: {short: 125}\ncases_per_cell: 1\n")
    out = root / "run"
    assert main(["run", "--suite", str(suite), "--model", "oracle-lag", "--out", str(out)]) == 0
    return suite, out


def _copy(run, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(run, target)
    return target


def test_submit_accepts_and_renders(honest_run, tmp_path, monkeypatch):
    suite, run = honest_run
    boards = tmp_path / "boards"
    assert main(["submit", str(run), "--leaderboards", str(boards)]) == 0
    text = (boards / "lbtiny.md").read_text()
    assert "oracle-lag" in text and "IF acc" in text
    with pytest.raises(SubmissionError, match="already"):
        from wcbench.leaderboard import submit
        from rich.console import Console

        submit(run, boards, Console())


def test_tampered_numbers_are_refused(honest_run, tmp_path):
    suite, run = honest_run
    copy = _copy(run, tmp_path)
    results = json.loads((copy / "results.json").read_text())
    results["summary"]["overall"]["if_acc"] += 0.05
    (copy / "results.json").write_text(json.dumps(results))
    with pytest.raises(SubmissionError, match="summary overall.if_acc"):
        validate(copy)
    # editing a case record consistently in results.json and the record is still caught by its labels
    copy2 = _copy(run, tmp_path / "b")
    results = json.loads((copy2 / "results.json").read_text())
    case_id = results["cases"][0]["id"]
    record_path = copy2 / "cases" / f"{case_id}.json"
    record = json.loads(record_path.read_text())
    record["if_acc"] = results["cases"][0]["if_acc"] = 1.0
    record_path.write_text(json.dumps(record))
    (copy2 / "results.json").write_text(json.dumps(results))
    with pytest.raises(SubmissionError, match="does not match its clips"):
        validate(copy2)


def test_incomplete_run_is_refused(honest_run, tmp_path):
    suite, run = honest_run
    copy = _copy(run, tmp_path)
    next((copy / "cases").glob("*.json")).unlink()
    with pytest.raises(SubmissionError, match="incomplete run"):
        validate(copy)


def test_verify_flags_a_changed_video(honest_run, tmp_path):
    _, run = honest_run
    copy = _copy(run, tmp_path)
    assert main(["verify", str(copy), "--sample", "2"]) == 0
    from wcbench.video import read_video, write_video

    record = json.loads(next((copy / "cases").glob("*.json")).read_text())
    frames = read_video(copy / record["video"])
    write_video(copy / record["video"], frames[:, ::-1].copy())  # flip every frame upside down
    assert main(["verify", str(copy), "--sample", "2"]) == 1
