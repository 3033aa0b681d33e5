"""`wcbench run`: adapters, resume after a kill, refusal of mixed folders, failure isolation,
2-process sharding equal to 1 process."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wcbench.cli import main
from wcbench.models.base import build_model
from wcbench.models.oracle import OracleModel
from wcbench.pose import build_estimator
from wcbench.runner import RunConfig, RunMismatchError, run_suite
from wcbench.scoring.case import Scorers
from wcbench.scoring.quality import build_quality_scorer
from wcbench.suite import load_suite

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture()
def tiny_suite(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text("base: wc-mini\nname: tiny\nresolution: [64, 48]\nhorizons: {short: 125}\ncases_per_cell: 2\n")
    return path


def _scorers():
    return Scorers(build_estimator("gt"), build_quality_scorer("default"))


def _comparable(out_dir):
    """results.json without the fields that legitimately differ between runs (timings)."""
    results = json.loads((out_dir / "results.json").read_text())
    for case in results["cases"]:
        case.pop("timing", None)
    results.pop("interactivity", None)
    return results


def test_run_oracle_with_true_poses_scores_one(tiny_suite, tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--suite", str(tiny_suite), "--model", "oracle", "--out", str(out), "estimator=gt"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["suite"] == "tiny" and results["model"] == "oracle" and len(results["cases"]) == 4
    for case in results["cases"]:
        assert case["status"] == "ok" and case["if_acc"] == 1.0
        assert (out / case["video"]).exists() and len(case["video_sha256"]) == 64
        assert {"track", "horizon", "timing", "per_clip"} <= set(case)
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


def test_resume_after_kill_recomputes_nothing(tiny_suite, tmp_path):
    suite = load_suite(tiny_suite)
    run = RunConfig(model="oracle")
    killed, log = tmp_path / "killed", []
    with pytest.raises(KeyboardInterrupt):
        run_suite(suite, _KillAfter(3, log), run, _scorers(), killed)
    done = sorted(p.stem for p in (killed / "cases").glob("*.json"))
    assert done == sorted(log[:2])
    assert not list(killed.rglob("*.partial*"))  # nothing half-written
    resumed_log = []
    run_suite(suite, _KillAfter(None, resumed_log), run, _scorers(), killed)
    assert sorted(resumed_log) == sorted(c.id for c in suite.cases if c.id not in done)
    clean = tmp_path / "clean"
    run_suite(suite, _KillAfter(None, []), run, _scorers(), clean)
    from wcbench import report

    for path in (killed, clean):
        records = report.load_records(path)
        results = report.build_results({}, records)
        for case in results["cases"]:
            case.pop("timing")
        (path / "cmp.json").write_text(json.dumps(results, sort_keys=True))
    assert (killed / "cmp.json").read_text() == (clean / "cmp.json").read_text()


def test_mixed_out_is_refused(tiny_suite, tmp_path):
    out = tmp_path / "run"
    suite = load_suite(tiny_suite)
    run_suite(suite, OracleModel(), RunConfig(model="oracle"), _scorers(), out)
    with pytest.raises(RunMismatchError, match="model/scorer config"):
        run_suite(suite, OracleModel(), RunConfig(model="oracle", seed=1), _scorers(), out)
    other = tmp_path / "other.yaml"
    other.write_text(f"base: {tiny_suite}\nseed: 99\n")
    with pytest.raises(RunMismatchError, match="another suite"):
        run_suite(load_suite(other), OracleModel(), RunConfig(model="oracle"), _scorers(), out)
    assert main(["run", "--suite", str(other), "--model", "oracle", "--out", str(out), "estimator=gt"]) == 2


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


def test_failures_are_isolated(tiny_suite, tmp_path):
    out = tmp_path / "broken"
    records = run_suite(load_suite(tiny_suite), _Broken(), RunConfig(model="broken"), _scorers(), out)
    status = [(r["status"], r["error"]) for r in records]
    assert status[0] == ("ok", None)
    assert "RuntimeError: out of memory" in status[1][1]
    assert "expected 12 frames" in status[2][1] and "clip 0" in status[2][1]
    assert "NaN" in status[3][1]
    assert not (out / "videos" / f"{records[1]['id']}.avi").exists()


def test_user_model_by_module_factory(tiny_suite, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO))
    model = build_model("examples.my_model:PanZoomModel", pixels_per_degree=3.0)
    assert model.pixels_per_degree == 3.0
    out = tmp_path / "user"
    code = main(["run", "--suite", str(tiny_suite), "--model", "examples.my_model:PanZoomModel", "--out", str(out),
                 "estimator=opencv", "--limit", "1"])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert results["cases"][0]["status"] == "ok" and results["model"] == "examples.my_model:PanZoomModel"


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
def test_two_processes_equal_one(tiny_suite, tmp_path):
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")
    if accelerate is None:
        pytest.skip("accelerate CLI not installed")
    one, two = tmp_path / "one", tmp_path / "two"
    assert main(["run", "--suite", str(tiny_suite), "--model", "oracle", "--out", str(one), "estimator=gt"]) == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([accelerate, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                           "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "wcbench", "run", "--suite",
                           str(tiny_suite), "--model", "oracle", "--out", str(two), "estimator=gt"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = _comparable(one), _comparable(two)
    a["cases"].sort(key=lambda c: c["id"])
    b["cases"].sort(key=lambda c: c["id"])
    assert a == b
