"""Settings as typed dataclasses, set with ``key=value`` on the command line (both CLIs).

A settings dataclass holds every default and, in ``field(metadata={"help": ...})``, what each
setting does; the YAML files of a ``conf/`` folder only override it (their hydra defaults list
starts with ``<name>_schema``, the dataclass). :func:`load_settings` composes them with the
command line's overrides, on top of hydra: an unknown key is refused with the closest known one
(hydra would suggest ``+key=...`` and then silently carry the typo), a dict setting
(``*_options``) takes ``key.sub=value`` without hydra's ``+``, and a value of the wrong type is
refused naming the setting. :func:`settings_help` prints the settings for ``--help``.

Here too: :class:`RunSettings`, the settings of ``wcbench run`` and ``wcbench score``.
"""

from __future__ import annotations

import dataclasses
import difflib
import textwrap
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, TypeVar

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

CONF_DIR = Path(__file__).parents[1] / "conf"
DEVICES = ("auto", "cpu", "cuda")  # every device a setting may name; a command may take a subset

T = TypeVar("T")


class SettingsError(ValueError):
    """A setting on the command line is unknown or has a bad value; the message says which."""


# ---------------------------------------------------------------- wcbench run / score

@dataclass
class RunSettings:
    """Settings of ``wcbench run`` and ``wcbench score``."""

    estimator: str = field(default="opencv", metadata={
        "help": "camera-motion estimator: opencv (weight-free) | gt (the suite's true poses) | da3 | worldmirror "
                "| vggt"})
    estimator_options: Dict[str, Any] = field(default_factory=dict, metadata={
        "help": "the estimator's options, e.g. estimator_options.weights=/path/to/weights for learned estimators"})
    quality: str = field(default="default", metadata={
        "help": "quality scorer: default (offline: sharpness, noise, blocks, flicker, drift) | default-drift | "
                "hpsv3 | hpsv3-drift | hpsv3-worldcompass"})
    quality_options: Dict[str, Any] = field(default_factory=dict, metadata={
        "help": "the quality scorer's options, e.g. quality_options.spatial_stride=4"})
    mode: str = field(default="default", metadata={
        "help": "default | worldcompass-compat (the released code's best-of-3-thresholds rule)"})
    seed: int = field(default=0, metadata={
        "help": "base seed; each case's generation seed derives from it and the case id"})
    device: str = field(default="auto", metadata={
        "help": "auto | cpu | cuda: models get the device of their process in CaseInfo.device"})
    model_options: Dict[str, Any] = field(default_factory=dict, metadata={
        "help": "passed to the model factory, e.g. model_options.checkpoint=/path (or --model-args "
                "checkpoint=/path)"})
    timeout_s: float = field(default=600.0, metadata={
        "help": "seconds per call into the model (reset, each clip); past it the case fails and the run goes on; "
                "0: no limit"})
    isolate_model: bool = field(default=True, metadata={
        "help": "run the model in a child process: sys.exit, os._exit, a crash or a hang fails its case only"})

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise SettingsError(f"device={self.device!r} is not one of {', '.join(DEVICES)}")
        if self.timeout_s < 0:
            raise SettingsError(f"timeout_s={self.timeout_s:g} must be >= 0 seconds (0: no limit)")


def load_run_settings(overrides: list[str]) -> RunSettings:
    """The settings of ``wcbench run`` and ``wcbench score``: ``conf/run/run.yaml`` and the overrides."""
    return load_settings(RunSettings, overrides, CONF_DIR / "run", "run",
                         see_also="every setting: wcbench run --help-settings")


# ---------------------------------------------------------------- the loader

def _is_dict(hint: Any) -> bool:
    """Whether a field holds free keys (``Dict[str, Any]``, optionally ``| None``)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_is_dict(arg) for arg in typing.get_args(hint) if arg is not type(None))
    return hint is dict or typing.get_origin(hint) is dict


def _settings(cls: type, prefix: str = "") -> Iterator[tuple[str, dataclasses.Field, Any]]:
    """(dotted key, field, type) of every setting of a settings dataclass, groups included."""
    hints = typing.get_type_hints(cls)
    for item in dataclasses.fields(cls):
        yield prefix + item.name, item, hints[item.name]
        if dataclasses.is_dataclass(hints[item.name]):
            yield from _settings(hints[item.name], f"{prefix}{item.name}.")


def _override_key(item: str) -> tuple[str, str, str]:
    """(prefix, dotted key, value) of ``[+|++|~]key=value``."""
    body = item.lstrip("+~")
    prefix = item[:len(item) - len(body)]
    key, _, value = body.partition("=")
    return prefix, key.strip(), value


def _unknown(key: str, item: str, kinds: dict[str, str], see_also: str) -> SettingsError:
    """The error for an unknown key: the closest known key and the known keys beside it."""
    parts = key.split(".")
    depth = next(i for i in range(len(parts)) if ".".join(parts[:i + 1]) not in kinds)
    bad, parent = ".".join(parts[:depth + 1]), ".".join(parts[:depth])
    close = difflib.get_close_matches(bad, list(kinds), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    siblings = [k for k in kinds if k.rpartition(".")[0] == parent]
    where = f"settings of {parent!r}" if parent else "settings"
    tail = f" ({see_also})" if see_also else ""
    return SettingsError(f"unknown setting {bad!r} in {item!r}.{hint} Known {where}: {', '.join(siblings)}{tail}")


def _kinds(schema: type, groups: tuple[str, ...]) -> dict[str, str]:
    """Every key a setting may have, dotted: "value", "dict" (free sub-keys), "section" (a
    dataclass of settings) or "group" (a hydra config group, such as ``recipe``)."""
    kinds = {name: "group" for name in groups}
    for key, _, hint in _settings(schema):
        kinds[key] = "section" if dataclasses.is_dataclass(hint) else "dict" if _is_dict(hint) else "value"
    return kinds


def _is_free_key(key: str, item: str, kinds: dict[str, str], see_also: str) -> bool:
    """Whether ``key`` is a dict setting or a key inside one; a key that is no setting at all is
    refused (SettingsError, with "did you mean")."""
    parts = key.split(".")
    if kinds.get(key) == "dict" or any(kinds.get(".".join(parts[:i])) == "dict" for i in range(1, len(parts))):
        return True
    if key in kinds:
        return False
    parent = ".".join(parts[:-1])
    if kinds.get(parent) in ("value", "group"):
        dicts = ", ".join(k for k, kind in kinds.items() if kind == "dict")
        raise SettingsError(f"{item!r}: {parent!r} has no sub-keys (only {dicts} do)")
    raise _unknown(key, item, kinds, see_also)


def normalise_overrides(schema: type, overrides: list[str], groups: tuple[str, ...] = (),
                        see_also: str = "") -> list[str]:
    """Check every override's key against ``schema`` (config groups ``groups`` besides) and let a
    dict setting take ``key.sub=value`` without hydra's ``+``. Raises SettingsError with "did you mean"."""
    kinds = _kinds(schema, groups)
    out = []
    for item in overrides:
        if "=" not in item:
            raise SettingsError(f"unexpected argument {item!r}: settings are key=value"
                                + (f" ({see_also})" if see_also else ""))
        prefix, key, value = _override_key(item)
        if _is_free_key(key, item, kinds, see_also) and prefix in ("", "+"):
            prefix = "++"  # add or replace keys: hydra would ask for "+" to add one
        out.append(f"{prefix}{key}={value}")
    return out


def load_settings(schema: type[T], overrides: list[str], conf_dir: Path, name: str, groups: tuple[str, ...] = (),
                  see_also: str = "") -> T:
    """Compose ``conf_dir/<name>.yaml`` (over ``schema``, registered as ``<name>_schema``) with
    ``key=value`` overrides into a ``schema`` instance; any bad key or value is a SettingsError
    naming it (``see_also`` tells where every setting is listed)."""
    items = normalise_overrides(schema, overrides, groups, see_also)
    ConfigStore.instance().store(name=f"{name}_schema", node=schema)
    try:
        with initialize_config_dir(config_dir=str(conf_dir), version_base=None):
            composed = compose(config_name=name, overrides=items)
        return OmegaConf.to_object(composed)
    except (OmegaConfBaseException, HydraException) as err:
        cause = err if isinstance(err, OmegaConfBaseException) else err.__cause__
        if isinstance(cause, OmegaConfBaseException):
            key = getattr(cause, "full_key", None)
            message = (getattr(cause, "msg", None) or str(cause)).splitlines()[0]
            raise SettingsError(f"bad setting{f' {key}' if key else ''}: {message}") from err
        raise SettingsError(f"bad setting: {' '.join(str(err).split())}") from err
    except SettingsError:
        raise
    except ValueError as err:  # a dataclass's own check (__post_init__)
        raise SettingsError(str(err)) from err


# ---------------------------------------------------------------- help

def command_line_value(value: object) -> str:
    """A value written the way it is given on the command line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(command_line_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {command_line_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def _default(item: dataclasses.Field) -> object:
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return item.default


def settings_help(schema: type, title: str, width: int = 100) -> str:
    """Every setting of ``schema`` as ``key=default  help`` lines, one block per dataclass."""
    blocks: dict[str, tuple[str, list[tuple[str, str]]]] = {"": (title, [])}
    for key, item, hint in _settings(schema):
        if dataclasses.is_dataclass(hint):
            doc = (hint.__doc__ or "").strip().splitlines()[0].rstrip(".")
            blocks[key] = (f"{key}.*: {doc[:1].lower()}{doc[1:]}", [])
            continue
        row = (f"{key}={command_line_value(_default(item))}", item.metadata.get("help", ""))
        blocks[key.rpartition(".")[0]][1].append(row)
    column = min(max(len(setting) for _, rows in blocks.values() for setting, _ in rows) + 2, 32)
    return "\n\n".join(_block(heading, rows, column, width) for heading, rows in blocks.values() if rows)


def _block(heading: str, rows: list[tuple[str, str]], column: int, width: int) -> str:
    lines = [heading]
    for setting, text in rows:
        wrapped = textwrap.wrap(text, width - column - 2) or [""]
        if len(setting) + 2 > column:  # too long for the column: help on the lines below
            lines.append(f"  {setting}")
            lines += [" " * (column + 2) + part for part in wrapped if part]
            continue
        lines.append(f"  {setting.ljust(column)}{wrapped[0]}".rstrip())
        lines += [" " * (column + 2) + part for part in wrapped[1:]]
    return "\n".join(lines)
