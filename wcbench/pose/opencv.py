"""The default, weight-free camera-motion estimator (OpenCV + numpy, CPU).

Motion is estimated once per latent window (frame 4k-4 -> 4k): actions change only at
latent boundaries, so a window never straddles two actions, and four frames give enough
parallax to read at small resolutions. The frames are first made gray at a working size
(:mod:`wcbench.pose.preprocess`). Per window:

1. track the window and fit a rotation-only model and an essential matrix
   (:func:`wcbench.pose.parallax.measure_window`), in parallel over the windows;
2. the window's **parallax**: the rotation-compensated motion of each track at every frame
   (the rotation-only fit to that frame: a hand-held camera rolls back and forth within a
   window), its weak (aperture) direction down-weighted, replaced by the median over its 20
   nearest tracks (parallax is smooth over a surface, tracking noise is not); per track the net
   displacement less its frame-to-frame wander (a translation moves content steadily; wobble,
   noise and compression blocks move it back and forth); and the 85th percentile of those
   lengths over the tracks clear of the image border, in pixels of the working image. A high
   quantile rather than the median, so that the decision does not depend on how much of the
   frame is far away: with half a frame of sky and far hills, only the nearer ground shows a
   translation. Only the part of the parallax a translation explains counts: the same
   statistic of what the 4-DoF fit (step 3) leaves, ``u``, against what the rotation-only fit
   leaves, ``r``, scales it by ``sqrt(1 - (2 u / r)^2)`` (:func:`geometry.explained_share`);
   content that warps without the camera translating (a generated video's wobble) leaves
   about half, and then nothing counts;
3. 4-DoF refinement, rotation + a translation direction in the camera's own horizontal
   plane (rejects the ground-plane twin; the action model moves along the camera's axes,
   so a pitched camera that moves forward also rises or sinks), the sign from the tracks'
   parallax along the flow the translation predicts;
4. the window's relative pose: above a gate (``gate_px``, raised to ``noise_gate`` times the
   video's tracking noise on noisy or compressed video) the 4-DoF fit's rotation, under it the
   rotation-only fit's (the essential matrix is degenerate for a turning camera); a
   translation whose direction is the refined one and whose **length is the window's explained
   parallax** in normalised image units (pixels / focal length), spread evenly over the
   window's four transitions. ``units`` is ``"parallax"``: a per-frame translation of 0.001
   means the nearer part of the scene moved by about 0.4 % of the focal length per window
   beyond what the rotation explains. Whether it translated is the calibrated threshold's
   call (``wcbench calibrate`` over every scene family), not the gate's.

Generated video carries things the camera did not do; three steps keep them out:

- **Burnt-in overlays** (a keyboard HUD, a watermark, a logo, letterbox bars, subtitles) stay
  put while the picture moves, so tracked they vote for "no motion".
  :func:`wcbench.pose.overlay.detect_static_overlay` finds them over the clip (or the user
  passes a mask) and no track starts or ends in them; ``masked_share`` records how much.
- **Content moving on its own** (people, animals, vehicles, swaying foliage). A camera that
  stands still while walkers cross must not read as a step: where the window's parallax says
  "translated" but part of the tracks low in the frame (the ground near the camera, all of
  which any translation moves) barely moved and enough of the picture stayed put, or where
  the parallax runs both ways along the translation fitted to it (water and leaves moving back
  and forth) while part of the picture stands still, the still tracks are the world and the
  moving ones are movers (``mover_share``; :mod:`wcbench.pose.still_camera`). When too little of
  the picture is left to the world, the window is ``undecided`` (confidence 0) rather than a
  confident label.
- **Movers before a moving camera** bend the fit over all tracks towards their own motion
  (forward + yaw read as a sideways step when near walkers cross). :mod:`wcbench.pose.movers`
  chains tracks that moved alike into groups, fits the largest group (the core) alone, and
  leaves out the groups its motion does not explain when that makes the rest of the world fit
  clearly better; they count in ``mover_share`` too.

What each setting was measured on: ``docs/estimator.md``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace

import cv2
import numpy as np

from wcbench.core.camera import Thresholds
from wcbench.pose import geometry as geo
from wcbench.pose.base import (PoseEstimate, check_frames, latent_windows, per_transition, poses_from_windows,
                               register_estimator, resolve_intrinsics, thresholds_or_config)
from wcbench.pose.movers import MoverConfig, moving_world, world_fits_better
from wcbench.pose.overlay import OverlayConfig, detect_static_overlay
from wcbench.pose.parallax import Correspondences, inside_neighbours, measure_window, parallax_of, window_parallax
from wcbench.pose.still_camera import few_still_is_world, still_world_tracks, two_way_world_tracks
from wcbench.pose.preprocess import WorkingVideo, normalize_contrast, prepare_gray, scale_intrinsics, working_size
from wcbench.pose.tracking import TrackerConfig

_AZIMUTH_STARTS = np.radians(np.arange(0.0, 360.0, 45.0))


@dataclass(frozen=True)
class OpenCVEstimatorConfig:
    """Settings of the OpenCV estimator (pixel quantities are in the working image)."""

    max_side: int = 448
    min_height: int = 120
    tracker: TrackerConfig = field(default_factory=TrackerConfig)
    use_deblock: bool = True  # smooth compression-block edges when a coding grid is found
    contrast_sigma: float = 0.06  # local contrast normalisation scale (x the short side; 0: off)
    contrast_floor: float = 8.0  # grey levels of local std below which texture is not amplified further
    denoise_above: float = 1.5  # pixel noise (grey levels) above which frames are smoothed before tracking ...
    denoise_sigma: float = 1.0  # ... by a Gaussian of this many px (native resolution)
    parallax_quantile: float = 0.85  # the window's parallax: this quantile of the tracks' coherent parallax ...
    parallax_neighbours: int = 20  # ... each the median residual of this many nearest tracks
    unexplained_weight: float = 2.0  # the share a translation explains: sqrt(1 - (this x left by 4-DoF / total)^2)
    unsteady_weight: float = 0.75  # a track's parallax: sqrt(|net|^2 - this x its wander), see geometry.steady_length
    gate_px: float = 0.45  # coherent parallax above which a window translated, px ...
    noise_gate: float = 2.0  # ... or above this many times the video's tracking noise, if larger
    ransac_px: float = 1.0
    robust_px: float = 1.0  # Cauchy scale of the rotation and 4-DoF fits
    max_window_rotation_deg: float = 60.0
    max_refine_points: int = 400  # the 4-DoF fit uses an even subsample of the tracks
    max_coherence: float = 0.9  # tracks where the plain frame's gradients are this one-directional are dropped
    min_tracks: int = 8
    full_confidence_tracks: int = 60
    num_workers: int = 1  # threads tracking windows in parallel (OpenCV releases the GIL)
    detect_overlays: bool = True  # leave burnt-in overlays (HUDs, watermarks, ...) out of tracking
    # content moving on its own before a camera that does not translate (see still_camera.still_world_tracks)
    still_fraction: float = 0.3  # a track whose own steady parallax is under this x the gate stands still
    min_still_share: float = 0.12  # ... and this share of the tracks must stand still; under ...
    sure_still_share: float = 0.3  # ... this share the 4-DoF fit must not turn either, and the still tracks ...
    min_still_span: float = 0.16  # ... must span this share of the tracks' height (10-90 %), not one thin band
    focus_ratio: float = 0.9  # ... and not gather towards a step's heading (their flow under this x the rest's)
    bottom_share: float = 0.2  # the lowest tracks of the picture (the nearest ground): where ...
    bottom_still_share: float = 0.2  # ... this share of them moved ...
    bottom_ratio: float = 0.12  # ... under this x the window's parallax, the motion is not the camera's
    min_world_share: float = 0.25  # under this share of the tracks left to the world, a window is undecided
    # content moving back and forth (water, foliage) before a camera that does not translate (see still_camera)
    two_way_share: float = 0.2  # over this share of the parallax against the fitted translation's flow ...
    min_standing_share: float = 0.1  # ... while this share of the tracks stand still: the camera did not translate
    # content moving on its own before a translating camera (see wcbench.pose.movers)
    segment_movers: bool = True
    min_segment_tracks: int = 30  # windows with fewer tracks are not segmented


@dataclass
class WindowMotion:
    """One window's estimate: relative pose plus diagnostics."""

    rel: np.ndarray  # (4, 4) pose of the window's last frame in its first frame's camera
    coherent_px: float  # the parallax a translation explains (see OpenCVEstimatorConfig.unexplained_weight)
    is_moving: bool
    confidence: float
    num_tracks: int
    mover_share: float = 0.0  # share of the tracks left out as content moving on its own
    undecided: bool = False  # the still part was too small to tell the camera's motion from the movers'


class OpenCVPoseEstimator:
    """KLT + rotation-only model + essential matrix, per latent window. See the module doc."""

    name = "opencv"
    version = "18"
    units = "parallax"
    accepts_mask = True  # estimate(mask=...) leaves a user's overlay mask out of tracking

    def __init__(self, thresholds: Thresholds | None = None, **options):
        tracker_keys = {f.name for f in fields(TrackerConfig)}
        config_keys = {f.name for f in fields(OpenCVEstimatorConfig)} - {"tracker"}
        unknown = set(options) - tracker_keys - config_keys
        if unknown:
            raise TypeError(f"opencv estimator: unknown option(s) {sorted(unknown)}; "
                            f"known: {sorted(tracker_keys | config_keys)}")
        tracker = TrackerConfig(**{k: v for k, v in options.items() if k in tracker_keys})
        self.config = OpenCVEstimatorConfig(tracker=tracker, **{k: v for k, v in options.items() if k in config_keys})
        self.thresholds = thresholds_or_config(self.name, thresholds)

    def estimate(self, frames: np.ndarray, K: np.ndarray | None = None, fov_deg: float | None = None,
                 mask: np.ndarray | None = None) -> PoseEstimate:
        """Per-frame poses (units ``parallax``, see the module doc) and confidences. ``mask``
        (H, W) bool, True on pixels to leave out (a burnt-in overlay the user knows of), adds to
        the overlays the estimator finds itself (:mod:`wcbench.pose.overlay`)."""
        video, K_work, left_out = self.prepare(frames, K, fov_deg, mask)
        motions = self.estimate_windows(video, K_work, left_out)
        num_frames = len(video.plain)
        windows = latent_windows(num_frames)
        estimate = poses_from_windows(num_frames, windows, [m.rel for m in motions], [m.confidence for m in motions])
        estimate.units = self.units
        estimate.masked_share = 0.0 if left_out is None else float(left_out.mean())
        estimate.mover_share = per_transition(num_frames, windows, [m.mover_share for m in motions])
        estimate.undecided = per_transition(num_frames, windows, [m.undecided for m in motions])
        return estimate

    def prepare(self, frames: np.ndarray, K: np.ndarray | None = None, fov_deg: float | None = None,
                mask: np.ndarray | None = None) -> tuple[WorkingVideo, np.ndarray, np.ndarray | None]:
        """The video as the estimator tracks it, its intrinsics at the working size and the
        pixels tracking leaves out (:meth:`overlay_mask`; None when none). Where something is
        left out, the tracked frames' contrast is normalised on the picture alone
        (:func:`~wcbench.pose.preprocess.normalize_contrast`)."""
        video, K_work = self.working_video(frames, K, fov_deg)
        left_out = self.overlay_mask(video, mask)
        if left_out is not None and self.config.contrast_sigma > 0 and not video.compressed:
            video = replace(video, tracked=[normalize_contrast(gray, self.config.contrast_sigma,
                                                               self.config.contrast_floor, left_out)
                                            for gray in video.plain])
        return video, K_work, left_out

    def overlay_mask(self, video: WorkingVideo, user_mask: np.ndarray | None = None) -> np.ndarray | None:
        """Pixels of the working video that tracking leaves out: the overlays found in it and the
        user's ``mask`` (any size, resized), dilated by the overlay margin; None when there are none."""
        height, width = video.plain[0].shape
        found = detect_static_overlay(video.plain) if self.config.detect_overlays else np.zeros((height, width), bool)
        if user_mask is not None:
            user = cv2.resize(np.asarray(user_mask, np.uint8), (width, height), interpolation=cv2.INTER_NEAREST)
            size = 2 * OverlayConfig().margin_px + 1
            found |= cv2.dilate(user, np.ones((size, size), np.uint8)).astype(bool)
        return found if found.any() else None

    def working_video(self, frames: np.ndarray, K: np.ndarray | None = None,
                      fov_deg: float | None = None) -> tuple[WorkingVideo, np.ndarray]:
        """The frames as the estimator tracks them (:func:`prepare_gray` at the working size)
        and the intrinsics at that size."""
        frames = check_frames(frames)
        height, width = frames.shape[1:3]
        K_full = resolve_intrinsics(width, height, K, fov_deg)
        size = working_size(width, height, self.config.max_side, self.config.min_height)
        video = prepare_gray(frames, size, self.config.use_deblock, self.config.contrast_sigma,
                             self.config.contrast_floor, self.config.denoise_above, self.config.denoise_sigma)
        return video, scale_intrinsics(K_full, size[0] / width, size[1] / height)

    def estimate_windows(self, video: WorkingVideo, K: np.ndarray,
                         mask: np.ndarray | None = None) -> list[WindowMotion]:
        """Window motions of a working-size video, one per :func:`latent_windows`; no track
        touches ``mask`` (True: left out)."""
        tracker = self.tracker_for(video)
        jobs = [(video.tracked[first:last + 1], video.plain[first])
                for first, last in latent_windows(len(video.tracked))]
        # 1. tracking and the rotation-only and essential fits, per window, in parallel
        if self.config.num_workers > 1 and len(jobs) > 1:
            with ThreadPoolExecutor(self.config.num_workers) as pool:
                matches = list(pool.map(lambda job: measure_window(*job, K, tracker, self.config, mask), jobs))
        else:
            matches = [measure_window(*job, K, tracker, self.config, mask) for job in jobs]
        # 2. the moving-or-turning gate is one per video (it rises with the video's tracking noise)
        gate = self.moving_gate(matches)
        # a coding grid's blocks stay put while the camera moves: still tracks that are not the world
        still_world = not video.compressed
        return [self._window_motion(match, K, gate, still_world) for match in matches]

    def moving_gate(self, matches: list[Correspondences]) -> float:
        """Coherent parallax (px) above which a window translated: ``gate_px``, raised on noisy
        or compressed video to ``noise_gate`` times its tracking noise (the median gap between
        chained and direct tracks over the video's windows)."""
        gaps = [m.tracks.disagreement for m in matches if np.isfinite(m.tracks.disagreement)]
        noise = float(np.median(gaps)) if gaps else 0.0
        return max(self.config.gate_px, self.config.noise_gate * noise)

    def tracker_for(self, video: WorkingVideo) -> TrackerConfig:
        """The tracker settings for a video: on compressed video the looser round-trip check and
        no dense tracks (their flow follows the coding blocks, which stay put as the camera moves)."""
        tracker = self.config.tracker
        if not video.compressed:
            return tracker
        return replace(tracker, fb_threshold=tracker.compressed_fb_threshold, dense_step=0)

    def _level_motion(self, match: Correspondences,
                      scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Rotation, signed unit translation, inlier mask and Sampson residuals (normalised
        units) of the 4-DoF fit, refined from
        the rotation-only and essential-matrix rotations x several azimuths. The translation
        stays in the camera's own horizontal plane (:func:`geometry.planar_direction`): the
        action model moves along the camera's axes (``w`` while looking up also rises)."""
        R_starts = [match.R_rot] + ([match.R_essential] if match.R_essential is not None else [])
        azimuths = _AZIMUTH_STARTS
        if match.t_essential is not None:
            azimuths = np.append(azimuths, geo.planar_azimuth(match.t_essential))
        R, t_dir = geo.best_planar_motion(match.x1, match.x2, np.stack(R_starts), azimuths, scale,
                                          self.config.max_refine_points)
        residuals = geo.sampson_residuals(geo.essential_from_pose(R, t_dir)[None], match.x1, match.x2)[0]
        inliers = np.abs(residuals) < 3.0 * scale
        sign, _ = geo.cheirality_sign(match.x1[inliers], match.x2[inliers], R, t_dir)
        return R, sign * t_dir, inliers, residuals

    def _turning_only(self, match: Correspondences, world: np.ndarray, scale: float) -> WindowMotion:
        """The window's motion when the camera only turns (or stands) and the tracks ``world``
        are the world: their rotation-only fit; the rest counts in ``mover_share``."""
        R = geo.fit_rotation(match.x1[world], match.x2[world], scale)
        rel = np.eye(4)
        rel[:3, :3] = R
        fits = geo.compensated_parallax(match.x1[world], match.x2[world], R) < 3.0 * scale
        confidence = min(1.0, int(world.sum()) / self.config.full_confidence_tracks) * float(np.mean(fits))
        motion = WindowMotion(rel, 0.0, False, confidence, len(match.x1))
        return self._with_movers(motion, 1.0 - float(world.mean()))

    def _with_movers(self, motion: WindowMotion, mover_share: float) -> WindowMotion:
        """``motion`` read from the world's tracks after ``mover_share`` of them were left out as
        movers; undecided (confidence 0) when too little was left (``min_world_share``)."""
        undecided = 1.0 - mover_share < self.config.min_world_share
        return replace(motion, mover_share=mover_share, undecided=undecided,
                       confidence=0.0 if undecided else motion.confidence)

    def _window_motion(self, match: Correspondences, K: np.ndarray, gate: float,
                       still_world: bool = True) -> WindowMotion:
        config = self.config
        num_tracks = len(match.x1)
        if num_tracks < config.min_tracks:
            return WindowMotion(np.eye(4), 0.0, False, 0.0, num_tracks)
        scale = config.robust_px / K[0, 0]
        turn = self.thresholds.rotation_deg * (len(match.tracks.path) - 1)  # a labelled turn over the window
        world = still_world_tracks(match, gate, turn, config) if still_world else None
        level = None
        if world is not None and world[match.inside].mean() < config.sure_still_share:  # little stands still
            level = self._level_motion(match, scale)
            if not few_still_is_world(match, world, *level[:2], turn, config):
                world = None
        if world is not None:  # the camera only turns (or stands) while things move before it
            return self._turning_only(match, world, scale)
        if level is None:
            level = self._level_motion(match, scale)
        motion = self._fitted_motion(match, K, gate, *level)
        if still_world and motion.is_moving:  # ... or while water or leaves move back and forth before it
            world = two_way_world_tracks(match, gate, K[0, 0], *level[:2], turn, config)
            if world is not None:
                return self._turning_only(match, world, scale)
        # a coding grid's blocks break the flow field into groups of their own: no segmentation there
        if not (config.segment_movers and still_world and motion.is_moving and num_tracks >= config.min_segment_tracks):
            return motion
        azimuths = np.append(_AZIMUTH_STARTS, geo.planar_azimuth(level[1]))
        movers = MoverConfig()
        world = moving_world(match.tracks.first, match.tracks.last, match.x1, match.x2, level[3], scale, azimuths,
                             config.max_refine_points, movers)
        if world is None:
            return motion
        in_world = self._world_part(match, world, K)
        world_level = self._level_motion(in_world, scale)
        if not world_fits_better(level[3][world], world_level[3], scale, movers):
            return motion
        return self._with_movers(self._fitted_motion(in_world, K, gate, *world_level), 1.0 - float(world.mean()))

    def _world_part(self, match: Correspondences, world: np.ndarray, K: np.ndarray) -> Correspondences:
        """``match`` restricted to the tracks ``world``, its rotation-only fit and parallax redone."""
        focal = K[0, 0]
        in_inside = world[match.inside]
        x1, x2 = match.x1[world], match.x2[world]
        R_rot = geo.fit_rotation(x1, x2, self.config.robust_px / focal)
        inside = match.inside[world]
        tracks = match.tracks.subset(world)
        residual_px = geo.compensated_displacement(x1, x2, R_rot) * focal
        near = inside_neighbours(tracks, inside, self.config)
        return replace(match, tracks=tracks, x1=x1, x2=x2, R_rot=R_rot, inside=inside,
                       coherent_px=parallax_of(match.steady_px[in_inside], self.config),
                       rotation_px=window_parallax(tracks.first[inside], residual_px[inside], self.config, near),
                       fixed_px=match.fixed_px[in_inside], steady_px=match.steady_px[in_inside], neighbours=near)

    def _fitted_motion(self, match: Correspondences, K: np.ndarray, gate: float, R_level: np.ndarray,
                       t_dir: np.ndarray, inliers: np.ndarray, sampson: np.ndarray) -> WindowMotion:
        """The window's motion from its 4-DoF fit (``R_level``, ``t_dir``, its inliers and Sampson
        residuals) and its rotation-only fit."""
        config = self.config
        focal = K[0, 0]
        num_tracks = len(match.x1)
        # only the parallax a translation explains counts: what the 4-DoF fit leaves too is the
        # content warping (a generated video's wobble), not the camera moving
        unexplained_px = window_parallax(match.tracks.first[match.inside], sampson[match.inside, None] * focal, config,
                                         match.neighbours)
        parallax = match.coherent_px * geo.explained_share(unexplained_px, match.rotation_px,
                                                            config.unexplained_weight)
        # translating: the 4-DoF pose; turning only: the rotation-only fit. The length is the
        # explained parallax either way; the calibrated threshold, not the gate, labels it
        is_moving = parallax > gate
        length = parallax / focal
        if is_moving:
            R = R_level
            inlier_share = float(np.mean(inliers))
        else:
            R = match.R_rot
            fits = geo.compensated_parallax(match.x1, match.x2, R) < 3.0 * config.robust_px / focal
            inlier_share = float(np.mean(fits))
        rel = np.eye(4)
        rel[:3, :3] = R
        rel[:3, 3] = length * t_dir
        confidence = min(1.0, num_tracks / config.full_confidence_tracks) * inlier_share
        return WindowMotion(rel, parallax, is_moving, confidence, num_tracks)


register_estimator("opencv")(OpenCVPoseEstimator)
