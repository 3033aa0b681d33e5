"""``wctrain train``: clip-level RL post-training (DiffusionNFT) against the benchmark's scorers.

One step, read top to bottom in :func:`train`:
  episode + target clip -> rollout with the old (EMA) policy -> rewards (wcbench scorers)
  -> gather across ranks -> group advantages -> best-of-N -> NFT loss on the target clip at a
  random subset of the sampler's timesteps -> backward -> gradient mean across ranks -> step
  -> EMA updates -> log -> evaluate / checkpoint.

Every random draw of a step comes from generators seeded by (seed, step, group), so a resumed
run repeats exactly what an uninterrupted one would do, and N processes with one group each
compute what one process computes with N groups (gradients are averaged over all groups).
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from wcbench.actions import NUM_LABELS, Action, clip_step_actions
from wcbench.scenes.packs import synthetic_world
from wcbench.scoring.case import Scorers
from wcbench.storage import atomic_path, write_json
from wcbench.suite import generate_script, load_suite
from wctrain.advantages import AdvantageConfig, compute_group_advantages, compute_latent_advantages, reward_std
from wctrain.curriculum import (
    FOCUS_SCORES, clip_labels, episode_weights, exploration_scales, initial_label_accuracy, label_mask,
    update_label_accuracy,
)
from wctrain.models.tinywm import EXPLORATION_MODES
from wctrain.nft import kl_to_reference, nft_loss, rwr_loss, subsample_timesteps
from wctrain.policy import EMA, DecaySchedule, build_frozen_copy
from wctrain.rewards import FollowingReward, QualityReward
from wctrain.rollout import Episode, Exploration, GroupRollout, rollout_clip_level, rollout_sample_level
from wctrain.sampling import add_noise
from wctrain.schedule import target_clip


# ---------------------------------------------------------------- config

@dataclass
class RLConfig:
    steps: int = 450
    groups_per_rank: int = 1
    group_size: int = 8            # G candidates per group
    rollout: str = "clip"          # clip (shared prefix) | sample (G whole videos; the ablation)
    sampler_eta: float = 1.0       # rollouts' ancestral-sampler noise (0: the deterministic Euler sampler)
    explore: float = 1.0           # per-candidate action-embedding perturbation scale (0: none)
    explore_focus: float = 0.5     # per label x (1 + focus (1 - 2 IF)) by the curriculum's running IF (0: off)
    explore_mode: str = "isotropic"  # isotropic (x the table's std) | components (of the label's own motion)
    #                                  | parts (frames read as a part) | boost (isotropic + more of each part)
    parts_below: float = 1.0       # parts: only labels whose running IF is below this are read as parts (1: all)
    trainable: list[str] | None = field(default_factory=lambda: ["action_embedding", "action_proj"])  # None: all
    loss: str = "nft"              # nft | rwr (plain reward-weighted regression; the ablation)
    beta: float = 1.0              # NFT's beta
    kl_weight: float = 0.0         # weight of the KL to the initial model (separate from beta)
    lr: float = 1.0e-2             # for the action-embedding table (one row per label)
    shared_lr: float = 1.0e-3      # for every other trained weight (shared by all labels; ~1e-4 for all)
    grad_clip: float = 1.0
    timestep_fraction: float = 0.5  # share of the sampler's timesteps each candidate trains on
    top_k: int | None = 3          # best-of-N: train on the top k and bottom k of G (None: all)
    clip_schedule: str = "cycle"   # cycle | progressive
    ramp_steps: int = 40           # progressive: steps until every clip is reachable
    episode_clips: int = 4         # training videos are this many clips long
    combined_fraction: float = 0.8  # share of training episodes from the combined track
    segment_steps: tuple[int, int] = (2, 6)  # latent steps per action segment of training scripts
    episode_pool: int = 0          # >0: cycle through this many fixed episodes (0: a new one every step)
    focus_candidates: int = 6      # label curriculum: pick each episode from this many scripts (1: off)
    focus_rate: float = 0.1        # how fast the curriculum's running IF per label follows the rollouts
    focus_floor: float = 0.05      # added to every candidate script's score: labels followed stay visited
    focus_score: str = "spread"    # spread: failure x chance a group has IF spread | failure: 1 - IF
    seed: int = 0

    def __post_init__(self) -> None:
        # checked here, before any rollout, rather than at the first episode or update
        if self.focus_candidates < 1:
            raise ValueError(f"rl.focus_candidates must be at least 1 (1: no curriculum), got {self.focus_candidates}")
        if not 0.0 < self.focus_rate <= 1.0:
            raise ValueError(f"rl.focus_rate must be in (0, 1], got {self.focus_rate}")
        if self.focus_floor <= 0.0:
            raise ValueError(f"rl.focus_floor must be above 0 (0 would never draw a script whose labels are "
                             f"all followed), got {self.focus_floor}")
        if self.focus_score not in FOCUS_SCORES:
            raise ValueError(f"rl.focus_score must be one of {FOCUS_SCORES}, got {self.focus_score!r}")
        if not 0.0 <= self.explore_focus < 1.0:
            raise ValueError(f"rl.explore_focus must be in [0, 1), got {self.explore_focus}")
        if self.explore_mode not in EXPLORATION_MODES:
            raise ValueError(f"rl.explore_mode must be one of {EXPLORATION_MODES}, got {self.explore_mode!r}")
        if not 0.0 < self.parts_below <= 1.0:
            raise ValueError(f"rl.parts_below must be in (0, 1], got {self.parts_below}")
        if self.parts_below < 1.0 and self.explore_mode != "parts":
            raise ValueError(f"rl.parts_below={self.parts_below} gates the parts exploration; "
                             f"set rl.explore_mode=parts too (got {self.explore_mode!r})")
        self.segment_steps = tuple(self.segment_steps)
        if len(self.segment_steps) != 2 or not 1 <= self.segment_steps[0] <= self.segment_steps[1]:
            raise ValueError(f"rl.segment_steps must be [min, max] with 1 <= min <= max, got {list(self.segment_steps)}")


@dataclass
class RewardConfig:
    lam: float = 1.0               # A = lam * A_IF + (1 - lam) * A_VQ
    if_variant: str = "full"       # full (81-class) | mean (of translation and rotation accuracy)
    estimator: str = "opencv"
    quality: str = "default"       # default | default-drift
    z: float = 2.0                 # advantages clip at +-z before mapping to r in [0, 1]
    if_full_marks: float = 0.0     # IF advantage where every candidate followed fully (0: none; see
    #                                wctrain.advantages.anchor_full_marks)
    std_mode: str = "group"        # group | global (std over all groups of all ranks)
    credit: str = "latent"         # latent: IF reward and r per 4-frame latent | clip: one per clip

    def __post_init__(self) -> None:
        if self.credit not in ("latent", "clip"):
            raise ValueError(f"reward.credit must be 'latent' or 'clip', got {self.credit!r}")


@dataclass
class PolicyConfig:
    old_max_decay: float = 0.5     # EMA old policy: rollouts and v_old
    old_ramp: float | None = 0.02
    eval_decay: float = 0.9        # separate EMA for evaluation checkpoints


@dataclass
class EvalConfig:
    every: int = 450               # 0: never
    suite: str = "wc-mini-heldout"  # held out: training episodes never use its scene seeds
    limit: int = 0                 # only the first N cases (0: all)


@dataclass
class TrainerConfig:
    run_dir: str = "runs/wctrain"
    init: str | None = None        # tinywm checkpoint to start from (None: the shipped one)
    suite: str = "wc-mini"         # resolution, field of view and step sizes of training episodes
    rl: RLConfig = field(default_factory=RLConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    checkpoint_every: int = 10


def to_trainer_config(cfg: Any) -> TrainerConfig:
    """A TrainerConfig from a hydra DictConfig or a nested dict."""
    if isinstance(cfg, TrainerConfig):
        return cfg
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(cfg, resolve=True) if not isinstance(cfg, dict) else dict(cfg)
    parts = {"rl": RLConfig, "reward": RewardConfig, "policy": PolicyConfig, "eval": EvalConfig}
    return TrainerConfig(**{k: parts[k](**v) if k in parts else v for k, v in data.items()})


# ---------------------------------------------------------------- episodes

def _seed(*parts: int) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "little")


def sample_episode(cfg: TrainerConfig, suite, step: int, group: int, held_out: set[int],
                   label_accuracy: np.ndarray | None = None, clip: int = 0) -> Episode:
    """The training case of one group: a fresh script and scene, never one of the eval cases.

    With ``rl.focus_candidates`` > 1 (and ``label_accuracy``), the script is drawn from that
    many candidates, weighted towards those whose target clip ``clip`` commands the labels
    the policy follows worst (:mod:`wctrain.curriculum`); not with ``rl.episode_pool``, whose
    episodes stay fixed.
    """
    from wcbench.actions import parse_script

    draw = step % cfg.rl.episode_pool if cfg.rl.episode_pool else step
    rng = np.random.default_rng(_seed(cfg.rl.seed, draw, group))
    num_steps = 4 * cfg.rl.episode_clips - 1
    scripts = []
    focused = label_accuracy is not None and not cfg.rl.episode_pool
    for _ in range(cfg.rl.focus_candidates if focused else 1):
        track = "combined" if rng.random() < cfg.rl.combined_fraction else "basic"
        scripts.append(parse_script(generate_script(rng, track, num_steps, suite.step_degrees,
                                                    cfg.rl.segment_steps)))
    script = scripts[0]
    if len(scripts) > 1:
        weights = episode_weights(label_accuracy, [clip_labels(s, clip) for s in scripts], cfg.rl.focus_floor,
                                  cfg.rl.focus_score, cfg.rl.group_size)
        script = scripts[int(rng.choice(len(scripts), p=weights))]
    scene_seed = int(rng.integers(2**31))
    while scene_seed in held_out:
        scene_seed = int(rng.integers(2**31))
    world = synthetic_world(suite, script, scene_seed)
    return Episode(world.image, script, world.prompt)


# ---------------------------------------------------------------- rewards and loss

def rollout_exploration(rl: RLConfig, label_accuracy: np.ndarray) -> Exploration:
    """This step's exploration, from the curriculum's running IF per label: each label's offset
    factor (``rl.explore_focus``) and, under ``parts`` gated by ``rl.parts_below``, which combined
    labels may be read as a part (basic labels have no parts)."""
    label_scale = part_labels = None
    if rl.explore_focus:
        label_scale = torch.from_numpy(exploration_scales(label_accuracy, rl.explore_focus))
    if rl.explore_mode == "parts" and rl.parts_below < 1.0:
        actions = [Action.from_label(label) for label in range(NUM_LABELS)]
        combined = np.array([a.is_translation and a.is_rotation for a in actions])
        part_labels = torch.from_numpy(combined & (label_accuracy < rl.parts_below))
    return Exploration(rl.explore, rl.explore_mode, label_scale, part_labels)


def scored_rewards(cfg: RewardConfig, scorers: Scorers, fov_deg: float | None) -> tuple[list, dict[str, float]]:
    """The rewards a step scores and their weights in the advantage. IF is always scored (the
    curriculum reads it, even at ``lam = 0``); VQ only when it carries weight (``lam < 1``):
    at weight 0 its advantage term is exactly 0, and scoring it took 12-19% of a step's time."""
    rewards, weights = [FollowingReward(scorers, cfg.if_variant, fov_deg)], {"if": cfg.lam}
    if cfg.lam < 1.0:
        rewards.append(QualityReward(scorers))
        weights["vq"] = 1.0 - cfg.lam
    return rewards, weights


def score_group(rewards: list, views: list, prompts: list[str], per_latent: bool) -> dict[str, list]:
    """Each reward's values for a group's candidates: one float per candidate, or with
    ``per_latent`` one list per candidate (a float per latent) from a reward that has a
    ``per_latent`` form (the IF reward; VQ stays per clip)."""
    return {reward.name: (reward.per_latent if per_latent and hasattr(reward, "per_latent") else reward)(views, prompts)
            for reward in rewards}


def group_loss(model, old, ref, rollout: GroupRollout, r: torch.Tensor, selected: np.ndarray,
               sigmas: torch.Tensor, generator: torch.Generator, cfg: RLConfig) -> tuple[torch.Tensor, float]:
    """NFT (or RWR) loss of one group's selected candidates at a random subset of timesteps,
    with fresh noise; returns (loss, mean |v_theta - v_old|).

    ``r`` is ``(G,)`` (one per candidate) or ``(G, L)`` (per-latent credit: each latent of a
    candidate is then its own sample of the loss, with its own r and adaptive weight).
    """
    index = torch.as_tensor(selected)
    x0, prefix, actions = rollout.candidates[index], rollout.context[index], rollout.actions[index]
    steps = subsample_timesteps(len(sigmas) - 1, cfg.timestep_fraction, generator)
    n = len(index)
    # all chosen timesteps in one batch: (len(steps) * n) samples
    sigma = torch.cat([sigmas[int(s)].expand(n) for s in steps])
    x0_all, prefix_all = x0.repeat(len(steps), 1, 1, 1, 1), prefix.repeat(len(steps), 1, 1, 1, 1)
    actions_all = actions.repeat(len(steps), 1, 1)
    r_all = r[index].repeat(len(steps), *([1] * (r.dim() - 1)))
    noise = torch.randn(x0_all.shape, generator=generator)
    x_t = add_noise(x0_all, noise, sigma)
    v_theta = model.velocity(x_t, sigma, model.build_context(prefix_all, x0_all), actions_all)
    with torch.no_grad():
        v_old = old.velocity(x_t, sigma, old.build_context(prefix_all, x0_all), actions_all)
        v_ref = (ref.velocity(x_t, sigma, ref.build_context(prefix_all, x0_all), actions_all)
                 if cfg.kl_weight > 0 else None)
    if r_all.dim() == 2:
        latents = x0_all.shape[1]
        v_theta, v_old, x_t, x0_all = (x.flatten(0, 1)[:, None] for x in (v_theta, v_old, x_t, x0_all))
        v_ref = None if v_ref is None else v_ref.flatten(0, 1)[:, None]
        sigma, r_all = sigma.repeat_interleave(latents), r_all.flatten()
    if cfg.loss == "nft":
        loss = nft_loss(v_theta, v_old, x_t, x0_all, sigma, r_all, beta=cfg.beta)
    elif cfg.loss == "rwr":
        loss = rwr_loss(v_theta, x_t, x0_all, sigma, r_all)
    else:
        raise ValueError(f"rl.loss must be 'nft' or 'rwr', got {cfg.loss!r}")
    if v_ref is not None:
        loss = loss + cfg.kl_weight * kl_to_reference(v_theta, v_ref)
    return loss.mean(), float((v_theta.detach() - v_old).abs().mean())


def names_module(name: str, path: str) -> bool:
    """Whether parameter ``name`` lies under the module ``path`` at any depth: ``action_proj``
    names ``action_proj.0.weight``; ``cond_emb_proj`` names ``down_blocks.0.cond_emb_proj.weight``
    (the FiLM projection inside every block), but never ``cond_emb_projection.weight``."""
    parts, want = name.split("."), path.split(".")
    return any(parts[i:i + len(want)] == want for i in range(len(parts) - len(want) + 1))


def select_trainable(model: torch.nn.Module, paths: list[str] | None) -> list[str]:
    """Freeze every parameter under none of the module ``paths`` (None: train all); returns the
    trained parameters' names. A path that names nothing is an error (a typo would silently
    freeze the whole model)."""
    names = [name for name, _ in model.named_parameters()]
    for path in paths or []:
        if not any(names_module(name, path) for name in names):
            top = sorted({name.split(".")[0] for name in names})
            raise ValueError(f"rl.trainable: no parameter of {type(model).__name__} lies under a module "
                             f"{path!r}; top-level modules: {top} (a path may also name a module inside "
                             f"every block, e.g. cond_emb_proj)")
    for name, param in model.named_parameters():
        param.requires_grad_(paths is None or any(names_module(name, path) for path in paths))
    return [name for name, param in model.named_parameters() if param.requires_grad]


def optimizer_groups(model: torch.nn.Module, lr: float, shared_lr: float) -> list[dict]:
    """AdamW groups of the trained weights: the action-embedding table at ``lr``, the rest at
    ``shared_lr``. A row of the table moves only its own label, so it takes large steps; a
    shared weight moves every label at once (and every label's looks), so it takes small ones."""
    table, shared = [], []
    for name, param in model.named_parameters():
        if param.requires_grad:
            (table if names_module(name, "action_embedding") else shared).append(param)
    return [{"params": params, "lr": rate} for params, rate in ((table, lr), (shared, shared_lr)) if params]


# ---------------------------------------------------------------- checkpoints

def save_checkpoint(run_dir: Path, step: int, model, optimizer, old: EMA, eval_ema: EMA,
                    label_accuracy: np.ndarray) -> None:
    """Atomic: a kill mid-write leaves the previous checkpoint intact."""
    state = {"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "old": old.state_dict(), "eval_ema": eval_ema.state_dict(), "label_accuracy": label_accuracy}
    with atomic_path(run_dir / "checkpoint.pt") as tmp:
        torch.save(state, tmp)


def load_checkpoint(run_dir: Path, model, optimizer, old: EMA, eval_ema: EMA) -> tuple[int, np.ndarray]:
    """(step, curriculum state) of the run folder's checkpoint; (0, initial) when there is none."""
    path = run_dir / "checkpoint.pt"
    if not path.exists():
        return 0, initial_label_accuracy()
    state = torch.load(path, map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"])
    try:
        optimizer.load_state_dict(state["optimizer"])
    except ValueError as error:  # torch names neither the file nor the setting that differs
        raise ValueError(f"{path}: cannot resume: its optimiser state does not match this run's trained weights "
                         f"({error}). The run was started with another rl.trainable (the default trains "
                         f"{RLConfig().trainable}); resume with the rl.trainable it was started "
                         f"with, or pass a new run_dir.") from error
    old.load_state_dict(state["old"])
    eval_ema.load_state_dict(state["eval_ema"])
    return int(state["step"]), np.asarray(state["label_accuracy"], dtype=float)


def _append_metrics(run_dir: Path, row: dict) -> None:
    with (run_dir / "metrics.jsonl").open("a") as handle:
        handle.write(json.dumps(row) + "\n")


def evaluate(model, cfg: TrainerConfig, out_dir: Path) -> dict:
    """Run the held-out suite with wcbench (default scorers); returns its summary block."""
    from wcbench.pose import build_estimator
    from wcbench.report import summarize
    from wcbench.runner import RunConfig, run_suite
    from wcbench.scoring.quality import build_quality_scorer
    from wctrain.models.wcbench_adapter import TinyWMWorldModel

    suite = load_suite(cfg.eval.suite)
    if cfg.eval.limit:
        from dataclasses import replace

        suite = replace(suite, cases=suite.cases[:cfg.eval.limit])
    scorers = Scorers(build_estimator("opencv"), build_quality_scorer("default"))
    records = run_suite(suite, TinyWMWorldModel(model=build_frozen_copy(model)), RunConfig(model="tinywm"),
                        scorers, out_dir)
    return summarize(records)


# ---------------------------------------------------------------- the loop

def train(cfg: Any) -> Path:
    """Run (or resume) RL post-training; returns the run folder."""
    from accelerate import Accelerator
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from wcbench.pose import build_estimator
    from wcbench.scoring.quality import build_quality_scorer
    from wctrain.models.wcbench_adapter import load_tinywm

    # 1. setup: processes, model and its two EMAs, optimiser, rewards, held-out cases
    cfg = to_trainer_config(cfg)
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    rank, world = accelerator.process_index, accelerator.num_processes
    run_dir = Path(cfg.run_dir)
    console = Console(stderr=True, quiet=not accelerator.is_main_process)
    model = load_tinywm(cfg.init).train()
    select_trainable(model, cfg.rl.trainable)
    old = EMA(model, DecaySchedule(cfg.policy.old_max_decay, ramp=cfg.policy.old_ramp))
    eval_ema = EMA(model, DecaySchedule(cfg.policy.eval_decay, ramp=None))
    ref = build_frozen_copy(model) if cfg.rl.kl_weight > 0 else None
    optimizer = torch.optim.AdamW(optimizer_groups(model, cfg.rl.lr, cfg.rl.shared_lr), weight_decay=0.0)
    start, label_accuracy = load_checkpoint(run_dir, model, optimizer, old, eval_ema)
    if accelerator.is_main_process:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json(run_dir / "config.json", asdict(cfg))
    suite = load_suite(cfg.suite)
    held_out = {c.scene_seed for c in load_suite(cfg.eval.suite).cases}
    scorers = Scorers(build_estimator(cfg.reward.estimator), build_quality_scorer(cfg.reward.quality))
    rewards, weights = scored_rewards(cfg.reward, scorers, suite.fov_deg)
    sigmas = model.default_sigmas()
    rollout_fn = {"clip": rollout_clip_level, "sample": rollout_sample_level}[cfg.rl.rollout]
    per_latent = cfg.reward.credit == "latent"
    updated, zero_deviation_steps, still_steps = False, 0, 0  # for the two warnings below

    progress = Progress(TextColumn("[bold]wctrain"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=console)
    with progress:
        task = progress.add_task("train", total=cfg.rl.steps, completed=start, status="")
        for step in range(start, cfg.rl.steps):
            started = time.perf_counter()
            # 2. rollouts with the old policy: this rank's groups
            groups = [rank * cfg.rl.groups_per_rank + g for g in range(cfg.rl.groups_per_rank)]
            rollouts, scores, episodes = [], [], []
            clip = target_clip(step, cfg.rl.episode_clips, cfg.rl.clip_schedule, ramp_steps=cfg.rl.ramp_steps)
            exploration = rollout_exploration(cfg.rl, label_accuracy)
            for group in groups:
                generator = torch.Generator().manual_seed(_seed(cfg.rl.seed, step, group, 1))
                episode = sample_episode(cfg, suite, step, group, held_out, label_accuracy, clip)
                episodes.append(episode)
                rollout = rollout_fn(old.module, episode, clip, cfg.rl.group_size, sigmas, generator,
                                     eta=cfg.rl.sampler_eta, exploration=exploration)
                rollouts.append(rollout)
                # 3. rewards: the benchmark's scorers
                prompts = [episode.prompt] * cfg.rl.group_size
                scores.append(score_group(rewards, rollout.views, prompts, per_latent))
            # 4. advantages: normalised per group, or per latent of a group (std over every rank's
            #    groups in global mode)
            global_std = None
            if cfg.reward.std_mode == "global":
                gathered = {name: accelerator.gather(torch.tensor([s[name] for s in scores], dtype=torch.float64))
                            for name in weights}
                global_std = {name: float(reward_std(values.flatten(1).numpy())) for name, values in gathered.items()}
            adv_cfg = AdvantageConfig(weights=weights, z=cfg.reward.z, std_mode=cfg.reward.std_mode,
                                      top_k=cfg.rl.top_k, full_marks={"if": cfg.reward.if_full_marks})
            advantage_fn = compute_latent_advantages if per_latent else compute_group_advantages
            advantages = [advantage_fn(s, adv_cfg, global_std) for s in scores]
            # 5. loss on the target clip, gradient mean over all groups of all ranks
            optimizer.zero_grad(set_to_none=True)
            deviation, loss_sum = 0.0, 0.0
            for group, rollout, adv in zip(groups, rollouts, advantages):
                generator = torch.Generator().manual_seed(_seed(cfg.rl.seed, step, group, 2))
                r = torch.as_tensor(adv.r, dtype=torch.float32)
                loss, dev = group_loss(model, old.module, ref, rollout, r, adv.selected, sigmas, generator, cfg.rl)
                (loss / (cfg.rl.groups_per_rank * world)).backward()
                deviation += dev / len(groups)
                loss_sum += float(loss.detach()) / len(groups)
            for param in model.parameters():
                if param.grad is not None and world > 1:
                    param.grad = accelerator.reduce(param.grad, reduction="sum")
            grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.rl.grad_clip))
            optimizer.step()
            # 6. EMA updates: the old policy for the next rollouts, the evaluation copy
            old.update(model)
            eval_ema.update(model)
            # 7. log (rank 0 writes), warn if the policy never moves away from the old one
            gathered = accelerator.gather(torch.tensor([[np.mean(s["if"][i]), s["vq"][i] if "vq" in weights else np.nan,
                                                         float(a.r[i].mean())]
                                                        for s, a in zip(scores, advantages)
                                                        for i in range(cfg.rl.group_size)],
                                                       dtype=torch.float64)).numpy()
            # the curriculum's running IF per label, from every rank's groups (same on all ranks):
            # per latent (its own label) with per-latent credit, else per clip (each of its labels)
            if per_latent:
                unit_labels = [{a.label} for e in episodes for a in clip_step_actions(e.script, clip)]
                unit_if = [float(np.mean(column)) for s in scores for column in np.asarray(s["if"]).T]
            else:
                unit_labels = [clip_labels(e.script, clip) for e in episodes]
                unit_if = [float(np.mean(s["if"])) for s in scores]
            visited_mask = accelerator.gather(torch.as_tensor(label_mask(unit_labels))).numpy()
            unit_if = accelerator.gather(torch.tensor(unit_if, dtype=torch.float64)).numpy()
            label_accuracy = update_label_accuracy(label_accuracy, visited_mask, unit_if, cfg.rl.focus_rate)
            # a zero deviation is suspicious only right after a step whose gradient moved the weights
            # (at r = 1/2 everywhere the gradient is exactly 0 and nothing moves, rightly); sparse
            # training (only the embedding rows of the labels used) leaves v_theta = v_old exactly on
            # labels not yet updated, so only a long run of zeros is suspicious
            if deviation != 0.0:
                zero_deviation_steps = 0
            elif updated:
                zero_deviation_steps += 1
            updated = grad_norm > 0.0
            still_steps = 0 if updated else still_steps + 1
            if zero_deviation_steps == 10:
                warnings.warn("the current policy's prediction equals the old policy's after updates: "
                              "v_old may be computed from the current weights", stacklevel=1)
            if still_steps == 10:
                warnings.warn("no update for 10 steps: no group's candidates differed in any trained reward, so "
                              "r = 1/2 everywhere and the gradient is 0 (a model that follows every action, or "
                              "none); let VQ break ties (reward.lam=0.9) or explore more (rl.explore)", stacklevel=1)
            reward_vq = float(gathered[:, 1].mean()) if "vq" in weights else None  # not scored at lam = 1
            row = {"step": step + 1, "reward_if": float(gathered[:, 0].mean()), "reward_vq": reward_vq,
                   "r_mean": float(gathered[:, 2].mean()), "r_std": float(gathered[:, 2].std()),
                   # units (latents, or clips) every candidate followed fully: what if_full_marks anchors
                   "if_full_marks_share": float(np.mean(unit_if == 1.0)),
                   "loss": loss_sum, "deviation": deviation, "grad_norm": grad_norm, "clip": rollouts[0].clip,
                   "weakest_labels": [int(i) for i in np.argsort(label_accuracy, kind="stable")[:4]],
                   "clip_generations": sum(r.clip_generations for r in rollouts) * world,
                   "seconds": time.perf_counter() - started}
            if exploration.part_labels is not None:  # which labels this step's parts reading reached
                row["part_labels"] = exploration.part_labels.nonzero().flatten().tolist()
            # 8. evaluate and checkpoint
            if accelerator.is_main_process:
                if cfg.eval.every and (step + 1) % cfg.eval.every == 0:
                    summary = evaluate(eval_ema.module, cfg, run_dir / "eval" / f"step-{step + 1:05d}")
                    row["eval"] = {k: {m: v.get(m) for m in ("if_acc", "if_trans_acc", "if_rot_acc", "vq")}
                                   for k, v in summary.items()}
                _append_metrics(run_dir, row)
                if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.rl.steps:
                    save_checkpoint(run_dir, step + 1, model, optimizer, old, eval_ema, label_accuracy)
            accelerator.wait_for_everyone()
            vq_status = "" if reward_vq is None else f" VQ {reward_vq:.3f}"
            progress.update(task, advance=1, status=f"IF {row['reward_if']:.2f}{vq_status} loss {row['loss']:.4f}")
    if accelerator.is_main_process:
        eval_ema.module.save_pretrained(run_dir / "final")
    return run_dir
