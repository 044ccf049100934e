"""Per-class analyses (scoring/analyses.py: class_only_exec1, tssb_weights, per_class) on
hand-built report rows with known answers."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.mutation.families import TSSB_COUNTS, TSSB_PATTERNS
from pytest_execretrieval.mutation.operators import CORE_CLASSES
from pytest_execretrieval.scoring import analyses as an


def hit(rank, kind, operator, owner, score, passes):
    return {
        "rank": rank,
        "snippet_id": f"s{owner}{rank}",
        "kind": kind,
        "operator": operator,
        "query_id": owner,
        "score": score,
        "passes": passes,
    }


def query(qid: str, ranking: list[tuple], own: list[tuple[str, float]], canonical: float) -> dict:
    """``ranking``: (kind, operator, owner, score, passes), best first; ``own``: (operator,
    score) of each own distractor."""
    return {
        "query_id": qid,
        "domain": "d",
        "passed": ranking[0][4],
        "canonical_rank": 1,
        "canonical_score": canonical,
        "top": [hit(i + 1, *h) for i, h in enumerate(ranking)],
        "own_distractors": [
            {
                "snippet_id": f"{qid}-{j}",
                "operator": op,
                "score": sc,
                "edit_lines": 1,
                "edit_chars": 1,
                "kill": "assertion",
            }
            for j, (op, sc) in enumerate(own)
        ],
    }


# q1: its change_identifier_used distractor outranks the canonical; an other query's
# off_by_one distractor sits between. q2: its off_by_one distractor outranks the canonical.
Q1 = query(
    "q1",
    [
        ("distractor", "change_identifier_used", "q1", 0.9, False),
        ("distractor", "off_by_one", "q9", 0.8, False),
        ("canonical", None, "q1", 0.7, True),
        ("distractor", "off_by_one", "q1", 0.6, False),
        ("canonical", None, "q9", 0.1, False),
    ],
    [("change_identifier_used", 0.9), ("off_by_one", 0.6)],
    0.7,
)
Q2 = query(
    "q2",
    [
        ("distractor", "off_by_one", "q2", 0.9, False),
        ("canonical", None, "q2", 0.5, True),
        ("canonical", None, "q8", 0.1, False),
    ],
    [("off_by_one", 0.9)],
    0.5,
)
REPORT = {"embedder": {"name": "x"}, "per_query": [Q1, Q2]}


def test_class_only_exec1_removes_every_other_class_distractor() -> None:
    assert an.class_only_exec1(Q1, ["change_identifier_used"]) == 0.0
    assert an.class_only_exec1(Q1, ["off_by_one"]) == 0.0  # q9's off_by_one stays in the pool
    assert an.class_only_exec1(Q1, []) == 1.0
    assert an.class_only_exec1(Q2, ["change_identifier_used"]) == 1.0


def test_class_only_exec1_ties_and_undecided() -> None:
    tie = query(
        "t",
        [
            ("distractor", "type_confusion", "t", 0.5, False),
            ("canonical", None, "t", 0.5, True),
            ("canonical", None, "o", 0.1, False),
        ],
        [("type_confusion", 0.5)],
        0.5,
    )
    assert an.class_only_exec1(tie, ["type_confusion"]) == 0.5  # uniform order inside the tie
    full = query(
        "f",
        [("distractor", "off_by_one", "o", 0.9 - i / 100, False) for i in range(10)],
        [("type_confusion", 0.1)],
        0.2,
    )
    assert an.class_only_exec1(full, ["type_confusion"]) is None  # every top-10 hit removed
    flat = query("g", [("canonical", None, "g", 0.3, True)] * 10, [("off_by_one", 0.3)], 0.3)
    assert an.class_only_exec1(flat, []) is None  # the tie group runs past rank 10


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["C", "D", "E", "O"]), st.booleans()), min_size=1, max_size=7
    )
)
def test_class_only_exec1_matches_the_brute_force_pool(tokens) -> None:
    """Against the definition: drop the distractors of the other classes from a whole pool
    with distinct scores, then rank 1 is the best of the rest."""
    pool = []
    for i, (token, passes) in enumerate(tokens):
        kind = "canonical" if token in "CO" else "distractor"
        op = {"D": "off_by_one", "E": "exception_path"}.get(token)
        pool.append((kind, op, "q" if token != "O" else "o", 1 - i / 10, passes))
    pool.append(("canonical", None, "q", -1.0, True))  # the pool never runs out
    q = query("q", pool, [("off_by_one", 0.5)], -1.0)
    for keep in ([], ["off_by_one"], ["exception_path"], ["off_by_one", "exception_path"]):
        rest = [h for h in pool if h[0] != "distractor" or h[1] in keep]
        assert an.class_only_exec1(q, keep) == float(rest[0][4])


def test_tssb_weights_share_a_pattern_among_its_classes() -> None:
    w = an.tssb_weights(
        ["off_by_one", "change_numeric_literal", "change_identifier_used", "remove_edge_case_check"]
    )
    assert "remove_edge_case_check" not in w  # writes no TSSB-3M pattern
    numeric, identifier = (
        TSSB_COUNTS["Change Numeric Literal"],
        TSSB_COUNTS["Change Identifier Used"],
    )
    assert w["off_by_one"] == w["change_numeric_literal"]
    assert w["change_identifier_used"] == pytest.approx(
        identifier / (numeric + identifier), abs=1e-6
    )
    assert sum(w.values()) == pytest.approx(1.0, abs=1e-5)
    assert an.tssb_weights(["remove_edge_case_check", "exception_path"]) == {}


def test_every_weighted_pattern_has_a_count() -> None:
    classes = list(TSSB_PATTERNS)
    w = an.tssb_weights(classes)
    assert set(w) == {c for c, p in TSSB_PATTERNS.items() if p}
    for a, b in itertools.combinations(classes, 2):
        if TSSB_PATTERNS[a] and TSSB_PATTERNS[a] == TSSB_PATTERNS[b]:
            assert w[a] == w[b]


def test_per_class_values_and_mixes() -> None:
    result = an.per_class(REPORT)
    by = result["by_class"]
    assert list(by) == ["off_by_one", "change_identifier_used"]  # table order
    assert by["off_by_one"] == {
        "n_queries": 2,
        "deception": 0.5,
        "exec@1": 0.0,
        "exec@1_no_distractors": 1.0,
        "n_undecided": 0,
    }
    assert by["change_identifier_used"]["deception"] == 1.0
    w = result["weights"]
    expected = (w["off_by_one"] * 0.0 + w["change_identifier_used"] * 0.0) / sum(w.values())
    assert result["realistic_mix"]["exec@1"] == pytest.approx(expected)
    realistic_deception = (w["off_by_one"] * 0.5 + w["change_identifier_used"] * 1.0) / sum(
        w.values()
    )
    assert result["realistic_mix"]["deception"] == pytest.approx(realistic_deception, abs=1e-6)
    assert result["paper_mix"] == {"exec@1": 0.0, "deception": 0.5, "classes": ["off_by_one"]}
    assert set(result["paper_mix"]["classes"]) <= set(CORE_CLASSES)
    assert "TSSB-3M" in result["source"]


def test_summary_lists_every_class_and_both_mixes() -> None:
    from pytest_execretrieval.reporting.report import per_class_markdown

    lines = per_class_markdown(["x", "old"], [an.analyses(REPORT), {}])
    assert "| change_identifier_used | 1.000 / 0.000 (1) | n/a |" in lines
    assert "| off_by_one | 0.500 / 0.000 (2) | n/a |" in lines
    assert any(line.startswith("| realistic mix | ") for line in lines)
    assert any(line.startswith("| paper mix | 0.500 / 0.000 |") for line in lines)
    assert per_class_markdown(["old"], [{}]) == []
