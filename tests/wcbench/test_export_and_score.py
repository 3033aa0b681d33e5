"""`wcbench export` and `wcbench score --manifest`: round trip, bad rows fail alone, exit status,
named manifest problems (folder, encoding, unquoted commas), decoder warnings, suite checks."""

import csv
import json

import cv2
import numpy as np
import pytest

from wcbench.cli import main
from wcbench.core.actions import parse_script
from wcbench.core.controls import load_worldplay_json
from wcbench.core.video import write_video
from wcbench.data.suite import load_suite
from wcbench.run.export import export_suite
from wcbench.data.scenes import case_world
from wcbench.data.scenes.synthetic import render_frames


@pytest.fixture()
def tiny_suite(tmp_path, write_tiny_suite):
    return load_suite(write_tiny_suite(tmp_path, resolution=(160, 128)))


def test_export_writes_everything_and_no_partials(tiny_suite, tmp_path):
    out = tmp_path / "export"
    manifest = export_suite(tiny_suite, out)
    rows = list(csv.DictReader(manifest.open()))
    assert [r["id"] for r in rows] == [c.id for c in tiny_suite.cases]
    for case in tiny_suite.cases:
        folder = out / case.id
        assert {p.name for p in folder.iterdir()} == {"start.png", "prompt.txt", "script.txt", "labels.json",
                                                      "pose.json"}
        labels = json.loads((folder / "labels.json").read_text())
        assert len(labels["labels"]) == 124
        poses, _ = load_worldplay_json(folder / "pose.json")
        assert len(poses) == 32
    assert not list(out.glob(".*partial*"))


def test_export_resumes_after_interruption(tiny_suite, tmp_path, monkeypatch):
    out = tmp_path / "export"
    import wcbench.run.export as export

    calls = []
    original = export.case_world

    def flaky(suite, case):
        calls.append(case.id)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(suite, case)

    monkeypatch.setattr(export, "case_world", flaky)
    with pytest.raises(KeyboardInterrupt):
        export_suite(tiny_suite, out)
    assert not (out / "manifest.csv").exists()  # nothing that looks complete
    assert (out / tiny_suite.cases[0].id).is_dir() and not (out / tiny_suite.cases[1].id).exists()
    monkeypatch.setattr(export, "case_world", original)
    export_suite(tiny_suite, out)
    assert (out / "manifest.csv").exists() and not list(out.glob(".*partial*"))


def test_score_manifest_with_bad_rows(tiny_suite, tmp_path):
    """Oracle videos score ~1 with the default estimator; a short video, a missing file and a bad
    script fail with reasons while the good rows are scored; exit status 1."""
    export_dir = tmp_path / "export"
    export_suite(tiny_suite, export_dir)
    rows = list(csv.DictReader((export_dir / "manifest.csv").open()))
    (export_dir / "videos").mkdir()
    for case in tiny_suite.cases:
        world = case_world(tiny_suite, case)
        frames = render_frames(world.scene, world.poses, world.K, tiny_suite.width, tiny_suite.height)
        write_video(export_dir / "videos" / f"{case.id}.avi", frames)
    for row in rows:
        row["video"] = f"videos/{row['id']}.avi"
        del row["suite"], row["suite_hash"]  # free-standing videos: rows are not checked against a suite
    good = rows[0]
    rows.append({**good, "id": "short", "actions": "w-30"})
    rows.append({**good, "id": "missing", "video": "videos/nothing.mp4"})
    rows.append({**good, "id": "badscript", "actions": "w-3, fly-28"})
    manifest = export_dir / "scored.csv"
    with manifest.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path / "scored"
    assert main(["score", "--manifest", str(manifest), "--out", str(out)]) == 1
    results = json.loads((out / "results.json").read_text())
    by_id = {c["id"]: c for c in results["cases"]}
    assert {"estimator", "quality", "version", "cases", "summary"} <= set(results)
    for case in tiny_suite.cases:
        assert by_id[case.id]["status"] == "ok" and by_id[case.id]["if_acc"] >= 0.95
        assert by_id[case.id]["vq"] is not None
    assert "needs 121" in by_id["short"]["error"] and by_id["short"]["status"] == "failed"
    assert "nothing.mp4" in by_id["missing"]["error"]
    assert "fly" in by_id["badscript"]["error"]
    # Scored and failed rows store the fields earlier versions wrote (a failed row: what was known).
    failed_fields = {"id", "track", "horizon", "status", "error", "script", "prompt", "video", "if_acc", "if_trans_acc",
                     "if_rot_acc", "vq", "vq_raw", "per_clip"}
    assert set(json.loads((out / "cases" / "missing.json").read_text())) == failed_fields
    assert set(json.loads((out / "cases" / f"{good['id']}.json").read_text())) == failed_fields | {
        "num_frames", "latents_per_clip", "fov_deg", "labels", "paths", "confidence_mean", "video_sha256", "timing"}
    overall = results["summary"]["overall"]
    assert overall["n_ok"] == len(tiny_suite.cases) and overall["n_failed"] == 3
    assert overall["if_acc"] == pytest.approx(np.mean([by_id[c.id]["if_acc"] for c in tiny_suite.cases]))


def test_bad_manifest_is_a_usage_error(tmp_path):
    manifest = tmp_path / "m.csv"
    manifest.write_text("id,video\nx,y.mp4\n")
    assert main(["score", "--manifest", str(manifest), "--out", str(tmp_path / "o")]) == 2


def test_manifest_input_problems_are_named(tmp_path, capsys):
    def error():
        return " ".join(capsys.readouterr().err.split())

    assert main(["score", "--manifest", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "is a folder; give the manifest file inside it" in error()
    latin = tmp_path / "latin.csv"
    latin.write_bytes("id,video,actions,prompt\na,a.mp4,w-1,room\nb,b.mp4,w-1,caf\xe9\n".encode("latin-1"))
    assert main(["score", "--manifest", str(latin), "--out", str(tmp_path / "o")]) == 2
    assert "latin.csv: line 3: not UTF-8 (byte 0xe9)" in error()
    assert not (tmp_path / "o").exists()


def test_bom_commas_and_damaged_videos(tmp_path):
    """A UTF-8 BOM is read through; an unquoted script split by commas fails its row with a
    hint; a video the decoder complains about is scored with a warning in its record."""
    script = parse_script("d-2, right-3, w-3")
    rng = np.random.default_rng(3)
    texture = (rng.random((96, 128 + script.num_frames, 3)) * 255).astype(np.uint8)
    writer = cv2.VideoWriter(str(tmp_path / "v.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), 16, (128, 96))
    for t in range(script.num_frames):
        writer.write(np.ascontiguousarray(texture[:, t:t + 128]))
    writer.release()
    data = bytearray((tmp_path / "v.mp4").read_bytes())
    for k in range(3000, len(data) - 3000, 1499):
        data[k] ^= 0x55
    (tmp_path / "damaged.mp4").write_bytes(bytes(data))
    text = (f'id,video,actions\nclean,v.mp4,"{script.format()}"\ndamaged,damaged.mp4,"{script.format()}"\n'
            f"split,v.mp4,{script.format()}\n")
    (tmp_path / "m.csv").write_bytes(b"\xef\xbb\xbf" + text.encode())
    out = tmp_path / "out"
    assert main(["score", "--manifest", str(tmp_path / "m.csv"), "--out", str(out)]) == 1
    by_id = {c["id"]: c for c in json.loads((out / "results.json").read_text())["cases"]}
    assert by_id["clean"]["status"] == "ok" and "warnings" not in by_id["clean"]
    assert by_id["damaged"]["decoder_errors"] > 0 and "frames may be damaged" in by_id["damaged"]["warnings"][0]
    assert by_id["split"]["status"] == "failed"
    assert "line 4: 2 more field(s) than the header" in by_id["split"]["error"] and "quoted" in by_id["split"]["error"]


def test_exported_manifest_names_its_suite_and_is_checked_against_it(tiny_suite, tmp_path, capsys):
    export_dir = tmp_path / "export"
    export_suite(tiny_suite, export_dir)
    rows = list(csv.DictReader((export_dir / "manifest.csv").open()))
    assert {(r["suite"], r["suite_hash"]) for r in rows} == {(tiny_suite.name, tiny_suite.content_hash())}
    # a built-in name is not this suite: the manifest's hash tells
    assert main(["score", "--manifest", str(export_dir / "manifest.csv"), "--out", str(tmp_path / "o"),
                 "--suite", "wc-mini"]) == 2
    assert "re-export" in capsys.readouterr().err
    rows[0]["actions"] = "w-31"
    manifest = export_dir / "edited.csv"
    with manifest.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows[:1])
    out = tmp_path / "scored"
    assert main(["score", "--manifest", str(manifest), "--out", str(out), "--suite", tiny_suite.source]) == 1
    record = json.loads((out / "results.json").read_text())["cases"][0]
    assert "are not suite 'tiny''s script" in record["error"]
