"""Score one video against its script: the record fields that ``wcbench score``,
``wcbench run`` and ``wcbench verify`` all write, from one streaming scorer (:class:`CaseScorer`)."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wcbench.core.actions import Script, clip_step_actions, clip_step_ranges, script_from_steps
from wcbench.pose.overlay import UserMask
from wcbench.scoring.following import COMPAT_MODE, FollowingResult, compat_fine_action, score_following
from wcbench.scoring.quality import clip_vq
from wcbench.scoring.quality_base import QualityResult


@dataclass
class Scorers:
    """The estimator and quality scorer of a run, plus the scoring mode and the options the
    two were built with (``{"estimator": {...}, "quality": {...}}``)."""

    estimator: Any
    quality: Any
    mode: str = "default"
    options: dict = field(default_factory=dict)

    def header(self) -> dict:
        """What results.json records about the scorers (options only where some were given,
        so that results made before options were recorded keep their config hash)."""
        thresholds = self.estimator.thresholds
        header = {
            "estimator": {"name": self.estimator.name, "version": self.estimator.version,
                          "thresholds": {"translation": thresholds.translation,
                                         "rotation_deg": thresholds.rotation_deg,
                                         "secondary_ratio": thresholds.secondary_ratio}},
            "quality": {"name": self.quality.name, "version": self.quality.version},
            "mode": self.mode,
        }
        for key in ("estimator", "quality"):
            if self.options.get(key):
                header[key]["options"] = dict(self.options[key])
        return header


def _finite(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


MIN_SIDE = 16  # px: smaller frames leave the noise and blur estimates without a single 8x8 tile to measure


class UnscorableVideo(ValueError):
    """A video no scorer can measure (frames under :data:`MIN_SIDE` px a side, not colour
    frames, or every frame one flat colour): its case fails with this message, the run goes on."""


def frame_size_problem(frame: np.ndarray) -> str | None:
    """Why frames shaped like ``frame`` (H, W, 3) cannot be scored (None: they can)."""
    if frame.ndim != 3 or frame.shape[2] != 3:
        return f"frames are shaped {frame.shape}, not (H, W, 3)"
    height, width = frame.shape[:2]
    if min(height, width) < MIN_SIDE:
        return f"frames are {width}x{height} px; scoring needs at least {MIN_SIDE} px a side"
    return None


def frame_count_error(num_frames: int, script: Script) -> str:
    """The message for a video whose length does not fit its script."""
    return (f"video has {num_frames} frames but the script ({script.num_steps} latent steps) "
            f"needs {script.num_frames} (4L-3)")


class CaseScorer:
    """Scores one video against its script clip by clip, as its frames arrive.

    Feed frames in any chunks with :meth:`add` (a clip's worth from a model, or single frames
    from a decoder); each clip is scored as soon as its last frame is in, and only the frames
    of the clip being filled (plus frame 0, the drift reference) are held, so memory does not
    grow with the video's length. :meth:`finish` returns the record fields.

    Each clip is scored on its :class:`ClipView` by :func:`score_clip_following` and
    :func:`score_clip_quality`, the functions the trainer's rewards call, so a reward and a
    benchmark per-clip number are equal by construction. The two run side by side, quality in
    a second thread (they share nothing, and OpenCV and numpy release the GIL), so on two cores
    a clip takes about as long as its camera estimate alone. Case values are means over clips
    (frame 0, the given start image, is never scored). ``true_poses`` (per frame, indexable;
    it may still be growing while frames arrive) feed the ``gt`` estimator.
    """

    def __init__(self, script: Script, scorers: Scorers, *, prompt: str = "", K: np.ndarray | None = None,
                 fov_deg: float | None = None, latents_per_clip: int = 4, true_poses: Any = None,
                 mask: np.ndarray | UserMask | None = None):
        self.script, self.scorers, self.prompt = script, scorers, prompt
        self.K, self.fov_deg, self.latents_per_clip = K, fov_deg, latents_per_clip
        self.true_poses = true_poses
        self.mask = mask  # (H, W) bool, or a UserMask made into pixels at the first frame: left out of tracking
        self._ranges = clip_step_ranges(script.num_steps, latents_per_clip)
        self._reference: np.ndarray | None = None
        self._pending: list[np.ndarray] = []  # frames from the current clip's first (the one before it) on
        self._first = 0  # video index of _pending[0]
        self.num_frames = 0
        self._per_clip: list[dict] = []
        self._commanded: list[int] = []
        self._detected: list[int] = []
        self._raw: list[dict] = []
        self._window_vq: list[np.ndarray] = []  # per-frame vq inside the scorer's evaluation window
        self._confidence: list[np.ndarray] = []
        self._masked: list[float] = []
        self._movers: list[np.ndarray] = []
        self._undecided: list[np.ndarray] = []
        self._path = [np.eye(4)]
        self._is_flat = True  # every frame so far one colour: nothing to track or judge

    def add(self, frames: np.ndarray) -> None:
        """Append (T, H, W, 3) frames; scores every clip they complete. Frames past the
        script's end are counted (for the error :meth:`finish` raises) but not kept."""
        frames = np.asarray(frames)
        if frames.ndim != 4:
            raise ValueError(f"expected (T, H, W, 3) frames, got {frames.shape}")
        room = max(0, self.script.num_frames - self.num_frames)
        kept = frames[:room]
        self.num_frames += len(frames)
        if len(kept) == 0:
            return
        if self._reference is None:
            problem = frame_size_problem(kept[0])
            if problem:  # found at the first frame, before any estimator meets it
                raise UnscorableVideo(problem)
            self._reference = kept[0].copy()  # not a view: it would pin its whole chunk
            if isinstance(self.mask, UserMask):
                self.mask = self.mask.for_size(kept.shape[2], kept.shape[1])
        self._is_flat = self._is_flat and all(frame.min() == frame.max() for frame in kept)
        self._pending.extend(kept)
        while len(self._per_clip) < len(self._ranges):
            last = 4 * (self._ranges[len(self._per_clip)].stop - 1)
            if self._first + len(self._pending) <= last:
                break
            self._score_clip(last)

    def _score_clip(self, last: int) -> None:
        clip = len(self._per_clip)
        steps = self._ranges[clip]
        count = last - self._first + 1
        poses = None if self.true_poses is None else np.asarray(self.true_poses[self._first:last + 1])
        view = ClipView(frames=np.stack(self._pending[:count]),
                        script=script_from_steps(clip_step_actions(self.script, clip, self.latents_per_clip)),
                        reference=self._reference, true_poses=poses)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="wcbench-quality") as pool:
            quality_job = pool.submit(score_clip_quality, view, self.scorers, self.prompt)
            following, estimate = score_clip_following(view, self.scorers, fov_deg=self.fov_deg, K=self.K,
                                                       mask=self.mask)
            vq, quality = quality_job.result()
        vq = self._windowed_vq(vq, quality, last)
        clip_record = {"clip": clip, "frames": [4 * steps.start - 3, 4 * steps.stop - 4],
                       "if_acc": following.if_acc, "if_trans_acc": following.if_trans_acc,
                       "if_rot_acc": following.if_rot_acc, "vq": _finite(vq)}
        if self.scorers.mode == COMPAT_MODE:  # the release's training reward of this clip, beside its eval
            clip_record["fine_action"] = compat_fine_action(estimate.poses, view.script)
        self._per_clip.append(clip_record)
        self._commanded.extend(following.commanded.tolist())
        self._detected.extend(following.detected.tolist())
        self._raw.append({name: values[2:] for name, values in quality.raw.items()})
        self._confidence.append(estimate.confidence[1:])
        transitions = len(estimate.confidence) - 1
        self._masked.append(float(getattr(estimate, "masked_share", 0.0) or 0.0))
        for values, kept in ((getattr(estimate, "mover_share", None), self._movers),
                             (getattr(estimate, "undecided", None), self._undecided)):
            kept.append(np.zeros(transitions) if values is None else np.asarray(values, float)[1:])
        base = self._path[-1]  # the clip's poses are relative to its first frame: chain them once
        self._path.extend(base @ pose for pose in estimate.poses[1:])
        self._pending = self._pending[count - 1:]  # the clip's last frame opens the next clip
        self._first = last

    def _windowed_vq(self, vq: float, quality: QualityResult, last: int) -> float | None:
        """The clip's vq as the case's vq reads it. A scorer with ``evaluation_chunks`` N (the
        release's HPSv3 evaluation) counts only the video's last N 4-frame chunks: the clip's vq
        is the mean over its frames inside that window, None when it has none."""
        chunks = getattr(self.scorers.quality, "evaluation_chunks", None)
        if not chunks:
            return vq
        frames = np.arange(self._first + 1, last + 1)  # the clip's generated frames, video indices
        inside = np.asarray(quality.per_frame, dtype=np.float64)[2:][frames > self.script.num_frames - 1 - 4 * chunks]
        self._window_vq.append(inside)
        return float(np.nanmean(inside)) if len(inside) and not np.all(np.isnan(inside)) else None

    def _case_vq(self) -> float | None:
        """The mean of the clips' vq; under an evaluation window the mean over its frames."""
        if self._window_vq:
            return _finite(float(np.nanmean(np.concatenate(self._window_vq))))
        return _finite(float(np.nanmean([np.nan if c["vq"] is None else c["vq"] for c in self._per_clip])))

    def finish(self, commanded_poses: np.ndarray | None = None) -> dict:
        """The record fields (if_acc, vq, per_clip, labels, paths, ...). Raises ValueError when
        the frame count does not match the script (4L-3). ``commanded_poses`` (camera-to-world
        per frame) only draw the commanded path in reports, re-expressed in the first frame's camera."""
        if self.num_frames != self.script.num_frames:
            raise ValueError(frame_count_error(self.num_frames, self.script))
        if self._is_flat:  # its labels would all be guesses ('none') and its quality terms undefined
            raise UnscorableVideo("every frame is one flat colour: there is no picture to score")
        per_clip, raw = self._per_clip, self._raw
        raw_names = raw[0].keys() if raw else []
        if commanded_poses is not None:  # in the first frame's camera, as the estimated path is
            commanded_poses = np.linalg.inv(commanded_poses[0]) @ np.asarray(commanded_poses)
        confidence = np.concatenate(self._confidence)
        undecided = float(np.mean(np.concatenate(self._undecided)))
        warnings = [w for w in (low_confidence_warning(confidence), undecided_warning(undecided)) if w]
        return {
            **case_following(per_clip, self.scorers.mode),
            "vq": self._case_vq(),
            "vq_raw": {name: _finite(float(np.nanmean(np.concatenate([r[name] for r in raw])))) for name in raw_names},
            "per_clip": per_clip,
            "labels": {"commanded": self._commanded, "detected": self._detected},
            "paths": {"commanded": None if commanded_poses is None
                      else np.round(commanded_poses[:, :3, 3], 5).tolist(),
                      "estimated": np.round(np.stack(self._path)[:, :3, 3], 5).tolist()},
            "confidence_mean": float(np.mean(confidence)),
            "masked_share": round(float(np.mean(self._masked)), 4),
            "mover_share": round(float(np.mean(np.concatenate(self._movers))), 4),
            "undecided_share": round(undecided, 4),
            **({"warnings": warnings} if warnings else {}),
        }


def case_following(per_clip: list[dict], mode: str) -> dict[str, float]:
    """The case's three IF accuracies from its clips': the mean over clips by default; in
    ``worldcompass-compat`` mode the mean over all 4-frame chunks, as the release averages (each
    clip weighted by its transitions, so clip 0's 3 chunks count as 3, not as one clip of 4)."""
    names = ("if_acc", "if_trans_acc", "if_rot_acc")
    if mode != COMPAT_MODE:
        return {name: float(np.mean([c[name] for c in per_clip])) for name in names}
    transitions = [c["frames"][1] - c["frames"][0] + 1 for c in per_clip]
    return {name: float(np.average([c[name] for c in per_clip], weights=transitions)) for name in names}


LOW_CONFIDENCE = 0.3  # a window's tracks this few or this poorly fitting: its motion is a guess
LOW_CONFIDENCE_SHARE = 0.25


def low_confidence_warning(confidence: np.ndarray) -> str | None:
    """A warning when more than a quarter of the transitions' camera motion was read with low
    confidence (too little texture to track, or tracks that fit no motion): their labels fall
    back to 'none' and IF there says little about the model."""
    share = float(np.mean(confidence < LOW_CONFIDENCE)) if len(confidence) else 0.0
    if share <= LOW_CONFIDENCE_SHARE:
        return None
    return (f"camera motion read with low confidence in {share:.0%} of transitions (too little texture to "
            "track?): their labels fall back to 'none', so IF there may be wrong")


def undecided_warning(share: float) -> str | None:
    """A warning when some transitions' camera motion could not be told from content moving on
    its own (too little of the picture stayed still to be the world)."""
    if share <= 0.0:
        return None
    return (f"camera motion undecided in {share:.0%} of transitions: too much of the picture moves on its own "
            "(people, vehicles) to tell the camera's motion; their labels fall back to 'none'")


def score_frames(frames: np.ndarray, script: Script, scorers: Scorers, *, prompt: str = "",
                 K: np.ndarray | None = None, fov_deg: float | None = None, latents_per_clip: int = 4,
                 commanded_poses: np.ndarray | None = None, true_poses: np.ndarray | None = None,
                 mask: np.ndarray | None = None) -> dict:
    """Score a whole (T, H, W, 3) video held in memory clip by clip (see :class:`CaseScorer`).

    Returns the record fields (if_acc, vq, per_clip, labels, paths, ...). Raises ValueError
    when the frame count does not match the script (4L-3).
    """
    if len(frames) != script.num_frames:
        raise ValueError(frame_count_error(len(frames), script))
    scorer = CaseScorer(script, scorers, prompt=prompt, K=K, fov_deg=fov_deg, latents_per_clip=latents_per_clip,
                        true_poses=true_poses, mask=mask)
    scorer.add(frames)
    return scorer.finish(commanded_poses)


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


def estimate_clip(view: ClipView, scorers: Scorers, fov_deg: float | None = None, K: np.ndarray | None = None,
                  mask: np.ndarray | None = None) -> Any:
    """The camera estimate of one clip view (its poses relative to the frame before the clip).
    ``mask``: (H, W) bool pixels to leave out of camera tracking (a burnt-in overlay)."""
    options = {"true_poses": view.true_poses} if getattr(scorers.estimator, "uses_true_poses", False) else {}
    if mask is not None:
        if not getattr(scorers.estimator, "accepts_mask", False):
            raise ValueError(f"estimator {scorers.estimator.name!r} cannot leave a mask out of tracking; "
                             "score with --estimator opencv or drop the mask")
        options["mask"] = mask
    return scorers.estimator.estimate(view.frames, K=K, fov_deg=fov_deg, **options)


def score_clip_following(view: ClipView, scorers: Scorers, fov_deg: float | None = None,
                         K: np.ndarray | None = None, mask: np.ndarray | None = None) -> tuple[FollowingResult, Any]:
    """IF of one clip view (all its transitions) and the pose estimate it came from."""
    estimate = estimate_clip(view, scorers, fov_deg, K, mask)
    result = score_following(estimate.poses, view.script, scorers.estimator.thresholds,
                             latents_per_clip=view.script.num_latents + 1, mode=scorers.mode)
    return result, estimate


def score_clip_fine_action(view: ClipView, scorers: Scorers, fov_deg: float | None = None,
                           K: np.ndarray | None = None, mask: np.ndarray | None = None) -> float:
    """The released WorldCompass training reward of one clip view (:func:`compat_fine_action`),
    whatever ``scorers.mode`` is: it is the release's rule by definition."""
    return compat_fine_action(estimate_clip(view, scorers, fov_deg, K, mask).poses, view.script)


def score_clip_quality_reward(view: ClipView, scorers: Scorers, prompt: str = "") -> float:
    """The quality reward of one clip view: the scorer's own training form when it has one (the
    release's HPSv3 reward, ``score_training_clip``), else the clip's vq (:func:`score_clip_quality`)."""
    training_form = getattr(scorers.quality, "score_training_clip", None)
    if training_form is not None:
        return float(training_form(np.concatenate([view.reference[None], view.frames]), prompt))
    return score_clip_quality(view, scorers, prompt)[0]


def score_clip_quality(view: ClipView, scorers: Scorers, prompt: str = "") -> tuple[float, QualityResult]:
    """VQ of one clip view: the mean vq of its generated frames, with drift against frame 0.

    The scorer sees frame 0, the frame before the clip, then the clip, so flicker into the
    clip's first frame and drift against the video's start are the whole video's.
    """
    frames = np.concatenate([view.reference[None], view.frames])
    quality = scorers.quality.score(frames, prompt)
    return float(clip_vq(quality, slice(2, len(frames)))), quality
