"""``wctrain pretrain``: supervised flow matching on rendered synthetic trajectories, for any
trainable world model (tinywm, tinywan, or ``model=pkg.module:factory``).

Data: random action scripts (``wcbench.data.suite.generate_script``) rendered in procedural rooms
(``wcbench.data.scenes.synthetic``) with the suite's step sizes and field of view. The mix mirrors
how real world models are trained: mostly basic actions (one component at a time), few
combined ones, so the pretrained model follows basic actions clearly better than combined
ones and RL has something to fix.

Loop: sample windows (context latents + a clip of latents) -> noise them at random flow times
(one per latent for a model that generates latent by latent, one per clip for a model that
denoises the whole clip jointly, as each samples) -> teacher-forced velocity -> sigma^2-weighted
squared error to ``noise - x0`` (the clean latent's squared error) -> AdamW step -> EMA
(:class:`wctrain.rl.policy.EMA`, decay 0 during the warm-up) -> log -> checkpoint.
Checkpoints are written every ``checkpoint_every`` steps as ``wctrain train`` writes them
(:mod:`wctrain.checkpoint`: ``accelerator.save_state``, atomically), and a rerun of the same
command resumes from the latest one. The EMA weights are what gets exported.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.state import AcceleratorState, GradientState
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from torch import nn

from wcbench.core.actions import FRAMES_PER_LATENT, Action, Script, Segment, parse_script
from wcbench.core.camera import intrinsics_from_fov, script_trajectory
from wcbench.core.storage import write_json
from wcbench.data.suite import Suite, generate_script, load_suite
from wcbench.data.scenes.synthetic import RENDERER_VERSION, build_scene, render_frames
from wctrain.checkpoint import append_metrics, load_checkpoint, save_checkpoint, truncate_metrics
from wctrain.config import DataConfig, PretrainConfig, TrainConfig, load_config, to_pretrain_config
from wctrain.models.base import draw_noise
from wctrain.models.registry import build_trainable, save_model
from wctrain.models.sampling import add_noise
from wctrain.rl.policy import EMA, DecaySchedule

__all__ = ["Batch", "DataConfig", "PretrainConfig", "TrainConfig", "flow_matching_loss", "load_pretrain_config",
           "pretrain", "render_dataset", "render_latent_trajectory", "sample_batch", "TrajectoryData"]
DATA_FORMAT_VERSION = 1  # bump when rendered training data would change


def load_pretrain_config(overrides: list[str] | None = None) -> PretrainConfig:
    """Compose ``wctrain/conf/pretrain.yaml`` with hydra ``key=value`` overrides."""
    return to_pretrain_config(load_config("pretrain", list(overrides or [])))


# ---------------------------------------------------------------- data

@dataclass
class TrajectoryData:
    """Latent-aligned videos: ``frames[n, 4j:4j+4]`` are latent j (latent 0 = the start image x4).

    frames: (N, 4 * (S + 1), H, W, 3) uint8; actions: (N, S + 1, 4) float signs per latent
    (row 0 unused); tracks: (N,) 'basic' / 'combined'.
    """

    frames: np.ndarray
    actions: np.ndarray
    tracks: np.ndarray

    @property
    def num_latents(self) -> int:
        return self.actions.shape[1]


def sample_script(rng: np.random.Generator, data: DataConfig, suite: Suite) -> tuple[str, Script]:
    """A training script: a basic or combined track script, some segments made 'none'."""
    track = "basic" if rng.random() < data.basic_fraction else "combined"
    text = generate_script(rng, track, data.num_steps, suite.step_degrees, tuple(data.segment_steps))
    segments = [Segment(Action(), seg.count) if rng.random() < data.still_fraction else seg
                for seg in parse_script(text).segments]
    return track, Script(tuple(segments))


def render_trajectory(script: Script, scene_seed: int, suite: Suite, size: tuple[int, int],
                      render_scale: float) -> np.ndarray:
    """Render a script's frames at ``render_scale`` x ``size`` and area-downsample to ``size``
    (what the wcbench adapter does to the suite's start image)."""
    poses = script_trajectory(script, suite.steps)
    scene = build_scene(scene_seed, poses[:, :3, 3])
    width, height = round(size[0] * render_scale), round(size[1] * render_scale)
    K = intrinsics_from_fov(width, height, suite.fov_deg)
    frames = render_frames(scene, poses, K, width, height)
    if render_scale == 1:
        return frames
    return np.stack([cv2.resize(f, size, interpolation=cv2.INTER_AREA) for f in frames])


def render_latent_trajectory(script: Script, scene_seed: int, suite: Suite, size: tuple[int, int],
                             render_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """One trajectory in :class:`TrajectoryData`'s layout: frames (4 * (S + 1), H, W, 3) with
    the start image repeated as latent 0, and per-latent action signs (S + 1, 4), row 0 zero."""
    video = render_trajectory(script, scene_seed, suite, size, render_scale)
    aligned = np.concatenate([np.repeat(video[:1], FRAMES_PER_LATENT, axis=0), video[1:]])
    signs = np.zeros((script.num_steps + 1, 4), np.float32)
    signs[1:] = [[a.forward, a.right, a.yaw, a.pitch] for a in script.step_actions()]
    return aligned, signs


def render_dataset(data: DataConfig, size: tuple[int, int], count: int, seed_offset: int,
                   progress: Any = None) -> TrajectoryData:
    """Render ``count`` trajectories; scene seeds are drawn far from any suite's usual range."""
    suite = load_suite(data.suite)
    frames, actions, tracks = [], [], []
    task = progress.add_task(f"render data (seed offset {seed_offset})", total=count, status="") if progress else None
    for index in range(count):
        rng = np.random.default_rng([data.seed, seed_offset, index])
        track, script = sample_script(rng, data, suite)
        aligned, signs = render_latent_trajectory(script, int(rng.integers(2**31)), suite, size, data.render_scale)
        frames.append(aligned)
        actions.append(signs)
        tracks.append(track)
        if progress:
            progress.advance(task)
    return TrajectoryData(np.stack(frames), np.stack(actions), np.array(tracks))


def load_or_render_dataset(run_dir: Path, data: DataConfig, size: tuple[int, int], split: str,
                           progress: Any = None) -> TrajectoryData:
    """Rendered data cached in ``run_dir`` under a hash of everything that shapes it."""
    count, offset = (data.num_trajectories, 0) if split == "train" else (data.val_trajectories, 1)
    key = json.dumps({"data": asdict(data), "size": size, "split": split, "format": DATA_FORMAT_VERSION,
                      "renderer": RENDERER_VERSION}, sort_keys=True)
    path = run_dir / f"data-{split}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.npz"
    if path.exists():
        with np.load(path) as stored:
            return TrajectoryData(stored["frames"], stored["actions"], stored["tracks"])
    dataset = render_dataset(data, size, count, offset, progress)
    tmp = path.with_suffix(".partial.npz")
    np.savez(tmp, frames=dataset.frames, actions=dataset.actions, tracks=dataset.tracks)
    os.replace(tmp, path)
    return dataset


@dataclass
class Batch:
    """Training windows: context latents' frames, the clip's frames and its per-frame actions.

    prefix: (B, 4 * P, 3, H, W) and clip: (B, 4 * L, 3, H, W) floats in [0, 1];
    actions: (B, 4 * L, 4).
    """

    prefix: torch.Tensor
    clip: torch.Tensor
    actions: torch.Tensor


def sample_batch(data: TrajectoryData, rng: np.random.Generator, batch_size: int, clip_latents: int,
                 context_latents: int) -> Batch:
    """Random windows: clip latents k0..k0+L-1 (k0 >= 1) and the ``context_latents`` before them
    (latent indices below 0 repeat the start latent, as ``TinyWM.build_context`` does)."""
    fpl = FRAMES_PER_LATENT
    clip_latents = min(clip_latents, data.num_latents - 1)
    prefixes, clips, actions = [], [], []
    for _ in range(batch_size):
        n = int(rng.integers(len(data.frames)))
        k0 = int(rng.integers(1, data.num_latents - clip_latents + 1))
        context = [max(k, 0) for k in range(k0 - context_latents, k0)]
        prefixes.append(np.concatenate([data.frames[n, fpl * k:fpl * k + fpl] for k in context]))
        clips.append(data.frames[n, fpl * k0:fpl * (k0 + clip_latents)])
        actions.append(np.repeat(data.actions[n, k0:k0 + clip_latents], fpl, axis=0))

    def to_tensor(frames: list[np.ndarray]) -> torch.Tensor:
        return torch.from_numpy(np.stack(frames)).permute(0, 1, 4, 2, 3).float() / 255.0

    return Batch(to_tensor(prefixes), to_tensor(clips), torch.from_numpy(np.stack(actions)))


# ---------------------------------------------------------------- loss

def flow_matching_loss(model: nn.Module, batch: Batch, generator: torch.Generator, context_noise: float = 0.0,
                       logit_normal_mean: float = 0.0, logit_normal_std: float = 1.0) -> torch.Tensor:
    """Teacher-forced conditional flow-matching loss.

    Flow times ``sigma = sigmoid(N(logit_normal_mean, logit_normal_std))``, one per latent (a
    model with ``latents_per_denoise`` set) or one per clip (``None``: it denoises a clip
    jointly, at one noise level); the
    squared velocity error to ``noise - x0`` is weighted by ``sigma^2``, which makes it the
    squared error of the implied clean latent ``x_t - sigma v`` (equal weight at every noise
    level rather than the plain velocity loss's emphasis on near-clean inputs, which the
    few-step sampler never visits). Context latents get a little noise so the model tolerates
    its own imperfect frames when it rolls out autoregressively."""
    device = next(model.parameters()).device
    prefix, clip = model.encode(batch.prefix.to(device)), model.encode(batch.clip.to(device))
    noise = draw_noise(tuple(clip.shape), generator, clip)
    per = clip.shape[:2] if model.latents_per_denoise else clip.shape[:1]
    sigma = torch.sigmoid(logit_normal_mean + logit_normal_std * torch.randn(per, generator=generator)).to(device)
    sigma = sigma.reshape(len(sigma), -1).expand(clip.shape[:2])
    x_t = add_noise(clip, noise, sigma)
    if context_noise > 0:
        prefix = degrade_context(model, prefix, context_noise, generator)
        context_clip = degrade_context(model, clip, context_noise, generator)
    else:
        context_clip = clip
    ctx = model.build_context(prefix, context_clip)
    prediction = model.velocity(x_t, sigma, ctx, batch.actions.to(device))
    weight = sigma.square()[:, :, None, None, None]
    return (weight * (prediction - (noise - clip)).square()).mean()


def degrade_context(model: nn.Module, latents: torch.Tensor, noise_level: float,
                    generator: torch.Generator) -> torch.Tensor:
    """Context latents as the model's own output may look: blurred by a random amount (a
    3x3 binomial blur mixed in with weight U(0, 1)) plus Gaussian noise of std U(0, noise_level),
    one draw per sample."""
    batch, num_latents = latents.shape[:2]
    frames = model.decode(latents).flatten(0, 2)[:, None]  # (B * T * 3, 1, H, W)
    taps = torch.tensor([1.0, 2.0, 1.0], device=frames.device)
    kernel = (taps[:, None] * taps[None, :] / 16.0)[None, None]
    blurred = F.conv2d(F.pad(frames, (1, 1, 1, 1), mode="replicate"), kernel)
    mix = torch.rand(batch, 1, 1, 1, 1, generator=generator).to(frames)
    frames = frames.reshape(batch, -1, *frames.shape[-2:])
    blurred = blurred.reshape(frames.shape)
    frames = (1 - mix[:, :, 0]) * frames + mix[:, :, 0] * blurred
    degraded = model.encode(frames.reshape(batch, num_latents * model.frames_per_latent, 3, *frames.shape[-2:]))
    level = noise_level * torch.rand(batch, *([1] * (degraded.dim() - 1)), generator=generator).to(degraded)
    return degraded + level * draw_noise(tuple(degraded.shape), generator, degraded)


def lr_at(step: int, train: TrainConfig) -> float:
    """Linear warm-up, then cosine decay to ``min_lr_ratio * lr``."""
    if step < train.warmup_steps:
        return train.lr * (step + 1) / train.warmup_steps
    progress = min(1.0, (step - train.warmup_steps) / max(1, train.steps - train.warmup_steps))
    return train.lr * (train.min_lr_ratio + (1 - train.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


# ---------------------------------------------------------------- resuming

@dataclass
class PretrainState:
    """What resumes pretraining besides the weights, the optimiser and the EMA (which
    ``accelerator.save_state`` writes itself): the step, the time spent and the two random streams."""

    batch_rng: np.random.Generator
    noise_generator: torch.Generator
    step: int = 0
    elapsed_s: float = 0.0

    def state_dict(self) -> dict[str, Any]:
        return {"step": self.step, "elapsed_s": self.elapsed_s, "batch_rng": self.batch_rng.bit_generator.state,
                "noise_generator": self.noise_generator.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.batch_rng.bit_generator.state = state["batch_rng"]
        self.noise_generator.set_state(state["noise_generator"])
        self.step, self.elapsed_s = int(state["step"]), float(state["elapsed_s"])


def build_accelerator(train: TrainConfig) -> Accelerator:
    """One process, on the GPU (``train.device=auto`` where there is one) or the CPU, in full precision."""
    # accelerate keeps its settings process-wide: start from none (a train() before it in this process)
    AcceleratorState._reset_state()
    GradientState._reset_state()
    accelerator = Accelerator(cpu=not (train.device == "auto" and torch.cuda.is_available()), mixed_precision="no")
    if accelerator.num_processes > 1:
        raise ValueError("wctrain pretrain runs in one process; start it without `accelerate launch`")
    return accelerator


@torch.no_grad()
def validation_loss(model: nn.Module, batches: list[Batch], logit_normal_mean: float = 0.5, seed: int = 1234) -> float:
    """Mean loss on fixed batches with fixed noise and no context degradation (comparable across
    steps; an untrained model scores what "repeat the last frame" scores)."""
    generator = torch.Generator().manual_seed(seed)
    return float(np.mean([flow_matching_loss(model, batch, generator, logit_normal_mean=logit_normal_mean).item()
                          for batch in batches]))


# ---------------------------------------------------------------- loop

def pretrain(cfg: Any) -> Path:
    """Run (or resume) pretraining; returns the folder of the exported EMA model.

    ``cfg``: a :class:`PretrainConfig`, or the DictConfig from :func:`load_pretrain_config`.
    """
    cfg = to_pretrain_config(cfg)
    train = cfg.train
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    console = Console(stderr=True)
    accelerator = build_accelerator(train)
    torch.manual_seed(train.seed)  # weight initialisation

    # 1. setup: model, EMA copy, optimiser (prepared), data, random streams
    model = build_trainable(cfg.model, cfg.model_options).to(accelerator.device).train()
    ema = EMA(model, DecaySchedule(train.ema_decay, ramp=None, flat_steps=train.warmup_steps))
    optimizer = torch.optim.AdamW(model.parameters(), lr=train.lr, weight_decay=train.weight_decay)
    write_json(run_dir / "config.json", asdict(cfg) | {"model_config": dict(getattr(model, "config", {}))})
    model, optimizer = accelerator.prepare(model, optimizer)
    state = PretrainState(np.random.default_rng([train.seed, 1]), torch.Generator().manual_seed(train.seed))
    accelerator.register_for_checkpointing(ema, state)

    def progress_bar() -> Progress:
        return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                        console=console)

    with progress_bar() as progress:
        size = tuple(model.resolution)
        train_data = load_or_render_dataset(run_dir, cfg.data, size, "train", progress)
        val_data = load_or_render_dataset(run_dir, cfg.data, size, "val", progress)
    val_rng = np.random.default_rng(4321)
    val_batches = [sample_batch(val_data, val_rng, train.batch_size, train.clip_latents,
                                model.context_latents) for _ in range(4)]
    if load_checkpoint(accelerator, run_dir):
        truncate_metrics(run_dir, state.step)
        console.print(f"resumed {run_dir} at step {state.step}")

    # 2. loop: batch -> loss -> step -> EMA -> log -> checkpoint
    started = time.perf_counter() - state.elapsed_s
    running = None
    with progress_bar() as progress:
        task = progress.add_task(f"pretrain {cfg.model}", total=train.steps, completed=state.step, status="")
        while state.step < train.steps:
            batch = sample_batch(train_data, state.batch_rng, train.batch_size, train.clip_latents,
                                 model.context_latents)
            for group in optimizer.param_groups:
                group["lr"] = lr_at(state.step, train)
            loss = flow_matching_loss(model, batch, state.noise_generator, train.context_noise,
                                      train.logit_normal_mean, train.logit_normal_std)
            optimizer.zero_grad(set_to_none=True)
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), train.grad_clip)
            optimizer.step()
            ema.update(accelerator.unwrap_model(model))
            state.step += 1
            state.elapsed_s = time.perf_counter() - started
            running = loss.item() if running is None else 0.95 * running + 0.05 * loss.item()
            progress.update(task, advance=1, status=f"loss {running:.4f}")
            record: dict[str, Any] = {}
            if state.step % train.log_every == 0:
                record = {"step": state.step, "loss": loss.item(), "loss_avg": running,
                          "lr": optimizer.param_groups[0]["lr"], "elapsed_s": round(state.elapsed_s, 1)}
            is_out_of_time = train.time_limit_min is not None and state.elapsed_s > 60 * train.time_limit_min
            is_last = state.step == train.steps or is_out_of_time
            if state.step % train.val_every == 0 or is_last:
                record = record or {"step": state.step, "loss_avg": running, "elapsed_s": round(state.elapsed_s, 1)}
                record["val_loss_ema"] = validation_loss(ema.module, val_batches, train.logit_normal_mean)
                progress.console.print(f"step {state.step}: train {running:.4f}  val(EMA) {record['val_loss_ema']:.4f}")
            if record:
                append_metrics(run_dir, record)
            if state.step % train.checkpoint_every == 0 or is_last:
                save_checkpoint(accelerator, run_dir, state.step)
            if is_out_of_time:
                progress.console.print(f"time limit {train.time_limit_min} min reached at step {state.step}")
                break

    # 3. export the EMA weights
    export = Path(cfg.export_dir) if cfg.export_dir else run_dir / "final"
    save_model(ema.module, export, cfg.model, cfg.model_options)
    write_json(export / "pretrain_info.json", {
        "steps": state.step, "elapsed_s": round(state.elapsed_s, 1), "final_loss_avg": running,
        "val_loss_ema": validation_loss(ema.module, val_batches, train.logit_normal_mean), "config": asdict(cfg),
        "torch_threads": torch.get_num_threads()})
    console.print(f"exported EMA weights to {export}")
    return export
