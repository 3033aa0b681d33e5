#!/usr/bin/env bash
# Checks that need a CUDA GPU, one block per component. Run from the repository root on a GPU
# machine (the CPU machines of this project have none):  bash benchmarks/gpu_check.sh
# Each block says what it needs and skips itself, saying why, when that is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
status=0

# ---------------------------------------------------------------- HPSv3 quality scorers (issue 34)
# Needs: pip install -e ".[hpsv3]", and local weights in HPSV3_BASE (a Qwen2-VL-7B-Instruct
# folder) and HPSV3_CKPT (HPSv3.safetensors); nothing is downloaded. Checks that both
# definitions load offline, score a rendered 480x832 clip, and rank a blurred copy lower.
if [[ -n "${HPSV3_BASE:-}" && -n "${HPSV3_CKPT:-}" ]]; then
  HF_HUB_OFFLINE=1 "$PY" benchmarks/check_hpsv3.py --base "$HPSV3_BASE" --checkpoint "$HPSV3_CKPT" || status=1
else
  echo "HPSv3 check skipped: set HPSV3_BASE and HPSV3_CKPT to the local weights"
fi
# ---------------------------------------------------------------- end of HPSv3 block

exit $status
