"""Scene packs: the synthetic pack (a procedural room per case, with true poses) and the
image-folder pack (real start images plus a captions CSV, for real world models)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from wcbench.actions import intrinsics_from_fov, script_trajectory
from wcbench.scenes.synthetic import Scene, build_scene


@dataclass
class CaseWorld:
    """What a case starts from: the start image, its caption, intrinsics and, for synthetic
    scenes, the scene and the commanded per-frame poses (the ground truth)."""

    image: np.ndarray  # (H, W, 3) uint8
    prompt: str
    K: np.ndarray
    scene: Scene | None
    poses: np.ndarray  # commanded camera-to-world poses, one per frame


def synthetic_world(suite, script, scene_seed: int, prompt: str = "") -> CaseWorld:
    """A procedural room for ``script`` at the suite's size, field of view and step sizes."""
    poses = script_trajectory(script, suite.steps)
    K = intrinsics_from_fov(suite.width, suite.height, suite.fov_deg)
    scene = build_scene(scene_seed, poses[:, :3, 3])
    image = scene.render(poses[0], K, suite.width, suite.height)
    return CaseWorld(image, prompt or scene.caption, K, scene, poses)


def case_world(suite, case) -> CaseWorld:
    """Build the start of ``case`` from ``suite``'s scene pack."""
    script = case.parsed()
    pack = suite.scenes.get("pack", "synthetic")
    if pack == "synthetic":
        return synthetic_world(suite, script, case.scene_seed, case.prompt)
    poses = script_trajectory(script, suite.steps)
    K = intrinsics_from_fov(suite.width, suite.height, suite.fov_deg)
    if pack == "images":
        folder = Path(suite.scenes["path"])
        if not folder.is_absolute() and suite.source:
            folder = Path(suite.source).parent / folder
        entries = load_image_folder_pack(folder)
        names = sorted(entries)
        name = case.image or names[case.scene_seed % len(names)]
        if name not in entries:
            raise FileNotFoundError(f"{folder}: case {case.id}: image {name!r} is not in captions.csv")
        image = _read_image(folder / name, suite.width, suite.height)
        return CaseWorld(image, case.prompt or entries[name], K, None, poses)
    raise ValueError(f"suite {suite.name!r}: unknown scene pack {pack!r}; known: synthetic, images")


def load_image_folder_pack(folder: str | Path) -> dict[str, str]:
    """Read ``folder/captions.csv`` (columns ``image``, ``caption``): image file -> caption."""
    folder = Path(folder)
    path = folder / "captions.csv"
    if not path.exists():
        raise FileNotFoundError(f"{path}: an image-folder pack needs captions.csv with columns image,caption")
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or not {"image", "caption"} <= set(rows[0]):
        raise ValueError(f"{path}: needs a header with columns image,caption and at least one row")
    entries = {}
    for line, row in enumerate(rows, start=2):
        if not (folder / row["image"]).exists():
            raise FileNotFoundError(f"{path}: line {line}: image {row['image']!r} not found in {folder}")
        entries[row["image"]] = row["caption"]
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
