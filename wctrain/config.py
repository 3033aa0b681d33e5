"""``wctrain train`` and ``wctrain pretrain`` settings: the one place their defaults live.

Each dataclass is a group of settings (``rl.*``, ``reward.*``, ...), each field's help is in its
``metadata``; ``wctrain train --help`` and ``wctrain pretrain --help`` print them.
``wctrain/conf/train.yaml``, ``pretrain.yaml`` and the presets in ``conf/recipe/`` only override;
:func:`load_config` composes them with ``key=value`` from the command line through wcbench's
settings loader, which refuses an unknown key (with the closest known one) or a wrong type
before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from wcbench.core.settings import DEVICES, load_settings
from wctrain.rl.schedule import accumulation_plan

CONF_DIR = Path(__file__).parent / "conf"
STD_SCOPES = ("group", "global")  # reward.std_scope (wctrain.rl.advantages.AdvantageConfig.std_scope)

ROLLOUTS = ("clip", "sample")  # sample: G whole videos (the paper's sample-level ablation)
LOSSES = ("nft", "rwr")        # rwr: reward-weighted regression (the paper's ablation)
MIXED_PRECISION = ("no", "bf16", "fp16")
# wctrain places each process itself (auto: a GPU of its own when there are GPUs), so it takes
# no device=cuda; every other device wcbench knows
TRAIN_DEVICES = tuple(device for device in DEVICES if device != "cuda")


@dataclass
class RLConfig:
    """The RL loop: rollouts, the loss, the optimiser, training episodes and the label curriculum."""

    steps: int = field(default=450, metadata={"help": "training steps"})
    groups_per_rank: int = field(default=1, metadata={
        "help": "groups each process rolls out per step (gradients accumulate over them)"})
    group_size: int = field(default=8, metadata={"help": "G: candidates of the target clip per group"})
    rollout: str = field(default="clip", metadata={
        "help": "clip: a shared prefix, then G candidates of the target clip | sample: G whole videos (the paper's "
                "ablation)"})
    sampler_eta: float = field(default=1.0, metadata={
        "help": "the rollouts' ancestral-sampler noise: more spread within a group (0: Euler)"})
    explore: float = field(default=1.0, metadata={
        "help": "per-candidate offset on the action embedding, in stds of the embedding table (0: none); only for "
                "models that expose action_embedding"})
    explore_focus: float = field(default=0.5, metadata={
        "help": "scales each label's offset by (1 + focus (1 - 2 IF)) with the label's running IF (0: off)"})
    trainable: list[str] | None = field(default=None, metadata={
        "help": "module paths to train, at any depth; null: the model's trainable_modules (tinywm: "
                "action_embedding, action_proj), else all; [all]: every weight"})
    loss: str = field(default="nft", metadata={"help": "nft | rwr (reward-weighted regression, the paper's ablation)"})
    beta: float = field(default=1.0, metadata={"help": "NFT's beta"})
    lr: float = field(default=1.0e-2, metadata={
        "help": "learning rate of the action-embedding table (one row per label: large steps stay local)"})
    shared_lr: float = field(default=1.0e-3, metadata={
        "help": "learning rate of every other trained weight (shared by all labels); ~1e-4 when training all "
                "weights"})
    grad_clip: float = field(default=1.0, metadata={"help": "gradient-norm clip"})
    timestep_fraction: float = field(default=0.5, metadata={
        "help": "share of the sampler's timesteps each candidate trains on"})
    top_k: int | None = field(default=3, metadata={
        "help": "best-of-N: train on the top k and bottom k of G (null: all)"})
    grad_accum_samples: int | None = field(default=None, metadata={
        "help": "an optimiser step (and EMA update, at the step's one decay) every this many selected candidates "
                "of a group; null: one step over all of them"})
    clip_schedule: str = field(default="cycle", metadata={
        "help": "the target clip of each step: cycle (every clip in turn) | progressive (early clips first)"})
    ramp_steps: int = field(default=40, metadata={"help": "progressive: steps until every clip is reachable"})
    episode_clips: int = field(default=4, metadata={"help": "clips per training video (4: 61 frames)"})
    combined_fraction: float = field(default=0.8, metadata={
        "help": "share of training episodes from the combined track"})
    segment_steps: list[int] = field(default_factory=lambda: [2, 6], metadata={
        "help": "[min, max] latent steps per script segment"})
    episode_pool: int = field(default=0, metadata={
        "help": "cycle through this many fixed episodes (0: a new one every step)"})
    focus_candidates: int = field(default=6, metadata={
        "help": "label curriculum: pick each episode from this many scripts (1: off)"})
    focus_rate: float = field(default=0.1, metadata={
        "help": "how fast the curriculum's running IF per label follows the rollouts"})
    focus_floor: float = field(default=0.05, metadata={
        "help": "added to every candidate script's score, so scripts of followed labels are still drawn"})
    seed: int = field(default=0, metadata={"help": "seed of the training episodes and the rollouts"})

    def __post_init__(self) -> None:
        # checked here, before any rollout, rather than at the first episode or update
        _choice("rl.rollout", self.rollout, ROLLOUTS)
        _choice("rl.loss", self.loss, LOSSES)
        if self.focus_candidates < 1:
            raise ValueError(f"rl.focus_candidates must be at least 1 (1: no curriculum), got {self.focus_candidates}")
        if not 0.0 < self.focus_rate <= 1.0:
            raise ValueError(f"rl.focus_rate must be in (0, 1], got {self.focus_rate}")
        if self.focus_floor <= 0.0:
            raise ValueError(f"rl.focus_floor must be above 0 (0 would never draw a script whose labels are "
                             f"all followed), got {self.focus_floor}")
        if not 0.0 <= self.explore_focus < 1.0:
            raise ValueError(f"rl.explore_focus must be in [0, 1), got {self.explore_focus}")
        if self.grad_accum_samples is not None:
            accumulation_plan(self.num_selected, self.grad_accum_samples)  # refuses a k that does not divide
        self.segment_steps = list(self.segment_steps)
        if len(self.segment_steps) != 2 or not 1 <= self.segment_steps[0] <= self.segment_steps[1]:
            raise ValueError(f"rl.segment_steps must be [min, max] with 1 <= min <= max, got {self.segment_steps}")

    @property
    def num_selected(self) -> int:
        """Candidates of a group the loss trains on: the top and bottom ``top_k`` of G, or all G."""
        return self.group_size if self.top_k is None else min(self.group_size, 2 * self.top_k)

    @property
    def uses_curriculum(self) -> bool:
        """Whether the running IF per label steers anything (episodes or exploration)."""
        return self.focus_candidates > 1 or (self.explore > 0 and self.explore_focus > 0)


@dataclass
class RewardConfig:
    """Rewards: wcbench's scorers (or your functions), their weights and how advantages are normalised."""

    funcs: list[str] = field(default_factory=lambda: ["following"], metadata={
        "help": "built-in rewards (following, fine_action, quality) or pkg.module:function"})
    weights: list[float] = field(default_factory=lambda: [1.0], metadata={
        "help": "one per func: A = sum w_k A_k; a reward at weight 0 is scored and logged but not trained on"})
    estimator: str = field(default="opencv", metadata={"help": "the following reward's camera-motion estimator"})
    quality: str = field(default="default", metadata={
        "help": "the quality reward's scorer: default | default-drift | hpsv3-worldcompass (the release's HPSv3 "
                "drift reward: a GPU and local weights)"})
    jobs: int = field(default=0, metadata={
        "help": "processes that score a group's clips with the built-in rewards: 0 = this machine's cores shared out "
                "among its training processes (1 each on a CPU machine running one process per core; learned "
                "scorers: 1); 1 = in the training process"})
    z: float = field(default=2.0, metadata={"help": "advantages clip at +-z before mapping to r in [0, 1]"})
    std_scope: str = field(default="group", metadata={
        "help": "group: normalise each reward by its group's std | global: one std over every group of every rank "
                "(per-clip rewards only)"})
    unbiased_std: bool = field(default=False, metadata={
        "help": "the unbiased std (ddof 1, torch's default) instead of ddof 0"})
    normalize_weights: bool = field(default=False, metadata={"help": "divide the weights by their sum"})
    eps: float = field(default=1.0e-6, metadata={"help": "added to the std"})

    def __post_init__(self) -> None:
        if not self.funcs:
            raise ValueError("reward.funcs is empty: name at least one reward, e.g. reward.funcs=[following]")
        if len(self.weights) != len(self.funcs):
            raise ValueError(f"reward.weights needs one weight per reward.funcs entry: {len(self.funcs)} funcs "
                             f"{list(self.funcs)}, {len(self.weights)} weights {list(self.weights)}")
        if len(set(self.funcs)) != len(self.funcs):
            raise ValueError(f"reward.funcs names a reward twice: {list(self.funcs)}")
        if self.jobs < 0:
            raise ValueError(f"reward.jobs must be 0 (automatic) or a number of processes, got {self.jobs}")
        if any(w < 0 for w in self.weights):
            raise ValueError(f"reward.weights must be non-negative, got {list(self.weights)}")
        _choice("reward.std_scope", self.std_scope, STD_SCOPES)
        if self.normalize_weights and sum(self.weights) <= 0:
            raise ValueError(f"reward.normalize_weights=true needs weights with a positive sum, "
                             f"got {list(self.weights)}")

    @property
    def weight_of(self) -> dict[str, float]:
        return dict(zip(self.funcs, (float(w) for w in self.weights)))


@dataclass
class PolicyConfig:
    """The EMA old policy (rollouts and v_old) and the EMA model that is evaluated and exported.

    The old policy's decay at update n (0-based) is min(old_max_decay, old_min_decay + old_ramp
    (n - old_flat_steps)), and old_min_decay before update old_flat_steps.
    """

    old_max_decay: float = field(default=0.5, metadata={"help": "the old policy's largest EMA decay"})
    old_ramp: float | None = field(default=0.02, metadata={
        "help": "the decay's rise per update (null: old_max_decay from the start)"})
    old_min_decay: float = field(default=0.0, metadata={"help": "the decay at the start of the ramp"})
    old_flat_steps: int = field(default=0, metadata={
        "help": "updates before the ramp starts (-1: count updates from 1, as the release does)"})
    eval_decay: float = field(default=0.9, metadata={"help": "decay of the EMA model that is evaluated and exported"})


@dataclass
class EpisodeDataConfig:
    """Where training episodes' scripts come from besides the generated ones."""

    trajectories: str | None = field(default=None, metadata={
        "help": "a folder of WorldPlay pose JSON (one trajectory per file, or a list per file); null: generated "
                "scripts only"})
    trajectory_share: float | None = field(default=None, metadata={
        "help": "share of episodes drawn from the trajectories (null: 1 with trajectories, 0 without)"})
    translation_threshold: float = field(default=1.0e-4, metadata={
        "help": "a trajectory's latent step counts as a move above this translation"})
    rotation_threshold_deg: float = field(default=0.05, metadata={
        "help": "and as a turn above this rotation (degrees)"})

    def __post_init__(self) -> None:
        # the null default stays null here (hydra builds its schema from a default instance) and
        # is resolved by ``share``
        if self.trajectory_share is not None and not 0.0 <= self.trajectory_share <= 1.0:
            raise ValueError(f"data.trajectory_share must be in [0, 1], got {self.trajectory_share}")
        if self.share > 0 and self.trajectories is None:
            raise ValueError(f"data.trajectory_share={self.trajectory_share} draws episodes from trajectories, but "
                             f"data.trajectories is null: give the folder, data.trajectories=DIR")
        if self.translation_threshold < 0 or self.rotation_threshold_deg < 0:
            raise ValueError(f"data.translation_threshold and data.rotation_threshold_deg must be non-negative, got "
                             f"{self.translation_threshold} and {self.rotation_threshold_deg}")

    @property
    def share(self) -> float:
        """The share of episodes drawn from the trajectories, ``trajectory_share`` resolved."""
        if self.trajectory_share is None:
            return 0.0 if self.trajectories is None else 1.0
        return self.trajectory_share


@dataclass
class EvalConfig:
    """The held-out wcbench evaluation during training."""

    every: int = field(default=450, metadata={"help": "evaluate every N steps (0: never)"})
    suite: str = field(default="wc-mini-heldout", metadata={
        "help": "the suite; held out: training episodes never use its scene seeds"})
    limit: int = field(default=0, metadata={"help": "only the first N cases (0: all)"})


@dataclass
class TrainerConfig:
    """Settings of ``wctrain train``."""

    run_dir: str = field(default="runs/wctrain", metadata={
        "help": "checkpoints, metrics.jsonl and final/ (the exported model); rerunning with the same run_dir "
                "resumes"})
    model: str = field(default="tinywm", metadata={
        "help": "a wctrain.models entry point (tinywm, tinywan) or pkg.module:factory"})
    model_options: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "the factory's keyword arguments, e.g. model_options.checkpoint=PATH"})
    suite: str = field(default="wc-mini", metadata={
        "help": "resolution, field of view and step sizes of training episodes"})
    device: str = field(default="auto", metadata={
        "help": "auto: each process on a GPU of its own when there are GPUs | cpu"})
    mixed_precision: str | None = field(default=None, metadata={
        "help": "no | bf16 | fp16 (null: what `accelerate launch` was told, else no)"})
    gradient_checkpointing: bool = field(default=False, metadata={
        "help": "for models that support it (enable_gradient_checkpointing())"})
    log_with: list[str] = field(default_factory=list, metadata={
        "help": "accelerate trackers besides metrics.jsonl, e.g. [tensorboard] or [wandb] (the package must be "
                "installed)"})
    checkpoint_every: int = field(default=10, metadata={"help": "save a checkpoint every N steps"})
    rl: RLConfig = field(default_factory=RLConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    data: EpisodeDataConfig = field(default_factory=EpisodeDataConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def __post_init__(self) -> None:
        _device("device", self.device)
        if self.mixed_precision is not None:
            _choice("mixed_precision", self.mixed_precision, MIXED_PRECISION)
        if self.checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be at least 1, got {self.checkpoint_every}")


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


def _device(name: str, value: str) -> None:
    if value in DEVICES and value not in TRAIN_DEVICES:
        raise ValueError(f"{name}={value} is not a wctrain device: {name}=auto puts each process on a GPU of its own "
                         f"when there are GPUs ({name} must be one of {list(TRAIN_DEVICES)})")
    _choice(name, value, TRAIN_DEVICES)


# ---------------------------------------------------------------- wctrain pretrain

@dataclass
class DataConfig:
    """Rendered training trajectories."""

    suite: str = field(default="wc-mini", metadata={"help": "step sizes and field of view come from this suite"})
    num_trajectories: int = field(default=320, metadata={"help": "training trajectories"})
    val_trajectories: int = field(default=16, metadata={"help": "validation trajectories"})
    num_steps: int = field(default=15, metadata={"help": "latent steps per trajectory (4 * 15 + 1 = 61 frames)"})
    basic_fraction: float = field(default=0.95, metadata={
        "help": "share of basic-track scripts; the rest are combined-track (few, so RL has something to fix)"})
    still_fraction: float = field(default=0.05, metadata={
        "help": "share of segments replaced by 'none' (standing still)"})
    segment_steps: list[int] = field(default_factory=lambda: [2, 6], metadata={
        "help": "[min, max] latent steps per script segment"})
    render_scale: float = field(default=1.5, metadata={
        "help": "render at this multiple of the model size, then area-downsample"})
    seed: int = field(default=0, metadata={"help": "seed of the rendered trajectories"})


@dataclass
class TrainConfig:
    """Optimisation, logging and checkpointing of supervised flow matching."""

    steps: int = field(default=2400, metadata={"help": "training steps"})
    batch_size: int = field(default=8, metadata={"help": "windows per step"})
    clip_latents: int = field(default=4, metadata={"help": "latents per window (teacher-forced in parallel)"})
    lr: float = field(default=1e-3, metadata={"help": "peak learning rate"})
    warmup_steps: int = field(default=100, metadata={"help": "steps of linear warm-up"})
    min_lr_ratio: float = field(default=0.1, metadata={"help": "the learning rate decays to this share of lr"})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW's weight decay"})
    grad_clip: float = field(default=1.0, metadata={"help": "gradient-norm clip"})
    ema_decay: float = field(default=0.995, metadata={
        "help": "decay of the EMA model that is exported (0 during warm-up)"})
    context_noise: float = field(default=0.05, metadata={
        "help": "max std of noise added to context latents (robust autoregression)"})
    logit_normal_mean: float = field(default=0.5, metadata={
        "help": "flow times sigma = sigmoid(N(mean, std)): a mean above 0 favours high noise, where the few-step "
                "sampler works and camera motion is decided"})
    logit_normal_std: float = field(default=1.0, metadata={"help": "the std of that normal"})
    log_every: int = field(default=20, metadata={"help": "log every N steps"})
    val_every: int = field(default=250, metadata={"help": "validate every N steps"})
    checkpoint_every: int = field(default=250, metadata={"help": "save a checkpoint every N steps"})
    time_limit_min: float | None = field(default=None, metadata={
        "help": "stop (and export) early after this many minutes (null: no limit)"})
    seed: int = field(default=0, metadata={"help": "seed of the weights' initialisation and the batches"})
    device: str = field(default="auto", metadata={
        "help": "auto: the GPU when there is one | cpu (bitwise reproducible: GPU kernels need not be)"})

    def __post_init__(self) -> None:
        _device("train.device", self.device)


@dataclass
class PretrainConfig:
    """Settings of ``wctrain pretrain``."""

    run_dir: str = field(default="runs/tinywm-pretrain", metadata={
        "help": "checkpoints and logs; rerunning with the same run_dir resumes"})
    export_dir: str | None = field(default=None, metadata={
        "help": "where the EMA model is saved at the end (null: RUN_DIR/final)"})
    model: str = field(default="tinywm", metadata={"help": "a wctrain.models entry point or pkg.module:factory"})
    model_options: dict[str, Any] = field(default_factory=lambda: {"checkpoint": None}, metadata={
        "help": "the factory's arguments; checkpoint=null: a new model (model_options.KEY=VALUE adds constructor "
                "arguments, e.g. model_options.height=32)"})
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)


# ---------------------------------------------------------------- composing

SCHEMAS = {"train": TrainerConfig, "pretrain": PretrainConfig}
GROUPS = {"train": ("recipe",), "pretrain": ()}  # hydra config groups of each command (conf/<group>/)


def load_config(name: str, overrides: list[str]) -> Any:
    """The checked settings of ``wctrain <name>``: ``conf/<name>.yaml`` over its dataclass, then
    the ``key=value`` overrides (a SettingsError, a ValueError, names a bad key or value)."""
    return load_settings(SCHEMAS[name], overrides, CONF_DIR, name, GROUPS[name],
                         see_also=f"every setting: wctrain {name} --help")


def _to_dataclass(cls: type, cfg: Any, parts: dict[str, type]) -> Any:
    if isinstance(cfg, cls):
        return cfg
    data = OmegaConf.to_container(cfg, resolve=True) if not isinstance(cfg, dict) else dict(cfg)
    return cls(**{k: parts[k](**v) if k in parts else v for k, v in data.items()})


def to_trainer_config(cfg: Any) -> TrainerConfig:
    """A TrainerConfig from a :func:`load_config` result, a nested dict or a DictConfig."""
    return _to_dataclass(TrainerConfig, cfg, {"rl": RLConfig, "reward": RewardConfig, "policy": PolicyConfig,
                                              "data": EpisodeDataConfig, "eval": EvalConfig})


def to_pretrain_config(cfg: Any) -> PretrainConfig:
    """A PretrainConfig from a :func:`load_config` result, a nested dict or a DictConfig."""
    return _to_dataclass(PretrainConfig, cfg, {"data": DataConfig, "train": TrainConfig})
