"""`wcbench run` scoring in background processes: the records inline scoring writes, a model
that fails (before or after handing clips over) fails only its case, and a scoring process
that dies stops the run with a message instead of a hang."""

import json

import numpy as np
import pytest

from wcbench.data.suite import load_suite
from wcbench.models.oracle import OracleModel
from wcbench.run.background import BackgroundScoring, CaseSpec
from wcbench.run.pool import ScoringWorkerError
from wcbench.run.runner import RunConfig, run_suite


@pytest.fixture(scope="module")
def suite(tmp_path_factory, write_tiny_suite):
    """4 cases of 125 frames at 64x48."""
    return load_suite(write_tiny_suite(tmp_path_factory.mktemp("suite"), cases_per_cell=2))


@pytest.fixture(scope="module")
def small_suite(tmp_path_factory, write_tiny_suite):
    """2 cases (basic and combined) of 125 frames at 64x48."""
    return load_suite(write_tiny_suite(tmp_path_factory.mktemp("small")))


def _records(folder) -> dict[str, list]:
    """Each case file's stored fields in stored order, less its timing (wall clock)."""
    records = {}
    for path in sorted((folder / "cases").glob("[!.]*.json")):
        record = json.loads(path.read_text())
        record.pop("timing", None)
        records[path.name] = list(record.items())
    return records


class _ReusesBuffer(OracleModel):
    """The oracle returning every clip in one buffer it overwrites with the next clip (as a
    model writing into preallocated output may): what was handed over must not change."""

    buffer = None

    def step(self, actions):
        frames = super().step(actions)
        if self.buffer is None or self.buffer.shape != frames.shape:
            self.buffer = np.empty_like(frames)
        self.buffer[:] = frames
        return self.buffer


@pytest.mark.parametrize("estimator, workers", [("opencv", 2), ("gt", 1)])
def test_background_scores_equal_inline(small_suite, tmp_path, make_scorers, estimator, workers):
    """opencv: the real estimator, cases spread over 2 processes; gt: the oracle's drawn poses
    travel with the clips."""
    suite = small_suite
    inline = run_suite(suite, OracleModel(), RunConfig(model="oracle"), make_scorers(estimator), tmp_path / "inline")
    background = run_suite(suite, _ReusesBuffer(), RunConfig(model="oracle"), make_scorers(estimator),
                           tmp_path / "background", score_workers=workers)
    assert [r.id for r in background] == [r.id for r in inline] == [c.id for c in suite.cases]
    assert all(r.is_ok for r in background) and all(r.timing["score_s"] > 0 for r in background)
    assert _records(tmp_path / "background") == _records(tmp_path / "inline")
    if estimator == "gt":
        assert all(r.if_acc == 1.0 for r in background)


class _FailsTwice(OracleModel):
    """Raises in reset on its second case and in the second clip of its third (after a clip
    was handed to the scorer)."""

    def __init__(self):
        super().__init__()
        self.cases = self.clips = 0

    def reset(self, image, prompt, seed, info):
        self.cases, self.clips = self.cases + 1, 0
        if self.cases == 2:
            raise RuntimeError("out of memory")
        return super().reset(image, prompt, seed, info)

    def step(self, actions):
        self.clips += 1
        if self.cases == 3 and self.clips == 2:
            raise RuntimeError("lost the GPU")
        return super().step(actions)


def test_model_failure_fails_only_its_case(suite, tmp_path, make_scorers):
    scorers = make_scorers("gt")
    records = run_suite(suite, _FailsTwice(), RunConfig(model="flaky"), scorers, tmp_path / "flaky", score_workers=1)
    assert [r.status for r in records] == ["ok", "failed", "failed", "ok"]
    assert "out of memory" in records[1].error and "clip 1 failed: RuntimeError: lost the GPU" in records[2].error
    clean = run_suite(suite, OracleModel(), RunConfig(model="flaky"), scorers, tmp_path / "clean")
    flaky, reference = _records(tmp_path / "flaky"), _records(tmp_path / "clean")
    for index in (0, 3):  # the abandoned case left nothing behind in the scoring process
        name = f"{records[index].id}.json"
        assert flaky[name] == reference[name] and clean[index].is_ok


def test_dead_scoring_process_is_an_error(suite, make_scorers):
    case = suite.cases[0]
    with pytest.raises(ScoringWorkerError, match="died"):
        with BackgroundScoring(make_scorers("gt")) as scoring:
            scoring.start(case.id, CaseSpec(case.parsed(), "", suite.fov_deg, suite.latents_per_clip))
            scoring._processes[0].kill()
            scoring.finish(case.id)
            list(scoring.results(wait=True))
