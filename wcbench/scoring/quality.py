"""Visual quality (VQ): the one implementation used by the benchmark and by the trainer's reward.

A ``QualityScorer`` turns a video (T, H, W, 3) uint8 RGB into one vq value per frame, always
oriented higher-is-better, plus its raw components under their own names (``raw``; NaN where a
component was not computed). A clip's vq is the mean of its frames' values (``clip_vq``).
Scorers are found by name (``build_quality_scorer``); reports must name the scorer and its
version, and never mix numbers from different scorers.

Scorers:
- ``default`` (weight-free, CPU, offline): per-frame vq in [0, 1], a fixed weighted mean of
  bounded terms (constants in ``DefaultVQConfig``, chosen once, never per video):
    static_t  = 0.25 q_brisque + 0.25 q_sharpness + 0.3 q_noise + 0.2 q_blocks
    vq_t      = 0.7 static_t + 0.15 q_flicker_t + 0.15 (1 - drift_t)
  where q_brisque = clip((100 - BRISQUE) / 100, 0, 1) (the published no-reference IQA model,
  trained on LIVE, shipped by the ``brisque`` package), q_blocks falls linearly from 1 at a
  block-grid share of 0.1 to 0 at 1, and q_sharpness, q_noise, q_flicker are
  exp(-max(0, x - knee) / scale) of the blur effect, the noise sigma and the median warp error
  (see ``vq_terms``). The knees sit at or above what clean renders and real camera footage
  measure, so no term can reward a defect that happens to lower it (blur "denoises" and
  "steadies", noise breaks up block edges); beyond them each term falls strictly.
  drift_t = max(0, static_0 - static_t): the quality lost since the first frame (WorldCompass
  trains on such a drift term; the first frame of a world-model video is the given start image).

  Why these weights: on clean renders BRISQUE is out of its domain (it was trained on camera
  photos, which are never noise-free) and rates a little added noise, or slight blur, as an
  improvement; sharpness measures are fooled by noise too. Noise therefore carries the largest
  weight so that adding grain can never raise vq (a reward-hacking route in RL), and the
  constants were set once on 12 rendered scenes x 5 levels each of blur, noise and JPEG, at
  160 and 320 pixels, so that every visible level ranks below the one before it; the benchmark
  prints the separation. Content still moves static quality by a few hundredths between views
  of the same scene (no no-reference measure is free of content).
- ``default-drift``: static_t - static_0 in [-1, 1] (0 = as good as the first frame).
- ``hpsv3`` / ``hpsv3-drift``: the HPSv3 preference model (GPU, 7B weights), see
  ``wcbench.scoring.hpsv3``.

Costs (see benchmarks/bench_quality.py): BRISQUE dominates and runs at native resolution (it
measures pixel-scale statistics); ``brisque_stride=k`` computes it on every k-th frame (and the
last) and interpolates linearly in between. Flow for the flicker term runs on luma downscaled
to a 256-pixel longer side.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

from wcbench.registry import Registry
from wcbench.scoring import vq_terms
from wcbench.scoring.brisque import compute_brisque_features, load_brisque_model, to_gray


@dataclass
class QualityResult:
    """Per-frame visual quality of one video."""

    per_frame: np.ndarray  # (T,) vq per frame, higher is better, comparable across videos
    raw: dict[str, np.ndarray]  # (T,) raw components under their own names, NaN where not computed


@runtime_checkable
class QualityScorer(Protocol):
    """Scores the visual quality of a video, frame by frame."""

    name: str
    version: str
    higher_is_better: bool  # of the raw main value; vq (``per_frame``) is always higher-is-better

    def score(self, frames: np.ndarray, prompt: str = "") -> QualityResult:
        """(T, H, W, 3) uint8 RGB frames (and the case caption) -> per-frame quality."""


SCORERS: Registry[QualityScorer] = Registry("quality scorer")
register_quality_scorer = SCORERS.register


def available_quality_scorers() -> list[str]:
    """Names ``build_quality_scorer`` accepts."""
    return SCORERS.names()


def build_quality_scorer(name: str = "default", **options: Any) -> QualityScorer:
    """Build a registered quality scorer; ``options`` go to its constructor."""
    return SCORERS.build(name, **options)


def clip_vq(result: QualityResult, frame_slice: slice | tuple[int, int] | np.ndarray) -> float:
    """vq of one clip: the mean of ``per_frame`` over the clip's frames, ignoring NaN.

    ``frame_slice`` is a slice, a (start, stop) pair or an index array. An empty selection is
    an error; a clip whose values are all NaN gives NaN."""
    if isinstance(frame_slice, tuple):
        frame_slice = slice(*frame_slice)
    values = np.asarray(result.per_frame, dtype=np.float64)[frame_slice]
    if values.size == 0:
        raise ValueError(f"clip {frame_slice!r} selects no frames of a {len(result.per_frame)}-frame video")
    if np.all(np.isnan(values)):
        return float("nan")
    return float(np.nanmean(values))


def check_frames(frames: np.ndarray) -> np.ndarray:
    """Validate a video for scoring: (T, H, W, 3) or (T, H, W) uint8 with T >= 1."""
    frames = np.asarray(frames)
    if frames.dtype != np.uint8:
        raise ValueError(f"quality scorers take uint8 frames (0-255), got dtype {frames.dtype}")
    if frames.ndim == 4 and frames.shape[-1] == 1:
        frames = frames[..., 0]
    if not (frames.ndim == 3 or (frames.ndim == 4 and frames.shape[-1] == 3)) or frames.shape[0] < 1:
        raise ValueError(f"quality scorers take (T, H, W, 3) RGB or (T, H, W) gray frames, got {frames.shape}")
    return frames


def interpolate_samples(num_frames: int, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Linear interpolation of values known at sorted frame ``indices`` to all frames."""
    return np.interp(np.arange(num_frames), indices, values)


def sample_indices(num_frames: int, stride: int) -> np.ndarray:
    """Every ``stride``-th frame from frame 0, plus the last frame (so nothing is extrapolated)."""
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    indices = np.arange(0, num_frames, stride)
    if indices[-1] != num_frames - 1:
        indices = np.append(indices, num_frames - 1)
    return indices


def _falloff(values: np.ndarray, knee: float, scale: float) -> np.ndarray:
    """1 up to ``knee``, then exp(-(x - knee) / scale): bounded in (0, 1], strictly falling past the knee."""
    return np.exp(-np.maximum(0.0, values - knee) / scale)


def _linear_falloff(values: np.ndarray, knee: float, zero: float) -> np.ndarray:
    """1 up to ``knee``, falling linearly to 0 at ``zero`` (for measures with a natural worst value)."""
    return np.clip((zero - values) / (zero - knee), 0.0, 1.0)


@dataclass(frozen=True)
class DefaultVQConfig:
    """Constants of the default scorer. Changing any of them changes scores: bump ``version``."""

    brisque_stride: int = 1  # BRISQUE on every k-th frame (and the last), linear in between
    brisque_zero: float = 100.0  # BRISQUE at which q_brisque reaches 0 (0 -> 1)
    blur_knee: float = 0.30  # blur effect of sharp content: renders 0.17-0.30, KITTI 0.34
    blur_scale: float = 0.15
    noise_knee: float = 0.5  # grey levels: clean renders 0.2-0.35, real camera footage 0.8-1.1
    noise_scale: float = 5.0
    blocks_knee: float = 0.10  # block-grid share of clean content: 0.0-0.15 (1 = only blocks)
    flicker_knee: float = 2.0  # median warp error (grey levels): clean renders 0.6-0.9
    flicker_scale: float = 5.0
    static_weights: tuple[float, float, float, float] = (0.25, 0.25, 0.3, 0.2)  # brisque, sharp, noise, blocks
    vq_weights: tuple[float, float, float] = (0.7, 0.15, 0.15)  # static, flicker, drift
    flow: vq_terms.FlowConfig = field(default_factory=vq_terms.FlowConfig)


def _brisque_per_frame(gray: np.ndarray, stride: int) -> np.ndarray:
    """BRISQUE of every ``stride``-th frame (and the last); NaN at the frames skipped."""
    indices = sample_indices(len(gray), stride)
    scores = load_brisque_model().predict(np.stack([compute_brisque_features(gray[i]) for i in indices]))
    raw = np.full(len(gray), np.nan)
    raw[indices] = scores
    return raw


def compute_default_raw(frames: np.ndarray, config: DefaultVQConfig) -> dict[str, np.ndarray]:
    """Raw measurements of the default scorer, one (T,) array each (NaN where not computed)."""
    frames = check_frames(frames)
    gray = to_gray(frames) if frames.ndim == 4 else frames
    return {
        "brisque": _brisque_per_frame(gray, config.brisque_stride),
        "blur_effect": np.array([vq_terms.compute_blur_effect(frame) for frame in gray]),
        "noise_sigma": np.array([vq_terms.compute_noise_sigma(frame) for frame in gray]),
        "blockiness": np.array([vq_terms.compute_blockiness(frame) for frame in gray]),
        "warp_error": vq_terms.compute_warp_error(gray, config.flow),
    }


def compute_default_terms(raw: dict[str, np.ndarray], config: DefaultVQConfig) -> dict[str, np.ndarray]:
    """Bounded q-terms (1 = no defect), the static quality and the drift from raw measurements."""
    num_frames = len(raw["brisque"])
    known = np.flatnonzero(~np.isnan(raw["brisque"]))
    brisque = interpolate_samples(num_frames, known, raw["brisque"][known])
    # Frame 0 has no predecessor: it borrows the first transition's flicker (a one-frame video
    # has nothing to flicker).
    warp = raw["warp_error"].copy()
    warp[0] = warp[1] if num_frames > 1 else 0.0
    terms = {
        "q_brisque": _linear_falloff(brisque, 0.0, config.brisque_zero),
        "q_sharpness": _falloff(raw["blur_effect"], config.blur_knee, config.blur_scale),
        "q_noise": _falloff(raw["noise_sigma"], config.noise_knee, config.noise_scale),
        "q_blocks": _linear_falloff(raw["blockiness"], config.blocks_knee, 1.0),
        "q_flicker": _falloff(warp, config.flicker_knee, config.flicker_scale),
    }
    w = config.static_weights
    terms["static"] = (w[0] * terms["q_brisque"] + w[1] * terms["q_sharpness"]
                       + w[2] * terms["q_noise"] + w[3] * terms["q_blocks"]) / sum(w)
    terms["drift"] = np.maximum(0.0, terms["static"][0] - terms["static"])
    return terms


def combine_default_vq(terms: dict[str, np.ndarray], config: DefaultVQConfig, is_drift: bool) -> np.ndarray:
    """Per-frame vq from the q-terms: the weighted mean, or (drift variant) static_t - static_0."""
    if is_drift:
        return terms["static"] - terms["static"][0]
    w = config.vq_weights
    return (w[0] * terms["static"] + w[1] * terms["q_flicker"] + w[2] * (1.0 - terms["drift"])) / sum(w)


class DefaultQualityScorer:
    """Weight-free VQ: BRISQUE + sharpness + noise + blockiness + flicker + drift, in [0, 1].

    With ``is_drift`` the vq is instead the static quality relative to frame 0, in [-1, 1]."""

    version = "1"
    higher_is_better = False  # the raw main value is BRISQUE (lower is better)

    def __init__(self, is_drift: bool = False, **config: Any) -> None:
        self.is_drift = is_drift
        self.name = "default-drift" if is_drift else "default"
        known = {f.name for f in fields(DefaultVQConfig)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(f"{self.name} scorer: unknown options {unknown}; known: {sorted(known)}")
        self.config = replace(DefaultVQConfig(), **config)
        if self.config.brisque_stride < 1:
            raise ValueError(f"brisque_stride must be >= 1, got {self.config.brisque_stride}")

    def score(self, frames: np.ndarray, prompt: str = "") -> QualityResult:
        """Per-frame vq of ``frames``; ``prompt`` is not used (the default is prompt-free)."""
        raw = compute_default_raw(frames, self.config)
        terms = compute_default_terms(raw, self.config)
        per_frame = combine_default_vq(terms, self.config, self.is_drift)
        return QualityResult(per_frame=per_frame, raw={**raw, **terms})


@register_quality_scorer("default")
def _build_default(**options: Any) -> QualityScorer:
    return DefaultQualityScorer(is_drift=False, **options)


@register_quality_scorer("default-drift")
def _build_default_drift(**options: Any) -> QualityScorer:
    return DefaultQualityScorer(is_drift=True, **options)


@register_quality_scorer("hpsv3")
def _build_hpsv3(**options: Any) -> QualityScorer:
    from wcbench.scoring.hpsv3 import HPSv3Scorer  # the module itself imports hpsv3 lazily

    return HPSv3Scorer(is_drift=False, **options)


@register_quality_scorer("hpsv3-drift")
def _build_hpsv3_drift(**options: Any) -> QualityScorer:
    from wcbench.scoring.hpsv3 import HPSv3Scorer

    return HPSv3Scorer(is_drift=True, **options)


@register_quality_scorer("hpsv3-worldcompass")
def _build_hpsv3_worldcompass(**options: Any) -> QualityScorer:
    from wcbench.scoring.hpsv3 import WorldCompassHPSv3Scorer

    return WorldCompassHPSv3Scorer(**options)
