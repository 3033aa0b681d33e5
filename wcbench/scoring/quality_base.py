"""What every visual-quality scorer shares (the default one in :mod:`wcbench.scoring.quality`,
the HPSv3 ones in :mod:`wcbench.scoring.hpsv3`): the protocol, the per-frame result, the
frame check and the strided frame sampling with interpolation in between."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass
class QualityResult:
    """Per-frame visual quality of one video."""

    per_frame: np.ndarray  # (T,) vq per frame, higher is better, comparable across videos
    raw: dict[str, np.ndarray]  # (T,) raw components under their own names, NaN where not computed


@runtime_checkable
class QualityScorer(Protocol):
    """Scores the visual quality of a video, frame by frame."""

    name: str
    version: str
    higher_is_better: bool  # of the raw main value; vq (``per_frame``) is always higher-is-better

    def score(self, frames: np.ndarray, prompt: str = "") -> QualityResult:
        """(T, H, W, 3) uint8 RGB frames (and the case caption) -> per-frame quality."""


def check_frames(frames: np.ndarray) -> np.ndarray:
    """Validate a video for scoring: (T, H, W, 3) or (T, H, W) uint8 with T >= 1."""
    frames = np.asarray(frames)
    if frames.dtype != np.uint8:
        raise ValueError(f"quality scorers take uint8 frames (0-255), got dtype {frames.dtype}")
    if frames.ndim == 4 and frames.shape[-1] == 1:
        frames = frames[..., 0]
    if not (frames.ndim == 3 or (frames.ndim == 4 and frames.shape[-1] == 3)) or frames.shape[0] < 1:
        raise ValueError(f"quality scorers take (T, H, W, 3) RGB or (T, H, W) gray frames, got {frames.shape}")
    return frames


def interpolate_samples(num_frames: int, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Linear interpolation of values known at sorted frame ``indices`` to all frames."""
    return np.interp(np.arange(num_frames), indices, values)


def sample_indices(num_frames: int, stride: int) -> np.ndarray:
    """Every ``stride``-th frame from frame 0, plus the last frame (so nothing is extrapolated)."""
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    indices = np.arange(0, num_frames, stride)
    if indices[-1] != num_frames - 1:
        indices = np.append(indices, num_frames - 1)
    return indices
