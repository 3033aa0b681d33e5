"""A watch on the training loop that warns when the weights stop moving, and says why."""

from __future__ import annotations

import warnings


class UpdateWatch:
    """Warns when the weights stop moving for ``patience`` steps, naming why (see the two messages)."""

    patience = 10

    def __init__(self) -> None:
        self.updated, self.zero_deviation_steps, self.still_steps = False, 0, 0

    def observe(self, deviation: float, grad_norm: float) -> None:
        # a zero deviation is suspicious only right after a step whose gradient moved the weights
        # (at r = 1/2 everywhere the gradient is exactly 0 and nothing moves, rightly); sparse
        # training (only the embedding rows of the labels used) leaves v_theta = v_old exactly on
        # labels not yet updated, so only a long run of zeros is suspicious
        if deviation != 0.0:
            self.zero_deviation_steps = 0
        elif self.updated:
            self.zero_deviation_steps += 1
        self.updated = grad_norm > 0.0
        self.still_steps = 0 if self.updated else self.still_steps + 1
        if self.zero_deviation_steps == self.patience:
            warnings.warn("the current policy's prediction equals the old policy's after updates: "
                          "v_old may be computed from the current weights", stacklevel=2)
        if self.still_steps == self.patience:
            warnings.warn(f"no update for {self.patience} steps: no group's candidates differed in any trained "
                          "reward, so r = 1/2 everywhere and the gradient is 0 (a model that follows every action, "
                          "or none); "
                          "let quality break ties (reward.funcs=[following,quality] reward.weights=[0.9,0.1]) or "
                          "explore more (rl.explore)", stacklevel=2)
