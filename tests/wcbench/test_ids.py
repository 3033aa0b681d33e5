"""Ids are paths nowhere: one rule for suite, manifest and export ids, checked before anything
is written, and files named from an id only through ``id_path``, which keeps them in their folder."""

import json

import pytest

from wcbench.cli import main
from wcbench.core.ids import IdError, check_id, id_path, id_problem
from wcbench.run.manifest import ManifestError, read_manifest

SCRIPT = "w-31"  # 125 frames: the short horizon


@pytest.mark.parametrize("good", ["basic-short-000", "a", "A.b_c-d", "-x", "_", "x" * 120, "a..b"])
def test_the_rule_accepts_plain_ids(good):
    assert id_problem(good) is None and check_id(good, "here") == good


@pytest.mark.parametrize("bad", ["../x", "/abs/path", "..", ".hidden", "a/b", "a b", "x" * 121, "", "a\n", "é",
                                 "=cmd|' /C calc'!A0", 7])
def test_the_rule_refuses_paths_and_odd_ids(bad):
    with pytest.raises(IdError, match="here: id"):
        check_id(bad, "here")


def test_id_path_stays_inside_its_folder(tmp_path):
    assert id_path(tmp_path, "c-1", "videos/{id}.avi") == tmp_path / "videos" / "c-1.avi"
    with pytest.raises(IdError, match="outside the folder"):
        id_path(tmp_path, "c-1", "../{id}.avi")  # a bad template is caught too, not only a bad id
    with pytest.raises(IdError):
        id_path(tmp_path, "../c-1")


def _suite_with_ids(folder, *ids):
    cases = "".join(f"  - {{id: {json.dumps(i)}, track: basic, horizon: short, script: '{SCRIPT}'}}\n" for i in ids)
    path = folder / "evil.yaml"
    path.write_text("name: evil\nresolution: [64, 48]\nhorizons: {short: 125}\ncases:\n" + cases)
    return path


@pytest.mark.parametrize("bad_id", ["../../escaped", "/tmp/wcbench-abs-escape"])
@pytest.mark.parametrize("command", ["run", "export"])
def test_a_suite_with_path_ids_writes_nothing(tmp_path, capsys, command, bad_id):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    suite = _suite_with_ids(work, "fine-000", bad_id)
    out = work / "out"
    argv = [command, "--suite", str(suite), "--out", str(out)] + (["--model", "oracle"] if command == "run" else [])
    before = sorted(p for p in tmp_path.rglob("*"))
    assert main(argv) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert str(suite) in err and "case 1" in err and repr(bad_id) in err, err
    assert sorted(p for p in tmp_path.rglob("*")) == before  # not --out, and nothing beside it
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "escaped.avi").exists()


def test_manifest_ids_follow_the_same_rule(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"id": "ok-1", "video": "v.mp4", "actions": SCRIPT}) + "\n"
                    + json.dumps({"id": "case\n", "video": "v.mp4", "actions": SCRIPT}) + "\n")
    with pytest.raises(ManifestError, match=r"m.jsonl: line 2: id 'case\\n' must be"):
        read_manifest(path)
    path.write_text(json.dumps({"id": "x" * 300, "video": "v.mp4", "actions": SCRIPT}) + "\n")
    with pytest.raises(ManifestError, match=r"line 1: id 'x+\.\.\. \(300 characters\)' must be 1 to 120"):
        read_manifest(path)
