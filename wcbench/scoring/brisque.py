"""BRISQUE (Mittal, Moorthy & Bovik 2012), a no-reference image-quality model, in numpy/OpenCV.

Why not call the ``brisque`` package directly: its ``BRISQUE.score`` breaks on numpy >= 2
(its feature fits return 1-element arrays that ``float()`` refuses), it drags in
scikit-image/requests and it scores one image at a time through Python loops. What it does
ship is the part that matters: the trained epsilon-SVR (``models/svm.txt``, 770 support
vectors, RBF kernel) and the feature ranges (``models/normalize.pickle``) of the original
BRISQUE release (the ``allmodel``/``allrange`` files, trained on LIVE IQA). We read those two
files without importing the package and reimplement the 36 features the way the authors'
reference code computes them (the model was trained on those), so the score is the published
BRISQUE: roughly 0 (pristine) to 100 (badly distorted), lower is better.

Reference behaviour kept on purpose (each matters to the trained SVR):
- grayscale in [0, 255], MSCN with a 7x7 Gaussian (sigma 7/6), zero padding and C = 1;
- GGD / AGGD shape parameters picked from the grid 0.2:0.001:10 (not a root finder);
- paired products with circular shifts (MATLAB ``circshift``);
- the second scale made by MATLAB's ``imresize(I, 0.5)``: antialiased bicubic (a = -0.5),
  symmetric borders.
The SVR is evaluated in numpy (sum of RBF kernels minus rho), batched over frames; a test
checks it against libsvm's own ``svm_predict`` on the same model.
"""

from __future__ import annotations

import importlib.util
import pickle
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
from scipy.special import gamma as gamma_fn

NUM_FEATURES = 36
_ALPHA_GRID = np.arange(0.2, 10.0 + 1e-9, 0.001)
# r(alpha) = Gamma(1/a) Gamma(3/a) / Gamma(2/a)^2: the moment ratio E[x^2] / E[|x|]^2 of a GGD.
_GGD_RATIO = gamma_fn(1 / _ALPHA_GRID) * gamma_fn(3 / _ALPHA_GRID) / gamma_fn(2 / _ALPHA_GRID) ** 2
_AGGD_RATIO = 1.0 / _GGD_RATIO


def _gaussian_taps(size: int = 7, sigma: float = 7 / 6) -> np.ndarray:
    """1-D taps of the normalised 2-D Gaussian window (it is their outer product, so the
    window is applied as two separable passes)."""
    offsets = np.arange(size) - size // 2
    g = np.exp(-(offsets**2) / (2 * sigma**2))
    return g / g.sum()


def _cubic(x: np.ndarray) -> np.ndarray:
    """Keys' cubic convolution kernel with a = -0.5 (MATLAB's and PIL's bicubic)."""
    ax = np.abs(x)
    return np.where(ax <= 1, 1.5 * ax**3 - 2.5 * ax**2 + 1,
                    np.where(ax <= 2, -0.5 * ax**3 + 2.5 * ax**2 - 4 * ax + 2, 0.0))


_WINDOW_TAPS = _gaussian_taps()
# imresize(I, 0.5): output pixel o sits at input coordinate 2o + 0.5, the kernel is stretched by 2
# (antialiasing), so the taps are input pixels 2o-3 .. 2o+4 at distances 3.5 .. -3.5.
_HALF_TAPS = _cubic((0.5 - np.arange(-3, 5)) / 2.0)
_HALF_TAPS = _HALF_TAPS / _HALF_TAPS.sum()


def half_size(gray: np.ndarray) -> np.ndarray:
    """MATLAB ``imresize(gray, 0.5)`` (bicubic, antialiased, symmetric borders) of a float image."""
    blurred = cv2.sepFilter2D(gray, cv2.CV_64F, _HALF_TAPS, _HALF_TAPS, anchor=(3, 3),
                              borderType=cv2.BORDER_REFLECT)
    return blurred[::2, ::2]


def compute_mscn(gray: np.ndarray) -> np.ndarray:
    """Mean-subtracted contrast-normalised coefficients of an image in [0, 255].

    float64 on purpose: in float32 the local variance E[x^2] - E[x]^2 loses enough digits in
    flat regions to move the score by several points. cv2 arithmetic is used because it is
    faster than numpy's on large frames."""
    image = np.asarray(gray, dtype=np.float64)
    # MATLAB filter2(..., 'same') pads with zeros; BORDER_CONSTANT does the same.
    mu = cv2.sepFilter2D(image, cv2.CV_64F, _WINDOW_TAPS, _WINDOW_TAPS, borderType=cv2.BORDER_CONSTANT)
    mean_sq = cv2.sepFilter2D(cv2.multiply(image, image), cv2.CV_64F, _WINDOW_TAPS, _WINDOW_TAPS,
                              borderType=cv2.BORDER_CONSTANT)
    sigma = cv2.sqrt(cv2.absdiff(mean_sq, cv2.multiply(mu, mu)))
    return cv2.divide(cv2.subtract(image, mu), cv2.add(sigma, 1.0))


def _fit_ggd(values: np.ndarray) -> tuple[float, float]:
    """(shape, variance) of a zero-mean generalised Gaussian by moment matching on the grid."""
    variance = float(np.dot(values, values)) / values.size
    mean_abs = float(np.abs(values).sum()) / values.size
    ratio = variance / max(mean_abs**2, 1e-300)
    return float(_ALPHA_GRID[np.argmin(np.abs(ratio - _GGD_RATIO))]), variance


def _fit_aggd(values: np.ndarray) -> tuple[float, float, float, float]:
    """(shape, mean, left variance, right variance) of an asymmetric generalised Gaussian."""
    # Sums over the negative / positive parts without boolean indexing (much faster on big frames).
    negative = np.minimum(values, 0.0)
    positive = np.maximum(values, 0.0)
    left_sq, right_sq = float(np.dot(negative, negative)), float(np.dot(positive, positive))
    left_count, right_count = np.count_nonzero(negative), np.count_nonzero(positive)
    left_std = np.sqrt(left_sq / left_count) if left_count else 0.0
    right_std = np.sqrt(right_sq / right_count) if right_count else 0.0
    gamma_hat = left_std / max(right_std, 1e-300)
    mean_abs = (float(positive.sum()) - float(negative.sum())) / values.size
    r_hat = mean_abs**2 / max((left_sq + right_sq) / values.size, 1e-300)
    r_hat_norm = r_hat * (gamma_hat**3 + 1) * (gamma_hat + 1) / (gamma_hat**2 + 1) ** 2
    alpha = float(_ALPHA_GRID[np.argmin(np.abs(_AGGD_RATIO - r_hat_norm))])
    scale = np.sqrt(gamma_fn(1 / alpha) / gamma_fn(3 / alpha))
    mean = (right_std - left_std) * scale * gamma_fn(2 / alpha) / gamma_fn(1 / alpha)
    return alpha, float(mean), float(left_std**2), float(right_std**2)


# MATLAB circshift offsets (rows, cols) of the four neighbour products: horizontal, vertical,
# main diagonal, secondary diagonal. np.roll has circshift's semantics.
_SHIFTS = ((0, 1), (1, 0), (1, 1), (-1, 1))


def _scale_features(gray: np.ndarray) -> list[float]:
    mscn = compute_mscn(gray)
    features = list(_fit_ggd(mscn.ravel()))
    for shift in _SHIFTS:
        product = mscn * np.roll(mscn, shift, axis=(0, 1))
        features.extend(_fit_aggd(product.ravel()))
    return features


def compute_brisque_features(gray: np.ndarray) -> np.ndarray:
    """The 36 BRISQUE features of one grayscale image (uint8 or float in [0, 255])."""
    image = np.asarray(gray, dtype=np.float64)
    if image.ndim != 2 or min(image.shape) < 16:
        raise ValueError(f"BRISQUE needs a 2-D grayscale image of at least 16x16, got {image.shape}")
    return np.array(_scale_features(image) + _scale_features(half_size(image)))


@dataclass(frozen=True)
class BrisqueModel:
    """The trained epsilon-SVR and the feature ranges it expects (features scaled to [-1, 1])."""

    support_vectors: np.ndarray  # (n, 36) in scaled feature space
    coefficients: np.ndarray  # (n,)
    gamma: float
    rho: float
    feature_min: np.ndarray  # (36,)
    feature_max: np.ndarray  # (36,)

    def scale(self, features: np.ndarray) -> np.ndarray:
        """svm-scale to [-1, 1] with the training ranges (values outside extrapolate, as in svm-scale)."""
        span = np.where(self.feature_max > self.feature_min, self.feature_max - self.feature_min, 1.0)
        return -1.0 + 2.0 * (features - self.feature_min) / span

    def predict(self, features: np.ndarray) -> np.ndarray:
        """BRISQUE scores of (N, 36) raw feature rows: sum_i coef_i exp(-gamma |x - sv_i|^2) - rho."""
        scaled = self.scale(np.atleast_2d(features))
        sq_dist = ((scaled[:, None, :] - self.support_vectors[None, :, :]) ** 2).sum(-1)
        return np.exp(-self.gamma * sq_dist) @ self.coefficients - self.rho


def brisque_model_files() -> tuple[Path, Path]:
    """Paths of the SVR model and feature ranges shipped by the ``brisque`` package.

    Located without importing the package (its import pulls in scikit-image and breaks on some
    numpy/scipy versions)."""
    spec = importlib.util.find_spec("brisque")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the 'default' quality scorer needs the trained BRISQUE model shipped by the "
                          "'brisque' package: pip install 'brisque>=0.2'")
    models = Path(list(spec.submodule_search_locations)[0]) / "models"
    svm_path, range_path = models / "svm.txt", models / "normalize.pickle"
    for path in (svm_path, range_path):
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: reinstall the 'brisque' package (pip install "
                                    "--force-reinstall 'brisque>=0.2')")
    return svm_path, range_path


def _parse_libsvm_model(path: Path) -> tuple[dict[str, str], np.ndarray, np.ndarray]:
    header: dict[str, str] = {}
    lines = path.read_text().splitlines()
    start = lines.index("SV") + 1
    for line in lines[: start - 1]:
        key, _, value = line.partition(" ")
        header[key] = value
    rows = [line.split() for line in lines[start:] if line.strip()]
    coefficients = np.array([float(row[0]) for row in rows])
    vectors = np.zeros((len(rows), NUM_FEATURES))
    for i, row in enumerate(rows):
        # libsvm stores sparse rows (index:value, 1-based); omitted features are 0.
        for item in row[1:]:
            index, _, value = item.partition(":")
            vectors[i, int(index) - 1] = float(value)
    return header, coefficients, vectors


@lru_cache(maxsize=1)
def load_brisque_model() -> BrisqueModel:
    """Load the shipped BRISQUE SVR (cached: parsed once per process)."""
    svm_path, range_path = brisque_model_files()
    header, coefficients, vectors = _parse_libsvm_model(svm_path)
    if header.get("svm_type") != "epsilon_svr" or header.get("kernel_type") != "rbf":
        raise ValueError(f"{svm_path}: expected an epsilon_svr model with an rbf kernel, got {header}")
    with range_path.open("rb") as handle:
        ranges = pickle.load(handle)
    return BrisqueModel(vectors, coefficients, float(header["gamma"]), float(header["rho"]),
                        np.asarray(ranges["min_"], dtype=np.float64),
                        np.asarray(ranges["max_"], dtype=np.float64))


def to_gray(frames: np.ndarray) -> np.ndarray:
    """(T, H, W, 3) uint8 RGB -> (T, H, W) uint8 luma (BT.601, as MATLAB's rgb2gray)."""
    return np.stack([cv2.cvtColor(np.ascontiguousarray(frame), cv2.COLOR_RGB2GRAY) for frame in frames])


def compute_brisque(gray_frames: np.ndarray) -> np.ndarray:
    """BRISQUE score of each (T, H, W) grayscale frame; lower is better (about 0-100)."""
    features = np.stack([compute_brisque_features(frame) for frame in gray_frames])
    return load_brisque_model().predict(features)
