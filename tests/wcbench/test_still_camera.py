"""The two rules that find the still world before a camera that does not translate
(wcbench/pose/still_camera.py), on synthetic correspondences with a known answer."""

import numpy as np

from wcbench.pose import geometry as geo
from wcbench.pose.opencv import OpenCVEstimatorConfig
from wcbench.pose.parallax import Correspondences
from wcbench.pose.still_camera import few_still_is_world, still_world_tracks, two_way_world_tracks
from wcbench.pose.tracking import WindowTracks

FOCAL = 200.0
GATE = 0.45
T = np.array([0.3, 0.0, 0.95])  # the translation a fit over all tracks might propose
SIDEWAYS = np.array([1.0, 0.0, 0.0])


def _window(still_share: float, back_and_forth: bool, turn_deg: float = 0.0, count: int = 400,
            seed: int = 0) -> Correspondences:
    """Tracks of which ``still_share`` stand still and the rest move along ``T``'s flow by 1-3 px,
    each its own way (``back_and_forth``) or all one way; the rotation-only fit turns ``turn_deg``."""
    rng = np.random.default_rng(seed)
    x1 = np.column_stack([rng.uniform(-0.6, 0.6, (count, 2)), np.ones(count)])
    flow = geo.translational_flow(x1, T)
    flow /= np.linalg.norm(flow, axis=1, keepdims=True)
    length = rng.uniform(1.0, 3.0, count) / FOCAL
    if back_and_forth:
        length *= rng.choice([-1.0, 1.0], count)
    still = np.arange(count) < still_share * count
    length[still] = 0.0
    x2 = np.column_stack([x1[:, :2] + flow * length[:, None], np.ones(count)])
    return _correspondences(x1, x2, np.abs(length) * FOCAL, turn_deg)


def _correspondences(x1: np.ndarray, x2: np.ndarray, moved_px: np.ndarray, turn_deg: float) -> Correspondences:
    """A window from bearings ``x1`` to ``x2`` whose tracks moved ``moved_px`` each (their still and
    steady parallax) and whose rotation-only fit turns ``turn_deg``."""
    path = np.stack([x1[:, :2] * FOCAL + 128.0] * 4 + [x2[:, :2] * FOCAL + 128.0])
    R_rot = geo.rodrigues(np.radians([0.0, turn_deg, 0.0]))
    return Correspondences(WindowTracks(path, len(x1)), x1, x2, R_rot, float(np.quantile(moved_px, 0.85)), 0.0,
                           np.ones(len(x1), bool), None, None, moved_px, moved_px)


def _rule(match: Correspondences, max_turn_deg: float = 1.1):
    return two_way_world_tracks(match, GATE, FOCAL, np.eye(3), T, max_turn_deg, OpenCVEstimatorConfig())


def test_back_and_forth_motion_beside_a_still_part_is_not_the_camera():
    match = _window(0.3, back_and_forth=True)
    world = _rule(match)
    assert world is not None and np.array_equal(world, match.fixed_px == 0.0)


def test_one_way_motion_a_turn_or_nothing_standing_keeps_the_translation():
    assert _rule(_window(0.3, back_and_forth=False)) is None  # a translation: every point one way
    assert _rule(_window(0.3, back_and_forth=True, turn_deg=3.0)) is None  # what stands still while turning is no world
    assert _rule(_window(0.3, back_and_forth=True, turn_deg=3.0), max_turn_deg=4.0) is not None
    assert _rule(_window(0.05, back_and_forth=True)) is None  # a moving camera leaves nothing standing


def _crossing(still: np.ndarray, turn_deg: float = 0.0, count: int = 400, seed: int = 1) -> Correspondences:
    """Tracks spread over the picture; those where ``still(heights in [-0.6, 0.6])`` is True stand
    still, the rest move 2-4 px one way (a mover crossing, or a step); the rotation-only fit turns
    ``turn_deg``."""
    rng = np.random.default_rng(seed)
    x1 = np.column_stack([rng.uniform(-0.6, 0.6, (count, 2)), np.ones(count)])
    standing = still(x1[:, 1])
    step = np.where(standing, 0.0, rng.uniform(2.0, 4.0, count)) / FOCAL
    x2 = x1 + np.column_stack([step, np.zeros(count), np.zeros(count)])
    return _correspondences(x1, x2, step * FOCAL, turn_deg)


def _spread(heights: np.ndarray) -> np.ndarray:
    """A fifth of the picture standing, in stripes from top to bottom (the world between movers)."""
    return np.mod(heights + 0.6, 0.3) > 0.24


def test_a_fifth_of_the_picture_standing_still_is_the_world_when_nothing_turns():
    config = OpenCVEstimatorConfig()
    match = _crossing(_spread)
    world = still_world_tracks(match, GATE, 1.1, config)
    assert world is not None and np.array_equal(world, match.fixed_px == 0.0)
    assert 0.12 < world.mean() < config.sure_still_share  # the checked tier
    assert few_still_is_world(match, world, np.eye(3), SIDEWAYS, 1.1, config)
    # the 4-DoF fit turns: a turn and a step cancelling on part of the picture, not a still camera
    assert not few_still_is_world(match, world, geo.rodrigues(np.radians([0.0, 3.0, 0.0])), SIDEWAYS, 1.1,
                                  config)
    # the rotation-only fit turns
    assert still_world_tracks(_crossing(_spread, turn_deg=3.0), GATE, 1.1, config) is None
    assert still_world_tracks(match, GATE, 1.1, OpenCVEstimatorConfig(min_still_share=0.3)) is None


def test_a_thin_still_band_is_not_the_world():
    """A strip of floor where a turn and a step cancel, or a missed subtitle line, stands still in
    one thin band at the bottom of the picture."""
    config = OpenCVEstimatorConfig()
    match = _crossing(lambda heights: heights > 0.42)
    world = still_world_tracks(match, GATE, 1.1, config)
    assert world is not None and world.mean() < config.sure_still_share
    assert not few_still_is_world(match, world, np.eye(3), SIDEWAYS, 1.1, config)


def test_still_tracks_where_a_step_heads_are_what_the_step_explains():
    """A step forward leaves standing what lies near its heading; before a still camera what stands
    does not depend on the direction fitted to the movers."""
    config = OpenCVEstimatorConfig()
    forward = np.array([0.0, 0.0, 1.0])
    match = _crossing(_spread)
    world = still_world_tracks(match, GATE, 1.1, config)
    assert few_still_is_world(match, world, np.eye(3), forward, 1.1, config)  # stripes across the picture
    centre = np.abs(match.x1[:, 0]) < 0.15  # the same share standing, but around where a forward step heads
    assert 0.12 < centre.mean() < config.sure_still_share
    assert not few_still_is_world(match, centre, np.eye(3), forward, 1.1, config)
    assert few_still_is_world(match, centre, np.eye(3), SIDEWAYS, 1.1, config)  # a sideways step has no heading in view
