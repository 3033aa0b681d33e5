"""Score one video against its script: the record fields that ``wcbench score``,
``wcbench run`` and ``wcbench verify`` all write, from one function."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wcbench.actions import Script, clip_step_actions, clip_step_ranges, script_from_steps
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
                 commanded_poses: np.ndarray | None = None, true_poses: np.ndarray | None = None) -> dict:
    """Score a (T, H, W, 3) video clip by clip: IF and VQ of every clip, and their means.

    Each clip is scored on its :func:`clip_view` by :func:`score_clip_following` and
    :func:`score_clip_quality`, the functions the trainer's rewards call, so a reward and a
    benchmark per-clip number are equal by construction. Case values are means over clips
    (frame 0, the given start image, is never scored). ``commanded_poses`` only draw the
    commanded path in reports; ``true_poses`` feed the ``gt`` estimator (synthetic scenes).
    Returns the record fields (if_acc, vq, per_clip, labels, paths, ...). Raises ValueError
    when the frame count does not match the script (4L-3).
    """
    if len(frames) != script.num_frames:
        raise ValueError(f"video has {len(frames)} frames but the script ({script.num_steps} latent steps) "
                         f"needs {script.num_frames} (4L-3)")
    per_clip, commanded, detected, raw, confidence = [], [], [], [], []
    path = [np.eye(4)]
    for clip, steps in enumerate(clip_step_ranges(script.num_steps, latents_per_clip)):
        view = clip_view(frames, script, clip, latents_per_clip, true_poses)
        following, estimate = score_clip_following(view, scorers, fov_deg=fov_deg, K=K)
        vq, quality = score_clip_quality(view, scorers, prompt)
        per_clip.append({"clip": clip, "frames": [4 * steps.start - 3, 4 * steps.stop - 4],
                         "if_acc": following.if_acc, "if_trans_acc": following.if_trans_acc,
                         "if_rot_acc": following.if_rot_acc, "vq": _finite(vq)})
        commanded.extend(following.commanded.tolist())
        detected.extend(following.detected.tolist())
        raw.append({name: values[2:] for name, values in quality.raw.items()})
        confidence.append(estimate.confidence[1:])
        path.extend(path[-1] @ pose for pose in estimate.poses[1:])  # chain the clips' relative paths
    raw_names = raw[0].keys() if raw else []
    return {
        "if_acc": float(np.mean([c["if_acc"] for c in per_clip])),
        "if_trans_acc": float(np.mean([c["if_trans_acc"] for c in per_clip])),
        "if_rot_acc": float(np.mean([c["if_rot_acc"] for c in per_clip])),
        "vq": _finite(float(np.nanmean([np.nan if c["vq"] is None else c["vq"] for c in per_clip]))),
        "vq_raw": {name: _finite(float(np.nanmean(np.concatenate([r[name] for r in raw])))) for name in raw_names},
        "per_clip": per_clip,
        "labels": {"commanded": commanded, "detected": detected},
        "paths": {"commanded": None if commanded_poses is None else np.round(commanded_poses[:, :3, 3], 5).tolist(),
                  "estimated": np.round(np.stack(path)[:, :3, 3], 5).tolist()},
        "confidence_mean": float(np.mean(np.concatenate(confidence))),
    }


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
    true_poses: np.ndarray | None = None  # (1 + 4 * steps, 4, 4), for the gt estimator


def clip_view(video: np.ndarray, script: Script, clip: int, latents_per_clip: int = 4,
              true_poses: np.ndarray | None = None) -> ClipView:
    """Cut clip ``clip`` out of a video (which must reach at least to the clip's end).

    A clip view starts at frame 4k, a latent boundary, so the estimator's 4-frame windows
    line up with the clip's latent steps.
    """
    ranges = clip_step_ranges(script.num_steps, latents_per_clip)
    if not 0 <= clip < len(ranges):
        raise ValueError(f"clip {clip} is outside 0..{len(ranges) - 1} for a {script.num_steps}-step script")
    steps = ranges[clip]
    first = 4 * (steps.start - 1)  # the frame before the clip's first generated frame
    last = 4 * (steps.stop - 1)
    if len(video) <= last:
        raise ValueError(f"video has {len(video)} frames; clip {clip} ends at frame {last}")
    actions = clip_step_actions(script, clip, latents_per_clip)
    return ClipView(frames=video[first:last + 1], script=script_from_steps(actions), reference=video[0],
                    true_poses=None if true_poses is None else true_poses[first:last + 1])


def score_clip_following(view: ClipView, scorers: Scorers, fov_deg: float | None = None,
                         K: np.ndarray | None = None) -> tuple[FollowingResult, Any]:
    """IF of one clip view (all its transitions) and the pose estimate it came from."""
    options = {"true_poses": view.true_poses} if getattr(scorers.estimator, "uses_true_poses", False) else {}
    estimate = scorers.estimator.estimate(view.frames, K=K, fov_deg=fov_deg, **options)
    result = score_following(estimate.poses, view.script, scorers.estimator.thresholds,
                             latents_per_clip=view.script.num_latents + 1, mode=scorers.mode)
    return result, estimate


def score_clip_quality(view: ClipView, scorers: Scorers, prompt: str = "") -> tuple[float, QualityResult]:
    """VQ of one clip view: the mean vq of its generated frames, with drift against frame 0.

    The scorer sees frame 0, the frame before the clip, then the clip, so flicker into the
    clip's first frame and drift against the video's start are the whole video's.
    """
    frames = np.concatenate([view.reference[None], view.frames])
    quality = scorers.quality.score(frames, prompt)
    return float(clip_vq(quality, slice(2, len(frames)))), quality
