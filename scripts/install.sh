#!/usr/bin/env bash
# Create .venv and install wcbench + wctrain with a CPU build of torch (no CUDA download).
# GPU users: install the torch build you want first, e.g.
#   pip install torch --index-url https://download.pytorch.org/whl/cu124
# then `pip install -e ".[dev]"` (the project asks only for torch>=2.4).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -d .venv ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[dev]"
echo "installed into $(pwd)/.venv"
