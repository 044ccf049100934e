"""Go: tree-sitter parses it (:mod:`.syntax`), :mod:`.mutation` mutates it, the Go runner
(:mod:`.runner`: each candidate compiled with ``_driver.go``, run confined) runs it.

A Go item's code is the body of a ``package main`` file without its package clause: imports,
then functions, types and constants (:mod:`.gate`). Its tests are the closed grammar with Go's
exception names (``raises(panic, f, ...)``) and JSON arguments, decoded into the entry point's
parameter types; its differential evidence draws inputs from its Python twin's annotations, as
JavaScript's does.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from ...execution.sandbox import register_sandbox
from ...mutation.equivalence import Inputs, Realm
from ...mutation.operators import Mutant
from ...mutation.twin_evidence import Twin
from . import evidence, gate, syntax
from .runner import GO_EXCEPTIONS, GoSandbox

__all__ = ["GO", "Go"]


@functools.lru_cache(maxsize=1 << 16)
def _defined_names(code: str) -> frozenset[str]:
    # Cached for the same reason as Python's: a benchmark asks about every pool snippet.
    tree = syntax.parse(code)
    if syntax.syntax_problem(tree):
        return frozenset()
    return syntax.top_level_functions(tree)


class Go:
    """The :class:`~pytest_execretrieval.languages.Language` of Go code: the functions it
    defines are its top-level function declarations (methods are not)."""

    name = "go"
    # A test calls the entry point by name: code that does not declare it does not compile.
    missing_entry_point = "error:CompileError"
    exceptions = GO_EXCEPTIONS
    realm: Realm = evidence.GO_REALM
    packages = False
    python_syntax = False

    def code_problems(
        self, code: str, entry_point: str | None, stdlib_only: bool = True
    ) -> list[str]:
        return gate.code_problems(code, entry_point)  # the standard library's allowed part

    def setup_problems(self, setup: str, entry_point: str) -> list[str]:
        return gate.setup_problems(setup)

    def gate_inputs(self) -> list[bytes]:
        versions = json.dumps(syntax.grammar_versions(), sort_keys=True).encode()
        return [Path(str(m.__file__)).read_bytes() for m in (gate, syntax)] + [versions]

    def leaks(self, code: str) -> list[str]:
        return []  # its gate refuses comments, the only place a query could hide

    def input_types(self, code: str, entry_point: str, twin: Twin | str) -> Inputs:
        return evidence.twin_inputs(code, entry_point, twin)

    def defined_names(self, code: str) -> frozenset[str]:
        return _defined_names(code)

    def defines(self, code: str, entry_point: str) -> bool:
        return entry_point in _defined_names(code)

    def mutants(self, code: str, entry_point: str) -> list[Mutant]:
        from .mutation import generate_go_mutants

        return generate_go_mutants(code, entry_point)

    def versions(self) -> dict[str, str]:
        from .mutation import go_mutation_version

        return {
            "runner": GoSandbox.runner_version,
            "mutation": go_mutation_version(),
            "evidence": evidence.GO_EVIDENCE_VERSION,
        }


GO = Go()
register_sandbox(GoSandbox)  # its suites run in the Go runner
