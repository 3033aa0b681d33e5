"""The harness outlives the model: a model that calls sys.exit(0) or os._exit(0), segfaults or
hangs inside a bare `except:` fails its own case with the reason, the other cases are scored
(also those after it, on a fresh model process), and `wcbench run` exits 1 with results.json."""

import json
import textwrap

import pytest

from wcbench.cli import main

MISBEHAVING = '''
import ctypes, os, sys, time

from wcbench.models.oracle import OracleModel


class Misbehaving(OracleModel):
    """The oracle, except in the cases named after what it does there (in the first clip)."""

    def reset(self, image, prompt, seed, info):
        self.case = info.id
        return super().reset(image, prompt, seed, info)

    def step(self, actions):
        if self.case == "sys-exit":
            sys.exit(0)
        if self.case == "os-exit":
            os._exit(0)
        if self.case == "segfault":
            ctypes.string_at(0)
        if self.case == "hang":
            while True:
                try:
                    time.sleep(100)
                except:  # noqa: E722 - swallows even the timer's BaseException: only killing ends it
                    pass
        return super().step(actions)
'''

CASES = ("fine-0", "sys-exit", "os-exit", "segfault", "hang", "fine-1")


def test_a_model_that_exits_crashes_or_hangs_fails_only_its_case(tmp_path):
    (tmp_path / "misbehaving.py").write_text(MISBEHAVING)
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\nresolution: [64, 48]\nhorizons: {short: 125}\ncases:\n" + "".join(
        f"  - {{id: {case}, track: basic, horizon: short, script: 'w-31'}}\n" for case in CASES))
    out = tmp_path / "out"
    assert main(["run", "--suite", str(suite), "--model", "misbehaving:Misbehaving", "--include-path", str(tmp_path),
                 "--out", str(out), "estimator=gt", "timeout_s=3"]) == 1
    cases = {c["id"]: c for c in json.loads((out / "results.json").read_text())["cases"]}
    assert cases["fine-0"]["status"] == "ok" and cases["fine-1"]["status"] == "ok"
    errors = {case: cases[case]["error"] for case in CASES[1:-1]}
    assert "clip 0 failed: SystemExit: 0" in errors["sys-exit"], errors
    assert "the model's process died (exit status 0)" in errors["os-exit"], errors
    assert "the model's process died (killed by signal SIGSEGV)" in errors["segfault"], errors
    assert "clip 0 timed out after 3 s" in errors["hang"], errors
    assert "sys.exit(0)" in (out / "cases" / "sys-exit.log").read_text()  # the child's own traceback


def test_a_model_that_cannot_be_built_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "unbuildable.py").write_text(textwrap.dedent('''
        import os


        def make():
            os._exit(3)
    '''))
    out = tmp_path / "out"
    assert main(["run", "--model", "unbuildable:make", "--include-path", str(tmp_path), "--out", str(out)]) == 2
    assert "its process ended while building it (exit status 3)" in " ".join(capsys.readouterr().err.split())
    assert not out.exists()


@pytest.mark.parametrize("score_workers", ["0", "2"])
def test_a_dead_model_fails_its_case_whichever_way_clips_are_scored(tmp_path, score_workers):
    """The model's process dies (os._exit, a segfault) after the first case handed its clips to
    the scoring, inline or in background processes: those cases fail, the scoring goes on with
    the next case on a fresh model, and the fine cases are scored."""
    (tmp_path / "misbehaving.py").write_text(MISBEHAVING)
    cases = ("fine-0", "os-exit", "segfault", "fine-1")
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\nresolution: [64, 48]\nhorizons: {short: 125}\ncases:\n" + "".join(
        f"  - {{id: {case}, track: basic, horizon: short, script: 'w-31'}}\n" for case in cases))
    out = tmp_path / "out"
    assert main(["run", "--suite", str(suite), "--model", "misbehaving:Misbehaving", "--include-path", str(tmp_path),
                 "--out", str(out), "--score-workers", score_workers, "estimator=gt"]) == 1
    records = {c["id"]: c for c in json.loads((out / "results.json").read_text())["cases"]}
    assert [records[case]["status"] for case in cases] == ["ok", "failed", "failed", "ok"]
    assert records["fine-0"]["if_acc"] == records["fine-1"]["if_acc"] == 1.0  # gt: the oracle's drawn poses
    assert "the model's process died (exit status 0)" in records["os-exit"]["error"]
    assert "killed by signal SIGSEGV" in records["segfault"]["error"]
    assert sorted(p.name for p in (out / "videos").iterdir()) == ["fine-0.avi", "fine-1.avi"]
