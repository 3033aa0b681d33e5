"""The ``key=value`` settings of ``wcbench run`` and ``wcbench score``, checked before use.

Defaults live in ``conf/run/run.yaml`` and are composed with hydra's override syntax. On top of
hydra: an unknown key is refused with the closest known one (hydra would suggest ``+key=...``
and then silently carry the typo), ``*_options.key=value`` adds an option without hydra's
``+``, and every value is checked against its type in :class:`RunSettings` (``seed=abc`` is an
error, not a string seed).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

CONF_DIR = Path(__file__).parents[1] / "conf"
DEVICES = ("auto", "cpu", "cuda")


class SettingsError(ValueError):
    """A setting on the command line is unknown or has a bad value; the message says which."""


@dataclass
class RunSettings:
    """The typed settings; ``conf/run/run.yaml`` holds their defaults and comments."""

    estimator: str = "opencv"
    estimator_options: Dict[str, Any] = field(default_factory=dict)
    quality: str = "default"
    quality_options: Dict[str, Any] = field(default_factory=dict)
    mode: str = "default"
    seed: int = 0
    device: str = "auto"
    model_options: Dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 600.0
    isolate_model: bool = True


_OPTION_GROUPS = {f.name for f in fields(RunSettings) if f.name.endswith("_options")}


def _override_key(item: str) -> tuple[str, str, str]:
    """(prefix, dotted key, value) of ``[+|++|~]key=value``."""
    body = item.lstrip("+~")
    prefix = item[:len(item) - len(body)]
    key, _, value = body.partition("=")
    return prefix, key.strip(), value


def normalise_overrides(overrides: list[str]) -> list[str]:
    """Check every override's key against :class:`RunSettings` and let ``X_options.key=value``
    add a key without hydra's ``+``. Raises SettingsError with "did you mean"."""
    known = [f.name for f in fields(RunSettings)]
    out = []
    for item in overrides:
        if "=" not in item:
            raise SettingsError(f"unexpected argument {item!r}: settings are key=value, e.g. estimator=gt seed=3")
        prefix, key, value = _override_key(item)
        top = key.split(".", 1)[0]
        if top not in known:
            close = difflib.get_close_matches(top, known, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise SettingsError(f"unknown setting {top!r} in {item!r}.{hint} Known settings: {', '.join(known)}")
        if "." in key and top not in _OPTION_GROUPS:
            raise SettingsError(f"{item!r}: {top!r} has no sub-keys (only {', '.join(sorted(_OPTION_GROUPS))} do)")
        if top in _OPTION_GROUPS and prefix in ("", "+"):
            prefix = "++"  # add or replace options: the groups start empty, hydra would ask for "+"
        out.append(f"{prefix}{key}={value}")
    return out


def load_settings(overrides: list[str], name: str = "run") -> RunSettings:
    """Compose ``conf/<name>/<name>.yaml`` with the overrides and check every value's type."""
    items = normalise_overrides(overrides)
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR / name), version_base=None):
            composed = compose(config_name=name, overrides=items)
        typed = OmegaConf.merge(OmegaConf.structured(RunSettings), composed)
        settings = OmegaConf.to_object(typed)
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None)
        message = (getattr(err, "msg", None) or str(err)).splitlines()[0]
        raise SettingsError(f"bad setting{f' {key}' if key else ''}: {message}") from err
    except HydraException as err:
        raise SettingsError(f"bad setting: {' '.join(str(err).split())}") from err
    _check_values(settings)
    return settings


def _check_values(settings: RunSettings) -> None:
    if settings.device not in DEVICES:
        raise SettingsError(f"device={settings.device!r} is not one of {', '.join(DEVICES)}")
    if settings.timeout_s < 0:
        raise SettingsError(f"timeout_s={settings.timeout_s:g} must be >= 0 seconds (0: no limit)")
