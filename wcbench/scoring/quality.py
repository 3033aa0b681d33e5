"""Visual quality (VQ): the one implementation used by the benchmark and by the trainer's reward.

A ``QualityScorer`` turns a video (T, H, W, 3) uint8 RGB into one vq value per frame, always
oriented higher-is-better, plus its raw components under their own names (``raw``; NaN where a
component was not computed). A clip's vq is the mean of its frames' values (``clip_vq``).
Scorers are found by name (``build_quality_scorer``); reports must name the scorer and its
version, and never mix numbers from different scorers. Frame 0 is the reference: the start
image a world model was given (drift is measured against it).

Scorers:
- ``default`` (weight-free, CPU, offline): per-frame vq in (0, 1], a fixed weighted mean of
  bounded terms, each 1 for a flawless frame (constants in ``DefaultVQConfig``, chosen once,
  never per video):
    vq_t = (3 q_sharpness + 2 q_noise + q_blocks + q_flicker + 3 q_drift) / 10
  q_sharpness = 1 - the blur effect of the strongest edges (after a median filter that keeps
  noise from passing for sharpness, and leaving the codec block grid out); q_noise, q_blocks,
  q_flicker and q_drift are 1 / (1 + x / scale) of: the noise, in grey levels, taken as the
  lower of a single-frame estimate (which fine texture fools) and a frame-to-frame one (which
  texture, even aliased texture, does not: ``vq_terms.compute_temporal``); the block-edge
  excess on the 8x8 grid, in grey levels; the brightness jump from the previous frame once
  motion is compensated, in grey levels; and the drift from frame 0: the sharpness lost since
  plus the colour cast (registered log-chromaticity histograms) over ``colour_scale``.
  No term has a dead zone or a ceiling, so the slightest blur, noise or compression scores
  below the clean video, on smooth renders, real footage and pixel-scale texture alike; and
  each term resists the others' damage: blur lowers the measured noise of noisy footage, so
  sharpness weighs more than noise; noise dilutes block edges, so a step counts as one only
  above four times the frame's noise (benchmarks/bench_quality.py prints the orderings,
  docs/quality.md the figures and how the constants were chosen).
- ``default-drift``: static_t - static_0 in [-1, 1] (0 = as good as the first frame), where
  static is the weighted mean of the sharpness, noise and block terms.
- ``hpsv3`` / ``hpsv3-drift`` / ``hpsv3-worldcompass``: the HPSv3 preference model (GPU, 7B
  weights), see ``wcbench.scoring.hpsv3``.

Costs (benchmarks/bench_quality.py): the single-frame terms run at native resolution (blur,
noise and blocks are pixel-scale properties) on every ``spatial_stride``-th frame (and the
last), linearly interpolated in between; the frame-to-frame terms run on every transition
(flow on luma shrunk to at most ``analysis_side`` pixels, pixel matching on full-resolution
tiles).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from wcbench.core.noise import compute_noise_sigma
from wcbench.core.registry import Registry
from wcbench.scoring import vq_terms
from wcbench.scoring.hpsv3 import HPSv3Scorer, WorldCompassHPSv3Scorer
from wcbench.scoring.quality_base import QualityResult, QualityScorer, check_frames, interpolate_samples, sample_indices


# What each stored component (a record's "vq_raw") means, in plain words, for reports; the
# bounded terms (1 = no defect) first, then the measurements they come from.
COMPONENT_NOTES: dict[str, str] = {
    "q_sharpness": "sharpness: 1 minus the blur of the strongest edges; falls as edges soften",
    "q_noise": "noise: falls with grain, pixel noise and codec speckle that change from frame to frame",
    "q_blocks": "compression blocks: falls as an 8x8 codec grid shows through",
    "q_flicker": "flicker: falls with brightness jumps between consecutive frames, motion compensated",
    "q_drift": "drift: falls as sharpness is lost and a colour cast grows since the start image",
    "drift": "sharpness lost since the start image plus its colour cast (0 = as the start)",
    "static": "single-frame quality: the weighted mean of sharpness, noise and blocks",
    "blur_effect": "blur of the strongest edges (0 sharp .. 1 fully blurred)",
    "temporal_noise": "noise new in each frame once motion is matched, grey levels (texture does not count)",
    "spatial_noise": "noise estimated within one frame, grey levels (fine texture reads as noise here)",
    "blockiness": "how much more luma steps stand out on the 8x8 codec grid than off it, grey levels",
    "flicker": "brightness jump from the previous frame after motion compensation, grey levels",
    "colour_shift": "colour cast against the start image, |d log R/G| + |d log B/G|",
    "hpsv3": "HPSv3 preference score against the case caption (higher is better)",
    "hpsv3_quality": "HPSv3 score against the release's fixed quality prompt",
    "hpsv3_caption": "HPSv3 score against the case caption (computed when its weight is not 0)",
    "hpsv3_drift": "minus the distance of the quality score from the start image's (0 = as good as the start)",
}


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


def spatial_indices(num_frames: int, stride: int) -> np.ndarray:
    """Frame 0 (the reference), then every ``stride``-th frame from frame 1 and the last: frames
    1.. are interpolated among themselves, never towards frame 0, which in a clip view is the
    video's start image and not the frame before the clip."""
    if num_frames == 1:
        return np.array([0])
    return np.r_[0, 1 + sample_indices(num_frames - 1, stride)]


def _inverse(values: np.ndarray, scale: float) -> np.ndarray:
    """1 at 0, 1/2 at ``scale``, strictly falling, never 0: for a measure with no natural worst value."""
    return 1.0 / (1.0 + np.abs(values) / scale)


@dataclass(frozen=True)
class DefaultVQConfig:
    """Constants of the default scorer. Changing any of them changes scores: bump ``version``."""

    spatial_stride: int = 4  # single-frame terms on every k-th frame (and the last), linear in between
    noise_scale: float = 8.0  # grey levels of noise that halve q_noise
    flicker_scale: float = 6.0  # grey levels of brightness jump that halve q_flicker
    blocks_scale: float = 1.0  # grey levels of block-edge excess that halve q_blocks
    block_noise_ratio: float = 4.0  # a block edge must stand out by this many times the frame's noise
    colour_scale: float = 0.5  # colour cast from frame 0 (|d log R/G| + |d log B/G|) that counts as drift 1
    static_weights: tuple[float, float, float] = (3.0, 2.0, 1.0)  # sharpness, noise, blocks
    vq_weights: tuple[float, float] = (1.0, 3.0)  # flicker, drift (beside the static weights)
    temporal: vq_terms.TemporalConfig = field(default_factory=vq_terms.TemporalConfig)
    colour: vq_terms.ColourConfig = field(default_factory=vq_terms.ColourConfig)


def _spatial_raw(gray: np.ndarray, indices: np.ndarray, block_noise_ratio: float) -> dict[str, np.ndarray]:
    """Single-frame measurements of frames ``indices``; NaN elsewhere."""
    raw = {name: np.full(len(gray), np.nan) for name in ("blur_effect", "spatial_noise", "blockiness")}
    for i in indices:
        noise = compute_noise_sigma(gray[i])
        raw["blur_effect"][i] = vq_terms.compute_blur_effect(gray[i])
        raw["spatial_noise"][i] = noise
        raw["blockiness"][i] = vq_terms.compute_blockiness(gray[i], min_step=max(1.0, block_noise_ratio * noise))
    return raw


def compute_default_raw(frames: np.ndarray, config: DefaultVQConfig) -> dict[str, np.ndarray]:
    """Raw measurements of the default scorer, one (T,) array each (NaN where not computed)."""
    frames = check_frames(frames)
    gray = vq_terms.to_gray(frames) if frames.ndim == 4 else frames
    flicker, temporal_noise = vq_terms.compute_temporal(gray, config.temporal)
    indices = spatial_indices(len(frames), config.spatial_stride)
    return {**_spatial_raw(gray, indices, config.block_noise_ratio),
            "temporal_noise": temporal_noise, "flicker": np.abs(flicker),
            "colour_shift": vq_terms.compute_colour_shift(frames, indices, config.colour)}


def _filled(values: np.ndarray) -> np.ndarray:
    """NaN entries filled by linear interpolation (strided measurements; frame 0 of a transition
    measure takes the first transition's value); all NaN (a one-frame video) -> zeros."""
    known = np.flatnonzero(~np.isnan(values))
    if known.size == 0:
        return np.zeros(len(values))
    return interpolate_samples(len(values), known, values[known])


def compute_default_terms(raw: dict[str, np.ndarray], config: DefaultVQConfig) -> dict[str, np.ndarray]:
    """Bounded q-terms (1 = no defect), the static quality and the drift from raw measurements."""
    noise = np.minimum(_filled(raw["spatial_noise"]), _filled(raw["temporal_noise"]))
    terms = {
        "q_sharpness": 1.0 - np.clip(_filled(raw["blur_effect"]), 0.0, 1.0),
        "q_noise": _inverse(noise, config.noise_scale),
        "q_blocks": _inverse(np.maximum(0.0, _filled(raw["blockiness"])), config.blocks_scale),
        "q_flicker": _inverse(_filled(raw["flicker"]), config.flicker_scale),
    }
    w = config.static_weights
    terms["static"] = (w[0] * terms["q_sharpness"] + w[1] * terms["q_noise"] + w[2] * terms["q_blocks"]) / sum(w)
    # Drift from frame 0 (the start image): the sharpness lost since, and the colour cast. Block
    # and noise levels of clean content wander with the view, and a uniform blur would calm
    # them (a reward for damage); the frame-to-frame terms need no reference: they compare
    # neighbours.
    lost = np.maximum(0.0, terms["q_sharpness"][0] - terms["q_sharpness"])
    terms["drift"] = lost + _filled(raw["colour_shift"]) / config.colour_scale
    terms["q_drift"] = _inverse(terms["drift"], 1.0)
    return terms


def combine_default_vq(terms: dict[str, np.ndarray], config: DefaultVQConfig, is_drift: bool) -> np.ndarray:
    """Per-frame vq from the q-terms: the weighted mean, or (drift variant) static_t - static_0."""
    if is_drift:
        return terms["static"] - terms["static"][0]
    ws, (wf, wd) = config.static_weights, config.vq_weights
    total = sum(ws) * terms["static"] + wf * terms["q_flicker"] + wd * terms["q_drift"]
    return total / (sum(ws) + wf + wd)


class DefaultQualityScorer:
    """Weight-free VQ: sharpness + noise + blockiness + flicker + drift, in [0, 1].

    With ``is_drift`` the vq is instead the static quality relative to frame 0, in [-1, 1]."""

    version = "2"
    higher_is_better = True  # every raw value is turned into a higher-is-better term

    def __init__(self, is_drift: bool = False, **config: Any) -> None:
        self.is_drift = is_drift
        self.name = "default-drift" if is_drift else "default"
        known = {f.name for f in fields(DefaultVQConfig)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(f"{self.name} scorer: unknown options {unknown}; known: {sorted(known)}")
        self.config = replace(DefaultVQConfig(), **config)
        if self.config.spatial_stride < 1:
            raise ValueError(f"spatial_stride must be >= 1, got {self.config.spatial_stride}")

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
    return HPSv3Scorer(is_drift=False, **options)


@register_quality_scorer("hpsv3-drift")
def _build_hpsv3_drift(**options: Any) -> QualityScorer:
    return HPSv3Scorer(is_drift=True, **options)


@register_quality_scorer("hpsv3-worldcompass")
def _build_hpsv3_worldcompass(**options: Any) -> QualityScorer:
    return WorldCompassHPSv3Scorer(**options)
