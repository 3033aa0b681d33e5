"""The synthetic scene pack: procedural scenes of several families, ray-cast from any pose.

Everything follows from a seed, a family and the camera positions the scene must leave free,
so a scene carries its true poses and renders the same pixels every time. The families are
built in :mod:`wcbench.data.scenes.families`, drawn by :mod:`wcbench.data.scenes.render` with textures
from :mod:`wcbench.data.scenes.textures`; this module is the pack's entry point.
"""

from __future__ import annotations

import numpy as np

from wcbench.data.scenes.families import SCENE_FAMILIES, CameraSetup, build_family_scene, camera_setup
from wcbench.data.scenes.render import RENDERER_VERSION, Scene, depth_map, render, render_frames

__all__ = ["SCENE_FAMILIES", "RENDERER_VERSION", "CameraSetup", "Scene", "build_scene", "camera_setup", "depth_map",
           "render", "render_frames"]


def build_scene(seed: int, keep_free: np.ndarray | None = None, clearance: float = 0.9,
                family: str = "room") -> Scene:
    """Build a deterministic scene of ``family`` around camera positions ``keep_free`` (N, 3).

    No object comes within ``clearance`` of any of the positions, so the camera never enters
    an object; rooms enclose the positions with a margin.
    """
    return build_family_scene(family, seed, keep_free, clearance)
