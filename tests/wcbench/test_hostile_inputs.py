"""Inputs that once broke whole runs: videos too small, too short or flat fail their own case;
text a spreadsheet would run as a formula reaches no CSV raw; a killed writer's half-written
files are gone when the folder is claimed again."""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from wcbench.cli import main
from wcbench.core.storage import neutralize_cell, remove_partials
from wcbench.core.video import write_video
from wcbench.results.outdir import claim_out_dir

SCRIPT = "w-31"  # 125 frames


@pytest.fixture(scope="module")
def hostile_scored(tmp_path_factory):
    """`wcbench score --jobs 2` of a manifest with a textured 32x32 video, 2x2 and 8x8 ones, a
    single frame, a flat grey one and a formula in a script cell: each is scored in a pool worker."""
    root = tmp_path_factory.mktemp("hostile")
    rng = np.random.default_rng(0)
    videos = {"good": rng.integers(0, 256, (125, 32, 32, 3)), "px2": rng.integers(0, 256, (125, 2, 2, 3)),
              "px8": rng.integers(0, 256, (125, 8, 8, 3)), "single": rng.integers(0, 256, (1, 32, 32, 3)),
              "flat": np.full((125, 32, 32, 3), 128)}
    rows = []
    for name, frames in videos.items():
        write_video(root / f"{name}.avi", frames.astype(np.uint8))
        rows.append({"id": name, "video": f"{name}.avi", "actions": SCRIPT})
    rows.append({"id": "-formula", "video": "good.avi", "actions": "=cmd|' /C calc'!A0"})
    (root / "m.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = root / "out"
    rc = main(["score", "--manifest", str(root / "m.jsonl"), "--out", str(out), "--jobs", "2"])  # in the pool
    return rc, out


def test_degenerate_videos_fail_their_own_case(hostile_scored):
    rc, out = hostile_scored
    assert rc == 1  # some cases failed, the others scored, results written
    cases = {c["id"]: c for c in json.loads((out / "results.json").read_text())["cases"]}
    assert cases["good"]["status"] == "ok"
    assert "frames are 2x2 px; scoring needs at least 16 px a side" in cases["px2"]["error"]
    assert "frames are 8x8 px" in cases["px8"]["error"]
    assert "video has 1 frames" in cases["single"]["error"]
    assert "one flat colour" in cases["flat"]["error"]


def test_csv_cells_are_neutralised(hostile_scored):
    _, out = hostile_scored
    rows = {r["id"]: r for r in csv.DictReader((out / "cases.csv").open())}
    assert "'-formula" in rows and rows["'-formula"]["script"] == "'=cmd|' /C calc'!A0"
    assert rows["good"]["script"] == SCRIPT  # plain text and numbers as they were
    assert float(rows["good"]["if_acc"]) >= 0.0
    assert [neutralize_cell(v) for v in ("@SUM(A1)", "+1", "\tx", "\rx", "a=b", -0.5)] == \
        ["'@SUM(A1)", "'+1", "'\tx", "'\rx", "a=b", -0.5]


def test_exported_manifest_is_neutralised(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\nresolution: [64, 48]\nhorizons: {short: 125}\ncases:\n"
                     f"  - {{id: c1, track: basic, horizon: short, script: '{SCRIPT}', prompt: '=1+1'}}\n")
    assert main(["export", "--suite", str(suite), "--out", str(tmp_path / "x")]) == 0
    row = next(csv.DictReader((tmp_path / "x" / "manifest.csv").open()))
    assert row["prompt"] == "'=1+1" and row["actions"] == SCRIPT


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_killed_writers_partials_are_removed_on_claim(tmp_path):
    header = {"command": "run", "suite_hash": "s", "config_hash": "c"}
    with claim_out_dir(tmp_path / "out", header):
        pass
    dead, live = _dead_pid(), os.getpid()
    litter = [tmp_path / "out" / "videos" / f".c1.{dead}-0123abcd.partial.avi",
              tmp_path / "out" / "cases" / f".c1.{dead}-89abcdef.partial.json"]
    kept = [tmp_path / "out" / "cases" / f".c2.{live}-0123abcd.partial.json",  # a live writer's
            tmp_path / "out" / "cases" / "c3.json"]
    for path in litter + kept:
        path.parent.mkdir(exist_ok=True)
        path.write_text("x")
    with claim_out_dir(tmp_path / "out", header):  # the resumed run
        assert not any(p.exists() for p in litter) and all(p.exists() for p in kept)
    assert remove_partials(tmp_path / "out") == []


@pytest.mark.parametrize("score_workers", ["0", "1"])
def test_a_model_making_tiny_frames_fails_its_cases_not_the_run(tmp_path, write_tiny_suite, score_workers):
    """Inline and in a background scoring process alike."""
    suite = write_tiny_suite(tmp_path, name="tiny8", resolution=(8, 8))
    out = tmp_path / "run"
    assert main(["run", "--suite", str(suite), "--model", "oracle", "--out", str(out),
                 "--score-workers", score_workers]) == 1
    cases = json.loads((out / "results.json").read_text())["cases"]
    assert len(cases) == 2 and all("frames are 8x8 px" in c["error"] for c in cases)
    assert not list((out / "videos").glob("*"))  # nothing half-written left behind


FLAT = """
import numpy as np

from wcbench.models.oracle import OracleModel


class Flat(OracleModel):  # the oracle's frames painted one grey, except in case 'fine'

    def reset(self, image, prompt, seed, info):
        self.is_flat = info.id != "fine"
        return self._paint(super().reset(image, prompt, seed, info))

    def step(self, actions):
        return self._paint(super().step(actions))

    def _paint(self, frames):
        return np.full_like(frames, 128) if self.is_flat else frames
"""


@pytest.mark.parametrize("score_workers", ["0", "1"])
def test_a_model_making_flat_frames_fails_that_case_not_the_run(tmp_path, score_workers):
    """Found when the case's scoring finishes (the frames pass the size check), inline or in a
    background scoring process; the next case is scored."""
    (tmp_path / "flat.py").write_text(FLAT)
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\nresolution: [64, 48]\nhorizons: {short: 125}\ncases:\n" + "".join(
        f"  - {{id: {case}, track: basic, horizon: short, script: '{SCRIPT}'}}\n" for case in ("flat", "fine")))
    out = tmp_path / "run"
    assert main(["run", "--suite", str(suite), "--model", "flat:Flat", "--include-path", str(tmp_path),
                 "--out", str(out), "--score-workers", score_workers, "estimator=gt"]) == 1
    cases = {c["id"]: c for c in json.loads((out / "results.json").read_text())["cases"]}
    assert "every frame is one flat colour" in cases["flat"]["error"] and cases["fine"]["status"] == "ok"
    assert sorted(p.name for p in (out / "videos").iterdir()) == ["fine.avi"]
