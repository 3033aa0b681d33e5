"""Exploration on the action conditioning: an optional, trainer-side capability.

A flow model trained on exact camera motion maps an action to one motion whatever the noise,
so G candidates of a clip move alike and a group has no following signal to learn from. When
a model exposes its action conditioning as ``action_embedding`` (an ``nn.Embedding`` with one
row per wcbench action label, called once per ``velocity`` on labels shaped ``(B, ...)``), the
trainer gives each candidate its own Gaussian offset on that embedding while the target clip
is sampled (``scale`` x the table's std; each frame's offset times its label's factor from
the curriculum, when given). NFT then trains the unperturbed model on the clean samples that
followed better; the loss never runs with an offset. A model without ``action_embedding``
trains on the sampler's noise alone (``rl.sampler_eta``).

The offset is added by a forward hook on the embedding module, so the model needs no
exploration code of its own.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch
from torch import nn

from wcbench.core.actions import NUM_LABELS
from wctrain.rl.curriculum import exploration_scales


@dataclass(frozen=True)
class Exploration:
    """How the target clip's candidates are perturbed: ``scale`` (0: not at all) and, optionally,
    one factor per action label (``label_scale``, ``(NUM_LABELS,)``)."""

    scale: float = 0.0
    label_scale: torch.Tensor | None = None

    def __post_init__(self) -> None:
        if self.label_scale is not None and tuple(self.label_scale.shape) != (NUM_LABELS,):
            raise ValueError(f"label_scale must have one entry per label ({NUM_LABELS}), "
                             f"got {tuple(self.label_scale.shape)}")


def build_exploration(scale: float, focus: float, label_accuracy: np.ndarray) -> Exploration:
    """This step's exploration from the curriculum's running IF per label (``focus`` 0: the same
    offset scale for every label)."""
    label_scale = torch.from_numpy(exploration_scales(label_accuracy, focus)) if focus else None
    return Exploration(scale, label_scale)


def action_embedding(model: nn.Module) -> nn.Embedding | None:
    """The model's exposed action conditioning, or None when it exposes none."""
    table = getattr(model, "action_embedding", None)
    return table if isinstance(table, nn.Embedding) and table.num_embeddings == NUM_LABELS else None


def supports_exploration(model: nn.Module) -> bool:
    """Whether the trainer can explore through ``model``'s action conditioning."""
    return action_embedding(model) is not None


@contextmanager
def exploring(model: nn.Module, exploration: Exploration, batch: int, generator: torch.Generator) -> Iterator[None]:
    """Inside the block, sample ``b`` of each ``velocity`` batch reads its actions through the
    embedding plus offset ``b`` (drawn once, on entry, from ``generator``); nothing happens when
    the scale is 0 or the model exposes no ``action_embedding``."""
    table = action_embedding(model)
    if exploration.scale <= 0 or table is None:
        yield
        return
    std = float(table.weight.detach().std())
    offsets = exploration.scale * std * torch.randn(batch, table.embedding_dim, generator=generator)
    label_scale = exploration.label_scale

    def add_offsets(module: nn.Module, inputs: tuple, output: torch.Tensor) -> torch.Tensor:
        labels = inputs[0]
        if labels.shape[0] != batch:
            raise ValueError(f"exploration was drawn for a batch of {batch} candidates, but "
                             f"{type(model).__name__}.action_embedding was called on {labels.shape[0]}")
        offset = offsets.to(output).reshape(batch, *([1] * (output.dim() - 2)), -1)
        if label_scale is not None:
            offset = offset * label_scale.to(offset)[labels][..., None]
        return output + offset

    handle = table.register_forward_hook(add_offsets)
    try:
        yield
    finally:
        handle.remove()
