"""The world-model protocol the harness drives, and the registry that finds models by name.

A model is driven clip by clip: ``reset(image, prompt, seed, info)`` returns frame 0, then
``step(actions)`` returns the 4 * len(actions) new frames commanded by one clip's latent
steps, until the horizon. Frames are (T, H, W, 3) uint8 RGB. Models never see metrics,
files or ranks: the harness owns those.

Models are found by name in one registry fed by ``@register_model`` and by the
``wcbench.models`` entry-point group; ``videos:DIR`` and ``package.module:Factory`` specs
are resolved here too.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from wcbench.actions import Action, StepSizes
from wcbench.registry import Registry, check_options


@dataclass
class CaseInfo:
    """What the harness tells a model about the case it is generating.

    Real models need only ``id`` (to name things) and the geometry; ``scene`` and
    ``poses`` are privileged ground truth that only the oracle uses.
    """

    id: str
    num_frames: int
    resolution: tuple[int, int]  # (width, height) of the suite
    K: np.ndarray
    fov_deg: float
    latents_per_clip: int
    steps: StepSizes
    scene: Any = None
    poses: np.ndarray | None = None


@runtime_checkable
class WorldModel(Protocol):
    """Streaming world-model interface."""

    name: str
    frames_per_clip: int  # new frames of a full clip (4 per latent step)
    resolution: tuple[int, int] | None  # (width, height) it generates; None: the suite's
    fps: int

    def reset(self, image: np.ndarray, prompt: str, seed: int, info: CaseInfo) -> np.ndarray:
        """Start a video from ``image``; return frame 0 as (H, W, 3) uint8."""

    def step(self, actions: list[Action]) -> np.ndarray:
        """Generate the next clip: (4 * len(actions), H, W, 3) uint8 frames."""


ModelFactory = Callable[..., WorldModel]
MODELS: Registry[WorldModel] = Registry("model", builtins=("wcbench.models.oracle", "wcbench.models.videos"))
register_model = MODELS.register


def _load_entry_points() -> None:
    for entry in entry_points(group="wcbench.models"):
        MODELS.add_if_absent(entry.name, entry.load())


def available_models() -> list[str]:
    _load_entry_points()
    return MODELS.names()


def _import_factory(spec: str) -> ModelFactory:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"model {spec!r}: cannot import module {module_name!r}: {err}") from err
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"model {spec!r}: module {module_name!r} has no attribute {attr!r}") from None


def build_model(spec: str, **options: Any) -> WorldModel:
    """Build a model from a spec: a registered name (``oracle``, ``oracle-mirror``, ``tinywm``),
    ``videos:DIR`` or ``package.module:Factory``. ``options`` go to the factory."""
    if spec.startswith("videos:"):
        from wcbench.models.videos import VideoFolderModel

        check_options(f"model {spec!r}", VideoFolderModel, options, skip=("folder",))
        return VideoFolderModel(spec.split(":", 1)[1], **options)
    if ":" in spec:
        factory = _import_factory(spec)
    else:
        _load_entry_points()
        factory = MODELS.get(spec, hint="; or give videos:DIR or package.module:Factory")
    check_options(f"model {spec!r}", factory, options)
    model = factory(**options)
    missing = [attr for attr in ("name", "frames_per_clip", "resolution", "fps", "reset", "step")
               if not hasattr(model, attr)]
    if missing:
        raise TypeError(f"model {spec!r} does not implement the WorldModel protocol: missing {missing}")
    return model
