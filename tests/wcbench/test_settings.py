"""Settings of `wcbench run`/`score`: the dataclass holds the defaults and their help (printed
by --help-settings), unknown keys get "did you mean" (with or without hydra's `+`), options need
no `+`, and values are checked against their types."""

import dataclasses

import pytest

from wcbench.cli import main
from wcbench.core.settings import RunSettings, SettingsError, load_run_settings, settings_help


def test_defaults_are_the_typed_settings():
    settings = load_run_settings([])
    assert settings == RunSettings() and settings.timeout_s == 600.0


@pytest.mark.parametrize("override", ["estimatr=gt", "+estimatr=gt", "++estimatr=gt"])
def test_unknown_keys_are_refused_with_a_suggestion(override):
    with pytest.raises(SettingsError, match="unknown setting 'estimatr'.*Did you mean 'estimator'"):
        load_run_settings([override])


def test_options_need_no_plus_and_keep_their_types():
    settings = load_run_settings(["estimator_options.max_side=200", "quality_options.spatial_stride=4",
                                  "model_options={checkpoint: /x}", "model_options.steps=3", "seed=7", "timeout_s=1.5"])
    assert settings.estimator_options == {"max_side": 200}
    assert settings.quality_options == {"spatial_stride": 4}
    assert settings.model_options == {"checkpoint": "/x", "steps": 3}
    assert (settings.seed, settings.timeout_s) == (7, 1.5)


@pytest.mark.parametrize("override, message", [
    ("seed=abc", "bad setting seed"), ("timeout_s=soon", "bad setting timeout_s"),
    ("timeout_s=-1", "must be >= 0"), ("device=gpu", "not one of auto, cpu, cuda"),
    ("seed.x=1", "'seed' has no sub-keys"), ("seed", "settings are key=value"),
])
def test_bad_values_are_named(override, message):
    with pytest.raises(SettingsError, match=message):
        load_run_settings([override])


def test_every_setting_has_help():
    assert all(item.metadata.get("help") for item in dataclasses.fields(RunSettings))


def test_help_settings_prints_each_setting_with_its_default_and_help(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", "--help-settings"])  # --out is not needed to ask
    out = capsys.readouterr().out
    assert stop.value.code == 0
    assert "timeout_s=600.0" in out and "past it the case fails" in out
    assert all(f"  {item.name}=" in out for item in dataclasses.fields(RunSettings))
    assert out.strip() == settings_help(RunSettings, out.splitlines()[0]).strip()


def test_an_unknown_key_on_the_command_line_gets_did_you_mean(tmp_path, capsys):
    assert main(["run", "--out", str(tmp_path / "run"), "sed=3"]) == 2
    assert "Did you mean 'seed'" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "run").exists()
