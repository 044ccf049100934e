"""What depends on the language an item's code is written in, behind one protocol.

Everything else is language-free data: an item's query, its tests (the closed test grammar,
``execution/_grammar.py``, is the same data in every language), the corpus rows, the
rankings, the metrics and the reports. A :class:`Language` answers the questions whose answer
depends on the code's language:

- ``defined_names(code)`` / ``defines(code, entry_point)``: the functions code defines at
  module level, so the benchmark knows without running it that a snippet cannot pass a query
  whose entry point it does not define (and which other queries' snippets may pass a query);
- ``missing_entry_point``: that snippet's outcome in each test (it is never run);
- ``mutants(code, entry_point)``: the mutation operators' candidates, from which the build
  selects an item's distractors.

Adding a language: one module ``languages/<name>.py`` with a class satisfying the protocol,
one line in :data:`LANGUAGES`, and the items that use it (``language = "<name>"``). What is not
behind the protocol yet, because Python is the only implementation: the item gate for code
(``corpus.items.code_problems``: parse, standard-library imports) and the sandbox that runs
suites (``execution/``), both Python's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..mutation.operators import Mutant
from .python import PYTHON

__all__ = ["DEFAULT", "LANGUAGES", "Language", "UnknownLanguage", "language"]


class Language(Protocol):
    """The language-specific knowledge of items, distractors and their outcomes."""

    name: str  # an item's ``language`` value
    missing_entry_point: str  # the outcome of every test of a snippet lacking the entry point

    def defined_names(self, code: str) -> frozenset[str]:
        """The functions ``code`` defines at module level (none if it does not parse)."""
        ...

    def defines(self, code: str, entry_point: str) -> bool:
        """Whether ``code`` defines ``entry_point`` at module level."""
        ...

    def mutants(self, code: str, entry_point: str) -> Sequence[Mutant]:
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
