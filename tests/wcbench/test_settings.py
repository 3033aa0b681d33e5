"""Settings of `wcbench run`/`score`: unknown keys get "did you mean" (with or without hydra's
`+`), options need no `+`, and values are checked against their types."""

import pytest

from wcbench.core.settings import RunSettings, SettingsError, load_run_settings as load_settings


def test_defaults_are_the_typed_settings():
    settings = load_settings([])
    assert settings == RunSettings() and settings.timeout_s == 600.0


@pytest.mark.parametrize("override", ["estimatr=gt", "+estimatr=gt", "++estimatr=gt"])
def test_unknown_keys_are_refused_with_a_suggestion(override):
    with pytest.raises(SettingsError, match="unknown setting 'estimatr'.*Did you mean 'estimator'"):
        load_settings([override])


def test_options_need_no_plus_and_keep_their_types():
    settings = load_settings(["estimator_options.max_side=200", "quality_options.spatial_stride=4",
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
        load_settings([override])
