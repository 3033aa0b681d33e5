"""Compare a run of wctrain before the model plug-in refactor (commit f85a4f8: checkpoint.pt)
with the same command after it: trained weights, evaluation EMA, export and metrics rows.

    python -m experiments.wctrain_compare_runs OLD_RUN_DIR NEW_RUN_DIR

Prints whether each matches bit for bit (metrics: every field the two versions share; the old
``reward_if`` is the new ``reward_following``). Made by ``experiments/wctrain_parity.sh``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

SHARED_FIELDS = {"reward_if": "reward_following", "r_mean": "r_mean", "r_std": "r_std", "loss": "loss",
                 "deviation": "deviation", "grad_norm": "grad_norm", "clip": "clip",
                 "weakest_labels": "weakest_labels", "clip_generations": "clip_generations"}


def main() -> None:
    old, new = Path(sys.argv[1]), Path(sys.argv[2])
    state = torch.load(old / "checkpoint.pt", weights_only=False)
    folder = new / "checkpoints" / (new / "latest").read_text().strip()
    weights = {k.removeprefix("model."): v for k, v in load_file(str(folder / "model.safetensors")).items()}
    same = sum(torch.equal(state["model"][k], weights[k]) for k in state["model"])
    print(f"trained weights: {same} of {len(state['model'])} tensors equal bit for bit")
    ema = torch.load(folder / "custom_checkpoint_1.pkl", weights_only=True)["shadow"]
    print("evaluation EMA equal:", all(torch.equal(state["eval_ema"]["shadow"][k], ema[k]) for k in ema))
    exported = [load_file(str(run / "final" / "diffusion_pytorch_model.safetensors")) for run in (old, new)]
    print("exported model equal:", all(torch.equal(exported[0][k], exported[1][k]) for k in exported[0]))
    rows = [[json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()] for run in (old, new)]
    differences = [(a["step"], key) for a, b in zip(*rows) for key, name in SHARED_FIELDS.items() if a[key] != b[name]]
    print(f"metrics: {len(rows[0])} and {len(rows[1])} rows, fields that differ: {differences or 'none'}")


if __name__ == "__main__":
    main()
