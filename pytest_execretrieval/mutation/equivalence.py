"""Equivalent-mutant evidence (recorded, not a gate).

For an entry point whose parameters are all annotated with supported types, hypothesis draws
inputs (derandomized: the same inputs on every machine), and the sandbox runs the candidate and
the canonical side by side on each, comparing return values (or the exception type raised).
A distractor that differs on some input is *shown* not equivalent by more than its tests; an
alternative that agrees on every input gains evidence of equivalence beyond its tests.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from ..execution import SuiteRunner

N_INPUTS = 50
SUPPORTED = {"int", "float", "bool", "str", "list[int]", "list[str]", "tuple[int, ...]",
             "dict[str, int]", "list[list[int]]", "list[tuple[int, int]]"}  # fmt: skip

HARNESS = """
import copy as _copy
_canonical_ns = {}
exec(%r, _canonical_ns)
_canonical = _canonical_ns[%r]
def _outcome(fn, args):
    try:
        return ("value", fn(args))
    except Exception as exc:
        return ("raises", type(exc).__name__)
def _same(fn, args, original):
    return _outcome(fn, args) == _outcome(lambda a: _canonical(*a), _copy.deepcopy(original))
"""


@dataclass(frozen=True)
class Evidence:
    inputs: int
    differing: int  # inputs on which the snippet and the canonical disagree

    def to_json(self) -> dict:
        return {"inputs": self.inputs, "differing": self.differing}


def annotations(code: str, entry_point: str) -> list[str] | None:
    """The parameter annotations of ``entry_point`` when all are supported, else None."""
    for node in ast.parse(code).body:
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            args = node.args
            if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
                return None
            found = [ast.unparse(a.annotation) if a.annotation else "" for a in args.args]
            return found if found and all(a in SUPPORTED for a in found) else None
    return None


def draw_inputs(types: Sequence[str], n: int = N_INPUTS) -> list[tuple]:
    """``n`` argument tuples for ``types``, identical on every run (derandomized hypothesis)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    small_int = st.integers(-20, 20)
    text = st.text("abcAB -_01", max_size=8)
    base = {
        "int": small_int, "float": st.floats(-20, 20, allow_nan=False).map(lambda x: round(x, 2)),
        "bool": st.booleans(), "str": text, "list[int]": st.lists(small_int, max_size=8),
        "list[str]": st.lists(text, max_size=5), "tuple[int, ...]": st.tuples(small_int, small_int),
        "dict[str, int]": st.dictionaries(text, small_int, max_size=4),
        "list[list[int]]": st.lists(st.lists(small_int, max_size=4), max_size=4),
        "list[tuple[int, int]]": st.lists(st.tuples(small_int, small_int), max_size=5),
    }  # fmt: skip
    drawn: list[tuple] = []

    @settings(max_examples=n * 3, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.tuples(*(base[t] for t in types)))
    def collect(args):
        if args not in drawn and len(drawn) < n:
            drawn.append(args)

    collect()
    return drawn


def evidence(
    canonical: str, entry_point: str, setup: str, codes: Sequence[str], runner: SuiteRunner
) -> list[Evidence | None]:
    """Per code in ``codes``: how many drawn inputs separate it from the canonical."""
    types = annotations(canonical, entry_point)
    if types is None:
        return [None] * len(codes)
    inputs = draw_inputs(types)
    # The lambda keeps the snippet's call in the sandbox's child (a hole asked for lazily); the
    # canonical runs in setup's namespace, where the checker compares the two outcomes.
    tests = [
        f"assert _same(lambda a: {entry_point}(*a), _copy.deepcopy({args!r}), {args!r})"
        for args in inputs
    ]
    harness = setup + "\n" + HARNESS % (canonical, entry_point)
    results = runner.run_many([(code, harness, tests) for code in codes])
    return [Evidence(len(inputs), sum(o != "pass" for o in r.outcomes)) for r in results]
