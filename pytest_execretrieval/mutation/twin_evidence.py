"""Inputs typed by the Python twin: the differential evidence of an item in another language.

JavaScript and Go items have no annotations to draw inputs from (JavaScript has no parameter
types; Go's are not Python's), so such an item takes them from its Python twin
(``<dir>/<language>/<domain>/<stem>.toml`` is the twin of ``<dir>/<domain>/<stem>.toml``;
:mod:`..corpus.twins` finds and reads it): the twin's entry point must be fully annotated in the
grammar of :mod:`.equivalence`, and its parameter names must be the item's entry point's, in the
same order, as the language reads them. Otherwise the item has no evidence, and
:func:`twin_inputs` says why.

The inputs are hypothesis's draws for those types (:func:`.equivalence.draw_inputs`, the same
as the twin's own), written as the items' tests write the Python values as JSON
(``items/javascript/TRANSLATION.md``), so each reaches the runner as JSON text
(:func:`..execution._grammar.json_arguments`): a tuple, a tree and a set are lists (a set's
elements sorted), a dict's int keys are strings, ``bytes`` a list of byte values, a ``date``,
``datetime`` or ``time`` its ISO 8601 ``isoformat()``, a ``timedelta`` its whole seconds.
``Fraction`` and callables have no such form, nor a dict keyed by anything but ``int`` or
``str`` alone: an annotation with one gives no evidence. Drawn ints stay far inside
JavaScript's safe integers. Results are compared by :func:`close` and :func:`outcome`, which both
languages' realms use.
"""

from __future__ import annotations

import ast
import datetime as dt
import math
from collections.abc import Callable, Sequence

from .equivalence import (
    Inputs,
    _name,
    _outcome,
    annotated_inputs,
    entry_point_def,
    near,
    parse_annotation,
    stable_repr,
)

__all__ = ["Twin", "close", "outcome", "probes", "signature_key", "to_json", "twin_inputs"]

Twin = tuple[str, str]  # the Python twin's canonical and entry point
_UNPARSABLE = (SyntaxError, RecursionError, MemoryError, ValueError)  # an untrusted canonical


def signature_key(canonical: str, entry_point: str) -> str | None:
    """What an item's evidence reads of its twin (the parameter list of the twin's
    entry point, as text), for the manifest: the corpus is stale when it changes. None when
    the twin defines no such entry point or does not parse."""
    try:
        node = entry_point_def(canonical, entry_point)
    except _UNPARSABLE:
        return None
    return ast.unparse(node.args) if node is not None else None


def twin_inputs(
    code: str,
    entry_point: str,
    twin: Twin | str,
    parameter_names: Callable[[str, str], tuple[str, ...] | None],
) -> Inputs:
    """The drawn inputs' types of the item in another language with canonical ``code``, from
    ``twin`` (its Python twin's canonical and entry point, or why it has none; see the module
    docstring), or None and why not. ``parameter_names``: the language's reading of its entry
    point's parameters (None: not plain names)."""
    if isinstance(twin, str):
        return Inputs(None, twin)
    canonical, twin_entry = twin
    if twin_entry != entry_point:
        return Inputs(None, f"its Python twin's entry point is {twin_entry}, not {entry_point}")
    try:
        node = entry_point_def(canonical, entry_point)
    except _UNPARSABLE:
        return Inputs(None, "its Python twin's canonical does not parse")
    typed = annotated_inputs(canonical, entry_point)
    if node is None or typed.types is None:
        return Inputs(None, "its Python twin's entry point is not fully annotated in the grammar")
    names = parameter_names(code, entry_point)
    twin_names = tuple(a.arg for a in node.args.args)
    if names != twin_names:
        shown = ", ".join(names) if names is not None else "not plain names"
        return Inputs(
            None,
            f"its parameters ({shown}) are not its Python twin's ({', '.join(twin_names)})",
        )
    for text in typed.types:
        problem = _encoding_problem(parse_annotation(text))
        if problem:
            return Inputs(None, f"its Python twin's annotation {text} has {problem}")
    return typed


def _encoding_problem(node: ast.expr) -> str | None:
    """What in an annotation (parsed, in the grammar) has no JSON form, or None."""
    for part in ast.walk(node):
        if isinstance(part, ast.Subscript) and _name(part.value) == "Callable":
            return "a callable, which a JavaScript test cannot pass"
        if isinstance(part, ast.expr) and _name(part) == "Fraction":
            return "a Fraction, which JSON cannot carry"
        if isinstance(part, ast.Subscript) and _name(part.value) == "dict":
            key = part.slice.elts[0] if isinstance(part.slice, ast.Tuple) else part.slice
            if _name(key) not in ("int", "str"):
                return f"dict keys {ast.unparse(key)}, not int or str alone (JSON keys are strings)"
    return None


def to_json(value: object) -> object:
    """A drawn Python value as the items' JSON tests write it (the module docstring)."""
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [to_json(v) for v in value]
        try:
            return sorted(items)  # type: ignore[type-var]
        except TypeError:  # a union's mixed elements
            return sorted(items, key=stable_repr)
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return list(value)
    if isinstance(value, dt.timedelta):
        return round(value.total_seconds())
    if isinstance(value, dt.date | dt.time):  # a datetime is a date
        return value.isoformat()
    return value


def probes(entry_point: str, inputs: Sequence[tuple]) -> list[str]:
    """The probe tests calling ``entry_point`` on each argument tuple, JSON-encoded."""
    return [f"{entry_point}({', '.join(stable_repr(to_json(a)) for a in args)})" for args in inputs]


def outcome(value: object) -> tuple | None:
    """A probe's value as ``("value", v)`` or ``("raises", class)`` (the class the runner
    named: a JavaScript ``Throw`` for a non-Error, Go's ``panic`` or ``runtime_error``); None
    when it gave none."""
    if isinstance(value, tuple) and value[0] == "error":
        return ("raises", value[1])
    return _outcome(value)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def close(a: object, b: object) -> bool:
    """Whether two values a runner's codec decoded agree, as a test's assertion reads them:
    numbers are one type, so an int and a float agree when their values do (floats within
    ``math.isclose``, as Python's evidence; NaN agrees with NaN; two ints exactly); a boolean
    agrees with a boolean only; lists, tuples (Go's arrays and results), dicts and sets element
    by element, each with its own kind."""
    if _number(a) and _number(b):
        if a == b:
            return True
        if not (isinstance(a, float) or isinstance(b, float)):
            return False  # two integers (a BigInt, a *big.Int too): exact
        try:
            x, y = float(a), float(b)  # type: ignore[arg-type]
        except OverflowError:  # an integer beyond any float
            return False
        return (math.isnan(x) and math.isnan(y)) or near(x, y)
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    return a == b
