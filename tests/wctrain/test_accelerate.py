"""accelerate as intended: the shipped launch configs, sharded models' EMA, mixed precision,
gradient checkpointing and trackers."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from wctrain.cli import load_config
from wctrain.config import CONF_DIR
from wctrain.rl.trainer import train

PLUGINS = Path(__file__).parents[1] / "plugins"
TINYWAN = ["model=tinywan", "+model_options.checkpoint=null", "+model_options.height=32", "+model_options.width=32",
           "+model_options.token_patch=2", "+model_options.dim=32", "+model_options.ffn_dim=64",
           "+model_options.heads=2", "+model_options.layers=2", "rl.group_size=4", "rl.top_k=1",
           "rl.episode_clips=2", "eval.every=0"]


def _rows(run_dir) -> list[dict]:
    return [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("name, kind", [("ddp", "MULTI_GPU"), ("fsdp", "FSDP"), ("deepspeed_zero2", "DEEPSPEED")])
def test_the_launch_configs_are_valid_accelerate_configs(name, kind):
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(CONF_DIR / "accelerate" / f"{name}.yaml"))
    assert config.distributed_type.value == kind and config.mixed_precision == "bf16"
    if kind == "FSDP":
        assert config.fsdp_config["fsdp_version"] == 2
    if kind == "DEEPSPEED":
        assert config.deepspeed_config["zero_stage"] == 2


@pytest.mark.slow
def test_fsdp_run_of_two_steps(tmp_path):
    if torch.cuda.device_count() < 2:
        pytest.skip("accelerate applies FSDP only on GPU-class devices: on CPU, `accelerate launch` with fsdp.yaml "
                    "runs plain multi-process DDP (accelerate/state.py sets DistributedType.FSDP only for MULTI_GPU "
                    "and its kin); the sharded model's EMA is tested on CPU with torch's FSDP2 below, and "
                    "benchmarks/gpu_check.sh runs this on GPUs")
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent))
    proc = subprocess.run([accelerate, "launch", "--config_file", str(CONF_DIR / "accelerate" / "fsdp.yaml"),
                           "--num_processes", "2", "-m", "wctrain", "train", f"run_dir={tmp_path / 'fsdp'}",
                           "rl.steps=2", *TINYWAN], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert all(np.isfinite(row["loss"]) for row in _rows(tmp_path / "fsdp"))


@pytest.mark.slow
def test_the_ema_of_a_sharded_model_gathers_the_trained_parameters(tmp_path, two_process_env):
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    if torchrun is None:
        pytest.skip("torchrun not installed")
    out = tmp_path / "ema.json"
    proc = subprocess.run([torchrun, "--nproc_per_node", "2", str(PLUGINS / "fsdp_ema.py"), str(out)],
                          capture_output=True, text=True, timeout=600, env=two_process_env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["sharded"] > 0 and result["count"] > 20
    assert result["max_error"] < 1e-6


def test_bf16_and_gradient_checkpointing(tmp_path):
    """One step of a tiny tinywan in bf16 autocast with gradient checkpointing."""
    run = train(load_config("train", [f"run_dir={tmp_path / 'run'}", "rl.steps=1", "mixed_precision=bf16",
                                      "gradient_checkpointing=true", *TINYWAN]))
    rows = _rows(run)
    assert len(rows) == 1 and np.isfinite(rows[0]["loss"]) and np.isfinite(rows[0]["reward_following"])


def test_metrics_reach_a_tracker(tmp_path, monkeypatch):
    pytest.importorskip("tensorboard", reason="the tensorboard tracker needs `pip install tensorboard`")
    monkeypatch.syspath_prepend(str(PLUGINS))
    run = train(load_config("train", [f"run_dir={tmp_path / 'run'}", "rl.steps=1", "log_with=[tensorboard]",
                                      "model=outside_world_model:build", "rl.group_size=2", "rl.episode_clips=1",
                                      "eval.every=0"]))
    assert len(_rows(run)) == 1
    assert list((run / "wctrain").glob("events.out.tfevents.*"))  # accelerate's tensorboard tracker wrote
