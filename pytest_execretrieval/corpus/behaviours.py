"""Behaviourally duplicate distractors: two killed candidates that nothing tells apart are one.

Two operators can write one behaviour: ``negate_condition`` turns ``if k not in s`` into
``if not (k not in s)``, which is ``if k in s``, the ``wrong_comparison`` mutant of the same
line. Both in one item's pool would be one wrong answer twice. Two killed candidates of an item
*behave the same* when their suites agree on every test (the same outcome per test and the same
returned or raised value where a test failed: :func:`suite_signature`) and on every drawn input
of the item's differential evidence (:func:`..mutation.equivalence.draw_inputs`, the same
derandomized inputs; each gives a value or an exception type, compared as the evidence compares
them, :attr:`..mutation.equivalence.Realm.close`). Only candidates that share a test signature
with another run the drawn inputs; an item without drawn inputs (no annotated signature, or no
Python twin for a JavaScript item), an input on which either gave nothing, or an unusable
suite never makes two candidates the same.

:func:`same_behaviour` maps each killed candidate that behaves like an earlier one (by position)
to the first such candidate, its *behaviour*; the selection
(:func:`..mutation.select.select_distractors`) then takes one candidate per behaviour, so the
next class by its usual rule fills the slot a duplicate would have taken.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..execution.runner import SuiteRunner
from ..execution.sandbox import SuiteResult
from ..mutation.equivalence import Realm, draw_inputs
from ..mutation.select import Killed
from .items import BenchmarkItem
from .twins import input_types

__all__ = ["BEHAVIOURS_VERSION", "agree", "representatives", "same_behaviour", "suite_signature"]

# The rule's version, in the engine of the corpora that apply it (a change makes them stale).
BEHAVIOURS_VERSION = 1


def suite_signature(result: SuiteResult) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a suite shows of a candidate's behaviour on the item's tests: each test's outcome
    and, per test that did not pass, what the calls returned or raised there."""
    return result.outcomes, result.returned


def agree(a: Sequence[object], b: Sequence[object], realm: Realm) -> bool:
    """Whether two candidates' probe values (one per drawn input) are the same behaviour:
    equally many, each a value or an exception type, the same kind and close by ``realm``'s
    rule; an input on which either gave nothing is no agreement."""
    if not a or len(a) != len(b):
        return False
    for x, y in zip(a, b):
        got, other = realm.outcome(x), realm.outcome(y)
        if got is None or other is None or got[0] != other[0] or not realm.close(got[1], other[1]):
            return False
    return True


def representatives(
    killed: Sequence[Killed], drawn: Mapping[int, Sequence[object]], realm: Realm
) -> dict[int, int]:
    """Per killed candidate behaving like an earlier one, the position of the first such
    candidate (those with a behaviour of their own are left out). ``drawn``: per position, its
    probe values on the drawn inputs; a position without them behaves like no other. Timeouts
    are never chosen, so they take no part."""
    firsts: list[Killed] = []
    same: dict[int, int] = {}
    for k in sorted(killed, key=lambda k: k.position):
        if k.kill == "timeout":
            continue
        for first in firsts:
            if (
                suite_signature(first.result) == suite_signature(k.result)
                and first.position in drawn
                and k.position in drawn
                and agree(drawn[first.position], drawn[k.position], realm)
            ):
                same[k.position] = first.position
                break
        else:
            firsts.append(k)
    return same


def same_behaviour(
    item: BenchmarkItem, killed: Sequence[Killed], runner: SuiteRunner
) -> dict[int, int]:
    """:func:`representatives` of ``item``'s ``killed`` candidates, the drawn inputs run (with
    ``runner``, one suite per candidate) only for those that share a test signature."""
    types = input_types(item).types
    signatures: dict[tuple, int] = {}
    for k in killed:
        if k.kill != "timeout":
            signatures[suite_signature(k.result)] = signatures.get(suite_signature(k.result), 0) + 1
    shared = [
        k for k in killed if k.kill != "timeout" and signatures[suite_signature(k.result)] > 1
    ]
    if types is None or not shared:
        return {}
    realm = item.lang.realm
    tests = realm.probes(item.entry_point, draw_inputs(tuple(types)))
    group = item.id if realm.grouped else None
    results = runner.run_many(
        [(k.mutant.code, item.setup, tests, realm.language, group) for k in shared]
    )
    drawn = {k.position: r.values for k, r in zip(shared, results) if not r.unusable}
    return representatives(killed, drawn, realm)
