"""Two-view geometry for the OpenCV estimator: pure numpy, vectorised over points and starts.

Conventions. A relative pose ``(R, t)`` maps camera-b coordinates into camera a
(``X_a = R @ X_b + t``), as :func:`wcbench.core.camera.relative_pose` does: ``t`` is camera b's
centre seen from a, and the columns of ``R`` are b's axes in a. Points are normalised image
coordinates (``K^-1 @ pixel``) written as bearings ``(u, v, 1)``; with ``x1`` in a and ``x2``
in b the epipolar constraint is ``x2 . E x1 = 0`` with ``E = R^T [t]_x``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

_EYE3 = np.eye(3)


def compute_bearings(points: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Pixel points (N, 2) -> normalised bearings (N, 3) with z = 1 (lens distortion ignored)."""
    u = (points[:, 0] - K[0, 2]) / K[0, 0]
    v = (points[:, 1] - K[1, 2]) / K[1, 1]
    return np.stack([u, v, np.ones_like(u)], axis=1)


def skew(vectors: np.ndarray) -> np.ndarray:
    """Cross-product matrices (..., 3, 3) of vectors (..., 3)."""
    x, y, z = vectors[..., 0], vectors[..., 1], vectors[..., 2]
    out = np.zeros(vectors.shape[:-1] + (3, 3), np.result_type(vectors, float))
    out[..., 0, 1], out[..., 0, 2] = -z, y
    out[..., 1, 0], out[..., 1, 2] = z, -x
    out[..., 2, 0], out[..., 2, 1] = -y, x
    return out


def rodrigues(rotvecs: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of axis-angle vectors (..., 3)."""
    angle = np.linalg.norm(rotvecs, axis=-1)[..., None, None]
    small = angle < 1e-12
    safe = np.where(small, 1.0, angle)
    K = skew(rotvecs) / safe
    sin, cos = np.sin(angle), np.cos(angle)
    R = _EYE3 + sin * K + (1.0 - cos) * (K @ K)
    return np.where(small, _EYE3 + skew(rotvecs), R)


def rotation_vector(R: np.ndarray) -> np.ndarray:
    """Axis-angle vector of one rotation matrix (inverse of :func:`rodrigues`)."""
    cos = np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0)
    angle = np.arccos(cos)
    axis = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if angle < 1e-8:
        return 0.5 * axis
    if np.pi - angle < 1e-4:  # near 180 deg the antisymmetric part vanishes; use the symmetric part
        column = np.argmax(np.diag(R))
        axis = (R[:, column] + _EYE3[:, column]) / np.sqrt(2.0 * (1.0 + R[column, column]))
        return axis * angle
    return axis / (2.0 * np.sin(angle)) * angle


def rotation_angle_deg(R: np.ndarray) -> float:
    return float(np.degrees(np.arccos(np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0))))


def even_subset(count: int, limit: int) -> np.ndarray:
    """Indices of at most ``limit`` of ``count`` items, evenly spread (all of them when they fit)."""
    return np.arange(count) if count <= limit else np.linspace(0, count - 1, limit).astype(int)


def project(bearings: np.ndarray) -> np.ndarray:
    """Normalised image coordinates (..., 2) of bearings (..., 3)."""
    z = bearings[..., 2:3]
    return bearings[..., :2] / np.where(np.abs(z) < 1e-9, 1e-9, z)


# ---------------------------------------------------------------- rotation-only model

def fit_rotation(x1: np.ndarray, x2: np.ndarray, scale: float, iterations: int = 6) -> np.ndarray:
    """Robust rotation ``R`` with ``x1 ~ R @ x2`` (a camera that only turns).

    Weighted Kabsch on unit bearings with Cauchy weights of scale ``scale`` (normalised
    units); the first pass keeps the better-fitting half so that parallax or outliers do
    not drag the start.
    """
    b1 = x1 / np.linalg.norm(x1, axis=1, keepdims=True)
    b2 = x2 / np.linalg.norm(x2, axis=1, keepdims=True)
    weights = np.ones(len(b1))
    R = _EYE3
    for it in range(iterations):
        H = (b1 * weights[:, None]).T @ b2
        U, _, Vt = np.linalg.svd(H)
        D = np.diag([1.0, 1.0, np.sign(np.linalg.det(U @ Vt))])
        R = U @ D @ Vt
        residual = np.linalg.norm(b1 - b2 @ R.T, axis=1)
        if it == 0:
            weights = (residual <= np.median(residual)).astype(float)
        else:
            weights = 1.0 / (1.0 + (residual / scale) ** 2)
    return R


def compensated_displacement(x1: np.ndarray, x2: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Per-track image displacement (N, 2), normalised units, left after undoing rotation ``R``:
    zero for a camera that only turns; ``-B(x1) t / Z`` for a translation ``t`` (see
    :func:`translational_flow`)."""
    return project(x2 @ R.T) - project(x1)


def compensated_parallax(x1: np.ndarray, x2: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Length of :func:`compensated_displacement` per track."""
    return np.linalg.norm(compensated_displacement(x1, x2, R), axis=1)


def translational_flow(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Image motion (N, 2), normalised units, of points at bearings ``x`` (z = 1) and unit
    inverse depth when the camera moves by ``t``: ``-(t_x - u t_z, t_y - v t_z)``. A point at
    depth Z moves by this over Z (to first order), so its direction does not depend on depth:
    radially out of the focus of expansion when moving forward, sideways when strafing."""
    return -(t[None, :2] - x[:, :2] * t[2])


def two_way_share(x1: np.ndarray, x2: np.ndarray, R: np.ndarray, t: np.ndarray, floor: float,
                  min_tracks: int = 10) -> float:
    """The share of the parallax left by rotation ``R`` that runs the smaller of the two ways
    along the flow translation ``t`` predicts (:func:`translational_flow`), each track weighted
    by its parallax along that flow, counting tracks that moved over ``floor`` (normalised
    units) along it; 0 with fewer than ``min_tracks`` of them.

    A translation moves every static point one way along its flow, whatever the depth (points
    in front of the camera), so the share is about 0 however the scene is laid out; rippling
    water and swaying leaves move back and forth, half each way."""
    flow = translational_flow(x1, t)
    along = np.einsum("ni,ni->n", compensated_displacement(x1, x2, R),
                      flow / np.maximum(np.linalg.norm(flow, axis=1, keepdims=True), 1e-12))
    along = along[np.abs(along) > floor]
    if len(along) < min_tracks:
        return 0.0
    forward, backward = along[along > 0].sum(), -along[along < 0].sum()
    return float(min(forward, backward) / (forward + backward))


def neighbour_index(points: np.ndarray, neighbours: int = 6) -> np.ndarray:
    """(N, k) rows of each point's ``neighbours`` nearest points, itself excluded (k is at most
    N - 1; N >= 2). A window's statistics share one: the k-d tree query costs more than a median."""
    _, index = cKDTree(points).query(points, k=min(neighbours + 1, len(points)))
    return index[:, 1:]


def neighbour_median(points: np.ndarray, vectors: np.ndarray, neighbours: int = 6,
                     index: np.ndarray | None = None) -> np.ndarray:
    """Each track's vector replaced by the median over its ``neighbours`` nearest tracks (itself
    excluded; per component, so ``vectors`` (N, D) may stack several frames' displacements):
    parallax is a smooth field over a surface, tracking noise is not. ``index``: the
    :func:`neighbour_index` of ``points``, when already known."""
    if len(points) < 2:
        return vectors.copy()
    if index is None:
        index = neighbour_index(points, neighbours)
    elif len(index) != len(points):
        raise ValueError(f"neighbour_median: a neighbour index of {len(index)} points for {len(points)} points "
                         "(an index computed before the tracks were subset)")
    # (D, N, k): each median over a contiguous run
    return median_last(np.take(np.ascontiguousarray(vectors.T), index, axis=1)).T


def median_last(values: np.ndarray) -> np.ndarray:
    """``np.median(values, axis=-1)`` (the same numbers, NaN aside), partitioning ``values`` in
    place: faster on the many short runs :func:`neighbour_median` takes medians of."""
    half = values.shape[-1] // 2
    if values.shape[-1] % 2:
        values.partition(half, axis=-1)
        return values[..., half]
    values.partition((half - 1, half), axis=-1)
    return (values[..., half - 1] + values[..., half]) / 2


def aperture_weighted(residuals: np.ndarray, tensors: np.ndarray) -> np.ndarray:
    """Residual vectors (N, 2) with the part along each track's weak image direction scaled
    down by sqrt(lambda_min / lambda_max) of its patch structure tensor.

    ``tensors`` rows are ``cv2.cornerEigenValsAndVecs`` output (l1, l2, x1, y1, x2, y2). A
    corner on stripes cannot see motion along the stripes (aperture problem); compression
    blocks and noise drag it there, and unweighted that drag reads as parallax.
    """
    swap = tensors[:, 1] > tensors[:, 0]
    strong = np.where(swap, tensors[:, 1], tensors[:, 0])
    weak = np.where(swap, tensors[:, 0], tensors[:, 1])
    v_strong = np.where(swap[:, None], tensors[:, 4:6], tensors[:, 2:4])
    v_weak = np.where(swap[:, None], tensors[:, 2:4], tensors[:, 4:6])
    ratio = np.sqrt(np.clip(weak / np.maximum(strong, 1e-12), 0.0, 1.0))
    along_strong = np.einsum("ni,ni->n", residuals, v_strong)
    along_weak = np.einsum("ni,ni->n", residuals, v_weak)
    return along_strong[:, None] * v_strong + (ratio * along_weak)[:, None] * v_weak


def coherent_parallax(points: np.ndarray, residuals: np.ndarray, neighbours: int = 6, quantile: float = 0.5,
                      index: np.ndarray | None = None) -> float:
    """The ``quantile`` over tracks of the length of the neighbourhood-median residual vector.

    Parallax from translation is a smooth field over the image (neighbouring tracks lie on
    the same surface); tracking noise is not, so the median over each track's nearest
    neighbours keeps the first and cancels most of the second. ``index``: the points'
    :func:`neighbour_index`, when already known.
    """
    if len(points) < 2:
        return 0.0
    smoothed = neighbour_median(points, residuals, neighbours, index)
    return float(np.quantile(np.linalg.norm(smoothed, axis=1), quantile))


def steady_length(trajectory: np.ndarray, unsteady_weight: float) -> np.ndarray:
    """Per track, the length of its net displacement through a window less its wander:
    ``sqrt(max(0, |net|^2 - weight * sum_k |step_k - net / hops|^2))``.

    ``trajectory`` (F, N, 2) holds each track's displacement from the first frame at every
    frame (row 0 all zeros). A steady motion (a translation at constant speed) takes equal
    steps and keeps its whole length; a perturbation drawn anew every frame (a generated
    video's wobble, compression blocks) or every hop (tracking noise) takes steps as large as
    its net displacement in random directions, and their spread cancels it. Independent
    per-frame perturbations need a weight of 4/15 to cancel on average, per-hop ones 4/3.
    """
    steps = np.diff(trajectory, axis=0)
    net = trajectory[-1] - trajectory[0]
    wander = np.sum((steps - net / len(steps)) ** 2, axis=(0, 2))
    return np.sqrt(np.maximum(0.0, np.sum(net**2, axis=1) - unsteady_weight * wander))


def explained_share(unexplained: float, total: float, weight: float) -> float:
    """The share of a window's rotation-compensated parallax that a camera translation explains:
    ``sqrt(1 - (weight * unexplained / total)^2)``, 0 once ``unexplained`` reaches ``total / weight``.

    ``total`` is the coherent parallax left by the rotation-only fit, ``unexplained`` the same
    statistic of what the rotation + translation fit leaves (the epipolar, Sampson residual).
    A translation leaves almost nothing (ratio 0.01-0.15 on renders, compressed and noisy ones
    included); content that warps without a camera translation (a generated video's wobble)
    leaves about half (0.3-0.55), because a translation's flow must point along the epipolar
    lines and a random smooth warp does so only by chance. Squares: an isotropic warp puts as
    much motion across the epipolar lines as along them."""
    if total <= 0.0:
        return 0.0
    return math.sqrt(max(0.0, 1.0 - (weight * unexplained / total) ** 2))


# ---------------------------------------------------------------- essential matrix

def essential_from_pose(R: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``E = R^T [t]_x`` (batched over leading axes)."""
    return np.swapaxes(R, -1, -2) @ skew(t)


def sampson_residuals(E: np.ndarray, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """Signed Sampson distances (S, N) of N correspondences under S essential matrices."""
    Ex1 = np.matmul(x1, np.swapaxes(E, 1, 2))  # (S, N, 3); matmul is far faster than einsum here
    Etx2 = np.matmul(x2, E)
    # summed term by term: the same additions as .sum(axis=-1), without a reduction over a 3-long axis
    algebraic = Ex1[..., 0] * x2[:, 0] + Ex1[..., 1] * x2[:, 1] + Ex1[..., 2] * x2[:, 2]
    denom = Ex1[..., 0] ** 2 + Ex1[..., 1] ** 2 + Etx2[..., 0] ** 2 + Etx2[..., 1] ** 2
    return algebraic / np.sqrt(np.maximum(denom, 1e-18))


def pose_from_opencv(R_cv: np.ndarray, t_cv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OpenCV's ``X_b = R_cv X_a + t_cv`` -> our ``X_a = R X_b + t``."""
    R = R_cv.T
    return R, -R @ np.ravel(t_cv)


def cheirality_sign(x1: np.ndarray, x2: np.ndarray, R: np.ndarray, t: np.ndarray) -> tuple[int, float]:
    """+1 if the scene lies in front of the cameras moving by ``t``, -1 if it does for ``-t``.

    Each track's rotation-compensated displacement is ``translational_flow(x1, t) / Z``, along
    the flow for points in front (Z > 0). The sign is that of the sum of the displacements
    projected on the flow: each track votes with its parallax, so far points, whose depth the
    noise decides, vote with almost nothing (a count of the points triangulated in front lets
    them outvote the near ones when the view is mostly sky and far hills, and reads a step
    forward and right as backward and left). Returns the sign and the share of tracks that
    agree with it.
    """
    vote = np.einsum("ni,ni->n", compensated_displacement(x1, x2, R), translational_flow(x1, t))
    sign = 1 if vote.sum() >= 0 else -1
    return sign, float(np.mean(sign * vote > 0)) if len(vote) else 0.0


# ---------------------------------------------------------------- 4-DoF refinement

def planar_direction(azimuth: np.ndarray) -> np.ndarray:
    """Unit translations (..., 3) in the camera's own horizontal (x-z) plane: azimuth 0 is
    forward (+z), pi/2 is right (+x). The action model moves along the camera's own axes, so a
    pitched camera's level plane is its own, whatever the world's vertical."""
    return np.concatenate([np.sin(azimuth), np.zeros_like(azimuth), np.cos(azimuth)], axis=-1)


def planar_azimuth(t: np.ndarray) -> float:
    """The azimuth of ``t`` projected on the camera's horizontal plane (inverse of
    :func:`planar_direction`)."""
    return math.atan2(t[0], t[2])


def _planar_poses(R_base: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return R_base @ rodrigues(params[..., :3]), planar_direction(params[..., 3:4])


def robust_cost(residuals: np.ndarray, scale: float) -> np.ndarray:
    """Cauchy-robust cost of residuals (summed over the last axis) at ``scale``: what
    :func:`refine_planar_motion` minimises."""
    return np.log1p((residuals / scale) ** 2).sum(axis=-1)


def best_planar_motion(x1: np.ndarray, x2: np.ndarray, R_starts: np.ndarray, azimuth_starts: np.ndarray,
                       scale: float, max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """The rotation and unit translation (sign not fixed) of the lowest-cost start of
    :func:`refine_planar_motion`, refined on an even subset of at most ``max_points`` tracks."""
    subset = even_subset(len(x1), max_points)
    Rs, ts, costs = refine_planar_motion(x1[subset], x2[subset], R_starts, azimuth_starts, scale)
    best = int(np.argmin(costs))
    return Rs[best], ts[best]


def refine_planar_motion(x1: np.ndarray, x2: np.ndarray, R_starts: np.ndarray, azimuth_starts: np.ndarray,
                         scale: float, iterations: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rotation + a translation direction in the camera's horizontal plane (4 DoF, see
    :func:`planar_direction`) minimising a Cauchy-robust Sampson cost.

    The action space has no vertical translation, so the essential matrix's ground-plane
    twin (vertical translation and a wrong pitch) cannot be represented here. All starts
    (every rotation start x every azimuth) are refined together by damped Gauss-Newton with
    a forward-difference Jacobian (5 batched cost evaluations per iteration).

    Returns, per start, the refined rotations (S, 3, 3), unit translations (S, 3) (sign not
    fixed: the cost is even in ``t``) and robust costs (S,).
    """
    n_rot, n_az = len(R_starts), len(azimuth_starts)
    R_base = np.repeat(R_starts, n_az, axis=0)
    params = np.zeros((n_rot * n_az, 4))
    params[:, 3] = np.tile(azimuth_starts, n_rot)
    damping = np.full(len(params), 1e-3)
    step = 1e-6
    perturb = np.vstack([np.zeros(4), step * np.eye(4)])  # (5, 4)

    def residuals(p: np.ndarray, base: np.ndarray) -> np.ndarray:
        R, t = _planar_poses(base, p)
        return sampson_residuals(essential_from_pose(R, t), x1, x2)

    cost = robust_cost(residuals(params, R_base), scale)
    trial_base = np.repeat(R_base, 5, axis=0)
    for _ in range(iterations):
        trial = (params[:, None, :] + perturb[None]).reshape(-1, 4)
        r_all = residuals(trial, trial_base).reshape(len(params), 5, -1)
        r0 = r_all[:, 0]
        J = (r_all[:, 1:] - r0[:, None]) / step  # (S, 4, N)
        w = 1.0 / (1.0 + (r0 / scale) ** 2)
        JtW = J * w[:, None, :]
        A = JtW @ np.swapaxes(J, 1, 2)
        g = np.einsum("spn,sn->sp", JtW, r0)
        A = A + damping[:, None, None] * (np.eye(4) * np.maximum(np.einsum("sii->si", A), 1e-12)[:, None, :])
        delta = -np.linalg.solve(A, g[..., None])[..., 0]
        candidate = params + delta
        new_cost = robust_cost(residuals(candidate, R_base), scale)
        better = new_cost < cost
        params = np.where(better[:, None], candidate, params)
        cost = np.where(better, new_cost, cost)
        damping = np.where(better, damping * 0.3, damping * 10.0)
    R, t = _planar_poses(R_base, params)
    return R, t, cost
