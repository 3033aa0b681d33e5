"""Burnt-in overlays: found where they stay put while the picture moves, nowhere else."""

from dataclasses import replace

import cv2
import numpy as np
import pytest

from wcbench.core.actions import Action
from wcbench.data.scenes.stressors import Stressors, composite_overlay
from wcbench.pose.calibration_videos import CalibrationSpec, motion_case
from wcbench.pose.overlay import MaskError, detect_static_overlay, load_user_mask, parse_rectangles


def _pan(frames: int = 17, step: float = 1.5, seed: int = 0) -> np.ndarray:
    """A textured picture panning sideways by ``step`` px a frame: (T, 120, 200, 3) uint8."""
    rng = np.random.default_rng(seed)
    texture = cv2.GaussianBlur(rng.uniform(0, 255, (140, 420)).astype(np.float32), (0, 0), 2.0)
    texture = cv2.normalize(texture, None, 0, 255, cv2.NORM_MINMAX)
    out = []
    for index in range(frames):
        shift = np.float32([[1, 0, -step * index], [0, 1, 0]])
        frame = cv2.warpAffine(texture, shift, (200, 120), flags=cv2.INTER_LINEAR)
        out.append(np.repeat(frame[..., None], 3, axis=2).astype(np.uint8))
    return np.stack(out)


def _grays(frames: np.ndarray) -> list[np.ndarray]:
    return [cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY) for frame in frames]


@pytest.mark.parametrize("kind", ["hud", "logo", "letterbox", "subtitles"])
def test_an_overlay_on_a_moving_picture_is_found(kind):
    frames = _pan()
    actions = [Action(yaw=1)] * len(frames)
    stamped, covered = composite_overlay(frames, kind, actions, seed=3)
    found = detect_static_overlay(_grays(stamped))
    assert found[covered].mean() > 0.6, f"{kind}: found {found[covered].mean():.2f} of it"
    # nothing far from it: the mask is the overlay plus the tracking margin around it
    margin = cv2.dilate(covered.astype(np.uint8), np.ones((25, 25), np.uint8)).astype(bool)
    assert found[~margin].mean() < 0.02


def test_nothing_is_found_without_an_overlay_or_while_the_camera_stands_still():
    assert not detect_static_overlay(_grays(_pan())).any()
    still = _pan(step=0.0)
    stamped, _ = composite_overlay(still, "hud", [Action()] * len(still), seed=3)
    assert not detect_static_overlay(_grays(stamped)).any()  # the world stays put too: it is not an overlay


def test_a_user_mask_from_rectangles_or_an_image(tmp_path):
    mask = load_user_mask("10,20,30,5; 0,0,4,4", 100, 50)
    assert mask.sum() == 30 * 5 + 16 and mask[20, 10] and not mask[19, 10]
    image = np.zeros((25, 50), np.uint8)
    image[:5] = 255
    cv2.imwrite(str(tmp_path / "hud.png"), image)
    resized = load_user_mask("hud.png", 100, 50, base=tmp_path)
    assert resized.shape == (50, 100) and resized[:10].all() and not resized[10:].any()


@pytest.mark.parametrize("text, problem", [("10,20,30", "x,y,w,h"), ("a,b,c,d", "x,y,w,h"), ("0,0,0,5", "w and h"),
                                           (";", "no rectangle")])
def test_a_bad_mask_says_what_is_wrong(text, problem):
    with pytest.raises(MaskError, match=problem):
        parse_rectangles(text)


def test_a_missing_mask_image_is_named(tmp_path):
    with pytest.raises(MaskError, match="missing.png"):
        load_user_mask("missing.png", 10, 10, base=tmp_path)


@pytest.mark.parametrize("family, seed", [("room", 7105), ("plaza", 7105), ("terrain", 7102)])
def test_a_translucent_watermark_over_a_rendered_scene_is_found(family, seed):
    """A watermark changes with what is behind it; its steady edges give it away, faint ones over
    a pale sky (terrain 7102: edges of 6-10 grey levels a pixel) too."""
    case = replace(motion_case(family, seed, "combined", 4, 0, CalibrationSpec(static_steps=0)),
                   stressors=Stressors(overlay="watermark"))
    layers = case.render_layers(192, 192)
    found = detect_static_overlay(_grays(layers.frames[:17]))
    margin = cv2.dilate(layers.overlay.astype(np.uint8), np.ones((25, 25), np.uint8)).astype(bool)
    assert found[layers.overlay].mean() > 0.9 and found[~margin].mean() < 0.01
