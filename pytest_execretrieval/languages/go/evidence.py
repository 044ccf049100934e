"""Differential evidence for Go items: inputs typed by the Python twin, as JavaScript's.

A Go item's drawn inputs are its Python twin's (:func:`...mutation.twin_evidence.twin_inputs`
says when there are none), written as JSON as the JavaScript evidence writes them and decoded
by the driver into the entry point's parameter types; the twin's parameter names must be the Go
entry point's, in order. A drawn value the Go types cannot hold (a negative number for a
``uint``) is an ``ArgumentError`` for every candidate alike: outside the domain.

Results compare as a Go test's assertion reads them (:data:`.runner.CODEC`): an int and a float
agree when their values do (floats within ``math.isclose``, NaN with NaN), a tuple (an array or
several results) and a list element by element, each with its own kind.
"""

from __future__ import annotations

import math
from typing import Any

from ...mutation import twin_evidence
from ...mutation.equivalence import Inputs, Realm, _outcome, near
from ...mutation.twin_evidence import Twin
from .syntax import parse

__all__ = ["GO_EVIDENCE_VERSION", "GO_REALM", "parameter_names", "twin_inputs"]

# Bump when the encoding of the inputs, the pairing with the twin or the comparison change.
GO_EVIDENCE_VERSION = "1"


def parameter_names(code: str, entry_point: str) -> tuple[str, ...] | None:
    """The entry point's parameter names in order (``a, b string`` gives both), or None when
    it declares none such (no such function, a variadic or unnamed parameter)."""
    tree = parse(code)
    for node in tree.root_node.children:
        name = node.child_by_field_name("name") if node.type == "function_declaration" else None
        if name is None or _text(name) != entry_point:
            continue
        names: list[str] = []
        params = node.child_by_field_name("parameters")
        for param in params.named_children if params is not None else ():
            if param.type != "parameter_declaration":
                return None  # variadic
            idents = param.children_by_field_name("name")
            if not idents:
                return None
            names.extend(_text(i) for i in idents)
        return tuple(names)
    return None


def _text(node: Any) -> str:
    return bytes(node.text or b"").decode("utf-8", "replace")


def twin_inputs(code: str, entry_point: str, twin: Twin | str) -> Inputs:
    """The drawn inputs' types of the Go item with canonical ``code``, from ``twin``, or None
    and why not (see the module docs)."""
    return twin_evidence.twin_inputs(code, entry_point, twin, parameter_names)


def outcome(value: object) -> tuple | None:
    """A probe's value as ``("value", v)`` or ``("raises", "panic" | "runtime_error")``."""
    if isinstance(value, tuple) and value[0] == "error":
        return ("raises", value[1])
    return _outcome(value)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def close(a: object, b: object) -> bool:
    """Whether two decoded Go values agree (see the module docs)."""
    if _number(a) and _number(b):
        if a == b:
            return True
        if not (isinstance(a, float) or isinstance(b, float)):
            return False
        x, y = float(a), float(b)  # type: ignore[arg-type]
        return (math.isnan(x) and math.isnan(y)) or near(x, y)
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    return a == b


GO_REALM = Realm(twin_evidence.probes, outcome, close, "go", grouped=True)  # one binary per item
