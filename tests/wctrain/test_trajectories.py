"""Training on WorldPlay pose-JSON trajectories (``data.trajectories=DIR``): pose files made here
from known motions convert back to the commanded labels; malformed files are refused naming the
file and the problem; the set's hash; how trajectories and generated scripts mix; the default
trainer's episodes are unchanged; a run records the set and refuses to resume on another."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from wcbench.core.actions import parse_script
from wcbench.core.camera import StepSizes, Thresholds, intrinsics_from_fov, script_trajectory
from wcbench.core.controls import to_worldplay_json
from wcbench.data.suite import load_suite
from wctrain.cli import load_config
from wctrain.config import RLConfig, to_trainer_config
from wctrain.rl.curriculum import initial_label_accuracy
from wctrain.rl.episodes import sample_episode
from wctrain.rl.trainer import build_trajectory_mix, train
from wctrain.rl.trajectories import TrajectoryMix, TrajectorySet, load_trajectory_set

THRESHOLDS = Thresholds(1e-4, 0.05)  # data.translation_threshold, data.rotation_threshold_deg defaults
EPISODE_STEPS = 15                   # rl.episode_clips=4: 16 latents
K = [[969.7, 0.0, 960.0], [0.0, 969.7, 540.0], [0.0, 0.0, 1.0]]

# (forward, right, yaw, pitch) signs per latent step and how many steps, with the script they command,
# written out by hand: + is forward, right, turn right, look up
MOTIONS = [((1, 0, 0, 0), 2), ((0, 0, 1, 0), 2), ((-1, 0, -1, 0), 2), ((0, 1, 0, 1), 3), ((0, -1, 0, -1), 2),
           ((0, 0, 0, 0), 1), ((1, 1, 1, 0), 3)]
COMMANDED = "w-2, right-2, s+left-2, d+up-3, a+down-2, none-1, w+d+right-3"


def about_y(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def about_x(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def worldplay_style_poses(motions: list, speed: float = 0.08, degrees: float = 3.0) -> list[np.ndarray]:
    """Per-latent camera-to-world poses made the way WorldPlay makes its pose trajectories: each
    latent turns the camera in its own frame (yaw about its y axis, then pitch about its x axis;
    OpenCV axes, so a positive pitch lifts the view towards -y) and then moves it along its new
    axes, ``speed`` per axis (a diagonal is not normalised)."""
    pose, poses = np.eye(4), [np.eye(4)]
    for (forward, right, yaw, pitch), count in motions:
        for _ in range(count):
            pose = pose.copy()
            pose[:3, :3] = pose[:3, :3] @ about_y(math.radians(yaw * degrees)) @ about_x(math.radians(pitch * degrees))
            pose[:3, 3] += pose[:3, :3] @ np.array([right * speed, 0.0, forward * speed])
            poses.append(pose)
    return poses


def pose_json(poses: list[np.ndarray]) -> dict:
    return {str(k): {"extrinsic": pose.tolist(), "K": K} for k, pose in enumerate(poses)}


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_known_motions_convert_back_to_the_commanded_labels(tmp_path):
    folder = tmp_path / "poses"
    write(folder / "walk.json", pose_json(worldplay_style_poses(MOTIONS)))
    # the release's random_pose_path form: a list; the second is longer (only its first 16 latents
    # train) and written by `wcbench export` at the suites' scale, rounded to float32 as many writers do
    long_script = parse_script("s+right-4, up-5, a+left-6, w+down-5")
    exported = to_worldplay_json(script_trajectory(long_script, StepSizes(0.05, 0.75)),
                                 intrinsics_from_fov(160, 96, 75))
    rounded = json.loads(json.dumps(exported, default=float), parse_float=lambda v: float(np.float32(v)))
    write(folder / "sub" / "random_poses.json", [pose_json(worldplay_style_poses(MOTIONS[::-1])), rounded])
    loaded = load_trajectory_set(folder, THRESHOLDS, EPISODE_STEPS)
    assert loaded.names == ("sub/random_poses.json[0]", "sub/random_poses.json[1]", "walk.json")
    reversed_commanded = ", ".join(reversed(COMMANDED.split(", ")))
    assert [s.format() for s in loaded.scripts] == [reversed_commanded, "s+right-4, up-5, a+left-6", COMMANDED]
    assert all(s.num_steps == EPISODE_STEPS for s in loaded.scripts)
    # each latent step carries its commanded full label (9 * translation + rotation)
    commanded_labels = [a.label for a in parse_script(COMMANDED).step_actions()]
    assert [a.label for a in loaded.scripts[2].step_actions()] == commanded_labels


def test_the_hash_follows_the_converted_set_not_the_folder(tmp_path):
    poses = worldplay_style_poses(MOTIONS)
    first = load_trajectory_set(write(tmp_path / "a" / "walk.json", pose_json(poses)).parent, THRESHOLDS, EPISODE_STEPS)
    moved = load_trajectory_set(write(tmp_path / "b" / "walk.json", pose_json(poses)).parent, THRESHOLDS, EPISODE_STEPS)
    assert first.content_hash() == moved.content_hash() and len(first.content_hash()) == 16
    # the same poses with a turn too small for the threshold in latent 1 convert alike: same hash
    nudged = [p.copy() for p in poses]
    nudged[1][:3, :3] = nudged[1][:3, :3] @ about_y(math.radians(0.01))
    same = load_trajectory_set(write(tmp_path / "c" / "walk.json", pose_json(nudged)).parent, THRESHOLDS,
                               EPISODE_STEPS)
    assert same.content_hash() == first.content_hash()
    reversed_walk = write(tmp_path / "d" / "walk.json", pose_json(worldplay_style_poses(MOTIONS[::-1])))
    other_motion = load_trajectory_set(reversed_walk.parent, THRESHOLDS, EPISODE_STEPS)
    coarser = load_trajectory_set(tmp_path / "a", Thresholds(0.1, 0.05), EPISODE_STEPS)  # 0.08 per latent: no move
    assert len({first.content_hash(), other_motion.content_hash(), coarser.content_hash()}) == 3
    assert coarser.scripts[0].format().startswith("none-2, right-2, left-2")
    assert first.header() == {"folder": str(tmp_path / "a"), "count": 1, "num_steps": EPISODE_STEPS,
                              "thresholds": {"translation": 1e-4, "rotation_deg": 0.05}, "hash": first.content_hash()}


def _scaled(poses: list[np.ndarray]) -> list[np.ndarray]:
    bad = [p.copy() for p in poses]
    bad[3][:3, :3] *= 1.1
    return bad


def _mirrored(poses: list[np.ndarray]) -> list[np.ndarray]:
    bad = [p.copy() for p in poses]
    bad[3][:3, 0] *= -1
    return bad


def _projective(poses: list[np.ndarray]) -> list[np.ndarray]:
    bad = [p.copy() for p in poses]
    bad[3][3, 2] = 0.5
    return bad


@pytest.mark.parametrize("make, problem", [
    (lambda p: pose_json(_scaled(p)), r"walk\.json: latent 3: .*not orthonormal"),
    (lambda p: pose_json(_mirrored(p)), r"walk\.json: latent 3: .*determinant -1"),
    (lambda p: pose_json(_projective(p)), r"walk\.json: latent 3: .*last row"),
    (lambda p: pose_json([q[:3] for q in p]), r"walk\.json: latent 0: extrinsic must be 4x4 .* \(3, 4\)"),
    (lambda p: pose_json(p[:10]), r"walk\.json: 10 latent poses, too few: .* at least 16"),
    (lambda p: {"a": pose_json(p)["0"]}, r"walk\.json: keys must be latent indices"),
    (lambda p: [pose_json(p), pose_json(p[:4])], r"walk\.json\[1\]: 4 latent poses, too few"),
    (lambda p: [], r"walk\.json: an empty list"),
    (lambda p: [[1, 2]], r"walk\.json\[0\]: a trajectory must be a non-empty mapping"),
    (lambda p: {"0": {"K": K}}, r"walk\.json: latent 0: needs an 'extrinsic'"),
], ids=["scaled", "mirrored", "projective", "3x4", "too-few", "keys", "list-entry", "empty-list", "not-a-mapping",
        "no-extrinsic"])
def test_malformed_pose_files_are_refused_naming_file_and_problem(tmp_path, make, problem):
    path = write(tmp_path / "poses" / "walk.json", make(worldplay_style_poses(MOTIONS)))
    with pytest.raises(ValueError, match=problem) as error:
        load_trajectory_set(tmp_path / "poses", THRESHOLDS, EPISODE_STEPS)
    assert str(path) in str(error.value)


def test_unreadable_or_missing_trajectories_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        load_trajectory_set(tmp_path / "missing", THRESHOLDS, EPISODE_STEPS)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"no \*\.json pose files"):
        load_trajectory_set(tmp_path / "empty", THRESHOLDS, EPISODE_STEPS)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "walk.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"broken/walk\.json: cannot read WorldPlay pose JSON"):
        load_trajectory_set(tmp_path / "broken", THRESHOLDS, EPISODE_STEPS)


def test_settings_default_off_and_share_one_with_a_folder(tmp_path):
    default = to_trainer_config(load_config("train", []))
    assert default.data.share == 0.0 and build_trajectory_mix(default) is None
    folder = write(tmp_path / "poses" / "walk.json", pose_json(worldplay_style_poses(MOTIONS))).parent
    given = to_trainer_config(load_config("train", [f"data.trajectories={folder}"]))
    mix = build_trajectory_mix(given)
    assert given.data.share == 1.0 and mix.share == 1.0 and mix.trajectories.scripts[0].format() == COMMANDED
    assert build_trajectory_mix(to_trainer_config(load_config("train", [f"data.trajectories={folder}",
                                                                         "data.trajectory_share=0"]))) is None
    with pytest.raises(ValueError, match="data.trajectories is null"):
        to_trainer_config(load_config("train", ["data.trajectory_share=0.5"]))
    with pytest.raises(ValueError, match=r"trajectory_share must be in \[0, 1\]"):
        to_trainer_config(load_config("train", [f"data.trajectories={folder}", "data.trajectory_share=1.5"]))


def _mix(share: float) -> TrajectoryMix:
    scripts = (parse_script("w-15"), parse_script("right-15"))
    return TrajectoryMix(TrajectorySet("poses", ("a.json", "b.json"), scripts, THRESHOLDS, EPISODE_STEPS), share)


def test_episodes_mix_trajectories_and_generated_scripts_by_share():
    rng = np.random.default_rng(0)
    drawn = [_mix(0.3).draw(rng) for _ in range(2000)]
    picked = [script.format() for script in drawn if script is not None]
    assert abs(len(picked) / 2000 - 0.3) < 0.03 and abs(picked.count("w-15") / len(picked) - 0.5) < 0.05
    assert all(_mix(1.0).draw(rng) is not None for _ in range(100)) and _mix(0.0).draw(rng) is None
    suite, rl = load_suite("wc-mini"), RLConfig()
    trajectory_scripts = {"w-15", "right-15"}
    mixed = {sample_episode(rl, suite, step, 0, set(), mix=_mix(0.5)).script.format() for step in range(6)}
    assert mixed & trajectory_scripts and mixed - trajectory_scripts  # both kinds within 6 draws at this seed
    # the label curriculum weighs trajectory scripts among its candidates like generated ones
    focused = sample_episode(rl, suite, 3, 0, set(), initial_label_accuracy(), 1, mix=_mix(1.0))
    assert focused.script.format() in trajectory_scripts and focused.image.shape == (*suite.resolution[::-1], 3)


def test_the_default_trainers_episodes_are_unchanged():
    # scripts the trainer drew before data.trajectories existed (same seed, step, group)
    suite, rl = load_suite("wc-mini"), RLConfig()
    assert sample_episode(rl, suite, 3, 1, set()).script.format() == "a+left-5, a+down-5, d+left-5"
    assert (sample_episode(rl, suite, 7, 0, set(), initial_label_accuracy(), 2).script.format()
            == "a+right-5, s+up-5, a+down-5")


def test_a_run_records_its_trajectories_and_resumes_only_on_them(tmp_path, make_small_tinywm):
    init = tmp_path / "init"
    make_small_tinywm().save_pretrained(init)
    folder = write(tmp_path / "poses" / "walk.json", pose_json(worldplay_style_poses(MOTIONS))).parent
    common = [f"run_dir={tmp_path / 'run'}", f"+model_options.checkpoint={init}", "rl.group_size=2", "rl.top_k=1",
              "rl.episode_clips=2", "eval.every=0", "rl.focus_candidates=1", "rl.explore_focus=0"]
    run = train(load_config("train", [*common, f"data.trajectories={folder}", "rl.steps=1"]))
    recorded = json.loads((run / "config.json").read_text())["trajectories"]
    assert recorded == load_trajectory_set(folder, THRESHOLDS, 7).header()
    assert recorded["count"] == 1 and recorded["num_steps"] == 7
    with pytest.raises(ValueError, match=r"cannot resume: it trained on the trajectories of .* generated scripts only"):
        train(load_config("train", [*common, "rl.steps=2"]))
