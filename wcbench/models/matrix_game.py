"""``--model matrix-game``: Matrix-Game 2.0, driven by per-frame keyboard and mouse arrays.

The pipeline receives ``keyboard_condition`` (num_frames, 4) over (forward, back, left,
right) and ``mouse_condition`` (num_frames, 2) as (pitch, yaw), float32 numpy, row f for
frame f (:func:`wcbench.core.controls.matrix_game_arrays`); add a batch axis and move them to
the device in the loader, as the release's inference.py does. ``mouse_value`` is the
per-frame mouse delta in the model's own unit (0.1 in the release's universal benchmark
actions; its Minecraft and Unreal sets used 0.05 and 0.35).
"""

from __future__ import annotations

from typing import Any

from wcbench.core.controls import MATRIX_GAME_MOUSE, matrix_game_arrays
from wcbench.models.base import CaseInfo
from wcbench.models.native import NativeModel
from wcbench.models.registry import register_model


@register_model("matrix-game")
class MatrixGameModel(NativeModel):
    """Matrix-Game through a loader; ``mouse_value``: per-frame mouse delta in the model's unit;
    other options as in NativeModel."""
    family = "matrix-game"

    def __init__(self, weights: str, loader: str, mouse_value: float = MATRIX_GAME_MOUSE, **options: Any):
        super().__init__(weights, loader, **options)
        self.mouse_value = mouse_value

    def controls(self, info: CaseInfo) -> dict[str, Any]:
        keyboard, mouse = matrix_game_arrays(info.script, self.mouse_value)
        return {"keyboard_condition": keyboard, "mouse_condition": mouse}
