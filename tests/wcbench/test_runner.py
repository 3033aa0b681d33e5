"""`wcbench run`: adapters, resume after a kill, failure isolation (exceptions with their
traceback, bad frames, hangs past timeout_s), --limit runs extended to the full suite, named
errors for bad command lines, results.json's environment and cases.csv, the estimated camera
path, the report's strip frames kept while scoring, 2-process sharding equal to 1 process.
(Refusing mixed or busy folders: test_outdir.py.)"""

import csv
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from wcbench.cli import main
from wcbench.core.video import read_frames_at
from wcbench.data.suite import load_suite
from wcbench.models.oracle import OracleModel
from wcbench.models.registry import build_model
from wcbench.report.results import build_results
from wcbench.results.record import load_record, load_records
from wcbench.results.strip import load_strip, sample_indices, strip_path
from wcbench.run.runner import RunConfig, run_suite

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def tiny_suite(tmp_path, write_tiny_suite):
    return write_tiny_suite(tmp_path, cases_per_cell=2)



def _comparable(out_dir):
    """results.json without the fields that legitimately differ between runs (timings)."""
    results = json.loads((out_dir / "results.json").read_text())
    for case in results["cases"]:
        case.pop("timing", None)
    for key in ("interactivity", "environment"):
        results.pop(key, None)
    return results


RUN_RECORD_FIELDS = ["id", "track", "horizon", "status", "error", "script", "prompt", "num_frames", "latents_per_clip",
                     "fov_deg", "if_acc", "if_trans_acc", "if_rot_acc", "vq", "vq_raw", "per_clip", "labels", "paths",
                     "confidence_mean", "video", "video_sha256", "timing"]


def test_run_oracle_with_true_poses_scores_one(tiny_suite, tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--suite", str(tiny_suite), "--model", "oracle", "--out", str(out), "estimator=gt"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["suite"] == "tiny" and results["model"] == "oracle" and len(results["cases"]) == 4
    for case in results["cases"]:
        assert case["status"] == "ok" and case["if_acc"] == 1.0
        assert (out / case["video"]).exists() and len(case["video_sha256"]) == 64
        assert {"track", "horizon", "timing", "per_clip"} <= set(case)
        stored = json.loads((out / "cases" / f"{case['id']}.json").read_text())
        assert list(stored) == RUN_RECORD_FIELDS  # the file earlier versions wrote, field for field
        record = load_record(out / "cases" / f"{case['id']}.json")
        assert record.to_dict() == stored
        strip = load_strip(strip_path(out, case["id"]), record)  # the report's frames, kept while scoring
        assert np.array_equal(strip, read_frames_at(out / case["video"], sample_indices(case["num_frames"])))
    assert results["summary"]["overall"]["if_acc"] == 1.0
    assert (out / "report.html").exists() and (out / "summary.csv").exists()


def test_mirror_variant_scores_lower_on_rotation(tiny_suite, tmp_path):
    out = tmp_path / "mirror"
    main(["run", "--suite", str(tiny_suite), "--model", "oracle-mirror", "--out", str(out), "estimator=gt"])
    overall = json.loads((out / "results.json").read_text())["summary"]["overall"]
    assert overall["if_trans_acc"] == 1.0 and overall["if_rot_acc"] < 0.9


class _KillAfter(OracleModel):
    """Simulates a kill (Ctrl-C) during the n-th case; counts the cases it starts."""

    def __init__(self, kill_at: int | None, log: list):
        super().__init__()
        self.kill_at, self.log = kill_at, log

    def reset(self, image, prompt, seed, info):
        self.log.append(info.id)
        if self.kill_at is not None and len(self.log) == self.kill_at:
            raise KeyboardInterrupt
        return super().reset(image, prompt, seed, info)


def test_resume_after_kill_recomputes_nothing(tiny_suite, tmp_path, make_scorers):
    suite = load_suite(tiny_suite)
    run = RunConfig(model="oracle")
    killed, log = tmp_path / "killed", []
    with pytest.raises(KeyboardInterrupt):
        run_suite(suite, _KillAfter(3, log), run, make_scorers("gt"), killed)
    done = sorted(p.stem for p in (killed / "cases").glob("*.json"))
    assert done == sorted(log[:2])
    assert not list(killed.rglob("*.partial*"))  # nothing half-written
    resumed_log = []
    run_suite(suite, _KillAfter(None, resumed_log), run, make_scorers("gt"), killed)
    assert sorted(resumed_log) == sorted(c.id for c in suite.cases if c.id not in done)
    clean = tmp_path / "clean"
    run_suite(suite, _KillAfter(None, []), run, make_scorers("gt"), clean)
    for path in (killed, clean):
        records = load_records(path)
        results = build_results({}, records)
        for case in results["cases"]:
            case.pop("timing")
        (path / "cmp.json").write_text(json.dumps(results, sort_keys=True))
    assert (killed / "cmp.json").read_text() == (clean / "cmp.json").read_text()


class _Broken(OracleModel):
    """Fails in a different way on each case, after the first."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def reset(self, image, prompt, seed, info):
        self.n += 1
        self.case_no = self.n
        if self.case_no == 2:
            raise RuntimeError("out of memory")
        return super().reset(image, prompt, seed, info)

    def step(self, actions):
        frames = super().step(actions)
        if self.case_no == 3:
            return frames[:-1]
        if self.case_no == 4:
            return np.full(frames.shape, np.nan, dtype=np.float32)
        return frames


def test_failures_are_isolated(tiny_suite, tmp_path, make_scorers):
    out = tmp_path / "broken"
    records = run_suite(load_suite(tiny_suite), _Broken(), RunConfig(model="broken"), make_scorers("gt"), out)
    status = [(r.status, r.error) for r in records]
    assert status[0] == ("ok", None)
    failed_id = records[1].id
    assert "RuntimeError: out of memory" in status[1][1] and f"cases/{failed_id}.log" in status[1][1]
    trace = (out / "cases" / f"{failed_id}.log").read_text()
    assert trace.startswith("Traceback") and "in reset" in trace and "out of memory" in trace
    assert "expected 12 frames" in status[2][1] and "clip 0" in status[2][1]
    assert "NaN" in status[3][1]
    assert not (out / "videos" / f"{failed_id}.avi").exists()
    stored = json.loads((out / "cases" / f"{failed_id}.json").read_text())
    assert list(stored) == [f for f in RUN_RECORD_FIELDS if f not in ("labels", "paths", "confidence_mean", "video",
                                                                      "video_sha256", "timing")]
    assert not list(out.rglob("*.partial*"))  # the failed cases' videos were never half-written


class _HangsOnSecondCase(OracleModel):
    """Hangs (sleeps far past the limit, catching what it can) in its second case's first clip."""

    def __init__(self):
        super().__init__()
        self.cases = 0

    def reset(self, image, prompt, seed, info):
        self.cases += 1
        return super().reset(image, prompt, seed, info)

    def step(self, actions):
        if self.cases == 2:
            try:
                time.sleep(60)
            except Exception:  # a model's own catch-all must not swallow the timeout
                pass
        return super().step(actions)


def test_hanging_model_times_out_and_the_run_goes_on(tiny_suite, tmp_path, make_scorers):
    out = tmp_path / "hang"
    started = time.monotonic()
    records = run_suite(load_suite(tiny_suite), _HangsOnSecondCase(), RunConfig(model="hangs", timeout_s=1.0),
                        make_scorers("gt"), out)
    assert time.monotonic() - started < 50
    assert [r.status for r in records] == ["ok", "failed", "ok", "ok"]
    assert "clip 0 timed out after 1 s" in records[1].error and records[1].id in records[1].error


def test_limit_run_extends_to_the_full_suite(tiny_suite, tmp_path):
    out = tmp_path / "smoke"
    assert main(["run", "--suite", str(tiny_suite), "--model", "oracle", "--out", str(out), "estimator=gt",
                 "--limit", "1"]) == 0
    smoke = json.loads((out / "results.json").read_text())
    assert len(smoke["cases"]) == 1
    first = next((out / "cases").glob("*.json"))
    before = first.read_bytes()
    assert main(["run", "--suite", str(tiny_suite), "--model", "oracle", "--out", str(out), "estimator=gt"]) == 0
    full = json.loads((out / "results.json").read_text())
    assert len(full["cases"]) == 4 and full["suite_hash"] == smoke["suite_hash"]
    assert first.read_bytes() == before  # the smoke run's case was kept, not redone


def test_bad_command_lines_are_named_errors(tiny_suite, tmp_path, capsys):
    def run(*extra):
        return main(["run", "--suite", str(tiny_suite), "--model", "oracle", "--out", str(tmp_path / "o"), *extra])

    def error():
        return " ".join(capsys.readouterr().err.split())  # rich wraps long lines

    assert run("model_options.lag_step=3") == 2
    assert "takes no option 'lag_step'. Did you mean 'lag_steps'? Its options: variant, lag_steps" in error()
    assert run("estimatr=gt") == 2 and "Did you mean 'estimator'" in error()
    assert run("+estimatr=gt") == 2 and "Did you mean 'estimator'" in error()
    assert run("seed=abc") == 2 and "bad setting seed" in error()
    assert run("estimator_options.no_such=1") == 2 and "no_such" in error()
    assert not (tmp_path / "o").exists()  # nothing refused touched the disk
    a_file = tmp_path / "a_file"
    a_file.write_text("keep me")
    assert main(["run", "--suite", str(tiny_suite), "--out", str(a_file)]) == 2
    assert "is a file" in error() and a_file.read_text() == "keep me"


def test_stand_in_models_report_no_speed(tiny_suite, tmp_path):
    out = tmp_path / "oracle"
    assert main(["run", "--suite", str(tiny_suite), "--model", "oracle", "--out", str(out), "estimator=gt",
                 "--limit", "1"]) == 0
    assert json.loads((out / "results.json").read_text())["interactivity"] == {}


def test_estimated_path_points_as_commanded(tiny_suite, tmp_path, make_scorers):
    """The report's estimated camera path (chained clip by clip) follows the commanded one: per
    frame transition, the estimated displacement points the way the commanded one does."""
    out = tmp_path / "paths"
    scorers = make_scorers()
    records = run_suite(load_suite(tiny_suite), OracleModel(), RunConfig(model="oracle"), scorers, out, limit=2)
    for record in records:
        commanded = np.diff(np.asarray(record.paths["commanded"]), axis=0)
        estimated = np.diff(np.asarray(record.paths["estimated"]), axis=0)
        moving = np.linalg.norm(commanded, axis=1) > 1e-6
        assert moving.sum() > 20
        a, b = commanded[moving], estimated[moving]
        cosine = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1) + 1e-12)
        assert np.median(cosine) > 0.9, record.id


def test_user_model_by_module_factory(tiny_suite, tmp_path, monkeypatch):
    """A user's model runs by MODULE:Factory; its results record their environment, its speed
    with the hardware it was measured on, and a per-case cases.csv."""
    monkeypatch.syspath_prepend(str(REPO))
    model = build_model("examples.my_model:PanZoomModel", pixels_per_degree=3.0)
    assert model.pixels_per_degree == 3.0
    out = tmp_path / "user"
    code = main(["run", "--suite", str(tiny_suite), "--model", "examples.my_model:PanZoomModel", "--out", str(out),
                 "estimator=opencv", "--limit", "1"])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert results["cases"][0]["status"] == "ok" and results["model"] == "examples.my_model:PanZoomModel"
    assert results["schema_version"] == 2 and results["command"] == "run"
    environment = results["environment"]
    assert {"numpy", "python", "worldcompass-bench"} <= set(environment["packages"])
    assert environment["hardware"]["cores"] >= 1 and environment["hardware"]["cpu"]
    assert environment["created"].endswith("+00:00")
    speed = results["interactivity"]
    assert speed["fps"] > 0 and speed["hardware"] == results["cases"][0]["timing"]["hardware"]
    rows = list(csv.DictReader((out / "cases.csv").open()))
    assert [r["id"] for r in rows] == [results["cases"][0]["id"]]
    assert rows[0]["status"] == "ok" and float(rows[0]["fps"]) > 0 and rows[0]["video_sha256"] == \
        results["cases"][0]["video_sha256"]


def test_videos_adapter_replays_a_run(tiny_suite, tmp_path):
    first = tmp_path / "first"
    main(["run", "--suite", str(tiny_suite), "--model", "oracle", "--out", str(first), "--limit", "2"])
    replay = tmp_path / "replay"
    assert main(["run", "--suite", str(tiny_suite), "--model", f"videos:{first / 'videos'}", "--out", str(replay),
                 "--limit", "2"]) == 0
    a, b = _comparable(first), _comparable(replay)
    assert [c["if_acc"] for c in a["cases"]] == [c["if_acc"] for c in b["cases"]]
    assert [c["video_sha256"] for c in a["cases"]] == [c["video_sha256"] for c in b["cases"]]


@pytest.mark.slow
def test_two_processes_equal_one(tiny_suite, tmp_path, two_process_env):
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")
    if accelerate is None:
        pytest.skip("accelerate CLI not installed")
    one, two = tmp_path / "one", tmp_path / "two"
    assert main(["run", "--suite", str(tiny_suite), "--model", "oracle", "--out", str(one), "estimator=gt"]) == 0
    proc = subprocess.run([accelerate, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                           "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "wcbench", "run", "--suite",
                           str(tiny_suite), "--model", "oracle", "--out", str(two), "estimator=gt"],
                          capture_output=True, text=True, env=two_process_env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = _comparable(one), _comparable(two)
    a["cases"].sort(key=lambda c: c["id"])
    b["cases"].sort(key=lambda c: c["id"])
    assert a == b


class _FakeCuda:
    def __init__(self, count: int):
        self.count = count

    def is_available(self) -> bool:
        return self.count > 0

    def device_count(self) -> int:
        return self.count


class _FakeTorch:
    def __init__(self, count: int):
        self.cuda = _FakeCuda(count)


def test_more_processes_than_gpus_is_a_named_error(monkeypatch):
    from wcbench.core.environment import this_process_uses_a_gpu

    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert this_process_uses_a_gpu(_FakeTorch(2)) and not this_process_uses_a_gpu(_FakeTorch(0))
    with pytest.raises(RuntimeError, match=r"process 1 of 2 .* 1 visible.*--num_processes 1.*device=cpu"):
        this_process_uses_a_gpu(_FakeTorch(1))
