"""What depends on the language an item's code is written in, behind one protocol.

Everything else is language-free data: an item's query, its tests (the closed test grammar,
``execution/_grammar.py``, is the same data in every language), the corpus rows, the
rankings, the metrics and the reports. A :class:`Language` answers the questions whose answer
depends on the code's language:

- ``parse(code)``: the syntax tree, or ``SyntaxError`` (the item gate's first check);
- ``defined_names(code)`` / ``defines(code, entry_point)``: the functions code defines at
  module level, so the benchmark knows without running it that a snippet cannot pass a query
  whose entry point it does not define;
- ``missing_entry_point``: that snippet's outcome in each test (it is never run);
- ``operator_classes`` / ``mutants(code, entry_point)``: the mutation operators that make the
  item's distractors;
- ``runner_version``: what a verdict of the runner that executes this language's suites means
  (a corpus records it, ``corpus.build.engine``).

Adding a language: one module ``languages/<name>.py`` with a class satisfying the protocol,
one line in :data:`LANGUAGES`, and the items that use it (``language = "<name>"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .python import PYTHON

__all__ = ["DEFAULT", "LANGUAGES", "Language", "UnknownLanguage", "language"]


class Language(Protocol):
    """The language-specific knowledge of items, distractors and their outcomes."""

    name: str
    missing_entry_point: str  # the outcome of every test of a snippet lacking the entry point
    runner_version: str
    operator_classes: tuple[str, ...]

    def parse(self, code: str) -> object:
        """The syntax tree of ``code``; raises ``SyntaxError`` when it does not parse."""
        ...

    def defined_names(self, code: str) -> frozenset[str]:
        """The functions ``code`` defines at module level (none if it does not parse)."""
        ...

    def defines(self, code: str, entry_point: str) -> bool:
        """Whether ``code`` defines ``entry_point`` at module level."""
        ...

    def mutants(self, code: str, entry_point: str) -> Sequence[object]:
        """Every valid single-edit mutant of ``code`` (the distractor candidates)."""
        ...


# The registry: a language's name (an item's ``language`` field) -> its implementation.
LANGUAGES: dict[str, Language] = {PYTHON.name: PYTHON}
DEFAULT = PYTHON.name  # an item without a ``language`` field


class UnknownLanguage(ValueError):
    """A language name not in :data:`LANGUAGES`; the message names the known ones."""


def language(name: str) -> Language:
    """The implementation of the language ``name``; :class:`UnknownLanguage` if there is none."""
    try:
        return LANGUAGES[name]
    except KeyError:
        raise UnknownLanguage(
            f"unknown language {name!r} (known: " + ", ".join(sorted(LANGUAGES)) + ")"
        ) from None
