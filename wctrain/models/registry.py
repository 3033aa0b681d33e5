"""Where trainable world models come from, and how a trained one is saved and found again.

``model=NAME`` looks ``NAME`` up in the ``wctrain.models`` entry-point group (``tinywm``,
``tinywan``; a package registers its own in its pyproject); ``model=package.module:factory``
imports the factory. ``model_options`` are the factory's keyword arguments. Whatever it
returns must be a :class:`~wctrain.models.base.TrainableWorldModel`.

An exported model is a folder: diffusers ``ModelMixin`` models are written with
``save_pretrained`` (so ``from_pretrained`` and ``+model_options.checkpoint=FOLDER`` of
their own factory load it), others as ``model.safetensors``; beside the weights,
``wctrain_model.json`` names the factory and its options, which :func:`load_trained` uses
to rebuild the model and load the weights into it.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable

from diffusers import ModelMixin
from safetensors.torch import load_file, save_file
from torch import nn

from wcbench.core.registry import Registry
from wcbench.core.storage import read_json, write_json
from wctrain.models.base import check_trainable

ENTRY_POINT_GROUP = "wctrain.models"
EXPORT_INFO = "wctrain_model.json"
STATE_DICT_FILE = "model.safetensors"
DIFFUSERS_WEIGHTS = "diffusion_pytorch_model.safetensors"

MODELS: Registry[Callable[..., nn.Module]] = Registry("trainable world model")


def available_models() -> list[str]:
    """Names of the registered trainable models (entry points included)."""
    _load_entry_points()
    return MODELS.names()


def _load_entry_points() -> None:
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        MODELS.add_if_absent(entry.name, entry.load())


def _factory(spec: str) -> Callable[..., Any]:
    if ":" not in spec:
        _load_entry_points()
        return MODELS.get(spec, hint="; or give package.module:factory")
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"model {spec!r}: cannot import module {module_name!r}: {err}") from err
    if not hasattr(module, attr):
        raise ValueError(f"model {spec!r}: module {module_name!r} has no attribute {attr!r}")
    return getattr(module, attr)


def build_trainable(spec: str, options: dict[str, Any] | None = None) -> nn.Module:
    """The model ``spec`` names, built with ``options``; a ValueError for an unknown name, a
    factory that refuses the options, or an object that does not follow the protocol."""
    options = dict(options or {})
    factory = _factory(spec)
    try:
        model = factory(**options)
    except TypeError as err:  # a misspelt or unknown option
        raise ValueError(f"model {spec!r} refused model_options {options}: {err}") from err
    return check_trainable(model, spec)


def save_model(model: nn.Module, folder: Path, spec: str, options: dict[str, Any],
               reward_scorers: dict | None = None) -> None:
    """Export ``model`` to ``folder`` (see the module doc) with the spec that rebuilds it and,
    for a post-trained model, the scorers its rewards were computed with."""
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(model, ModelMixin):
        model.save_pretrained(folder)
    else:
        save_file({name: tensor.detach().cpu().contiguous() for name, tensor in model.state_dict().items()},
                  str(folder / STATE_DICT_FILE))
    info = {"model": spec, "model_options": options,
            "format": "save_pretrained" if isinstance(model, ModelMixin) else "state_dict"}
    write_json(folder / EXPORT_INFO, info | ({"reward_scorers": reward_scorers} if reward_scorers else {}))


def load_weights(model: nn.Module, folder: Path) -> None:
    """Load the weights :func:`save_model` wrote into ``model`` (same architecture)."""
    files = [folder / name for name in (STATE_DICT_FILE, DIFFUSERS_WEIGHTS) if (folder / name).exists()]
    if not files:
        raise FileNotFoundError(f"{folder}: no {STATE_DICT_FILE} or {DIFFUSERS_WEIGHTS}; pass a folder written by "
                                f"`wctrain train` (RUN_DIR/final) or `wctrain pretrain`")
    device = next(model.parameters()).device
    model.load_state_dict(load_file(str(files[0]), device=str(device)))


def load_trained(folder: str | Path) -> nn.Module:
    """Rebuild an exported model from its ``wctrain_model.json`` and load its weights (eval mode)."""
    folder = Path(folder)
    if not (folder / EXPORT_INFO).exists():
        raise FileNotFoundError(f"{folder}: no {EXPORT_INFO}; pass the final/ folder of a `wctrain train` run")
    info = read_json(folder / EXPORT_INFO)
    model = build_trainable(info["model"], info["model_options"])
    load_weights(model, folder)
    return model.eval()
