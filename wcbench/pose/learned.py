"""Optional learned pose estimators: Depth Anything 3, HunyuanWorld-Mirror, VGGT.

Each adapter imports its package only when first used and loads weights from a local path
(``weights=PATH`` as an option, else ``options.weights`` in its YAML config); nothing is
downloaded. A missing package or path raises an error that says what to install or where
to put the weights.

By default the models see the frames that bound the latent windows (0, 4, 8, ... and the
last; ``frame_stride=4``), in chunks of ``chunk_size`` that overlap by two frames; each chunk
is re-based on its first frame and its translation scale matched to the previous chunk on the
shared pair, so one video gets one scale. Each window's motion is then spread evenly over its
transitions, exactly as the OpenCV estimator does. ``frame_stride=1`` gives them every frame,
as the released WorldCompass reward does (``interval=1``): four times the frames, so about four
times the model calls, and each transition's own motion. The released reward also gave
WorldMirror no priors (``cond_flags=[0, 0, 0]``): ``use_intrinsics=false``. ``units`` is
``"scene"``: the models' own normalised scale, so their thresholds come from calibration, like
every estimator's.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from wcbench.core.camera import Thresholds
from wcbench.pose.base import (
    PoseEstimate,
    check_frames,
    keyframe_indices,
    load_estimator_config,
    poses_from_keyframes,
    register_estimator,
    resolve_intrinsics,
    thresholds_or_config,
)

_OVERLAP = 2


def import_or_explain(module: str, package: str, how: str) -> Any:
    """Import ``module`` or raise an ImportError that names ``package`` and how to get it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"this pose estimator needs the `{package}` package (import {module!r} failed: {err}). "
                          f"{how}") from err


def c2w_from_w2c(extrinsics: np.ndarray) -> np.ndarray:
    """(N, 3|4, 4) world-to-camera -> (N, 4, 4) camera-to-world."""
    extrinsics = np.asarray(extrinsics, dtype=float)
    full = np.tile(np.eye(4), (len(extrinsics), 1, 1))
    full[:, :3, :] = extrinsics[:, :3, :]
    return np.linalg.inv(full)


def resize_for_patches(images: np.ndarray, width: int, multiple: int) -> np.ndarray:
    """Resize (N, H, W, 3) uint8 to ``width`` wide, height rounded to a multiple of ``multiple``."""
    height = max(multiple, int(round(images.shape[1] * width / images.shape[2] / multiple)) * multiple)
    return np.stack([cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA) for image in images])


def to_unit_tensor(images: np.ndarray):
    """(N, H, W, 3) uint8 -> torch (N, 3, H, W) float in [0, 1], the layout these models take."""
    import torch

    return torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float() / 255.0


def chain_chunks(chunk_poses: list[np.ndarray]) -> np.ndarray:
    """Join per-chunk camera-to-world poses (chunks overlapping by two frames) into one
    trajectory with frame 0 = identity and one translation scale."""
    joined = [np.eye(4)]
    for poses in chunk_poses:
        local = np.linalg.inv(poses[0])[None] @ poses  # re-base on the chunk's first frame
        if len(joined) == 1:
            joined = list(local)
            continue
        anchor = joined[-_OVERLAP]
        known = np.linalg.norm((np.linalg.inv(anchor) @ joined[-1])[:3, 3])
        seen = np.linalg.norm(local[_OVERLAP - 1][:3, 3])
        scale = known / seen if known > 1e-9 and seen > 1e-9 else 1.0
        for pose in local[_OVERLAP:]:
            scaled = pose.copy()
            scaled[:3, 3] *= scale
            joined.append(anchor @ scaled)
    return np.stack(joined)


class FeedForwardPoseEstimator:
    """Shared machinery: keyframes, chunks, scale chaining, spreading over windows."""

    name = "learned"
    version = "1"
    units = "scene"
    package = ""
    install_hint = ""
    weights_hint = ""

    def __init__(self, thresholds: Thresholds | None = None, weights: str | Path | None = None,
                 device: str | None = None, chunk_size: int = 32, process_res: int = 518, frame_stride: int = 4):
        if chunk_size <= _OVERLAP:
            raise ValueError(f"{self.name}: chunk_size must exceed the overlap of {_OVERLAP} frames")
        if frame_stride not in (1, 4):
            raise ValueError(f"{self.name}: frame_stride is 4 (the latent windows' boundaries, the default) or 1 "
                             f"(every frame, as the released WorldCompass reward), got {frame_stride}")
        self.frame_stride = frame_stride
        self.thresholds = thresholds_or_config(self.name, thresholds)
        self.weights = Path(weights) if weights is not None else self._configured_weights()
        self.device = device
        self.chunk_size = chunk_size
        self.process_res = process_res
        self._model = None

    def _configured_weights(self) -> Path | None:
        try:
            weights = (load_estimator_config(self.name).get("options") or {}).get("weights")
        except FileNotFoundError:
            return None
        return Path(weights) if weights else None

    def _weights_path(self) -> Path:
        if self.weights is None:
            raise FileNotFoundError(f"the {self.name} estimator needs local weights: pass weights=PATH or set "
                                    f"options.weights in wcbench/conf/estimator/{self.name}.yaml. {self.weights_hint}")
        if not self.weights.exists():
            raise FileNotFoundError(f"{self.weights}: weights for the {self.name} estimator not found. "
                                    f"{self.weights_hint}")
        return self.weights

    def _device(self) -> str:
        if self.device is None:
            import torch

            self.device = "cuda" if torch.cuda.is_available() else "cpu"
        return self.device

    @property
    def model(self):
        if self._model is None:
            self._model = self._load()
        return self._model

    def estimate(self, frames: np.ndarray, K: np.ndarray | None = None,
                 fov_deg: float | None = None) -> PoseEstimate:
        """Per-frame poses from the model's poses of the window-boundary frames."""
        frames = check_frames(frames)
        if frames.ndim == 3 or frames.shape[3] == 1:
            frames = np.repeat(frames.reshape(frames.shape[:3] + (1,)), 3, axis=3)
        if len(frames) == 1:
            return PoseEstimate(np.eye(4)[None], np.ones(1), self.units)
        height, width = frames.shape[1:3]
        K_full = resolve_intrinsics(width, height, K, fov_deg)
        keys = keyframe_indices(len(frames), self.frame_stride)
        images = np.ascontiguousarray(frames[keys])
        step = self.chunk_size - _OVERLAP
        starts = range(0, max(len(images) - _OVERLAP, 1), step)
        chunks = [self._predict(images[start:start + self.chunk_size], K_full) for start in starts]
        estimate = poses_from_keyframes(len(frames), chain_chunks(chunks), self.frame_stride)
        estimate.units = self.units
        return estimate

    def _load(self):  # pragma: no cover - implemented by subclasses
        raise NotImplementedError

    def _predict(self, images: np.ndarray, K: np.ndarray) -> np.ndarray:  # pragma: no cover
        """Camera-to-world poses (N, 4, 4) of (N, H, W, 3) uint8 RGB images."""
        raise NotImplementedError


class DepthAnything3PoseEstimator(FeedForwardPoseEstimator):
    """Depth Anything 3 (``depth_anything_3``): ``DepthAnything3.from_pretrained(weights)``,
    ``inference(images)`` -> world-to-camera ``extrinsics`` (N, 3, 4)."""

    name = "da3"
    package = "depth_anything_3"
    install_hint = "Install it from https://github.com/ByteDance-Seed/Depth-Anything-3 (pip install -e . in a clone)."
    weights_hint = ("Download a checkpoint folder (config.json + model.safetensors, e.g. depth-anything/DA3-LARGE "
                    "from the Hugging Face hub) and pass its path as weights=PATH.")

    def _load(self):
        api = import_or_explain("depth_anything_3.api", self.package, self.install_hint)
        model = api.DepthAnything3.from_pretrained(str(self._weights_path()))
        model = model.to(self._device())
        model.eval()
        return model

    def _predict(self, images: np.ndarray, K: np.ndarray) -> np.ndarray:
        prediction = self.model.inference(list(images), process_res=self.process_res)
        return c2w_from_w2c(np.asarray(prediction.extrinsics))


class VGGTPoseEstimator(FeedForwardPoseEstimator):
    """VGGT (``vggt``): images (S, 3, H, W) in [0, 1], width 518, sides multiples of 14;
    ``pose_encoding_to_extri_intri`` turns its ``pose_enc`` into world-to-camera extrinsics."""

    name = "vggt"
    package = "vggt"
    install_hint = "Install it from https://github.com/facebookresearch/vggt (pip install -e . in a clone)."
    weights_hint = ("Download facebook/VGGT-1B (a folder for from_pretrained, or its model.pt) and pass the "
                    "path as weights=PATH.")

    def _load(self):
        models = import_or_explain("vggt.models.vggt", self.package, self.install_hint)
        path = self._weights_path()
        if path.is_dir():
            model = models.VGGT.from_pretrained(str(path))
        else:
            import torch

            model = models.VGGT()
            if path.suffix == ".safetensors":
                from safetensors.torch import load_file

                state = load_file(str(path))
            else:
                state = torch.load(str(path), map_location="cpu")
            model.load_state_dict(state)
        model = model.to(self._device())
        model.eval()
        return model

    def _predict(self, images: np.ndarray, K: np.ndarray) -> np.ndarray:
        import torch

        pose_enc = import_or_explain("vggt.utils.pose_enc", self.package, self.install_hint)
        batch = to_unit_tensor(resize_for_patches(images, self.process_res, 14)).to(self._device())
        use_amp = self._device().startswith("cuda")
        with torch.no_grad(), torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_amp):
            predictions = self.model(batch)
        extrinsic, _ = pose_enc.pose_encoding_to_extri_intri(predictions["pose_enc"], batch.shape[-2:])
        return c2w_from_w2c(extrinsic[0].float().cpu().numpy())


class WorldMirrorPoseEstimator(FeedForwardPoseEstimator):
    """HunyuanWorld-Mirror: ``WorldMirror.from_pretrained(weights)``; called with
    ``views={"img": (1, S, 3, H, W) in [0, 1]}`` it returns camera-to-world ``camera_poses``.

    The official code is a repository, not a package: pass ``repo=PATH`` (a clone, put on
    ``sys.path``) and, if your copy differs, ``module=`` the dotted path of the model file.
    The known intrinsics are given to the model as a prior (``use_intrinsics``; the released
    WorldCompass reward gives none: ``use_intrinsics=false``).
    """

    name = "worldmirror"
    package = "HunyuanWorld-Mirror"
    install_hint = ("Clone https://github.com/Tencent-Hunyuan/HunyuanWorld-Mirror, install its requirements and "
                    "pass repo=PATH_TO_CLONE.")
    weights_hint = "Download tencent/HunyuanWorld-Mirror to a folder and pass its path as weights=PATH."

    def __init__(self, thresholds: Thresholds | None = None, repo: str | Path | None = None,
                 module: str = "src.models.models.worldmirror", use_intrinsics: bool = True, **options):
        super().__init__(thresholds, **options)
        self.repo = Path(repo) if repo is not None else None
        self.module = module
        self.use_intrinsics = use_intrinsics

    def _load(self):
        if self.repo is not None:
            if not self.repo.is_dir():
                raise FileNotFoundError(f"{self.repo}: HunyuanWorld-Mirror checkout not found. {self.install_hint}")
            if str(self.repo) not in sys.path:
                sys.path.insert(0, str(self.repo))
        worldmirror = import_or_explain(self.module, self.package, self.install_hint)
        model = worldmirror.WorldMirror.from_pretrained(str(self._weights_path()))
        model = model.to(self._device())
        model.eval()
        return model

    def _predict(self, images: np.ndarray, K: np.ndarray) -> np.ndarray:
        import torch

        resized = resize_for_patches(images, self.process_res, 14)
        views = {"img": to_unit_tensor(resized)[None].to(self._device())}
        condition = [0, 0, 0]  # priors given: pose, depth, intrinsics
        if self.use_intrinsics:
            scale = np.diag([resized.shape[2] / images.shape[2], resized.shape[1] / images.shape[1], 1.0])
            intrinsics = np.repeat((scale @ K)[None, None], len(images), axis=1)
            views["camera_intrinsics"] = torch.from_numpy(intrinsics).float().to(self._device())
            condition[2] = 1
        with torch.no_grad():  # WorldMirror.forward(views, cond_flags=[pose, depth, intrinsics])
            predictions = self.model(views=views, cond_flags=condition)
        return np.asarray(predictions["camera_poses"][0].float().cpu().numpy(), dtype=float)


register_estimator("da3")(DepthAnything3PoseEstimator)
register_estimator("vggt")(VGGTPoseEstimator)
register_estimator("worldmirror")(WorldMirrorPoseEstimator)
