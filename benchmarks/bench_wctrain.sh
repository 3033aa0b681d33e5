#!/usr/bin/env bash
# Post-training benchmark: the default over seeds (the headline), the four ablations of the
# paper's table, and the transformer model (tinywan) before and after post-training, each
# evaluated with `wcbench run` on the held-out suite wc-mini-heldout (its scenes and scripts are
# none of the training episodes), then the tables (docs/wctrain.md,
# leaderboards/wctrain-wc-mini-heldout.md) and the per-label comparison.
#
#   bash benchmarks/bench_wctrain.sh [OUT_DIR] [SEEDS] [PARTS]   # SEEDS: "0 1 2"; PARTS: "default ablations tinywan recipe"
#
# On a 2-core CPU: each default run about 25 min of training (2 processes, 450 steps) and
# 3 min of evaluation; the ablations 100 steps on 1 process (5-9 min each, sample-level
# 3.5, measured two at a time); tinywan's post-training 450 steps on 2 processes. Rerunning the
# script skips what is done (a killed training resumes from its last checkpoint).
set -euo pipefail
OUT=${1:-runs/wctrain-bench}
SEEDS=${2:-0 1 2}
PARTS=${3:-default ablations tinywan}
has() { [[ " $PARTS " == *" $1 "* ]]; }
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
launch() { accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no \
             --dynamo_backend no -m wctrain train "$@"; }
timed() {  # timed NAME COMMAND...: wall time to OUT/NAME.time
  /usr/bin/time -o "$OUT/$1.time" -f "$1 wall %e s" "${@:2}"; }
evaluate() {  # evaluate NAME MODEL CHECKPOINT_DIR
  [ -f "$OUT/eval-$1/results.json" ] || \
    wcbench run --suite wc-mini-heldout --model "$2" "model_options.checkpoint=$3" --out "$OUT/eval-$1"; }

# baseline: the shipped tinywm
[ -f "$OUT/eval-baseline/results.json" ] || wcbench run --suite wc-mini-heldout --model tinywm --out "$OUT/eval-baseline"

# the default (IF only, spread-weighted curriculum, per-label exploration, 450 steps, 2 processes), one run per seed
has default && for seed in $SEEDS; do
  [ -d "$OUT/default-seed-$seed/final" ] || \
    timed "default-seed-$seed" bash -c "$(declare -f launch); launch run_dir=$OUT/default-seed-$seed eval.every=0 rl.seed=$seed"
  evaluate "default-seed-$seed" tinywm "$OUT/default-seed-$seed/final"
done
rows=()
for seed in $SEEDS; do [ -d "$OUT/eval-default-seed-$seed" ] && rows+=("default, seed $seed=$OUT/eval-default-seed-$seed"); done

# the released recipe (recipe=worldcompass-release: fine_action 2 + drift 1, global std, G=12,
# best-of-6, the release's EMA), same steps and processes as the default, one run per seed
if has recipe; then
  for seed in $SEEDS; do
    [ -d "$OUT/recipe-seed-$seed/final" ] || \
      timed "recipe-seed-$seed" bash -c "$(declare -f launch); launch run_dir=$OUT/recipe-seed-$seed eval.every=0 rl.seed=$seed recipe=worldcompass-release"
    evaluate "recipe-seed-$seed" tinywm "$OUT/recipe-seed-$seed/final"
  done
  for seed in $SEEDS; do
    [ -d "$OUT/eval-recipe-seed-$seed" ] && rows+=("worldcompass-release recipe, seed $seed=$OUT/eval-recipe-seed-$seed")
  done
fi

# the paper's ablations on a short budget (1 process, 100 steps; sample-level 45, whose rollouts cost more):
# IF only (our default's rewards), IF 0.9 + VQ 0.1 (the paper's combination), VQ only, RWR, sample-level rollout
SHORT="rl.steps=100 eval.every=0"
short() {  # short NAME OVERRIDES...
  [ -d "$OUT/short-$1/final" ] || timed "short-$1" wctrain train run_dir="$OUT/short-$1" "${@:2}"
  evaluate "short-$1" tinywm "$OUT/short-$1/final"; }
if has ablations; then
  short if-only $SHORT
  short if-vq $SHORT 'reward.funcs=[following,quality]' 'reward.weights=[0.9,0.1]'
  short vq-only $SHORT 'reward.funcs=[following,quality]' 'reward.weights=[0.0,1.0]'
  short rwr $SHORT rl.loss=rwr
  short sample rl.steps=45 eval.every=0 rl.rollout=sample
  rows+=("IF only (100 steps, 1 process)=$OUT/eval-short-if-only" "IF 0.9 + VQ 0.1 (100 steps)=$OUT/eval-short-if-vq"
         "VQ only (100 steps)=$OUT/eval-short-vq-only" "RWR (100 steps)=$OUT/eval-short-rwr"
         "sample-level rollout (45 steps)=$OUT/eval-short-sample")
fi
[ ${#rows[@]} -gt 0 ] && python -m benchmarks.wctrain_table "$OUT/eval-baseline" "${rows[@]}" --markdown "$OUT/table.md"
has default && python -m experiments.per_label_following "$OUT/eval-baseline" "$OUT"/eval-default-seed-? --groups \
  | tee "$OUT/groups.txt"

# tinywan: the shipped checkpoint (its recipe: docs/wctrain.md) before and after the default post-training
if has tinywan; then
  [ -f "$OUT/eval-tinywan-baseline/results.json" ] || \
    wcbench run --suite wc-mini-heldout --model tinywan --out "$OUT/eval-tinywan-baseline"
  [ -d "$OUT/tinywan-seed-0/final" ] || \
    timed tinywan-seed-0 bash -c "$(declare -f launch); launch run_dir=$OUT/tinywan-seed-0 eval.every=0 model=tinywan"
  evaluate tinywan-seed-0 tinywan "$OUT/tinywan-seed-0/final"
  python -m benchmarks.wctrain_table "$OUT/eval-tinywan-baseline" "tinywan, default post-training=$OUT/eval-tinywan-seed-0" \
    --baseline-name "tinywan (shipped)" --markdown "$OUT/table-tinywan.md"
fi
cat "$OUT"/*.time 2>/dev/null || true
