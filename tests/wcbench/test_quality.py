"""The default visual-quality scorer: its measurements on known damage, the orderings it must get
right on smooth renders, pixel-scale texture and real footage, drift and flicker, the registry
and clip_vq. (The HPSv3 scorers are in test_hpsv3.py.)"""

from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np
import pytest

from wcbench.core.actions import parse_script
from wcbench.core.camera import StepSizes, intrinsics_from_fov, script_trajectory
from wcbench.core.noise import compute_noise_sigma
from wcbench.data.scenes.synthetic import build_scene, render_frames
from wcbench.scoring import vq_terms
from wcbench.scoring.quality import (COMPONENT_NOTES, QualityResult, QualityScorer, available_quality_scorers,
                                     build_quality_scorer, clip_vq, spatial_indices)

from benchmarks.vq_probes import damage, damage_orderings, gradual, mean_vq, per_clip_vq, texture_video

REALVID = Path(__file__).resolve().parents[3] / "shared" / "realvid"
SIZE = 96


def _render(seed: int, script: str = "w+left-3") -> np.ndarray:
    poses = script_trajectory(parse_script(script), StepSizes(0.05, 0.75))
    scene = build_scene(seed, poses[:, :3, 3])
    return render_frames(scene, poses, intrinsics_from_fov(SIZE, SIZE, 75.0), SIZE, SIZE)


@pytest.fixture(scope="module")
def room() -> np.ndarray:
    return _render(7)


@pytest.fixture(scope="module")
def texture() -> np.ndarray:
    return texture_video(3, SIZE, SIZE, 9)


@pytest.fixture(scope="module")
def scorer():
    return build_quality_scorer("default")


# --- single-frame measurements ----------------------------------------------------------------


def test_blur_effect_bounds_and_order(room):
    values = [vq_terms.compute_blur_effect(vq_terms.to_gray(damage(room[:1], "blur", s) if s else room[:1])[0])
              for s in (0, 1, 2, 4)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert np.all(np.diff(values) > 0), values
    assert vq_terms.compute_blur_effect(np.full((32, 32), 90, np.uint8)) == 1.0  # no edges at all
    # Noise must not pass for sharpness: the blurred frame stays blurred when noise is added.
    blurred = vq_terms.to_gray(damage(room[:1], "blur", 2))
    noisy = vq_terms.to_gray(damage(damage(room[:1], "blur", 2), "noise", 5))
    assert vq_terms.compute_blur_effect(noisy[0]) > vq_terms.compute_blur_effect(blurred[0]) - 0.02


def test_block_grid_edges_are_not_sharpness(room):
    """JPEG's block boundaries are sharp however blurred the blocks are; they are left out."""
    gray = vq_terms.to_gray(room[:1])[0]
    coarse = vq_terms.to_gray(damage(room[:1], "jpeg", 5))[0]
    assert vq_terms.compute_blur_effect(coarse) > vq_terms.compute_blur_effect(gray)
    assert vq_terms.compute_blur_effect(coarse, grid=0) < vq_terms.compute_blur_effect(coarse)


def test_noise_sigma_recovers_added_noise(room):
    flat = np.full((1, 96, 96), 120, np.uint8)  # grey: the noise is the luma noise
    for sigma in (3, 8):
        assert compute_noise_sigma(damage(flat, "noise", sigma)[0]) == pytest.approx(sigma, rel=0.2)
    assert compute_noise_sigma(vq_terms.to_gray(room[:1])[0]) < 0.5


def test_blockiness_sees_the_grid_not_the_content(room):
    gray = vq_terms.to_gray(room[:1])[0]
    compressed = vq_terms.to_gray(damage(room[:1], "jpeg", 30))[0]
    assert abs(vq_terms.compute_blockiness(gray)) < 0.1
    assert vq_terms.compute_blockiness(compressed) > 0.5
    # Coarser compression, stronger block edges: no ceiling.
    coarser = vq_terms.to_gray(damage(room[:1], "jpeg", 5))[0]
    assert vq_terms.compute_blockiness(coarser) > vq_terms.compute_blockiness(compressed)
    # The same blocks 4 pixels off the grid are content, not codec blocks.
    assert vq_terms.compute_blockiness(compressed[4:, 4:]) < 0.1


def test_colour_shift_reads_a_cast_whatever_the_content(room):
    every = np.arange(len(room))
    steady = vq_terms.compute_colour_shift(room, every)
    # the camera moves; the colours it sees change
    assert steady[0] == pytest.approx(0.0, abs=1e-9) and steady.max() < 0.05
    cast = room.astype(np.float32) * np.array([1.1, 1.0, 0.9], np.float32)
    cast = np.concatenate([room[:1], np.clip(cast[1:], 0, 255).astype(np.uint8)])
    shifted = vq_terms.compute_colour_shift(cast, every)
    assert shifted[1:] == pytest.approx(np.log(1.1) - np.log(0.9), abs=0.04)
    grey = np.repeat(vq_terms.to_gray(room)[..., None], 3, axis=-1)
    grey_cast = np.concatenate([grey[:1], np.clip(grey[1:] * np.array([1.1, 1, 1]), 0, 255).astype(np.uint8)])
    assert vq_terms.compute_colour_shift(grey, every).max() < 1e-9
    assert vq_terms.compute_colour_shift(grey_cast, every)[1:].min() > 0.06


# --- frame-to-frame measurements ----------------------------------------------------------------


def test_temporal_noise_ignores_texture_and_sees_noise(texture):
    gray = vq_terms.to_gray(texture)
    flicker, noise = vq_terms.compute_temporal(gray)
    assert np.isnan(noise[0]) and np.isnan(flicker[0])
    spatial = np.mean([compute_noise_sigma(g) for g in gray])
    assert spatial > 3 and np.nanmean(noise) < 0.5  # the texture reads as noise within a frame, not across
    _, noisy = vq_terms.compute_temporal(vq_terms.to_gray(damage(texture, "noise", 3)))
    _, blurred = vq_terms.compute_temporal(vq_terms.to_gray(damage(texture, "blur", 1)))
    assert np.nanmin(noisy) > np.nanmax(noise) and np.nanmean(blurred) > np.nanmean(noise)


def test_flicker_catches_a_brightness_jump(room):
    gray = vq_terms.to_gray(room).astype(np.int16)
    flicker, _ = vq_terms.compute_temporal(gray.astype(np.uint8))
    assert np.nanmax(np.abs(flicker)) < 0.5
    gray[6] += 12
    jumped, _ = vq_terms.compute_temporal(np.clip(gray, 0, 255).astype(np.uint8))
    assert jumped[6] == pytest.approx(12, abs=1.5) and jumped[7] == pytest.approx(-12, abs=1.5)
    assert np.nanmax(np.abs(np.delete(jumped, [0, 6, 7]))) < 0.5


# --- the default scorer ------------------------------------------------------------------------


def test_default_scorer_protocol_and_components(room, scorer):
    assert isinstance(scorer, QualityScorer)
    assert (scorer.name, scorer.version, scorer.higher_is_better) == ("default", "2", True)
    result = scorer.score(room)
    assert isinstance(result, QualityResult) and result.per_frame.shape == (13,)
    assert np.all((result.per_frame > 0) & (result.per_frame <= 1))
    for key in ("q_sharpness", "q_noise", "q_blocks", "q_flicker", "q_drift", "drift", "blur_effect", "temporal_noise",
                "spatial_noise", "blockiness", "flicker", "colour_shift"):
        assert result.raw[key].shape == (13,), key
        assert key in COMPONENT_NOTES, key
    # Single-frame terms on frame 0 and every 4th frame from frame 1; frame-to-frame ones from frame 1.
    assert np.flatnonzero(~np.isnan(result.raw["blur_effect"])).tolist() == [0, 1, 5, 9, 12]
    assert np.isnan(result.raw["temporal_noise"][0]) and not np.isnan(result.raw["temporal_noise"][1:]).any()
    assert result.raw["drift"][0] == pytest.approx(0.0, abs=1e-9)


def test_spatial_indices_never_interpolate_from_the_reference():
    assert spatial_indices(1, 4).tolist() == [0]
    assert spatial_indices(18, 4).tolist() == [0, 1, 5, 9, 13, 17]
    assert spatial_indices(6, 1).tolist() == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("content", ["room", "texture"])
def test_every_damage_scores_below_clean(content, scorer, request):
    """The slightest blur, noise, compression or flicker costs vq, on smooth renders and on
    aliased pixel-scale texture alike (the texture reads as noise to any single-frame measure)."""
    frames = request.getfixturevalue(content)
    levels = {"blur": (0.5, 2), "noise": (2, 10), "jpeg": (90, 30), "flicker": (5,)}
    ordering = damage_orderings(scorer, frames, levels)
    assert all(ordering.below_clean().values()), {k: round(ordering.clean - v, 4) for k, v in ordering.damaged.items()}
    for kind in ("blur", "jpeg"):
        assert ordering.in_order(kind), kind


@pytest.mark.skipif(not REALVID.exists(), reason="../shared/realvid is absent")
def test_real_footage_damage_scores_below_clean(scorer):
    from wcbench.core.video import read_video

    frames = read_video(REALVID / "kitti00-left-turn")[:9]
    ordering = damage_orderings(scorer, frames, {"blur": (0.5,), "noise": (2,), "jpeg": (90,)})
    assert all(ordering.below_clean().values()), ordering


def test_growing_damage_lowers_each_clip(scorer):
    frames = _render(3, "w+left-4")  # 17 frames: 4 clips of 4 after the start image
    for kind, step in (("blur", 0.5), ("colour", 0.05)):
        values = per_clip_vq(scorer, gradual(frames, kind, step))
        assert len(values) == 4 and np.all(np.diff(values) < 0), (kind, np.round(values, 4))


def test_flicker_costs_vq(room, scorer):
    clean, flickering = scorer.score(room), scorer.score(damage(room, "flicker", 20, seed=3))
    assert flickering.per_frame[1:].mean() < clean.per_frame[1:].mean() - 0.03
    assert np.all(clean.raw["q_flicker"] > 0.9)


def test_drift_variant_is_relative_to_the_first_frame(room):
    decaying = gradual(room, "blur", 0.8)
    drift_scorer = build_quality_scorer("default-drift")
    steady, decay = drift_scorer.score(room), drift_scorer.score(decaying)
    assert drift_scorer.name == "default-drift"
    assert decay.per_frame[0] == 0.0 and steady.per_frame[0] == 0.0
    assert decay.per_frame[-3:].mean() < steady.per_frame[-3:].mean() - 0.1


def test_scores_are_deterministic_and_gray_scores_like_rgb(room, scorer):
    a, b = scorer.score(room), build_quality_scorer("default").score(room.copy())
    np.testing.assert_array_equal(a.per_frame, b.per_frame)
    gray = vq_terms.to_gray(room[:5])
    rgb = np.repeat(gray[..., None], 3, axis=-1)
    np.testing.assert_allclose(scorer.score(gray).per_frame, scorer.score(rgb).per_frame)
    with pytest.raises(ValueError, match="uint8"):
        scorer.score(room.astype(np.float32))


def test_a_single_frame_scores(room, scorer):
    result = scorer.score(room[:1])
    assert result.per_frame.shape == (1,) and np.isfinite(result.per_frame).all()


def test_mean_vq_leaves_out_the_start_image(room, scorer):
    assert mean_vq(scorer, room) == pytest.approx(scorer.score(room).per_frame[1:].mean())


# --- registry and clip_vq --------------------------------------------------------------------


def test_registry_names_and_errors():
    expected = {"default", "default-drift", "hpsv3", "hpsv3-drift", "hpsv3-worldcompass"}
    assert expected <= set(available_quality_scorers())
    with pytest.raises(ValueError, match="Did you mean 'default'"):
        build_quality_scorer("defualt")
    with pytest.raises(ValueError, match="unknown options"):
        build_quality_scorer("default", brisque_stride=2)
    with pytest.raises(ValueError, match="spatial_stride"):
        build_quality_scorer("default", spatial_stride=0)


def test_clip_vq_is_the_nan_ignoring_mean():
    result = QualityResult(per_frame=np.array([0.2, 0.4, np.nan, 0.9, 0.5]), raw={})
    assert clip_vq(result, slice(0, 3)) == pytest.approx(0.3)
    assert clip_vq(result, (3, 5)) == pytest.approx(0.7)
    assert clip_vq(result, np.array([0, 3])) == pytest.approx(0.55)
    assert np.isnan(clip_vq(result, slice(2, 3)))
    with pytest.raises(ValueError, match="no frames"):
        clip_vq(result, slice(5, 9))


def test_blur_effect_sums_exactly_whatever_the_thread_count():
    """The blur effect's masked means are exact (integer sums), so a frame's value is the same
    under any number of OpenCV threads (cv2.mean's IPP path differed in the last bit, which made
    `score --jobs 1` and its one-thread workers disagree) and on any machine."""
    rng = np.random.default_rng(5)
    for high, share in ((8, 0.5), (60, 0.1), (300, 0.03), (2805, 0.1)):  # cv2.mean: inexact on the first three
        values = rng.integers(0, high, (478, 831)).astype(np.int16)  # a frame's differences: one column fewer
        mask = ((rng.random((478, 831)) > 1 - share) * 255).astype(np.uint8)
        exact = Fraction(int(values[mask > 0].astype(np.int64).sum()), int(np.count_nonzero(mask)))
        assert vq_terms._masked_mean(values, mask) == float(exact)
    assert vq_terms._masked_mean(values, np.zeros_like(mask)) == 0.0
    texture = cv2.GaussianBlur((rng.random((480, 832)) * 255).astype(np.uint8), (0, 0), 2.0)
    threads = cv2.getNumThreads()
    try:
        values = []
        for count in (1, 2, 4):
            cv2.setNumThreads(count)
            values.append(vq_terms.compute_blur_effect(texture))
    finally:
        cv2.setNumThreads(threads)
    assert values[0] == values[1] == values[2]
