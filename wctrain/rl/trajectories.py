"""Training trajectories from WorldPlay pose JSON (``data.trajectories=DIR``), as the released
WorldCompass trains on its ``--random_pose_path`` trajectories.

Every ``*.json`` under DIR holds one trajectory (``{"0": {"extrinsic": c2w, "K": K}, ...}``, the
file WorldPlay's ``--pose`` reads and ``wcbench export`` writes) or a list of them (the release's
``random_pose_path`` file). One pose per latent. Each trajectory becomes an action script by the
benchmark's own rule (:func:`wcbench.core.controls.script_from_latent_poses`: the relative pose
of consecutive latents -> translation and rotation label), cut to its first latents as the
release reads its first ``window_frames`` keys. The converted set is hashed like a suite
(:meth:`TrajectorySet.content_hash`) and the hash is recorded in the run's ``config.json``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wcbench.core.actions import Script
from wcbench.core.camera import Thresholds
from wcbench.core.controls import parse_worldplay_poses, script_from_latent_poses

TRAJECTORY_FORMAT_VERSION = 1  # bump when the conversion would give other scripts from the same files


@dataclass(frozen=True)
class TrajectorySet:
    """Action scripts converted from pose trajectories, each ``num_steps`` latent steps long;
    ``names`` say where each came from within the folder (``a/b.json``, ``a/b.json[index]``)."""

    folder: str
    names: tuple[str, ...]
    scripts: tuple[Script, ...]
    thresholds: Thresholds
    num_steps: int

    def content_hash(self) -> str:
        """sha256 over what the episodes are made of: the converted scripts with their names,
        the thresholds and the conversion's version (not where the folder lies)."""
        payload = {"format": TRAJECTORY_FORMAT_VERSION, "num_steps": self.num_steps,
                   "thresholds": [self.thresholds.translation, self.thresholds.rotation_deg],
                   "trajectories": [[name, script.format()] for name, script in zip(self.names, self.scripts)]}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]

    def header(self) -> dict:
        """What the run records of its trajectories (``config.json``'s ``trajectories``)."""
        return {"folder": self.folder, "count": len(self.scripts), "num_steps": self.num_steps,
                "thresholds": {"translation": self.thresholds.translation,
                               "rotation_deg": self.thresholds.rotation_deg},
                "hash": self.content_hash()}


def trajectory_entries(data: object, path: Path) -> list[tuple[str, object]]:
    """The trajectories a pose file holds, each with the suffix that names it in the file: one
    (a mapping, suffix ``""``) or many (a list, ``[index]``)."""
    if isinstance(data, list):
        if not data:
            raise ValueError(f"{path}: an empty list holds no trajectory")
        return [(f"[{index}]", entry) for index, entry in enumerate(data)]
    return [("", data)]


def convert_trajectory(data: object, name: str, thresholds: Thresholds, num_steps: int) -> Script:
    """One pose trajectory as a script of its first ``num_steps`` latent steps; errors name it."""
    latent_poses, _ = parse_worldplay_poses(data, name)
    if len(latent_poses) < num_steps + 1:
        raise ValueError(f"{name}: {len(latent_poses)} latent poses, too few: a training episode commands "
                         f"{num_steps} latent steps, so each trajectory needs at least {num_steps + 1} poses "
                         f"(or train shorter episodes, rl.episode_clips)")
    return script_from_latent_poses(latent_poses[:num_steps + 1], thresholds)


def load_trajectory_set(folder: str | Path, thresholds: Thresholds, num_steps: int) -> TrajectorySet:
    """Every trajectory of every ``*.json`` under ``folder`` (sorted by path), converted."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ValueError(f"data.trajectories={folder}: not a folder (give the folder holding the pose JSON files)")
    files = sorted(root.rglob("*.json"))
    if not files:
        raise ValueError(f"data.trajectories={folder}: no *.json pose files in it")
    names, scripts = [], []
    for path in files:
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"{path}: cannot read WorldPlay pose JSON: {err}") from err
        for suffix, entry in trajectory_entries(data, path):
            scripts.append(convert_trajectory(entry, f"{path}{suffix}", thresholds, num_steps))
            # the hash names trajectories within the folder, so a moved folder keeps its hash
            names.append(path.relative_to(root).as_posix() + suffix)
    return TrajectorySet(str(root), tuple(names), tuple(scripts), thresholds, num_steps)


@dataclass(frozen=True)
class TrajectoryMix:
    """A trajectory set and the share of training episodes drawn from it (``data.trajectory_share``)."""

    trajectories: TrajectorySet
    share: float

    def draw(self, rng: np.random.Generator) -> Script | None:
        """A trajectory's script for one episode, uniformly over the set, or ``None`` when this
        episode's script is a generated one (probability 1 - share)."""
        if rng.random() >= self.share:
            return None
        return self.trajectories.scripts[int(rng.integers(len(self.trajectories.scripts)))]
