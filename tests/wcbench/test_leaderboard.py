"""Leaderboard: submit accepts an honest run (and the scores of an exported manifest made
elsewhere), re-scoring every video, and refuses tampered numbers, duplicates and incomplete
runs; verify checks every video and re-scores a sample, flagging and carrying on; frames/s
appears only with its hardware. Forged submissions: test_forgery.py."""

import csv
import json
import shutil

import pytest

from wcbench.cli import main
from wcbench.core.video import read_video, write_video
from wcbench.report.board import render_markdown
from wcbench.report.leaderboard import SubmissionError
from wcbench.run.audit import validate


def _copy(run, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(run, target)
    return target


def test_submit_rescores_all_accepts_and_renders(honest_run, tmp_path, capsys):
    suite, run = honest_run
    boards = tmp_path / "boards"
    assert main(["submit", str(run), "--leaderboards", str(boards), "--submitter", "alice"]) == 0
    assert "re-scored all 2 cases from their videos in" in " ".join(capsys.readouterr().err.split())
    text = (boards / "lbtiny.md").read_text()
    assert "oracle-lag" in text and "IF acc" in text and "| alice |" in text and "| all 2 |" in text
    entry = json.loads((boards / "lbtiny.jsonl").read_text())
    results = json.loads((run / "results.json").read_text())
    assert entry["rescored"] == {"cases": 2, "of": 2, "seed": None} and entry["submitter"] == "alice"
    assert entry["summary"]["overall"]["if_acc"] == pytest.approx(results["summary"]["overall"]["if_acc"])
    # one row per model name and submitter: a second is refused, --update replaces it, another submitter adds one
    assert main(["submit", str(run), "--leaderboards", str(boards), "--submitter", "alice", "--sample", "1"]) == 2
    assert "already on the leaderboard; pass --update" in " ".join(capsys.readouterr().err.split())
    assert main(["submit", str(run), "--leaderboards", str(boards), "--submitter", "alice", "--sample", "1",
                 "--update"]) == 0
    assert main(["submit", str(run), "--leaderboards", str(boards), "--submitter", "bob", "--sample", "1"]) == 0
    entries = [json.loads(line) for line in (boards / "lbtiny.jsonl").read_text().splitlines()]
    assert [(e["submitter"], e["rescored"]["cases"]) for e in entries] == [("alice", 1), ("bob", 1)]
    # the sample seed is drawn at submit time, not derived from the folder: two submissions differ
    assert entries[0]["rescored"]["seed"] != entries[1]["rescored"]["seed"]
    assert f"1 of 2 (seed {entries[0]['rescored']['seed']})" in (boards / "lbtiny.md").read_text()


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


def _records(folder):
    return {p.stem: json.loads(p.read_text()) for p in sorted((folder / "cases").glob("*.json"))}


def _flip_video(folder, record):
    path = folder / record["video"]
    write_video(path, read_video(path)[:, ::-1].copy())  # every frame upside down


def test_verify_checks_every_video_and_carries_on(honest_run, tmp_path, capsys):
    _, run = honest_run
    copy = _copy(run, tmp_path)
    assert main(["verify", str(copy)]) == 0
    records = list(_records(copy).values())
    _flip_video(copy, records[0])
    (copy / records[1]["video"]).unlink()
    capsys.readouterr()
    assert main(["verify", str(copy), "--sample", "0"]) == 1  # no re-score: the hashes alone flag both
    err = " ".join(capsys.readouterr().err.split())
    assert f"flagged case {records[0]['id']}: video" in err and "is not the one scored" in err
    assert f"flagged case {records[1]['id']}: video" in err and "is missing" in err


def _export_with_videos(suite_path, run, export_dir):
    """`wcbench export` of the suite into ``export_dir``, its manifest naming the run's videos
    copied to ``export_dir/videos`` (as if made elsewhere); returns the manifest's rows."""
    from wcbench.data.suite import load_suite
    from wcbench.run.export import export_suite

    manifest = export_suite(load_suite(suite_path), export_dir)
    rows = list(csv.DictReader(manifest.open()))
    (export_dir / "videos").mkdir()
    for row in rows:
        shutil.copy(run / "videos" / f"{row['id']}.avi", export_dir / "videos" / f"{row['id']}.avi")
        row["video"] = f"videos/{row['id']}.avi"
    with manifest.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return rows


def test_exported_manifest_scored_elsewhere_is_submitted_and_verified(honest_run, tmp_path, monkeypatch):
    """Videos made elsewhere from `wcbench export`'s manifest: `score --model-name` gives a
    folder that submit accepts (the same numbers as the run that made the videos) and verify
    passes, also when the manifest was named by a relative path and verify runs elsewhere."""
    suite_path, run = honest_run
    export_dir = tmp_path / "export"
    rows = _export_with_videos(suite_path, run, export_dir)
    scored = tmp_path / "scored"
    monkeypatch.chdir(tmp_path)
    assert main(["score", "--manifest", "export/manifest.csv", "--out", "scored", "--model-name", "elsewhere-wm",
                 "--suite", str(suite_path)]) == 0
    monkeypatch.chdir(export_dir / "videos")
    boards = tmp_path / "boards"
    assert main(["submit", str(scored), "--leaderboards", str(boards)]) == 0
    assert not list((export_dir / "videos").glob(".*"))  # the kept copies were made cleanly
    assert sorted(p.name for p in (scored / "videos").iterdir()) == sorted(f"{r['id']}.avi" for r in rows)
    entry = json.loads((boards / "lbtiny.jsonl").read_text())
    assert entry["model"] == "elsewhere-wm" and entry["command"] == "score"
    ran = json.loads((run / "results.json").read_text())["summary"]["overall"]
    assert entry["summary"]["overall"]["if_acc"] == ran["if_acc"] and entry["summary"]["overall"]["vq"] == ran["vq"]
    assert main(["verify", str(scored)]) == 0


def test_merged_shards_of_an_exported_manifest_are_submitted(honest_run, tmp_path):
    """`score --shard i/2` of an exported manifest keeps each shard's videos in its folder;
    `merge` carries them into the merged folder, which `submit --jobs 2` (the scoring pool)
    accepts with the numbers of the run that made the videos."""
    suite_path, run = honest_run
    rows = _export_with_videos(suite_path, run, tmp_path / "export")
    manifest = tmp_path / "export" / "manifest.csv"
    shards = [tmp_path / f"shard-{i}" for i in range(2)]
    for i, shard in enumerate(shards):
        assert main(["score", "--manifest", str(manifest), "--out", str(shard), "--model-name", "elsewhere-wm",
                     "--suite", str(suite_path), "--shard", f"{i}/2", "--jobs", "1"]) == 0
    merged = tmp_path / "merged"
    assert main(["merge", str(merged), *map(str, shards)]) == 0
    assert sorted(p.name for p in (merged / "videos").iterdir()) == sorted(f"{r['id']}.avi" for r in rows)
    boards = tmp_path / "boards"
    assert main(["submit", str(merged), "--leaderboards", str(boards), "--jobs", "2"]) == 0
    entry = json.loads((boards / "lbtiny.jsonl").read_text())
    ran = json.loads((run / "results.json").read_text())["summary"]["overall"]
    assert entry["rescored"]["cases"] == 2 and entry["summary"]["overall"]["if_acc"] == ran["if_acc"]


def test_frames_per_second_only_with_its_hardware():
    summary = {"overall": {"if_acc": 0.5, "if_trans_acc": 0.5, "if_rot_acc": 0.5, "vq": 0.8, "n_ok": 2}}
    base = {"summary": summary, "estimator": {"name": "opencv", "version": "4"}, "quality": {"name": "default"},
            "mode": "default"}
    entries = [{**base, "model_name": "measured", "interactivity": {"fps": 12.34, "hardware": "NVIDIA H200"}},
               {**base, "model_name": "old-entry", "interactivity": {"fps": 99460.0}},
               {**base, "model_name": "oracle", "interactivity": {}}]
    table = render_markdown("s", entries)
    assert "12.3 on NVIDIA H200" in table and "99460" not in table
    rows = {line.split(" | ")[1]: line for line in table.splitlines() if line.startswith("| ") and "model" not in line}
    assert rows["old-entry"].split(" | ")[-2] == "-" and rows["oracle"].split(" | ")[-2] == "-"
