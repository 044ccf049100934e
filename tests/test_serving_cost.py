"""What a serving choice costs (``scoring/serving_cost.py``) on hand-made reports: canonicals
dropped from the top 10, mutants moved to rank 1, exec@1 and exec@10 before and after, per
operator class; an index's own per-query figures take the place of the top-10 ones."""

from __future__ import annotations

import pytest

from pytest_execretrieval.scoring.serving_cost import serving_cost, top10_figures


def _hit(rank: int, sid: str, kind: str, query: str, passes: bool, operator=None) -> dict:
    return {
        "rank": rank,
        "snippet_id": sid,
        "kind": kind,
        "operator": operator,
        "query_id": query,
        "score": 1.0 - rank / 100,
        "passes": passes,
    }


def _row(query: str, top: list[dict], canonical_rank: int | None) -> dict:
    return {
        "query_id": query,
        "domain": "d",
        "passed": top[0]["passes"],
        "canonical_rank": canonical_rank,
        "top": top,
        "own_distractors": [{"snippet_id": f"{query}-m", "operator": "ROR", "score": 0.5}],
    }


def _report(rows: list[dict]) -> dict:
    return {"corpus": {"sha256": "x"}, "embedder": {"name": "e"}, "per_query": rows}


CANON = lambda q, r: _hit(r, f"{q}-c", "canonical", q, True)  # noqa: E731
MUTANT = lambda q, r: _hit(r, f"{q}-m", "distractor", q, False, "ROR")  # noqa: E731
OTHER = lambda q, r, n: _hit(r, f"o{n}", "distractor", "z", False, "AOR")  # noqa: E731

# q1: the served pipeline puts the own mutant first (canonical still listed at 2);
# q2: the served pipeline loses the canonical from its top 10 entirely; q3: unchanged.
REFERENCE = _report(
    [
        _row("q1", [CANON("q1", 1), MUTANT("q1", 2)], 1),
        _row("q2", [CANON("q2", 1), OTHER("q2", 2, 1)], 1),
        _row("q3", [MUTANT("q3", 1), CANON("q3", 2)], 2),
    ]
)
SERVED = _report(
    [
        _row("q1", [MUTANT("q1", 1), CANON("q1", 2)], 2),
        _row("q2", [OTHER("q2", 1, 1), OTHER("q2", 2, 2)], 40),
        _row("q3", [MUTANT("q3", 1), CANON("q3", 2)], 2),
    ]
)


def test_top10_figures_say_what_the_served_top_10_kept():
    figures = top10_figures(REFERENCE, SERVED)
    assert figures == {
        "q1": {"recall@10": 1.0, "canonical_dropped": False},
        "q2": {"recall@10": 0.5, "canonical_dropped": True},
        "q3": {"recall@10": 1.0, "canonical_dropped": False},
    }


def test_the_cost_counts_drops_promotions_and_exec_before_and_after():
    cost = serving_cost(REFERENCE, SERVED)
    assert cost["n"] == 3
    assert (cost["canonical_dropped_n"], cost["mutant_first_n"]) == (1, 1)  # q3 was first already
    assert cost["recall@10"] == pytest.approx(2.5 / 3)
    e1 = cost["exec@1"]
    assert (e1["before"], e1["after"]) == (pytest.approx(2 / 3), 0.0)
    assert e1["difference"] == pytest.approx(-2 / 3) and e1["test"] == "mcnemar"
    assert cost["exec@10"]["before"] == 1.0 and cost["exec@10"]["after"] == pytest.approx(2 / 3)
    assert list(cost["by_operator"]) == ["ROR"]  # every query's own mutant is a ROR
    assert cost["by_operator"]["ROR"]["mutant_first_n"] == 1


def test_an_index_s_own_figures_replace_the_top_10_ones():
    own = {q: {"recall@10": 0.0, "canonical_dropped": True} for q in ("q1", "q2", "q3")}
    cost = serving_cost(REFERENCE, SERVED, own)
    assert cost["canonical_dropped_n"] == 3 and cost["recall@10"] == 0.0
