"""Score one video against its script: the record fields that ``wcbench score``,
``wcbench run`` and ``wcbench verify`` all write, from one function."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wcbench.actions import Script
from wcbench.scoring.following import FollowingResult, score_following
from wcbench.scoring.quality import QualityResult, clip_vq


@dataclass
class Scorers:
    """The estimator and quality scorer of a run, plus the scoring mode."""

    estimator: Any
    quality: Any
    mode: str = "default"

    def header(self) -> dict:
        """What results.json records about the scorers."""
        thresholds = self.estimator.thresholds
        return {
            "estimator": {"name": self.estimator.name, "version": self.estimator.version,
                          "thresholds": {"translation": thresholds.translation,
                                         "rotation_deg": thresholds.rotation_deg,
                                         "secondary_ratio": thresholds.secondary_ratio}},
            "quality": {"name": self.quality.name, "version": self.quality.version},
            "mode": self.mode,
        }


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def score_frames(frames: np.ndarray, script: Script, scorers: Scorers, *, prompt: str = "",
                 K: np.ndarray | None = None, fov_deg: float | None = None, latents_per_clip: int = 4,
                 commanded_poses: np.ndarray | None = None, true_poses: np.ndarray | None = None,
                 ) -> tuple[dict, FollowingResult, QualityResult]:
    """Score a (T, H, W, 3) video: IF from estimated poses, VQ from the quality scorer.

    ``commanded_poses`` only draw the commanded path in reports; ``true_poses`` are what the
    ``gt`` estimator returns (synthetic scenes). Case VQ is the mean of the clips' VQ, so
    frame 0 (the given start image) never counts. Returns the record fields (if_acc, vq,
    per_clip, labels, paths, ...) and the raw results.
    Raises ValueError when the frame count does not match the script (4L-3).
    """
    if len(frames) != script.num_frames:
        raise ValueError(f"video has {len(frames)} frames but the script ({script.num_steps} latent steps) "
                         f"needs {script.num_frames} (4L-3)")
    options = {"true_poses": true_poses} if getattr(scorers.estimator, "uses_true_poses", False) else {}
    estimate = scorers.estimator.estimate(frames, K=K, fov_deg=fov_deg, **options)
    following = score_following(estimate.poses, script, scorers.estimator.thresholds,
                                latents_per_clip=latents_per_clip, mode=scorers.mode)
    quality = scorers.quality.score(frames, prompt)
    per_clip = following.clip_dicts()
    for clip in per_clip:
        first, last = clip["frames"]
        clip["vq"] = _finite(clip_vq(quality, slice(first, last + 1)))
    record = {
        "if_acc": following.if_acc,
        "if_trans_acc": following.if_trans_acc,
        "if_rot_acc": following.if_rot_acc,
        "vq": _finite(float(np.nanmean([np.nan if c["vq"] is None else c["vq"] for c in per_clip]))),
        "vq_raw": {name: _finite(float(np.nanmean(values))) for name, values in quality.raw.items()},
        "per_clip": per_clip,
        "labels": {"commanded": following.commanded.tolist(), "detected": following.detected.tolist()},
        "paths": {"commanded": None if commanded_poses is None else np.round(commanded_poses[:, :3, 3], 5).tolist(),
                  "estimated": np.round(estimate.poses[:, :3, 3], 5).tolist()},
        "confidence_mean": float(np.mean(estimate.confidence)),
    }
    return record, following, quality


def sha256_file(path: str | Path) -> str:
    """Content hash of a stored video (a file, or every frame file of a folder in order)."""
    path = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    for file in files:
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------- one clip (the trainer's reward)

@dataclass
class ClipView:
    """What one clip is scored on: its frames with the frame before it, the clip's own script,
    and frame 0 of the video (the reference that quality drift is measured against)."""

    frames: np.ndarray  # (1 + 4 * steps, H, W, 3): the last frame before the clip, then the clip
    script: Script      # the clip's latent steps
    reference: np.ndarray  # (H, W, 3) frame 0 of the whole video


def clip_view(video: np.ndarray, script: Script, clip: int, latents_per_clip: int = 4) -> ClipView:
    """Cut clip ``clip`` out of a video (which must reach at least to the clip's end).

    The estimator works on 4-frame latent windows that start at frame 4k, and clip windows
    start at such a frame, so scoring this view gives the same numbers as the clip's entry in
    the full video's ``per_clip`` (``tests/test_rewards.py`` checks the parity).
    """
    from wcbench.actions import clip_step_ranges, script_from_steps

    ranges = clip_step_ranges(script.num_steps, latents_per_clip)
    if not 0 <= clip < len(ranges):
        raise ValueError(f"clip {clip} is outside 0..{len(ranges) - 1} for a {script.num_steps}-step script")
    steps = ranges[clip]
    first = 4 * (steps.start - 1)  # the frame before the clip's first generated frame
    last = 4 * (steps.stop - 1)
    if len(video) <= last:
        raise ValueError(f"video has {len(video)} frames; clip {clip} ends at frame {last}")
    actions = script.step_actions()[steps.start - 1:steps.stop - 1]
    return ClipView(frames=video[first:last + 1], script=script_from_steps(actions), reference=video[0])


def score_clip_following(view: ClipView, scorers: Scorers, fov_deg: float | None = None) -> FollowingResult:
    """IF of one clip view (one clip: all its transitions)."""
    estimate = scorers.estimator.estimate(view.frames, fov_deg=fov_deg)
    return score_following(estimate.poses, view.script, scorers.estimator.thresholds,
                           latents_per_clip=view.script.num_latents + 1, mode=scorers.mode)


def score_clip_quality(view: ClipView, scorers: Scorers, prompt: str = "") -> float:
    """VQ of one clip view: the mean of its generated frames' vq, with drift against frame 0."""
    frames = np.concatenate([view.reference[None], view.frames])
    quality = scorers.quality.score(frames, prompt)
    return float(clip_vq(quality, slice(2, len(frames))))
