"""The literal interpreter bounds each operation's cost before running it (issue 38, part 3).

Each case here stalled the host (``execretrieval build``, pytest collection) before the bounds:
the timeout stops a regression from hanging the suite."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_execretrieval.corpus.items import grammar_problem
from pytest_execretrieval.execution import _grammar as g

HUGE = "Decimal('1e999999999')"


_REFUSE = """
import ast, sys, time
from pytest_execretrieval.execution import _grammar as g
start = time.process_time()  # CPU time: the machine may be busy with other work
try:
    g.literal_value(ast.parse(sys.argv[1], mode="eval").body)
    print("computed")
except g.GrammarError as exc:
    print(f"{time.process_time() - start:.3f}", exc)
"""


def _refused_quickly(literal: str, why: str) -> None:
    """In a subprocess with a timeout: the unbounded interpreter stalls inside one C call,
    which no in-process timeout interrupts."""
    try:
        out = subprocess.run(
            [sys.executable, "-c", _REFUSE, literal], capture_output=True, text=True, timeout=30
        ).stdout
    except subprocess.TimeoutExpired:
        pytest.fail(f"{literal} still computing after 30 s")
    seconds, _, message = out.partition(" ")
    assert re.search(why, message), (literal, out)
    assert float(seconds) < 1.0, literal


# fmt: off
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


def test_a_refusal_is_an_item_problem_naming_the_construct():
    problem = grammar_problem("assert f(1) == sum([(0,)] * 3000, ())", "f")
    assert problem is not None and "sum() is past the literal's budget" in problem


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


def test_many_affordable_operations_exhaust_one_literals_step_budget():
    """Each str() here is within the bounds; a hundred of them are past the budget of one
    literal, which keeps a literal's load-time check to a few tens of ms of CPU."""
    one = "len(str([[0] * 100] * 200))"
    assert g.literal_value(ast.parse(one, mode="eval").body) == len(str([[0] * 100] * 200))
    many = "[" + ", ".join([one] * 100) + "]"
    _refused_quickly(many, "past the literal's budget")
    problem = grammar_problem(f"assert f(1) == {many}", "f")
    assert problem is not None and "past the literal's budget" in problem


# Random literal trees within the grammar: leaves of every kind the grammar admits, combined by
# the operations whose cost grows fastest (repetition, powers, shifts, nesting, the callables).
_LEAVES = st.sampled_from(
    ["0", "7", "-3", "2 ** 60", "1.5", "'ab'", "b'xy'", "True", "None", "Decimal('1e999999999')",
     "Decimal('-2.5e-7')", "Fraction(1, 3)", "[]", "()", "[1, 2, 3]", "'x' * 1000"]
)


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    two = st.tuples(children, children)
    count = st.sampled_from(["2", "16", "256", "4096", "65536", "10 ** 9"])
    return st.one_of(
        st.tuples(children, count).map(lambda t: f"[{t[0]}] * {t[1]}"),
        st.tuples(children, count).map(lambda t: f"({t[0]},) * {t[1]}"),
        two.map(lambda t: f"[{t[0]}, {t[1]}]"),
        two.map(lambda t: f"{{{t[0]}: {t[1]}}}" if t[0].isdigit() else f"[{t[0]}]"),
        two.map(lambda t: f"({t[0]}) + ({t[1]})"),
        two.map(lambda t: f"({t[0]}) * ({t[1]})"),
        two.map(lambda t: f"({t[0]}) ** ({t[1]})"),
        two.map(lambda t: f"({t[0]}) << ({t[1]})"),
        st.tuples(st.sampled_from(g.LAMBDA_CALLABLES + ("str", "int", "float", "Fraction",
                                                        "list", "tuple", "set", "repr")),
                  children).map(lambda t: f"{t[0]}({t[1]})"),
        children.map(lambda c: f"sum([{c}] * 64, [])"),
    )


_TREES = st.recursive(_LEAVES, _combine, max_leaves=12)


@pytest.mark.timeout(300)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TREES)
@example("int(Decimal('1e999999999'))")  # stalled the unbounded interpreter
@example("sum([[0] * 4096] * 4096, [])")
def test_random_literal_trees_are_computed_within_bounds_or_refused(source):
    """Whatever the tree, evaluation ends within a bounded CPU time (generous, for a loaded
    machine: the bounds make it milliseconds) and a computed value is within the size bound."""
    import time

    start = time.process_time()
    try:
        value = g.literal_value(ast.parse(source, mode="eval").body)
    except (g.GrammarError, ArithmeticError, ValueError, TypeError, OverflowError):
        value = None  # refused, or an error the literal itself raises: either is an item problem
    assert time.process_time() - start < 2.0, source
    if isinstance(value, (str, bytes, list, tuple, dict, set)):
        assert len(value) <= g.MAX_ELEMENTS, source
