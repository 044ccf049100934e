"""Tests for pytest_execretrieval.scoring.metrics: hand-computed examples and exact properties.

Mutation-tested with mutmut (`tox -e mutmut`): 389 of 391 mutants killed. The 2 survivors are
equivalent: the switch from summing to the asymptotic expansion of the harmonic numbers,
`n < _EXACT_TERMS` -> `<=` in `_harmonic` and `last - first < _EXACT_TERMS` -> `<=` in
`_harmonic_span`, only moves the switch point by one term, where both ways agree to an ulp.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.scoring.gate import GATE_METRICS
from pytest_execretrieval.scoring.metrics import (
    HEADLINE,
    KS,
    METRIC_NAMES,
    METRICS,
    _at_k,
    _execp_at,
    at_k,
    junit_properties,
    mean_metrics,
    metric_matrix,
    metric_spec,
    query_metrics,
    row_metrics,
    tie_aware_metrics,
    tie_groups,
)

EXPECTED_NAMES = (
    "exec@1",
    "exec@3",
    "exec@5",
    "exec@10",
    "execp@1",
    "execp@3",
    "execp@5",
    "execp@10",
    "ndcg@1",
    "ndcg@3",
    "ndcg@5",
    "ndcg@10",
    "mrr",
)


def test_names_and_cutoffs() -> None:
    assert KS == (1, 3, 5, 10)
    assert METRIC_NAMES == EXPECTED_NAMES


def tie_free(passes: list[bool], rank: int | None) -> dict[str, float]:
    """An independent oracle: the definitions of the module docstring for a ranking without
    ties, written directly (the library computes every metric through the tie groups)."""
    passes = [bool(p) for p in passes[: max(KS)]]
    out: dict[str, float] = {}
    for k in KS:
        top = passes[:k]
        out[f"exec@{k}"] = float(any(top))
        out[f"execp@{k}"] = sum(top) / len(top) if top else 0.0
    for k in KS:
        hit = rank is not None and rank <= k
        out[f"ndcg@{k}"] = 1.0 / math.log2(rank + 1) if hit else 0.0
    out["mrr"] = 0.0 if rank is None else 1.0 / rank
    return out


# --- the one definition of the reported metrics ----------------------------------------------


def test_one_definition_per_metric_in_report_order() -> None:
    assert tuple(m.name for m in METRICS) == METRIC_NAMES
    assert all(metric_spec(m.name) is m for m in METRICS)
    assert [m.k for m in at_k("exec")] == [m.k for m in at_k("ndcg")] == list(KS)
    assert [m.name for m in at_k("execp")] == [f"execp@{k}" for k in KS]
    assert metric_spec("mrr").k is None and HEADLINE in METRIC_NAMES
    with pytest.raises(KeyError, match="unknown metric 'exec@2'; known: exec@1, exec@3"):
        metric_spec("exec@2")


def test_gateable_metrics_are_the_documented_ones() -> None:
    """The public interface: ``exec@k``, ``execp@k``, ``ndcg@10`` and ``mrr``."""
    documented = (*(f"exec@{k}" for k in KS), *(f"execp@{k}" for k in KS), "ndcg@10", "mrr")
    assert GATE_METRICS == documented
    assert GATE_METRICS == tuple(m.name for m in METRICS if m.gate)


def test_session_table_columns() -> None:
    """The terminal table's metric columns, in order (its text is pinned byte for byte)."""
    assert [m.title for m in METRICS if m.table] == [
        "exec@1 [95% CI]",
        "exec@5 [95% CI]",
        "exec@10",
        "ndcg@10 [95% CI]",
        "mrr",
    ]


def test_junit_properties_are_the_marked_metrics_formatted() -> None:
    top = [{"rank": k, "score": 1 - k / 10, "passes": k == 3} for k in range(1, 11)]
    row = {"top": top, "canonical_rank": 3}
    assert junit_properties(row) == [
        ("exec@1", "0"),
        ("exec@3", "1"),
        ("exec@5", "1"),
        ("exec@10", "1"),
    ]
    tied = dict(row, canonical_tie={"first": 1, "last": 3}, tail_tie={"size": 1, "passing": 0})
    tied["top"] = [dict(h, score=1.0) if h["rank"] <= 3 else h for h in top]
    assert junit_properties(tied)[0] == ("exec@1", "0.333333")
    assert [n for n, _ in junit_properties(row)] == [m.name for m in METRICS if m.junit]


def test_hand_example_rank_two() -> None:
    passes = [False, True, False, True, True, False, False, False, False, True]
    got = query_metrics(passes, 2)
    assert set(got) == set(METRIC_NAMES)
    assert got == pytest.approx(
        {
            "exec@1": 0.0,
            "exec@3": 1.0,
            "exec@5": 1.0,
            "exec@10": 1.0,
            "execp@1": 0.0,
            "execp@3": 1 / 3,
            "execp@5": 3 / 5,
            "execp@10": 4 / 10,
            "ndcg@1": 0.0,
            "ndcg@3": 1 / math.log2(3),
            "ndcg@5": 1 / math.log2(3),
            "ndcg@10": 1 / math.log2(3),
            "mrr": 0.5,
        },
        abs=1e-15,
    )


def test_canonical_first_and_all_pass() -> None:
    got = query_metrics([True] * 10, 1)
    assert all(got[name] == 1.0 for name in METRIC_NAMES)


def test_nothing_passes_canonical_fourth() -> None:
    got = query_metrics([False] * 10, 4)
    for k in KS:
        assert got[f"exec@{k}"] == 0.0
        assert got[f"execp@{k}"] == 0.0
    assert got["ndcg@1"] == 0.0
    assert got["ndcg@3"] == 0.0
    assert got["ndcg@5"] == pytest.approx(1 / math.log2(5), abs=1e-15)
    assert got["ndcg@10"] == pytest.approx(1 / math.log2(5), abs=1e-15)
    assert got["mrr"] == 0.25


def test_only_last_of_top_ten_passes() -> None:
    got = query_metrics([False] * 9 + [True], 3)
    assert [got[f"exec@{k}"] for k in KS] == [0.0, 0.0, 0.0, 1.0]
    assert [got[f"execp@{k}"] for k in KS] == [0.0, 0.0, 0.0, 0.1]
    assert got["ndcg@1"] == 0.0
    assert got["ndcg@3"] == 0.5  # 1 / log2(4), exactly
    assert got["ndcg@5"] == 0.5
    assert got["ndcg@10"] == 0.5
    assert got["mrr"] == pytest.approx(1 / 3, abs=1e-15)


def test_first_passes_only() -> None:
    got = query_metrics([True] + [False] * 9, 5)
    assert [got[f"exec@{k}"] for k in KS] == [1.0, 1.0, 1.0, 1.0]
    assert got["execp@1"] == 1.0
    assert got["execp@3"] == pytest.approx(1 / 3, abs=1e-15)
    assert got["execp@5"] == 0.2
    assert got["execp@10"] == 0.1
    assert got["ndcg@3"] == 0.0
    assert got["ndcg@5"] == pytest.approx(1 / math.log2(6), abs=1e-15)


@pytest.mark.parametrize(
    ("rank", "expected"),
    [
        (1, [1.0, 1.0, 1.0, 1.0]),
        (2, [0.0, 1 / math.log2(3), 1 / math.log2(3), 1 / math.log2(3)]),
        (3, [0.0, 0.5, 0.5, 0.5]),
        (4, [0.0, 0.0, 1 / math.log2(5), 1 / math.log2(5)]),
        (5, [0.0, 0.0, 1 / math.log2(6), 1 / math.log2(6)]),
        (6, [0.0, 0.0, 0.0, 1 / math.log2(7)]),
        (10, [0.0, 0.0, 0.0, 1 / math.log2(11)]),
        (11, [0.0, 0.0, 0.0, 0.0]),
        (500, [0.0, 0.0, 0.0, 0.0]),
    ],
)
def test_ndcg_cutoffs(rank: int, expected: list[float]) -> None:
    got = query_metrics([False] * 10, rank)
    assert [got[f"ndcg@{k}"] for k in KS] == pytest.approx(expected, abs=1e-15)
    assert got["mrr"] == pytest.approx(1 / rank, abs=1e-15)


def test_unknown_canonical_rank_scores_zero() -> None:
    got = query_metrics([True] * 10, None)
    assert all(got[f"ndcg@{k}"] == 0.0 for k in KS)
    assert got["mrr"] == 0.0
    assert got["exec@1"] == 1.0


@pytest.mark.parametrize("rank", [0, -1, -10])
def test_bad_rank_raises(rank: int) -> None:
    with pytest.raises(ValueError, match="^canonical_rank must be >= 1 or None"):
        query_metrics([True], rank)


def test_small_pool_divides_by_number_ranked() -> None:
    got = query_metrics([True, False, False, True], 4)
    assert got["execp@1"] == 1.0
    assert got["execp@3"] == pytest.approx(1 / 3, abs=1e-15)
    assert got["execp@5"] == 0.5  # 2 of the 4 ranked, not 2 / 5
    assert got["execp@10"] == 0.5
    assert got["exec@10"] == 1.0
    assert got["ndcg@3"] == 0.0
    assert got["ndcg@5"] == pytest.approx(1 / math.log2(5), abs=1e-15)


def test_two_snippet_pool() -> None:
    got = query_metrics([False, True], 2)
    assert got["execp@1"] == 0.0
    assert got["execp@3"] == 0.5
    assert got["execp@10"] == 0.5


def test_empty_pool_scores_zero() -> None:
    got = query_metrics([], None)
    assert all(got[name] == 0.0 for name in METRIC_NAMES)


def test_entries_beyond_top_ten_are_ignored() -> None:
    got = query_metrics([False] * 10 + [True, True], 11)
    assert got["exec@10"] == 0.0
    assert got["execp@10"] == 0.0
    got = query_metrics([True] * 10 + [False] * 10, 1)
    assert got["execp@10"] == 1.0


def test_truthy_values_are_booleans() -> None:
    got = query_metrics([0, 2, 0], 1)
    assert got["execp@3"] == pytest.approx(1 / 3, abs=1e-15)
    assert got["exec@3"] == 1.0


def test_values_are_floats() -> None:
    got = query_metrics([True, False], 1)
    assert all(type(v) is float for v in got.values())


def test_metric_matrix_order_and_shape() -> None:
    row_a = {name: float(i) for i, name in enumerate(METRIC_NAMES)}
    row_b = {name: float(-i) for i, name in enumerate(reversed(METRIC_NAMES))} | {"extra": 9.0}
    mat = metric_matrix([row_a, row_b])
    assert mat.shape == (2, 13)
    assert mat.dtype == np.float64
    np.testing.assert_array_equal(mat[0], np.arange(13.0))
    np.testing.assert_array_equal(mat[1], -np.arange(12.0, -1.0, -1.0))


def test_metric_matrix_empty_and_missing_key() -> None:
    assert metric_matrix([]).shape == (0, 13)
    row = query_metrics([True], 1)
    del row["mrr"]
    with pytest.raises(KeyError):
        metric_matrix([row])


def test_mean_metrics_hand_example() -> None:
    rows = [query_metrics([True] * 10, 1), query_metrics([False] * 10, 2)]
    means = mean_metrics(metric_matrix(rows))
    assert list(means) == list(METRIC_NAMES)
    assert means["exec@1"] == 0.5
    assert means["execp@10"] == 0.5
    assert means["mrr"] == 0.75
    assert means["ndcg@1"] == 0.5
    assert means["ndcg@3"] == pytest.approx((1 + 1 / math.log2(3)) / 2, abs=1e-15)
    assert all(type(v) is float for v in means.values())


def test_mean_metrics_zero_queries_raises() -> None:
    with pytest.raises(ValueError, match="^cannot average metrics over zero queries$"):
        mean_metrics(metric_matrix([]))
    with pytest.raises(ValueError, match="^cannot average metrics over zero queries$"):
        mean_metrics(np.empty((0, 13)))


@pytest.mark.parametrize("shape", [(13,), (2, 12), (2, 14), (1, 13, 1)])
def test_mean_metrics_wrong_shape_raises(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="^expected shape"):
        mean_metrics(np.zeros(shape))


# ---- properties -------------------------------------------------------------------------

passes_st = st.lists(st.booleans(), min_size=0, max_size=14)
rank_st = st.one_of(st.none(), st.integers(min_value=1, max_value=40))


@settings(max_examples=300, deadline=None)
@given(passes=passes_st, rank=rank_st)
def test_properties(passes: list[bool], rank: int | None) -> None:
    got = query_metrics(passes, rank)
    assert set(got) == set(METRIC_NAMES)
    assert all(0.0 <= v <= 1.0 for v in got.values())
    for k in KS:
        top = passes[:k]
        ex, exp_ = got[f"exec@{k}"], got[f"execp@{k}"]
        assert ex == float(any(top))
        assert ex >= exp_
        assert (exp_ > 0) == (ex == 1.0)
        # execp@k times the number ranked in the top k recovers the passing count exactly
        assert round(exp_ * max(len(top), 1)) == sum(top)
        assert (got[f"ndcg@{k}"] > 0) == (rank is not None and rank <= k)
    for lo, hi in itertools.pairwise(KS):
        assert got[f"exec@{lo}"] <= got[f"exec@{hi}"]
        assert got[f"ndcg@{lo}"] <= got[f"ndcg@{hi}"]
    assert got["ndcg@1"] <= got["mrr"]
    assert (got["ndcg@1"] == 1.0) == (rank == 1) == (got["mrr"] == 1.0)
    if rank is None:
        assert got["mrr"] == 0.0
    else:
        assert got["mrr"] == 1.0 / rank
        if rank <= 10:
            assert got["mrr"] <= got["ndcg@10"] + 1e-15
            assert got["ndcg@10"] == 1.0 / math.log2(rank + 1)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(passes_st, rank_st), min_size=1, max_size=8))
def test_mean_is_per_metric_average(queries: list[tuple[list[bool], int | None]]) -> None:
    rows = [query_metrics(p, r) for p, r in queries]
    means = mean_metrics(metric_matrix(rows))
    for name in METRIC_NAMES:
        assert means[name] == pytest.approx(sum(r[name] for r in rows) / len(rows), abs=1e-12)
        assert 0.0 <= means[name] <= 1.0


# --- tie-aware metrics ----------------------------------------------------------------------


def brute_force(members: list[tuple[int, bool, bool]]) -> tuple[dict, dict, dict]:
    """Mean, max and min of :func:`query_metrics` over every order that permutes each tie
    group. ``members``: (group index, passes, is the canonical), best group first."""
    groups: dict[int, list[tuple[bool, bool]]] = {}
    for g, passes, canonical in members:
        groups.setdefault(g, []).append((passes, canonical))
    orders = itertools.product(*(itertools.permutations(groups[g]) for g in sorted(groups)))
    rows = []
    for order in orders:
        ranked = [m for group in order for m in group]
        rank = next((i + 1 for i, (_, c) in enumerate(ranked) if c), None)
        rows.append(tie_free([p for p, _ in ranked], rank))
    return (
        {m: sum(r[m] for r in rows) / len(rows) for m in METRIC_NAMES},
        {m: max(r[m] for r in rows) for m in METRIC_NAMES},
        {m: min(r[m] for r in rows) for m in METRIC_NAMES},
    )


tied_lists = st.lists(st.tuples(st.integers(1, 4), st.integers(0, 4)), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 3), st.integers(0, 3)), min_size=1, max_size=5),
    st.integers(0, 5),
)
def test_tie_aware_equals_brute_force_over_tie_orders(spec, canonical_group) -> None:
    """Expected value = mean over all within-group orders, bounds = their max and min; the
    groups may reach past the top 10 (the list then ends inside the last group)."""
    members = []
    for g, (size, passing) in enumerate(spec):
        passing = min(passing, size)
        members += [(g, i < passing, False) for i in range(size)]
    if canonical_group >= len(spec):
        canonical_group = None  # no canonical in the list is a valid case too
    if canonical_group is not None:  # the canonical passes: it replaces a passing member
        i = next((i for i, m in enumerate(members) if m[0] == canonical_group), None)
        members[i] = (canonical_group, True, True)
    groups = []
    for g in range(len(spec)):
        inside = [m for m in members if m[0] == g]
        groups.append((len(inside), sum(m[1] for m in inside)))
    span = None
    if canonical_group is not None:
        before = sum(n for n, _ in groups[:canonical_group])
        span = (before + 1, before + groups[canonical_group][0])
    got = tie_aware_metrics(groups, span)
    mean, best, worst = brute_force(members)
    for m in METRIC_NAMES:
        assert got.expected[m] == pytest.approx(mean[m], abs=1e-9), m
        assert got.optimistic[m] == pytest.approx(best[m], abs=1e-12), m
        assert got.pessimistic[m] == pytest.approx(worst[m], abs=1e-12), m


@settings(max_examples=80, deadline=None)
@given(st.lists(st.booleans(), max_size=12), st.one_of(st.none(), st.integers(1, 15)))
def test_without_ties_expected_optimistic_pessimistic_coincide(passes, rank) -> None:
    got = tie_aware_metrics([(1, int(p)) for p in passes], None if rank is None else (rank, rank))
    assert got.expected == got.optimistic == got.pessimistic
    assert got.expected == query_metrics(passes, rank)
    assert got.expected == pytest.approx(tie_free(passes, rank), abs=1e-15)


@settings(max_examples=80, deadline=None)
@given(tied_lists)
def test_bounds_bracket_the_expected_value(spec) -> None:
    groups = [(n, min(p, n)) for n, p in spec]
    got = tie_aware_metrics(groups, (1, groups[0][0]))
    for m in METRIC_NAMES:
        assert 0.0 <= got.pessimistic[m] <= got.expected[m] + 1e-12
        assert got.expected[m] <= got.optimistic[m] + 1e-12 <= 1.0 + 1e-12


def test_tie_at_rank_one_hand_example() -> None:
    """BM25's typical case: the canonical and two mutants share the top score."""
    got = tie_aware_metrics([(3, 1), (1, 0), (6, 0)], (1, 3))
    assert got.expected["exec@1"] == pytest.approx(1 / 3)
    assert (got.pessimistic["exec@1"], got.optimistic["exec@1"]) == (0.0, 1.0)
    assert got.expected["exec@3"] == 1.0 and got.pessimistic["exec@3"] == 1.0
    assert got.expected["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert got.expected["execp@1"] == pytest.approx(1 / 3)


def test_tie_groups_and_the_tail_beyond_the_list() -> None:
    scores = [0.9, 0.9, 0.8, 0.7, 0.7]
    passes = [True, False, False, False, True]
    assert tie_groups(scores, passes) == [(2, 1), (1, 0), (2, 1)]
    assert tie_groups(scores, passes, tail=(7, 2)) == [(2, 1), (1, 0), (7, 2)]
    with pytest.raises(ValueError, match="smaller than its listed part"):
        tie_groups(scores, passes, tail=(1, 0))
    # exec@5: the last group has 2 of its 7 members inside the top 5, 2 of 7 pass.
    got = tie_aware_metrics([(2, 1), (1, 0), (7, 2)], (1, 2))
    assert got.expected["exec@3"] == pytest.approx(1.0)


def test_row_metrics_reads_both_schema_versions() -> None:
    top = [
        {"rank": k, "score": 1.0 if k <= 2 else 1 - k / 10, "passes": k == 2} for k in range(1, 11)
    ]
    v1 = {"top": top, "canonical_rank": 2}
    assert row_metrics(v1).expected == pytest.approx(tie_free([h["passes"] for h in top], 2))
    v2 = dict(v1, canonical_tie={"first": 1, "last": 2}, tail_tie={"size": 1, "passing": 0})
    assert row_metrics(v2).expected["exec@1"] == 0.5
    assert row_metrics(v2).expected["mrr"] == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        ((1, 0), "tail group (1, 0) is smaller than its listed part (2, 1)"),
        ((7, 8), "tail group (7, 8) must have 0 <= passing <= size"),
        ((7, -1), "tail group (7, -1) must have 0 <= passing <= size"),
    ],
)
def test_tie_groups_rejects_an_inconsistent_tail(tail: tuple[int, int], message: str) -> None:
    """The message names the tail and, for a short one, the listed part of its group (the last
    group here, distinct from the others)."""
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        tie_groups([0.9, 0.9, 0.8, 0.7, 0.7], [True, False, False, False, True], tail=tail)


def test_tie_groups_accepts_a_tail_where_every_member_passes() -> None:
    assert tie_groups([0.9, 0.8, 0.8], [False, True, True], tail=(3, 3)) == [(1, 0), (3, 3)]
    assert tie_groups([0.9, 0.8, 0.8], [False, True, True], tail=(2, 2)) == [(1, 0), (2, 2)]


@pytest.mark.parametrize("span", [(0, 0), (0, 3), (-1, 2), (3, 2)])
def test_tie_aware_metrics_rejects_a_bad_canonical_span(span: tuple[int, int]) -> None:
    message = f"canonical span must satisfy 1 <= first <= last, got {span}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        tie_aware_metrics([(5, 1)], span)


@pytest.mark.parametrize(
    "span",
    [
        (150_000, 150_001),  # short span far down: summed, no cancellation of H(n) - H(n - 2)
        (1, 100_000),  # the longest summed span
        (1, 100_001),  # the shortest long span, from rank 1 (H(0) = 0)
        (2, 100_002),
        (3, 150_000),
        (50_000, 200_000),
        (99_999, 250_000),
    ],
)
def test_mrr_of_a_long_tie_is_the_exact_mean_over_its_span(span: tuple[int, int]) -> None:
    """The canonical tied with a very large group (e.g. a pool scored all zero): expected mrr is
    the mean of ``1 / r`` over the span to double precision, whichever way it is summed."""
    first, last = span
    groups = [(first - 1, 0), (last - first + 1, 1)] if first > 1 else [(last, 1)]
    got = tie_aware_metrics(groups, span)
    exact = math.fsum(1 / r for r in range(first, last + 1)) / (last - first + 1)
    assert got.expected["mrr"] == pytest.approx(exact, rel=1e-14, abs=0)
    assert (got.optimistic["mrr"], got.pessimistic["mrr"]) == (1 / first, 1 / last)


def test_at_k_binds_the_cutoff_and_names_the_metric() -> None:
    """:data:`METRICS` is built by ``_at_k`` at import, out of reach of mutmut's call-time
    switch, so the builder is pinned directly: name ``family@k``, ``k``, the options, and a
    ``compute`` taking ``(groups, span)`` with ``k`` bound."""
    spec = _at_k("execp", _execp_at, 3, table="mean", gate=True)
    assert (spec.name, spec.k, spec.table, spec.gate, spec.junit) == (
        "execp@3",
        3,
        "mean",
        True,
        False,
    )
    assert spec.compute([(1, 1), (1, 0), (1, 0), (1, 1)], None) == (1 / 3, 1 / 3, 1 / 3)


def _hit(rank: int, score: float, passes: bool, tie_key: list | None = None) -> dict:
    hit = {"rank": rank, "score": score, "passes": passes}
    return hit if tie_key is None else hit | {"tie_key": tie_key}


def test_row_metrics_v1_without_a_canonical() -> None:
    row = {"top": [_hit(k, 1 - k / 10, k == 2) for k in range(1, 11)], "canonical_rank": None}
    got = row_metrics(row).expected
    assert got == pytest.approx(tie_free([k == 2 for k in range(1, 11)], None))
    assert got["mrr"] == 0.0 and got["exec@3"] == 1.0


def test_row_metrics_v2_without_tail_or_canonical_tie() -> None:
    """``tail_tie`` and ``canonical_tie`` may be null: the list ends with its last group and the
    canonical is unknown."""
    top = [_hit(k, 1.0 if k >= 9 else 1 - k / 10, k == 10) for k in range(1, 11)]
    row = {"top": top, "canonical_rank": None, "tail_tie": None, "canonical_tie": None}
    got = row_metrics(row)
    assert got.expected["exec@5"] == 0.0 and got.expected["mrr"] == 0.0
    assert got.expected["exec@10"] == 1.0  # ranks 9 and 10 tie at 1.0, and both are in the top 10


def test_row_metrics_v2_tail_reaching_below_the_list() -> None:
    """Rank 10 (the only pass) ties with three unlisted snippets: one of four places of that
    group is inside the top 10."""
    top = [_hit(k, 1 - k / 20, k == 10) for k in range(1, 11)]
    row = {
        "top": top,
        "canonical_rank": 1,
        "canonical_tie": {"first": 1, "last": 1},
        "tail_tie": {"size": 4, "passing": 1},
    }
    got = row_metrics(row)
    assert got.expected["exec@10"] == pytest.approx(1 / 4, abs=1e-15)
    assert got.expected["execp@10"] == pytest.approx(1 / 40, abs=1e-15)
    assert (got.optimistic["exec@10"], got.pessimistic["exec@10"]) == (1.0, 0.0)
    assert got.expected["mrr"] == 1.0


def test_row_metrics_pipeline_ties_on_the_tie_key_not_the_score() -> None:
    """A reranker's equal scores split by the first stage's (different ``tie_key``) do not tie;
    equal tie keys do (the pipeline's definition, :mod:`..rerank.pipeline`)."""
    top = [
        _hit(1, 0.9, False, [1, 0.9, 0.8]),
        _hit(2, 0.9, True, [1, 0.9, 0.7]),
        _hit(3, 0.5, True, [1, 0.5, 0.6]),
        _hit(4, 0.5, False, [1, 0.5, 0.6]),
    ] + [_hit(k, 0.4 - k / 100, False, [0, 0.4 - k / 100]) for k in range(5, 11)]
    row = {
        "top": top,
        "canonical_rank": 2,
        "canonical_tie": {"first": 2, "last": 2},
        "tail_tie": {"size": 1, "passing": 0},
    }
    got = row_metrics(row)
    assert got.expected["exec@1"] == 0.0  # not 1/2: rank 1 is alone in its group
    assert got.expected["execp@3"] == pytest.approx((0 + 1 + 1 / 2) / 3, abs=1e-15)
    assert (got.optimistic["execp@3"], got.pessimistic["execp@3"]) == (2 / 3, 1 / 3)
