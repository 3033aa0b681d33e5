"""The world-model protocol the harness drives (the registry that finds models by name is
:mod:`wcbench.models.registry`).

A model is driven clip by clip: ``reset(image, prompt, seed, info)`` returns frame 0, then
``step(actions)`` returns the 4 * len(actions) new frames of one clip's latent steps, until
the horizon. Frames may be uint8 or float [0, 1] numpy arrays, torch tensors or PIL images
(:func:`wcbench.models.frames.to_video` converts them, once, in the harness). A model that
makes the whole video from the whole command subclasses :class:`WholeVideoModel`. Models
never see metrics, files or scores: the harness owns those.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from wcbench.core.actions import FRAMES_PER_LATENT, Action, Script
from wcbench.core.camera import StepSizes
from wcbench.models.frames import Frames, to_video


@dataclass(frozen=True)
class CaseInfo:
    """What the harness tells a model about the case it generates.

    ``script`` is the whole command: ``script.step_actions()`` lists one :class:`Action` per
    latent step, and ``step`` receives them clip by clip in that order. ``commanded_poses``
    are the per-frame camera-to-world poses (OpenCV axes: x right, y down, z forward; frame 0
    is the start camera) that the script commands at ``steps`` per frame: the command a
    pose-conditioned model follows, not a measurement of anything. ``K`` is the pinhole
    intrinsics at ``resolution`` for the horizontal field of view ``fov_deg``. ``device``,
    ``rank`` and ``world_size`` say where this process runs (``accelerate launch`` gives each
    rank its own device). ``scene`` is the synthetic scene, for the oracle renderer only.
    """

    id: str
    script: Script
    commanded_poses: np.ndarray  # (num_frames, 4, 4) camera-to-world
    K: np.ndarray  # (3, 3)
    fov_deg: float
    resolution: tuple[int, int]  # (width, height) of the suite
    latents_per_clip: int
    steps: StepSizes
    device: str = "cpu"
    rank: int = 0
    world_size: int = 1
    scene: Any = None

    @property
    def num_frames(self) -> int:
        """Frames of the whole video, start image included (4L-3)."""
        return self.script.num_frames


@runtime_checkable
class WorldModel(Protocol):
    """Streaming world-model interface.

    Optional attributes the harness reads when present: ``name`` (str, for reports),
    ``resolution`` ((width, height) the model generates; the harness resizes the start image
    to it; None or absent: the suite's) and ``fps`` (frames per second of the stored video).
    """

    def reset(self, image: np.ndarray, prompt: str, seed: int, info: CaseInfo) -> Frames:
        """Start a video from ``image`` ((H, W, 3) uint8 RGB); return frame 0."""

    def step(self, actions: list[Action]) -> Frames:
        """Generate the next clip: 4 * len(actions) frames."""


class WholeVideoModel(ABC):
    """Base for models that generate the whole video from the full command up front.

    Implement :meth:`generate`; the base class hands its frames to the harness clip by
    clip and checks that the harness asks for exactly the commanded actions. (Per-clip
    latency is then not meaningful: all the work happens in ``reset``.)
    """

    name = "whole-video"
    resolution: tuple[int, int] | None = None
    fps = 16

    @abstractmethod
    def generate(self, image: np.ndarray, prompt: str, seed: int, info: CaseInfo) -> Frames:
        """All ``info.num_frames`` frames of the case, frame 0 being the start image."""

    def reset(self, image: np.ndarray, prompt: str, seed: int, info: CaseInfo) -> np.ndarray:
        video = to_video(self.generate(image, prompt, seed, info))
        if len(video) != info.num_frames:
            raise ValueError(f"case {info.id}: generate() returned {len(video)} frames, the command needs "
                             f"{info.num_frames} (4L-3 for L latents, the start image included)")
        self._video, self._next = video, 1
        self._pending = info.script.step_actions()
        return video[0]

    def step(self, actions: list[Action]) -> np.ndarray:
        if getattr(self, "_video", None) is None:
            raise RuntimeError("call reset() before step()")
        expected, self._pending = self._pending[:len(actions)], self._pending[len(actions):]
        if list(actions) != expected:
            raise ValueError(f"step() got actions {[a.format() for a in actions]}, but the video was generated "
                             f"for {[a.format() for a in expected]}")
        count = FRAMES_PER_LATENT * len(actions)
        clip = self._video[self._next:self._next + count]
        self._next += count
        return clip
