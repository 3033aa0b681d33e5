"""Results folders cannot be mixed or shared: `run` and `score` refuse each other's folders and
folders of another input or config, a second process is kept out by the lock (and a killed
holder leaves no stale lock), and nothing refused changes a byte of the folder."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wcbench.cli import main
from wcbench.core.storage import FolderBusyError, folder_lock, write_json
from wcbench.core.video import write_video
from wcbench.data.suite import load_suite


def snapshot(folder: Path) -> dict:
    """Every file under ``folder`` (hidden ones too): its bytes and mode."""
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mode)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def folders(tmp_path_factory, write_tiny_suite):
    """A one-case `run` folder and a one-row `score` folder (gt estimator: fast)."""
    root = tmp_path_factory.mktemp("outdir")
    suite = write_tiny_suite(root)
    run_dir = root / "run"
    assert main(["run", "--suite", str(suite), "--out", str(run_dir), "estimator=gt", "--limit", "1"]) == 0
    case_id = next((run_dir / "cases").glob("*.json")).stem
    manifest = root / "m.csv"
    script = load_suite(suite).cases[0].script
    manifest.write_text(f'id,video,actions\n{case_id},run/videos/{case_id}.avi,"{script}"\n')
    score_dir = root / "score"
    assert main(["score", "--manifest", str(manifest), "--out", str(score_dir)]) == 0
    return suite, manifest, run_dir, score_dir


def _refused(argv, folder, capsys, message):
    before = snapshot(folder)
    assert main(argv) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message in err, err
    assert snapshot(folder) == before


def test_run_and_score_refuse_each_others_folders(folders, capsys):
    suite, manifest, run_dir, score_dir = folders
    _refused(["score", "--manifest", str(manifest), "--out", str(run_dir)], run_dir, capsys,
             "was made by `wcbench run`; `wcbench score` cannot write into it")
    _refused(["run", "--suite", str(suite), "--out", str(score_dir), "estimator=gt", "--limit", "1"], score_dir,
             capsys, "was made by `wcbench score`; `wcbench run` cannot write into it")


def test_other_input_or_config_is_refused(folders, tmp_path, capsys):
    suite, manifest, run_dir, score_dir = folders
    _refused(["run", "--suite", str(suite), "--out", str(run_dir), "estimator=gt", "seed=1", "--limit", "1"], run_dir,
             capsys, "another model/scorer config")
    other_suite = tmp_path / "other.yaml"
    other_suite.write_text(f"base: {suite}\nseed: 99\n")
    _refused(["run", "--suite", str(other_suite), "--out", str(run_dir), "estimator=gt", "--limit", "1"], run_dir,
             capsys, "another suite")
    other_manifest = tmp_path / "m.csv"
    other_manifest.write_text(manifest.read_text().replace("run/videos", str(run_dir / "videos")))
    _refused(["score", "--manifest", str(other_manifest), "--out", str(score_dir)], score_dir, capsys,
             "another manifest")
    _refused(["score", "--manifest", str(manifest), "--out", str(score_dir), "--model-name", "mine"], score_dir,
             capsys, "another model/scorer config")


def test_foreign_folder_and_file_are_refused(folders, tmp_path, capsys):
    suite = folders[0]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    _refused(["run", "--suite", str(suite), "--out", str(foreign), "estimator=gt"], foreign, capsys,
             "is not empty (notes.txt) and has no run.json")
    _refused(["run", "--suite", str(suite), "--out", str(foreign / "notes.txt"), "estimator=gt"], foreign, capsys,
             "is a file")


def test_a_busy_folder_is_refused(folders, capsys):
    suite, manifest, run_dir, score_dir = folders
    with folder_lock(run_dir, "test holder"):
        _refused(["run", "--suite", str(suite), "--out", str(run_dir), "estimator=gt", "--limit", "1"], run_dir,
                 capsys, f"is in use by pid {os.getpid()}")
        _refused(["report", str(run_dir)], run_dir, capsys, "is in use by")
    with folder_lock(score_dir, "test holder"):
        _refused(["score", "--manifest", str(manifest), "--out", str(score_dir)], score_dir, capsys, "is in use by")


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom wcbench.core.storage import folder_lock\n"
                               f"with folder_lock({str(tmp_path)!r}, 'holder'):\n"
                               "    print('locked', flush=True)\n    time.sleep(60)\n"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(FolderBusyError, match=f"pid {holder.pid}"):
            with folder_lock(tmp_path, "second"):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with folder_lock(tmp_path, "after the kill"):  # the kernel dropped the dead holder's lock
        pass


def test_files_are_written_per_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        write_json(tmp_path / "a.json", {"x": 1})
        write_video(tmp_path / "v.avi", np.zeros((2, 16, 16, 3), np.uint8))
        os.umask(0o077)
        write_json(tmp_path / "b.json", {"x": 1})
    finally:
        os.umask(previous)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "v.avi").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o600
