"""Synthetic scenes and the oracle model: determinism, true poses, variants."""

import numpy as np
import pytest

from wcbench.core.actions import clip_step_ranges, parse_script
from wcbench.core.camera import StepSizes, intrinsics_from_fov, script_trajectory
from wcbench.models.base import CaseInfo
from wcbench.models.registry import available_models, build_model
from wcbench.data.scenes.synthetic import build_scene, render, render_frames

SCRIPT = parse_script("w-2, left-1, d+up-1")
STEPS = StepSizes(0.05, 0.75)
K = intrinsics_from_fov(64, 48, 75.0)


def _scene(seed=11):
    poses = script_trajectory(SCRIPT, STEPS)
    return build_scene(seed, poses[:, :3, 3]), poses


def test_render_is_deterministic_and_textured():
    (scene_a, poses), (scene_b, _) = _scene(), _scene()
    a = render(scene_a, poses[3], K, 64, 48)
    b = render(scene_b, poses[3], K, 64, 48)
    assert a.shape == (48, 64, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b)
    assert a.std() > 10  # textured, not flat
    other = render(_scene(seed=12)[0], poses[3], K, 64, 48)
    assert not np.array_equal(a, other)


def test_camera_motion_changes_the_picture_and_objects_stay_clear():
    scene, poses = _scene()
    frames = render_frames(scene, poses, K, 64, 48)
    diffs = [np.abs(frames[i].astype(int) - frames[i - 1]).mean() for i in range(1, len(frames))]
    assert min(diffs) > 0.5
    for box in scene.boxes[1:]:
        nearest = np.clip(poses[:, :3, 3], box.lo, box.hi)
        assert np.min(np.linalg.norm(poses[:, :3, 3] - nearest, axis=1)) >= 0.9


def _info(scene, poses):
    return CaseInfo("c", SCRIPT, poses, K, 75.0, (64, 48), 4, STEPS, scene=scene)


def _generate(spec, scene, poses, seed=0):
    model = build_model(spec)
    frames = [model.reset(render(scene, poses[0], K, 64, 48), "p", seed, _info(scene, poses))[None]]
    steps = SCRIPT.step_actions()
    for r in clip_step_ranges(SCRIPT.num_steps, 4):
        frames.append(model.step([steps[i - 1] for i in r]))
    return np.concatenate(frames)


def test_oracle_renders_exactly_the_commanded_poses():
    scene, poses = _scene()
    video = _generate("oracle", scene, poses)
    assert np.array_equal(video, render_frames(scene, poses, K, 64, 48))


def test_oracle_variants_break_what_they_say():
    scene, poses = _scene()
    exact = _generate("oracle", scene, poses)
    static = _generate("oracle-static", scene, poses)
    assert all(np.array_equal(f, static[0]) for f in static)
    lag = _generate("oracle-lag", scene, poses)
    assert np.array_equal(lag[:9], np.repeat(exact[:1], 9, axis=0))  # 2 latent steps late
    mirror = _generate("oracle-mirror", scene, poses)
    assert np.array_equal(mirror[:9], exact[:9]) and not np.array_equal(mirror[-1], exact[-1])
    noisy_a = _generate("oracle-noisy", scene, poses, seed=1)
    noisy_b = _generate("oracle-noisy", scene, poses, seed=1)
    assert np.array_equal(noisy_a, noisy_b)
    assert 5 < np.abs(noisy_a.astype(int) - exact).mean() < 15


def test_registry_errors():
    assert {"oracle", "oracle-mirror", "oracle-lag", "oracle-static", "oracle-noisy"} <= set(available_models())
    with pytest.raises(ValueError, match="Did you mean 'oracle'"):
        build_model("oracel")
    with pytest.raises(ValueError, match="cannot import module"):
        build_model("no_such_pkg.mod:Factory")


# ---------------------------------------------------------------- scene families

from wcbench.core.camera import camera_rotation  # noqa: E402
from wcbench.data.scenes.synthetic import SCENE_FAMILIES, camera_setup, depth_map  # noqa: E402

FAMILY_SCRIPT = parse_script("w-2, a+left-2, s+up-1")


def _family_scene(family: str, seed: int = 3, pitch: float = 0.0):
    start = np.eye(4)
    start[:3, :3] = camera_rotation(0.0, pitch)
    poses = start[None] @ script_trajectory(FAMILY_SCRIPT, STEPS)
    return build_scene(seed, poses[:, :3, 3], family=family), poses


@pytest.mark.parametrize("family", SCENE_FAMILIES)
def test_every_family_renders_deterministically_and_keeps_clear_of_the_camera(family):
    scene, poses = _family_scene(family)
    again, _ = _family_scene(family)
    assert scene.family == family
    frames = render_frames(scene, poses, K, 64, 48)
    assert np.array_equal(frames, render_frames(again, poses, K, 64, 48))
    assert frames[0].std() > 5
    for box in scene.boxes:
        if not box.inside:
            nearest = np.clip(poses[:, :3, 3], box.lo, box.hi)
            assert np.min(np.linalg.norm(poses[:, :3, 3] - nearest, axis=1)) >= 0.9
    if scene.ground is not None:  # the camera stays above the ground
        assert np.all(poses[:, 1, 3] < scene.ground.y)


def test_terrain_has_sky_at_infinity_and_ground_to_the_horizon():
    shares = []
    for seed in range(4):
        scene, poses = _family_scene("terrain", seed)
        depth = depth_map(scene, poses[0], K, 64, 48)
        sky = ~np.isfinite(depth)
        shares.append(sky.mean())
        assert sky[:24].mean() > sky[24:].mean()  # the sky is above, the ground below
        assert np.isfinite(depth[-1]).all() and np.nanmax(np.where(np.isfinite(depth), depth, np.nan)) > 50
    assert 0.2 < np.mean(shares) < 0.7
    # looking up raises the sky's share, looking down lowers it
    scene, poses = _family_scene("terrain", 1, pitch=8.0)
    up = (~np.isfinite(depth_map(scene, poses[0], K, 64, 48))).mean()
    scene, poses = _family_scene("terrain", 1, pitch=-8.0)
    down = (~np.isfinite(depth_map(scene, poses[0], K, 64, 48))).mean()
    assert up > down


def test_streets_have_a_long_depth_range():
    ranges = []
    for seed in range(6):
        scene, poses = _family_scene("street", seed)
        depth = depth_map(scene, poses[0], K, 64, 48)
        finite = depth[np.isfinite(depth)]
        ranges.append(np.percentile(finite, 99) / np.percentile(finite, 5))
    assert np.median(ranges) > 10  # near facades and a street running far ahead


def test_camera_setups_vary_with_the_seed_within_their_ranges():
    setups = [camera_setup("terrain", seed) for seed in range(40)]
    assert all(60 <= s.fov_deg <= 90 and 0.5 <= s.step_scale <= 2.0 and abs(s.start_pitch_deg) <= 8 for s in setups)
    assert len({round(s.fov_deg, 3) for s in setups}) == 40
    assert camera_setup("room", 5) == camera_setup("room", 6)  # rooms are filmed as the suites film them
    with pytest.raises(ValueError, match="unknown scene family 'forest'.*terrain"):
        build_scene(1, family="forest")


from wcbench.data.scenes.render import Box, _nearest_box_hits, _screen_rects  # noqa: E402
from wcbench.data.scenes.stressors import Stressors, add_dynamics  # noqa: E402


@pytest.mark.parametrize("family", ["room", "terrain", "street", "plaza"])
def test_screen_rectangles_change_no_ray_and_skip_most_of_the_image(family):
    """The slab test only looks inside each box's screen rectangle: every ray must hit what
    testing every box everywhere finds, with movers, a pitched and rolled camera, and a box that
    reaches behind the camera (tested everywhere)."""
    scene, poses = _family_scene(family, seed=5, pitch=6.0)
    scene = add_dynamics(scene, Stressors(movers="huge"), poses, 75.0, 5)
    roll = np.eye(4)
    roll[:2, :2] = [[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]]
    width, height = 64, 48
    u, v = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
    pixels = np.stack([u, v, np.ones_like(u)], axis=-1)
    area = checked = 0
    for index, pose in enumerate([poses[0], poses[-1] @ roll]):
        c2w = pose.copy()
        boxes = scene.boxes_at(float(index))
        straddling = Box(c2w[:3, 3] - 0.2, c2w[:3, 3] + [0.2, 0.2, 3.0], texture=0)
        boxes = boxes + [straddling]
        dirs = (pixels @ np.linalg.inv(K).T) @ c2w[:3, :3].T
        rects = _screen_rects(boxes, c2w, K, width, height)
        assert rects[-1] is None and (family != "room" or rects[0] is None)
        culled = _nearest_box_hits(boxes, c2w[:3, 3], dirs, rects)
        everywhere = _nearest_box_hits(boxes, c2w[:3, 3], dirs, [None] * len(boxes))
        for got, want in zip(culled, everywhere):
            assert np.array_equal(got, want)
        assert np.isfinite(everywhere[0]).any()
        area += sum(width * height if r is None else (r[0].stop - r[0].start) * (r[1].stop - r[1].start)
                    for r in rects)
        checked += len(boxes) * width * height
    assert area < 0.6 * checked
