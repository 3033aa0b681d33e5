"""Leaderboard: submit accepts an honest run (and the scores of an exported manifest made
elsewhere), refuses tampered numbers, duplicates, incomplete runs and every kind of forged
submission with a message naming the case; verify checks every video and re-scores a sample,
flagging and carrying on; frames/s appears only with its hardware."""

import csv
import json
import re
import shutil

import numpy as np
import pytest

from wcbench.cli import main
from wcbench.core.actions import NUM_ROTATION
from wcbench.core.video import read_video, write_video
from wcbench.report.leaderboard import SubmissionError, render_markdown, validate
from wcbench.report.results import rebuild


@pytest.fixture(scope="module")
def honest_run(tmp_path_factory, write_tiny_suite):
    root = tmp_path_factory.mktemp("lb")
    suite = write_tiny_suite(root, name="lbtiny", resolution=(96, 96))
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
        from wcbench.report.leaderboard import submit
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


def _records(folder):
    return {p.stem: json.loads(p.read_text()) for p in sorted((folder / "cases").glob("*.json"))}


def _save(folder, record, name=None):
    (folder / "cases" / f"{name or record['id']}.json").write_text(json.dumps(record))


def _relabel(record, detected):
    """Give a record other detected labels and the accuracies that follow from them, as a
    careful forger would."""
    commanded, detected = np.asarray(record["labels"]["commanded"]), np.asarray(detected)
    record["labels"]["detected"] = detected.tolist()
    for key, hit in (("if_acc", detected == commanded),
                     ("if_trans_acc", detected // NUM_ROTATION == commanded // NUM_ROTATION),
                     ("if_rot_acc", detected % NUM_ROTATION == commanded % NUM_ROTATION)):
        for clip in record["per_clip"]:
            clip[key] = float(hit[clip["frames"][0] - 1:clip["frames"][1]].mean())
        record[key] = float(np.mean([clip[key] for clip in record["per_clip"]]))


def _flip_video(folder, record):
    path = folder / record["video"]
    write_video(path, read_video(path)[:, ::-1].copy())  # every frame upside down


def _delete_video(folder, case_id, record):
    (folder / record["video"]).unlink()


def _alter_video(folder, case_id, record):
    _flip_video(folder, record)


def _alter_video_and_its_hash(folder, case_id, record):
    from wcbench.scoring.case import sha256_file

    _flip_video(folder, record)
    record["video_sha256"] = sha256_file(folder / record["video"])
    _save(folder, record)


def _add_a_case(folder, case_id, record):
    _save(folder, {**record, "id": "basic-short-007"})


def _store_a_case_twice(folder, case_id, record):
    _save(folder, record, name="zz-copy")


def _edit_detected_labels(folder, case_id, record):
    _relabel(record, record["labels"]["commanded"])  # claim every transition was followed
    _save(folder, record)


def _edit_commanded_labels(folder, case_id, record):
    record["labels"]["commanded"] = list(record["labels"]["detected"])
    _relabel(record, record["labels"]["detected"])
    _save(folder, record)


FORGERIES = {
    "deleted video": (_delete_video, "video .* is missing"),
    "altered video": (_alter_video, "is not the one scored"),
    "altered video with its hash": (_alter_video_and_its_hash, "re-scoring its video gives other detected labels"),
    "a case not in the suite": (_add_a_case, "case basic-short-007 is not in suite 'lbtiny'"),
    "a case stored twice": (_store_a_case_twice, "recorded more than once"),
    "edited detected labels": (_edit_detected_labels, "re-scoring its video gives other detected labels"),
    "edited commanded labels": (_edit_commanded_labels, "commanded labels are not the ones its script commands"),
}


@pytest.mark.parametrize("kind", list(FORGERIES))
def test_forged_submissions_are_refused_naming_the_case(honest_run, tmp_path, kind, capsys):
    """Each forgery is made consistently (results.json rebuilt from the edited records, as
    `wcbench report` does), then refused with the case named and nothing added to the board."""
    _, run = honest_run
    copy = _copy(run, tmp_path)
    case_id, record = next(iter(_records(copy).items()))
    forge, message = FORGERIES[kind]
    forge(copy, case_id, record)
    rebuild(copy)
    boards = tmp_path / "boards"
    assert main(["submit", str(copy), "--leaderboards", str(boards)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    named = "basic-short-007" if kind == "a case not in the suite" else case_id
    assert f"case {named}" in err and re.search(message, err), err
    assert not boards.exists()


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


def test_exported_manifest_scored_elsewhere_is_submitted_and_verified(honest_run, tmp_path, monkeypatch):
    """Videos made elsewhere from `wcbench export`'s manifest: `score --model-name` gives a
    folder that submit accepts (the same numbers as the run that made the videos) and verify
    passes, also when the manifest was named by a relative path and verify runs elsewhere."""
    from wcbench.run.export import export_suite
    from wcbench.data.suite import load_suite

    suite_path, run = honest_run
    export_dir = tmp_path / "export"
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
    scored = tmp_path / "scored"
    monkeypatch.chdir(tmp_path)
    assert main(["score", "--manifest", "export/manifest.csv", "--out", "scored", "--model-name", "elsewhere-wm",
                 "--suite", str(suite_path)]) == 0
    monkeypatch.chdir(export_dir / "videos")
    boards = tmp_path / "boards"
    assert main(["submit", str(scored), "--leaderboards", str(boards)]) == 0
    entry = json.loads((boards / "lbtiny.jsonl").read_text())
    assert entry["model"] == "elsewhere-wm" and entry["command"] == "score"
    ran = json.loads((run / "results.json").read_text())["summary"]["overall"]
    assert entry["summary"]["overall"]["if_acc"] == ran["if_acc"] and entry["summary"]["overall"]["vq"] == ran["vq"]
    assert main(["verify", str(scored)]) == 0


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
