"""Try estimator settings on the stressor rows window by window: track once, score in seconds.

    OMP_NUM_THREADS=1 python -m experiments.window_variants --rows "still nonrigid" "combined movers-huge" \
        --seeds 7100 7105 --option bottom_still_share=0.5 [--families room street] [--show]

Tracking (each latent window's correspondences, overlays left out) is most of an estimate's cost
and does not depend on what the window step does with the tracks: the moving gate, the still-world
rule, the mover step. This tool renders the rows of ``benchmarks/bench_stressors.py`` (names as
there, e.g. ``still nonrigid``), measures every window once into a cache (``--cache``, keyed by the
estimator's version), and then scores the shipped settings and the ``--option`` ones over the
cached windows: per row the window-level full-label accuracy, the same in the 15-30 % and 30-60 %
bins of the frame moving on its own, and how many windows the options mend and break (``--show``
lists them). Rendering and tracking take about 2 s a video (256 px, 8 steps, one core); once
cached, a row of 24 videos scores in about 3 s. Window-level figures are for choosing; the tables
in docs/estimator.md come from ``bench_stressors`` (per transition) on the shipped estimator.

Options that act after tracking (:data:`WINDOW_OPTIONS`) score the shipped cache. Any other
estimator option (the tracker's, e.g. ``max_corners=400``, or the parallax measured per window)
changes the windows themselves: the trial then measures its own, cached under the options' names
beside the shipped ones (a first run costs the rendering and tracking again).
"""

from __future__ import annotations

import argparse
import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np

from wcbench.core.actions import FRAMES_PER_LATENT, parse_script
from wcbench.core.camera import classify_relative_pose
from wcbench.pose import build_estimator, latent_windows
from wcbench.pose.base import spread_window_motion
from wcbench.pose.calibration_videos import motion_case
from wcbench.pose.parallax import measure_window

from benchmarks.bench_stressors import ALL_FAMILIES, HELD_OUT, rows
from benchmarks.options import numeric_options

WINDOW_OPTIONS = ("gate_px", "noise_gate", "unexplained_weight", "max_refine_points", "full_confidence_tracks",
                  "still_fraction", "min_still_share", "sure_still_share", "min_still_span", "focus_ratio",
                  "bottom_share", "bottom_still_share", "bottom_ratio",
                  "two_way_share", "min_standing_share",
                  "min_world_share", "segment_movers", "min_segment_tracks")
BINS = ((0.15, 0.30), (0.30, 0.60))


def measured(estimator, row, family: str, seed: int, size: int, steps: int, cache: Path, tag: str = "") -> dict:
    """One video's windows as ``estimator`` tracks them, with the commanded label and the share of
    the frame moving on its own per window (from ``cache`` when measured before; ``tag`` names the
    options that made the windows, empty for the shipped estimator)."""
    name = f"v{estimator.version}{tag}-{row.name.replace(' ', '_')}-{family}-{seed}-{size}-{steps}.pkl"
    path = cache / name
    if path.exists():
        return pickle.loads(path.read_bytes())
    case = replace(motion_case(family, seed, row.track, steps, 0, HELD_OUT), stressors=row.stressors)
    rendered = case.render_layers(size, size)
    video, K, mask = estimator.prepare(rendered.frames, K=rendered.K, mask=rendered.overlay if row.user_mask else None)
    tracker = estimator.tracker_for(video)
    windows = latent_windows(len(video.tracked))
    matches = [measure_window(video.tracked[a:b + 1], video.plain[a], K, tracker, estimator.config, mask)
               for a, b in windows]
    actions = parse_script(case.script).frame_actions()
    share = rendered.moving.reshape(len(rendered.moving), -1).mean(axis=1)
    record = {"K": K, "matches": matches, "still_world": not video.compressed,
              "wanted": [(actions[b - 1].translation_label, actions[b - 1].rotation_label) for _, b in windows],
              "share": [float(share[a:b + 1].max()) for a, b in windows]}
    cache.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(pickle.dumps(record))
    temporary.replace(path)
    return record


def window_labels(estimator, record: dict) -> list[tuple[int, int]]:
    """The label the estimator's window step gives each transition of each cached window."""
    gate = estimator.moving_gate(record["matches"])
    labels = []
    for match in record["matches"]:
        motion = estimator._window_motion(match, record["K"], gate, record["still_world"])
        step = spread_window_motion(motion.rel, FRAMES_PER_LATENT)
        labels.append(classify_relative_pose(step, estimator.thresholds))
    return labels


def summary(hits: np.ndarray, share: np.ndarray) -> str:
    cells = [f"{hits.mean():.3f}"]
    for low, high in BINS:
        inside = (share >= low) & (share < high)
        cells.append(f"{hits[inside].mean():.2f}/{inside.sum()}" if inside.any() else "-")
    return " ".join(f"{cell:>9}" for cell in cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", required=True, help="bench_stressors row names, e.g. 'still nonrigid'")
    parser.add_argument("--seeds", nargs=2, type=int, default=(7100, 7102), metavar=("FIRST", "LAST"))
    parser.add_argument("--families", nargs="+", default=list(ALL_FAMILIES), choices=ALL_FAMILIES)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=8, help="latent steps per script")
    parser.add_argument("--option", nargs="*", default=[], metavar="KEY=VALUE",
                        help="estimator options to try; those that change the tracks measure fresh windows")
    parser.add_argument("--cache", type=Path, default=Path(".cache/windows"))
    parser.add_argument("--show", action="store_true", help="list the windows the options change")
    args = parser.parse_args()
    options = numeric_options(parser, args.option)
    by_name = {row.name: row for row in rows()}
    unknown = [name for name in args.rows if name not in by_name]
    if unknown:
        parser.error(f"unknown row(s) {unknown}; rows: {', '.join(by_name)}")
    try:
        shipped, trial = build_estimator("opencv"), build_estimator("opencv", **options)
    except TypeError as error:
        parser.error(str(error))
    # options that act after tracking score the shipped windows; any other measures its own
    tag = "" if set(options) <= set(WINDOW_OPTIONS) else "".join(f"+{k}={v}" for k, v in sorted(options.items()))
    bins = ", ".join(f"{low:.0%}-{high:.0%}" for low, high in BINS)
    measures = "fresh windows" if tag else "the shipped windows"
    print(f"estimator v{shipped.version}; options {options or 'none'} ({measures}); "
          f"seeds {args.seeds[0]}-{args.seeds[1]}; "
          f"window-level accuracy: all, then where {bins} of the frame moves on its own")
    print(f"{'row':>34} {'shipped':>29}   {'options':>29}  mended broken")
    for name in args.rows:
        hits = {"shipped": [], "options": []}
        shares, changed = [], []
        for family in args.families:
            for seed in range(args.seeds[0], args.seeds[1] + 1):
                record = measured(shipped, by_name[name], family, seed, args.size, args.steps, args.cache)
                own = measured(trial, by_name[name], family, seed, args.size, args.steps, args.cache, tag) if tag \
                    else record
                before, after = window_labels(shipped, record), window_labels(trial, own)
                for index, (wanted, old, new) in enumerate(zip(record["wanted"], before, after)):
                    hits["shipped"].append(old == wanted)
                    hits["options"].append(new == wanted)
                    if old != new:
                        changed.append((family, seed, index, wanted, old, new))
                shares += record["share"]
        share = np.array(shares)
        mended = sum(new == wanted for *_, wanted, old, new in changed)
        broken = sum(old == wanted for *_, wanted, old, new in changed)
        print(f"{name:>34} {summary(np.array(hits['shipped']), share)}   {summary(np.array(hits['options']), share)}"
              f"  {mended:>6} {broken:>6}", flush=True)
        if args.show:
            for family, seed, index, wanted, old, new in changed:
                print(f"{'':>8}{family} {seed} window {index}: commanded {wanted}, shipped {old}, options {new}")


if __name__ == "__main__":
    main()
