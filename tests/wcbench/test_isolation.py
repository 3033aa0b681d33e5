"""The harness outlives the model: a model that calls sys.exit(0) or os._exit(0), segfaults or
hangs inside a bare `except:` fails its own case with the reason, the other cases are scored
(also those after it, on a fresh model process), and `wcbench run` exits 1 with results.json."""

import json
import textwrap

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
