#!/usr/bin/env bash
# Checks that need a CUDA machine, each in its own block; figures go to docs/ (see each block).
#
#   bash benchmarks/gpu_check.sh [OUT_DIR]
#
# Run from the repository root with the project installed (scripts/install.sh, then the CUDA
# build of torch). Exits 2 when no CUDA device is visible.
set -euo pipefail
status=0
OUT=${1:-runs/gpu-check}
mkdir -p "$OUT"
PY=${PYTHON:-python}
GPUS=$("$PY" -c "import torch; print(torch.cuda.device_count())")
if [ "$GPUS" -lt 1 ]; then
  echo "gpu_check.sh: no CUDA device visible (torch.cuda.device_count() = 0); run it on a GPU machine" >&2
  exit 2
fi
echo "CUDA devices: $GPUS ($("$PY" -c "import torch; print(torch.cuda.get_device_name(0))"))"

# ---------------------------------------------------------------- HPSv3 quality scorers
# Needs: pip install -e ".[hpsv3]", and local weights in WCBENCH_HPSV3_BASE_MODEL (a
# Qwen2-VL-7B-Instruct folder) and WCBENCH_HPSV3_CHECKPOINT (HPSv3.safetensors), the variables the
# scorer itself reads; nothing is downloaded. Checks that both definitions load offline, score a
# rendered 480x832 clip, and rank a blurred copy lower.
if [[ -n "${WCBENCH_HPSV3_BASE_MODEL:-}" && -n "${WCBENCH_HPSV3_CHECKPOINT:-}" ]]; then
  HF_HUB_OFFLINE=1 "$PY" -m benchmarks.check_hpsv3 --base "$WCBENCH_HPSV3_BASE_MODEL" \
    --checkpoint "$WCBENCH_HPSV3_CHECKPOINT" || status=1
else
  echo "HPSv3 check skipped: set WCBENCH_HPSV3_BASE_MODEL and WCBENCH_HPSV3_CHECKPOINT to the local weights"
fi
# ---------------------------------------------------------------- end of HPSv3 block

# ============================================================================ wctrain (trainer)
# 2 steps of `wctrain train` for tinywm and tinywan in bf16 (the default group of 8 candidates
# of a 4-clip episode), on one GPU and on all visible GPUs (DDP, one group per GPU; tinywan
# also with FSDP2 when there are 2 or more), printing each run's second step: its wall time,
# and the peak GPU memory of rank 0 (metrics.jsonl: seconds, peak_gpu_mib). Figures: docs/wctrain.md.
wctrain_report() {  # wctrain_report LABEL RUN_DIR
  "$PY" - "$1" "$2" <<'EOF'
import json, sys
label, run = sys.argv[1], sys.argv[2]
rows = [json.loads(line) for line in open(f"{run}/metrics.jsonl")]
last = rows[-1]
print(f"{label:<34} step {last['step']}: {last['seconds']:7.2f} s   peak {last.get('peak_gpu_mib', float('nan')):8.0f} MiB   "
      f"loss {last['loss']:.4f}")
EOF
}
wctrain_check() {
  local common=(rl.steps=2 eval.every=0 checkpoint_every=100 mixed_precision=bf16)
  local tinywan=(model=tinywan model_options.checkpoint=null)
  rm -rf "$OUT"/wctrain-*
  "$PY" -m wctrain train run_dir="$OUT/wctrain-tinywm-1gpu" "${common[@]}"
  wctrain_report "tinywm, 1 GPU, bf16" "$OUT/wctrain-tinywm-1gpu"
  "$PY" -m wctrain train run_dir="$OUT/wctrain-tinywan-1gpu" "${common[@]}" "${tinywan[@]}"
  wctrain_report "tinywan, 1 GPU, bf16" "$OUT/wctrain-tinywan-1gpu"
  if [ "$GPUS" -ge 2 ]; then
    "$PY" -m accelerate.commands.launch --multi_gpu --num_processes "$GPUS" --mixed_precision bf16 -m wctrain train \
      run_dir="$OUT/wctrain-tinywm-ddp" "${common[@]}"
    wctrain_report "tinywm, $GPUS GPUs DDP, bf16" "$OUT/wctrain-tinywm-ddp"
    "$PY" -m accelerate.commands.launch --multi_gpu --num_processes "$GPUS" --mixed_precision bf16 -m wctrain train \
      run_dir="$OUT/wctrain-tinywan-ddp" "${common[@]}" "${tinywan[@]}"
    wctrain_report "tinywan, $GPUS GPUs DDP, bf16" "$OUT/wctrain-tinywan-ddp"
    "$PY" -m accelerate.commands.launch --config_file wctrain/conf/accelerate/fsdp.yaml --num_processes "$GPUS" -m wctrain train \
      run_dir="$OUT/wctrain-tinywan-fsdp" "${common[@]}" "${tinywan[@]}"
    wctrain_report "tinywan, $GPUS GPUs FSDP2, bf16" "$OUT/wctrain-tinywan-fsdp"
  else
    echo "one GPU visible: the all-GPU (DDP, FSDP2) runs need 2 or more"
  fi
}
wctrain_check
# ============================================================================ end of wctrain
exit $status
