"""tinywm: a small action-conditioned flow-matching video world model.

What it is: a conditional flow-matching generator. Noise goes in, frames come out; nothing
about the scene or the camera is rendered. It generates video one latent (4 frames) at a
time, autoregressively, each latent by a few Euler steps of the flow ODE conditioned on

- the previous latent (the 4 frames before it, the start image repeated for the first one),
  concatenated to the noisy latent as channels, and
- the latent's per-frame actions plus the flow time, embedded and applied to every residual
  block as FiLM (scale and shift). Actions arrive as signs (forward, right, yaw, pitch); each
  frame's combination is embedded as one of the 81 (translation x rotation) labels with a
  learned table, like the discrete action tokens of real world models. A combination the
  model rarely saw in pretraining therefore has a weakly trained embedding and is followed
  poorly, until post-training fixes it.

The network predicts the clean latent as a learned warp of the last context frame plus a
residual: it outputs, per frame of the latent, a displacement field (2 channels) and a
colour residual; x0 = warp(last frame, field) + residual, and the velocity follows as
``(x_t - x0) / sigma``. Nothing about the camera is computed: the field is whatever the
network predicts from noise, context and action. Next frames differ from the last one by a
small camera motion, and a warp moves content without smearing it, so the network learns
motion quickly and autoregressive rollouts neither ghost nor fade (a residual alone left
complementary-colour ghosts where content had moved, which the pose estimator tracked as
static features). ``use_warp=False`` gives the plain residual model.

The latent space is a fixed, non-learned, invertible packing (no VAE to train on a CPU):
4 frames x 3 colours x (2 x 2 pixels) become 48 channels on a half-resolution grid, the way
video VAEs fold 4 frames into one latent and DiTs fold 2 x 2 patches into one token. The
denoiser is a small UNet on that grid with self-attention at its coarsest level.

A clip (4 latents = 16 frames) is generated latent by latent; training teacher-forces all
latents of a clip in parallel (``build_context(prefix, clip)``), which is also how the
RL trainer re-evaluates the velocity of a sampled clip.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from diffusers import ConfigMixin, ModelMixin
from diffusers.configuration_utils import register_to_config
from diffusers.models.embeddings import TimestepEmbedding, Timesteps
from torch import nn

from wcbench.core.actions import NUM_LABELS
from wctrain.models.parts import PackedLatentSpace, action_labels, last_frame_channels, pixel_grid, warp_frame

ACTION_DIM = 4  # forward, right, yaw, pitch signs
MIN_SIGMA = 0.02  # floor of the division in velocity = (x_t - x0) / sigma


@dataclass
class TinyWMContext:
    """Conditioning for a clip: the latents before it, and (for teacher forcing) the clean clip.

    history: (B, P, C, h, w) latents before the clip (at least ``context_latents`` of them).
    clip: (B, L, C, h, w) the clean clip, or None while sampling latent by latent.
    """

    history: torch.Tensor
    clip: torch.Tensor | None = None


class ResnetBlock(nn.Module):
    """GroupNorm-SiLU-conv twice, with FiLM from the conditioning embedding in between."""

    def __init__(self, in_channels: int, out_channels: int, cond_dim: int, groups: int = 8):
        super().__init__()
        self.norm1 = nn.GroupNorm(min(groups, in_channels), in_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.cond_emb_proj = nn.Linear(cond_dim, 2 * out_channels)
        self.norm2 = nn.GroupNorm(min(groups, out_channels), out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.conv_shortcut = nn.Conv2d(in_channels, out_channels, 1) if in_channels != out_channels else None

    def forward(self, hidden_states: torch.Tensor, cond_emb: torch.Tensor) -> torch.Tensor:
        residual = hidden_states if self.conv_shortcut is None else self.conv_shortcut(hidden_states)
        hidden_states = self.conv1(F.silu(self.norm1(hidden_states)))
        scale, shift = self.cond_emb_proj(F.silu(cond_emb))[:, :, None, None].chunk(2, dim=1)
        hidden_states = self.norm2(hidden_states) * (1 + scale) + shift
        hidden_states = self.conv2(F.silu(hidden_states))
        return residual + hidden_states


class SpatialAttention(nn.Module):
    """Multi-head self-attention over the positions of a (coarse) feature map."""

    def __init__(self, channels: int, heads: int, groups: int = 8):
        super().__init__()
        self.heads = heads
        self.group_norm = nn.GroupNorm(min(groups, channels), channels)
        self.to_qkv = nn.Linear(channels, 3 * channels)
        self.to_out = nn.Linear(channels, channels)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        batch, channels, height, width = hidden_states.shape
        tokens = self.group_norm(hidden_states).flatten(2).transpose(1, 2)  # (B, h*w, C)
        query, key, value = self.to_qkv(tokens).chunk(3, dim=-1)
        query, key, value = (t.unflatten(-1, (self.heads, -1)).transpose(1, 2) for t in (query, key, value))
        attended = F.scaled_dot_product_attention(query, key, value).transpose(1, 2).flatten(2)
        out = self.to_out(attended).transpose(1, 2).reshape(batch, channels, height, width)
        return hidden_states + out


class TinyWM(PackedLatentSpace, ModelMixin, ConfigMixin):
    """Action-conditioned flow-matching video model (see the module docstring).

    Implements :class:`wctrain.models.base.TrainableWorldModel`.
    """

    latents_per_denoise = 1  # autoregressive latent by latent
    # what post-training trains by default: the reading of actions (measured: docs/wctrain.md)
    trainable_modules = ("action_embedding", "action_proj")

    @register_to_config
    def __init__(
        self,
        height: int = 64,
        width: int = 64,
        frames_per_latent: int = 4,
        patch_size: int = 2,
        context_latents: int = 1,
        block_out_channels: tuple[int, ...] = (32, 64, 96),
        cond_embed_dim: int = 128,
        attention_heads: int = 4,
        num_inference_steps: int = 4,
        sigma_shift: float = 2.0,
        use_warp: bool = True,
    ):
        super().__init__()
        if height % (patch_size * 2 ** (len(block_out_channels) - 1)) or width % (
                patch_size * 2 ** (len(block_out_channels) - 1)):
            raise ValueError(f"{width}x{height} must be divisible by patch_size * 2^(levels-1)")
        self.latent_channels = 3 * frames_per_latent * patch_size**2
        # noisy latent + context latents + 2 coordinate channels (CoordConv: forward motion and
        # pitch move content differently in different parts of the image)
        in_channels = self.latent_channels * (1 + context_latents) + 2

        # 1. conditioning: flow time (diffusers' sinusoidal embedding + MLP) and per-frame actions
        self.time_proj = Timesteps(cond_embed_dim, flip_sin_to_cos=True, downscale_freq_shift=0)
        self.time_embedding = TimestepEmbedding(cond_embed_dim, cond_embed_dim)
        self.action_embedding = nn.Embedding(NUM_LABELS, cond_embed_dim)
        self.action_proj = nn.Sequential(
            nn.Linear(frames_per_latent * cond_embed_dim, cond_embed_dim), nn.SiLU(),
            nn.Linear(cond_embed_dim, cond_embed_dim))

        # 2. UNet over the latent grid
        self.conv_in = nn.Conv2d(in_channels, block_out_channels[0], 3, padding=1)
        self.down_blocks = nn.ModuleList()
        self.downsamplers = nn.ModuleList()
        channels = block_out_channels[0]
        for level, out_channels in enumerate(block_out_channels[:-1]):
            self.down_blocks.append(ResnetBlock(channels, out_channels, cond_embed_dim))
            self.downsamplers.append(nn.Conv2d(out_channels, out_channels, 3, stride=2, padding=1))
            channels = out_channels
        mid_channels = block_out_channels[-1]
        self.mid_block_in = ResnetBlock(channels, mid_channels, cond_embed_dim)
        self.mid_attention = SpatialAttention(mid_channels, attention_heads)
        self.mid_block_out = ResnetBlock(mid_channels, mid_channels, cond_embed_dim)
        self.up_blocks = nn.ModuleList()
        self.upsamplers = nn.ModuleList()
        channels = mid_channels
        for out_channels in reversed(block_out_channels[:-1]):
            # convolve before upsampling (4x cheaper than after, on a CPU budget)
            self.upsamplers.append(nn.Conv2d(channels, channels, 3, padding=1))
            self.up_blocks.append(ResnetBlock(channels + out_channels, out_channels, cond_embed_dim))
            channels = out_channels
        self.conv_norm_out = nn.GroupNorm(min(8, channels), channels)
        # residual for every latent channel, plus a 2-channel displacement field per frame
        out_channels = self.latent_channels + (2 * frames_per_latent if use_warp else 0)
        self.conv_out = nn.Conv2d(channels, out_channels, 3, padding=1)
        # start as "the next frames repeat the last one" so early training is stable
        nn.init.zeros_(self.conv_out.weight)
        nn.init.zeros_(self.conv_out.bias)

    # ------------------------------------------------------------ denoiser

    def build_context(self, prefix: torch.Tensor, clip: torch.Tensor | None = None) -> TinyWMContext:
        """Context from prefix latents (B, P, C, h, w); ``clip`` teacher-forces a whole clip."""
        return TinyWMContext(history=self.recent_latents(prefix), clip=clip)

    def _context_for(self, ctx: TinyWMContext, num_latents: int) -> torch.Tensor:
        """Per target latent, its ``context_latents`` predecessors stacked as channels: (B, L, n*C, h, w)."""
        needed = self.config.context_latents
        if ctx.clip is None:
            if num_latents != 1:
                raise ValueError("tinywm generates one latent at a time: without a teacher-forced clip in the "
                                 f"context, velocity() takes 1 latent, got {num_latents}")
            sequence = ctx.history
        else:
            if ctx.clip.shape[1] < num_latents - 1:
                raise ValueError(f"teacher-forced clip has {ctx.clip.shape[1]} latents, need {num_latents - 1}")
            sequence = torch.cat([ctx.history, ctx.clip[:, :num_latents - 1]], dim=1)
        windows = [sequence[:, k:k + needed].flatten(1, 2) for k in range(num_latents)]
        return torch.stack(windows, dim=1)

    def velocity(self, x_t: torch.Tensor, sigma: torch.Tensor, ctx: TinyWMContext,
                 actions: torch.Tensor) -> torch.Tensor:
        """Flow velocity for noisy latents ``x_t`` (B, L, C, h, w) at ``sigma`` (B,) or (B, L), given the
        context and per-frame actions (B, 4L, 4)."""
        batch, num_latents = x_t.shape[:2]
        fpl = self.config.frames_per_latent
        if actions.shape[:2] != (batch, num_latents * fpl) or actions.shape[-1] != ACTION_DIM:
            raise ValueError(f"actions must be (B, {num_latents * fpl}, {ACTION_DIM}), got {tuple(actions.shape)}")
        sigma = sigma.to(x_t.dtype)
        sigma = sigma[:, None].expand(batch, num_latents) if sigma.dim() == 1 else sigma

        # 1. embed flow time and actions, one conditioning vector per latent
        time_emb = self.time_embedding(self.time_proj(sigma.reshape(-1) * 1000).to(x_t.dtype))
        frame_emb = self.action_embedding(action_labels(actions))  # (B, 4L, dim): one call, batch first
        action_emb = self.action_proj(frame_emb.reshape(batch * num_latents, -1))
        cond_emb = time_emb + action_emb

        # 2. the noisy latent and its context latents, stacked as channels
        context = self._context_for(ctx, num_latents)
        inputs = torch.cat([x_t, context], dim=2).flatten(0, 1)
        hidden_states = self.conv_in(torch.cat([inputs, self._coordinates(inputs)], dim=1))

        # 3. UNet: down, attention in the middle, up with skips
        skips = []
        for block, downsample in zip(self.down_blocks, self.downsamplers):
            hidden_states = block(hidden_states, cond_emb)
            skips.append(hidden_states)
            hidden_states = downsample(hidden_states)
        hidden_states = self.mid_block_in(hidden_states, cond_emb)
        hidden_states = self.mid_attention(hidden_states)
        hidden_states = self.mid_block_out(hidden_states, cond_emb)
        for block, upsample in zip(self.up_blocks, self.upsamplers):
            hidden_states = F.interpolate(upsample(hidden_states), scale_factor=2.0, mode="nearest")
            hidden_states = block(torch.cat([hidden_states, skips.pop()], dim=1), cond_emb)

        # 4. clean latent = (warped) last context frame + residual; velocity from it
        out = self.conv_out(F.silu(self.conv_norm_out(hidden_states)))
        residual = out[:, :self.latent_channels].reshape(x_t.shape)
        if self.config.use_warp:
            base = self._warp_last_frame(context.flatten(0, 1), out[:, self.latent_channels:]).reshape(x_t.shape)
        else:
            base = self._last_frame(context)
        sample = base + residual
        return (x_t - sample) / sigma.clamp(min=MIN_SIGMA).reshape(batch, num_latents, 1, 1, 1)

    def _warp_last_frame(self, context: torch.Tensor, displacement: torch.Tensor) -> torch.Tensor:
        """Warp the newest context frame by one displacement field per output frame.

        context: (N, n*C, h, w) packed context latents; displacement: (N, 2 * frames, h, w).
        Returns a packed latent (N, C, h, w).
        """
        fpl, patch = self.config.frames_per_latent, self.config.patch_size
        last = F.pixel_shuffle(context[:, -last_frame_channels(patch):], patch)  # (N, 3, H, W) in [-1, 1]
        return F.pixel_unshuffle(warp_frame(last, displacement, fpl), patch)

    @staticmethod
    def _coordinates(inputs: torch.Tensor) -> torch.Tensor:
        """Pixel-centre coordinates in [-1, 1], x then y: (N, 2, h, w)."""
        grid = pixel_grid(inputs.shape[2], inputs.shape[3], inputs).permute(2, 0, 1)
        return grid[None].expand(inputs.shape[0], -1, -1, -1)

    def _last_frame(self, context: torch.Tensor) -> torch.Tensor:
        """The newest context frame repeated as a whole latent: (B, L, C, h, w)."""
        per_frame = last_frame_channels(self.config.patch_size)
        return context[:, :, -per_frame:].repeat(1, 1, self.config.frames_per_latent, 1, 1)


SHIPPED_CHECKPOINT = Path(__file__).resolve().parents[1] / "checkpoints" / "tinywm"


def load_tinywm(checkpoint: str | Path | None = "shipped", **config) -> TinyWM:
    """The ``tinywm`` factory (``wctrain.models`` entry point): ``"shipped"`` (the checkpoint that
    comes with the package), a ``save_pretrained`` folder, or ``None`` for a new, randomly
    initialised model built from the constructor arguments ``config`` (``wctrain pretrain``)."""
    return load_or_build(TinyWM, checkpoint, SHIPPED_CHECKPOINT, config)


def load_or_build(cls: type, checkpoint: str | Path | None, shipped: Path, config: dict):
    """``cls(**config)`` when ``checkpoint`` is None, else ``cls.from_pretrained`` of the folder
    (``"shipped"``: ``shipped``) in eval mode; a clear error for a folder without config.json."""
    if checkpoint is None:
        return cls(**config)
    if config:
        raise ValueError(f"{cls.__name__}: constructor arguments {sorted(config)} apply to a new model only; a "
                         f"checkpoint carries its own (pass +model_options.checkpoint=null to build a new one)")
    path = shipped if checkpoint == "shipped" else Path(checkpoint)
    if not (path / "config.json").exists():
        raise FileNotFoundError(f"no {cls.__name__} checkpoint at {path}: pass a folder written by save_pretrained, "
                                f"`wctrain pretrain` or `wctrain train` (it holds config.json)")
    return cls.from_pretrained(path, low_cpu_mem_usage=False).eval()  # no meta-device init under accelerate launch
