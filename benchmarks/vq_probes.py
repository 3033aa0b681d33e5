"""Material to check a quality scorer with: the damage it must see, content that tempts it to
read detail as noise, and the orderings it must get right.

- ``damage(frames, kind, level)``: Gaussian blur (sigma), pixel noise (sigma, grey levels), JPEG
  (quality) as ``wcbench.pose.calibration_videos.degrade`` applies them, and brightness flicker (every
  frame shifted by -level, 0 or +level grey levels at random). ``DAMAGE_LEVELS`` lists the
  levels checked.
- ``gradual(frames, kind, step, clip_frames)``: damage that grows clip by clip after the start
  image (frame 0 stays clean, as a world model's given first frame does): blur sigma
  ``step * (k + 1)``, or a colour cast (red gain ``1 + step * (k + 1)``, blue ``1 - ...``).
- ``texture_video``: a pixel-scale texture (random texels, gratings near the pixel pitch,
  sharp-edged patches) panned, turned and zoomed under the camera and sampled to the nearest
  texel, so every frame is sharp to the pixel and aliased: the content that makes single-frame
  measures read detail as noise and blur as an improvement.
- ``damage_orderings`` and ``per_clip_vq``: what ``benchmarks/bench_quality.py`` and the tests
  count: damaged below clean, and per-clip vq falling as damage grows.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from wcbench.pose.calibration_videos import DegradationSettings, degrade
from wcbench.scoring.case import ClipView, Scorers, score_clip_quality

DAMAGE_LEVELS: dict[str, tuple[float, ...]] = {
    "blur": (0.5, 1, 2, 3, 5),  # Gaussian sigma, pixels
    "noise": (2, 5, 10, 20, 40),  # Gaussian sigma, grey levels
    "jpeg": (90, 70, 50, 30, 15, 5),  # JPEG quality
    "flicker": (5, 10, 20),  # grey levels
}
GRADUAL_KINDS = ("blur", "colour")


def damage(frames: np.ndarray, kind: str, level: float, seed: int = 0) -> np.ndarray:
    """``frames`` (T, H, W, 3) uint8 RGB with one kind of damage at ``level``."""
    if kind == "blur":
        return degrade(frames, "blur", settings=DegradationSettings(blur_sigma=float(level)))
    if kind == "noise":
        return degrade(frames, "noise", seed=seed, settings=DegradationSettings(noise_sigma=float(level)))
    if kind == "jpeg":
        return degrade(frames, "jpeg", settings=DegradationSettings(jpeg_quality=int(level)))
    if kind == "flicker":
        offsets = np.random.default_rng(seed).choice([-level, 0.0, level], size=len(frames))
        return np.clip(frames.astype(np.float32) + offsets[:, None, None, None], 0, 255).astype(np.uint8)
    raise ValueError(f"unknown damage {kind!r}; known: {', '.join(DAMAGE_LEVELS)}")


def _cast(frame: np.ndarray, amount: float) -> np.ndarray:
    gains = np.array([1.0 + amount, 1.0, 1.0 - amount], np.float32)
    return np.clip(frame.astype(np.float32) * gains, 0, 255).astype(np.uint8)


def gradual(frames: np.ndarray, kind: str, step: float, clip_frames: int = 4) -> np.ndarray:
    """Frame 0 untouched; frames of clip k (1 + k * clip_frames ...) damaged at ``step * (k + 1)``."""
    if kind not in GRADUAL_KINDS:
        raise ValueError(f"unknown gradual damage {kind!r}; known: {', '.join(GRADUAL_KINDS)}")
    out = frames.copy()
    for t in range(1, len(frames)):
        level = step * ((t - 1) // clip_frames + 1)
        out[t] = (cv2.GaussianBlur(frames[t], (0, 0), level) if kind == "blur" else _cast(frames[t], level))
    return out


def texture_video(seed: int, height: int = 160, width: int = 160, num_frames: int = 13) -> np.ndarray:
    """(T, H, W, 3) uint8 frames of a pixel-scale texture under a moving camera, nearest-texel sampled."""
    rng = np.random.default_rng(seed)
    side = 3 * max(height, width)
    texture = rng.uniform(0, 128, (side, side, 3)).astype(np.float32)  # one random value per texel
    yy, xx = np.mgrid[0:side, 0:side].astype(np.float32)
    for _ in range(3):  # gratings of 2.1-4 texel period: at and just under the pixel pitch
        period, angle = rng.uniform(2.1, 4.0), rng.uniform(0, np.pi)
        wave = np.sin(2 * np.pi * (np.cos(angle) * xx + np.sin(angle) * yy) / period)
        texture += (40 * wave)[..., None] * rng.uniform(0.3, 1.0, 3).astype(np.float32)
    for _ in range(60):  # sharp-edged patches of colour
        top, left = rng.integers(0, side, 2)
        h, w = rng.integers(4, side // 6, 2)
        texture[top:top + h, left:left + w] = 0.5 * texture[top:top + h, left:left + w] + 0.5 * rng.uniform(0, 255, 3)
    texture = np.clip(texture, 0, 255).astype(np.uint8)
    velocity = rng.uniform(-1.5, 1.5, 2)  # texels per frame
    turn, zoom, scale = rng.uniform(-0.4, 0.4), rng.uniform(0.995, 1.005), rng.uniform(0.8, 1.3)
    frames = []
    for t in range(num_frames):
        angle, s = np.deg2rad(turn * t), scale * zoom**t
        # Frame pixel (x, y) -> texel: rotate and scale about the frame centre, then translate.
        m = np.array([[s * np.cos(angle), -s * np.sin(angle), 0.0], [s * np.sin(angle), s * np.cos(angle), 0.0]])
        centre = np.array([side / 2 + velocity[0] * t, side / 2 + velocity[1] * t])
        m[:, 2] = centre - m[:, :2] @ np.array([width / 2, height / 2])
        frames.append(cv2.warpAffine(texture, m, (width, height), flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP))
    return np.stack(frames)


@dataclass(frozen=True)
class Ordering:
    """How one video's damaged versions scored against its clean version."""

    clean: float  # mean vq of the clean video (frames 1..T-1)
    damaged: dict[tuple[str, float], float]  # (kind, level) -> mean vq

    def below_clean(self) -> dict[tuple[str, float], bool]:
        return {key: value < self.clean for key, value in self.damaged.items()}

    def in_order(self, kind: str) -> bool:
        """Every level of ``kind`` below the one before it (clean first)."""
        values = [self.clean] + [v for (k, _), v in self.damaged.items() if k == kind]
        return bool(np.all(np.diff(values) < 0))


def mean_vq(scorer, frames: np.ndarray) -> float:
    """Mean vq of frames 1..T-1 (frame 0, the start image, is never scored)."""
    return float(np.mean(scorer.score(frames).per_frame[1:]))


def damage_orderings(scorer, frames: np.ndarray, levels: dict[str, tuple[float, ...]] = DAMAGE_LEVELS,
                     seed: int = 0) -> Ordering:
    """Score ``frames`` clean and under every damage level."""
    damaged = {(kind, level): mean_vq(scorer, damage(frames, kind, level, seed))
               for kind, kind_levels in levels.items() for level in kind_levels}
    return Ordering(mean_vq(scorer, frames), damaged)


def per_clip_vq(scorer, frames: np.ndarray, clip_frames: int = 4) -> list[float]:
    """VQ of each ``clip_frames``-frame clip after frame 0, scored as the benchmark scores a clip
    (``wcbench.scoring.case.score_clip_quality``: frame 0, the frame before the clip, the clip)."""
    scorers = Scorers(estimator=None, quality=scorer)
    values = []
    for start in range(0, len(frames) - clip_frames, clip_frames):
        view = ClipView(frames=frames[start:start + clip_frames + 1], script=None, reference=frames[0])
        values.append(score_clip_quality(view, scorers)[0])
    return values
