"""The ground-truth "estimator": returns the true camera poses a synthetic scene carries.

It ignores the pixels. The harness hands it the true poses per video, either through
``estimate(..., true_poses=CaseWorld.poses)`` (preferred: one estimator serves every case)
or once at construction (``GroundTruthPoseEstimator(poses=...)``). ``uses_true_poses`` tells
the harness to pass them. Units are the scene's (the suite's ``step_translation`` per frame
for a commanded translation), so its thresholds differ from the image-based estimators'.
"""

from __future__ import annotations

import numpy as np

from wcbench.core.camera import Thresholds
from wcbench.pose.base import PoseEstimate, check_frames, register_estimator, relative_to_first, thresholds_or_config


class GroundTruthPoseEstimator:
    """Returns the true per-frame poses, re-expressed so that frame 0 is the identity."""

    name = "gt"
    version = "1"
    units = "scene"
    uses_true_poses = True  # the harness passes ``true_poses=`` to estimate()

    def __init__(self, thresholds: Thresholds | None = None, poses: np.ndarray | None = None):
        self.thresholds = thresholds_or_config(self.name, thresholds)
        self.poses = None if poses is None else np.asarray(poses, dtype=float)

    def estimate(self, frames: np.ndarray, K: np.ndarray | None = None, fov_deg: float | None = None,
                 true_poses: np.ndarray | None = None) -> PoseEstimate:
        """The true poses of ``frames`` (given here or at construction); K and FOV are unused."""
        frames = check_frames(frames)
        poses = self.poses if true_poses is None else np.asarray(true_poses, dtype=float)
        if poses is None:
            raise ValueError("the gt estimator needs the true poses: call estimate(frames, true_poses=poses) "
                             "(synthetic cases carry them as CaseWorld.poses) or build it with poses=...")
        if poses.ndim != 3 or poses.shape[1:] != (4, 4):
            raise ValueError(f"true poses must be (T, 4, 4) camera-to-world, got {poses.shape}")
        if len(poses) != len(frames):
            raise ValueError(f"{len(frames)} frames but {len(poses)} true poses; pass one pose per frame")
        return PoseEstimate(poses=relative_to_first(poses), confidence=np.ones(len(poses)), units=self.units)


register_estimator("gt")(GroundTruthPoseEstimator)
