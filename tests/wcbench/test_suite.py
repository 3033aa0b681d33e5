"""Suites: loading, deterministic case generation, content hash, bad input."""

import textwrap

import pytest

from wcbench.core.actions import parse_script
from wcbench.data.suite import PITCH_LIMIT_DEG, SuiteError, list_suites, load_suite


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_builtin_suites():
    assert {"wc-mini", "wc600"} <= set(list_suites())
    mini = load_suite("wc-mini")
    assert {(c.track, c.horizon) for c in mini.cases} == {
        (t, h) for t in ("basic", "combined") for h in ("short", "mid", "long")}
    full = load_suite("wc600")
    assert len(full.cases) == 600
    assert sum(c.track == "combined" and c.horizon == "long" for c in full.cases) == 100


def test_generated_scripts_follow_track_rules():
    suite = load_suite("wc-mini")
    for case in suite.cases:
        script = parse_script(case.script)
        assert script.num_frames == case.num_frames
        pitch = 0.0
        for seg in script.segments:
            a = seg.action
            if case.track == "basic":
                assert a.is_translation != a.is_rotation, case.script
            else:
                assert a.is_translation and a.is_rotation, case.script
            pitch += a.pitch * seg.count * 4 * suite.step_degrees
            assert abs(pitch) <= PITCH_LIMIT_DEG
        if case.track == "combined":
            assert all(x.action != y.action for x, y in zip(script.segments, script.segments[1:]))


def test_determinism_and_hash():
    a, b = load_suite("wc-mini"), load_suite("wc-mini")
    assert a.cases == b.cases and a.content_hash() == b.content_hash()


def test_hash_changes_with_anything_that_affects_scores(tmp_path):
    base = load_suite("wc-mini").content_hash()
    hashes = set()
    for line in ["seed: 5", "step_degrees: 1.0", "resolution: [128, 128]", "fov_deg: 60", "step_translation: 0.04"]:
        hashes.add(load_suite(_write(tmp_path, "v.yaml", f"base: wc-mini\n{line}\n")).content_hash())
    assert base not in hashes and len(hashes) == 5
    # the description does not affect scores
    same = load_suite(_write(tmp_path, "d.yaml", "base: wc-mini\ndescription: other words\n"))
    assert same.content_hash() == base


def test_variant_overrides_two_lines(tmp_path):
    suite = load_suite(_write(tmp_path, "small.yaml", "base: wc-mini\nname: tiny\ncases_per_cell: 1\n"))
    assert suite.name == "tiny" and len(suite.cases) == 6
    assert suite.resolution == load_suite("wc-mini").resolution


def test_explicit_cases(tmp_path):
    path = _write(tmp_path, "explicit.yaml", """
        name: hand
        horizons: {short: 125}
        cases:
          - {id: fwd, track: basic, horizon: short, script: "w-31", scene_seed: 3, prompt: a hall}
        """)
    suite = load_suite(path)
    assert suite.cases[0].script == "w-31" and suite.cases[0].prompt == "a hall"


@pytest.mark.parametrize("body, fragment", [
    ("name: x\nbogus: 1\n", "unknown key(s) ['bogus']"),
    ("horizons: {short: 124}\n", "horizon 'short'=124"),
    ("tracks: [basic, sideways]\n", "unknown track 'sideways'"),
    ("horizons: {short: 125}\ncases:\n  - {id: c1, track: basic, horizon: short, script: 'w-3, fly-28'}\n",
     "case c1: invalid script"),
    ("horizons: {short: 125}\ncases:\n  - {id: c2, track: basic, horizon: short, script: 'w-30'}\n",
     "case c2: script makes 121 frames"),
    ("horizons: {short: 125}\ncases:\n  - {id: c3, track: basic, horizon: long, script: 'w-95'}\n",
     "case c3: unknown horizon 'long'"),
    ("horizons: {short: 125}\ncases:\n  - {id: c4, track: basic, horizon: short, script: 'w-31', colour: red}\n",
     "case c4: unknown key(s) ['colour']"),
    ("- just a list\n", "must be a mapping"),
    ("resolution: [161, 160]\n", "resolution 161x160: a stored video needs a positive, even width and height"),
])
def test_bad_suites_name_file_case_and_problem(tmp_path, body, fragment):
    path = _write(tmp_path, "bad.yaml", body)
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    assert "bad.yaml" in str(err.value) and fragment in str(err.value)


def test_unknown_suite_suggests():
    with pytest.raises(SuiteError, match="Did you mean 'wc-mini'"):
        load_suite("wc-mni")
