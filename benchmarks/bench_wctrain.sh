#!/usr/bin/env bash
# Post-training benchmark: the headline run, the ablations, their wcbench evaluation and the
# table and the per-label comparison (README "Post-training results", leaderboards/wctrain-wc-mini-heldout.md).
#
#   bash benchmarks/bench_wctrain.sh [OUT_DIR]        # about 26 h on a 2-core CPU (42 two-process runs of 30-35 min)
#
# Every run starts from the shipped tinywm; each is evaluated afterwards with `wcbench run` on
# the held-out suite wc-mini-heldout (its scenes and scripts are none of the training episodes).
set -euo pipefail
OUT=${1:-runs/wctrain-bench}
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
S300="rl.steps=300"   # the default until session 19 (450 since); the runs before session 18 trained 300 steps
launch() { accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no \
             --dynamo_backend no -m wctrain train "$@"; }
evaluate() {  # evaluate NAME CHECKPOINT_DIR
  wcbench run --suite wc-mini-heldout --model tinywm "+model_options.checkpoint=$2" --out "$OUT/eval-$1"; }

# baseline: the shipped checkpoint
[ -f "$OUT/eval-baseline/results.json" ] || wcbench run --suite wc-mini-heldout --model tinywm --out "$OUT/eval-baseline"

# the headline until session 19: the 300-step default (IF only, lam 1.0), 1 process (timed); the same on 2
# processes (twice the groups). Today's headline (450 steps, seeds 0-4) is the session-18/19 block below
/usr/bin/time -f "headline wall %e s" wctrain train run_dir="$OUT/headline" eval.every=0 $S300
evaluate headline "$OUT/headline/final"
/usr/bin/time -f "headline-2proc wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/headline-2proc eval.every=0 $S300"
evaluate headline-2proc "$OUT/headline-2proc/final"

# ablations on a short budget (1 process, 100 steps each; sample-level gets the same wall time)
SHORT="rl.steps=100 eval.every=0"
LAM09="reward.lam=0.9"   # the default until session 11, which the ablations and variations below were measured against
wctrain train run_dir="$OUT/short-default" $SHORT $LAM09
wctrain train run_dir="$OUT/short-if-only" $SHORT reward.lam=1.0
wctrain train run_dir="$OUT/short-vq-only" $SHORT reward.lam=0.0
wctrain train run_dir="$OUT/short-rwr" $SHORT rl.loss=rwr $LAM09
wctrain train run_dir="$OUT/short-clip-credit" $SHORT reward.credit=clip $LAM09
wctrain train run_dir="$OUT/short-sample" rl.steps=45 eval.every=0 rl.rollout=sample $LAM09
for name in default if-only vq-only rwr clip-credit sample; do evaluate "short-$name" "$OUT/short-$name/final"; done

# the default with four other seeds, to show how far one run lands from another (the +15-point target is
# judged on their mean)
for seed in 1 2 3 4; do
  /usr/bin/time -f "default-seed-$seed wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/default-seed-$seed \
    eval.every=0 $S300 rl.seed=$seed"
done
# variations of lam 0.9, the 2-process default until session 11 (each over 3 min of evaluation on top of its
# training); first lam 0.9 itself with four seeds
/usr/bin/time -f "lam-0.9 wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/lam-0.9 eval.every=0 $S300 $LAM09"
for seed in 1 2 3; do
  /usr/bin/time -f "seed-$seed wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/seed-$seed eval.every=0 $S300 rl.seed=$seed $LAM09"
done
/usr/bin/time -f "steps-420 wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/steps-420 eval.every=0 rl.steps=420 $LAM09"
/usr/bin/time -f "group-12 wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/group-12 eval.every=0 $S300 rl.group_size=12 $LAM09"
/usr/bin/time -f "explore-2 wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/explore-2 eval.every=0 $S300 rl.explore=2.0 $LAM09"
/usr/bin/time -f "film wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/film eval.every=0 $S300 \
  'rl.trainable=[action_embedding,action_proj,cond_emb_proj]' $LAM09"
/usr/bin/time -f "parts wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/parts eval.every=0 $S300 rl.explore_mode=parts $LAM09"
/usr/bin/time -f "boost wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/boost eval.every=0 $S300 \
  rl.explore_mode=boost rl.explore=2.0 $LAM09"
# lam 0.9 with seed 3 broke two labels the baseline follows: the same seed with full-marks latents anchored
/usr/bin/time -f "anchor-seed-3 wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/anchor-seed-3 eval.every=0 $S300 \
  rl.seed=3 reward.if_full_marks=2.0 $LAM09"
# the default with seed 3 broke forward while pitching up: the same seed with the curriculum's floor raised, so
# scripts whose labels are all followed stay drawn
/usr/bin/time -f "floor-seed-3 wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/floor-seed-3 eval.every=0 $S300 \
  rl.seed=3 rl.focus_floor=0.5"
# session 14: the default without its per-label exploration; and with the curriculum weighted by failure alone
# as well (the default until session 13), each with seeds 0 and 3
for seed in 0 3; do
  /usr/bin/time -f "failure-seed-$seed wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/failure-seed-$seed \
    eval.every=0 $S300 rl.seed=$seed rl.focus_score=failure rl.explore_focus=0"
  /usr/bin/time -f "explore-focus-0-seed-$seed wall %e s" bash -c "$(declare -f launch); launch \
    run_dir=$OUT/explore-focus-0-seed-$seed eval.every=0 $S300 rl.seed=$seed rl.explore_focus=0"
done
# session 15: the per-label exploration wider than the default's 0.5
/usr/bin/time -f "explore-focus-0.8 wall %e s" bash -c "$(declare -f launch); launch run_dir=$OUT/explore-focus-0.8 \
  eval.every=0 $S300 rl.explore_focus=0.8"
# session 16: the same with seeds 1-4, paired with default-seed-1..4
for seed in 1 2 3 4; do
  /usr/bin/time -f "explore-focus-0.8-seed-$seed wall %e s" bash -c "$(declare -f launch); launch \
    run_dir=$OUT/explore-focus-0.8-seed-$seed eval.every=0 $S300 rl.seed=$seed rl.explore_focus=0.8"
done
# session 17: a sixth seed of the default, whose evaluation EMA slower (0.99) or faster (0: the raw weights) than
# the default 0.9 exports other weights of the same training (the evaluation EMA does not feed back); and the parts
# exploration gated to the labels the rollouts fail, seeds 0, 3 and 5
for decay in 0.9 0.97 0.99 0; do
  /usr/bin/time -f "eval-decay-$decay-seed-5 wall %e s" bash -c "$(declare -f launch); launch \
    run_dir=$OUT/eval-decay-$decay-seed-5 eval.every=0 $S300 rl.seed=5 policy.eval_decay=$decay"
done
for seed in 0 3 5; do
  /usr/bin/time -f "parts-below-0.3-seed-$seed wall %e s" bash -c "$(declare -f launch); launch \
    run_dir=$OUT/parts-below-0.3-seed-$seed eval.every=0 $S300 rl.seed=$seed rl.explore_mode=parts rl.parts_below=0.3"
done
# session 18: the default trained longer. rl.steps only bounds the loop, so a run continued from its last
# checkpoint with a larger rl.steps is the longer run: seed 5's run above continued to 350, 400 and 450 steps
# (each continuation a copy of the previous one), and seeds 0 and 1 trained to 300, exported, then continued to 450.
# Session 19: seeds 2-4 the same way; the five 450-step exports are the headline (450 steps is the default since)
prev=$OUT/eval-decay-0.9-seed-5
for steps in 350 400 450; do
  rm -rf "$OUT/steps-$steps-seed-5" && cp -r "$prev" "$OUT/steps-$steps-seed-5" && rm -rf "$OUT/steps-$steps-seed-5/final"
  /usr/bin/time -f "steps-$steps-seed-5 wall %e s" bash -c "$(declare -f launch); launch \
    run_dir=$OUT/steps-$steps-seed-5 eval.every=0 rl.seed=5 rl.steps=$steps policy.eval_decay=0.9"
  prev=$OUT/steps-$steps-seed-5
done
for seed in 0 1 2 3 4; do
  for steps in 300 450; do
    /usr/bin/time -f "steps-$steps-seed-$seed wall %e s" bash -c "$(declare -f launch); launch \
      run_dir=$OUT/steps-450-seed-$seed eval.every=0 rl.seed=$seed rl.steps=$steps"
    rm -rf "$OUT/steps-$steps-seed-$seed-final" && cp -r "$OUT/steps-450-seed-$seed/final" "$OUT/steps-$steps-seed-$seed-final"
  done
  evaluate "steps-300-seed-$seed" "$OUT/steps-300-seed-$seed-final"
  evaluate "steps-450-seed-$seed" "$OUT/steps-450-seed-$seed-final"
done
for steps in 350 400 450; do evaluate "steps-$steps-seed-5" "$OUT/steps-$steps-seed-5/final"; done
for name in default-seed-1 default-seed-2 default-seed-3 default-seed-4 lam-0.9 seed-1 seed-2 seed-3 steps-420 group-12 explore-2 film parts boost anchor-seed-3 floor-seed-3 failure-seed-0 failure-seed-3 explore-focus-0-seed-0 explore-focus-0-seed-3 explore-focus-0.8 \
    explore-focus-0.8-seed-1 explore-focus-0.8-seed-2 explore-focus-0.8-seed-3 explore-focus-0.8-seed-4 \
    eval-decay-0.9-seed-5 eval-decay-0.97-seed-5 eval-decay-0.99-seed-5 eval-decay-0-seed-5 \
    parts-below-0.3-seed-0 parts-below-0.3-seed-3 parts-below-0.3-seed-5; do
  evaluate "$name" "$OUT/$name/final"
done

python benchmarks/wctrain_table.py "$OUT/eval-baseline" "headline=$OUT/eval-headline" \
  "headline, 2 processes=$OUT/eval-headline-2proc" \
  "seed 1, 2 processes=$OUT/eval-default-seed-1" "seed 2, 2 processes=$OUT/eval-default-seed-2" \
  "seed 3, 2 processes=$OUT/eval-default-seed-3" "seed 4, 2 processes=$OUT/eval-default-seed-4" \
  "lam 0.9, 2 processes=$OUT/eval-lam-0.9" \
  "lam 0.9, seed 1=$OUT/eval-seed-1" "lam 0.9, seed 2=$OUT/eval-seed-2" "lam 0.9, seed 3=$OUT/eval-seed-3" \
  "420 steps, 2 processes=$OUT/eval-steps-420" "12 candidates, 2 processes=$OUT/eval-group-12" \
  "twice the exploration offset, 2 processes=$OUT/eval-explore-2" \
  "+ FiLM projections, 2 processes=$OUT/eval-film" \
  "parts exploration, 2 processes=$OUT/eval-parts" "boost exploration x2, 2 processes=$OUT/eval-boost" \
  "full marks anchored, seed 3, 2 processes=$OUT/eval-anchor-seed-3" \
  "curriculum floor 0.5, seed 3, 2 processes=$OUT/eval-floor-seed-3" \
  "failure-weighted curriculum, 2 processes=$OUT/eval-failure-seed-0" \
  "failure-weighted curriculum, seed 3, 2 processes=$OUT/eval-failure-seed-3" \
  "no per-label exploration, 2 processes=$OUT/eval-explore-focus-0-seed-0" \
  "no per-label exploration, seed 3, 2 processes=$OUT/eval-explore-focus-0-seed-3" \
  "exploration focus 0.8, 2 processes=$OUT/eval-explore-focus-0.8" \
  "exploration focus 0.8, seed 1=$OUT/eval-explore-focus-0.8-seed-1" \
  "exploration focus 0.8, seed 2=$OUT/eval-explore-focus-0.8-seed-2" \
  "exploration focus 0.8, seed 3=$OUT/eval-explore-focus-0.8-seed-3" \
  "exploration focus 0.8, seed 4=$OUT/eval-explore-focus-0.8-seed-4" \
  "seed 5, 2 processes=$OUT/eval-eval-decay-0.9-seed-5" \
  "seed 5, evaluation EMA 0.97=$OUT/eval-eval-decay-0.97-seed-5" \
  "seed 5, evaluation EMA 0.99=$OUT/eval-eval-decay-0.99-seed-5" \
  "seed 5, raw weights=$OUT/eval-eval-decay-0-seed-5" \
  "parts below 0.3, 2 processes=$OUT/eval-parts-below-0.3-seed-0" \
  "parts below 0.3, seed 3=$OUT/eval-parts-below-0.3-seed-3" \
  "parts below 0.3, seed 5=$OUT/eval-parts-below-0.3-seed-5" \
  "seed 5, 350 steps=$OUT/eval-steps-350-seed-5" "seed 5, 400 steps=$OUT/eval-steps-400-seed-5" \
  "seed 5, 450 steps=$OUT/eval-steps-450-seed-5" \
  "seed 0, 300 steps (session 18)=$OUT/eval-steps-300-seed-0" "seed 0, 450 steps=$OUT/eval-steps-450-seed-0" \
  "seed 1, 300 steps (session 18)=$OUT/eval-steps-300-seed-1" "seed 1, 450 steps=$OUT/eval-steps-450-seed-1" \
  "seed 2, 300 steps (session 19)=$OUT/eval-steps-300-seed-2" "seed 2, 450 steps=$OUT/eval-steps-450-seed-2" \
  "seed 3, 300 steps (session 19)=$OUT/eval-steps-300-seed-3" "seed 3, 450 steps=$OUT/eval-steps-450-seed-3" \
  "seed 4, 300 steps (session 19)=$OUT/eval-steps-300-seed-4" "seed 4, 450 steps=$OUT/eval-steps-450-seed-4" \
  "lam 0.9 (short)=$OUT/eval-short-default" "IF only (short)=$OUT/eval-short-if-only" \
  "VQ only (short)=$OUT/eval-short-vq-only" "RWR (short)=$OUT/eval-short-rwr" \
  "clip-level credit (short)=$OUT/eval-short-clip-credit" \
  "sample-level (short)=$OUT/eval-short-sample" --markdown "$OUT/table.md"
python benchmarks/per_label_following.py "$OUT/eval-baseline" "$OUT/eval-headline" | tee "$OUT/per_label.txt"
python benchmarks/per_label_following.py "$OUT/eval-baseline" "$OUT/eval-headline-2proc" "$OUT"/eval-default-seed-? \
  "$OUT/eval-eval-decay-0.9-seed-5" "$OUT"/eval-parts-below-0.3-seed-? "$OUT"/eval-steps-???-seed-? --groups \
  | tee "$OUT/groups.txt"
