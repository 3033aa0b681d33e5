#!/usr/bin/env bash
# Make .venv and install wcbench + wctrain with everything the tests need (torch first, then
# this project with the extras dev, train and learned).
#
# Settings, all optional, as environment variables:
#   WCBENCH_TORCH        the torch requirement               [torch==2.13.0]
#   WCBENCH_TORCH_INDEX  the index torch comes from          [unset: the CPU build index]
#       unset: a torch wheel in a local wheelhouse that pip is configured to search (find-links)
#              if there is one, else https://download.pytorch.org/whl/cpu (CPU build, no CUDA);
#       a URL: that index, e.g. https://download.pytorch.org/whl/cu124 for CUDA 12.4;
#       empty: pip's own index (PyPI: on Linux that is the CUDA build, several GB).
#   PYTHON               the interpreter that makes .venv    [python3]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH=${WCBENCH_TORCH:-torch==2.13.0}
CPU_INDEX=https://download.pytorch.org/whl/cpu
[ -d .venv ] || "$PYTHON" -m venv .venv
pip() { .venv/bin/python -m pip "$@"; }
pip install -q --upgrade pip
if [ -z "${WCBENCH_TORCH_INDEX+set}" ] && pip install -q --no-deps --no-index "$TORCH" 2>/dev/null; then
  echo "torch: $TORCH from a local wheelhouse (or already installed)"  # its dependencies come with the project
elif [ -n "${WCBENCH_TORCH_INDEX-$CPU_INDEX}" ]; then
  echo "torch: $TORCH from ${WCBENCH_TORCH_INDEX-$CPU_INDEX}"
  pip install -q "$TORCH" --index-url "${WCBENCH_TORCH_INDEX-$CPU_INDEX}"
else
  echo "torch: $TORCH from pip's own index"
  pip install -q "$TORCH"
fi
pip install -q -e ".[dev,train,learned]"
echo "installed into $(pwd)/.venv"
