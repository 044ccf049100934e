"""Differential evidence for Go items: inputs typed by the Python twin, as JavaScript's.

A Go item's drawn inputs are its Python twin's (:func:`...mutation.twin_evidence.twin_inputs`
says when there are none), written as JSON as the JavaScript evidence writes them and decoded
by the driver into the entry point's parameter types; the twin's parameter names must be the Go
entry point's, in order. A drawn value the Go types cannot hold (a negative number for a
``uint``) is an ``ArgumentError`` for every candidate alike: outside the domain.

Results compare as a Go test's assertion reads them (:data:`.runner.CODEC`), by
:func:`...mutation.twin_evidence.close`: a tuple (an array or several results) element by
element, as a list is.
"""

from __future__ import annotations

from typing import Any

from ...mutation import twin_evidence
from ...mutation.equivalence import Inputs, Realm
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


GO_REALM = Realm(
    twin_evidence.probes, twin_evidence.outcome, twin_evidence.close, "go", grouped=True
)  # one binary per item
