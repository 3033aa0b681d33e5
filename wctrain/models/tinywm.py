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

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

import torch
import torch.nn.functional as F
from diffusers import ConfigMixin, ModelMixin
from diffusers.configuration_utils import register_to_config
from diffusers.models.embeddings import TimestepEmbedding, Timesteps
from torch import nn

from wcbench.actions import NUM_LABELS, NUM_ROTATION, Action
from wctrain.sampling import flow_sigmas

ACTION_DIM = 4  # forward, right, yaw, pitch signs
EXPLORATION_MODES = ("isotropic", "components", "parts", "boost")  # see TinyWM.explore
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


class TinyWM(ModelMixin, ConfigMixin):
    """Action-conditioned flow-matching video model (see the module docstring).

    Implements :class:`wctrain.models.base.TrainableWorldModel`.
    """

    latents_per_denoise = 1  # autoregressive latent by latent

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
        # (sign + 1) pairs -> translation / rotation label, from wcbench's own action model
        signs = (-1, 0, 1)
        self.register_buffer("translation_labels", torch.tensor(
            [[Action(forward=f, right=r).translation_label for r in signs] for f in signs]), persistent=False)
        self.register_buffer("rotation_labels", torch.tensor(
            [[Action(yaw=y, pitch=p).rotation_label for p in signs] for y in signs]), persistent=False)

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
        # (mode, its random values, label_scale, part_labels) inside explore(), else None
        self._exploration: tuple[str, Any, torch.Tensor | None, torch.Tensor | None] | None = None

    # ------------------------------------------------------------ latent space

    @property
    def frames_per_latent(self) -> int:
        return self.config.frames_per_latent

    @property
    def resolution(self) -> tuple[int, int]:
        return (self.config.width, self.config.height)

    def encode(self, frames: torch.Tensor) -> torch.Tensor:
        """Frames (B, T, 3, H, W) in [0, 1] -> latents (B, T/4, 48, H/2, W/2) in [-1, 1] (exact)."""
        batch, num_frames, _, height, width = frames.shape
        fpl, patch = self.config.frames_per_latent, self.config.patch_size
        if num_frames % fpl or (height, width) != (self.config.height, self.config.width):
            raise ValueError(f"encode takes a multiple of {fpl} frames at {self.config.width}x{self.config.height}, "
                             f"got {num_frames} frames at {width}x{height}")
        grouped = (2 * frames - 1).reshape(batch * num_frames // fpl, fpl * 3, height, width)
        latents = F.pixel_unshuffle(grouped, patch)
        return latents.reshape(batch, num_frames // fpl, *latents.shape[1:])

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Latents (B, L, 48, h, w) -> frames (B, 4L, 3, H, W) in [0, 1] (unclamped)."""
        batch, num_latents = latents.shape[:2]
        grouped = F.pixel_shuffle(latents.flatten(0, 1), self.config.patch_size)
        frames = grouped.reshape(batch, num_latents * self.config.frames_per_latent, 3, *grouped.shape[-2:])
        return (frames + 1) / 2

    def start_latent(self, image: torch.Tensor) -> torch.Tensor:
        """A start image (B, 3, H, W) in [0, 1] as a still latent (B, 1, C, h, w): the first context."""
        return self.encode(image[:, None].expand(-1, self.config.frames_per_latent, -1, -1, -1))

    def default_sigmas(self, num_inference_steps: int | None = None) -> torch.Tensor:
        """The sampler's sigma schedule from this model's config."""
        return flow_sigmas(num_inference_steps or self.config.num_inference_steps, self.config.sigma_shift)

    # ------------------------------------------------------------ denoiser

    def build_context(self, prefix: torch.Tensor, clip: torch.Tensor | None = None) -> TinyWMContext:
        """Context from prefix latents (B, P, C, h, w); ``clip`` teacher-forces a whole clip."""
        needed = self.config.context_latents
        if prefix.shape[1] < needed:
            # before enough latents exist, the start latent stands in for the missing ones
            prefix = torch.cat([prefix[:, :1].expand(-1, needed - prefix.shape[1], -1, -1, -1), prefix], dim=1)
        return TinyWMContext(history=prefix[:, -needed:], clip=clip)

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
        labels = self.action_labels(actions).reshape(batch * num_latents, fpl)
        frame_emb = self.action_embedding(labels)
        if self._exploration is not None:
            frame_emb = frame_emb + self._exploration_offsets(labels, batch, num_latents)
        action_emb = self.action_proj(frame_emb.flatten(1))
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

    @contextmanager
    def explore(self, scale: float, batch: int, generator: torch.Generator,
                mode: str = "isotropic", label_scale: torch.Tensor | None = None,
                part_labels: torch.Tensor | None = None) -> Iterator[None]:
        """Exploration for RL rollouts: inside the block, sample ``b`` of the batch reads its
        actions through a perturbed action embedding, fixed for the block.

        A flow model trained on exact camera motion maps an action to one motion whatever the
        noise, so G candidates of a clip move alike and a group has no following signal to
        learn from. A per-candidate perturbation makes each candidate a slightly different
        reading of its action (parameter-space exploration); NFT then trains the unperturbed
        model on the clean samples that followed better. The loss never runs inside this block.

        ``isotropic``: one Gaussian offset per candidate (``scale`` x the table's std) on every
        frame's embedding. ``components``: per candidate two coefficients ``c_r, c_t ~ N(0,
        scale^2)``; a frame commanding label ``(t, r)`` gets ``c_r (e(none, r) - e(none)) + c_t
        (e(t, none) - e(none))``, more or less of its own rotation and translation. In 128
        dimensions an isotropic offset hardly points along the directions the model reads as
        motion, so a combined label whose rotation the model drops is rarely turned.
        ``parts``: the isotropic offset, and each frame of a combined label is read, per
        candidate and frame position, as the label (odds 1/2), its translation alone or its
        rotation alone (1/4 each); the projection mixes a latent's four frames, so a candidate
        can both strafe and turn where the label alone gives only the strafe. Basic labels get
        the offset only. ``boost``: the isotropic offset plus ``|c_r|`` and ``|c_t|`` of the
        label's own rotation and translation as in ``components``: more of a part, never less,
        to test whether the readings with less motion than commanded were what hurt
        ``components`` and ``parts`` in training (they were not: README, "Post-training").
        ``label_scale`` (NUM_LABELS,), optional: each frame's offset times its label's entry, so
        labels the policy follows can be explored less than labels it fails. ``part_labels``
        (NUM_LABELS,) bool, optional, ``parts`` only: just these labels' frames may be read as a
        part (the others get the offset alone), so labels the policy already follows are not
        given candidates that miss them.
        """
        if mode in ("isotropic", "parts", "boost"):
            std = float(self.action_embedding.weight.detach().std())
            values = scale * std * torch.randn(batch, self.config.cond_embed_dim, generator=generator)
            if mode == "parts":  # per frame position: 0, 3 the label; 1 its translation; 2 its rotation
                values = (values, torch.randint(0, 4, (batch, self.config.frames_per_latent), generator=generator))
            elif mode == "boost":
                values = (values, (scale * torch.randn(batch, 2, generator=generator)).abs())
        elif mode == "components":
            values = scale * torch.randn(batch, 2, generator=generator)
        else:
            raise ValueError(f"exploration mode must be one of {EXPLORATION_MODES}, got {mode!r}")
        for name, given in (("label_scale", label_scale), ("part_labels", part_labels)):
            if given is not None and tuple(given.shape) != (NUM_LABELS,):
                raise ValueError(f"{name} must have one entry per label ({NUM_LABELS}), got {tuple(given.shape)}")
        if part_labels is not None and mode != "parts":
            raise ValueError(f"part_labels applies to the parts exploration mode only, got mode {mode!r}")
        self._exploration = (mode, values, label_scale, None if part_labels is None else part_labels.bool())
        try:
            yield
        finally:
            self._exploration = None

    def _exploration_offsets(self, labels: torch.Tensor, batch: int, num_latents: int) -> torch.Tensor:
        """Offsets on the frame embeddings (batch * num_latents, fpl, dim) inside explore(), each
        frame's times its label's ``label_scale`` factor when one was given."""
        mode, values, label_scale, part_labels = self._exploration
        count = (values[0] if isinstance(values, tuple) else values).shape[0]
        if count != batch:
            raise ValueError(f"explore() was set up for a batch of {count}, got {batch}")
        offsets = self._mode_offsets(mode, values, labels, num_latents, part_labels)
        return offsets if label_scale is None else offsets * label_scale.to(offsets)[labels][..., None]

    def _mode_offsets(self, mode: str, values, labels: torch.Tensor, num_latents: int,
                      part_labels: torch.Tensor | None = None) -> torch.Tensor:
        """The offsets of one exploration mode (see :meth:`explore`) for frames of ``labels``;
        under ``parts``, only frames of ``part_labels`` (when given) may be read as a part."""
        if mode == "isotropic":
            return values.repeat_interleave(num_latents, 0)[:, None]
        table = self.action_embedding.weight.detach()
        still = Action()
        # each frame's label with its rotation dropped, and with its translation dropped
        translation = NUM_ROTATION * (labels // NUM_ROTATION) + still.rotation_label
        rotation = NUM_ROTATION * still.translation_label + labels % NUM_ROTATION
        if mode == "parts":
            offsets, parts = (v.repeat_interleave(num_latents, 0) for v in values)
            combined = (translation != still.label) & (rotation != still.label)
            if part_labels is not None:  # only these labels may be read as a part
                combined = combined & part_labels.to(labels.device)[labels]
            read = torch.where(combined & (parts == 1), translation, labels)
            read = torch.where(combined & (parts == 2), rotation, read)
            return offsets[:, None] + table[read] - table[labels]
        # components: coefficients alone; boost: (isotropic offset, coefficients)
        offsets, coefficients = (None, values) if mode == "components" else values
        coefficients = coefficients.repeat_interleave(num_latents, 0)
        along = (coefficients[:, 0, None, None] * (table[rotation] - table[still.label])
                 + coefficients[:, 1, None, None] * (table[translation] - table[still.label]))
        return along if offsets is None else offsets.repeat_interleave(num_latents, 0)[:, None] + along

    def action_labels(self, actions: torch.Tensor) -> torch.Tensor:
        """Per-frame signs (..., 4) -> full labels 9 * translation + rotation (...), as wcbench counts them."""
        index = (actions.round().long().clamp(-1, 1) + 1).unbind(-1)
        if any(((a.abs() > 1.5) | ((a - a.round()).abs() > 1e-3)).any() for a in actions.unbind(-1)):
            raise ValueError("actions must be signs in {-1, 0, 1} (forward, right, yaw, pitch)")
        return NUM_ROTATION * self.translation_labels[index[0], index[1]] + self.rotation_labels[index[2], index[3]]

    def _warp_last_frame(self, context: torch.Tensor, displacement: torch.Tensor) -> torch.Tensor:
        """Warp the newest context frame by one displacement field per output frame.

        context: (N, n*C, h, w) packed context latents; displacement: (N, 2 * frames, h, w) in
        pixels of the full-resolution frame (x, y per frame). Returns a packed latent (N, C, h, w).
        Bicubic sampling keeps repeated warps over a long rollout from blurring quickly;
        content that enters from outside the frame is left to the residual.
        """
        fpl, patch = self.config.frames_per_latent, self.config.patch_size
        per_frame = 3 * patch**2
        last = F.pixel_shuffle(context[:, -per_frame:], patch)  # (N, 3, H, W) in [-1, 1]
        num, _, height, width = last.shape
        # 1. per-frame fields up to full resolution, as offsets of a normalised sampling grid
        fields = F.interpolate(displacement, size=(height, width), mode="bilinear", align_corners=False)
        fields = fields.reshape(num * fpl, 2, height, width).permute(0, 2, 3, 1)
        scale = torch.tensor([2.0 / width, 2.0 / height], dtype=fields.dtype)
        ys = torch.linspace(-1 + 1 / height, 1 - 1 / height, height, dtype=fields.dtype)
        xs = torch.linspace(-1 + 1 / width, 1 - 1 / width, width, dtype=fields.dtype)
        identity = torch.stack(torch.meshgrid(xs, ys, indexing="xy"), dim=-1)  # (H, W, 2) as (x, y)
        # 2. sample the last frame at the displaced positions (backward warp)
        source = last.repeat_interleave(fpl, dim=0)
        warped = F.grid_sample(source, identity + fields * scale, mode="bicubic", padding_mode="border",
                               align_corners=False)
        # 3. back to the packed latent layout
        return F.pixel_unshuffle(warped.reshape(num, fpl * 3, height, width), patch)

    @staticmethod
    def _coordinates(inputs: torch.Tensor) -> torch.Tensor:
        """Pixel-centre coordinates in [-1, 1], x then y: (N, 2, h, w)."""
        batch, _, height, width = inputs.shape
        ys = torch.linspace(-1 + 1 / height, 1 - 1 / height, height, dtype=inputs.dtype)
        xs = torch.linspace(-1 + 1 / width, 1 - 1 / width, width, dtype=inputs.dtype)
        grid = torch.stack(torch.meshgrid(xs, ys, indexing="xy"), dim=0)
        return grid[None].expand(batch, -1, -1, -1)

    def _last_frame(self, context: torch.Tensor) -> torch.Tensor:
        """The newest context frame repeated as a whole latent: (B, L, C, h, w).

        ``pixel_unshuffle`` orders a latent's channels as (frame, colour, patch row, patch
        column), so the last frame is the last ``3 * patch^2`` channels.
        """
        per_frame = 3 * self.config.patch_size ** 2
        return context[:, :, -per_frame:].repeat(1, 1, self.config.frames_per_latent, 1, 1)
