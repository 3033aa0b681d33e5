#!/usr/bin/env bash
# The model plug-in refactor (issue 32) trains tinywm's default exactly as before: N steps of the
# default command before the refactor (commit f85a4f8, unpacked to a temporary folder and run
# from there) and after it, on 1 process and on 2, compared bit for bit (docs/wctrain.md).
#
#   bash experiments/wctrain_parity.sh [OUT_DIR]      # ~5 min on an idle 2-core CPU
set -euo pipefail
OUT=$(realpath -m "${1:-runs/wctrain-parity}")
BASE=f85a4f8
export OMP_NUM_THREADS=1
mkdir -p "$OUT"
OLD=$(mktemp -d)
trap 'rm -rf "$OLD"' EXIT
git archive "$BASE" | tar -x -C "$OLD"
LAUNCH=(accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no --dynamo_backend no)
rm -rf "$OUT"/{old,new}-{one,two}
(cd "$OLD" && PYTHONPATH="$OLD" python -m wctrain train run_dir="$OUT/old-one" eval.every=0 rl.steps=6 checkpoint_every=3)
python -m wctrain train run_dir="$OUT/new-one" eval.every=0 rl.steps=6 checkpoint_every=3
(cd "$OLD" && PYTHONPATH="$OLD" "${LAUNCH[@]}" -m wctrain train run_dir="$OUT/old-two" eval.every=0 rl.steps=5 checkpoint_every=5)
"${LAUNCH[@]}" -m wctrain train run_dir="$OUT/new-two" eval.every=0 rl.steps=5 checkpoint_every=5
echo "1 process, 6 steps:";  python -m experiments.wctrain_compare_runs "$OUT/old-one" "$OUT/new-one"
echo "2 processes, 5 steps:"; python -m experiments.wctrain_compare_runs "$OUT/old-two" "$OUT/new-two"
