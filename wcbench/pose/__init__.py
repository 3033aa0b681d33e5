"""Camera-pose estimators: frames in, per-frame camera-to-world poses (+ confidence) out.

``build_estimator("opencv")`` (default, weight-free, CPU), ``"gt"`` (true poses of synthetic
scenes), ``"da3"``, ``"worldmirror"``, ``"vggt"`` (optional learned models, local weights).
Each estimator carries the thresholds that label its poses, kept in
``wcbench/conf/estimator/<name>.yaml`` and chosen by :mod:`wcbench.pose.calibration`.
"""

from wcbench.pose.base import (
    DEFAULT_ESTIMATOR,
    DEFAULT_FOV_DEG,
    PoseEstimate,
    PoseEstimator,
    available_estimators,
    build_estimator,
    estimator_config_path,
    latent_windows,
    load_estimator_config,
    load_estimator_thresholds,
    register_estimator,
    save_estimator_thresholds,
)

__all__ = [
    "DEFAULT_ESTIMATOR", "DEFAULT_FOV_DEG", "PoseEstimate", "PoseEstimator", "available_estimators",
    "build_estimator", "estimator_config_path", "latent_windows", "load_estimator_config",
    "load_estimator_thresholds", "register_estimator", "save_estimator_thresholds",
]
