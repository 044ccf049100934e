"""Python, the language of every bundled item: the standard library's ``ast`` parses it,
``mutation/operators.py`` mutates it, the sandbox (``execution/``) runs it."""

from __future__ import annotations

import ast
import functools
import io
import tokenize
from pathlib import Path

from ...execution import _grammar
from ...mutation.equivalence import PYTHON_REALM, Inputs, annotated_inputs
from ...mutation.operators import Mutant, generate_mutants
from ...mutation.twin_evidence import Twin
from . import gate
from .gate import defined_functions

__all__ = ["PYTHON", "Python", "defined_functions"]


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
    packages = True  # context items and background functions are Python
    python_syntax = True

    def code_problems(
        self, code: str, entry_point: str | None, stdlib_only: bool = True
    ) -> list[str]:
        return gate.code_problems(code, entry_point, stdlib_only)

    def setup_problems(self, setup: str, entry_point: str) -> list[str]:
        return gate.setup_problems(setup, entry_point)

    def gate_inputs(self) -> list[bytes]:
        return [Path(str(gate.__file__)).read_bytes()]

    def leaks(self, code: str) -> list[str]:
        found = []
        tree = ast.parse(code)
        if any(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module))
            and ast.get_docstring(n)
            for n in ast.walk(tree)
        ):
            found.append("docstring")
        if any(isinstance(n, ast.Assert) for n in ast.walk(tree)):
            found.append("assert statement")
        tokens = tokenize.generate_tokens(io.StringIO(code).readline)
        comment = next((t for t in tokens if t.type == tokenize.COMMENT), None)
        if comment is not None:
            found.append(f"comment on line {comment.start[0]}")
        return found

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
