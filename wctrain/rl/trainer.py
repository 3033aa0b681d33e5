"""``wctrain train``: clip-level RL post-training (DiffusionNFT) of any trainable world model
against the benchmark's scorers.

One step, read top to bottom in :func:`train`:
  episode + target clip -> rollout with the old (EMA) policy -> rewards (wcbench scorers and
  any user reward) -> group advantages -> best-of-N -> NFT loss on the target clip at a random
  subset of the sampler's timesteps -> backward (accelerate: gradients averaged over every
  group of every rank) -> step -> EMA updates -> curriculum -> log -> evaluate / checkpoint.

Accelerate is used as intended: one ``Accelerator`` (mixed precision, gradient accumulation
over a rank's groups, trackers) and ``prepare(model, optimizer)``; every tensor lives on
``accelerator.device``. Random draws come from CPU generators seeded by (seed, step, group), so
a resumed run repeats exactly what an uninterrupted one would do, and N processes with one
group each compute what one process computes with N groups.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState, GradientState
from accelerate.utils import DistributedType, broadcast
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from torch import nn

from wcbench.core.actions import clip_step_actions
from wcbench.core.camera import Thresholds
from wcbench.core.environment import this_process_uses_a_gpu
from wcbench.core.storage import write_json
from wcbench.data.suite import Suite, load_suite
from wcbench.report.summary import summarize
from wcbench.results.scorers import build_scorers
from wcbench.run.pool import ScoringPool
from wcbench.run.runner import RunConfig, run_suite
from wcbench.scoring.case import Scorers
from wctrain.checkpoint import append_metrics, load_checkpoint, save_checkpoint, truncate_metrics
from wctrain.config import TrainerConfig, to_trainer_config
from wctrain.experimental.sample_rollout import rollout_sample_level
from wctrain.models.registry import build_trainable, save_model
from wctrain.models.wcbench_adapter import TrainableWorldModelAdapter
from wctrain.rl.advantages import AdvantageConfig, GroupAdvantages, compute_advantages, compute_pooled_std
from wctrain.rl.curriculum import label_mask, update_label_accuracy
from wctrain.rl.episodes import sample_episode, step_generator
from wctrain.rl.exploration import build_exploration, supports_exploration
from wctrain.rl.loss import VelocityField, group_loss
from wctrain.rl.policy import EMA, DecaySchedule, build_frozen_copy
from wctrain.rl.resume import TrainingState, check_same_reward_scorers, check_same_trajectories
from wctrain.rl.rewards import Reward, RewardContext, build_rewards, reward_jobs, score_group
from wctrain.rl.rollout import Episode, GroupRollout, rollout_clip_level
from wctrain.rl.schedule import accumulation_plan, target_clip
from wctrain.rl.trainable import optimizer_groups, resolve_trainable, select_trainable
from wctrain.rl.trajectories import TrajectoryMix, load_trajectory_set
from wctrain.rl.watch import UpdateWatch

FOLLOWING = "following"  # the reward the curriculum reads
# rl.rollout: WorldCompass's clip level, or the paper's sample-level ablation
ROLLOUTS = {"clip": rollout_clip_level, "sample": rollout_sample_level}


@dataclass
class Run:
    """Everything a training step needs, built once by :func:`build_run`."""

    cfg: TrainerConfig
    accelerator: Any
    model: nn.Module        # the prepared VelocityField (DDP/FSDP/DeepSpeed-wrapped as launched)
    optimizer: Any
    old: EMA                # the old policy: rollouts and v_old
    eval_ema: EMA           # evaluation and the exported model
    rewards: dict[str, Reward]
    advantage: AdvantageConfig
    suite: Suite
    held_out: set[int]
    sigmas: torch.Tensor
    state: TrainingState
    run_dir: Path
    reward_scorers: dict    # the header of the scorers the rewards call (wcbench.scoring.case.Scorers)
    mix: TrajectoryMix | None  # pose trajectories a share of the episodes come from (data.*)
    reward_pool: ScoringPool  # the processes that score a group's clips (reward.jobs)

    @property
    def trained(self) -> nn.Module:
        """The trained model itself (unwrapped), for the EMA updates."""
        return self.accelerator.unwrap_model(self.model).model

    @property
    def groups(self) -> list[int]:
        per_rank = self.cfg.rl.groups_per_rank
        return [self.accelerator.process_index * per_rank + g for g in range(per_rank)]


# ---------------------------------------------------------------- setup

def build_model(cfg: TrainerConfig, accelerator: Any) -> nn.Module:
    """The configured model on the device in train mode, with only ``rl.trainable`` trainable;
    every rank starts from rank 0's weights (a factory may draw random weights per process)."""
    model = build_trainable(cfg.model, cfg.model_options).to(accelerator.device).train()
    if accelerator.num_processes > 1:
        with torch.no_grad():
            for tensor in model.state_dict().values():
                tensor.copy_(broadcast(tensor.clone(), from_process=0))
    select_trainable(model, resolve_trainable(model, cfg.rl.trainable))
    if cfg.gradient_checkpointing:
        # diffusers models have the method but refuse unless the class declares support
        supported = getattr(model, "_supports_gradient_checkpointing", True)
        if not (hasattr(model, "enable_gradient_checkpointing") and supported):
            raise ValueError(f"gradient_checkpointing=true, but model {cfg.model!r} ({type(model).__name__}) has no "
                             f"enable_gradient_checkpointing(); set gradient_checkpointing=false")
        model.enable_gradient_checkpointing()
    return model


def reward_scorers(cfg: TrainerConfig) -> Scorers:
    """The benchmark's scorers the rewards call; their header (estimator name, version and
    thresholds, quality scorer and version) is recorded with the run and its export."""
    return build_scorers({"estimator": {"name": cfg.reward.estimator}, "quality": {"name": cfg.reward.quality}})


def build_run_rewards(cfg: TrainerConfig, suite: Suite, scorers: Scorers) -> dict[str, Reward]:
    """The configured rewards, checked against what the curriculum needs."""
    rewards = build_rewards(cfg.reward.funcs, RewardContext(scorers, suite.fov_deg))
    if cfg.rl.uses_curriculum and FOLLOWING not in rewards:
        raise ValueError(f"the label curriculum reads the {FOLLOWING!r} reward: add it to reward.funcs (weight 0 "
                         f"if it should not train), or set rl.focus_candidates=1 rl.explore_focus=0")
    return rewards


def build_trajectory_mix(cfg: TrainerConfig) -> TrajectoryMix | None:
    """The pose trajectories of ``data.trajectories``, converted to episode-long scripts, and the
    share of episodes drawn from them; ``None`` when no episode is (the default)."""
    data = cfg.data
    if data.share == 0:
        return None
    thresholds = Thresholds(data.translation_threshold, data.rotation_threshold_deg)
    return TrajectoryMix(load_trajectory_set(data.trajectories, thresholds, 4 * cfg.rl.episode_clips - 1), data.share)


def build_run(cfg: TrainerConfig) -> Run:
    """Processes, model, its two EMAs, optimiser (prepared), rewards, episodes' suite and
    trajectories; resumes."""
    suite = load_suite(cfg.suite)
    scorers = reward_scorers(cfg)
    rewards = build_run_rewards(cfg, suite, scorers)  # bad reward settings fail before the model loads
    jobs = reward_jobs(cfg.reward.jobs, scorers)
    mix = build_trajectory_mix(cfg)  # ... as do malformed pose files
    trajectories = mix.trajectories.header() if mix else None
    run_dir = Path(cfg.run_dir)
    check_same_reward_scorers(run_dir, scorers.header())  # ... and a resume that would mix two rewards
    check_same_trajectories(run_dir, trajectories)  # ... or two episode sets
    # accelerate keeps its settings process-wide: a second train() in one process (a notebook, the
    # tests) would otherwise inherit the first one's mixed precision; the process group stays
    AcceleratorState._reset_state()
    GradientState._reset_state()
    on_cpu = cfg.device == "cpu" or not this_process_uses_a_gpu(torch)
    accelerator = Accelerator(cpu=on_cpu, mixed_precision=cfg.mixed_precision,
                              gradient_accumulation_steps=cfg.rl.groups_per_rank,
                              log_with=cfg.log_with or None, project_dir=cfg.run_dir)
    # DeepSpeed sizes its steps before prepare: a group is one micro-batch, a rank's groups accumulate
    if accelerator.distributed_type == DistributedType.DEEPSPEED:
        ds_config = accelerator.state.deepspeed_plugin.deepspeed_config
        ds_config.update(train_micro_batch_size_per_gpu=1, gradient_accumulation_steps=cfg.rl.groups_per_rank)
    model = build_model(cfg, accelerator)
    # the EMAs are full copies made before prepare (which may shard the trained model)
    old = EMA(model, old_policy_schedule(cfg))
    eval_ema = EMA(model, DecaySchedule(cfg.policy.eval_decay, ramp=None))
    optimizer = torch.optim.AdamW(optimizer_groups(model, cfg.rl.lr, cfg.rl.shared_lr), weight_decay=0.0)
    prepared, optimizer = accelerator.prepare(VelocityField(model), optimizer)
    state = TrainingState()
    accelerator.register_for_checkpointing(old, eval_ema, state)
    if load_checkpoint(accelerator, run_dir) and accelerator.is_main_process:
        truncate_metrics(run_dir, state.step)
    if accelerator.is_main_process:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json(run_dir / "config.json", asdict(cfg) | {"reward_scorers": scorers.header(),
                                                           "trajectories": trajectories})
    accelerator.init_trackers("wctrain", config=_flat(asdict(cfg)))
    if cfg.rl.explore > 0 and not supports_exploration(model):
        accelerator.print(f"note: {type(model).__name__} exposes no action_embedding; rollouts explore by the "
                          f"sampler's noise alone (rl.sampler_eta={cfg.rl.sampler_eta})")
    return Run(cfg, accelerator, prepared, optimizer, old, eval_ema, rewards,
               advantage_config(cfg),
               suite, {c.scene_seed for c in load_suite(cfg.eval.suite).cases},
               model.default_sigmas().to(accelerator.device), state, run_dir, scorers.header(), mix,
               ScoringPool(None, jobs))  # each job carries its reward and its scorers


def old_policy_schedule(cfg: TrainerConfig) -> DecaySchedule:
    """The old policy's EMA decay schedule (``policy.old_*``)."""
    policy = cfg.policy
    return DecaySchedule(policy.old_max_decay, ramp=policy.old_ramp, flat_steps=policy.old_flat_steps,
                         min_decay=policy.old_min_decay)


def advantage_config(cfg: TrainerConfig) -> AdvantageConfig:
    """How the run's rewards become r (weights, clip, best-of-N, normalisation)."""
    reward = cfg.reward
    return AdvantageConfig(weights=reward.weight_of, z=reward.z, top_k=cfg.rl.top_k, eps=reward.eps,
                           std_scope=reward.std_scope, unbiased_std=reward.unbiased_std,
                           normalize_weights=reward.normalize_weights)


def _flat(config: dict, prefix: str = "") -> dict:
    """Nested settings as flat ``a.b`` keys of numbers and strings (what trackers accept)."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value if isinstance(value, (int, float, str, bool)) else str(value)
    return out


# ---------------------------------------------------------------- one step's parts

def roll_out(run: Run, step: int, episodes: list[Episode], clip: int) -> list[GroupRollout]:
    """Each group's rollout with the old policy, its exploration from the running IF per label."""
    rl = run.cfg.rl
    exploration = build_exploration(rl.explore, rl.explore_focus, run.state.label_accuracy)
    rollout = ROLLOUTS[rl.rollout]
    with run.accelerator.autocast():
        return [rollout(run.old.module, episode, clip, rl.group_size, run.sigmas,
                        step_generator(rl.seed, step, group, 1), eta=rl.sampler_eta, exploration=exploration)
                for group, episode in zip(run.groups, episodes)]


def pooled_reward_std(run: Run, scores: list[dict]) -> dict[str, float] | None:
    """Under ``reward.std_scope=global``, each reward's std over every candidate of every group of
    every rank (gathered; ``None`` values left out), as the release's ``--std_type global``;
    ``None`` under the default per-group std."""
    if run.advantage.std_scope == "group":
        return None
    pooled = {}
    for name in run.rewards:
        if any(np.ndim(np.asarray(s[name], dtype=object)) != 1 for s in scores):
            raise ValueError(f"reward.std_scope=global normalises per-clip rewards; {name!r} gives one value per "
                             f"latent: use reward.std_scope=group or a per-clip reward (fine_action, quality)")
        local = torch.tensor([[np.nan if v is None else float(v) for v in s[name]] for s in scores],
                             dtype=torch.float64, device=run.accelerator.device)  # NaN: not applicable
        pooled[name] = compute_pooled_std(run.accelerator.gather(local).cpu().numpy(), run.advantage.ddof)
    return pooled


def update_policy(run: Run, step: int, rollouts: list[GroupRollout],
                  advantages: list[GroupAdvantages]) -> tuple[float, float, float, int]:
    """The optimiser steps of one training step (:func:`wctrain.rl.schedule.accumulation_plan`: one,
    or one every ``rl.grad_accum_samples`` selected candidates). Each: the loss of every group's
    candidates of that step, backward (accumulated over the rank's groups, averaged over ranks),
    clip, step, then the EMA updates, all at this training step's old-policy decay. Returns (mean
    loss, mean |v_theta - v_old|, mean gradient norm, optimiser steps)."""
    acc, rl = run.accelerator, run.cfg.rl
    plan = accumulation_plan(len(advantages[0].selected), rl.grad_accum_samples)
    # one loss generator per group for the whole step: each optimiser step draws on from where the
    # previous one stopped (fresh noise and timesteps), and a single step draws as it always did
    generators = {group: step_generator(rl.seed, step, group, 2) for group in run.groups}
    losses, deviations, norms = [], [], []
    for index, positions in enumerate(plan):
        run.optimizer.zero_grad(set_to_none=True)
        for group, rollout, adv in zip(run.groups, rollouts, advantages):
            with acc.accumulate(run.model), acc.autocast():
                r = torch.as_tensor(adv.r, dtype=torch.float32)
                loss, deviation = group_loss(run.model, run.old.module, rollout, r, adv.selected[positions],
                                             run.sigmas, generators[group], rl)
                acc.backward(loss)
            losses.append(float(loss.detach()))
            deviations.append(deviation)
        norm = acc.clip_grad_norm_(run.model.parameters(), rl.grad_clip)
        run.optimizer.step()
        norms.append(float("nan") if norm is None else float(norm.full_tensor() if hasattr(norm, "full_tensor")
                                                             else norm))
        # the old policy for the next rollouts (and the next v_old), the evaluation copy
        run.old.update(run.trained, advance=index == len(plan) - 1)
        run.eval_ema.update(run.trained)
    return sum(losses) / len(losses), sum(deviations) / len(deviations), sum(norms) / len(norms), len(plan)


def update_curriculum(run: Run, episodes: list[Episode], scores: list[dict], clip: int) -> None:
    """Move the running IF per label (the same on every rank: every rank's groups count) toward
    this step's candidates' mean IF of each latent, credited to that latent's label."""
    if FOLLOWING not in run.rewards:
        return
    unit_labels = [{a.label} for e in episodes for a in clip_step_actions(e.script, clip)]
    unit_if = [float(np.mean(column)) for s in scores for column in np.asarray(s[FOLLOWING], dtype=float).T]
    visited = run.accelerator.gather(torch.as_tensor(label_mask(unit_labels)).to(run.accelerator.device)).cpu().numpy()
    unit_if = run.accelerator.gather(torch.tensor(unit_if, dtype=torch.float64, device=run.accelerator.device))
    run.state.label_accuracy = update_label_accuracy(run.state.label_accuracy, visited, unit_if.cpu().numpy(),
                                                     run.cfg.rl.focus_rate)


def _mean(values: Any) -> float:
    """A candidate's reward as one number: the mean of its applicable values (per latent or one)."""
    given = [v for v in np.asarray(values, dtype=object).reshape(-1).tolist() if v is not None]
    return float(np.mean(given)) if given else float("nan")


def metrics_row(run: Run, step: int, scores: list[dict], advantages: list[GroupAdvantages],
                rollouts: list[GroupRollout]) -> dict:
    """Every rank's candidates' mean rewards and r statistics (gathered), and this step's facts."""
    names = list(run.rewards)
    rows = [[_mean(s[name][i]) for name in names] + [float(a.r[i].mean())]
            for s, a in zip(scores, advantages) for i in range(run.cfg.rl.group_size)]
    gathered = run.accelerator.gather(torch.tensor(rows, dtype=torch.float64, device=run.accelerator.device))
    gathered = gathered.cpu().numpy()
    row = {"step": step + 1} | {f"reward_{name}": float(gathered[:, k].mean()) for k, name in enumerate(names)}
    row |= {"r_mean": float(gathered[:, -1].mean()), "r_std": float(gathered[:, -1].std()), "clip": rollouts[0].clip,
            "weakest_labels": [int(i) for i in np.argsort(run.state.label_accuracy, kind="stable")[:4]],
            "clip_generations": sum(r.clip_generations for r in rollouts) * run.accelerator.num_processes}
    if run.accelerator.device.type == "cuda":  # this rank's peak since the start (benchmarks/gpu_check.sh)
        row["peak_gpu_mib"] = torch.cuda.max_memory_allocated(run.accelerator.device) / 2**20
    return row


def evaluate(model: nn.Module, cfg: TrainerConfig, out_dir: Path) -> dict:
    """Run the held-out suite with wcbench (default scorers) on a frozen copy; its summary block."""
    suite = load_suite(cfg.eval.suite)
    if cfg.eval.limit:
        suite = replace(suite, cases=suite.cases[:cfg.eval.limit])
    scorers = build_scorers({"estimator": {"name": "opencv"}, "quality": {"name": "default"}})
    records = run_suite(suite, TrainableWorldModelAdapter(build_frozen_copy(model)), RunConfig(model=cfg.model),
                        scorers, out_dir, device=str(next(model.parameters()).device))
    return summarize(records)


def _progress(console_quiet: bool):
    return Progress(TextColumn("[bold]wctrain"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
                    TimeElapsedColumn(), console=Console(stderr=True, quiet=console_quiet))


# ---------------------------------------------------------------- the loop

def train(cfg: Any) -> Path:
    """Run (or resume) RL post-training; returns the run folder."""
    run = build_run(to_trainer_config(cfg))
    cfg, acc, rl = run.cfg, run.accelerator, run.cfg.rl
    watch = UpdateWatch()
    with run.reward_pool, _progress(not acc.is_main_process) as progress:
        task = progress.add_task("train", total=rl.steps, completed=run.state.step, status="")
        for step in range(run.state.step, rl.steps):
            started = time.perf_counter()
            # 1. this rank's episodes and their rollouts with the old policy, one target clip
            clip = target_clip(step, rl.episode_clips, rl.clip_schedule, ramp_steps=rl.ramp_steps)
            episodes = [sample_episode(rl, run.suite, step, group, run.held_out, run.state.label_accuracy, clip,
                                       run.mix) for group in run.groups]
            rollouts = roll_out(run, step, episodes, clip)
            rolled_out = time.perf_counter()
            # 2. rewards: the benchmark's own scorers (and any user reward), checked for shape
            scores = [score_group(run.rewards, r.views, [e.prompt] * rl.group_size, r.candidates.shape[1],
                                  run.reward_pool) for r, e in zip(rollouts, episodes)]
            scored = time.perf_counter()
            # 3. advantages normalised per group (per latent where a reward is; or by one std pooled
            #    over every group of every rank), best-of-N, r
            pooled_std = pooled_reward_std(run, scores)
            advantages = [compute_advantages(s, run.advantage, pooled_std) for s in scores]
            # 4. NFT loss on the target clip, gradients averaged over every group of every rank, step(s),
            #    each followed by the EMA updates (the old policy for the next rollouts, the evaluation copy)
            loss, deviation, grad_norm, optimizer_steps = update_policy(run, step, rollouts, advantages)
            # 5. curriculum, log (rank 0 writes), a warning if the weights stop moving
            update_curriculum(run, episodes, scores, clip)
            row = metrics_row(run, step, scores, advantages, rollouts) | {
                "loss": loss, "deviation": deviation, "grad_norm": grad_norm, "optimizer_steps": optimizer_steps,
                "seconds": time.perf_counter() - started, "seconds_rollout": rolled_out - started,
                "seconds_rewards": scored - rolled_out}
            watch.observe(deviation, grad_norm)
            run.state.step = step + 1
            # 6. evaluate and checkpoint
            if acc.is_main_process and cfg.eval.every and (step + 1) % cfg.eval.every == 0:
                summary = evaluate(run.eval_ema.module, cfg, run.run_dir / "eval" / f"step-{step + 1:05d}")
                row["eval"] = {k: {m: v.get(m) for m in ("if_acc", "if_trans_acc", "if_rot_acc", "vq")}
                               for k, v in summary.items()}
            if acc.is_main_process:
                append_metrics(run.run_dir, row)
            acc.log({k: v for k, v in row.items() if isinstance(v, (int, float))}, step=step + 1)
            if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == rl.steps:
                save_checkpoint(acc, run.run_dir, step + 1)
            acc.wait_for_everyone()
            status = " ".join(f"{k[7:]} {v:.3f}" for k, v in row.items() if k.startswith("reward_"))
            progress.update(task, advance=1, status=f"{status} loss {loss:.4f}")
    if acc.is_main_process:
        save_model(run.eval_ema.module, run.run_dir / "final", cfg.model, cfg.model_options,
                   reward_scorers=run.reward_scorers)
    acc.end_training()
    return run.run_dir
