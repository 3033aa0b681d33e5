"""Finding world models by name: one registry fed by ``@register_model`` (the built-in
adapters) and by the ``wcbench.models`` entry-point group (plug-ins such as wctrain's tinywm);
``videos:DIR`` and ``MODULE:FACTORY`` specs are resolved here too, with the current folder
(and any ``include_paths``) on the import path."""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, Callable, Sequence

from wcbench.core.registry import Registry
from wcbench.models.base import WorldModel
from wcbench.models.plugin import call_factory, extend_import_path, import_factory
from wcbench.models.videos import VideoFolderModel

ModelFactory = Callable[..., WorldModel]
MODELS: Registry[WorldModel] = Registry("model", builtins=(
    "wcbench.models.oracle", "wcbench.models.worldplay", "wcbench.models.matrix_game", "wcbench.models.text_actions"))
register_model = MODELS.register


def _entry_point_factory(entry: EntryPoint) -> ModelFactory:
    """Import an entry point's target only when the model is built, so that listing models
    works without the optional packages a plug-in needs."""

    def factory(**options: Any) -> WorldModel:
        try:
            target = entry.load()
        except ImportError as err:
            raise ValueError(f"model {entry.name!r} ({entry.value}) cannot be imported: {err}. Install what it "
                             "needs (this project's tinywm: pip install -e '.[train]')") from err
        return call_factory(entry.name, target, options)

    return factory


def _load_entry_points() -> None:
    for entry in entry_points(group="wcbench.models"):
        MODELS.add_if_absent(entry.name, _entry_point_factory(entry))


def available_models() -> list[str]:
    _load_entry_points()
    return MODELS.names()


def build_model(spec: str, include_paths: Sequence[str | Path] = (), **options: Any) -> WorldModel:
    """Build a model from a spec: a registered name (``oracle``, ``tinywm``, see ``wcbench
    models``), ``videos:DIR`` or ``MODULE:FACTORY``. ``options`` go to the factory."""
    extend_import_path(include_paths)  # also for loaders that registered models import later
    if spec.startswith("videos:"):
        return call_factory("videos", VideoFolderModel, {"folder": spec.split(":", 1)[1], **options})
    if ":" in spec:
        factory = import_factory(spec)
    else:
        _load_entry_points()
        if "." in spec and spec not in MODELS.names():
            module_name, _, attr = spec.rpartition(".")
            raise ValueError(f"unknown model {spec!r}. Did you mean {module_name + ':' + attr!r}? "
                             "(a Python factory is written MODULE:FACTORY)")
        factory = MODELS.get(spec, hint="; or videos:DIR, or MODULE:FACTORY (e.g. examples.my_model:PanZoomModel)")
    model = call_factory(spec, factory, options)
    missing = [attr for attr in ("reset", "step") if not callable(getattr(model, attr, None))]
    if missing:
        raise TypeError(f"model {spec!r} does not implement the WorldModel protocol: no {' or '.join(missing)}() "
                        "(see the README's model section)")
    return model
