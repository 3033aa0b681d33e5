"""Start images from your own folder (the worked example of docs/models.md) and from scene
families: what cases draw, what the suite hash covers, and bad packs named clearly."""

import json
import shutil
import textwrap
from pathlib import Path

import cv2
import numpy as np
import pytest

from wcbench.cli import main
from wcbench.core.camera import intrinsics_from_fov
from wcbench.data.suite import SuiteError, load_suite
from wcbench.data.scenes import case_world
from wcbench.data.scenes.packs import scene_family

REPO = Path(__file__).resolve().parents[2]
CAPTIONS = {"harbour.jpg": "A harbour at dusk, boats moored along a stone pier",
            "forest.png": "A forest path in autumn, low sun through the trees",
            "street.jpg": "A narrow old-town street after rain, shop signs lit"}


def _photo(seed: int, width: int, height: int) -> np.ndarray:
    """A textured stand-in for a photo (smooth gradients plus detail), BGR uint8."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width] / max(width, height)
    base = np.stack([np.sin(6 * xx + c) * np.cos(4 * yy - c) for c in rng.uniform(0, 3, 3)], axis=-1)
    noise = cv2.GaussianBlur(rng.normal(0, 1, (height, width, 3)), (0, 0), 3)
    return np.clip(127 + 80 * base + 40 * noise, 0, 255).astype(np.uint8)


@pytest.fixture()
def photo_suite(tmp_path):
    """docs/models.md, "Your own start images": a folder, captions.csv, a two-line suite."""
    folder = tmp_path / "my_photos"
    folder.mkdir()
    for seed, (name, size) in enumerate(zip(CAPTIONS, [(400, 300), (300, 400), (512, 256)])):
        cv2.imwrite(str(folder / name), _photo(seed, *size))
    (folder / "captions.csv").write_text("image,caption\n" + "".join(f'{k},"{v}"\n' for k, v in CAPTIONS.items()))
    suite = tmp_path / "my-photos.yaml"
    suite.write_text(textwrap.dedent("""\
        base: wc-mini
        name: my-photos
        resolution: [96, 64]
        horizons: {short: 125}
        cases_per_cell: 2
        scenes: {pack: images, path: my_photos}
        """))
    return suite


def test_cases_draw_captioned_images_at_the_suites_size(photo_suite):
    suite = load_suite(photo_suite)
    drawn = set()
    for case in suite.cases:
        world = case_world(suite, case)
        assert world.image.shape == (64, 96, 3) and world.scene is None
        assert world.prompt in CAPTIONS.values()
        assert np.allclose(world.K, intrinsics_from_fov(96, 64, suite.fov_deg)) and len(world.poses) == 125
        drawn.add(world.prompt)
    assert len(drawn) == 3  # 4 cases take the 3 images in turn


def test_export_and_run_a_model_on_your_images(photo_suite, tmp_path, monkeypatch):
    out = tmp_path / "export"
    assert main(["export", "--suite", str(photo_suite), "--out", str(out)]) == 0
    suite = load_suite(photo_suite)
    case = suite.cases[0]
    start = cv2.imread(str(out / case.id / "start.png"))[..., ::-1]
    assert np.array_equal(start, case_world(suite, case).image)
    assert (out / case.id / "prompt.txt").read_text().strip() in CAPTIONS.values()
    monkeypatch.chdir(REPO)
    run = tmp_path / "run"
    assert main(["run", "--suite", str(photo_suite), "--model", "examples.my_model:PanZoomModel",
                 "--out", str(run), "--limit", "1"]) == 0
    results = json.loads((run / "results.json").read_text())
    assert results["suite_hash"] == suite.content_hash()  # the whole suite: --limit runs extend to it
    assert results["cases"][0]["status"] == "ok" and results["cases"][0]["prompt"] in CAPTIONS.values()


def test_hash_covers_the_images_not_the_folders_place(photo_suite, tmp_path):
    before = load_suite(photo_suite).content_hash()
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    shutil.copytree(photo_suite.parent / "my_photos", moved / "my_photos")
    shutil.copy(photo_suite, moved / photo_suite.name)
    assert load_suite(moved / photo_suite.name).content_hash() == before
    folder = moved / "my_photos"
    cv2.imwrite(str(folder / "forest.png"), _photo(7, 300, 400))  # one image replaced
    replaced = load_suite(moved / photo_suite.name).content_hash()
    captions = (folder / "captions.csv").read_text()
    (folder / "captions.csv").write_text(captions.replace("autumn", "spring"))
    recaptioned = load_suite(moved / photo_suite.name).content_hash()
    assert len({before, replaced, recaptioned}) == 3


@pytest.mark.parametrize("captions, fragment", [
    (None, "captions.csv with columns image,caption"),
    ("picture,text\nharbour.jpg,x\n", "columns image,caption"),
    ("image,caption\nmissing.jpg,a\n", "line 2: image 'missing.jpg' not found"),
    ("image,caption\nharbour.jpg,a\nharbour.jpg,b\n", "line 3: image 'harbour.jpg' is listed twice"),
    ("image,caption\nharbour.jpg,\n", "has no caption"),
])
def test_bad_image_packs_name_the_suite_and_the_line(photo_suite, captions, fragment):
    path = photo_suite.parent / "my_photos" / "captions.csv"
    if captions is None:
        path.unlink()
    else:
        path.write_text(captions)
    with pytest.raises(SuiteError) as err:
        load_suite(photo_suite)
    assert "my-photos.yaml" in str(err.value) and fragment in str(err.value)


@pytest.mark.parametrize("scenes, fragment", [
    ("{pack: photos}", "scenes.pack 'photos' is not one of synthetic, images"),
    ("{pack: images}", "needs scenes.path"),
    ("{pack: synthetic, family: rooom}", "Did you mean 'room'"),
    ("{pack: synthetic, path: x}", "do not apply to pack 'synthetic'"),
])
def test_bad_scenes_settings(tmp_path, scenes, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(f"base: wc-mini\nscenes: {scenes}\n")
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    assert "bad.yaml" in str(err.value) and fragment in str(err.value)


def test_family_setting_keeps_room_suites_and_cases_take_families_in_turn(tmp_path):
    path = tmp_path / "room.yaml"
    path.write_text("base: wc-mini\nscenes: {pack: synthetic, family: room}\n")
    mini = load_suite("wc-mini")
    assert load_suite(path).content_hash() == mini.content_hash()
    mixed_path = tmp_path / "mixed.yaml"
    mixed_path.write_text("base: wc-mini\nresolution: [64, 48]\n"
                          "scenes: {pack: synthetic, family: [room, terrain, street]}\n")
    mixed = load_suite(mixed_path)
    assert [scene_family(mixed, case) for case in mixed.cases[:4]] == ["room", "terrain", "street", "room"]
    worlds = [case_world(mixed, case) for case in mixed.cases[:3]]
    assert [world.scene.family for world in worlds] == ["room", "terrain", "street"]
    hashes = {mixed.content_hash()}
    for family in ("terrain", "street"):
        path.write_text(f"base: wc-mini\nresolution: [64, 48]\nscenes: {{pack: synthetic, family: {family}}}\n")
        hashes.add(load_suite(path).content_hash())
    assert len(hashes) == 3


def test_the_oracle_runs_on_open_terrain(tmp_path):
    path = tmp_path / "terrain.yaml"
    path.write_text("base: wc-mini\nname: terrain\nresolution: [64, 48]\nhorizons: {short: 125}\n"
                    "cases_per_cell: 1\nscenes: {pack: synthetic, family: terrain}\n")
    out = tmp_path / "run"
    assert main(["run", "--suite", str(path), "--model", "oracle", "--out", str(out), "estimator=gt"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert [case["if_acc"] for case in results["cases"]] == [1.0, 1.0]
