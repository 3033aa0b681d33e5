"""The old policy: an EMA shadow of the trained weights, and its decay schedule.

In NFT the "old" policy both makes the rollouts and gives ``v_old`` in the loss. It is an
exponential moving average of the trained weights, ``shadow <- decay * shadow + (1 - decay) *
weights`` after each optimiser step, with a decay that starts at 0 (the old policy is the current
one: fully on-policy while the model changes fast) and ramps up toward ``max_decay`` (a slower,
steadier reference later on), as in DiffusionNFT's ``return_decay``.

Usage in the trainer::

    old = EMA(model, DecaySchedule(max_decay=0.5, ramp=0.001))       # rollouts and v_old
    best = EMA(model, DecaySchedule(max_decay=0.999, ramp=None))     # evaluation checkpoints
    ...
    with torch.no_grad():
        v_old = old.module.velocity(x_t, t, ctx, actions)           # never the trained weights
    loss.backward(); optimizer.step()
    old.update(accelerator.unwrap_model(model)); best.update(accelerator.unwrap_model(model))

The evaluation EMA is just another ``EMA`` with its own (slower, constant) decay; both go into
the checkpoint through ``state_dict`` for an exact resume.

Devices and sharding: the shadow is a full, unsharded copy on the model's device (the old
policy makes rollouts with it, so it must run on its own). An update reads only the trained
parameters (frozen ones equal the shadow from the copy on), so with FSDP it gathers just the
trainable subset (``DTensor.full_tensor()``, a collective every rank takes part in); wrapper
prefixes (``_fsdp_wrapped_module.``, ``_checkpoint_wrapped_module.``, ``_orig_mod.``) are ignored.
For a 5-10 B model post-trained on its action path, the trainable subset is small and the
shadow costs one inference copy of the weights per device.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn


def decay_schedule(step: int, max_decay: float = 0.5, ramp: float | None = 0.001, flat_steps: int = 0,
                   min_decay: float = 0.0) -> float:
    """EMA decay at update ``step`` (0-based): 0 for the first ``flat_steps`` updates, then
    ``min(max_decay, min_decay + ramp * (step - flat_steps))``; ``ramp=None`` jumps straight to
    ``max_decay``.

    The defaults are DiffusionNFT's default (its ``decay_type=1``): 0 at the start, reaching 0.5
    after 500 updates. Its ``decay_type=2`` is ``max_decay=0.999, ramp=0.0075, flat_steps=75``.
    The released WorldCompass uses ``min(0.9, 0.2 + 0.01 s)`` at its training step s, counted
    from 1: ``max_decay=0.9, min_decay=0.2, ramp=0.01, flat_steps=-1`` (update 0 is its step 1).
    """
    if not 0 <= min_decay <= max_decay <= 1:
        raise ValueError(f"decays must satisfy 0 <= min_decay <= max_decay <= 1, got {min_decay}, {max_decay}")
    if ramp is not None and ramp < 0:
        raise ValueError(f"ramp must be non-negative (or None for a constant decay), got {ramp}")
    if step < flat_steps:
        return 0.0
    if ramp is None:
        return max_decay
    return min(max_decay, min_decay + ramp * (step - flat_steps))


@dataclass(frozen=True)
class DecaySchedule:
    """The settings of ``decay_schedule``, as a config record."""

    max_decay: float = 0.5
    ramp: float | None = 0.001
    flat_steps: int = 0
    min_decay: float = 0.0

    def __call__(self, step: int) -> float:
        return decay_schedule(step, self.max_decay, self.ramp, self.flat_steps, self.min_decay)


def build_frozen_copy(model: nn.Module) -> nn.Module:
    """A deep copy of ``model`` in eval mode with ``requires_grad=False`` and no ``.grad``: the
    module that computes ``v_old`` (under ``torch.no_grad()``) and makes rollouts.

    Pass the unwrapped model (``accelerator.unwrap_model``), not a DDP wrapper.
    """
    frozen = copy.deepcopy(model)
    for parameter in frozen.parameters():
        parameter.grad = None
    return frozen.requires_grad_(False).eval()


WRAPPER_PREFIXES = ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module.", "_orig_mod.")


def _named(module: nn.Module, kind: str) -> dict[str, torch.Tensor]:
    """``module``'s parameters or buffers by name, without the prefixes wrappers add."""
    named = {}
    for name, tensor in getattr(module, f"named_{kind}")():
        for prefix in WRAPPER_PREFIXES:
            name = name.replace(prefix, "")
        named[name] = tensor
    return named


def _full(tensor: torch.Tensor) -> torch.Tensor:
    """The whole tensor of a sharded (FSDP2 ``DTensor``) parameter; a plain tensor as it is."""
    return tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor


def _matching(target: nn.Module, source: nn.Module, kind: str) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Pairs ``(target tensor, source tensor)`` of ``kind`` ("parameters" or "buffers"), by name."""
    targets, sources = _named(target, kind), _named(source, kind)
    if targets.keys() != sources.keys():
        missing, extra = sorted(targets.keys() - sources.keys()), sorted(sources.keys() - targets.keys())
        raise ValueError(f"the EMA shadow and the model differ in {kind}: missing {missing[:5]}, extra "
                         f"{extra[:5]} (pass accelerator.unwrap_model(model), not the DDP wrapper)")
    return [(targets[name], sources[name]) for name in targets]


class EMA:
    """An exponential moving average of a module's weights, kept as a frozen module copy.

    ``module`` is the shadow (use it for rollouts and ``v_old``); ``update(model)`` moves it
    toward ``model``'s trained parameters with the scheduled decay; buffers are copied as they
    are (they are not trained). The shadow keeps the model's dtype and device.
    """

    def __init__(self, model: nn.Module, schedule: DecaySchedule = DecaySchedule()) -> None:
        self.schedule = schedule
        self.module = build_frozen_copy(model)
        self.num_updates = 0

    @property
    def next_decay(self) -> float:
        """The decay the next ``update`` will use."""
        return self.schedule(self.num_updates)

    @torch.no_grad()
    def update(self, model: nn.Module, advance: bool = True) -> float:
        """``shadow <- decay * shadow + (1 - decay) * weights``; returns the decay used.

        ``advance=False`` leaves the schedule where it is, so the next update uses this decay
        again: the updates after the several optimiser steps of one training step share its decay
        (the release's gradient accumulation)."""
        decay = self.next_decay
        for shadow, source in _matching(self.module, model, "parameters"):
            if not source.requires_grad:
                continue  # frozen: equal to the shadow since the copy (and not gathered under FSDP)
            source = _full(source.detach())
            if decay == 0.0:
                shadow.copy_(source)  # exact (lerp could round)
            elif decay != 1.0:
                shadow.lerp_(source.to(shadow.dtype), 1.0 - decay)
        for shadow, source in _matching(self.module, model, "buffers"):
            shadow.copy_(_full(source))  # not trained: the model's own value
        self.num_updates += int(advance)
        return decay

    @torch.no_grad()
    def copy_to(self, module: nn.Module) -> None:
        """Write the shadow weights and buffers into ``module`` (same names), e.g. to export."""
        for kind in ("parameters", "buffers"):
            for target, shadow in _matching(module, self.module, kind):
                target.copy_(shadow)

    def state_dict(self) -> dict[str, Any]:
        """Everything an exact resume needs: the shadow, the update count, the schedule."""
        return {"num_updates": self.num_updates, "schedule": asdict(self.schedule),
                "shadow": {name: tensor.clone() for name, tensor in self.module.state_dict().items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from ``state_dict``; a different schedule is an error (the resume would not be
        exact), so change the config back or start a new run."""
        stored = asdict(DecaySchedule(**state["schedule"]))  # a setting the checkpoint lacks: its default
        if stored != asdict(self.schedule):
            raise ValueError(f"the checkpoint's EMA schedule {stored} differs from the config's "
                             f"{asdict(self.schedule)}")
        self.module.load_state_dict(state["shadow"])
        self.num_updates = int(state["num_updates"])
