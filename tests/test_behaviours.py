"""Behaviourally duplicate distractors count as one (issue 57): the comparison of two killed
candidates, the selection that takes one per behaviour, and the record that reproduces it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.corpus.behaviours import agree, representatives, same_behaviour
from pytest_execretrieval.corpus.build import build
from pytest_execretrieval.corpus.incremental import (
    ItemRecord,
    choosable,
    recorded_killed,
    recorded_same,
)
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.execution.sandbox import SuiteResult
from pytest_execretrieval.mutation.equivalence import PYTHON_REALM
from pytest_execretrieval.mutation.operators import CORE_CLASSES, Mutant
from pytest_execretrieval.mutation.select import Killed, select_distractors

EXTRAS = ("negate_condition", "complement_comparison", "swap_min_max")


def killed(
    position: int, operator: str, outcomes=("fail",), returned=("returned 1",), kill="assertion"
):
    mutant = Mutant(operator, position + 1, f"# {position}", "", 1, 1)
    return Killed(position, mutant, SuiteResult(outcomes, False, returned=returned), kill)


def test_candidates_with_one_test_signature_and_agreeing_inputs_are_one_behaviour():
    candidates = [
        killed(0, "wrong_comparison"),
        killed(1, "negate_condition"),  # as 0 on the tests and on every drawn input
        killed(2, "off_by_one"),  # as 0 on the tests, not on the drawn inputs
        killed(3, "wrong_operator", returned=("returned 2",)),  # another test signature
        killed(4, "swap_arguments"),  # as 0 on the tests, drawn inputs unknown
        killed(5, "off_by_one_boundary", kill="timeout"),  # never chosen: takes no part
    ]
    same_values = (("value", 1), ("raises", "ValueError"))
    drawn = {0: same_values, 1: same_values, 2: (("value", 1), ("value", 2)), 3: same_values}
    assert representatives(candidates, drawn, PYTHON_REALM) == {1: 0}
    assert representatives(candidates, {}, PYTHON_REALM) == {}


def test_an_input_on_which_either_gave_nothing_is_no_agreement():
    assert agree((("value", 1.0),), (("value", 1.0 + 1e-12),), PYTHON_REALM)
    assert not agree((("value", 1),), (None,), PYTHON_REALM)
    assert not agree((("value", 1),), (("raises", "ValueError"),), PYTHON_REALM)
    assert not agree((), (), PYTHON_REALM)


def test_a_duplicate_behaviour_gives_its_slot_to_another_class():
    candidates = [
        killed(0, "wrong_comparison"),
        killed(1, "negate_condition"),
        killed(2, "off_by_one"),
        killed(3, "wrong_operator"),
        killed(4, "complement_comparison"),
    ]
    kept = select_distractors(candidates, Counter())
    assert [k.mutant.operator for k in kept] == [
        "wrong_comparison",
        "off_by_one",
        "wrong_operator",
        "negate_condition",
    ]
    one_each = select_distractors(candidates, Counter(), same={1: 0})
    assert [k.mutant.operator for k in one_each] == [
        "wrong_comparison",
        "off_by_one",
        "wrong_operator",
        "complement_comparison",
    ]


CLASSES = (*CORE_CLASSES[:3], *EXTRAS[:2])


@st.composite
def killed_with_behaviours(draw):
    """An item's killed candidates and a behaviour map: each candidate behaves like an earlier
    one (its behaviour's first) or is a behaviour of its own."""
    n = draw(st.integers(0, 14))
    candidates = [
        killed(
            p,
            draw(st.sampled_from(CLASSES)),
            kill=draw(st.sampled_from(["assertion", "exception", "timeout"])),
        )
        for p in range(n)
    ]
    same: dict[int, int] = {}
    firsts: list[int] = []
    for k in candidates:
        if k.kill == "timeout":
            continue
        if firsts and draw(st.booleans()):
            same[k.position] = draw(st.sampled_from(firsts))
        else:
            firsts.append(k.position)
    totals = Counter({c: draw(st.integers(0, 3)) for c in CLASSES})
    return candidates, same, totals


@settings(max_examples=300, deadline=None)
@given(killed_with_behaviours())
def test_one_per_behaviour_and_the_record_chooses_as_the_run_does(case):
    candidates, same, totals = case
    chosen = select_distractors(candidates, Counter(totals), same=same)
    behaviours = [same.get(k.position, k.position) for k in chosen]
    assert len(set(behaviours)) == len(behaviours)
    distinct = {same.get(k.position, k.position) for k in candidates if k.kill != "timeout"}
    assert len(chosen) == min(4, len(distinct))  # as many as today where behaviours allow
    record = ItemRecord("d/i", len(candidates), {}, choosable(candidates, same), (), ())
    again = ItemRecord.from_json(record.to_json())
    replayed = select_distractors(
        recorded_killed(again), Counter(totals), same=recorded_same(again)
    )
    assert [k.position for k in replayed] == [k.position for k in chosen]


def test_without_duplicates_the_record_is_as_before():
    candidates = [killed(p, "off_by_one") for p in range(6)]
    rows = ItemRecord("d/i", 6, {}, choosable(candidates), (), ()).to_json()["choosable"]
    assert rows == [[p, "off_by_one", "assertion"] for p in range(4)]


ITEM = '''domain = "data_structures"
query = "Whether a key is in a list of keys."
entry_point = "has_key"
canonical = """
def has_key(k: int, keys: list[int]) -> bool:
    if k not in keys:
        return False
    return True
"""
tests = [
  "assert has_key(1, [1, 2]) is True",
  "assert has_key(3, [1, 2]) is False",
  "assert has_key(0, []) is False",
  "assert has_key(2, [2]) is True",
  "assert has_key(-1, [1, -1]) is True",
  "assert has_key(5, [4, 6]) is False",
  "assert has_key(7, [7, 7]) is True",
]
'''


def test_the_build_chooses_one_distractor_per_behaviour(tmp_path: Path, runners):
    """In the real sandbox: ``not (k not in keys)`` (negate_condition) is ``k in keys``
    (wrong_comparison); the default corpus keeps one of them."""
    (tmp_path / "data_structures").mkdir()
    (tmp_path / "data_structures" / "has_key.toml").write_text(ITEM)
    items, problems = load_items(tmp_path)
    assert not problems
    run = build(items, *runners)
    record = run.records[0]
    same = recorded_same(record)
    assert same, record
    operators = {k.position: k.operator for k in record.choosable}
    assert {operators.get(p) for p in same} | {operators.get(p) for p in same.values()} >= {
        "negate_condition",
        "wrong_comparison",
    }
    chosen = [same.get(p, p) for p in record.selected]
    assert len(set(chosen)) == len(chosen)
    # The comparison itself, on the item's killed candidates as the build ran them.
    _, mutant_runner = runners
    distractors = [s for s in run.corpus.snippets if s.kind == "distractor"]
    codes = {s.code for s in distractors}
    assert len(codes) == len(distractors)
    assert same_behaviour(items[0], [], mutant_runner) == {}
