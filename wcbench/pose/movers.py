"""Content moving on its own before a moving camera: which tracks are the world.

A walker or a vehicle crossing the view of a camera that moves carries its own motion, and a
robust fit over all tracks can settle on a compromise between the world's motion and the
movers' (forward + yaw read as a sideways step when a few near walkers cross fast): over one
window a crossing walker can often be explained as static under another camera motion, so the
residuals of that fit do not show the movers. Two properties tell them apart:

- the world's image motion is a smooth field over the picture, so its tracks chain into large
  groups of neighbours whose displacements differ little (:func:`flow_groups`); a mover's
  outline breaks the chain (it moves unlike the ground behind it), so it forms groups of its
  own. Depth edges and the steep flow of the near ground split the world too, so a group
  apart is only a candidate;
- the **core** (the largest group) is world: a fit on it alone explains the other groups that
  are world and not the movers (:func:`moving_world`).

Then three tests, all needed: the candidates are a minority of the tracks (``max_share``), the
fit over all tracks explains the core worse than the core's own fit does (``min_gain``, a cheap
first test), and leaving the candidates out lets the rest of the world fit clearly better
(:func:`world_fits_better`). The last keeps the near ground of a fast turn in: when the
left-out groups were what carried the window's parallax, the rest fits any nearby motion about
equally well. Movers that do not bend the fit are left in, so a video without movers reads as it
did without this step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from wcbench.pose import geometry as geo


@dataclass(frozen=True)
class MoverConfig:
    """Settings of :func:`moving_world` (pixels of the working image)."""

    neighbours: int = 8  # each track is linked to those of its nearest tracks ...
    link_px: float = 0.5  # ... whose displacement differs by under this ...
    link_share: float = 0.05  # ... plus this share of the smaller of the two displacements
    min_core: float = 0.1  # the largest group must hold this share of the tracks (large movers split the world's flow)
    disagree: float = 3.0  # a group whose median error at the core's motion exceeds this x robust_px is a mover
    max_share: float = 1 / 3  # ... unless the candidates hold more than this share of the tracks
    min_gain: float = 1.2  # candidates only where the all-tracks fit leaves this x the core fit's error on the core ...
    world_gain: float = 1.25  # ... and left out where the world's own fit explains the world this x better
    truncate: float = 0.5  # errors count up to this x robust_px in those comparisons (sub-pixel fits)


def flow_groups(points: np.ndarray, displacement: np.ndarray, config: MoverConfig) -> np.ndarray:
    """Per track, the label of its group: tracks are linked to near neighbours that moved alike
    (``link_px`` + ``link_share`` of the displacement), and a group is a connected set of links."""
    count = len(points)
    k = min(config.neighbours, count - 1)
    if k < 1:
        return np.zeros(count, int)
    _, index = cKDTree(points).query(points, k=k + 1)
    i, j = np.repeat(np.arange(count), k), index[:, 1:].ravel()
    size = np.minimum(np.linalg.norm(displacement[i], axis=1), np.linalg.norm(displacement[j], axis=1))
    alike = np.linalg.norm(displacement[i] - displacement[j], axis=1) < config.link_px + config.link_share * size
    graph = coo_matrix((np.ones(np.count_nonzero(alike)), (i[alike], j[alike])), shape=(count, count))
    return connected_components(graph, directed=False)[1]


def _core_residuals(x1: np.ndarray, x2: np.ndarray, core: np.ndarray, scale: float, starts: np.ndarray,
                    max_points: int) -> np.ndarray:
    """Absolute Sampson residuals of every track at the 4-DoF motion fitted on the ``core`` alone."""
    R_core = geo.fit_rotation(x1[core], x2[core], scale)
    R, t = geo.best_planar_motion(x1[core], x2[core], R_core[None], starts, scale, max_points)
    return np.abs(geo.sampson_residuals(geo.essential_from_pose(R, t)[None], x1, x2)[0])


def moving_world(first: np.ndarray, last: np.ndarray, x1: np.ndarray, x2: np.ndarray, all_residuals: np.ndarray,
                 scale: float, azimuths: np.ndarray, max_points: int, config: MoverConfig) -> np.ndarray | None:
    """The world's tracks of a translating camera's window when movers bend the fit over all
    tracks; None when they do not (or no group stands out).

    ``first``/``last``: track positions (px) at the window's ends; ``x1``/``x2`` their bearings;
    ``all_residuals``: Sampson residuals at the fit over all tracks; ``scale``: the robust scale
    (normalised units); ``azimuths``: translation-direction starts of the core's fit."""
    labels = flow_groups(first, last - first, config)
    core = labels == np.argmax(np.bincount(labels))
    if core.mean() < config.min_core or core.all():
        return None
    residuals = _core_residuals(x1, x2, core, scale, azimuths, max_points)
    movers = np.zeros(len(labels), bool)
    for label in np.unique(labels[~core]):
        group = labels == label
        if np.median(residuals[group]) > config.disagree * scale:
            movers |= group
    # the camera's motion is the one most tracks share: leaving out more reads a step as a turn
    # where the left-out part held the near content
    if not movers.any() or movers.mean() > config.max_share:
        return None

    # on the core an outlier counts as 3 robust scales, no more
    before, after = (np.sqrt(_capped_mean_square(r[core], 3.0 * scale)) for r in (all_residuals, residuals))
    if before < config.min_gain * after:
        return None
    return ~movers


def _capped_mean_square(residuals: np.ndarray, cap: float) -> float:
    """Mean square of the residuals, each counted up to ``cap``."""
    return float(np.mean(np.minimum(np.abs(residuals), cap) ** 2))


def world_fits_better(all_residuals: np.ndarray, world_residuals: np.ndarray, scale: float,
                      config: MoverConfig) -> bool:
    """Whether the world's own fit (``world_residuals``, its tracks' Sampson residuals) explains
    the world ``world_gain`` times better than the fit over all tracks (``all_residuals`` on the
    same tracks), errors truncated at ``truncate`` robust scales.

    Leaving a group out always lets the rest fit a little better; when the group carried the
    window's parallax (the near ground of a fast turn, split off by its steep flow gradient) the
    rest fits any nearby translation about equally well and the gain stays small, so the fit
    over all tracks stands. Movers that bent that fit leave the world clearly worse off."""
    cap = config.truncate * scale
    before, after = _capped_mean_square(all_residuals, cap), _capped_mean_square(world_residuals, cap)
    return before >= config.world_gain * max(after, 1e-30)
