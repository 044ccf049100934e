"""The literal interpreter bounds each operation's cost before running it (issue 38, part 3).

Each case here stalled the host (``execretrieval build``, pytest collection) before the bounds:
the timeout stops a regression from hanging the suite."""

from __future__ import annotations

import ast
import time

import pytest

from pytest_execretrieval.corpus.items import grammar_problem
from pytest_execretrieval.execution import _grammar as g

HUGE = "Decimal('1e999999999')"


def _refused_quickly(literal: str, why: str) -> None:
    start = time.process_time()  # CPU time: the machine may be busy with other work
    with pytest.raises(g.GrammarError, match=why):
        g.literal_value(ast.parse(literal, mode="eval").body)
    assert time.process_time() - start < 1.0, literal


# fmt: off
@pytest.mark.timeout(20, method="thread")
@pytest.mark.parametrize("literal, why", [
    ("sum([[0] * 3] * 60000, [])", "past the literal's budget"),  # quadratic: copies the total
    ("sum([(0,)] * 60000, ())", "past the literal's budget"),
    (f"int({HUGE})", "int\\(\\) of a Decimal"),
    (f"round({HUGE})", "round\\(\\) of a Decimal"),
    (f"Fraction({HUGE})", "Fraction\\(\\) of a Decimal"),
    (f"float({HUGE})", "float\\(\\) of a Decimal"),
    ("Fraction(Decimal('1e-999999999'))", "Fraction\\(\\) of a Decimal"),
    ("str([[[[[0] * 16] * 16] * 16] * 16] * 16)", "a literal of more than"),  # aliased
    ("str(['x' * 60000] * 60000)", "a literal of more than"),  # one big str, many times
    ("str([10 ** 4000] * 60000)", "a literal of more than"),  # one big int, many times
    ("deque([0]) * 10 ** 9", "a sequence longer than"),
    ("'%0999999999d' % 1", "'%' formatting"),
    ("sorted([[[0] * 64] * 64] * 64)", "a literal of more than"),
])
# fmt: on
def test_costly_literals_are_refused_before_they_compute(literal, why):
    _refused_quickly(literal, why)


@pytest.mark.timeout(20, method="thread")
def test_a_refusal_is_an_item_problem_naming_the_construct():
    problem = grammar_problem(f"assert f(1) == int({HUGE})", "f")
    assert problem is not None and "int() of a Decimal" in problem


@pytest.mark.timeout(20, method="thread")
def test_sensible_literals_are_not_refused():
    for literal, value in [
        ("sum([[1, 2], [3]], [])", [1, 2, 3]),
        ("int(Decimal('1.5e3'))", 1500),
        ("round(Decimal('2.675'), 2)", g.evaluate(ast.parse("Decimal('2.68')", mode="eval").body)),
        ("str([[0] * 3] * 2)", "[[0, 0, 0], [0, 0, 0]]"),
        ("max(list(range(1000)))", 999),
        ("len([0] * 65536)", 65536),
    ]:
        assert g.literal_value(ast.parse(literal, mode="eval").body) == value
