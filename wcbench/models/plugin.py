"""Loading user code: ``MODULE:FACTORY`` specs found from the current folder (and
``--include-path``), factory options checked against the factory's signature, and
``--model-args key=value,...`` parsed; every error names what exists instead."""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Sequence


def extend_import_path(include_paths: Sequence[str | Path] = ()) -> list[str]:
    """Put ``include_paths`` and then the current folder at the front of ``sys.path`` (the
    console script, unlike ``python -m``, does not), so ``MODULE:FACTORY`` finds your files."""
    folders = []
    for path in include_paths:
        folder = Path(path).expanduser().resolve()
        if not folder.is_dir():
            raise ValueError(f"--include-path {path}: no such folder")
        folders.append(str(folder))
    folders.append(os.getcwd())
    for folder in reversed(folders):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    return folders


def _public_callables(module: Any) -> list[str]:
    return sorted(name for name, value in vars(module).items()
                  if callable(value) and not name.startswith("_")
                  and getattr(value, "__module__", "") == module.__name__)


def import_factory(spec: str, include_paths: Sequence[str | Path] = ()) -> Callable[..., Any]:
    """Resolve ``MODULE:FACTORY``; errors name what is missing and what exists instead."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"model {spec!r}: write MODULE:FACTORY, e.g. examples.my_model:PanZoomModel")
    searched = extend_import_path(include_paths)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name and (module_name == err.name or module_name.startswith(err.name + ".")):
            raise ValueError(f"model {spec!r}: cannot import module {module_name!r}: it is not in "
                             f"{', '.join(searched)} or the installed packages; run from the folder that holds "
                             "it or add --include-path DIR") from err
        raise ValueError(f"model {spec!r}: cannot import module {module_name!r}: it imports {err.name!r}, "
                         "which is not installed") from err
    except ImportError as err:
        raise ValueError(f"model {spec!r}: cannot import module {module_name!r}: {err}") from err
    factory = getattr(module, attr, None)
    if factory is None:
        known = _public_callables(module)
        close = difflib.get_close_matches(attr, known, n=1)
        suggestion = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"model {spec!r}: module {module_name!r} has no {attr!r}.{suggestion} "
                         f"It defines: {', '.join(known) or 'no public classes or functions'}")
    return factory


def call_factory(name: str, factory: Callable[..., Any], options: dict[str, Any]) -> Any:
    """``factory(**options)``, refusing options it does not take with the ones it does."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return factory(**options)
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    known = [p for p, value in parameters.items()
             if value.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    unknown = [key for key in options if key not in known]
    if unknown and not takes_any:
        close = difflib.get_close_matches(unknown[0], known, n=1)
        suggestion = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"model {name!r} takes no option {unknown[0]!r}.{suggestion} "
                         f"Its options: {', '.join(known) or 'none'}")
    return factory(**options)


_KEY_START = re.compile(r",\s*(?=[A-Za-z_]\w*\s*=)")


def parse_model_args(text: str) -> dict[str, Any]:
    """``"weights=/w,steps=8,upsample=false"`` -> ``{"weights": "/w", "steps": 8, "upsample": False}``.

    A comma starts a new option only before ``name=``, so values may hold commas; values
    read as whole numbers, decimals, true/false or null where they can, as text otherwise.
    """
    options: dict[str, Any] = {}
    for item in _KEY_START.split(text.strip()):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise ValueError(f"--model-args {text!r}: {item!r} is not KEY=VALUE (e.g. weights=/ckpt,steps=8)")
        if key in options:
            raise ValueError(f"--model-args {text!r}: {key!r} is given twice")
        options[key] = _scalar(value.strip())
    return options


def _scalar(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "none"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
