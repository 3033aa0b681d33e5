"""HPSv3 preference-model scorers (optional: a CUDA GPU, the ``[hpsv3]`` extra and about 16 GB
of local weights). torch and hpsv3 are imported when a scorer first runs, so that this
module, which ``wcbench.scoring.quality`` registers, imports on a plain install.

HPSv3 (Ma et al. 2025, "HPSv3: Towards Wide-Spectrum Human Preference Score") is a Qwen2-VL-7B
reward model that scores an image against a text prompt; WorldCompass uses it for its
visual-quality rewards. Both scorers drive the ``hpsv3`` package's ``HPSv3RewardInferencer``
(``hpsv3/inference.py``) exactly as it is published, with two things it does not do itself:

- **offline**: the package's config (``hpsv3/config/HPSv3_7B.yaml``) names the base VLM as
  ``Qwen/Qwen2-VL-7B-Instruct``, which ``from_pretrained`` would fetch from the hub (about
  16 GB), and a missing ``checkpoint_path`` makes it download ``HPSv3.safetensors``. Here both
  come from local paths (``base_model_path``, ``checkpoint_path``; or the environment variables
  below; or ``wcbench/conf/quality/hpsv3.yaml``): the shipped config is copied with
  ``model_name_or_path`` pointing at the local base model, ``HF_HUB_OFFLINE=1`` is set (unless
  the caller set it) before the package is imported, and a missing file is an error that says
  what is missing and where to put it. Nothing is ever downloaded.
- **no_grad, batched, per rank**: ``reward()`` builds a graph unless told otherwise (the
  package's ``reward`` has no ``no_grad``), so every call runs under ``torch.no_grad()``;
  frames go in batches of ``batch_size``; ``device="auto"`` puts each process on its own GPU
  (``cuda:$LOCAL_RANK``, as ``accelerate launch`` sets it), not every rank on GPU 0.

Two definitions (docs/quality.md sets them side by side):

- ``hpsv3`` / ``hpsv3-drift`` (this project's): every ``stride``-th frame (4, and the last) is
  scored against the case caption; per-frame vq is the score interpolated between them; the
  drift variant is the signed ``q_t - q_0``.
- ``hpsv3-worldcompass`` (the released WorldCompass reward, ``CompassReward.score_video`` and its
  training launch script): the last frame of every 4-frame chunk is scored against the fixed
  prompt ``QUALITY_PROMPT`` (and, when its weight is not 0, against the caption); the drift is
  ``-|q_c - q_0|`` against the first frame; a chunk's vq is the weighted mean of
  caption score, quality score and drift with the release's weights (0, 0, 1); frames pass
  through a JPEG round trip at PIL's default quality 75, as the release's temporary files do.
  A case's vq is the mean over its last 4 chunks (the release's evaluation); the trainer's
  reward is the release's training form of each clip (:meth:`WorldCompassHPSv3Scorer.score_training_clip`).
"""

from __future__ import annotations

import io
import os
import tempfile
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from PIL import Image

from wcbench.scoring.quality_base import QualityResult, check_frames, interpolate_samples, sample_indices

CHECKPOINT_ENV = "WCBENCH_HPSV3_CHECKPOINT"
BASE_MODEL_ENV = "WCBENCH_HPSV3_BASE_MODEL"
QUALITY_PROMPT = "A high-quality, ultra-detailed and well-structured image."  # the release's fixed prompt
OPTIONS_FILE = Path(__file__).resolve().parents[1] / "conf" / "quality" / "hpsv3.yaml"  # shared by both scorers
_GET_WEIGHTS = ("on a machine with internet access: huggingface-cli download MizzenAI/HPSv3 HPSv3.safetensors "
                "--local-dir DIR; huggingface-cli download Qwen/Qwen2-VL-7B-Instruct --local-dir DIR")


@dataclass(frozen=True)
class HPSv3Config:
    """Where the model lives, where it runs and how frames are fed to it."""

    base_model_path: str | None = None  # local Qwen2-VL-7B-Instruct folder; None: $WCBENCH_HPSV3_BASE_MODEL
    checkpoint_path: str | None = None  # local HPSv3.safetensors; None: $WCBENCH_HPSV3_CHECKPOINT
    device: str = "auto"  # auto: cuda:$LOCAL_RANK when CUDA is available, else cpu
    batch_size: int = 8
    stride: int = 4  # hpsv3 / hpsv3-drift: every k-th frame (and the last), like the paper
    jpeg_quality: int | None = None  # JPEG round trip before scoring (None: frames as they are)
    weights: tuple[float, float, float] = (0.0, 0.0, 1.0)  # hpsv3-worldcompass: caption, quality, drift


@dataclass(frozen=True)
class ModelPaths:
    """The two local paths the model is built from."""

    base_model: Path
    checkpoint: Path


def _setting_hint(name: str, env: str, example: str) -> str:
    return (f"pass quality_options.{name}={example}, set {env}, or write it under options: in "
            f"{OPTIONS_FILE} ({_GET_WEIGHTS})")


def resolve_model_paths(config: HPSv3Config) -> ModelPaths:
    """Local base-model folder and head checkpoint from ``config`` or the environment; a clear
    FileNotFoundError names whichever is missing and where to put it."""
    base = config.base_model_path or os.environ.get(BASE_MODEL_ENV)
    checkpoint = config.checkpoint_path or os.environ.get(CHECKPOINT_ENV)
    if not base:
        raise FileNotFoundError("the HPSv3 scorers need the base VLM (Qwen2-VL-7B-Instruct) in a local folder: "
                                + _setting_hint("base_model_path", BASE_MODEL_ENV, "/models/Qwen2-VL-7B-Instruct"))
    if not checkpoint:
        raise FileNotFoundError("the HPSv3 scorers need the HPSv3 head weights (HPSv3.safetensors) in a local file: "
                                + _setting_hint("checkpoint_path", CHECKPOINT_ENV, "/models/HPSv3.safetensors"))
    base_path, checkpoint_path = Path(base).expanduser(), Path(checkpoint).expanduser()
    if not (base_path / "config.json").is_file():
        raise FileNotFoundError(f"HPSv3 base model: {base_path} is not a model folder (no config.json): it must hold "
                                "Qwen2-VL-7B-Instruct as downloaded from the hub (config.json, tokenizer and processor "
                                "files, *.safetensors); " + _setting_hint("base_model_path", BASE_MODEL_ENV, "DIR"))
    if not checkpoint_path.is_file():
        raise FileNotFoundError(f"HPSv3 head weights not found at {checkpoint_path}: "
                                + _setting_hint("checkpoint_path", CHECKPOINT_ENV, "FILE"))
    return ModelPaths(base_path, checkpoint_path)


def resolve_device(device: str) -> str:
    """``auto``: this process's own GPU (``cuda:$LOCAL_RANK``) when CUDA is available, else cpu."""
    if device != "auto":
        return device
    import torch

    if not torch.cuda.is_available():
        return "cpu"
    return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"


def write_offline_config(package_config: Path, base_model: Path, out_dir: Path) -> Path:
    """A copy of the package's model config whose ``model_name_or_path`` is the local base model."""
    settings = yaml.safe_load(package_config.read_text())
    if not isinstance(settings, dict) or "model_name_or_path" not in settings:
        raise ValueError(f"{package_config}: expected the hpsv3 model config with a model_name_or_path entry")
    settings["model_name_or_path"] = str(base_model)
    path = out_dir / package_config.name
    path.write_text(yaml.safe_dump(settings, sort_keys=False))
    return path


def load_hpsv3_inferencer(config: HPSv3Config) -> Any:
    """Build ``hpsv3.HPSv3RewardInferencer`` from local files only, on this rank's device."""
    paths = resolve_model_paths(config)
    # Set before transformers / huggingface_hub are imported, so nothing reaches for the hub;
    # a caller's own setting wins.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import hpsv3
    except ImportError as err:
        raise ImportError("the HPSv3 scorers need the 'hpsv3' package and its dependencies: "
                          f"pip install 'worldcompass-bench[hpsv3]' (a CUDA machine with torchvision): {err}") from err
    package_config = Path(hpsv3.__file__).parent / "config" / "HPSv3_7B.yaml"
    if not package_config.is_file():
        raise FileNotFoundError(f"{package_config} is missing: reinstall the hpsv3 package")
    with tempfile.TemporaryDirectory(prefix="wcbench-hpsv3-") as config_dir:  # read once, while building
        config_path = write_offline_config(package_config, paths.base_model, Path(config_dir))
        return hpsv3.HPSv3RewardInferencer(config_path=str(config_path), checkpoint_path=str(paths.checkpoint),
                                           device=resolve_device(config.device))


def _jpeg_round_trip(image: Any, quality: int) -> Any:
    """What the release's temporary files do to a frame: PIL JPEG at ``quality``, read back."""
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    buffer.seek(0)
    return Image.open(buffer).convert("RGB")


def _means(rewards: Any, count: int) -> np.ndarray:
    """HPSv3 outputs (mu, sigma) per image; mu is the published score."""
    if hasattr(rewards, "detach"):  # a torch tensor, possibly bf16 on the GPU
        rewards = rewards.detach().float().cpu().numpy()
    return np.asarray(rewards, dtype=np.float64).reshape(count, -1)[:, 0]


class HPSv3Model:
    """The HPSv3 inferencer, built on first use, scoring batches of frames without gradients."""

    def __init__(self, config: HPSv3Config, inferencer: Any = None) -> None:
        self.config = config
        self._inferencer = inferencer  # injected (tests) or built on first use

    def score(self, frames: list[np.ndarray], prompts: list[str]) -> np.ndarray:
        """HPSv3 score (mu) of each (H, W, 3) uint8 frame against its prompt."""
        import torch
        if self._inferencer is None:
            self._inferencer = load_hpsv3_inferencer(self.config)
        images = [Image.fromarray(frame) for frame in frames]
        if self.config.jpeg_quality is not None:
            images = [_jpeg_round_trip(image, self.config.jpeg_quality) for image in images]
        scores = []
        step = self.config.batch_size
        with torch.no_grad():
            for start in range(0, len(images), step):
                batch = images[start:start + step]
                rewards = self._inferencer.reward(image_paths=batch, prompts=prompts[start:start + step])
                scores.append(_means(rewards, len(batch)))
        return np.concatenate(scores) if scores else np.zeros(0)


def build_config(name: str, defaults: dict[str, Any], options: dict[str, Any]) -> HPSv3Config:
    """The scorer's own ``defaults``, then the options file, then ``options``; checked."""
    known = {f.name for f in fields(HPSv3Config)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"{name} scorer: unknown options {unknown}; known: {sorted(known)}")
    merged = {**defaults, **load_quality_options(), **options}
    if "weights" in merged:
        merged["weights"] = tuple(float(w) for w in merged["weights"])
    config = replace(HPSv3Config(), **merged)
    if config.stride < 1 or config.batch_size < 1:
        raise ValueError(f"{name} scorer: stride and batch_size must be >= 1, got {config.stride}, {config.batch_size}")
    if len(config.weights) != 3 or min(config.weights) < 0 or sum(config.weights) <= 0:
        raise ValueError(f"{name} scorer: weights are (caption, quality, drift), >= 0, not all 0; got {config.weights}")
    return config


def load_quality_options(path: Path = OPTIONS_FILE) -> dict[str, Any]:
    """The options set in ``wcbench/conf/quality/hpsv3.yaml`` (its ``options`` mapping; unset
    entries are left out)."""
    if not path.exists():
        return {}
    raw = yaml.safe_load(path.read_text()) or {}
    options = raw.get("options") or {}
    if not isinstance(options, dict):
        raise ValueError(f"{path}: 'options' must be a mapping")
    return {key: value for key, value in options.items() if value is not None}


class HPSv3Scorer:
    """This project's definition: per-frame HPSv3 against the caption (or its drift from frame 0),
    interpolated between every ``stride``-th frame."""

    version = "2"
    higher_is_better = True

    def __init__(self, is_drift: bool = False, inferencer: Any = None, **options: Any) -> None:
        self.is_drift = is_drift
        self.name = "hpsv3-drift" if is_drift else "hpsv3"
        self.config = build_config(self.name, {}, options)
        self.model = HPSv3Model(self.config, inferencer)

    def score(self, frames: np.ndarray, prompt: str = "") -> QualityResult:
        """Score every ``stride``-th frame of ``frames`` (and the last) against ``prompt``."""
        frames = _rgb(check_frames(frames))
        indices = sample_indices(len(frames), self.config.stride)
        sampled = self.model.score([frames[i] for i in indices], [prompt] * len(indices))
        raw = np.full(len(frames), np.nan)
        raw[indices] = sampled
        per_frame = interpolate_samples(len(frames), indices, sampled)
        if self.is_drift:
            per_frame = per_frame - per_frame[0]
        return QualityResult(per_frame=per_frame, raw={"hpsv3": raw})


def chunk_ends(num_frames: int, chunk: int = 4) -> np.ndarray:
    """Indices of the last frame of every ``chunk``-frame chunk, counted back from the last frame
    (a video, or a clip view, always ends on a latent boundary); index 0 is the reference."""
    return np.arange((num_frames - 1) % chunk, num_frames, chunk)


class WorldCompassHPSv3Scorer:
    """The released WorldCompass definition: per 4-frame chunk, HPSv3 of its last frame against
    the fixed quality prompt, drift -|q_c - q_0|, combined with the release's weights.

    Two forms, as the release has two (docs/quality.md):

    - the benchmark (``score``, the release's evaluation ``CompassReward.score_video``): every
      chunk is scored, and a case's vq is the mean over its last ``evaluation_chunks`` (4) chunks
      only, the release's ``hps_drift_score[-4:]``; per-clip vq covers only the frames in that
      window (``None`` for clips before it);
    - the training reward (``score_training_clip``, the release's ``CompassReward.reward``): one
      number per clip from the third frame of each of its latents.
    """

    name = "hpsv3-worldcompass"
    version = "2"  # 2: the case's vq is the mean over its last 4 chunks, as the release evaluates
    higher_is_better = True
    evaluation_chunks = 4

    def __init__(self, inferencer: Any = None, **options: Any) -> None:
        self.config = build_config(self.name, {"jpeg_quality": 75}, options)
        self.model = HPSv3Model(self.config, inferencer)

    def _terms(self, frames: np.ndarray, scored: np.ndarray, prompt: str) -> dict[str, np.ndarray]:
        """Quality, caption (NaN at weight 0) and drift of ``frames[scored]``; ``scored[0]`` must
        be frame 0, the drift's reference q_0."""
        quality = self.model.score([frames[i] for i in scored], [QUALITY_PROMPT] * len(scored))
        caption = (self.model.score([frames[i] for i in scored], [prompt] * len(scored)) if self.config.weights[0] > 0
                   else np.full(len(scored), np.nan))
        return {"quality": quality, "caption": caption, "drift": -np.abs(quality - quality[0])}

    def _combine(self, quality: Any, caption: Any, drift: Any) -> Any:
        """The weighted mean of the three terms with the configured weights (caption only when its
        weight is not 0: it is not computed otherwise)."""
        w_caption, w_quality, w_drift = self.config.weights
        combined = w_quality * quality + w_drift * drift + (w_caption * caption if w_caption > 0 else 0.0)
        return combined / (w_caption + w_quality + w_drift)

    def score(self, frames: np.ndarray, prompt: str = "") -> QualityResult:
        """Chunk scores spread over each chunk's frames; frame 0 is the reference (drift 0)."""
        frames = _rgb(check_frames(frames))
        ends = chunk_ends(len(frames))
        scored = np.unique(np.r_[0, ends])  # frame 0 always: q_0, the drift's reference
        terms = self._terms(frames, scored, prompt)
        chunk_vq = self._combine(terms["quality"], terms["caption"], terms["drift"])
        # Each frame takes the value of the chunk it belongs to: the next scored frame at or after it.
        owner = scored[np.searchsorted(scored, np.arange(len(frames)))]
        position = np.searchsorted(scored, owner)
        raw = {name: np.full(len(frames), np.nan) for name in ("hpsv3_quality", "hpsv3_caption", "hpsv3_drift")}
        for name in ("quality", "caption", "drift"):
            raw[f"hpsv3_{name}"][scored] = terms[name]
        return QualityResult(per_frame=chunk_vq[position], raw=raw)

    def score_training_clip(self, frames: np.ndarray, prompt: str = "") -> float:
        """The release's training reward of one clip. ``frames[0]`` is frame 0 of the video (q_0),
        ``frames[1:]`` the clip view (the frame before the clip, then the clip: 17 frames, or 13
        for clip 0). The view's frames 3, 7, 11, 15 (the third of each latent's four, the
        release's ``images[3::4]``) are scored; each term is their mean, then weighted."""
        frames = _rgb(check_frames(frames))
        scored = np.r_[0, np.arange(4, len(frames), 4)]  # view index 3 is index 4 after frame 0
        if len(scored) < 2:
            raise ValueError(f"a clip view of {len(frames) - 1} frames has no latent to score (it needs 5 or more)")
        terms = self._terms(frames, scored, prompt)
        return float(self._combine(*(terms[name][1:].mean() for name in ("quality", "caption", "drift"))))


def _rgb(frames: np.ndarray) -> np.ndarray:
    return np.repeat(frames[..., None], 3, axis=-1) if frames.ndim == 3 else frames
