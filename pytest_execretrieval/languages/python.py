"""Python, the language of every bundled item: the standard library's ``ast`` parses it,
``mutation/operators.py`` mutates it, the sandbox (``execution/``) runs it."""

from __future__ import annotations

import ast
import functools

from ..execution import _grammar
from ..mutation.equivalence import PYTHON_REALM, Inputs, annotated_inputs
from ..mutation.js_evidence import Twin
from ..mutation.operators import Mutant, generate_mutants

__all__ = ["PYTHON", "Python", "defined_functions"]


def defined_functions(tree: ast.Module) -> set[str]:
    """The functions (plain or ``async``) a module defines at top level."""
    return {
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


@functools.lru_cache(maxsize=1 << 16)
def _defined_names(code: str) -> frozenset[str]:
    # Cached: a benchmark run asks about every pool snippet for several queries, and parsing
    # dominated a warm run's own time.
    try:
        return frozenset(defined_functions(ast.parse(code)))
    except (SyntaxError, RecursionError, MemoryError):
        return frozenset()


class Python:
    """The :class:`~pytest_execretrieval.languages.Language` of Python code."""

    name = "python"
    # A test calls the entry point by name: code that does not define it raises NameError there.
    missing_entry_point = "error:NameError"
    exceptions = _grammar.EXCEPTIONS  # the builtin exception classes
    realm = PYTHON_REALM

    def input_types(self, code: str, entry_point: str, twin: Twin | str) -> Inputs:
        return annotated_inputs(code, entry_point)  # its own annotations, where it gives all

    def defined_names(self, code: str) -> frozenset[str]:
        return _defined_names(code)

    def defines(self, code: str, entry_point: str) -> bool:
        return entry_point in _defined_names(code)

    def mutants(self, code: str, entry_point: str) -> list[Mutant]:
        return generate_mutants(code, entry_point)

    def versions(self) -> dict[str, str]:
        return {}


PYTHON = Python()
