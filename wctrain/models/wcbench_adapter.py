"""Any trainable world model as a wcbench world model (``wcbench run --model tinywm|tinywan|wctrain``).

A trainable model makes frames at its own resolution. The adapter area-downsamples the start
image to that size and, by default, upsamples every generated frame (bicubic) back to the
start image's size (the suite's resolution), so the harness, the pose estimator and the
quality scorer see frames at the suite's size; the detail is the model's. Frame 0 is the start
image after the same down- and upsampling, so the whole video has one look. ``upsample=False``
returns native frames instead (the harness then downsizes the start image itself).

The trainer's rollouts make their frames with the same two functions (:func:`to_model_size`,
:func:`resize_frames`), so a reward scores what ``wcbench run`` would show.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import torch
from torch import nn

from wcbench.core.actions import FRAMES_PER_LATENT, Action
from wcbench.models.base import CaseInfo
from wctrain.models.base import actions_to_tensor, frames_to_tensor, sample_clip, tensor_to_frames
from wctrain.models.registry import load_trained
from wctrain.models.tinywan import load_tinywan
from wctrain.models.tinywm import SHIPPED_CHECKPOINT as DEFAULT_CHECKPOINT, load_tinywm

__all__ = ["DEFAULT_CHECKPOINT", "TinyWMWorldModel", "TinyWanWorldModel", "TrainableWorldModelAdapter",
           "TrainedWorldModel", "load_tinywm", "resize_frames", "to_model_size"]


def to_model_size(image: np.ndarray, model: nn.Module) -> np.ndarray:
    """Area-downsample a start image (H, W, 3) uint8 to the model's resolution."""
    if (image.shape[1], image.shape[0]) == tuple(model.resolution):
        return image
    return cv2.resize(image, tuple(model.resolution), interpolation=cv2.INTER_AREA)


def resize_frames(frames: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Bicubic resize of (T, h, w, 3) uint8 frames to ``size`` (width, height): how every frame
    a trainable model makes reaches the scorers, in the benchmark and in the trainer's rewards alike."""
    if (frames.shape[2], frames.shape[1]) == tuple(size):
        return frames
    return np.stack([cv2.resize(f, tuple(size), interpolation=cv2.INTER_CUBIC) for f in frames])


class TrainableWorldModelAdapter:
    """Streaming wcbench adapter around a :class:`~wctrain.models.base.TrainableWorldModel` (seeded).

    num_inference_steps: Euler steps (default: the model's own schedule); upsample: return
    frames at the start image's size (True) or at the model's (False).
    """

    name = "wctrain"
    fps = 16

    def __init__(self, model: nn.Module, num_inference_steps: int | None = None, upsample: bool = True,
                 latents_per_clip: int = 4):
        self.model = model.eval()
        self.sigmas = self.model.default_sigmas(num_inference_steps)
        self.upsample = upsample
        self.frames_per_clip = FRAMES_PER_LATENT * latents_per_clip
        self.resolution = None if upsample else tuple(self.model.resolution)
        self._history: torch.Tensor | None = None

    @property
    def _device(self) -> torch.device:
        return next(self.model.parameters()).device

    def reset(self, image: np.ndarray, prompt: str, seed: int, info: CaseInfo | None = None) -> np.ndarray:
        """Start from ``image`` (H, W, 3) uint8 on the device the harness names (``info.device``);
        ``prompt`` is unused (the models here take no text)."""
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise ValueError(f"start image must be (H, W, 3) uint8, got {image.shape} {image.dtype}")
        if info is not None and torch.device(info.device) != self._device:
            self.model.to(info.device)
        self._out_size = (image.shape[1], image.shape[0])
        small = to_model_size(image, self.model)
        self._generator = torch.Generator().manual_seed(int(seed))
        with torch.no_grad():
            self._history = self.model.start_latent(frames_to_tensor(small[None]).to(self._device))
        return self._to_output(small[None])[0]

    @torch.no_grad()
    def step(self, actions: list[Action]) -> np.ndarray:
        """Generate ``frames_per_latent * len(actions)`` frames, one latent per action."""
        if self._history is None:
            raise RuntimeError("call reset() before step()")
        if not actions:
            raise ValueError("step() needs at least one action")
        latents = sample_clip(self.model, self._history, actions_to_tensor(actions, self.model.frames_per_latent)[None],
                              self.sigmas, self._generator)
        self._history = torch.cat([self._history, latents], dim=1)[:, -self.model.context_latents:]
        return self._to_output(tensor_to_frames(self.model.decode(latents)[0]))

    def _to_output(self, frames: np.ndarray) -> np.ndarray:
        return resize_frames(frames, self._out_size) if self.upsample else frames


class TinyWMWorldModel(TrainableWorldModelAdapter):
    """``wcbench run --model tinywm``: checkpoint a ``save_pretrained`` folder (default: the
    shipped one), or ``model`` an already loaded TinyWM."""

    name = "tinywm"

    def __init__(self, checkpoint: str | Path | None = None, num_inference_steps: int | None = None,
                 upsample: bool = True, latents_per_clip: int = 4, model: nn.Module | None = None):
        super().__init__(model if model is not None else load_tinywm(checkpoint or "shipped"),
                         num_inference_steps, upsample, latents_per_clip)


class TinyWanWorldModel(TrainableWorldModelAdapter):
    """``wcbench run --model tinywan``: checkpoint a ``save_pretrained`` folder (default: the shipped one)."""

    name = "tinywan"

    def __init__(self, checkpoint: str | Path | None = None, num_inference_steps: int | None = None,
                 upsample: bool = True, latents_per_clip: int = 4):
        super().__init__(load_tinywan(checkpoint or "shipped"), num_inference_steps, upsample, latents_per_clip)


class TrainedWorldModel(TrainableWorldModelAdapter):
    """``wcbench run --model wctrain +model_options.checkpoint=RUN_DIR/final``: any model a
    ``wctrain train`` run exported, rebuilt from its ``wctrain_model.json``."""

    def __init__(self, checkpoint: str | Path, num_inference_steps: int | None = None, upsample: bool = True,
                 latents_per_clip: int = 4):
        super().__init__(load_trained(checkpoint), num_inference_steps, upsample, latents_per_clip)
