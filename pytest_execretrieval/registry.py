"""One registry shape, for embedders and rerankers alike: names -> factories.

A :class:`Registry` resolves a name, in this order, to a factory ``(context) -> object``:

1. ``prefix:ARGUMENT`` with a known prefix (``st:PATH``, ``rrf:A+B``): the prefix's factory for
   that argument; an empty argument is an error;
2. a built-in name (those of an optional module, ``extra``, count as built-in);
3. an entry point of the registry's group, registered by another installed package. A plug-in
   cannot replace a built-in: the built-in wins.

Entry points are looked up and loaded once, not on every lookup: again only when ``sys.path``
changed (a distribution put on the path since is then found). Making the object is where a
missing package shows, so an ``ImportError`` there becomes the registry's own error, naming the
name. Nothing here imports anything of the package: both registries sit above it.
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

C = TypeVar("C")  # what a factory is given: the embedder options, the reranker context
T = TypeVar("T")  # what it makes


def _no_extra() -> dict:
    return {}


@dataclass
class Registry(Generic[C, T]):
    kind: str  # "embedder", "reranker": the word in error messages
    group: str  # the entry-point group of plug-ins
    error: type[Exception]  # raised for an unknown or unusable name
    builtin: Mapping[str, Callable[[C], T]]
    prefixed: Mapping[str, Callable[[str, C], T]]  # prefix -> (argument, context) -> object
    spelled: tuple[str, ...] = ()  # how the prefixed names read in known_names(): "st:PATH"
    argument: str = "an argument"  # what follows a prefix, in the error when it is missing
    extra: Callable[[], Mapping[str, Callable[[C], T]]] = _no_extra  # an optional module's
    _loaded: tuple[tuple[str, ...], dict[str, Callable[[C], T]]] | None = field(
        default=None, repr=False
    )

    def plugins(self) -> dict[str, Callable[[C], T]]:
        """The group's entry points, name -> loaded factory (see the module docstring)."""
        path = tuple(sys.path)
        if self._loaded is None or self._loaded[0] != path:
            points = importlib.metadata.entry_points(group=self.group)
            self._loaded = (path, {ep.name: ep.load() for ep in points})
        return self._loaded[1]

    def known_names(self) -> list[str]:
        return list(dict.fromkeys([*self.builtin, *self.extra(), *self.spelled, *self.plugins()]))

    def shipped_names(self) -> list[str]:
        """The names this package ships, the prefixed ones as ``spelled`` (no entry point and
        no optional module is looked up: for a help text)."""
        return list(dict.fromkeys([*self.builtin, *self.spelled]))

    def make(self, name: str, context: C) -> T:
        """The object called ``name``, made with ``context``; :attr:`error` when the name is
        unknown, a prefix lacks its argument, or making it needs a package not installed."""
        prefix, sep, argument = name.partition(":")
        try:
            if sep and prefix in self.prefixed:
                if not argument:
                    raise self.error(
                        f"{self.kind} {name!r} needs {self.argument} after {prefix + ':'!r}"
                    )
                return self.prefixed[prefix](argument, context)
            factories = {**self.plugins(), **self.extra(), **self.builtin}
            if name not in factories:
                raise self.error(
                    f"unknown {self.kind} {name!r}; known: {', '.join(self.known_names())} "
                    f"(or register one in the entry-point group {self.group!r})"
                )
            return factories[name](context)
        except ImportError as exc:
            raise self.error(f"{self.kind} {name!r} is not installed here: {exc}") from None
