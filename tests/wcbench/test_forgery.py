"""The forgery suite: every way found to put a forged result on a leaderboard, each made as a
careful forger would (numbers recomputed, results.json rebuilt), each refused by `wcbench submit`
with the case or field named and nothing written to the board. The honest folder they start
from is accepted (test_leaderboard.py); so is an honest compat-mode run, on its own board."""

import json
import re
import shutil

import numpy as np
import pytest

from wcbench.cli import main
from wcbench.core.actions import NUM_ROTATION
from wcbench.core.video import read_video, write_video
from wcbench.report.board import render_markdown
from wcbench.report.results import rebuild
from wcbench.results.videos import sha256_file

FIRST, LAST = "basic-short-000", "combined-short-000"  # the honest run's cases, in id order


def _copy(run, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(run, target)
    return target


def _records(folder):
    return {p.stem: json.loads(p.read_text()) for p in sorted((folder / "cases").glob("*.json"))}


def _save(folder, record, name=None):
    (folder / "cases" / f"{name or record['id']}.json").write_text(json.dumps(record))


def _relabel(record, detected):
    """Give a record other detected labels and the accuracies that follow from them."""
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


# ---------------------------------------------------------------- forged records (results.json rebuilt after)

def _delete_video(folder, records, run):
    (folder / records[FIRST]["video"]).unlink()


def _alter_video(folder, records, run):
    _flip_video(folder, records[FIRST])


def _alter_video_and_its_hash(folder, records, run):
    _flip_video(folder, records[FIRST])
    records[FIRST]["video_sha256"] = sha256_file(folder / records[FIRST]["video"])
    _save(folder, records[FIRST])


def _add_a_case(folder, records, run):
    _save(folder, {**records[FIRST], "id": "basic-short-007"})


def _store_a_case_twice(folder, records, run):
    _save(folder, records[FIRST], name="zz-copy")


def _edit_detected_labels(folder, records, run):
    _relabel(records[FIRST], records[FIRST]["labels"]["commanded"])  # claim every transition was followed
    _save(folder, records[FIRST])


def _edit_labels_outside_any_sample(folder, records, run):
    """F3: the last case in id order, which a 1-case sample seeded by the folder would skip."""
    _relabel(records[LAST], records[LAST]["labels"]["commanded"])
    _save(folder, records[LAST])


def _edit_commanded_labels(folder, records, run):
    record = records[FIRST]
    record["labels"]["commanded"] = list(record["labels"]["detected"])
    _relabel(record, record["labels"]["detected"])
    _save(folder, record)


def _point_at_another_runs_videos(folder, records, run):
    for record in records.values():  # same files, same hashes: only where they lie differs
        record["video"] = str((run / record["video"]).resolve())
        _save(folder, record)


def _link_to_a_video_outside(folder, records, run):
    path = folder / records[FIRST]["video"]
    path.unlink()
    path.symlink_to((run / records[FIRST]["video"]).resolve())


def _copy_one_cases_video_over_another(folder, records, run):
    shutil.copy(folder / records[FIRST]["video"], folder / records[LAST]["video"])
    records[LAST]["video_sha256"] = records[FIRST]["video_sha256"]
    _save(folder, records[LAST])


def _swap_two_videos(folder, records, run):
    first, last = folder / records[FIRST]["video"], folder / records[LAST]["video"]
    first.rename(folder / "tmp.avi")
    last.rename(first)
    (folder / "tmp.avi").rename(last)
    records[FIRST]["video_sha256"], records[LAST]["video_sha256"] = \
        records[LAST]["video_sha256"], records[FIRST]["video_sha256"]
    _save(folder, records[FIRST])
    _save(folder, records[LAST])


RECORD_FORGERIES = {
    "deleted video": (_delete_video, FIRST, "video .* is missing"),
    "altered video": (_alter_video, FIRST, "is not the one scored"),
    "altered video with its hash": (_alter_video_and_its_hash, FIRST, "re-scoring its video gives other detected"),
    "a case not in the suite": (_add_a_case, "basic-short-007", "is not in suite 'lbtiny'"),
    "a case stored twice": (_store_a_case_twice, FIRST, "recorded more than once"),
    "edited detected labels": (_edit_detected_labels, FIRST, "re-scoring its video gives other detected labels"),
    "labels edited outside any sample": (_edit_labels_outside_any_sample, LAST,
                                         "re-scoring its video gives other detected labels"),
    "edited commanded labels": (_edit_commanded_labels, FIRST, "commanded labels are not the ones its script"),
    "videos of another run": (_point_at_another_runs_videos, FIRST, "is not the folder's own videos/"),
    "a link to a video outside": (_link_to_a_video_outside, FIRST, "links to a file outside"),
    "one case's video over another's": (_copy_one_cases_video_over_another, LAST,
                                        f"its video is the same file \\(sha256\\) as case {FIRST}'s"),
    "two videos swapped, hashes updated": (_swap_two_videos, FIRST, "re-scoring its video gives other"),
}


def _submit_is_refused(folder, tmp_path, capsys) -> str:
    boards = tmp_path / "boards"
    capsys.readouterr()
    assert main(["submit", str(folder), "--leaderboards", str(boards)]) == 2
    assert not boards.exists()
    return " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize("kind", list(RECORD_FORGERIES))
def test_forged_records_are_refused_naming_the_case(honest_run, tmp_path, kind, capsys):
    _, run = honest_run
    copy = _copy(run, tmp_path)
    forge, case, message = RECORD_FORGERIES[kind]
    forge(copy, _records(copy), run)
    rebuild(copy)  # as `wcbench report` would: results.json agrees with the forged records
    err = _submit_is_refused(copy, tmp_path, capsys)
    assert f"case {case}" in err and re.search(message, err), err


# ---------------------------------------------------------------- forged header fields (results.json edited)

def _edit_results(folder, edit):
    path = folder / "results.json"
    results = json.loads(path.read_text())
    edit(results)
    path.write_text(json.dumps(results))


HEADER_FORGERIES = {
    "markdown in the model name": (lambda r: r.update(model_name="x\n| 1 | FAKE-SOTA | 1.000 |"), "model_name"),
    "html in the model name": (lambda r: r.update(model_name="<img src=x onerror=alert(1)>"), "model_name"),
    "a summary group the suite lacks": (
        lambda r: r["summary"].update({"combined/zz": {**r["summary"]["overall"], "if_acc": 1.0}}),
        "summary group 'combined/zz' is not one of suite 'lbtiny'"),
    "a summary group dropped": (lambda r: r["summary"].pop("combined/short"),
                                "summary group 'combined/short' is missing"),
    "frames/s that is no number": (lambda r: r.update(interactivity={"fps": "99999 | x", "hardware": "1x potato"}),
                                   "interactivity.fps"),
    "a hardware label as long as a page": (
        lambda r: r.update(interactivity={"fps": 9.0, "hardware": "x" * 5000}), "interactivity.hardware"),
}


@pytest.mark.parametrize("kind", list(HEADER_FORGERIES))
def test_forged_header_fields_are_refused_naming_the_field(honest_run, tmp_path, kind, capsys):
    _, run = honest_run
    copy = _copy(run, tmp_path)
    edit, message = HEADER_FORGERIES[kind]
    _edit_results(copy, edit)
    err = _submit_is_refused(copy, tmp_path, capsys)
    assert "results.json" in err and message in err, err


def test_a_model_name_with_markup_is_refused_before_scoring(tmp_path, capsys):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"id": "a", "video": "a.mp4", "actions": "w-31"}) + "\n")
    out = tmp_path / "out"
    assert main(["score", "--manifest", str(manifest), "--out", str(out),
                 "--model-name", "x\n| 1 | FAKE-SOTA | 1.000 |"]) == 2
    assert "--model-name" in capsys.readouterr().err and not out.exists()


def test_the_board_escapes_every_cell_and_never_ranks_speed():
    overall = {"if_acc": 0.5, "if_trans_acc": 0.5, "if_rot_acc": 0.5, "vq": 0.8, "n_ok": 2}
    base = {"estimator": {"name": "opencv", "version": "12"}, "quality": {"name": "default"}, "mode": "default"}
    entries = [{**base, "model_name": "slow but right", "summary": {"overall": {**overall, "if_acc": 0.9}},
                "interactivity": {"fps": 1.0, "hardware": "a GPU"}},
               {**base, "model_name": "fast | 1 | FAKE\n| 2", "summary": {"overall": overall},
                "interactivity": {"fps": 99999.0, "hardware": "1x potato <script>alert(1)</script>"}}]
    table = render_markdown("s", entries)
    rows = [line for line in table.splitlines() if line.startswith("| ") and "IF acc" not in line]
    assert len(rows) == 2 and all(row.count(" | ") == 10 for row in rows)  # 11 cells, none split or added
    assert rows[0].startswith("| 1 | slow but right |")  # ranked by IF, whatever the reported speed
    assert "fast &#124; 1 &#124; FAKE &#124; 2" in rows[1] and "<script>" not in table
    assert "99999.0 on 1x potato &lt;script&gt;" in rows[1] and "frames/s (self-reported)" in table


# ---------------------------------------------------------------- compat-mode runs

@pytest.fixture(scope="module")
def compat_run(honest_run, tmp_path_factory):
    suite, _ = honest_run
    out = tmp_path_factory.mktemp("compat") / "run"
    assert main(["run", "--suite", str(suite), "--model", "oracle-lag", "--out", str(out),
                 "mode=worldcompass-compat"]) == 0
    return out


def test_compat_runs_are_recomputed_and_listed_on_their_own_board(compat_run, tmp_path, capsys):
    copy = _copy(compat_run, tmp_path)
    records = _records(copy)
    for record in records.values():  # the accuracy raised consistently in every record and the summary
        record["if_acc"] = 1.0
        for clip in record["per_clip"]:
            clip["if_acc"] = 1.0
        _save(copy, record)
    rebuild(copy)
    err = _submit_is_refused(copy, tmp_path, capsys)
    assert f"case {FIRST}" in err and "re-scoring its video gives if_acc=" in err, err
    boards = tmp_path / "boards"
    assert main(["submit", str(compat_run), "--leaderboards", str(boards), "--sample", "1"]) == 2
    assert "only accepted whole" in capsys.readouterr().err
    assert main(["submit", str(compat_run), "--leaderboards", str(boards)]) == 0
    assert sorted(p.name for p in boards.iterdir()) == ["lbtiny.worldcompass-compat.jsonl",
                                                        "lbtiny.worldcompass-compat.md"]
    assert "worldcompass-compat mode" in (boards / "lbtiny.worldcompass-compat.md").read_text()
