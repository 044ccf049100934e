"""JavaScript (ES2020): tree-sitter parses it (:mod:`.syntax`), :mod:`.mutation` mutates it
(:mod:`.scope` for its scoping class), :mod:`.evidence` draws its inputs from the Python twin,
the Node runner (:mod:`.runner`) runs it."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from ...execution import _grammar
from ...execution.sandbox import register_sandbox
from ...mutation.equivalence import Inputs
from ...mutation.operators import Mutant
from ...mutation.twin_evidence import Twin
from . import gate
from . import syntax as js_syntax
from .evidence import JS_EVIDENCE_VERSION, JS_REALM, twin_inputs
from .mutation import generate_js_mutants
from .runner import NODE_RUNNER_VERSION, NodeSandbox

__all__ = ["JAVASCRIPT", "JavaScript"]


@functools.lru_cache(maxsize=1 << 16)
def _defined_names(code: str) -> frozenset[str]:
    # Cached for the same reason as Python's: a benchmark asks about every pool snippet.
    tree = js_syntax.parse(code)
    if js_syntax.syntax_problem(tree) or js_syntax.early_error(tree):
        return frozenset()
    return js_syntax.top_level_functions(tree)


class JavaScript:
    """The :class:`~pytest_execretrieval.languages.Language` of JavaScript code: the functions
    it defines are its top-level function declarations (plain, ``async``, generator)."""

    name = "javascript"
    # A test calls the entry point by name: code that does not declare it throws ReferenceError.
    missing_entry_point = "error:ReferenceError"
    exceptions = _grammar.JS_EXCEPTIONS  # Error and its standard subclasses
    realm = JS_REALM
    packages = False
    python_syntax = False

    def code_problems(
        self, code: str, entry_point: str | None, stdlib_only: bool = True
    ) -> list[str]:
        return gate.code_problems(code, entry_point)  # no imports at all: nothing to allow

    def setup_problems(self, setup: str, entry_point: str) -> list[str]:
        return gate.setup_problems(setup)

    def gate_inputs(self) -> list[bytes]:
        versions = json.dumps(js_syntax.grammar_versions(), sort_keys=True).encode()
        return [Path(str(m.__file__)).read_bytes() for m in (gate, js_syntax)] + [versions]

    def leaks(self, code: str) -> list[str]:
        tree = js_syntax.parse(code)  # its gate refuses the rest: only comments can leak
        comments = [n for n in js_syntax.walk(tree.root_node) if n.type == "comment"]
        return [f"comment on line {comments[0].start_point[0] + 1}"] if comments else []

    def input_types(self, code: str, entry_point: str, twin: Twin | str) -> Inputs:
        return twin_inputs(code, entry_point, twin)  # no types in the source: the twin's

    def defined_names(self, code: str) -> frozenset[str]:
        return _defined_names(code)

    def defines(self, code: str, entry_point: str) -> bool:
        return entry_point in _defined_names(code)

    def mutants(self, code: str, entry_point: str) -> list[Mutant]:
        return generate_js_mutants(code, entry_point)

    def versions(self) -> dict[str, str]:
        from .mutation import js_mutation_version

        return {
            "runner": NODE_RUNNER_VERSION,
            "mutation": js_mutation_version(),
            "evidence": JS_EVIDENCE_VERSION,
        }


JAVASCRIPT = JavaScript()
register_sandbox(NodeSandbox)  # its suites run in the Node runner
