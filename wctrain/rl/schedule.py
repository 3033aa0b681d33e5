"""Which clip to train at each step (the target-clip schedule), what a rollout costs, and how a
step's selected candidates are split into optimiser steps.

Clip indices are 0-based: target clip ``n`` has the prefix clips ``0 .. n-1`` (generated once by
the old policy) and clip 0's prefix is just the start image. Every function is a pure function of
the global step, so all ranks agree without talking and a resumed run continues the same
sequence.
"""

from __future__ import annotations

from typing import Literal

ScheduleMode = Literal["cycle", "progressive"]
RolloutLevel = Literal["clip", "sample"]


def reachable_clips(step: int, num_clips: int, ramp_steps: int, start_clips: int = 1) -> int:
    """How many leading clips may be targets at ``step`` under the progressive schedule.

    Grows from ``start_clips`` to ``num_clips`` in equal stages over the first ``ramp_steps``
    steps (each of the ``num_clips - start_clips + 1`` horizons gets the same share), then
    stays at the whole horizon.
    """
    if not 1 <= start_clips <= num_clips:
        raise ValueError(f"start_clips must lie in [1, num_clips={num_clips}], got {start_clips}")
    if ramp_steps < 1:
        raise ValueError(f"ramp_steps must be at least 1, got {ramp_steps}")
    stages = num_clips - start_clips + 1
    return min(num_clips, start_clips + (step * stages) // ramp_steps)


def target_clip(step: int, num_clips: int, mode: ScheduleMode = "cycle", ramp_steps: int = 1,
                start_clips: int = 1) -> int:
    """The target clip index at training ``step`` (0-based).

    ``"cycle"``: ``step mod num_clips``, every clip of the horizon in turn. ``"progressive"``:
    cycle over the ``reachable_clips`` leading clips only, so training starts on early clips
    (short prefixes, where following is learnt fastest and errors have not piled up yet) and
    extends toward the horizon, while earlier clips keep being revisited.
    """
    if step < 0:
        raise ValueError(f"step must be non-negative, got {step}")
    if num_clips < 1:
        raise ValueError(f"num_clips must be at least 1, got {num_clips}")
    if mode == "cycle":
        return step % num_clips
    if mode == "progressive":
        return step % reachable_clips(step, num_clips, ramp_steps, start_clips)
    raise ValueError(f"mode must be 'cycle' or 'progressive', got {mode!r}")


def count_clip_generations(target: int, group_size: int, rollout: RolloutLevel = "clip") -> int:
    """Clips generated to get ``group_size`` candidates of clip ``target`` (0-based).

    ``"clip"``: the prefix once plus G candidates, ``target + G``. ``"sample"``: G whole videos
    up to the target, ``G * (target + 1)``. At the last clip of an N-clip horizon that is
    ``N + G - 1`` against ``N * G``.
    """
    if target < 0 or group_size < 1:
        raise ValueError(f"need target >= 0 and group_size >= 1, got {target} and {group_size}")
    if rollout == "clip":
        return target + group_size
    if rollout == "sample":
        return group_size * (target + 1)
    raise ValueError(f"rollout must be 'clip' or 'sample', got {rollout!r}")


def accumulation_plan(num_selected: int, samples_per_step: int | None = None) -> list[range]:
    """The positions (in selection order) of a group's selected candidates that each optimiser step
    of one training step trains on, in the order the steps are taken.

    ``None``: one step over all of them (the default). ``k``: a step every ``k`` selected
    candidates, as the released WorldCompass's ``--gradient_accumulation_steps 2`` over its 6
    best-of-N samples (3 steps); ``k`` must divide ``num_selected`` (no partial last step).
    """
    if num_selected < 1:
        raise ValueError(f"num_selected must be at least 1, got {num_selected}")
    if samples_per_step is None:
        return [range(num_selected)]
    if samples_per_step < 1 or num_selected % samples_per_step:
        raise ValueError(f"rl.grad_accum_samples={samples_per_step} must be at least 1 and divide the "
                         f"{num_selected} selected candidates of a group")
    return [range(start, start + samples_per_step) for start in range(0, num_selected, samples_per_step)]
