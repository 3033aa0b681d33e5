"""One small typed registry, shared by world models, pose estimators and quality scorers:
names fed by a decorator (and, for models, an entry-point group), an error on a duplicate
name, and "did you mean ..." on an unknown one."""

from __future__ import annotations

import difflib
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
