"""Stressed renders (movers, overlays, wobble, roll) and what the estimator makes of them:
movers move and are counted, a still camera among movers or before water reads still, an
overlay does not change the labels, a user's mask reaches the estimator from a manifest and its
record."""

import json
from dataclasses import replace

import cv2
import numpy as np
import pytest

from wcbench.cli import main
from wcbench.core.actions import Action, parse_script
from wcbench.core.camera import classify_relative_pose, relative_pose
from wcbench.core.video import write_video
from wcbench.data.scenes.families import HELD_OUT_FAMILIES, SCENE_FAMILIES
from wcbench.data.scenes.stressors import Stressors, correlated_wobble, roll_jitter
from wcbench.pose import build_estimator
from wcbench.pose.calibration_videos import CalibrationSpec, motion_case

SPEC = CalibrationSpec(static_steps=0)


def _case(family: str, seed: int, track: str, stressors: Stressors, steps: int = 4):
    return replace(motion_case(family, seed, track, steps, 0, SPEC), stressors=stressors)


def _labels(estimate, estimator) -> list[tuple[str, str]]:
    return [classify_relative_pose(relative_pose(a, b), estimator.thresholds)
            for a, b in zip(estimate.poses[:-1], estimate.poses[1:])]


def test_a_case_without_stressors_renders_as_the_plain_renderer_does():
    case = _case("street", 7100, "combined", Stressors())
    frames, _, poses = case.render(96, 96)
    layers = case.render_layers(96, 96)
    assert np.array_equal(frames, layers.frames) and np.allclose(poses, layers.poses)
    assert not layers.moving.any() and not layers.overlay.any()


def test_movers_move_and_more_of_them_cover_more():
    shares = {}
    for level in ("sparse", "dense", "huge"):
        layers = _case("plaza", 7101, "still", Stressors(movers=level)).render_layers(96, 96)
        per_frame = layers.moving.reshape(len(layers.moving), -1).mean(axis=1)
        shares[level] = per_frame.mean()
        # a still camera: every change between frames is the movers'
        changed = np.any(layers.frames[1:] != layers.frames[:-1], axis=3)
        assert changed[~(layers.moving[1:] | layers.moving[:-1])].mean() < 0.01
        assert changed.any()
    assert shares["sparse"] < shares["dense"] < shares["huge"]


def test_the_held_out_family_is_never_calibrated_on():
    assert set(HELD_OUT_FAMILIES).isdisjoint(SCENE_FAMILIES)
    assert set(CalibrationSpec().families) == set(SCENE_FAMILIES)


def test_wobble_and_roll_have_the_size_asked_for():
    rng = np.random.default_rng(0)
    texture = cv2.GaussianBlur(rng.uniform(0, 255, (160, 320)).astype(np.float32), (0, 0), 3.0)
    texture = cv2.normalize(texture, None, 0, 255, cv2.NORM_MINMAX).astype(np.uint8)
    frames = np.repeat(np.repeat(texture[None, ..., None], 3, axis=3), 24, axis=0)
    wobbled = correlated_wobble(frames, 1.5, seed=1)
    flows = [cv2.calcOpticalFlowFarneback(texture, cv2.cvtColor(f, cv2.COLOR_RGB2GRAY), None, 0.5, 3, 21, 3, 5, 1.1, 0)
             for f in wobbled]
    rms = float(np.sqrt(np.mean(np.stack(flows)[:, 20:-20, 20:-20] ** 2)))
    assert 1.0 < rms < 2.0, rms  # per axis, at 320 px wide
    poses = np.repeat(np.eye(4)[None], 200, axis=0)
    rolled = roll_jitter(poses, 1.0, seed=2)
    roll = np.degrees(np.arctan2(rolled[:, 1, 0], rolled[:, 0, 0]))
    assert 0.6 < np.sqrt(np.mean(roll**2)) < 1.4 and np.allclose(rolled[:, :3, 3], 0)


@pytest.fixture(scope="module")
def estimator():
    return build_estimator("opencv")


def test_a_still_camera_among_walkers_reads_still(estimator):
    layers = _case("room", 7102, "still", Stressors(movers="dense"), steps=6).render_layers(192, 192)
    assert layers.moving.mean() > 0.05
    estimate = estimator.estimate(layers.frames, K=layers.K)
    still = (Action().translation_label, Action().rotation_label)
    assert np.mean([label == still for label in _labels(estimate, estimator)]) >= 0.8
    assert np.max(estimate.mover_share) > 0.2  # where they moved most, the walkers' tracks were set aside


def test_a_still_camera_before_a_rippling_pond_reads_still(estimator):
    # the pond fills the bottom of the picture; the dry ground beside it stands still
    layers = _case("street", 7104, "still", Stressors(nonrigid=True)).render_layers(256, 256)
    still = (Action().translation_label, Action().rotation_label)
    median_rule = build_estimator("opencv", bottom_still_share=0.5, two_way_share=1.0)  # the two-way rule off too
    shares = [np.mean([label == still for label in _labels(rule.estimate(layers.frames, K=layers.K), rule)])
              for rule in (estimator, median_rule)]
    assert shares[0] == 1.0 and shares[1] < 0.5


def test_a_still_camera_before_water_over_all_the_near_ground_reads_still(estimator):
    # the pond covers the bottom of the picture, so the still-world rule finds no still ground
    # there; but the ripples run both ways along any translation fitted to them
    layers = _case("terrain", 7102, "still", Stressors(nonrigid=True)).render_layers(256, 256)
    still = (Action().translation_label, Action().rotation_label)
    one_way = build_estimator("opencv", two_way_share=1.0)
    rules = (estimator, one_way)
    estimates = [rule.estimate(layers.frames, K=layers.K) for rule in rules]
    shares = [np.mean([label == still for label in _labels(e, rule)]) for e, rule in zip(estimates, rules)]
    assert shares[0] == 1.0 and shares[1] < 0.2
    assert np.min(estimates[0].mover_share[1:]) > 0.3  # the water's tracks were set aside


def test_a_hud_does_not_change_the_labels_and_is_masked(estimator):
    clean = _case("room", 7103, "combined", Stressors(), steps=5).render_layers(192, 192)
    hud = _case("room", 7103, "combined", Stressors(overlay="hud"), steps=5).render_layers(192, 192)
    plain, stamped = estimator.estimate(clean.frames, K=clean.K), estimator.estimate(hud.frames, K=hud.K)
    assert _labels(plain, estimator) == _labels(stamped, estimator)
    # a few still specks of a clean video may be left out too; the HUD is left out whole
    assert plain.masked_share < 0.03 and stamped.masked_share >= hud.overlay.mean()


def test_letterbox_bars_do_not_change_the_labels(estimator):
    # a sideways step while turning, where the picture beside the bars decides which is which:
    # normalised with the bars in, its texture took a gain that stays put and every label was wrong
    case = _case("street", 7104, "combined", Stressors(), steps=5)
    clean = case.render_layers(192, 192)
    boxed = replace(case, stressors=Stressors(overlay="letterbox")).render_layers(192, 192)
    estimate = estimator.estimate(boxed.frames, K=boxed.K)
    assert _labels(estimate, estimator) == _labels(estimator.estimate(clean.frames, K=clean.K), estimator)
    assert estimate.masked_share >= boxed.overlay.mean()


def test_a_manifest_mask_reaches_the_record(tmp_path):
    case = _case("room", 7104, "combined", Stressors(overlay="hud"), steps=4)
    layers = case.render_layers(160, 128)
    write_video(tmp_path / "hud.avi", layers.frames)
    ys, xs = np.nonzero(layers.overlay)
    box = f"{xs.min()},{ys.min()},{xs.max() - xs.min() + 1},{ys.max() - ys.min() + 1}"
    script = parse_script(case.script).format()
    (tmp_path / "m.csv").write_text(f'id,video,actions,fov_deg,mask\nfound,hud.avi,"{script}",{case.fov_deg},\n'
                                    f'given,hud.avi,"{script}",{case.fov_deg},"{box}"\n'
                                    f'bad,hud.avi,"{script}",{case.fov_deg},"1,2,3"\n')
    out = tmp_path / "out"
    assert main(["score", "--manifest", str(tmp_path / "m.csv"), "--out", str(out)]) == 1  # the bad row fails
    by_id = {c["id"]: c for c in json.loads((out / "results.json").read_text())["cases"]}
    assert by_id["found"]["masked_share"] > 0.5 * layers.overlay.mean()
    assert by_id["given"]["masked_share"] >= by_id["found"]["masked_share"]
    assert by_id["bad"]["status"] == "failed" and "x,y,w,h" in by_id["bad"]["error"]
    assert "overlay" in (out / "report.html").read_text()
    assert main(["score", "--manifest", str(tmp_path / "m.csv"), "--out", str(tmp_path / "o2"),
                 "--mask", "missing.png"]) == 2
