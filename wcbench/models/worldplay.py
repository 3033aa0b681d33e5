"""``--model worldplay``: WorldPlay / HY-World 1.5, driven by camera poses.

The pipeline receives ``poses``: the WorldPlay pose dict ``{"0": {"extrinsic": 4x4
camera-to-world, "K": 3x3}, ...}``, one entry per latent (latent k at frame 4k), exactly
what ``wcbench export`` writes to pose.json and what the release's ``--pose_json_path``
reads. Units: scene units per frame and degrees per frame of the suite (CaseInfo.steps).
"""

from __future__ import annotations

from typing import Any

from wcbench.core.actions import to_worldplay_json
from wcbench.models.base import CaseInfo
from wcbench.models.native import NativeModel
from wcbench.models.registry import register_model


@register_model("worldplay")
class WorldPlayModel(NativeModel):
    """WorldPlay through a loader: weights, loader, fps, resolution and loader options as in NativeModel."""
    family = "worldplay"

    def controls(self, info: CaseInfo) -> dict[str, Any]:
        return {"poses": to_worldplay_json(info.commanded_poses, info.K)}
