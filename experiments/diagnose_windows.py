"""Why the estimator reads a render wrong, window by window: short of data, or short of fit?

    OMP_NUM_THREADS=1 python -m experiments.diagnose_windows [--seed 8008] [--family room] [--track combined]
        [--degrade jpeg] [--size 160]

Renders one held-out case (as ``bench_estimator.py`` does), degrades it and,
for every latent window, prints the commanded label, whether the estimate was right, the
tracks kept, the median epipolar (Sampson) error of those tracks at the *true* motion, and
the robust 4-DoF cost of the motion the estimator found against that of the true motion
refined from itself. Where the truth costs more than what was found, the tracks themselves
point elsewhere: no better fit would help. This is how the JPEG q30 finding of docs/estimator.md was made
(``--seed 8008`` with ``--degrade jpeg`` and ``--degrade clean``).

``--drop-misfit PX`` adds what the window would read without the tracks whose error at the true
motion exceeds PX (an oracle cut, for diagnosis only): how many tracks stay and whether the
estimate is then right. Where it is, the window's answer was decided by those few tracks.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from wcbench.core.actions import label_name, parse_script
from wcbench.core.camera import relative_pose
from wcbench.pose import build_estimator, latent_windows
from wcbench.pose import geometry as geo
from wcbench.pose.base import poses_from_windows
from wcbench.pose.calibration_videos import CASE_TRACKS, DEGRADATIONS, degrade, motion_case
from wcbench.pose.parallax import inside_neighbours, measure_window
from wcbench.data.scenes.synthetic import SCENE_FAMILIES

from benchmarks.bench_estimator import HELD_OUT, accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=8008, help="scene seed (held-out seeds are 7000+)")
    parser.add_argument("--family", default="room", choices=SCENE_FAMILIES)
    parser.add_argument("--track", default="combined", choices=CASE_TRACKS)
    parser.add_argument("--degrade", default="jpeg", choices=DEGRADATIONS)
    parser.add_argument("--size", type=int, default=160)
    parser.add_argument("--steps", type=int, default=12, help="latent steps per script")
    parser.add_argument("--drop-misfit", type=float, default=None, metavar="PX",
                        help="also refit each window without the tracks whose error at the true motion exceeds PX")
    args = parser.parse_args()

    estimator = build_estimator("opencv")
    config = estimator.config
    case = motion_case(args.family, args.seed, args.track, args.steps, 0, HELD_OUT)
    frames, K, truth = case.render(args.size, args.size)
    actions = parse_script(case.script).frame_actions()
    frames = degrade(frames, args.degrade, seed=args.seed % 1000)
    hits = accuracy(estimator.estimate(frames, K=K), actions, estimator.thresholds)[:, 0]

    video, K_work = estimator.working_video(frames, K=K)
    focal = K_work[0, 0]
    scale = config.robust_px / focal
    windows = latent_windows(len(frames))
    matches = [measure_window(video.tracked[first:last + 1], video.plain[first], K_work, estimator.tracker_for(video),
                              config)
               for first, last in windows]
    gate = estimator.moving_gate(matches)
    print(f"{args.family} scene {args.seed}, {args.track}, {args.degrade}, {args.size} px: moving gate {gate:.2f} px")
    print(f"{'window':>6} {'commanded':<24} {'hit':>4} {'tracks':>6} {'moving':>6} {'err@truth px':>12} "
          f"{'cost found':>10} {'cost truth':>10}"
          + (f" {'kept':>5} {'hit w/o':>7}" if args.drop_misfit is not None else ""))
    for index, ((first, last), match) in enumerate(zip(windows, matches)):
        rel = relative_pose(truth[first], truth[last])
        R_true, t_true = rel[:3, :3], rel[:3, 3] / np.linalg.norm(rel[:3, 3])
        R_found, t_found, _, _ = estimator._level_motion(match, scale)
        subset = geo.even_subset(len(match.x1), config.max_refine_points)
        x1, x2 = match.x1[subset], match.x2[subset]

        def cost(R: np.ndarray, t: np.ndarray) -> float:
            return float(geo.robust_cost(geo.sampson_residuals(geo.essential_from_pose(R, t)[None], x1, x2)[0],
                                         scale))

        _, _, truth_costs = geo.refine_planar_motion(x1, x2, R_true[None], np.array([geo.planar_azimuth(t_true)]),
                                                     scale)
        error = geo.sampson_residuals(geo.essential_from_pose(R_true, t_true)[None], match.x1, match.x2)[0] * focal
        hit = bool(hits[first:last].all())
        line = (f"{index:>6} {label_name(actions[last - 1].label):<24} {'yes' if hit else 'NO':>4} "
                f"{len(match.x1):>6} {'yes' if estimator._window_motion(match, K_work, gate).is_moving else 'no':>6} "
                f"{np.median(np.abs(error)):>12.2f} {cost(R_found, t_found):>10.2f} {truth_costs[0]:>10.2f}")
        if args.drop_misfit is not None:
            keep = np.abs(error) <= args.drop_misfit
            # the moving decision and rotation-only fit stay those of all tracks: only the fit changes
            tracks = match.tracks.subset(keep)
            trimmed = replace(match, tracks=tracks, x1=match.x1[keep], x2=match.x2[keep], inside=match.inside[keep],
                              neighbours=inside_neighbours(tracks, match.inside[keep], estimator.config))
            window = poses_from_windows(last - first + 1, [(0, last - first)],
                                        [estimator._window_motion(trimmed, K_work, gate).rel], [1.0])
            right = bool(accuracy(window, actions[first:last], estimator.thresholds)[:, 0].all())
            line += f" {int(keep.sum()):>5} {'yes' if right else 'NO':>7}"
        print(line)


if __name__ == "__main__":
    main()
