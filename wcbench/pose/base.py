"""The pose-estimator protocol, its registry, per-estimator thresholds and shared helpers.

An estimator turns a video into per-frame camera-to-world poses (OpenCV convention, frame 0
= identity) plus a confidence per frame. Each estimator carries the
:class:`~wcbench.core.camera.Thresholds` that label its own poses: translation magnitudes mean
different things per estimator (``units``), so thresholds live beside the estimator in
``wcbench/conf/estimator/<name>.yaml`` and are written there by ``wcbench calibrate``.

Unknown intrinsics: when neither ``K`` nor ``fov_deg`` is given, estimators assume a
horizontal field of view of :data:`DEFAULT_FOV_DEG` (75 deg, the built-in suites' value).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import yaml

from wcbench.core.actions import FRAMES_PER_LATENT
from wcbench.core.camera import Thresholds, intrinsics_from_fov
from wcbench.core.registry import Registry
from wcbench.core.storage import write_text
from wcbench.pose.geometry import rodrigues, rotation_vector

DEFAULT_FOV_DEG = 75.0


@dataclass
class PoseEstimate:
    """An estimator's answer for one video.

    poses: (T, 4, 4) camera-to-world, OpenCV convention, ``poses[0]`` = identity.
    confidence: (T,) in [0, 1]; ``confidence[0]`` = 1; low where tracking failed.
    units: what translation magnitudes mean (``parallax``, ``metric``, ``scene``, ...).
    masked_share: the share of the frame left out as a burnt-in overlay (or by the user's mask).
    mover_share: (T,) per transition, the share of the tracks left out as content moving on its
        own (None: the estimator does not tell).
    undecided: (T,) per transition, True where the still part of the picture was too small to tell
        the camera's motion from what moves on its own: the label there is a guess.
    """

    poses: np.ndarray
    confidence: np.ndarray
    units: str
    masked_share: float = 0.0
    mover_share: np.ndarray | None = None
    undecided: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.poses.ndim != 3 or self.poses.shape[1:] != (4, 4):
            raise ValueError(f"poses must be (T, 4, 4), got {self.poses.shape}")
        if self.confidence.shape != (len(self.poses),):
            raise ValueError(f"confidence must be ({len(self.poses)},), got {self.confidence.shape}")


@runtime_checkable
class PoseEstimator(Protocol):
    """Camera-motion estimator: frames in, poses out."""

    name: str
    version: str  # bump when outputs change (goes into results and the leaderboard)
    thresholds: Thresholds

    def estimate(self, frames: np.ndarray, K: np.ndarray | None = None,
                 fov_deg: float | None = None) -> PoseEstimate:
        """Estimate per-frame poses of (T, H, W, 3) uint8 RGB or (T, H, W) grayscale frames."""


# ---------------------------------------------------------------- frames and intrinsics

def check_frames(frames: np.ndarray) -> np.ndarray:
    """Validate a video: (T, H, W, 3) RGB or (T, H, W) grayscale, T >= 1."""
    frames = np.asarray(frames)
    if frames.ndim not in (3, 4) or (frames.ndim == 4 and frames.shape[3] not in (1, 3)) or len(frames) < 1:
        raise ValueError(f"frames must be (T, H, W, 3) RGB or (T, H, W) grayscale with T >= 1, got {frames.shape}")
    return frames


def resolve_intrinsics(width: int, height: int, K: np.ndarray | None, fov_deg: float | None) -> np.ndarray:
    """``K`` if given (for frames of this size), else a pinhole with horizontal ``fov_deg``
    (default :data:`DEFAULT_FOV_DEG`)."""
    if K is not None:
        K = np.asarray(K, dtype=float)
        if K.shape != (3, 3):
            raise ValueError(f"K must be 3x3, got {K.shape}")
        return K
    return intrinsics_from_fov(width, height, DEFAULT_FOV_DEG if fov_deg is None else float(fov_deg))


def latent_windows(num_frames: int, stride: int = FRAMES_PER_LATENT) -> list[tuple[int, int]]:
    """Latent windows ``(first, last)`` frame pairs: (0, 4), (4, 8), ... (``stride`` frames
    apart; 1: every transition its own window).

    Transitions into frames first+1..last share one commanded action. A video that is not
    4L-3 frames long ends with a shorter window over its remaining frames.
    """
    if stride < 1:
        raise ValueError(f"a window spans at least one transition, got stride {stride}")
    windows = []
    first = 0
    while first < num_frames - 1:
        last = min(first + stride, num_frames - 1)
        windows.append((first, last))
        first = last
    return windows


def spread_window_motion(rel: np.ndarray, steps: int) -> np.ndarray:
    """Split a window's relative pose into ``steps`` equal relative poses whose product is ``rel``.

    Each step turns by the same fraction of the window's rotation (same axis) and moves by a
    translation ``t_s`` with ``sum_j R_s^j t_s = t``.
    """
    R_step = rodrigues(rotation_vector(rel[:3, :3]) / steps)
    accumulated = sum(np.linalg.matrix_power(R_step, j) for j in range(steps))
    step = np.eye(4)
    step[:3, :3] = R_step
    step[:3, 3] = np.linalg.solve(accumulated, rel[:3, 3])
    return step


def poses_from_windows(num_frames: int, windows: list[tuple[int, int]], window_rels: list[np.ndarray],
                       window_confidence: list[float]) -> PoseEstimate:
    """Chain per-window relative poses into per-frame poses, spreading each evenly over its frames."""
    poses = np.tile(np.eye(4), (num_frames, 1, 1))
    confidence = np.ones(num_frames)
    for (first, last), rel, conf in zip(windows, window_rels, window_confidence):
        step = spread_window_motion(rel, last - first)
        for frame in range(first + 1, last + 1):
            poses[frame] = poses[frame - 1] @ step
            confidence[frame] = conf
    return PoseEstimate(poses=poses, confidence=np.clip(confidence, 0.0, 1.0), units="")


def per_transition(num_frames: int, windows: list[tuple[int, int]], values: list) -> np.ndarray:
    """(T,) per frame: each window's value on the frames it leads into; ``values[0]``'s type at frame 0."""
    out = np.zeros(num_frames, dtype=np.asarray(values).dtype if values else float)
    for (first, last), value in zip(windows, values):
        out[first + 1:last + 1] = value
    return out


def poses_from_keyframes(num_frames: int, keyframe_poses: np.ndarray, stride: int = FRAMES_PER_LATENT) -> PoseEstimate:
    """Per-frame poses from camera-to-world poses of the window boundary frames (0, 4, 8, ...
    and the last frame; every ``stride``-th), each window's motion spread evenly over its transitions."""
    windows = latent_windows(num_frames, stride)
    if len(keyframe_poses) != len(windows) + 1:
        raise ValueError(f"{num_frames} frames have {len(windows) + 1} window boundaries, "
                         f"got {len(keyframe_poses)} keyframe poses")
    rels = [np.linalg.inv(keyframe_poses[i]) @ keyframe_poses[i + 1] for i in range(len(windows))]
    return poses_from_windows(num_frames, windows, rels, [1.0] * len(windows))


def keyframe_indices(num_frames: int, stride: int = FRAMES_PER_LATENT) -> list[int]:
    """Frames that bound the latent windows: 0, 4, 8, ... (every ``stride``-th) and the last frame."""
    return [0] + [last for _, last in latent_windows(num_frames, stride)]


def relative_to_first(poses: np.ndarray) -> np.ndarray:
    """Re-express camera-to-world poses so that frame 0 is the identity."""
    poses = np.asarray(poses, dtype=float)
    return np.linalg.inv(poses[0])[None] @ poses


# ---------------------------------------------------------------- thresholds (conf/estimator/*.yaml)

def estimator_config_path(name: str) -> Path:
    return Path(str(resources.files("wcbench"))) / "conf" / "estimator" / f"{name}.yaml"


def load_estimator_config(name: str, path: str | Path | None = None) -> dict[str, Any]:
    """The whole YAML config of an estimator (thresholds, options, calibration notes)."""
    path = Path(path) if path is not None else estimator_config_path(name)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no config for estimator {name!r}; run `wcbench calibrate --estimator "
                                f"{name}` to create it, or pass thresholds=Thresholds(...)")
    raw = yaml.safe_load(path.read_text()) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: an estimator config must be a mapping")
    return raw


def load_estimator_thresholds(name: str, path: str | Path | None = None) -> Thresholds:
    """Thresholds stored in ``conf/estimator/<name>.yaml`` (or ``path``)."""
    raw = load_estimator_config(name, path).get("thresholds")
    where = path or estimator_config_path(name)
    if not isinstance(raw, dict) or not {"translation", "rotation_deg"} <= set(raw):
        raise ValueError(f"{where}: needs a 'thresholds' mapping with translation, rotation_deg "
                         "(and optionally secondary_ratio)")
    return Thresholds(translation=float(raw["translation"]), rotation_deg=float(raw["rotation_deg"]),
                      secondary_ratio=float(raw.get("secondary_ratio", 0.0)))


def save_estimator_thresholds(name: str, thresholds: Thresholds, path: str | Path | None = None,
                              calibration: dict[str, Any] | None = None) -> Path:
    """Write thresholds (and an optional calibration record) into the estimator's YAML,
    keeping its other keys; returns the path written."""
    path = Path(path) if path is not None else estimator_config_path(name)
    raw = load_estimator_config(name, path) if path.exists() else {"name": name}
    raw["thresholds"] = {"translation": float(thresholds.translation),
                         "rotation_deg": float(thresholds.rotation_deg),
                         "secondary_ratio": float(thresholds.secondary_ratio)}
    if calibration is not None:
        raw["calibration"] = calibration
    header = f"# Estimator {name!r}: thresholds that label its poses (written by save_estimator_thresholds).\n"
    write_text(path, header + yaml.safe_dump(raw, sort_keys=False, default_flow_style=None))
    return path


# ---------------------------------------------------------------- registry

DEFAULT_ESTIMATOR = "opencv"
ESTIMATORS: Registry[PoseEstimator] = Registry(
    "pose estimator", builtins=("wcbench.pose.opencv", "wcbench.pose.gt", "wcbench.pose.learned"))
register_estimator = ESTIMATORS.register


def available_estimators() -> list[str]:
    return ESTIMATORS.names()


def build_estimator(name: str = DEFAULT_ESTIMATOR, **options: Any) -> PoseEstimator:
    """Build an estimator by name (``opencv``, ``gt``, ``da3``, ``worldmirror``, ``vggt``).

    ``options`` go to its constructor; ``thresholds=Thresholds(...)`` overrides the YAML ones.
    """
    return ESTIMATORS.build(name, **options)


def thresholds_or_config(name: str, thresholds: Thresholds | None) -> Thresholds:
    """Explicit thresholds, else the estimator's YAML ones."""
    return thresholds if thresholds is not None else load_estimator_thresholds(name)
