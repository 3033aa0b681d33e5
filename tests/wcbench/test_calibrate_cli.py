"""`wcbench calibrate`: confusion report, chosen thresholds, --write into the estimator's config."""

import yaml

import wcbench.pose.base as pose_base
from wcbench.cli import main


def test_calibrate_gt_writes_thresholds(tmp_path, monkeypatch, capsys):
    target = tmp_path / "gt.yaml"
    target.write_text("name: gt\nthresholds: {translation: 9.0, rotation_deg: 9.0, secondary_ratio: 0.0}\n")
    monkeypatch.setattr(pose_base, "estimator_config_path", lambda name: target)
    assert main(["calibrate", "--estimator", "gt", "--scenes", "1", "--resolution", "48", "48", "--write"]) == 0
    out = capsys.readouterr().out
    assert "accuracy full 1.0000" in out and "per component" in out
    stored = yaml.safe_load(target.read_text())
    # true poses move 0.05 per frame and turn 0.75 deg per frame: the thresholds fall below both
    assert 0 < stored["thresholds"]["translation"] < 0.05 * 0.75
    assert 0 < stored["thresholds"]["rotation_deg"] < 0.75 * 0.75
    assert stored["calibration"]["seeds"] == [9000]
