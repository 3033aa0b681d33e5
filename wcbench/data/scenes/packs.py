"""Scene packs: where a suite's start images come from.

- ``{pack: synthetic, family: NAME}``: a procedural scene per case, with true poses, from
  one family (``room`` by default) or from a list of families that the cases take in turn.
- ``{pack: images, path: DIR}``: your own start images, listed with their captions in
  ``DIR/captions.csv`` (columns ``image``, ``caption``); the cases take them in turn (sorted
  by file name) unless a case names its image, centre-cropped and resized to the suite's
  resolution. The suite's content hash covers the captions and every image's bytes, not the
  folder's place.

"In turn" follows the order of the suite's cases, so a small pack is used evenly.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from wcbench.core.camera import intrinsics_from_fov, script_trajectory
from wcbench.data.scenes.synthetic import Scene, build_scene

PACKS = ("synthetic", "images")


@dataclass
class CaseWorld:
    """What a case starts from: the start image, its caption, intrinsics and, for synthetic
    scenes, the scene and the commanded per-frame poses (the ground truth)."""

    image: np.ndarray  # (H, W, 3) uint8
    prompt: str
    K: np.ndarray
    scene: Scene | None
    poses: np.ndarray  # commanded camera-to-world poses, one per frame


def in_turn(options: list[str], suite, case) -> str:
    """The option ``case`` takes when the suite's cases take ``options`` in turn."""
    index = next(i for i, other in enumerate(suite.cases) if other.id == case.id)
    return options[index % len(options)]


def scene_family(suite, case) -> str:
    """The synthetic family of ``case``'s scene."""
    family = suite.scenes.get("family", "room")
    return family if isinstance(family, str) else in_turn(family, suite, case)


def synthetic_world(suite, script, scene_seed: int, prompt: str = "", family: str = "room") -> CaseWorld:
    """A procedural scene for ``script`` at the suite's size, field of view and step sizes."""
    poses = script_trajectory(script, suite.steps)
    K = intrinsics_from_fov(suite.width, suite.height, suite.fov_deg)
    scene = build_scene(scene_seed, poses[:, :3, 3], family=family)
    image = scene.render(poses[0], K, suite.width, suite.height)
    return CaseWorld(image, prompt or scene.caption, K, scene, poses)


def case_world(suite, case) -> CaseWorld:
    """Build the start of ``case`` from ``suite``'s scene pack."""
    script = case.parsed()
    pack = suite.scenes.get("pack", "synthetic")
    if pack == "synthetic":
        return synthetic_world(suite, script, case.scene_seed, case.prompt, scene_family(suite, case))
    poses = script_trajectory(script, suite.steps)
    K = intrinsics_from_fov(suite.width, suite.height, suite.fov_deg)
    if pack == "images":
        folder = image_pack_folder(suite)
        entries = load_image_folder_pack(folder)
        name = case.image or in_turn(sorted(entries), suite, case)
        if name not in entries:
            raise FileNotFoundError(f"{folder}: case {case.id}: image {name!r} is not in captions.csv")
        image = _read_image(folder / name, suite.width, suite.height)
        return CaseWorld(image, case.prompt or entries[name], K, None, poses)
    raise ValueError(f"suite {suite.name!r}: unknown scene pack {pack!r}; known: synthetic, images")


def image_pack_folder(suite) -> Path:
    """The image folder of an ``images`` pack; a relative path is relative to the suite file."""
    folder = Path(suite.scenes["path"]).expanduser()
    if not folder.is_absolute() and suite.source:
        folder = Path(suite.source).parent / folder
    return folder


def image_pack_digest(folder: Path) -> str:
    """sha256 over captions.csv and every listed image's name and bytes."""
    digest = hashlib.sha256((folder / "captions.csv").read_bytes())
    for name in sorted(load_image_folder_pack(folder)):
        digest.update(name.encode() + b"\0" + (folder / name).read_bytes())
    return digest.hexdigest()[:16]


def load_image_folder_pack(folder: str | Path) -> dict[str, str]:
    """Read ``folder/captions.csv`` (columns ``image``, ``caption``): image file -> caption."""
    folder = Path(folder)
    path = folder / "captions.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path}: an image-folder pack needs captions.csv with columns image,caption")
    with path.open(newline="", encoding="utf-8-sig") as handle:  # -sig: spreadsheets write a BOM
        rows = list(csv.DictReader(handle))
    if not rows or not {"image", "caption"} <= set(rows[0]):
        raise ValueError(f"{path}: needs a header with columns image,caption and at least one row")
    entries = {}
    for line, row in enumerate(rows, start=2):
        image, caption = (row["image"] or "").strip(), (row["caption"] or "").strip()
        if not (folder / image).is_file():
            raise FileNotFoundError(f"{path}: line {line}: image {image!r} not found in {folder}")
        if image in entries:
            raise ValueError(f"{path}: line {line}: image {image!r} is listed twice")
        if not caption:
            raise ValueError(f"{path}: line {line}: image {image!r} has no caption (the caption is the prompt)")
        entries[image] = caption
    return entries


def _read_image(path: Path, width: int, height: int) -> np.ndarray:
    """Read an image as RGB, centre-crop to the target aspect and resize."""
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError(f"{path}: not a readable image")
    h, w = bgr.shape[:2]
    scale = max(width / w, height / h)
    crop_w, crop_h = round(width / scale), round(height / scale)
    x0, y0 = (w - crop_w) // 2, (h - crop_h) // 2
    bgr = cv2.resize(bgr[y0:y0 + crop_h, x0:x0 + crop_w], (width, height), interpolation=cv2.INTER_AREA)
    return bgr[..., ::-1].copy()
