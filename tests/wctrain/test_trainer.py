"""wctrain train: end to end on CPU, exact resume, 2 processes = 1 process on the same groups, a
model written outside the repository, settings checked before anything runs."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from wcbench.pose import build_estimator
from wcbench.scoring.case import Scorers
from wcbench.scoring.quality import build_quality_scorer
from wctrain.cli import load_config, main
from wctrain.models.tinywm import TinyWM
from wctrain.rl.trainer import train

PLUGINS = Path(__file__).parents[1] / "plugins"


@pytest.fixture(scope="module")
def tiny_init(tmp_path_factory, make_small_tinywm):
    path = tmp_path_factory.mktemp("init") / "tinywm"
    make_small_tinywm().save_pretrained(path)
    return path


# The tiny model starts with a zero output layer, so its action embeddings get no gradient:
# these tests train every weight (the default trains the action embedding and its projection).
TRAIN_ALL = ["rl.trainable=[all]", "rl.lr=1e-4", "rl.shared_lr=1e-4"]

# this tiny model follows no candidate's actions (IF 0 everywhere), so IF alone (the default) gives
# r = 1/2 and rightly no update; tests that need the weights to move let quality's spread in
VQ_SPREAD = ["reward.funcs=[following,quality]", "reward.weights=[0.9,0.1]"]


def _overrides(run_dir, init, *extra):
    return [f"run_dir={run_dir}", f"+model_options.checkpoint={init}", "rl.group_size=4", "rl.top_k=1",
            "rl.episode_clips=2", "eval.every=0", "checkpoint_every=1", *TRAIN_ALL, *extra]


def _cfg(run_dir, init, *extra):
    return load_config("train", _overrides(run_dir, init, *extra))


def _weights(run_dir) -> dict[str, torch.Tensor]:
    """The trained model's weights in the run folder's newest checkpoint."""
    folder = Path(run_dir) / "checkpoints" / (Path(run_dir) / "latest").read_text().strip()
    return {k.removeprefix("model."): v for k, v in load_file(str(folder / "model.safetensors")).items()}


def _state(run_dir) -> dict:
    folder = Path(run_dir) / "checkpoints" / (Path(run_dir) / "latest").read_text().strip()
    return torch.load(folder / "custom_checkpoint_2.pkl", weights_only=True)  # the TrainingState


def _rows(run_dir) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if not k.startswith("seconds")}
            for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]


def _accelerate() -> str:
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")
    if accelerate is None:
        pytest.skip("accelerate CLI not installed")
    return accelerate


def _launch_two(*overrides: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([_accelerate(), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                           "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "wctrain", "train", *overrides],
                          capture_output=True, text=True, env=env,
                          timeout=900)


def test_train_runs_logs_and_exports(tiny_init, tmp_path):
    run = train(_cfg(tmp_path / "run", tiny_init, "rl.steps=2", *VQ_SPREAD))
    rows = _rows(run)
    assert [row["step"] for row in rows] == [1, 2] and rows[0]["clip_generations"] == 4
    assert {"reward_following", "reward_quality", "r_mean", "loss", "grad_norm"} <= set(rows[0])
    assert (run / "final" / "config.json").exists() and (run / "final" / "wctrain_model.json").exists()
    config = json.loads((run / "config.json").read_text())
    assert config["reward"]["funcs"] == ["following", "quality"]
    # the run and its export name the scorers its rewards came from: the benchmark's own header
    scorers = Scorers(build_estimator("opencv"), build_quality_scorer("default")).header()
    assert config["reward_scorers"] == scorers
    assert json.loads((run / "final" / "wctrain_model.json").read_text())["reward_scorers"] == scorers
    initial = TinyWM.from_pretrained(tiny_init).state_dict()
    assert any(not torch.equal(initial[k], v) for k, v in _weights(run).items())
    exported = TinyWM.from_pretrained(run / "final")  # save_pretrained: wcbench run --model tinywm loads it
    assert exported.config.cond_embed_dim == 32


def test_no_reward_spread_warns_so_and_not_that_v_old_is_wrong(tiny_init, tmp_path, monkeypatch):
    """IF only (the default) on a model that follows nothing: r = 1/2 everywhere, the gradient is
    exactly 0 and the weights never move, so v_theta = v_old is right; the warning must name the
    missing spread, not blame v_old (after 3 still steps here, 10 in a real run)."""
    from wctrain.rl.watch import UpdateWatch

    monkeypatch.setattr(UpdateWatch, "patience", 3)
    with pytest.warns(UserWarning) as record:
        run = train(_cfg(tmp_path / "run", tiny_init, "rl.steps=4", "rl.episode_clips=1", "checkpoint_every=100"))
    messages = [str(w.message) for w in record]
    assert any("no update for 3 steps" in m for m in messages)
    assert not any("v_old may be computed" in m for m in messages)
    rows = _rows(run)
    assert [row["grad_norm"] for row in rows] == [0.0] * 4 and {row["r_mean"] for row in rows} == {0.5}


def test_resume_continues_exactly_and_logs_each_step_once(tiny_init, tmp_path):
    # with the label curriculum on, step 2's episodes depend on step 1's rollouts: resume must restore it
    settings = "rl.focus_candidates=3", "device=cpu"  # bitwise on CPU; GPU kernels need not be deterministic
    straight = train(_cfg(tmp_path / "straight", tiny_init, "rl.steps=3", *settings, *VQ_SPREAD))
    resumed = tmp_path / "resumed"
    train(_cfg(resumed, tiny_init, "rl.steps=2", *settings, *VQ_SPREAD))  # a run killed after its checkpoint at 2
    with (resumed / "metrics.jsonl").open("a") as handle:  # ... that had logged step 3 before the kill
        handle.write(json.dumps({"step": 3, "reward_following": -1.0}) + "\n")
    train(_cfg(resumed, tiny_init, "rl.steps=3", *settings, *VQ_SPREAD))
    a, b = _weights(straight), _weights(resumed)
    assert all(torch.equal(a[k], b[k]) for k in a)
    initial = TinyWM.from_pretrained(tiny_init).state_dict()
    assert any(not torch.equal(initial[k], v) for k, v in a.items())  # the weights did move
    curriculum = [np.asarray(_state(run)["label_accuracy"]) for run in (straight, resumed)]
    assert (curriculum[0] != 0.5).any() and (curriculum[0] == curriculum[1]).all()
    assert _rows(resumed) == _rows(straight) and [row["step"] for row in _rows(resumed)] == [1, 2, 3]


def test_resume_with_other_trained_weights_names_the_checkpoint(tiny_init, tmp_path):
    run = tmp_path / "run"
    train(_cfg(run, tiny_init, "rl.steps=1"))
    before = _weights(run)
    with pytest.raises(ValueError, match=r"step-000001: cannot resume.*rl\.trainable"):
        train(_cfg(run, tiny_init, "rl.steps=2", "rl.trainable=[action_embedding]"))
    assert all(torch.equal(before[k], v) for k, v in _weights(run).items())  # nothing overwritten


def test_resume_with_rewards_from_other_scorers_is_refused(tiny_init, tmp_path):
    """A run started before a wcbench upgrade (here: its config says estimator v1 with another
    threshold) must not go on with the new scorers: its steps would mix two rewards."""
    run = tmp_path / "run"
    train(_cfg(run, tiny_init, "rl.steps=1"))
    before = _weights(run)
    config = json.loads((run / "config.json").read_text())
    config["reward_scorers"]["estimator"].update(version="1", thresholds={"translation": 0.0024, "rotation_deg": 0.3,
                                                                          "secondary_ratio": 0.3})
    (run / "config.json").write_text(json.dumps(config))
    current = build_estimator("opencv").version
    with pytest.raises(ValueError, match=rf"cannot resume: its rewards were scored by estimator opencv v1 "
                                         rf"\(translation 0.0024.*scores them with estimator opencv v{current}"):
        train(_cfg(run, tiny_init, "rl.steps=2"))
    assert all(torch.equal(before[k], v) for k, v in _weights(run).items())  # nothing overwritten
    assert json.loads((run / "config.json").read_text()) == config


@pytest.mark.slow
def test_two_processes_equal_one_on_the_same_groups(tiny_init, tmp_path, two_process_env):
    extra = ["rl.steps=1", "rl.focus_candidates=3", "device=cpu", *VQ_SPREAD]  # CPU kernels: equal to 1e-6
    one = train(_cfg(tmp_path / "one", tiny_init, "rl.groups_per_rank=2", *extra))
    proc = _launch_two(*_overrides(tmp_path / "two", tiny_init, *extra), env=two_process_env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = _weights(one), _weights(tmp_path / "two")
    for key in a:
        assert torch.allclose(a[key], b[key], atol=1e-6, rtol=1e-5), key
    curriculum = [_state(run)["label_accuracy"] for run in (one, tmp_path / "two")]
    assert curriculum[0] == curriculum[1]  # both ranks' groups reach the running IF per label


OUTSIDE = ["model=outside_world_model:build", "rl.steps=2", "rl.group_size=4", "rl.top_k=1", "rl.episode_clips=2",
           "eval.every=0", "reward.funcs=[following,quality]", "reward.weights=[0.5,0.5]"]


def _finite_losses(run_dir) -> list[float]:
    losses = [row["loss"] for row in _rows(run_dir)]
    assert len(losses) == 2 and all(np.isfinite(losses)), losses
    return losses


def test_a_model_from_outside_the_repository_trains_on_one_process(tmp_path, monkeypatch):
    """Whole-clip denoising, its own latent format, no exploration method, random weights."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    run = train(load_config("train", [f"run_dir={tmp_path / 'one'}", *OUTSIDE]))
    _finite_losses(run)
    from wctrain.models.registry import load_trained

    model = load_trained(run / "final")  # rebuilt from wctrain_model.json, weights from model.safetensors
    assert type(model).__name__ == "OutsideWorldModel" and (run / "final" / "model.safetensors").exists()


@pytest.mark.slow
def test_a_model_from_outside_the_repository_trains_on_two_processes(tmp_path, two_process_env):
    path = os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")]))
    proc = _launch_two(f"run_dir={tmp_path / 'two'}", *OUTSIDE, env={**two_process_env, "PYTHONPATH": path})
    assert proc.returncode == 0, proc.stderr[-3000:]
    _finite_losses(tmp_path / "two")


def test_bad_models_and_settings_are_refused_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(PLUGINS))
    base = [f"run_dir={tmp_path / 'run'}", "rl.steps=1"]
    assert main(["train", *base, "model=outside_world_model:not_a_world_model"]) == 2
    error = capsys.readouterr().err
    assert "not a TrainableWorldModel" in error and "velocity" in error and "frames_per_latent" in error
    assert main(["train", *base, "model=tinywmm"]) == 2
    assert "Did you mean 'tinywm'" in capsys.readouterr().err
    assert main(["train", *base, "rl.stpes=3"]) == 2  # a typo in a setting: hydra names it
    assert "stpes" in capsys.readouterr().err
    assert main(["train", *base, "reward.weights=[1.0,0.5]"]) == 2
    assert "one weight per reward.funcs entry" in capsys.readouterr().err
    assert main(["train", *base, "reward.funcs=[quality]"]) == 2  # the curriculum reads following
    assert "rl.focus_candidates=1" in capsys.readouterr().err
    assert main(["train", *base, "gradient_checkpointing=true"]) == 2  # tinywm has none
    assert "enable_gradient_checkpointing" in capsys.readouterr().err
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_if_reward_rises_on_a_fixed_training_case(tmp_path):
    """The shipped tinywm on one combined clip it follows badly (backward while turning left:
    IF 0.12 at first); a few NFT steps on that clip alone raise it (to about 0.9)."""
    run = train(load_config("train", [f"run_dir={tmp_path / 'fixed'}", "rl.steps=7", "rl.lr=2e-4", "rl.shared_lr=2e-4",
                                      "rl.trainable=[all]", "rl.episode_pool=1", "rl.episode_clips=1",
                                      "rl.combined_fraction=1.0", "rl.seed=6", "eval.every=0", "checkpoint_every=100"]))
    rows = _rows(run)
    rewards = [row["reward_following"] for row in rows]
    assert all("reward_quality" not in row for row in rows)  # IF only: quality is not scored
    assert rewards[0] < 0.5, rewards  # the case is one the model fails at first
    assert sum(rewards[-2:]) / 2 > rewards[0] + 0.3, rewards


def test_rollout_frames_are_what_wcbench_run_shows(tiny_init):
    """A clip-level candidate with the adapter's seed is the adapter's own clip, frame for frame."""
    from wcbench.core.actions import clip_step_ranges, parse_script
    from wcbench.core.camera import StepSizes, intrinsics_from_fov, script_trajectory
    from wcbench.data.scenes.synthetic import build_scene, render
    from wctrain.experimental.sample_rollout import rollout_sample_level
    from wctrain.models.wcbench_adapter import TinyWMWorldModel, load_tinywm
    from wctrain.rl.rollout import Episode, rollout_clip_level

    model = load_tinywm(tiny_init)
    script = parse_script("w+left-3, d-4")
    poses = script_trajectory(script, StepSizes())
    image = render(build_scene(3, poses[:, :3, 3]), poses[0], intrinsics_from_fov(96, 96, 75.0), 96, 96)
    adapter = TinyWMWorldModel(model=model)
    frame0 = adapter.reset(image, "", 5)
    steps = script.step_actions()
    clip0 = adapter.step([steps[i - 1] for i in clip_step_ranges(script.num_steps)[0]])
    rollout = rollout_clip_level(model, Episode(image, script), 0, 1, model.default_sigmas(),
                                 torch.Generator().manual_seed(5))
    assert np.array_equal(rollout.views[0].frames[1:], clip0)
    assert np.array_equal(rollout.views[0].reference, frame0)
    sample = rollout_sample_level(model, Episode(image, script), 1, 3, model.default_sigmas(),
                                  torch.Generator().manual_seed(5))
    assert (rollout.clip_generations, sample.clip_generations) == (1, 6)
    assert sample.candidates.shape[0] == 3 and len(sample.views[0].frames) == 17


def test_segment_steps_shape_training_scripts_and_settings_are_checked():
    from wcbench.data.suite import load_suite
    from wctrain.config import RewardConfig, RLConfig
    from wctrain.rl.episodes import sample_episode

    suite = load_suite("wc-mini")
    for steps, longest in (((1, 1), 1), ((2, 6), 6)):
        rl = RLConfig(segment_steps=list(steps), combined_fraction=1.0, focus_candidates=1)
        for draw in range(5):
            segments = sample_episode(rl, suite, draw, 0, set()).script.segments
            assert max(s.count for s in segments) <= longest
            if steps == (1, 1):  # a new action every latent step
                assert all(s.count == 1 for s in segments) and len(segments) == 15
    with pytest.raises(ValueError, match="rl.segment_steps"):
        RLConfig(segment_steps=[0, 2])
    with pytest.raises(ValueError, match="rl.rollout must be one of"):
        RLConfig(rollout="frame")
    with pytest.raises(ValueError, match="names a reward twice"):
        RewardConfig(funcs=["following", "following"], weights=[1.0, 1.0])
