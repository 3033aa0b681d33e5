"""HPSv3 preference-model adapter (optional; GPU and 7B weights).

HPSv3 (Ma et al. 2025, "HPSv3: Towards Wide-Spectrum Human Preference Score") is a Qwen2-VL
reward model that scores an image against a text prompt; WorldCompass uses it for its visual-
quality reward. This adapter drives the ``hpsv3`` package's ``HPSv3RewardInferencer``:

- the package is imported lazily, when the first video is scored, so wcbench imports, lists
  and tests it without the package, torch CUDA or weights;
- frames are sampled every ``stride``-th frame (4, as in the paper; the last frame is always
  included) and scored with the case caption as the prompt, in batches;
- the raw score is the mean of HPSv3's output (it predicts a mean and an uncertainty per
  image; the mean is the published score), roughly -5..15, higher is better;
- per-frame vq is the score interpolated linearly between the sampled frames; the drift
  variant reports the score minus the first frame's (0 = as good as the start).

Weights are never downloaded behind the user's back: pass ``checkpoint_path`` (the
``HPSv3.safetensors`` file of the MizzenAI/HPSv3 model repository) or set
``WCBENCH_HPSV3_CHECKPOINT``; ``checkpoint_path="hub"`` lets the package download them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from wcbench.scoring.quality import QualityResult, check_frames, interpolate_samples, sample_indices

CHECKPOINT_ENV = "WCBENCH_HPSV3_CHECKPOINT"


@dataclass(frozen=True)
class HPSv3Config:
    """Where the model lives and how frames are fed to it."""

    checkpoint_path: str | None = None  # HPSv3.safetensors; None: $WCBENCH_HPSV3_CHECKPOINT; "hub": download
    config_path: str | None = None  # model yaml; None: the one the hpsv3 package ships
    device: str = "cuda"
    stride: int = 4  # score every k-th frame (and the last), like the paper
    batch_size: int = 8


def _resolve_checkpoint(path: str | None) -> str | None:
    path = path or os.environ.get(CHECKPOINT_ENV)
    if path is None:
        raise FileNotFoundError(
            "the 'hpsv3' quality scorer needs the HPSv3 weights: pass checkpoint_path=/path/to/HPSv3.safetensors "
            f"(from the MizzenAI/HPSv3 model repository) or set {CHECKPOINT_ENV}; "
            "checkpoint_path='hub' lets the hpsv3 package download them")
    if path == "hub":
        return None
    if not Path(path).is_file():
        raise FileNotFoundError(f"HPSv3 weights not found at {path!r} (checkpoint_path / {CHECKPOINT_ENV}): "
                                "download HPSv3.safetensors from the MizzenAI/HPSv3 model repository")
    return path


def load_hpsv3_inferencer(config: HPSv3Config) -> Any:
    """Build ``hpsv3.HPSv3RewardInferencer`` from ``config``, with errors that say what is missing."""
    try:
        from hpsv3 import HPSv3RewardInferencer
    except ImportError as err:
        raise ImportError("the 'hpsv3' quality scorer needs the 'hpsv3' package (pip install hpsv3; "
                          f"it runs a 7B model on a CUDA GPU): {err}") from err
    checkpoint = _resolve_checkpoint(config.checkpoint_path)
    return HPSv3RewardInferencer(config_path=config.config_path, checkpoint_path=checkpoint,
                                 device=config.device)


def _to_numpy(rewards: Any) -> np.ndarray:
    if hasattr(rewards, "detach"):  # a torch tensor, possibly bf16 on the GPU
        return rewards.detach().float().cpu().numpy().astype(np.float64)
    if isinstance(rewards, (list, tuple)):  # one tensor per image
        return np.stack([_to_numpy(item) for item in rewards])
    return np.asarray(rewards, dtype=np.float64)


class HPSv3Scorer:
    """Per-frame HPSv3 score (or its drift from frame 0), interpolated between sampled frames."""

    version = "1"
    higher_is_better = True

    def __init__(self, is_drift: bool = False, inferencer: Any = None, **config: Any) -> None:
        known = {f.name for f in fields(HPSv3Config)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(f"hpsv3 scorer: unknown options {unknown}; known: {sorted(known)}")
        self.config = replace(HPSv3Config(), **config)
        if self.config.stride < 1 or self.config.batch_size < 1:
            raise ValueError(f"hpsv3 scorer: stride and batch_size must be >= 1, got {self.config}")
        self.is_drift = is_drift
        self.name = "hpsv3-drift" if is_drift else "hpsv3"
        self._inferencer = inferencer  # injected (tests) or built on first use

    def _model(self) -> Any:
        if self._inferencer is None:
            self._inferencer = load_hpsv3_inferencer(self.config)
        return self._inferencer

    def _score_images(self, images: list[np.ndarray], prompt: str) -> np.ndarray:
        from PIL import Image

        model = self._model()
        scores = []
        for start in range(0, len(images), self.config.batch_size):
            batch = [Image.fromarray(image) for image in images[start:start + self.config.batch_size]]
            rewards = _to_numpy(model.reward(prompts=[prompt] * len(batch), image_paths=batch))
            rewards = rewards.reshape(len(batch), -1)  # (n, 2): mean and uncertainty per image
            scores.append(rewards[:, 0])
        return np.concatenate(scores)

    def score(self, frames: np.ndarray, prompt: str = "") -> QualityResult:
        """Score every ``stride``-th frame of ``frames`` against ``prompt`` (the case caption)."""
        frames = check_frames(frames)
        if frames.ndim == 3:
            frames = np.repeat(frames[..., None], 3, axis=-1)
        indices = sample_indices(len(frames), self.config.stride)
        sampled = self._score_images([frames[i] for i in indices], prompt)
        raw = np.full(len(frames), np.nan)
        raw[indices] = sampled
        per_frame = interpolate_samples(len(frames), indices, sampled)
        if self.is_drift:
            per_frame = per_frame - per_frame[0]
        return QualityResult(per_frame=per_frame, raw={"hpsv3": raw})
