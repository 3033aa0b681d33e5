"""``wctrain train`` and ``wctrain pretrain`` settings: the one place their defaults live.

The dataclasses below are registered with hydra as the structured schemas of
``wctrain/conf/train.yaml`` and ``pretrain.yaml``, which only override; any ``key=value`` on
the command line is checked against these types (a typo or a wrong type is refused before
anything runs). The comments are the reference documentation of each setting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from wctrain.rl.schedule import accumulation_plan

CONF_DIR = Path(__file__).parent / "conf"
STD_SCOPES = ("group", "global")  # reward.std_scope (wctrain.rl.advantages.AdvantageConfig.std_scope)

ROLLOUTS = ("clip", "sample")  # sample: G whole videos (the paper's sample-level ablation)
LOSSES = ("nft", "rwr")        # rwr: reward-weighted regression (the paper's ablation)
MIXED_PRECISION = ("no", "bf16", "fp16")
DEVICES = ("auto", "cpu")  # auto: a GPU per process when there are GPUs


@dataclass
class RLConfig:
    steps: int = 450               # with 2 processes: 22-24 min on a 2-core CPU (estimator v8 reward)
    groups_per_rank: int = 1       # groups each process rolls out per step (gradients accumulate over them)
    group_size: int = 8            # G candidates of the target clip per group
    rollout: str = "clip"          # clip: shared prefix, n + G clip generations | sample: G * (n + 1) (ablation)
    sampler_eta: float = 1.0       # rollouts' ancestral-sampler noise: more spread within a group (0: Euler)
    explore: float = 1.0           # per-candidate offset on the action embedding (x the table's std; 0: none);
    #                                only for models that expose ``action_embedding`` (docs/wctrain.md)
    explore_focus: float = 0.5     # each label's offset x (1 + focus (1 - 2 IF)) by the running IF (0: off)
    trainable: list[str] | None = None  # module paths to train, at any depth; null: the model's
    #                                ``trainable_modules`` (tinywm: action_embedding, action_proj), else all;
    #                                [all]: every weight
    loss: str = "nft"              # nft | rwr (the ablation)
    beta: float = 1.0              # NFT's beta
    lr: float = 1.0e-2             # for the action-embedding table (one row per label: large steps are local)
    shared_lr: float = 1.0e-3      # for every other trained weight (shared by all labels); ~1e-4 for all weights
    grad_clip: float = 1.0
    timestep_fraction: float = 0.5  # share of the sampler's timesteps each candidate trains on
    top_k: int | None = 3          # best-of-N: train on the top k and bottom k of G (null: all)
    grad_accum_samples: int | None = None  # an optimiser step (and EMA updates, at the step's one decay)
    #                                every this many selected candidates of a group (the release: 2, so 3 per
    #                                step); null: one step over all of them
    clip_schedule: str = "cycle"   # cycle | progressive
    ramp_steps: int = 40           # progressive: steps until every clip is reachable
    episode_clips: int = 4         # training videos are this many clips long (4: 61 frames)
    combined_fraction: float = 0.8  # share of training episodes from the combined track
    segment_steps: list[int] = field(default_factory=lambda: [2, 6])  # [min, max] latent steps per segment
    episode_pool: int = 0          # >0: cycle through this many fixed episodes (0: a new one every step)
    focus_candidates: int = 6      # label curriculum: pick each episode from this many scripts (1: off)
    focus_rate: float = 0.1        # how fast the curriculum's running IF per label follows the rollouts
    focus_floor: float = 0.05      # added to every candidate script's score: followed labels stay drawn
    seed: int = 0

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
    funcs: list[str] = field(default_factory=lambda: ["following"])  # built-in names (following, quality)
    #                                or pkg.module:function (docs/wctrain.md, "Rewards")
    weights: list[float] = field(default_factory=lambda: [1.0])  # one per func: A = sum w_k A_k. IF only
    #                                gained more than IF 0.9 + VQ 0.1 over four seeds, VQ inside the baseline's
    #                                interval; a reward at weight 0 is scored and logged but not trained on
    estimator: str = "opencv"      # the following reward's camera-motion estimator
    quality: str = "default"       # the quality reward's scorer: default | default-drift | hpsv3-worldcompass
    #                                (the release's HPSv3 drift reward: a GPU and local weights, docs/quality.md)
    z: float = 2.0                 # advantages clip at +-z before mapping to r in [0, 1]
    std_scope: str = "group"       # normalise each reward by its group's std | global: one std over every
    #                                group of every rank (the release's --std_type global; per-clip rewards only)
    unbiased_std: bool = False     # the unbiased std (ddof 1, torch's default, the release's) instead of ddof 0
    normalize_weights: bool = False  # divide the weights by their sum (the release's w_k / sum w)
    eps: float = 1.0e-6            # added to the std (the release: 1e-8)

    def __post_init__(self) -> None:
        if not self.funcs:
            raise ValueError("reward.funcs is empty: name at least one reward, e.g. reward.funcs=[following]")
        if len(self.weights) != len(self.funcs):
            raise ValueError(f"reward.weights needs one weight per reward.funcs entry: {len(self.funcs)} funcs "
                             f"{list(self.funcs)}, {len(self.weights)} weights {list(self.weights)}")
        if len(set(self.funcs)) != len(self.funcs):
            raise ValueError(f"reward.funcs names a reward twice: {list(self.funcs)}")
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
    old_max_decay: float = 0.5     # EMA old policy (rollouts and v_old): decay at update n (0-based)
    old_ramp: float | None = 0.02  # min(old_max_decay, old_min_decay + old_ramp (n - old_flat_steps)),
    old_min_decay: float = 0.0     # 0 before update old_flat_steps; the release: 0.9, 0.01, 0.2, -1
    old_flat_steps: int = 0        # (-1: its steps count from 1), recipe=worldcompass-release
    eval_decay: float = 0.9        # separate EMA for evaluation and the exported model


@dataclass
class EpisodeDataConfig:
    """Where training episodes' scripts come from besides the generated ones (``data.*``)."""

    trajectories: str | None = None  # a folder of WorldPlay pose JSON (one trajectory per file, or a list
    #                                as the release's --random_pose_path file); null: generated scripts only
    trajectory_share: float | None = None  # share of episodes drawn from it (null: 1 with trajectories, as
    #                                the release trains on them alone; 0 without)
    translation_threshold: float = 1.0e-4  # a latent step translates above this, rotates above
    rotation_threshold_deg: float = 0.05    # this (the release's rule for its random poses' actions)

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
    every: int = 450               # held-out wcbench evaluation every N steps (0: never); ~3.5 min for tinywm
    suite: str = "wc-mini-heldout"  # held out: training episodes never use its scene seeds
    limit: int = 0                 # only the first N cases (0: all)


@dataclass
class TrainerConfig:
    run_dir: str = "runs/wctrain"  # checkpoints, metrics.jsonl, final/ (the exported model)
    model: str = "tinywm"          # a wctrain.models entry point (tinywm, tinywan) or pkg.module:factory
    model_options: dict[str, Any] = field(default_factory=dict)  # keyword arguments of the factory, e.g.
    #                                +model_options.checkpoint=PATH
    suite: str = "wc-mini"         # resolution, field of view and step sizes of training episodes
    device: str = "auto"           # auto: each process on a GPU of its own when there are GPUs | cpu
    mixed_precision: str | None = None  # no | bf16 | fp16 (null: what `accelerate launch` was told; no)
    gradient_checkpointing: bool = False  # for models that support it (enable_gradient_checkpointing())
    log_with: list[str] = field(default_factory=list)  # accelerate trackers besides metrics.jsonl,
    #                                e.g. [tensorboard] or [wandb] (the package must be installed)
    checkpoint_every: int = 10
    rl: RLConfig = field(default_factory=RLConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    data: EpisodeDataConfig = field(default_factory=EpisodeDataConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def __post_init__(self) -> None:
        _choice("device", self.device, DEVICES)
        if self.mixed_precision is not None:
            _choice("mixed_precision", self.mixed_precision, MIXED_PRECISION)
        if self.checkpoint_every < 1:
            raise ValueError(f"checkpoint_every must be at least 1, got {self.checkpoint_every}")


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


# ---------------------------------------------------------------- wctrain pretrain

@dataclass
class DataConfig:
    """Rendered training trajectories."""

    suite: str = "wc-mini"  # step sizes and field of view come from this suite
    num_trajectories: int = 320
    val_trajectories: int = 16
    num_steps: int = 15  # latent steps per trajectory (4 * 15 + 1 = 61 frames)
    basic_fraction: float = 0.95  # the rest are combined-track scripts (few, so RL has something to fix)
    still_fraction: float = 0.05  # share of segments replaced by 'none' (standing still)
    segment_steps: list[int] = field(default_factory=lambda: [2, 6])  # latent steps per script segment
    render_scale: float = 1.5  # render at this multiple of the model size, then area-downsample
    seed: int = 0


@dataclass
class TrainConfig:
    """Optimisation, logging and checkpointing of supervised flow matching."""

    steps: int = 2400
    batch_size: int = 8  # windows per step
    clip_latents: int = 4  # latents per window (teacher-forced in parallel)
    lr: float = 1e-3
    warmup_steps: int = 100
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    ema_decay: float = 0.995
    context_noise: float = 0.05  # max std of noise added to context latents (robust autoregression)
    logit_normal_mean: float = 0.5  # flow times sigma = sigmoid(N(mean, std)): > 0 favours high noise,
    logit_normal_std: float = 1.0   # where the few-step sampler works and camera motion is decided
    log_every: int = 20
    val_every: int = 250
    checkpoint_every: int = 250
    time_limit_min: float | None = None  # stop (and export) early after this many minutes
    seed: int = 0
    device: str = "auto"  # auto: the GPU when there is one | cpu (bitwise reproducible: GPU kernels need not be)

    def __post_init__(self) -> None:
        _choice("train.device", self.device, DEVICES)


@dataclass
class PretrainConfig:
    run_dir: str = "runs/tinywm-pretrain"
    export_dir: str | None = None  # where the EMA model is saved at the end (null: RUN_DIR/final)
    model: str = "tinywm"          # a wctrain.models entry point or pkg.module:factory
    model_options: dict[str, Any] = field(default_factory=lambda: {"checkpoint": None})  # the factory's
    #                                arguments; checkpoint=null: a new model (+model_options.KEY=VALUE adds
    #                                constructor arguments, e.g. +model_options.height=32)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)


# ---------------------------------------------------------------- composing

SCHEMAS = {"train": TrainerConfig, "pretrain": PretrainConfig}


def load_config(name: str, overrides: list[str]) -> Any:
    """Compose ``conf/<name>.yaml`` (over its structured schema) with hydra ``key=value`` overrides."""
    bad = [item for item in overrides if "=" not in item]
    if bad:
        raise ValueError(f"unexpected argument(s) {bad}: settings are key=value, e.g. rl.steps=20")
    store = ConfigStore.instance()
    for schema, node in SCHEMAS.items():
        store.store(name=f"{schema}_schema", node=node)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose(config_name=name, overrides=list(overrides))


def _to_dataclass(cls: type, cfg: Any, parts: dict[str, type]) -> Any:
    if isinstance(cfg, cls):
        return cfg
    data = OmegaConf.to_container(cfg, resolve=True) if not isinstance(cfg, dict) else dict(cfg)
    return cls(**{k: parts[k](**v) if k in parts else v for k, v in data.items()})


def to_trainer_config(cfg: Any) -> TrainerConfig:
    """A TrainerConfig from a hydra DictConfig, a nested dict or a TrainerConfig."""
    return _to_dataclass(TrainerConfig, cfg, {"rl": RLConfig, "reward": RewardConfig, "policy": PolicyConfig,
                                              "data": EpisodeDataConfig, "eval": EvalConfig})


def to_pretrain_config(cfg: Any) -> PretrainConfig:
    """A PretrainConfig from a hydra DictConfig, a nested dict or a PretrainConfig."""
    return _to_dataclass(PretrainConfig, cfg, {"data": DataConfig, "train": TrainConfig})
