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
  selects an item's distractors;
- ``input_types(code, entry_point, twin)`` and ``realm``: the differential evidence's drawn
  inputs' types (Python's annotations, JavaScript's from the Python twin) and how its probes
  are written and compared;
- ``code_problems``, ``setup_problems`` and ``gate_inputs``: the item gates for its code (each
  language's ``gate.py``) and what they depend on; ``leaks`` and ``python_syntax``: what lint
  reads of it; ``packages``: whether context items and background functions are in it.

The implementations: :data:`~.python.PYTHON` (``python/``: the standard library's ``ast``),
:data:`~.javascript.JAVASCRIPT` (``javascript/``: ES2020 through tree-sitter, the
``javascript`` extra, imported at the first parse, so Python items never need it; importing it
registers its Node runner with ``execution``, which names no language) and :data:`~.go.GO`
(``go/``: tree-sitter-go, the ``go`` extra, and the machine's Go toolchain, which compiles each
candidate in the sandbox).

Adding a language: one folder ``languages/<name>/`` with a class satisfying the protocol, one
line in :data:`LANGUAGES`, and the items that use it (``language = "<name>"``). No module
outside this package compares a language's name (``tests/test_language_seam.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..mutation.equivalence import Inputs, Realm
from ..mutation.operators import Mutant
from ..mutation.twin_evidence import Twin
from .go import GO
from .javascript import JAVASCRIPT
from .python import PYTHON

__all__ = ["DEFAULT", "LANGUAGES", "POOL_LANGUAGES", "Language", "UnknownLanguage", "language"]


class Language(Protocol):
    """The language-specific knowledge of items, distractors and their outcomes."""

    name: str  # an item's ``language`` value
    missing_entry_point: str  # the outcome of every test of a snippet lacking the entry point
    exceptions: frozenset[str]  # the error classes a test's ``raises(...)`` may name
    # How the differential evidence's probes are written, run and compared in this language
    # (:mod:`..mutation.equivalence`).
    realm: Realm
    # Whether code in it comes in the packages the miner reads: an item with a ``[context]``
    # table and the background functions a pool may hold are in such a language.
    packages: bool
    # Whether its code is Python's syntax (the lint checks that read Python's ``ast`` apply).
    python_syntax: bool

    def code_problems(
        self, code: str, entry_point: str | None, stdlib_only: bool = True
    ) -> list[str]:
        """The item gate for a canonical or an alternative: why ``code`` may not be one (it
        must parse within the bounds and, when ``entry_point`` is given, define it;
        ``stdlib_only`` False: a context item's function imports what its package does)."""
        ...

    def setup_problems(self, setup: str, entry_point: str) -> list[str]:
        """The item gate for an item's ``setup``: why it may not be one."""
        ...

    def gate_inputs(self) -> list[bytes]:
        """What its gates' answers depend on (their modules' code, its parser's versions): a
        change to any makes validated items be validated again."""
        ...

    def leaks(self, code: str) -> list[str]:
        """What in ``code`` (which passed :meth:`code_problems`) would carry the query into it
        and every mutant alike: a docstring, a comment, an ``assert``; lint messages."""
        ...

    def defined_names(self, code: str) -> frozenset[str]:
        """The functions ``code`` defines at module level (none if it does not parse)."""
        ...

    def defines(self, code: str, entry_point: str) -> bool:
        """Whether ``code`` defines ``entry_point`` at module level."""
        ...

    def mutants(self, code: str, entry_point: str) -> Sequence[Mutant]:
        """Every valid single-edit mutant of ``code`` (the distractor candidates)."""
        ...

    def input_types(self, code: str, entry_point: str, twin: Twin | str) -> Inputs:
        """The types the evidence draws the inputs of an item with canonical ``code`` from,
        or None and why there is no evidence; ``twin``: its Python twin's canonical and entry
        point, or why it has none (:mod:`..corpus.twins`)."""
        ...

    def versions(self) -> dict[str, str]:
        """What a corpus of this language's items records besides the engine's own versions
        (its runner's and its mutants'), so a change to either makes the corpus stale; Python's
        are the engine's own ("runner", "mutation"): none more."""
        ...


# The registry: a language's name (an item's ``language`` field) -> its implementation.
LANGUAGES: dict[str, Language] = {lang.name: lang for lang in (PYTHON, JAVASCRIPT, GO)}
DEFAULT = PYTHON.name  # an item without a ``language`` field
# The languages whose items form a pool of their own, in a folder of the language's name inside
# an items directory (``javascript/``); the default language's items are the directory's own.
POOL_LANGUAGES = tuple(sorted(set(LANGUAGES) - {DEFAULT}))


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
