"""The EMA of a model sharded with torch's FSDP2 (``fully_shard``) on 2 CPU processes (gloo):
after one optimiser step, both ranks' full, unsharded EMA shadows equal the EMA of the same step
taken without sharding. Run by tests/wctrain/test_accelerate.py:

    torchrun --nproc_per_node 2 tests/plugins/fsdp_ema.py OUT_FILE
"""

import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

from wctrain.models.tinywan import TinyWan
from wctrain.rl.loss import VelocityField
from wctrain.rl.policy import EMA, DecaySchedule
from wctrain.rl.trainable import select_trainable

TINY = dict(height=16, width=16, token_patch=2, dim=32, ffn_dim=64, heads=2, layers=2)


def one_step(field: VelocityField) -> None:
    """One AdamW step on the action path with the same data on every rank, through ``forward``
    (where FSDP gathers the shards), as the trainer calls it."""
    optimizer = torch.optim.AdamW([p for p in field.parameters() if p.requires_grad], lr=1e-2)
    generator = torch.Generator().manual_seed(1)
    x_t, prefix = torch.randn(2, 2, 48, 8, 8, generator=generator), torch.randn(2, 1, 48, 8, 8, generator=generator)
    actions = torch.zeros(2, 8, 4)
    actions[..., 2] = 1.0
    loss = field(x_t, torch.full((2,), 0.5), prefix, x_t, actions).square().mean()
    loss.backward()
    optimizer.step()


def build() -> tuple[TinyWan, EMA]:
    torch.manual_seed(0)
    model = TinyWan(**TINY)
    torch.nn.init.normal_(model.proj_out.weight, std=0.05)
    select_trainable(model, list(model.trainable_modules))
    return model, EMA(model, DecaySchedule(max_decay=0.5, ramp=None))  # made before sharding


def main(out: str) -> None:
    dist.init_process_group("gloo")
    reference, reference_ema = build()
    one_step(VelocityField(reference))
    reference_ema.update(reference)
    model, ema = build()
    field = VelocityField(model)
    for block in model.blocks:
        fully_shard(block)
    fully_shard(field)
    one_step(field)
    ema.update(model)  # gathers the trained (sharded) parameters
    sharded = [name for name, p in model.named_parameters() if hasattr(p, "full_tensor")]
    errors = {name: float((a - b).abs().max()) for (name, a), b in
              zip(ema.module.state_dict().items(), reference_ema.module.state_dict().values())}
    if dist.get_rank() == 0:
        with open(out, "w") as handle:
            json.dump({"sharded": len(sharded), "max_error": max(errors.values()), "count": len(errors)}, handle)
    # both ranks leave together: a rank that tears gloo down while the other still writes can
    # abort at exit ("terminate called without an active exception")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
    # Even after a clean teardown, about one run in five (on a busy 2-core machine) aborted in the
    # interpreter's exit, after both ranks had destroyed the group ("terminate called without an
    # active exception", measured with torch 2.13 CPU): leave without running C++ destructors.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
