"""Visual-quality scorers: BRISQUE against its references, the weight-free terms, the default
scorer on degraded renders (blur, noise, JPEG, flicker, drift), the registry and clip_vq (the
HPSv3 scorers are in test_hpsv3.py)."""

from pathlib import Path

import cv2
import numpy as np
import pytest

from wcbench.actions import StepSizes, intrinsics_from_fov, parse_script, script_trajectory
from wcbench.scenes.synthetic import build_scene, render_frames
from wcbench.scoring import brisque as brisque_mod
from wcbench.scoring import vq_terms
from wcbench.scoring.quality import (
    QualityResult,
    QualityScorer,
    available_quality_scorers,
    build_quality_scorer,
    clip_vq,
)

REALVID = Path(__file__).resolve().parents[2] / "shared" / "realvid"
SIZE = 160


def _render(seed: int, script: str = "w+left-3") -> np.ndarray:
    poses = script_trajectory(parse_script(script), StepSizes(0.05, 0.75))
    scene = build_scene(seed, poses[:, :3, 3])
    return render_frames(scene, poses, intrinsics_from_fov(SIZE, SIZE, 75.0), SIZE, SIZE)


@pytest.fixture(scope="module")
def videos() -> dict[int, np.ndarray]:
    return {seed: _render(seed) for seed in (7, 11)}


def _blur(frames, sigma):
    return np.stack([cv2.GaussianBlur(f, (0, 0), sigma) for f in frames]) if sigma else frames


def _noise(frames, sigma):
    noisy = frames + np.random.default_rng(0).normal(0, sigma, frames.shape)
    return np.clip(noisy, 0, 255).astype(np.uint8)


def _jpeg(frames, quality):
    return np.stack([cv2.imdecode(cv2.imencode(".jpg", f, [cv2.IMWRITE_JPEG_QUALITY, quality])[1],
                                  cv2.IMREAD_UNCHANGED) for f in frames])


def _mean_vq(scorer, frames) -> float:
    return float(scorer.score(frames).per_frame.mean())


# --- BRISQUE ---------------------------------------------------------------------------------


def test_brisque_svr_matches_libsvm():
    svmutil = pytest.importorskip("libsvm.svmutil")
    model = brisque_mod.load_brisque_model()
    reference = svmutil.svm_load_model(str(brisque_mod.brisque_model_files()[0]))
    rng = np.random.default_rng(0)
    features = model.feature_min + (model.feature_max - model.feature_min) * rng.random((6, 36))
    expected = [svmutil.svm_predict([0], [list(row)], reference, "-q")[0][0] for row in model.scale(features)]
    np.testing.assert_allclose(model.predict(features), expected, rtol=1e-9, atol=1e-9)


def test_half_size_matches_antialiased_bicubic():
    image_module = pytest.importorskip("PIL.Image")
    gray = np.random.default_rng(1).random((40, 56)) * 255
    ours = brisque_mod.half_size(gray)
    pil = np.asarray(image_module.fromarray(gray.astype(np.float32), mode="F").resize(
        (28, 20), image_module.Resampling.BICUBIC))
    assert ours.shape == (20, 28)
    # PIL renormalises the kernel at the borders where MATLAB mirrors; the interior is the same.
    np.testing.assert_allclose(ours[2:-2, 2:-2], pil[2:-2, 2:-2], atol=1e-3)


def test_mscn_matches_the_package():
    trainer = pytest.importorskip("brisque.trainer")
    gray = cv2.GaussianBlur(np.random.default_rng(2).random((64, 80)) * 255, (0, 0), 1.2)
    # The package works on [0, 1] images with C = 1/255: the same coefficients.
    theirs = trainer.BRISQUETrainer()._calculate_mscn_coefficients(gray / 255, 7, 7 / 6)
    np.testing.assert_allclose(brisque_mod.compute_mscn(gray), theirs, atol=1e-9)


def test_distribution_fits_recover_known_shapes():
    rng = np.random.default_rng(4)
    gaussian, laplace = rng.normal(0, 1.5, 200_000), rng.laplace(0, 1.0, 200_000)
    assert brisque_mod._fit_ggd(gaussian) == pytest.approx((2.0, 2.25), rel=0.02)
    assert brisque_mod._fit_ggd(laplace) == pytest.approx((1.0, 2.0), rel=0.03)
    # Asymmetric Gaussian: left std 1, right std 2 -> shape 2, left/right variances 1 and 4.
    skewed = np.abs(rng.normal(0, 1, 200_000)) * np.where(rng.random(200_000) < 1 / 3, -1.0, 2.0)
    alpha, mean, left_var, right_var = brisque_mod._fit_aggd(skewed)
    assert (alpha, left_var, right_var) == pytest.approx((2.0, 1.0, 4.0), rel=0.03)
    assert mean == pytest.approx((2 - 1) * np.sqrt(2 / np.pi), rel=0.03)  # E[x] of that mixture


@pytest.mark.skipif(not REALVID.exists(), reason="../shared/realvid is absent")
def test_brisque_ranks_distortions_of_real_footage():
    gray = cv2.imread(str(REALVID / "kitti00-straight" / "00000.png"), cv2.IMREAD_GRAYSCALE)
    clean = brisque_mod.compute_brisque(gray[None])[0]
    assert clean < 30  # a sharp daylight photo is good quality
    for degrade in (_blur, _noise):
        levels = (1, 2, 4) if degrade is _blur else (5, 10, 20)
        scores = [clean] + [brisque_mod.compute_brisque(degrade(gray[None], lv))[0] for lv in levels]
        assert np.all(np.diff(scores) > 0), (degrade.__name__, scores)
    jpeg = [clean] + [brisque_mod.compute_brisque(_jpeg(gray[None], q))[0] for q in (50, 20, 5)]
    assert np.all(np.diff(jpeg) > 0), jpeg


def test_brisque_rejects_tiny_frames():
    with pytest.raises(ValueError, match="16x16"):
        brisque_mod.compute_brisque_features(np.zeros((8, 8)))


# --- weight-free terms -------------------------------------------------------------------------


def test_blur_effect_bounds_and_order(videos):
    gray = brisque_mod.to_gray(videos[7][:1])[0]
    values = [vq_terms.compute_blur_effect(_blur(gray[None], s)[0]) for s in (0, 1, 2, 4)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert np.all(np.diff(values) > 0), values
    assert vq_terms.compute_blur_effect(np.full((32, 32), 90, np.uint8)) == 1.0  # no edges at all
    # Noise must not pass for sharpness: the blurred frame stays blurred when noise is added.
    blurred = _blur(gray[None], 2)
    assert vq_terms.compute_blur_effect(_noise(blurred, 5)[0]) > values[1]


def test_noise_sigma_recovers_added_noise(videos):
    flat = np.full((1, 96, 96), 120, np.uint8)
    for sigma in (3, 8):
        assert vq_terms.compute_noise_sigma(_noise(flat, sigma)[0]) == pytest.approx(sigma, rel=0.2)
    gray = brisque_mod.to_gray(videos[7][:1])
    clean = vq_terms.compute_noise_sigma(gray[0])
    assert clean < 0.5 < vq_terms.compute_noise_sigma(_noise(gray, 3)[0])


def test_blockiness_sees_the_grid_not_the_content(videos):
    gray = brisque_mod.to_gray(videos[11][:1])[0]
    clean = vq_terms.compute_blockiness(gray)
    compressed = _jpeg(gray[None], 30)[0]
    assert abs(clean) < 0.15
    assert vq_terms.compute_blockiness(compressed) > 0.4
    # The same blocks 4 pixels off the grid are content, not codec blocks.
    assert vq_terms.compute_blockiness(compressed[4:, 4:]) < 0.15


def test_warp_error_is_small_under_motion_and_catches_a_brightness_jump(videos):
    gray = brisque_mod.to_gray(videos[7])
    errors = vq_terms.compute_warp_error(gray)
    assert np.isnan(errors[0]) and np.all(errors[1:] < 2.0)
    jumped = gray.astype(np.int16)
    jumped[6] += 25
    jumped_errors = vq_terms.compute_warp_error(np.clip(jumped, 0, 255).astype(np.uint8))
    assert jumped_errors[6] > 15 and jumped_errors[7] > 15  # into and out of the bright frame
    assert np.all(np.delete(jumped_errors[1:], [5, 6]) < 2.0)


# --- the default scorer ------------------------------------------------------------------------


def test_default_scorer_protocol_and_direction(videos):
    scorer = build_quality_scorer("default")
    assert isinstance(scorer, QualityScorer)
    assert (scorer.name, scorer.higher_is_better) == ("default", False)  # raw BRISQUE: lower is better
    result = scorer.score(videos[7])
    assert isinstance(result, QualityResult) and result.per_frame.shape == (13,)
    assert np.all((result.per_frame >= 0) & (result.per_frame <= 1))
    for key in ("brisque", "blur_effect", "noise_sigma", "blockiness", "warp_error", "drift", "q_flicker"):
        assert result.raw[key].shape == (13,), key
    assert np.isnan(result.raw["warp_error"][0]) and not np.isnan(result.raw["brisque"]).any()
    # vq is higher-is-better even though BRISQUE is lower-is-better.
    worse = scorer.score(_noise(videos[7], 20))
    assert worse.raw["brisque"].mean() > result.raw["brisque"].mean()
    assert worse.per_frame.mean() < result.per_frame.mean()


@pytest.mark.parametrize("degrade,levels", [(_blur, (0, 1, 2, 3)), (_noise, (0, 5, 10, 20)),
                                            (_jpeg, (100, 50, 30, 15))])
def test_more_damage_scores_worse(videos, degrade, levels):
    scorer = build_quality_scorer("default")
    for seed, frames in videos.items():
        scores = [_mean_vq(scorer, degrade(frames, level)) for level in levels]
        assert np.all(np.diff(scores) < 0), (degrade.__name__, seed, np.round(scores, 4))


def test_flicker_catches_random_brightness_jumps(videos):
    scorer = build_quality_scorer("default")
    frames = videos[11]
    offsets = np.random.default_rng(3).choice([-20, 0, 20], size=len(frames))
    flicker = np.clip(frames.astype(np.int16) + offsets[:, None, None, None], 0, 255).astype(np.uint8)
    clean, flickering = scorer.score(frames), scorer.score(flicker)
    assert flickering.per_frame.mean() < clean.per_frame.mean() - 0.05
    jumps = np.flatnonzero(np.diff(offsets) != 0) + 1  # frames that follow a jump
    assert np.all(flickering.raw["q_flicker"][jumps] < 0.2)
    assert np.all(clean.raw["q_flicker"] == 1.0)


def test_drift_catches_a_video_that_degrades_over_time(videos):
    frames = videos[7]
    sigmas = np.linspace(0, 3, len(frames))
    decaying = np.stack([_blur(f[None], s)[0] for f, s in zip(frames, sigmas)])
    drift_scorer = build_quality_scorer("default-drift")
    assert drift_scorer.name == "default-drift"
    steady, decay = drift_scorer.score(frames), drift_scorer.score(decaying)
    assert decay.per_frame[0] == 0.0 and steady.per_frame[0] == 0.0
    assert decay.per_frame[-3:].mean() < -0.15
    assert abs(steady.per_frame[-3:].mean()) < 0.08
    default = build_quality_scorer("default").score(decaying)
    assert default.raw["drift"][-1] > 0.15 and default.per_frame[-1] < default.per_frame[0] - 0.15


def test_scores_are_deterministic(videos):
    a = build_quality_scorer("default").score(videos[11])
    b = build_quality_scorer("default").score(videos[11].copy())
    np.testing.assert_array_equal(a.per_frame, b.per_frame)
    for key in a.raw:
        np.testing.assert_array_equal(a.raw[key], b.raw[key])


def test_gray_input_scores_like_rgb(videos):
    gray = brisque_mod.to_gray(videos[7][:5])
    scorer = build_quality_scorer("default")
    np.testing.assert_allclose(scorer.score(gray).per_frame,
                               scorer.score(np.repeat(gray[..., None], 3, axis=-1)).per_frame)
    with pytest.raises(ValueError, match="uint8"):
        scorer.score(videos[7].astype(np.float32))


def test_brisque_stride_samples_and_interpolates(videos):
    exact = build_quality_scorer("default").score(videos[11])
    strided = build_quality_scorer("default", brisque_stride=4).score(videos[11])
    known = ~np.isnan(strided.raw["brisque"])
    assert np.flatnonzero(known).tolist() == [0, 4, 8, 12]
    np.testing.assert_allclose(strided.raw["brisque"][known], exact.raw["brisque"][known])
    assert np.abs(strided.per_frame - exact.per_frame).max() < 0.05


# --- registry and clip_vq --------------------------------------------------------------------


def test_registry_names_and_errors():
    assert {"default", "default-drift", "hpsv3", "hpsv3-drift", "hpsv3-worldcompass"} <= set(available_quality_scorers())
    with pytest.raises(ValueError, match="Did you mean 'default'"):
        build_quality_scorer("defualt")
    with pytest.raises(ValueError, match="unknown options"):
        build_quality_scorer("default", brisque_strid=2)


def test_clip_vq_is_the_nan_ignoring_mean():
    result = QualityResult(per_frame=np.array([0.2, 0.4, np.nan, 0.9, 0.5]), raw={})
    assert clip_vq(result, slice(0, 3)) == pytest.approx(0.3)
    assert clip_vq(result, (3, 5)) == pytest.approx(0.7)
    assert clip_vq(result, np.array([0, 3])) == pytest.approx(0.55)
    assert np.isnan(clip_vq(result, slice(2, 3)))
    with pytest.raises(ValueError, match="no frames"):
        clip_vq(result, slice(5, 9))
