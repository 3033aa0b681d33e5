"""One small typed registry, shared by world models, pose estimators and quality scorers:
names fed by a decorator (and, for models, an entry-point group), an error on a duplicate
name, and "did you mean ..." on an unknown one."""

from __future__ import annotations

import difflib
import inspect
from importlib import import_module
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Factories by name. ``builtins`` are modules imported before the first lookup so that
    their ``@register`` decorators have run."""

    def __init__(self, kind: str, builtins: tuple[str, ...] = ()):
        self.kind = kind
        self._builtins = builtins
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Decorator: make ``factory`` available as ``name``."""

        def decorate(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories and self._factories[name] is not factory:
                raise ValueError(f"{self.kind} name {name!r} is registered twice")
            self._factories[name] = factory
            return factory

        return decorate

    def add_if_absent(self, name: str, factory: Callable[..., T]) -> None:
        """For entry points: a name registered in code wins over a plug-in of the same name."""
        self._factories.setdefault(name, factory)

    def names(self) -> list[str]:
        for module in self._builtins:
            import_module(module)
        return sorted(self._factories)

    def get(self, name: str, hint: str = "") -> Callable[..., T]:
        """The factory of ``name``; a ValueError suggests the closest known name."""
        known = self.names()
        if name not in self._factories:
            close = difflib.get_close_matches(name, known, n=1)
            suggestion = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown {self.kind} {name!r}.{suggestion} Known: {', '.join(known)}{hint}")
        return self._factories[name]

    def build(self, name: str, **options: Any) -> T:
        return self.get(name)(**options)


def accepted_options(factory: Callable[..., Any]) -> list[str] | None:
    """Keyword options ``factory`` accepts (a class's constructor, a function, a
    ``functools.partial``), or None when it takes ``**kwargs`` and so cannot be checked."""
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # some builtins have no signature
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return [p.name for p in parameters if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                     inspect.Parameter.KEYWORD_ONLY)]


def check_options(what: str, factory: Callable[..., Any], options: dict, skip: tuple[str, ...] = ()) -> None:
    """Raise ValueError naming every option ``factory`` does not accept, with the accepted
    ones (``skip``: parameters the caller fills itself)."""
    accepted = accepted_options(factory)
    if accepted is None:
        return
    accepted = [name for name in accepted if name not in skip]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        hints = [f"{name!r} (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(name, accepted, n=1))
                 else repr(name) for name in unknown]
        raise ValueError(f"{what}: unknown option(s) {', '.join(hints)}; accepted: "
                         f"{', '.join(accepted) if accepted else 'none'}")
