"""The shared skeleton of the adapters for public world models (WorldPlay, Matrix-Game,
Yume / Hunyuan-GameCraft-style text actions).

None of these releases is a library with a stable loading API, so an adapter splits the
work in two:

- the adapter (one module per family, tested) turns the case's command into the family's
  native controls (:mod:`wcbench.core.controls`), calls the pipeline with them and hands its
  frames (any layout :func:`wcbench.models.frames.to_video` reads) to the harness;
- a loader you keep beside your checkout of the model, ``loader=MODULE:FUNCTION``, builds
  the pipeline: ``FUNCTION(weights, device=..., **loader_options)`` returns a callable
  ``pipeline(image=, prompt=, seed=, num_frames=, **controls) -> frames``.
  docs/models.md shows one per family, written against each release's inference script.

The loader's module is imported when the first case starts, on the device the harness
gives this process (``info.device``), and the weights come from a local path: nothing is
downloaded.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any

import numpy as np

from wcbench.models.base import CaseInfo, WholeVideoModel
from wcbench.models.frames import Frames
from wcbench.models.plugin import import_factory


class NativeModel(WholeVideoModel):
    """A public world model driven through a loader (see the module docstring).

    weights: local path of the release's weights (a file or folder); loader: MODULE:FUNCTION;
    fps: frames per second of the stored videos; resolution: the size the model generates,
    ``"832x480"`` or [832, 480] (the harness resizes the start image to it); other options go
    to the loader.
    """

    family = ""

    def __init__(self, weights: str, loader: str, fps: int = 16, resolution: str | list[int] | None = None,
                 **loader_options: Any):
        path = Path(str(weights)).expanduser()
        if not path.exists():
            raise FileNotFoundError(f"{self.family}: no weights at {weights}; download the release's weights once "
                                    "and pass weights=PATH (wcbench downloads nothing)")
        self.name = self.family
        self.weights, self.loader, self.loader_options = path, loader, loader_options
        self.fps = fps
        self.resolution = _size(resolution) if resolution else None
        self._pipeline: Any = None

    def load(self, device: str) -> Any:
        """Import the loader and build the pipeline, once, on ``device``."""
        if self._pipeline is None:
            load_pipeline = import_factory(self.loader)
            self._pipeline = load_pipeline(str(self.weights), device=device, **self.loader_options)
        return self._pipeline

    def generate(self, image: np.ndarray, prompt: str, seed: int, info: CaseInfo) -> Frames:
        pipeline = self.load(info.device)
        return pipeline(image=image, prompt=prompt, seed=seed, num_frames=info.num_frames, **self.controls(info))

    @abstractmethod
    def controls(self, info: CaseInfo) -> dict[str, Any]:
        """The case's command in this family's native form (keyword arguments of the pipeline)."""


def _size(resolution: str | list[int]) -> tuple[int, int]:
    """(width, height) from ``"832x480"`` (as --model-args gives it) or [832, 480]."""
    parts = resolution.lower().split("x") if isinstance(resolution, str) else list(resolution)
    try:
        width, height = (int(part) for part in parts)
    except (TypeError, ValueError):
        raise ValueError(f"resolution {resolution!r}: write WIDTHxHEIGHT, e.g. 832x480") from None
    return width, height
