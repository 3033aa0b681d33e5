"""Parts shared by tinywm and tinywan: the latent packing, the warp of the last frame, the
action labels and pixel coordinates.

The latent space is a fixed, invertible packing (no VAE to train on a CPU): ``frames_per_latent``
frames x 3 colours x (patch x patch pixels) become the channels of one latent on a grid ``patch``
times smaller, the way video VAEs fold 4 frames into one latent and DiTs fold 2 x 2 patches into
one token. Pixels in [0, 1] map to [-1, 1].
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from wcbench.core.actions import NUM_ROTATION, Action
from wctrain.models.sampling import flow_sigmas

_SIGNS = (-1, 0, 1)
# (sign + 1) pairs -> translation / rotation label, from wcbench's own action model
TRANSLATION_LABELS = torch.tensor([[Action(forward=f, right=r).translation_label for r in _SIGNS] for f in _SIGNS])
ROTATION_LABELS = torch.tensor([[Action(yaw=y, pitch=p).rotation_label for p in _SIGNS] for y in _SIGNS])


def pack_frames(frames: torch.Tensor, frames_per_latent: int, patch: int) -> torch.Tensor:
    """Frames (B, T, 3, H, W) in [0, 1] -> latents (B, T / fpl, fpl * 3 * patch^2, H / patch, W / patch)."""
    batch, num_frames, _, height, width = frames.shape
    grouped = (2 * frames - 1).reshape(batch * num_frames // frames_per_latent, frames_per_latent * 3, height, width)
    latents = F.pixel_unshuffle(grouped, patch)
    return latents.reshape(batch, num_frames // frames_per_latent, *latents.shape[1:])


def unpack_latents(latents: torch.Tensor, frames_per_latent: int, patch: int) -> torch.Tensor:
    """Latents (B, L, C, h, w) -> frames (B, L * fpl, 3, h * patch, w * patch) in [0, 1] (unclamped)."""
    batch, num_latents = latents.shape[:2]
    grouped = F.pixel_shuffle(latents.flatten(0, 1), patch)
    frames = grouped.reshape(batch, num_latents * frames_per_latent, 3, *grouped.shape[-2:])
    return (frames + 1) / 2


def last_frame_channels(patch: int) -> int:
    """Channels of one frame in a packed latent: ``pixel_unshuffle`` orders them (frame, colour,
    patch row, patch column), so a latent's last frame is its last ``3 * patch^2`` channels."""
    return 3 * patch**2


def action_labels(actions: torch.Tensor) -> torch.Tensor:
    """Per-frame signs (..., 4) -> full labels 9 * translation + rotation (...), as wcbench counts them."""
    if any(((a.abs() > 1.5) | ((a - a.round()).abs() > 1e-3)).any() for a in actions.unbind(-1)):
        raise ValueError("actions must be signs in {-1, 0, 1} (forward, right, yaw, pitch)")
    index = (actions.round().long().clamp(-1, 1) + 1).unbind(-1)
    translation, rotation = TRANSLATION_LABELS.to(actions.device), ROTATION_LABELS.to(actions.device)
    return NUM_ROTATION * translation[index[0], index[1]] + rotation[index[2], index[3]]


def pixel_grid(height: int, width: int, like: torch.Tensor) -> torch.Tensor:
    """Pixel-centre coordinates in [-1, 1] as (H, W, 2), x then y (``grid_sample``'s convention)."""
    ys = torch.linspace(-1 + 1 / height, 1 - 1 / height, height, dtype=like.dtype, device=like.device)
    xs = torch.linspace(-1 + 1 / width, 1 - 1 / width, width, dtype=like.dtype, device=like.device)
    return torch.stack(torch.meshgrid(xs, ys, indexing="xy"), dim=-1)


def warp_frame(last: torch.Tensor, displacement: torch.Tensor, frames: int) -> torch.Tensor:
    """Warp a frame by one displacement field per output frame.

    last: (N, 3, H, W) pixels in [-1, 1]; displacement: (N, 2 * frames, h, w) in pixels of the
    full-resolution frame (x, y per frame), upsampled bilinearly. Returns (N, frames * 3, H, W).
    Bicubic sampling keeps repeated warps over a long rollout from blurring quickly; content
    that enters from outside the frame is left to the caller's residual.
    """
    num, _, height, width = last.shape
    # 1. per-frame fields up to full resolution, as offsets of a normalised sampling grid
    fields = F.interpolate(displacement, size=(height, width), mode="bilinear", align_corners=False)
    fields = fields.reshape(num * frames, 2, height, width).permute(0, 2, 3, 1)
    scale = torch.tensor([2.0 / width, 2.0 / height], dtype=fields.dtype, device=fields.device)
    # 2. sample the frame at the displaced positions (backward warp)
    source = last.repeat_interleave(frames, dim=0)
    warped = F.grid_sample(source, pixel_grid(height, width, fields) + fields * scale, mode="bicubic",
                           padding_mode="border", align_corners=False)
    return warped.reshape(num, frames * 3, height, width)


class PackedLatentSpace:
    """The latent side of the trainer protocol for a model on this packing, read from its config
    (``height``, ``width``, ``frames_per_latent``, ``patch_size``, ``context_latents``,
    ``num_inference_steps``, ``sigma_shift``): tinywm and tinywan mix it in."""

    config: object

    @property
    def frames_per_latent(self) -> int:
        return self.config.frames_per_latent

    @property
    def context_latents(self) -> int:
        return self.config.context_latents

    @property
    def resolution(self) -> tuple[int, int]:
        return (self.config.width, self.config.height)

    def encode(self, frames: torch.Tensor) -> torch.Tensor:
        """Frames (B, T, 3, H, W) in [0, 1] -> latents (B, T/4, 48, H/2, W/2) in [-1, 1] (exact)."""
        num_frames, height, width = frames.shape[1], frames.shape[-2], frames.shape[-1]
        fpl = self.config.frames_per_latent
        if num_frames % fpl or (height, width) != (self.config.height, self.config.width):
            raise ValueError(f"encode takes a multiple of {fpl} frames at {self.config.width}x{self.config.height}, "
                             f"got {num_frames} frames at {width}x{height}")
        return pack_frames(frames, fpl, self.config.patch_size)

    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        """Latents (B, L, 48, h, w) -> frames (B, 4L, 3, H, W) in [0, 1] (unclamped)."""
        return unpack_latents(latents, self.config.frames_per_latent, self.config.patch_size)

    def start_latent(self, image: torch.Tensor) -> torch.Tensor:
        """A start image (B, 3, H, W) in [0, 1] as a still latent (B, 1, C, h, w): the first context."""
        return self.encode(image[:, None].expand(-1, self.config.frames_per_latent, -1, -1, -1))

    def default_sigmas(self, num_inference_steps: int | None = None) -> torch.Tensor:
        """The sampler's sigma schedule from this model's config."""
        return flow_sigmas(num_inference_steps or self.config.num_inference_steps, self.config.sigma_shift)

    def recent_latents(self, prefix: torch.Tensor) -> torch.Tensor:
        """The last ``context_latents`` of the prefix latents (B, P, C, h, w); before enough latents
        exist, the start latent stands in for the missing ones."""
        needed = self.config.context_latents
        if prefix.shape[1] < needed:
            prefix = torch.cat([prefix[:, :1].expand(-1, needed - prefix.shape[1], -1, -1, -1), prefix], dim=1)
        return prefix[:, -needed:]
