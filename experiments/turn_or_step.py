"""Are a model's commanded turns read as steps by the 4-DoF fit? The check behind the version 12
candidate in docs/estimator.md ("Tried and not taken").

    OMP_NUM_THREADS=1 python -m experiments.turn_or_step RUN_FOLDER [--workers 2]

RUN_FOLDER is a ``wcbench run`` output folder with its stored videos. Every latent window is
tracked and fitted as the shipped estimator does; beside version 11's moving decision it
computes the candidate's (the parallax the 4-DoF fit's rotation leaves, times 0.8, its explained
share at weight 4) and prints, for the commanded yaws that only the candidate reads as moves:
on which side the step points against the yaw, how much of the rotation-only fit's yaw the
4-DoF fit keeps, and how steady the step's direction is from one window of a command to the
next; then the candidate's parallax (in units of the gate) by commanded kind, and for the
windows version 11 reads as turns.
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from wcbench.core.actions import NUM_ROTATION, ROTATION_LABELS
from wcbench.core.video import read_video
from wcbench.pose import build_estimator
from wcbench.pose import geometry as geo
from wcbench.pose.base import latent_windows
from wcbench.pose.parallax import _structure_at, measure_window, steady_parallax, window_parallax

CANDIDATE_SCALE, CANDIDATE_WEIGHT = 0.8, 4.0  # the version 12 candidate's two weights


def window_rows(case_file: Path) -> list[dict]:
    """One row per latent window of a case: command, version 11's and the candidate's readings."""
    record = json.loads(case_file.read_text())
    frames = read_video(case_file.parent.parent / record["video"])
    estimator = build_estimator("opencv")
    config = estimator.config
    video, K = estimator.working_video(frames, fov_deg=record["fov_deg"])
    tracker = estimator.tracker_for(video)
    windows = latent_windows(len(video.tracked))
    matches = [measure_window(video.tracked[first:last + 1], video.plain[first], K, tracker, config)
               for first, last in windows]
    gate = estimator.moving_gate(matches)
    focal = K[0, 0]
    rows = []
    for index, ((first, _), match) in enumerate(zip(windows, matches)):
        if len(match.x1) < config.min_tracks:
            continue
        v11 = estimator._window_motion(match, K, gate).coherent_px
        R_level, t_dir, _, sampson = estimator._level_motion(match, config.robust_px / focal)
        unexplained = window_parallax(match.tracks.first[match.inside], sampson[match.inside, None] * focal, config)
        tensors = _structure_at(video.tracked[first], match.tracks.first, config.tracker.win_size)
        level = steady_parallax(match.tracks, match.x1, R_level, K, tensors, match.inside, config)
        candidate = CANDIDATE_SCALE * level * geo.explained_share(unexplained, match.rotation_px, CANDIDATE_WEIGHT)
        command = record["labels"]["commanded"][4 * index]
        rows.append(dict(case=record["id"], window=index, moving=command // NUM_ROTATION != 0,
                         rotation=ROTATION_LABELS[command % NUM_ROTATION], v11=v11 / gate,
                         candidate=max(v11, candidate) / gate, level=level / gate,
                         yaw_rot=float(geo.rotation_vector(match.R_rot)[1]),
                         yaw_level=float(geo.rotation_vector(R_level)[1]),
                         azimuth=float(np.degrees(np.arctan2(t_dir[0], t_dir[2])))))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a `wcbench run` output folder (with its videos)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    cases = sorted((args.run / "cases").glob("*.json"))
    if not cases:
        raise SystemExit(f"{args.run}: no cases/*.json (is it a `wcbench run` output folder?)")
    with ProcessPoolExecutor(args.workers) as pool:
        rows = [row for case_rows in pool.map(window_rows, cases) for row in case_rows]

    yaws = [r for r in rows if not r["moving"] and r["rotation"] in ("yaw-right", "yaw-left")
            and r["v11"] <= 1 < r["candidate"]]
    same_side = sum((r["azimuth"] > 0) == (r["rotation"] == "yaw-right") for r in yaws)
    kept = [abs(r["yaw_level"]) / max(abs(r["yaw_rot"]), 1e-9) for r in yaws]
    by_window = {(r["case"], r["window"]): r for r in yaws}
    changes = [abs((r["azimuth"] - by_window[(r["case"], r["window"] - 1)]["azimuth"] + 180) % 360 - 180)
               for r in yaws if (r["case"], r["window"] - 1) in by_window
               and by_window[(r["case"], r["window"] - 1)]["rotation"] == r["rotation"]]
    print(f"{args.run}: {len(rows)} windows")
    print(f"commanded yaws read as moves by the candidate only: {len(yaws)}; step on the yaw's side: {same_side}")
    if yaws:
        print(f"  4-DoF yaw / rotation-only yaw, median: {np.median(kept):.2f}; step direction change between "
              f"windows of one command, median: {np.median(changes) if changes else float('nan'):.1f} deg "
              f"({len(changes)} pairs)")
    for moving in (False, True):
        group = [r["level"] for r in rows if r["moving"] == moving and r["v11"] <= 1]
        if group:
            print(f"commanded {'moves' if moving else 'turns'} read as turns by v11 ({len(group)}): parallax under the "
                  f"4-DoF rotation / gate, percentiles 50/75/90: {np.round(np.percentile(group, [50, 75, 90]), 2)}")


if __name__ == "__main__":
    main()
