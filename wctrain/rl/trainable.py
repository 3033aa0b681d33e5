"""Which weights post-training moves, and at which learning rates."""

from __future__ import annotations

from torch import nn

from wctrain.rl.exploration import action_embedding

TRAIN_ALL = "all"  # rl.trainable=[all]: every weight


def names_module(name: str, path: str) -> bool:
    """Whether parameter ``name`` lies under the module ``path`` at any depth: ``action_proj``
    names ``action_proj.0.weight``; ``cond_emb_proj`` names ``down_blocks.0.cond_emb_proj.weight``
    (the FiLM projection inside every block), but never ``cond_emb_projection.weight``."""
    parts, want = name.split("."), path.split(".")
    return any(parts[i:i + len(want)] == want for i in range(len(parts) - len(want) + 1))


def resolve_trainable(model: nn.Module, paths: list[str] | None) -> list[str] | None:
    """The module paths to train: ``paths`` as given, the model's ``trainable_modules`` when None,
    and None (every weight) for ``[all]`` or a model that declares none."""
    if paths is None:
        declared = getattr(model, "trainable_modules", None)
        return list(declared) if declared else None
    return None if list(paths) == [TRAIN_ALL] else list(paths)


def select_trainable(model: nn.Module, paths: list[str] | None) -> list[str]:
    """Freeze every parameter under none of the module ``paths`` (None: train all); returns the
    trained parameters' names. A path that names nothing is an error (a typo would silently
    freeze the whole model)."""
    names = [name for name, _ in model.named_parameters()]
    for path in paths or []:
        if not any(names_module(name, path) for name in names):
            top = sorted({name.split(".")[0] for name in names})
            raise ValueError(f"rl.trainable: no parameter of {type(model).__name__} lies under a module "
                             f"{path!r}; top-level modules: {top} (a path may also name a module inside "
                             f"every block, e.g. cond_emb_proj; [all] trains every weight)")
    for name, param in model.named_parameters():
        param.requires_grad_(paths is None or any(names_module(name, path) for path in paths))
    return [name for name, param in model.named_parameters() if param.requires_grad]


def optimizer_groups(model: nn.Module, lr: float, shared_lr: float) -> list[dict]:
    """AdamW groups of the trained weights: the exposed action-embedding table at ``lr``, the rest
    at ``shared_lr``. A row of the table moves only its own label, so it takes large steps; a
    shared weight moves every label at once (and every label's looks), so it takes small ones."""
    table = action_embedding(model)
    table_params = {id(p) for p in table.parameters()} if table is not None else set()
    rows, shared = [], []
    for param in model.parameters():
        if param.requires_grad:
            (rows if id(param) in table_params else shared).append(param)
    return [{"params": params, "lr": rate} for params, rate in ((rows, lr), (shared, shared_lr)) if params]
