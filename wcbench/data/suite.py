"""Suites and cases: YAML benchmark definitions, deterministic case generation, content hash.

A suite file names its tracks, horizons, number of cases per track x horizon, the scene
pack, rendering parameters and a seed; cases (scene seed, prompt, action script) follow
deterministically from that. ``base: other-suite`` lets a variant override a few keys.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from wcbench.core.actions import Action, ScriptError, latents_for_frames, parse_script, script_from_steps
from wcbench.core.camera import StepSizes
from wcbench.core.ids import id_problem
from wcbench.core.video import odd_size_problem
from wcbench.data.scenes.packs import PACKS, image_pack_digest, image_pack_folder, load_image_folder_pack
from wcbench.data.scenes.synthetic import RENDERER_VERSION, SCENE_FAMILIES

SUITE_FORMAT_VERSION = 1
HORIZON_FRAMES = {"short": 125, "mid": 253, "long": 381}
TRACKS = ("basic", "combined")
PITCH_LIMIT_DEG = 24.0  # scripts keep the camera within +-24 deg of level

_SUITE_KEYS = {
    "name", "description", "version", "base", "seed", "tracks", "horizons", "cases_per_cell",
    "resolution", "fov_deg", "fps", "latents_per_clip", "step_translation", "step_degrees",
    "scenes", "cases", "segment_steps",
}
_CASE_KEYS = {"id", "track", "horizon", "script", "scene_seed", "prompt", "image"}


class SuiteError(ValueError):
    """A suite file is invalid; the message names the file, the case and the problem."""


@dataclass(frozen=True)
class Case:
    """One benchmark case: a start scene/image, a prompt and an action script."""

    id: str
    track: str
    horizon: str
    script: str
    scene_seed: int
    prompt: str = ""
    image: str | None = None  # a start image file (image-folder packs); None = synthetic scene

    @property
    def num_frames(self) -> int:
        return HORIZON_FRAMES[self.horizon]

    def parsed(self):
        return parse_script(self.script)


@dataclass(frozen=True)
class Suite:
    """A resolved suite: parameters plus its generated cases."""

    name: str
    version: int
    seed: int
    resolution: tuple[int, int]  # (width, height)
    fov_deg: float
    fps: int
    latents_per_clip: int
    step_translation: float
    step_degrees: float
    scenes: dict
    cases: tuple[Case, ...]
    description: str = ""
    source: str = ""
    meta: dict = field(default_factory=dict, compare=False)

    @property
    def steps(self) -> StepSizes:
        return StepSizes(self.step_translation, self.step_degrees)

    @property
    def width(self) -> int:
        return self.resolution[0]

    @property
    def height(self) -> int:
        return self.resolution[1]

    def content_hash(self) -> str:
        """sha256 over everything that affects scores: parameters, cases, renderer version and,
        for an image pack, the captions and image bytes (not where the folder lies)."""
        payload = {k: v for k, v in asdict(self).items() if k not in ("description", "source", "meta")}
        payload["format"] = SUITE_FORMAT_VERSION
        payload["renderer"] = RENDERER_VERSION
        if self.scenes.get("pack") == "images":
            payload["scenes"] = {"pack": "images", "images": image_pack_digest(image_pack_folder(self))}
        text = json.dumps(payload, sort_keys=True, default=list)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---------------------------------------------------------------- script generation

_TRANSLATIONS = (Action(forward=1), Action(forward=-1), Action(right=1), Action(right=-1))
_ROTATIONS = (Action(yaw=1), Action(yaw=-1), Action(pitch=1), Action(pitch=-1))


def _pitch_ok(action: Action, count: int, pitch_deg: float, step_deg: float) -> bool:
    return abs(pitch_deg + action.pitch * count * 4 * step_deg) <= PITCH_LIMIT_DEG


def generate_script(rng: np.random.Generator, track: str, num_steps: int, step_deg: float,
                    segment_steps: tuple[int, int] = (2, 6)) -> str:
    """A random script of ``num_steps`` latent steps for a track.

    basic: one component per segment (a translation or a rotation); combined: a translation
    and a rotation together, switching to a different pair each segment. Pitch stays within
    +-PITCH_LIMIT_DEG so the camera keeps looking into the scene.
    """
    steps: list[Action] = []
    pitch = 0.0
    previous: Action | None = None
    while len(steps) < num_steps:
        count = int(min(rng.integers(segment_steps[0], segment_steps[1] + 1), num_steps - len(steps)))
        for _ in range(50):
            if track == "basic":
                pool = _TRANSLATIONS + _ROTATIONS
                action = pool[rng.integers(len(pool))]
            elif track == "combined":
                move = _TRANSLATIONS[rng.integers(4)]
                turn = _ROTATIONS[rng.integers(4)]
                action = Action(move.forward, move.right, turn.yaw, turn.pitch)
            else:
                raise ValueError(f"unknown track {track!r}; known: {', '.join(TRACKS)}")
            if action != previous and _pitch_ok(action, count, pitch, step_deg):
                break
        pitch += action.pitch * count * 4 * step_deg
        steps.extend([action] * count)
        previous = action
    return script_from_steps(steps).format()


# ---------------------------------------------------------------- loading

def builtin_suites_dir() -> Path:
    """Folder of the suites shipped with the package."""
    return Path(str(resources.files("wcbench") / "suites"))


def list_suites() -> list[str]:
    return sorted(p.stem for p in builtin_suites_dir().glob("*.yaml"))


def resolve_suite_path(name_or_path: str | Path) -> Path:
    """A suite name (``wc-mini``) or a path to a YAML file."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.exists():
            raise SuiteError(f"{path}: suite file not found")
        return path
    candidate = builtin_suites_dir() / f"{name_or_path}.yaml"
    if not candidate.exists():
        known = list_suites()
        close = difflib.get_close_matches(str(name_or_path), known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise SuiteError(f"unknown suite {name_or_path!r}.{hint} Built-in suites: {', '.join(known)}; "
                         "or pass a path to a YAML file.")
    return candidate


def _read_raw(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Read a suite YAML and merge it over its ``base`` (shallow, key by key)."""
    if path.resolve() in seen:
        raise SuiteError(f"{path}: 'base' chain loops back to itself")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise SuiteError(f"{path}: not valid YAML: {err}") from err
    if not isinstance(raw, dict):
        raise SuiteError(f"{path}: a suite file must be a mapping of keys to values")
    unknown = set(raw) - _SUITE_KEYS
    if unknown:
        raise SuiteError(f"{path}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_SUITE_KEYS)}")
    if "base" in raw:
        base_path = resolve_suite_path(raw["base"]) if not (path.parent / str(raw["base"])).exists() \
            else path.parent / str(raw["base"])
        merged = _read_raw(base_path, seen + (path.resolve(),))
        merged.update({k: v for k, v in raw.items() if k != "base"})
        return merged
    return raw


def _validate_scenes(path: Path, raw: Any) -> dict:
    """``{pack: synthetic, family: NAME | [NAMES]}`` or ``{pack: images, path: DIR}``, checked;
    the default family (room) is left out so that such suites keep their hash."""
    scenes = dict(raw) if isinstance(raw, dict) else None
    if scenes is None:
        raise SuiteError(f"{path}: scenes must be a mapping, e.g. {{pack: synthetic, family: room}}")
    pack = scenes.setdefault("pack", "synthetic")
    allowed = {"synthetic": {"pack", "family"}, "images": {"pack", "path"}}.get(pack)
    if allowed is None:
        raise SuiteError(f"{path}: scenes.pack {pack!r} is not one of {', '.join(PACKS)}")
    if set(scenes) - allowed:
        raise SuiteError(f"{path}: scenes key(s) {sorted(set(scenes) - allowed)} do not apply to pack {pack!r}; "
                         f"allowed: {sorted(allowed)}")
    if pack == "synthetic":
        family = scenes.pop("family", "room")
        families = [family] if isinstance(family, str) else list(family) if isinstance(family, list) else []
        for name in families or [str(family)]:
            if name not in SCENE_FAMILIES:
                close = difflib.get_close_matches(str(name), SCENE_FAMILIES, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise SuiteError(f"{path}: unknown scenes.family {name!r}.{hint} Known: {', '.join(SCENE_FAMILIES)}")
        if families != ["room"]:
            scenes["family"] = families[0] if len(families) == 1 else families
        return scenes
    if "path" not in scenes:
        raise SuiteError(f"{path}: an images pack needs scenes.path, the folder holding captions.csv and the images")
    folder = Path(str(scenes["path"])).expanduser()
    try:
        load_image_folder_pack(folder if folder.is_absolute() else path.parent / folder)
    except (OSError, ValueError) as err:
        raise SuiteError(f"{path}: scenes.path: {err}") from err
    return scenes


def _validate_case(path: Path, index: int, entry: Any, horizons: dict[str, int]) -> Case:
    where = f"{path}: case {entry.get('id', index) if isinstance(entry, dict) else index}"
    if not isinstance(entry, dict):
        raise SuiteError(f"{where}: each case must be a mapping")
    unknown = set(entry) - _CASE_KEYS
    if unknown:
        raise SuiteError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_CASE_KEYS)}")
    for key in ("id", "track", "horizon", "script"):
        if key not in entry:
            raise SuiteError(f"{where}: missing key {key!r}")
    problem = id_problem(entry["id"])
    if problem:  # ids name files under --out: refused here, before a run or an export writes anything
        raise SuiteError(f"{path}: case {index}: {problem}")
    if entry["track"] not in TRACKS:
        raise SuiteError(f"{where}: unknown track {entry['track']!r}; known: {', '.join(TRACKS)}")
    if entry["horizon"] not in horizons:
        raise SuiteError(f"{where}: unknown horizon {entry['horizon']!r}; this suite has {sorted(horizons)}")
    try:
        script = parse_script(str(entry["script"]))
    except ScriptError as err:
        raise SuiteError(f"{where}: invalid script: {err}") from err
    expected = horizons[entry["horizon"]]
    if script.num_frames != expected:
        raise SuiteError(f"{where}: script makes {script.num_frames} frames ({script.num_steps} latent steps) "
                         f"but horizon {entry['horizon']!r} has {expected} frames "
                         f"({latents_for_frames(expected) - 1} latent steps)")
    return Case(id=str(entry["id"]), track=entry["track"], horizon=entry["horizon"], script=script.format(),
                scene_seed=int(entry.get("scene_seed", index)), prompt=str(entry.get("prompt", "")),
                image=entry.get("image"))


def load_suite(name_or_path: str | Path) -> Suite:
    """Load a suite by name or path, validate it and generate its cases."""
    path = resolve_suite_path(name_or_path)
    raw = _read_raw(path)
    try:
        horizons = {str(k): int(v) for k, v in raw.get("horizons", HORIZON_FRAMES).items()}
        for name, frames in horizons.items():
            if HORIZON_FRAMES.get(name) != frames:
                raise SuiteError(f"{path}: horizon {name!r}={frames} is not one of "
                                 f"{', '.join(f'{k}={v}' for k, v in HORIZON_FRAMES.items())}")
        tracks = list(raw.get("tracks", TRACKS))
        for track in tracks:
            if track not in TRACKS:
                raise SuiteError(f"{path}: unknown track {track!r}; known: {', '.join(TRACKS)}")
        width, height = (int(x) for x in raw.get("resolution", (160, 160)))
        problem = odd_size_problem(width, height)
        if problem:  # found here, not when the first case's video is written
            raise SuiteError(f"{path}: resolution {problem}")
        seed = int(raw.get("seed", 0))
        step_degrees = float(raw.get("step_degrees", 0.75))
        segment_steps = tuple(int(x) for x in raw.get("segment_steps", (2, 6)))
    except (TypeError, ValueError, AttributeError) as err:
        if isinstance(err, SuiteError):
            raise
        raise SuiteError(f"{path}: bad value: {err}") from err

    if "cases" in raw:
        cases = [_validate_case(path, i, entry, horizons) for i, entry in enumerate(raw["cases"] or [])]
    else:
        per_cell = int(raw.get("cases_per_cell", 2))
        cases = []
        for t_index, track in enumerate(tracks):
            for h_index, (horizon, frames) in enumerate(horizons.items()):
                for i in range(per_cell):
                    rng = np.random.default_rng([seed, t_index, h_index, i])
                    num_steps = latents_for_frames(frames) - 1
                    script = generate_script(rng, track, num_steps, step_degrees, segment_steps)
                    cases.append(Case(id=f"{track}-{horizon}-{i:03d}", track=track, horizon=horizon,
                                      script=script, scene_seed=int(rng.integers(2**31))))
    ids = [c.id for c in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SuiteError(f"{path}: duplicate case id(s) {duplicates}")
    return Suite(
        name=str(raw.get("name", path.stem)), version=int(raw.get("version", 1)), seed=seed,
        resolution=(width, height), fov_deg=float(raw.get("fov_deg", 75.0)), fps=int(raw.get("fps", 16)),
        latents_per_clip=int(raw.get("latents_per_clip", 4)),
        step_translation=float(raw.get("step_translation", 0.05)), step_degrees=step_degrees,
        scenes=_validate_scenes(path, raw.get("scenes", {"pack": "synthetic"})), cases=tuple(cases),
        description=str(raw.get("description", "")), source=str(path),
    )
