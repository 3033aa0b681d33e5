"""`wcbench score --jobs N` and `--shard i/N` + `wcbench merge`: N processes, or N shards merged,
write the records one process writes; a killed pool run resumes; merge refuses shards that do
not make one run."""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wcbench.cli import main
from wcbench.core.actions import script_from_steps
from wcbench.core.video import write_video
from wcbench.data.scenes import case_world
from wcbench.data.scenes.synthetic import render_frames
from wcbench.data.suite import load_suite
from wcbench.report.summary import summarize
from wcbench.results.outdir import OutDirError, check_out_dir, claim_out_dir
from wcbench.results.record import load_records
from wcbench.run.manifest import parse_shard, read_manifest, score_header, score_manifest
from wcbench.scoring.case import Scorers

REPO = Path(__file__).resolve().parents[2]


STEPS = 11  # latent steps per video: 45 frames, the first 45 of a tiny suite case


@pytest.fixture(scope="module")
def manifest(tmp_path_factory, write_tiny_suite) -> Path:
    """A manifest of 4 rendered 45-frame 64x48 videos of free-standing scripts (the first
    latent steps of the tiny suite's cases)."""
    folder = tmp_path_factory.mktemp("pool")
    suite = load_suite(write_tiny_suite(folder, cases_per_cell=2))
    rows = []
    (folder / "videos").mkdir()
    for case in suite.cases:
        script = script_from_steps(case.parsed().step_actions()[:STEPS])
        world = case_world(suite, case)
        frames = render_frames(world.scene, world.poses[:script.num_frames], world.K, suite.width, suite.height)
        write_video(folder / "videos" / f"{case.id}.avi", frames)
        rows.append({"id": case.id, "video": f"videos/{case.id}.avi", "actions": script.format(),
                     "fov_deg": suite.fov_deg, "step_translation": suite.step_translation,
                     "step_degrees": suite.step_degrees})
    path = folder / "manifest.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _score(manifest: Path, out: Path, scorers: Scorers, workers: int, shard: tuple[int, int] | None = None) -> Path:
    """``wcbench score`` without its report (slow to draw, and not what these tests are about)."""
    header = score_header(manifest, scorers, "videos:pool", None, shard=shard)
    with claim_out_dir(out, header):
        score_manifest(manifest, out, scorers, workers=workers, shard=shard)
    return out


@pytest.fixture(scope="module")
def scorers(make_scorers) -> Scorers:
    return make_scorers()


@pytest.fixture(scope="module")
def one_process(manifest, scorers, tmp_path_factory) -> Path:
    """The manifest scored by one process: the reference the other ways must equal."""
    return _score(manifest, tmp_path_factory.mktemp("one") / "out", scorers, workers=1)


def _records(folder: Path) -> dict[str, list]:
    """Each case file's stored fields in stored order, less its timing (wall clock)."""
    records = {}
    for path in sorted((folder / "cases").glob("[!.]*.json")):  # hidden: a write that kill -9 cut short
        record = json.loads(path.read_text())
        assert record.pop("timing")["score_s"] > 0
        records[path.name] = list(record.items())
    return records


def test_two_jobs_write_what_one_writes(manifest, scorers, one_process, tmp_path):
    out, order = tmp_path / "two", []
    header = score_header(manifest, scorers, "videos:pool", None)
    with claim_out_dir(out, header):
        written = score_manifest(manifest, out, scorers, workers=2, on_case=lambda record: order.append(record.id))
    assert order == [record.id for record in written] == [raw.id for raw in read_manifest(manifest)]
    assert len(_records(one_process)) == 4
    assert _records(out) == _records(one_process)
    assert sorted(p.name for p in (out / "cases").iterdir()) == sorted(
        p.name for p in (one_process / "cases").iterdir())


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_killed_pool_run_resumes(manifest, scorers, one_process, tmp_path):
    """kill -9 of `score --jobs 2` after its first record: the workers exit, and the same command
    finishes the folder without scoring the saved cases again."""
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "wcbench", "score", "--manifest", str(manifest), "--out", str(out), "--jobs", "2",
               "--model-name", "videos:pool"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list((out / "cases").glob("[!.]*.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
    saved = {p.name: p.stat().st_mtime_ns for p in (out / "cases").glob("[!.]*.json")}
    assert 1 <= len(saved) < 4 and workers
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)], "pool workers outlived their killed parent"
    _score(manifest, out, scorers, workers=2)
    assert {name: (out / "cases" / name).stat().st_mtime_ns for name in saved} == saved  # not scored again
    assert _records(out) == _records(one_process)


def test_shards_merged_equal_one_run(manifest, scorers, one_process, tmp_path):
    shards = [_score(manifest, tmp_path / f"shard-{i}", scorers, 1, (i, 2)) for i in range(2)]
    assert [len(_records(folder)) for folder in shards] == [2, 2]
    merged = tmp_path / "merged"
    assert main(["merge", str(merged), *map(str, reversed(shards))]) == 0
    assert _records(merged) == _records(one_process)
    for name in _records(one_process):  # byte for byte: the shards' own files
        shard = next(f for f in shards if (f / "cases" / name).exists())
        assert (merged / "cases" / name).read_bytes() == (shard / "cases" / name).read_bytes()
    results = json.loads((merged / "results.json").read_text())
    assert [case["id"] for case in results["cases"]] == sorted(raw.id for raw in read_manifest(manifest))
    assert results["summary"] == summarize(load_records(one_process))
    # The merged folder is the unsharded run's: the unsharded command accepts it, with nothing left to do.
    assert _score(manifest, merged, scorers, workers=1) and _records(merged) == _records(one_process)


def test_merge_refuses_what_is_not_one_run(one_process, tmp_path, capsys):
    shards = [tmp_path / f"shard-{i}" for i in range(2)]
    for i, folder in enumerate(shards):  # shard folders without scoring: run.json and the reference's records
        (folder / "cases").mkdir(parents=True)
        header = json.loads((one_process / "run.json").read_text())
        (folder / "run.json").write_text(json.dumps({**header, "shard": f"{i}/2"}))
        for n, path in enumerate(sorted((one_process / "cases").glob("*.json"))):
            if n % 2 == i:
                shutil.copy(path, folder / "cases" / path.name)
    out = tmp_path / "merged"

    def refused(*folders: Path) -> str:
        assert main(["merge", str(out), *map(str, folders)]) == 2
        assert not out.exists()
        return " ".join(capsys.readouterr().err.split())

    assert "1/2 missing" in refused(shards[0])
    assert "both shard 0/2" in refused(shards[0], shards[0], shards[1])
    assert "without --shard" in refused(shards[0], one_process)
    other = tmp_path / "other-config"
    shutil.copytree(shards[1], other)
    header = json.loads((other / "run.json").read_text())
    (other / "run.json").write_text(json.dumps({**header, "config_hash": "0" * 16}))
    assert "another model/scorer config" in refused(shards[0], other)
    lacking = sorted((shards[1] / "cases").glob("*.json"))[0]
    lacking.unlink()
    assert f"no record for case(s) ['{lacking.stem}']" in refused(shards[0], shards[1])


def test_shard_folders_and_arguments(tmp_path, manifest):
    folder = tmp_path / "s"
    folder.mkdir()
    header = {"command": "score", "manifest_hash": "m", "config_hash": "c", "shard": "0/2"}
    (folder / "run.json").write_text(json.dumps(header))
    check_out_dir(folder, header)
    for other in ({**header, "shard": "1/2"}, {k: v for k, v in header.items() if k != "shard"}):
        with pytest.raises(OutDirError, match="shard 0/2 of its manifest"):
            check_out_dir(folder, other)
    assert parse_shard("3/4") == (3, 4)
    for bad in ("4/4", "-1/2", "1", "a/b", "1/0"):
        with pytest.raises(ValueError, match="0 <= i < N"):
            parse_shard(bad)
    assert main(["score", "--manifest", str(manifest), "--out", str(tmp_path / "o"), "--jobs", "0"]) == 2


def test_default_workers_are_the_cores_for_cpu_scorers_only(make_scorers):
    from wcbench.run.pool import available_cores, default_workers

    assert available_cores() == len(os.sched_getaffinity(0))
    assert default_workers(make_scorers()) == default_workers(make_scorers("gt")) == available_cores()
    assert default_workers(make_scorers(quality="hpsv3")) == 1  # built lazily: no weights needed to ask


@pytest.mark.slow
def test_two_accelerate_processes_equal_one(manifest, one_process, tmp_path, two_process_env):
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")
    if accelerate is None:
        pytest.skip("accelerate CLI not installed")
    out = tmp_path / "two"
    proc = subprocess.run([accelerate, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                           "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "wcbench", "score", "--manifest",
                           str(manifest), "--out", str(out), "--model-name", "videos:pool"],
                          capture_output=True, text=True, env={**two_process_env, "PYTHONPATH": str(REPO)},
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _records(out) == _records(one_process)
