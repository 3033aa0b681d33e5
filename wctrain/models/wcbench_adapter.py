"""tinywm as a wcbench world model (``wcbench run --model tinywm``).

tinywm generates 64x64 frames. The adapter area-downsamples the start image to that size
and, by default, upsamples every generated frame (bicubic) back to the start image's size
(the suite's resolution), so the harness, the pose estimator and the quality scorer see
frames at the suite's size; the detail is still 64 px. Frame 0 is the start image after
the same down- and upsampling, so the whole video has one look. ``upsample=False``
returns native 64x64 frames instead (the harness then downsizes the start image itself).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import torch

from wcbench.actions import FRAMES_PER_LATENT, Action
from wcbench.models.base import CaseInfo
from wctrain.models.base import actions_to_tensor, frames_to_tensor, sample_clip, tensor_to_frames
from wctrain.models.tinywm import TinyWM

DEFAULT_CHECKPOINT = Path(__file__).resolve().parents[1] / "checkpoints" / "tinywm"


def load_tinywm(checkpoint: str | Path | None = None) -> TinyWM:
    """Load a tinywm checkpoint (a ``save_pretrained`` folder); the shipped one by default."""
    path = Path(checkpoint) if checkpoint else DEFAULT_CHECKPOINT
    if not (path / "config.json").exists():
        hint = ("the shipped checkpoint is missing from this install; reinstall the package or pretrain one "
                "with `wctrain pretrain` and pass checkpoint=PATH") if checkpoint is None else \
            "pass a folder written by TinyWM.save_pretrained / `wctrain pretrain` (it holds config.json)"
        raise FileNotFoundError(f"no tinywm checkpoint at {path}: {hint}")
    return TinyWM.from_pretrained(path, low_cpu_mem_usage=False).eval()  # no meta-device init under accelerate launch


def to_model_size(image: np.ndarray, model: TinyWM) -> np.ndarray:
    """Area-downsample a start image (H, W, 3) uint8 to the model's resolution."""
    if (image.shape[1], image.shape[0]) == model.resolution:
        return image
    return cv2.resize(image, model.resolution, interpolation=cv2.INTER_AREA)


def resize_frames(frames: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Bicubic resize of (T, h, w, 3) uint8 frames to ``size`` (width, height): how every
    tinywm frame reaches the scorers, in the benchmark and in the trainer's rewards alike."""
    if (frames.shape[2], frames.shape[1]) == tuple(size):
        return frames
    return np.stack([cv2.resize(f, tuple(size), interpolation=cv2.INTER_CUBIC) for f in frames])


class TinyWMWorldModel:
    """Streaming wcbench adapter around :class:`TinyWM` (seeded, CPU).

    checkpoint: a ``save_pretrained`` folder (default: the shipped checkpoint);
    num_inference_steps: Euler steps per latent (default: the checkpoint's config);
    upsample: return frames at the start image's size (True) or at 64x64 (False).
    """

    name = "tinywm"
    fps = 16

    def __init__(self, checkpoint: str | Path | None = None, num_inference_steps: int | None = None,
                 upsample: bool = True, latents_per_clip: int = 4, model: TinyWM | None = None):
        self.model = model.eval() if model is not None else load_tinywm(checkpoint)
        self.sigmas = self.model.default_sigmas(num_inference_steps)
        self.upsample = upsample
        self.frames_per_clip = FRAMES_PER_LATENT * latents_per_clip
        self.resolution = None if upsample else self.model.resolution
        self._history: torch.Tensor | None = None

    def reset(self, image: np.ndarray, prompt: str, seed: int, info: CaseInfo | None = None) -> np.ndarray:
        """Start from ``image`` (H, W, 3) uint8; ``prompt`` is unused (tinywm has no text input)."""
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise ValueError(f"start image must be (H, W, 3) uint8, got {image.shape} {image.dtype}")
        self._out_size = (image.shape[1], image.shape[0])
        small = to_model_size(image, self.model)
        self._generator = torch.Generator().manual_seed(int(seed))
        self._history = self.model.start_latent(frames_to_tensor(small[None]))
        return self._to_output(small[None])[0]

    @torch.no_grad()
    def step(self, actions: list[Action]) -> np.ndarray:
        """Generate ``4 * len(actions)`` frames, one latent per action."""
        if self._history is None:
            raise RuntimeError("call reset() before step()")
        if not actions:
            raise ValueError("step() needs at least one action")
        latents = sample_clip(self.model, self._history, actions_to_tensor(actions)[None], self.sigmas,
                              self._generator)
        keep = self.model.config.context_latents
        self._history = torch.cat([self._history, latents], dim=1)[:, -keep:]
        return self._to_output(tensor_to_frames(self.model.decode(latents)[0]))

    def _to_output(self, frames: np.ndarray) -> np.ndarray:
        return resize_frames(frames, self._out_size) if self.upsample else frames
