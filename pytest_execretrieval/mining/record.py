"""``--record K``: up to K more tests per item, the canonical's own outputs recorded in the sandbox.

The arguments are derived from the item's mined tests (:func:`derived_calls`): each literal
argument in turn replaced by a nearby integer (``n - 1``, ``n + 1``) or, for a string, list or
tuple, its prefix without the last element and its reverse. Each derived call runs as a probe
(a bare call: the sandbox returns its value, :data:`..execution._grammar.PROBE`) twice; a call
whose answers agree becomes ``assert CALL == LITERAL`` (or ``assert raises(Exc, f, ...)`` for
a builtin exception) where the test grammar accepts it. Nothing is evaluated on the host. A value
that cannot be written as a literal (an int past Python's limit of digits for ``str``, a
structure nested past the recursion limit) is not recorded, as one too large for the grammar.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from ..corpus.items import grammar_problem
from ..execution import _grammar
from ..execution.runner import SuiteRunner
from .writer import MinedItem

RECORDED = "recorded"  # a recorded test's provenance


def literal_text(value: object) -> str | None:
    """``repr(value)`` with every set's and frozenset's elements in sorted order (a set's own
    order follows this process's string hashing: the same value would be written two ways),
    or None where it cannot be one (``int`` past its ``str`` digit limit: ValueError; a
    structure nested past the recursion limit)."""
    try:
        return _stable(value)
    except (ValueError, RecursionError, MemoryError):
        return None


def _stable(value: object) -> str:
    kind = type(value)
    if kind in (set, frozenset):
        inner = ", ".join(sorted(_stable(v) for v in value))  # type: ignore[attr-defined]
        if not inner:
            return "set()" if kind is set else "frozenset()"
        return f"{{{inner}}}" if kind is set else f"frozenset({{{inner}}})"
    if kind is list:
        return "[" + ", ".join(_stable(v) for v in value) + "]"  # type: ignore[attr-defined]
    if kind is tuple:
        items = [_stable(v) for v in value]  # type: ignore[attr-defined]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if kind is dict:
        pairs = (f"{_stable(k)}: {_stable(v)}" for k, v in value.items())  # type: ignore[attr-defined]
        return "{" + ", ".join(pairs) + "}"
    return repr(value)


def _variants(node: ast.expr) -> Iterator[object]:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return
    if isinstance(value, int) and not isinstance(value, bool):
        yield from (value - 1, value + 1)
    elif isinstance(value, str | list | tuple) and value:
        yield value[:-1]
        if value[::-1] != value:
            yield value[::-1]


def derived_calls(tests: tuple[str, ...]) -> list[str]:
    """Calls of the entry point near the ones ``tests`` make, in a fixed order, each once."""
    seen: set[str] = set()
    calls: list[str] = []
    for test in tests:
        source = _grammar.parse_test(test).call.source
        seen.add(source)
        node = ast.parse(source, mode="eval").body
        assert isinstance(node, ast.Call)
        for index, argument in enumerate(node.args):
            for value in _variants(argument):
                literal = literal_text(value)
                if literal is None:
                    continue
                args = [*node.args[:index], ast.parse(literal, mode="eval").body]
                variant = ast.Call(node.func, args + node.args[index + 1 :], node.keywords)
                calls.append(ast.unparse(variant))
    return [c for c in dict.fromkeys(calls) if c not in seen]


def _recorded_test(call: str, answer: tuple[str, object], entry_point: str) -> str | None:
    kind, value = answer
    if kind == "value":
        literal = literal_text(value)
        if literal is None or len(literal) + len(call) > _grammar.MAX_SOURCE:
            return None
        test = f"assert {call} == {literal}"
    elif kind == "raises" and value in _grammar.EXCEPTIONS:
        node = ast.parse(call, mode="eval").body
        assert isinstance(node, ast.Call)
        parts = [str(value), entry_point, *(ast.unparse(a) for a in node.args)]
        parts += [f"{k.arg}={ast.unparse(k.value)}" for k in node.keywords if k.arg]
        test = f"assert raises({', '.join(parts)})"
    else:
        return None
    return test if grammar_problem(test, entry_point) is None else None


def with_recorded(items: list[MinedItem], runner: SuiteRunner, k: int) -> list[MinedItem]:
    """The items, each with up to ``k`` recorded tests after its mined ones."""
    calls = {i.stem: derived_calls(i.tests)[: 4 * k] for i in items}
    probed = [i for i in items if calls[i.stem]]
    suites = [(i.function.code, i.function.setup, calls[i.stem], "python", i.stem) for i in probed]
    first, second = runner.run_many(suites), runner.run_many(suites)
    recorded = {
        item.stem: _agreed(item, calls[item.stem], one.values, two.values, k)
        for item, one, two in zip(probed, first, second, strict=True)
    }
    return [
        replace(
            i,
            tests=i.tests + recorded.get(i.stem, ()),
            provenance=i.provenance + (RECORDED,) * len(recorded.get(i.stem, ())),
        )
        for i in items
    ]


def _agreed(item: MinedItem, calls: list[str], one: tuple, two: tuple, k: int) -> tuple[str, ...]:
    """Up to ``k`` tests from the probe answers both runs agree on (in the calls' order)."""
    tests: list[str] = []
    for call, a, b in zip(calls, one or [None] * len(calls), two or [None] * len(calls)):
        if a is None or a != b or len(tests) >= k:
            continue
        test = _recorded_test(call, a, item.function.name)
        if test and test not in item.tests and test not in tests:
            tests.append(test)
    return tuple(tests)
