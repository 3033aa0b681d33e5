"""tinywan: a tiny action-conditioned video diffusion transformer built from diffusers' Wan blocks,
denoising a whole clip jointly.

Where tinywm is a UNet that makes a clip latent by latent, tinywan treats the clip the way
Wan-style video DiTs do: the latents before the clip (clean) and the clip's noisy latents
become one sequence of space-time tokens with 3D rotary positions, and every token attends to
every other (``diffusers.models.transformers.transformer_wan.WanTransformerBlock``), so the
whole clip is denoised at once (``latents_per_denoise = None``).

Conditioning, per token, through the blocks' adaptive LayerNorm (Wan 2.2's per-token form):
the flow time (diffusers' sinusoidal embedding + MLP) plus, for a clip token, its latent's
action embedding (the four frames' label embeddings, projected) or, for a context token, a
learned context vector at flow time 0. The blocks' cross-attention reads the clip's per-frame
action tokens (where Wan reads text). Actions arrive as signs and are embedded as one of the
81 wcbench labels (``action_embedding``), the capability the trainer explores through.

The latent space is tinywm's fixed packing (4 frames x 3 colours x 2 x 2 pixels = 48 channels
on a half-resolution grid); tokens are ``token_patch`` x ``token_patch`` patches of it. Like
tinywm, the clean clip is predicted as a warp of the last context frame (a displacement field
per frame, predicted per token and upsampled) plus a residual, and the output layer starts at
zero, so an untrained model repeats the last frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from diffusers import ConfigMixin, ModelMixin
from diffusers.configuration_utils import register_to_config
from diffusers.models.embeddings import TimestepEmbedding, Timesteps
from diffusers.models.normalization import FP32LayerNorm
from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed, WanTransformerBlock
from torch import nn

from wcbench.core.actions import NUM_LABELS
from wctrain.models.parts import PackedLatentSpace, action_labels, last_frame_channels, warp_frame
from wctrain.models.tinywm import MIN_SIGMA, load_or_build

ACTION_DIM = 4  # forward, right, yaw, pitch signs


@dataclass
class TinyWanContext:
    """Conditioning for a clip: the ``context_latents`` latents before it, (B, P, C, h, w)."""

    history: torch.Tensor


class TinyWan(PackedLatentSpace, ModelMixin, ConfigMixin):
    """Whole-clip video diffusion transformer (see the module docstring).

    Implements :class:`wctrain.models.base.TrainableWorldModel`.
    """

    latents_per_denoise = None  # the whole clip jointly
    # what post-training trains by default: the reading of actions, as for tinywm
    trainable_modules = ("action_embedding", "action_proj", "action_tokens")
    _supports_gradient_checkpointing = True
    _no_split_modules = ["WanTransformerBlock"]  # FSDP shards each block on its own

    @register_to_config
    def __init__(
        self,
        height: int = 64,
        width: int = 64,
        frames_per_latent: int = 4,
        patch_size: int = 2,
        token_patch: int = 4,
        context_latents: int = 1,
        dim: int = 128,
        ffn_dim: int = 512,
        heads: int = 4,
        layers: int = 4,
        max_frames: int = 64,
        num_inference_steps: int = 4,
        sigma_shift: float = 2.0,
    ):
        super().__init__()
        grid = patch_size * token_patch
        if height % grid or width % grid:
            raise ValueError(f"{width}x{height} must be divisible by patch_size * token_patch = {grid}")
        if dim % heads or (dim // heads) % 2:
            raise ValueError(f"dim {dim} must split into {heads} heads of an even size (rotary embedding)")
        self.latent_channels = 3 * frames_per_latent * patch_size**2
        self.out_channels = self.latent_channels + 2 * frames_per_latent  # residual + a field per frame

        # 1. conditioning: flow time, per-frame action labels, the context marker
        self.time_proj = Timesteps(dim, flip_sin_to_cos=True, downscale_freq_shift=0)
        self.time_embedding = TimestepEmbedding(dim, dim)
        self.action_embedding = nn.Embedding(NUM_LABELS, dim)
        self.action_proj = nn.Sequential(nn.Linear(frames_per_latent * dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.action_tokens = nn.Linear(dim, dim)
        self.frame_position = nn.Embedding(max_frames, dim)
        self.context_embedding = nn.Parameter(torch.zeros(dim))
        self.condition_proj = nn.Sequential(nn.SiLU(), nn.Linear(dim, 6 * dim))

        # 2. space-time tokens and Wan transformer blocks
        self.patch_embedding = nn.Conv3d(self.latent_channels, dim, kernel_size=(1, token_patch, token_patch),
                                         stride=(1, token_patch, token_patch))
        self.rope = WanRotaryPosEmbed(dim // heads, (1, token_patch, token_patch), max_seq_len=max(max_frames, 64))
        self.blocks = nn.ModuleList([WanTransformerBlock(dim, ffn_dim, heads, cross_attn_norm=True)
                                     for _ in range(layers)])

        # 3. output: adaptive norm, then per token its patch of residual and displacement
        self.norm_out = FP32LayerNorm(dim, 1e-6, elementwise_affine=False)
        self.out_modulation = nn.Linear(dim, 2 * dim)
        self.proj_out = nn.Linear(dim, self.out_channels * token_patch**2)
        nn.init.zeros_(self.proj_out.weight)  # start as "the clip repeats the last frame"
        nn.init.zeros_(self.proj_out.bias)
        self.gradient_checkpointing = False

    # ------------------------------------------------------------ denoiser

    def build_context(self, prefix: torch.Tensor, clip: torch.Tensor | None = None) -> TinyWanContext:
        """The last ``context_latents`` prefix latents (the start latent stands in for missing ones);
        ``clip`` is ignored: the whole clip is denoised jointly, never teacher-forced."""
        return TinyWanContext(history=self.recent_latents(prefix))

    def velocity(self, x_t: torch.Tensor, sigma: torch.Tensor, ctx: TinyWanContext,
                 actions: torch.Tensor) -> torch.Tensor:
        """Flow velocity for a noisy clip ``x_t`` (B, L, C, h, w) at ``sigma`` (B,) or (B, L), given
        the context and per-frame actions (B, 4L, 4)."""
        batch, num_latents = x_t.shape[:2]
        fpl, num_context = self.config.frames_per_latent, ctx.history.shape[1]
        if actions.shape[:2] != (batch, num_latents * fpl) or actions.shape[-1] != ACTION_DIM:
            raise ValueError(f"actions must be (B, {num_latents * fpl}, {ACTION_DIM}), got {tuple(actions.shape)}")
        if num_latents * fpl > self.config.max_frames:
            raise ValueError(f"a clip of {num_latents * fpl} frames exceeds max_frames={self.config.max_frames}")
        sigma = sigma.to(x_t.dtype)
        sigma = sigma[:, None].expand(batch, num_latents) if sigma.dim() == 1 else sigma

        # 1. per-latent conditioning: flow time + actions (clip), flow time 0 + context marker (context)
        frame_emb = self.action_embedding(action_labels(actions))  # (B, 4L, dim): one call, batch first
        latent_action = self.action_proj(frame_emb.reshape(batch, num_latents, -1))
        times = torch.cat([torch.zeros(batch, num_context, dtype=sigma.dtype, device=sigma.device), sigma], dim=1)
        time_emb = self.time_embedding(self.time_proj(times.reshape(-1) * 1000).to(x_t.dtype)).unflatten(0, times.shape)
        context_emb = self.context_embedding.expand(batch, num_context, -1)
        latent_cond = time_emb + torch.cat([context_emb, latent_action], dim=1)  # (B, P + L, dim)

        # 2. tokens of the context and the noisy clip, one sequence; per-token modulation
        latents = torch.cat([ctx.history.to(x_t.dtype), x_t], dim=1).transpose(1, 2)  # (B, C, P + L, h, w)
        rotary_emb = self.rope(latents)
        tokens = self.patch_embedding(latents)  # (B, dim, P + L, h', w')
        grid = tokens.shape[-2:]
        tokens = tokens.flatten(2).transpose(1, 2).contiguous()  # (B, (P + L) h' w', dim)
        per_latent = grid[0] * grid[1]  # tokens per latent; the conditioning is per latent, repeated
        modulation = self.condition_proj(latent_cond).repeat_interleave(per_latent, dim=1).unflatten(2, (6, -1))

        # 3. the clip's action tokens, which the blocks' cross-attention reads
        positions = torch.arange(num_latents * fpl, device=actions.device)
        action_tokens = self.action_tokens(frame_emb) + self.frame_position(positions)

        # 4. transformer blocks over all space-time tokens
        for block in self.blocks:
            if torch.is_grad_enabled() and self.gradient_checkpointing:
                tokens = self._gradient_checkpointing_func(block, tokens, action_tokens, modulation, rotary_emb)
            else:
                tokens = block(tokens, action_tokens, modulation, rotary_emb)

        # 5. the clip's tokens -> residual and displacement per latent -> clean clip -> velocity
        shift, scale = self.out_modulation(F.silu(latent_cond)).repeat_interleave(per_latent, dim=1).chunk(2, dim=-1)
        tokens = (self.norm_out(tokens.float()) * (1 + scale) + shift).type_as(tokens)
        out = self.proj_out(tokens).unflatten(1, (num_context + num_latents, *grid))[:, num_context:]
        out = self._unpatchify(out)  # (B, L, out_channels, h, w)
        warped = self._warp_context(ctx.history[:, -1], out[:, :, self.latent_channels:])
        sample = warped + out[:, :, :self.latent_channels]
        return (x_t - sample) / sigma.clamp(min=MIN_SIGMA).reshape(batch, num_latents, 1, 1, 1)

    def _unpatchify(self, out: torch.Tensor) -> torch.Tensor:
        """(B, L, h', w', out_channels * p^2) -> (B, L, out_channels, h' p, w' p)."""
        batch, num_latents, rows, cols, _ = out.shape
        patch = self.config.token_patch
        out = out.reshape(batch, num_latents, rows, cols, patch, patch, self.out_channels)
        return out.permute(0, 1, 6, 2, 4, 3, 5).reshape(batch, num_latents, self.out_channels, rows * patch,
                                                          cols * patch)

    def _warp_context(self, last_latent: torch.Tensor, displacement: torch.Tensor) -> torch.Tensor:
        """The last frame of the newest context latent (B, C, h, w), warped by each clip latent's
        fields (B, L, 2 * fpl, h, w): packed latents (B, L, C, h, w)."""
        batch, num_latents = displacement.shape[:2]
        patch, fpl = self.config.patch_size, self.config.frames_per_latent
        last = F.pixel_shuffle(last_latent[:, -last_frame_channels(patch):], patch)  # (B, 3, H, W)
        last = last.repeat_interleave(num_latents, dim=0).to(displacement.dtype)
        warped = warp_frame(last, displacement.flatten(0, 1), fpl)  # (B L, fpl * 3, H, W)
        return F.pixel_unshuffle(warped, patch).unflatten(0, (batch, num_latents))


SHIPPED_CHECKPOINT = Path(__file__).resolve().parents[1] / "checkpoints" / "tinywan"


def load_tinywan(checkpoint: str | Path | None = "shipped", **config) -> TinyWan:
    """The ``tinywan`` factory (``wctrain.models`` entry point): ``"shipped"`` (the checkpoint that
    comes with the package), a ``save_pretrained`` folder, or ``None`` for a new, randomly
    initialised model built from the constructor arguments ``config`` (``wctrain pretrain``)."""
    return load_or_build(TinyWan, checkpoint, SHIPPED_CHECKPOINT, config)
