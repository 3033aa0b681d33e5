#!/usr/bin/env bash
# Every figure the camera-motion estimator decides, measured again: after a change to the
# estimator (bump its version), each figure in README.md, docs/estimator.md, docs/runs.md,
# docs/quality.md (the time of `wcbench score`) and leaderboards/ is re-measured or dropped. This
# runs the commands docs/reproducing.md lists, in the order they depend on each other, and leaves
# each one's output in OUT/<step>.txt:
#
#   bash benchmarks/refresh_estimator.sh [OUT_DIR] [PARTS]   # PARTS: "calibrate figures board timing"
#   DRY_RUN=1 bash benchmarks/refresh_estimator.sh           # list the steps, run nothing
#
# 1. calibrate: `wcbench calibrate --degrade --stressors --write` rewrites the shipped thresholds
#    (wcbench/conf/estimator/opencv.yaml) that every later figure is scored with (21 min alone on a
#    slow day).
# 2. figures and board: three lanes side by side (on 2 cores over an hour): the accuracy tables,
#    the stressor rows and their ablations, the wc-mini leaderboard (`submit --update` rewrites
#    leaderboards/wc-mini.md and the README's table is copied from it by hand).
# 3. timing: tinywm's board row (it records how fast the model generates), speed, memory and
#    costs, alone on the machine (about 25 min): run it when nothing else runs, and compare only
#    with figures measured the same hour.
# The tests' pinned numbers are not figures: `WCBENCH_REGEN_GOLDEN=1 pytest
# tests/wcbench/test_golden_numbers.py` rewrites them once the thresholds are written.
#
# A rerun skips the steps already done (OUT/<step>.done); delete a marker to redo its step.
set -uo pipefail
OUT=${1:-runs/estimator-refresh}
PARTS=${2:-calibrate figures board timing}
has() { [[ " $PARTS " == *" $1 "* ]]; }
export OMP_NUM_THREADS=1
PY=${PYTHON:-python}
failed="$OUT/failed.txt"
[ -n "${DRY_RUN:-}" ] || { mkdir -p "$OUT" && : > "$failed"; }

step() {  # step NAME COMMAND...: run once, output to OUT/NAME.txt
  local name=$1; shift
  if [ -n "${DRY_RUN:-}" ]; then printf '%s:' "$name"; printf ' %q' "$@"; echo; return; fi
  [ -f "$OUT/$name.done" ] && return
  echo "$(date +%H:%M:%S) $name" >&2
  if "$@" > "$OUT/$name.txt" 2>&1; then touch "$OUT/$name.done"; else echo "$name" >> "$failed"; fi
}
STRESSORS=("$PY" -m benchmarks.bench_stressors --jobs 1)

if has calibrate; then
  step calibrate wcbench calibrate --degrade --stressors --write
  # every later figure is scored with these thresholds: nothing runs without them
  [ -n "${DRY_RUN:-}" ] || [ -f "$OUT/calibrate.done" ] || { echo "calibration failed: see $OUT/calibrate.txt" >&2; exit 1; }
fi

lane_tables() {
  step synthetic "$PY" -m benchmarks.bench_estimator --skip lofo invariance realvid wrong codecs speed
  step tracks "$PY" -m benchmarks.bench_tracks
  step heldout-movers "${STRESSORS[@]}" --seeds 6 --first-seed 7109 --only movers nonrigid
  step fresh-seeds "${STRESSORS[@]}" --seeds 6 --first-seed 7115 --only "still movers-huge" "still movers-dense" \
    "still nonrigid" "combined subtitles" "combined roll-1" "combined wobble-1.5"
  step no-segmentation "${STRESSORS[@]}" --seeds 3 --only movers nonrigid --option segment_movers=0
  step heldout-standing-share "${STRESSORS[@]}" --seeds 6 --first-seed 7109 --only "still movers-huge" --option min_still_share=0.3
  step heldout-no-two-way "${STRESSORS[@]}" --seeds 6 --first-seed 7109 --only "still nonrigid" --option two_way_share=1
}
lane_stressors() {
  step regressions "$PY" -m benchmarks.bench_estimator --skip synthetic speed
  step lofo-diagonal "$PY" -m benchmarks.bench_estimator --skip synthetic invariance realvid wrong codecs speed \
    --tracks diagonal
  step stressors "${STRESSORS[@]}" --seeds 3
  step heldout-overlays "${STRESSORS[@]}" --seeds 6 --first-seed 7109 --only hud watermark logo letterbox subtitles "combined clean"
  step all-off "${STRESSORS[@]}" --seeds 3 --only still movers hud watermark letterbox \
    --option detect_overlays=0 min_still_share=2 two_way_share=1 segment_movers=0
  step windows "$PY" -m experiments.window_variants --rows "combined wobble-1.5" "combined clean" "combined roll-1" \
    --seeds 7100 7120 --cache "$OUT/windows"
}
lane_board() {
  # tinywm's row also records how fast it generates: it runs with the timings, alone
  for model in oracle oracle-noisy oracle-mirror oracle-lag oracle-static; do
    step "run-$model" wcbench run --suite wc-mini --model "$model" --out "$OUT/runs/$model"
    step "submit-$model" wcbench submit "$OUT/runs/$model" --sample 3 --submitter wcbench --update
  done
  step run-tinywm-heldout wcbench run --suite wc-mini-heldout --model tinywm --out "$OUT/runs/tinywm-heldout"
}
if [ -n "${DRY_RUN:-}" ]; then
  has figures && { lane_tables; lane_stressors; }
  has board && lane_board
else
  has figures && { lane_tables & lane_stressors & }
  has board && lane_board &
  wait
fi

if has timing; then
  step run-tinywm wcbench run --suite wc-mini --model tinywm --out "$OUT/runs/tinywm"
  step submit-tinywm wcbench submit "$OUT/runs/tinywm" --sample 3 --submitter wcbench --update
  for run in 1 2 3 4 5 6; do
    step "speed-$run" "$PY" -m benchmarks.bench_estimator --skip synthetic lofo invariance realvid wrong codecs --workers 1
  done
  step photo-pan "$PY" -m benchmarks.bench_photo_pan
  step profile "$PY" -m benchmarks.profile_stages
  step memory "$PY" -m benchmarks.bench_memory
  step jobs "$PY" -m benchmarks.bench_jobs
  step score "$PY" -m benchmarks.bench_quality --parts score
  step run-overlap "$PY" -m benchmarks.bench_run_overlap --limit 6
  step submit-time /usr/bin/time -v wcbench submit "$OUT/runs/oracle" --submitter wcbench --leaderboards "$OUT/leaderboards"
fi

if [ -s "$failed" ]; then
  echo "failed steps (see OUT/<step>.txt; a rerun retries them): $(tr '\n' ' ' < "$failed")" >&2
  exit 1
fi
[ -n "${DRY_RUN:-}" ] || echo "done: outputs in $OUT/" >&2
