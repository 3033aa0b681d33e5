"""``--model matrix-game``: Matrix-Game 2.0, driven by per-frame keyboard and mouse arrays.

The pipeline receives ``keyboard_condition`` (num_frames, 4) over (forward, back, left,
right) and ``mouse_condition`` (num_frames, 2) as (pitch, yaw), float32 numpy, row f for
frame f (:func:`wcbench.core.controls.matrix_game_arrays`); add a batch axis and move them to
the device in the loader, as the release's inference.py does. ``mouse_value`` is the
per-frame mouse delta in the model's own unit (0.1 in the release's universal benchmark
actions; its Minecraft and Unreal sets used 0.05 and 0.35).

Matrix-Game 2.0's causal generator makes latents in blocks of ``num_frame_per_block`` = 3, so
its latent count must be a multiple of 3; the suites' horizons (32, 64, 96 latents) are not.
The adapter pads the command to the next multiple with the last action held, asks for that
many frames and keeps the case's own: a causal model's earlier frames do not depend on later
blocks, so the scored frames are what an unpadded run would give. ``block_size`` sets the
block (1: no padding).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wcbench.core.actions import FRAMES_PER_LATENT
from wcbench.core.controls import MATRIX_GAME_MOUSE, matrix_game_arrays
from wcbench.models.base import CaseInfo
from wcbench.models.frames import Frames, FrameError, to_video
from wcbench.models.native import NativeModel
from wcbench.models.registry import register_model

MATRIX_GAME_BLOCK = 3  # latents per block of Matrix-Game 2.0's causal generator (its num_frame_per_block)


def padded_latents(num_latents: int, block_size: int) -> int:
    """The smallest multiple of ``block_size`` that holds ``num_latents`` latents."""
    return -(-num_latents // block_size) * block_size


@register_model("matrix-game")
class MatrixGameModel(NativeModel):
    """Matrix-Game through a loader; ``mouse_value``: per-frame mouse delta in the model's unit;
    ``block_size``: latents per generated block (the command is padded to a multiple of it);
    other options as in NativeModel."""
    family = "matrix-game"

    def __init__(self, weights: str, loader: str, mouse_value: float = MATRIX_GAME_MOUSE,
                 block_size: int = MATRIX_GAME_BLOCK, **options: Any):
        super().__init__(weights, loader, **options)
        if int(block_size) < 1:
            raise ValueError(f"matrix-game: block_size is latents per block, at least 1 (1: no padding); "
                             f"got {block_size}")
        self.mouse_value, self.block_size = mouse_value, int(block_size)

    def controls(self, info: CaseInfo) -> dict[str, Any]:
        """The keyboard and mouse rows of the case's frames, then the last action held over the
        frames that pad the video to whole blocks."""
        keyboard, mouse = matrix_game_arrays(info.script, self.mouse_value)
        extra = self._num_frames(info) - info.num_frames
        return {"keyboard_condition": np.concatenate([keyboard, np.repeat(keyboard[-1:], extra, axis=0)]),
                "mouse_condition": np.concatenate([mouse, np.repeat(mouse[-1:], extra, axis=0)])}

    def _num_frames(self, info: CaseInfo) -> int:
        """Frames asked of the model: 4 L - 3 for L latents padded to whole blocks."""
        latents = (info.num_frames + 3) // FRAMES_PER_LATENT
        return FRAMES_PER_LATENT * padded_latents(latents, self.block_size) - 3

    def generate(self, image: np.ndarray, prompt: str, seed: int, info: CaseInfo) -> Frames:
        pipeline = self.load(info.device)
        asked = self._num_frames(info)
        video = to_video(pipeline(image=image, prompt=prompt, seed=seed, num_frames=asked, **self.controls(info)))
        if len(video) != asked:
            raise FrameError(f"matrix-game: asked for {asked} frames ({info.num_frames} padded to whole blocks of "
                             f"{self.block_size} latents), the pipeline returned {len(video)}")
        return video[:info.num_frames]  # the padding blocks come after every scored frame
