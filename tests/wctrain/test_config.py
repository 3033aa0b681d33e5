"""wctrain's settings: the dataclasses hold every default and its help (printed by `wctrain
--help` and `wctrain train --help`), the YAML files only override, an unknown key gets "did you
mean", and the device is one of wcbench's that wctrain takes."""

from __future__ import annotations

import dataclasses
import re

import pytest

from wcbench.core.settings import SettingsError
from wctrain.cli import main
from wctrain.config import PretrainConfig, TrainerConfig, load_config


def _leaves(cls: type, prefix: str = "") -> list[tuple[str, dataclasses.Field]]:
    """(dotted key, field) of every setting; a group's fields under its name."""
    out = []
    for item in dataclasses.fields(cls):
        if dataclasses.is_dataclass(item.default_factory):
            out += _leaves(item.default_factory, f"{prefix}{item.name}.")
        else:
            out.append((prefix + item.name, item))
    return out


def _help(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_defaults_live_in_the_dataclasses():
    """train.yaml and pretrain.yaml only override: composed with no overrides, they are the defaults."""
    assert load_config("train", []) == TrainerConfig()
    assert load_config("pretrain", []) == PretrainConfig()


@pytest.mark.parametrize("schema", [TrainerConfig, PretrainConfig])
def test_every_setting_has_help(schema):
    missing = [key for key, item in _leaves(schema) if not item.metadata.get("help")]
    assert not missing


@pytest.mark.parametrize("command, schema", [("train", TrainerConfig), ("pretrain", PretrainConfig)])
def test_command_help_lists_every_setting_with_its_default_and_help(command, schema, capsys):
    out = _help([command, "--help"], capsys)
    assert all(f"  {key}=" in out for key, _ in _leaves(schema))
    expected = r"rl\.steps=450 +training steps" if command == "train" else r"train\.steps=2400 +training steps"
    assert re.search(expected, out)


def test_wctrain_help_lists_both_commands_settings(capsys):
    out = _help(["--help"], capsys)
    assert "reward.funcs=[following]" in out and "data.num_trajectories=320" in out
    assert "built-in rewards (following, fine_action, quality)" in out


@pytest.mark.parametrize("override, suggestion", [("rl.stepz=3", "rl.steps"), ("steps=3", "rl.steps"),
                                                  ("recipee=worldcompass-release", "recipe")])
def test_unknown_keys_get_did_you_mean(override, suggestion):
    with pytest.raises(SettingsError, match=f"unknown setting .*Did you mean '{re.escape(suggestion)}'"):
        load_config("train", [override])


def test_bad_values_and_devices_are_named(capsys):
    with pytest.raises(SettingsError, match="bad setting rl.steps"):
        load_config("train", ["rl.steps=soon"])
    with pytest.raises(ValueError, match="device=cuda is not a wctrain device"):
        load_config("train", ["device=cuda"])
    with pytest.raises(ValueError, match=r"train.device must be one of \['auto', 'cpu'\]"):
        load_config("pretrain", ["train.device=gpu"])
    assert main(["train", "rl.stepz=3"]) == 2
    assert "Did you mean 'rl.steps'" in " ".join(capsys.readouterr().err.split())


def test_options_need_no_plus():
    assert load_config("train", ["model_options.checkpoint=/x"]).model_options == {"checkpoint": "/x"}
    assert load_config("pretrain", ["+model_options.height=32"]).model_options == {"checkpoint": None, "height": 32}


def test_reward_jobs_share_out_the_cores_among_training_processes(monkeypatch):
    """reward.jobs=0: the cores this process may use over the training processes on the machine
    (at least 1); learned scorers keep one process; a number is taken as given."""
    from wcbench.results.scorers import build_scorers
    from wcbench.run import pool
    from wctrain.rl.rewards import reward_jobs

    cpu = build_scorers({"estimator": {"name": "opencv"}, "quality": {"name": "default"}})
    monkeypatch.setattr(pool, "available_cores", lambda: 16)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    assert reward_jobs(0, cpu) == 2
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "32")
    assert reward_jobs(0, cpu) == 1
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    assert reward_jobs(0, cpu) == 16
    assert reward_jobs(3, cpu) == 3
    learned = dataclasses.replace(cpu, quality=type("HPS", (), {"name": "hpsv3-worldcompass"})())
    assert reward_jobs(0, learned) == 1
    with pytest.raises(ValueError, match="reward.jobs=2 needs weight-free scorers"):
        reward_jobs(2, learned)
    with pytest.raises(ValueError, match="reward.jobs must be 0"):
        load_config("train", ["reward.jobs=-1"])
