"""Differential evidence for JavaScript items: inputs typed by the Python twin.

JavaScript has no parameter types to draw inputs from, so a JavaScript item takes them from
its Python twin (:mod:`...mutation.twin_evidence`, shared with Go): the twin's parameter names
must be the JavaScript entry point's, in the same order (a default value allowed, no rest or
destructuring pattern). Drawn ints stay far inside JavaScript's safe integers, so none needs a
BigInt.

Results are compared as a JavaScript test's assertion reads them (the checker's decoded
values, :data:`.runner.CODEC`): numbers are one type, so an int and a float agree
when their values do (floats within ``math.isclose``, as Python's evidence; NaN agrees with
NaN); a boolean agrees with a boolean only (``is True`` tells ``true`` from ``1``); lists,
dicts and sets element by element. Exceptions: a throw is behaviour by its class, as in
Python: where the canonical throws a class the query names ("throws a RangeError"), a
candidate must throw the same class; where it throws a class the query does not name (a
``TypeError`` from a drawn value the JavaScript canonical never expected) the input is outside
the domain and skipped. A thrown value that is not an ``Error`` counts as a throw of its own
class ``Throw`` (never named by a query), not as a call that gave nothing.
"""

from __future__ import annotations

from ...mutation.equivalence import Inputs, Realm
from ...mutation.twin_evidence import Twin, close, outcome, probes
from ...mutation.twin_evidence import twin_inputs as _twin_inputs
from .syntax import parameter_names, parse

__all__ = ["JS_EVIDENCE_VERSION", "JS_REALM", "twin_inputs"]

# Bump when the encoding of the inputs, the pairing with the twin or the comparison change.
JS_EVIDENCE_VERSION = "1"


def twin_inputs(code: str, entry_point: str, twin: Twin | str) -> Inputs:
    """The drawn inputs' types of the JavaScript item with canonical ``code``, from ``twin``
    (:func:`...mutation.twin_evidence.twin_inputs`, with JavaScript's parameter names)."""
    return _twin_inputs(code, entry_point, twin, _parameter_names)


def _parameter_names(code: str, entry_point: str) -> tuple[str, ...] | None:
    return parameter_names(parse(code), entry_point)


JS_REALM = Realm(probes, outcome, close, "javascript", grouped=True)
