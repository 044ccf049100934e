"""What a reranker reads of its candidates (``ranking.rerank.views``): the diff view marks
exactly what differs between near clones and nothing else, and removing its marks gives the code
back; the identifier-free view renames the code's own names consistently and keeps the rest."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_execretrieval.ranking.rerank.views import CLOSE, OPEN, ViewError, render
from pytest_execretrieval.training.train import TrainConfig, TrainingError

CANONICAL = """def first_at_least(xs, t):
    for i in range(len(xs)):
        if xs[i] >= t:
            return i
    return -1
"""
MUTANT = CANONICAL.replace(">=", ">")
GUARDED = CANONICAL.replace("    for", "    if not xs:\n        return -1\n    for")
UNRELATED = """def mean(values):
    return sum(values) / len(values)
"""


def test_the_code_view_is_the_code():
    assert render("code", [CANONICAL, MUTANT]) == [CANONICAL, MUTANT]


def test_the_diff_view_marks_the_one_token_that_decides():
    canonical, mutant = render("diff", [CANONICAL, MUTANT])
    assert canonical == CANONICAL.replace(">=", f"{OPEN}>={CLOSE}")
    assert mutant == MUTANT.replace(" > ", f" {OPEN}>{CLOSE} ")


def test_a_missing_guard_is_a_gap_and_the_guard_is_marked():
    guarded, bare = render("diff", [GUARDED, CANONICAL])
    assert guarded == GUARDED.replace(
        "if not xs:\n        return -1", f"{OPEN}if not xs:\n        return -1{CLOSE}"
    )
    assert bare == CANONICAL.replace("    for", f"    {OPEN}{CLOSE}for")


def test_only_near_clones_are_compared():
    assert render("diff", [CANONICAL, UNRELATED]) == [CANONICAL, UNRELATED]
    assert render("diff", [CANONICAL, CANONICAL]) == [CANONICAL, CANONICAL]
    assert render("diff", [CANONICAL]) == [CANONICAL]


@given(st.lists(st.sampled_from(["<", "<=", ">", "+ 1", "- 1", "x", "y", "(", ")"]), max_size=8))
def test_removing_the_marks_gives_the_code_back(edits):
    codes = [CANONICAL] + [CANONICAL.replace(">=", e) for e in edits]
    for code, shown in zip(codes, render("diff", codes), strict=True):
        assert shown.replace(OPEN, "").replace(CLOSE, "") == code


def test_the_identifier_free_view_renames_the_codes_own_names():
    (shown,) = render("no-identifiers", [CANONICAL])
    assert shown == (
        "def v1(v2, v3):\n    for v4 in range(len(v2)):\n        if v2[v4] >= v3:\n"
        "            return v4\n    return -1\n"
    )
    renamed = CANONICAL.replace("xs", "items").replace("first_at_least", "find")
    assert render("no-identifiers", [renamed]) == [shown]
    (js,) = render("no-identifiers", ['const n = s.length; return "s" + Math.max(n, 0);'])
    assert js == 'const v1 = v2.length; return "s" + Math.max(v1, 0);'


def test_an_unknown_view_is_refused_and_only_a_cross_encoder_has_one():
    with pytest.raises(ViewError, match="view 'ast'"):
        render("ast", [CANONICAL])
    with pytest.raises(TrainingError, match="--view 'ast'"):
        TrainConfig(objective="cross-encoder", loss="lambda", view="ast")
    with pytest.raises(TrainingError, match="--view diff needs --objective cross-encoder"):
        TrainConfig(view="diff")
