"""Tests for pytest_execretrieval.metrics: hand-computed examples and exact properties."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.metrics import (
    KS,
    METRIC_NAMES,
    mean_metrics,
    metric_matrix,
    query_metrics,
)

EXPECTED_NAMES = (
    "exec@1", "exec@3", "exec@5", "exec@10",
    "execp@1", "execp@3", "execp@5", "execp@10",
    "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10",
    "mrr",
)  # fmt: skip


def test_names_and_cutoffs() -> None:
    assert KS == (1, 3, 5, 10)
    assert METRIC_NAMES == EXPECTED_NAMES


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
