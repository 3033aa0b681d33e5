"""``--model worldplay``: WorldPlay / HY-World 1.5, driven by camera poses.

The pipeline receives ``poses``: the WorldPlay pose dict ``{"0": {"extrinsic": 4x4
camera-to-world, "K": 3x3}, ...}``, one entry per latent (latent k at frame 4k), exactly
what ``wcbench export`` writes to pose.json and what the release's ``generate.py --pose``
reads (the older ``--pose_json_path`` flag was removed). Units: scene units per frame and degrees per frame of
the suite (CaseInfo.steps): the built-in suites move 0.05 per frame, 0.2 per latent, while
WorldPlay's own pose strings (``--pose "w-31"``) move 0.08 per latent
(``WORLDPLAY_POSE_STRING_TRANSLATION``). ``translation_per_latent`` rescales the command's
translation to a given length per latent step (0.08: WorldPlay's own scale); rotations are
left as the suite commands them.
"""

from __future__ import annotations

from typing import Any

from wcbench.core.actions import FRAMES_PER_LATENT
from wcbench.core.controls import to_worldplay_json
from wcbench.models.base import CaseInfo
from wcbench.models.native import NativeModel
from wcbench.models.registry import register_model

WORLDPLAY_POSE_STRING_TRANSLATION = 0.08  # per latent, what WorldPlay's own pose strings move


@register_model("worldplay")
class WorldPlayModel(NativeModel):
    """WorldPlay through a loader: weights, loader, fps, resolution and loader options as in
    NativeModel; ``translation_per_latent``: the translation of one latent step in the poses it
    is given (None: the suite's, 4 x its step per frame)."""
    family = "worldplay"

    def __init__(self, weights: str, loader: str, translation_per_latent: float | None = None, **options: Any):
        super().__init__(weights, loader, **options)
        if translation_per_latent is not None and float(translation_per_latent) <= 0:
            raise ValueError(f"worldplay: translation_per_latent must be positive (WorldPlay's own pose strings: "
                             f"{WORLDPLAY_POSE_STRING_TRANSLATION}), got {translation_per_latent}")
        self.translation_per_latent = None if translation_per_latent is None else float(translation_per_latent)

    def controls(self, info: CaseInfo) -> dict[str, Any]:
        poses = info.commanded_poses
        if self.translation_per_latent is not None:
            # every relative translation scales with the camera positions, turns are untouched
            poses = poses.copy()
            poses[:, :3, 3] *= self.translation_per_latent / (FRAMES_PER_LATENT * info.steps.translation)
        return {"poses": to_worldplay_json(poses, info.K)}
