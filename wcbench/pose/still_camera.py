"""A camera that does not translate while things move before it: which tracks are the world.

Walkers crossing before a still camera, or water rippling below it, move a share of the tracks
as a translation would; two rules find a window's still world (:mod:`wcbench.pose.opencv` then
reads the camera's turn from it alone and counts the rest in ``mover_share``):

- :func:`still_world_tracks`: a translating camera moves all of the near ground at the bottom of
  the picture; where part of it stands still, the motion is not the camera's;
- :func:`two_way_world_tracks`: a translation moves every static point one way along its flow;
  where the parallax runs both ways while part of the picture stands still, it is water or
  leaves moving back and forth.

Still is judged without undoing any rotation (``fixed_px``): a rotation fit can turn with a
mover that covers much of the picture, or with the floor under a sideways step (which then looks
like still ground below moving walls), so both rules are for a camera that neither turns nor
translates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from wcbench.pose import geometry as geo
from wcbench.pose.parallax import Correspondences

if TYPE_CHECKING:
    from wcbench.pose.opencv import OpenCVEstimatorConfig


def still_world_tracks(match: Correspondences, gate: float, max_turn_deg: float,
                       config: OpenCVEstimatorConfig) -> np.ndarray | None:
    """The tracks of the still world when what moves in the window moves on its own (people,
    animals, vehicles before a camera that does not translate); None otherwise.

    A translating camera moves its nearest content most, and the nearest content of a
    first-person view is the ground at the bottom of the picture: it moves all of it. So when
    the window's parallax passes the gate but part of the lowest ``bottom_share`` of the
    tracks barely moves (``bottom_still_share`` of them under ``bottom_ratio`` of the window's
    parallax, and under the gate) while ``min_still_share`` of all tracks stand still, the
    parallax is not the camera's: the still tracks are the world. Part, not most: a pond
    rippling or walkers crossing at the bottom of the picture move most of the near ground's
    tracks, the dry ground beside them none. Not in a window whose rotation-only fit turns over
    ``max_turn_deg`` (the turn that would be labelled). Under ``sure_still_share`` of the tracks,
    :func:`few_still_is_world` must agree too."""
    if len(match.fixed_px) < config.min_tracks or match.coherent_px <= gate or _turns(match, max_turn_deg):
        return None
    heights = match.tracks.first[match.inside, 1]
    bottom = heights >= np.quantile(heights, 1.0 - config.bottom_share)
    limit = min(gate, config.bottom_ratio * match.coherent_px)
    still = _standing(match, gate, config)
    if (still.mean() < config.min_still_share or np.count_nonzero(still) < config.min_tracks
            or np.quantile(match.fixed_px[bottom], config.bottom_still_share) >= limit):
        return None
    return _all_tracks(match, still)


def few_still_is_world(match: Correspondences, world: np.ndarray, R_level: np.ndarray, t_level: np.ndarray,
                       max_turn_deg: float, config: OpenCVEstimatorConfig) -> bool:
    """Whether the still tracks ``world`` that :func:`still_world_tracks` found, under
    ``sure_still_share`` of the tracks, are the world: the 4-DoF fit (``R_level``, ``t_level``)
    must not turn either (``max_turn_deg``), the still tracks must span ``min_still_span`` of the
    tracks' height, and they must not gather towards the fitted translation's focus of expansion
    (``focus_ratio``).

    Huge movers and ripples can leave as little as an eighth of the picture standing. But so can a
    camera that turns while it steps: the turn and the step cancel on a strip of floor at one
    depth, while the rest of the picture moves as the 4-DoF fit says. A subtitle the overlay
    detector missed stands still in one line. A still world spans the picture; those are one
    thin band. And a step forward leaves standing what lies near where it heads (its flow
    vanishes there): still tracks whose translational flow, per unit of inverse depth, is
    smaller than the moving tracks' are what a step explains; before a still camera, what stands
    does not depend on the direction fitted to the movers."""
    if geo.rotation_angle_deg(R_level) > max_turn_deg:
        return False
    heights = match.tracks.first[:, 1]
    low, high = np.quantile(heights, [0.1, 0.9])
    still_low, still_high = np.quantile(heights[world], [0.1, 0.9])
    if still_high - still_low < config.min_still_span * (high - low):
        return False
    flow = np.linalg.norm(geo.translational_flow(match.x1, t_level), axis=1)
    return bool(np.median(flow[world]) >= config.focus_ratio * np.median(flow[~world]))


def two_way_world_tracks(match: Correspondences, gate: float, focal: float, R: np.ndarray, t_dir: np.ndarray,
                         max_turn_deg: float, config: OpenCVEstimatorConfig) -> np.ndarray | None:
    """The tracks of the still world when the window's parallax runs both ways along the
    translation fitted to it (``R``, ``t_dir``: the 4-DoF fit) while part of the picture stands
    still and the window's rotation-only fit turns under ``max_turn_deg``; None otherwise.

    A translation moves every static point one way along its flow and leaves nothing but the far
    distance standing; rippling water and swaying foliage move back and forth. So when over
    ``two_way_share`` of the parallax (tracks that moved over the gate along the flow, weighted
    by how far: :func:`geometry.two_way_share`) runs against the rest while ``min_standing_share``
    of the tracks stand still, the still tracks are the world. A pond that covers all of the near
    ground escapes :func:`still_world_tracks`, which looks for still ground at the bottom of the
    picture; a camera moving among movers leaves almost nothing standing, and each mover runs
    one way. A camera that turns leaves nothing standing either: what stands still in a window
    that turns (``max_turn_deg``: the turn that would be labelled) is an overlay the detector
    missed, such as a subtitle shown only at the end of the clip."""
    if len(match.fixed_px) < config.min_tracks or _turns(match, max_turn_deg):
        return None
    still = _standing(match, gate, config)
    if still.mean() < config.min_standing_share or np.count_nonzero(still) < config.min_tracks:
        return None
    if geo.two_way_share(match.x1, match.x2, R, t_dir, gate / focal) <= config.two_way_share:
        return None
    return _all_tracks(match, still)


def _turns(match: Correspondences, max_turn_deg: float) -> bool:
    """Whether the window's rotation-only fit turns over ``max_turn_deg`` (a labelled turn)."""
    return geo.rotation_angle_deg(match.R_rot) > max_turn_deg


def _standing(match: Correspondences, gate: float, config: OpenCVEstimatorConfig) -> np.ndarray:
    """Per inside track, whether it stood still: its steady motion, no rotation undone, under
    ``still_fraction`` of the gate."""
    return match.fixed_px < config.still_fraction * gate


def _all_tracks(match: Correspondences, still: np.ndarray) -> np.ndarray:
    """The mask over all of the window's tracks of ``still``, a mask over the inside ones."""
    world = np.zeros(len(match.x1), bool)
    world[np.flatnonzero(match.inside)[still]] = True
    return world
