"""Tests for pytest_execretrieval.scoring.stats: hand examples, scipy cross-checks, brute force.

Mutation-tested with mutmut 3.8 (`tox -e mutmut`): 700 of 708 mutants of stats.py killed. The 8
survivors are equivalent:
- chunk sizes `max(1, ...)` -> `max(2, ...)` in `bootstrap_ci` and `sign_flip_test`: results do not
  depend on chunking (the two `*_chunking_does_not_change_result` tests check it);
- `rng.integers(0, n)` -> `rng.integers(n)` (bootstrap) and `rng.integers(0, 2)` ->
  `rng.integers(2)` (sign flips): the same call;
- `binom_half_cdf`'s early return `k >= n` -> `k > n`: at `k == n` the loop gives exactly 1.0 too;
- `sign_flip_test`'s early return `d.size == 0` -> `d.size == 1`: enumeration also gives exactly 1
  for no non-zero difference (one empty sign vector) and for one (both signs tie);
- `holm_adjust`'s initial `[0.0] * m` -> `[1.0] * m`: the loop overwrites every entry;
- `detectable_difference`'s bisection `range(100)` -> `range(101)`: once lo and hi are adjacent
  floats a halving changes nothing; they are not after 100 only for a root below
  sqrt(E[d^2]) * 2**-48, which the fewest / n floor hides unless E[d^2] > 2**96 / n**2.
"""

from __future__ import annotations

import itertools
import math
import re
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from scipy.spatial.distance import jensenshannon

from pytest_execretrieval.scoring import stats
from pytest_execretrieval.scoring.stats import (
    Deception,
    McNemar,
    auc_roc,
    average_ranks,
    binom_half_cdf,
    bootstrap_ci,
    deception_rates,
    density_exec1,
    detectable_difference,
    false_high_similarity_rate,
    holm_adjust,
    js_divergence,
    mcnemar_exact,
    paired_bootstrap_diff_ci,
    sign_flip_test,
    spearman_rho,
)

FAST = settings(max_examples=60, deadline=None)
small_ints = st.integers(min_value=-3, max_value=3)  # many ties


def _reference_bootstrap(data: np.ndarray, n_resamples: int, seed: int, conf: float) -> np.ndarray:
    mat = data.reshape(data.shape[0], -1)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, mat.shape[0], size=(n_resamples, mat.shape[0]))
    means = mat[idx].mean(axis=1)
    alpha = (1 - conf) / 2
    return np.quantile(means, [alpha, 1 - alpha], axis=0).T.reshape((*data.shape[1:], 2))


# ---- bootstrap ----------------------------------------------------------------------------


def test_bootstrap_shapes_and_determinism() -> None:
    data = np.random.default_rng(1).random((40, 13))
    ci = bootstrap_ci(data, n_resamples=300, seed=7)
    assert ci.shape == (13, 2)
    np.testing.assert_array_equal(ci, bootstrap_ci(data, n_resamples=300, seed=7))
    assert not np.array_equal(ci, bootstrap_ci(data, n_resamples=300, seed=8))
    assert bootstrap_ci(data[:, 0], n_resamples=300, seed=7).shape == (2,)
    assert bootstrap_ci(data[:, :1], n_resamples=300, seed=7).shape == (1, 2)


def test_bootstrap_matches_reference_algorithm() -> None:
    data = np.random.default_rng(2).random((25, 4))
    for conf in (0.95, 0.8):
        got = bootstrap_ci(data, n_resamples=400, seed=3, confidence=conf)
        np.testing.assert_allclose(
            got, _reference_bootstrap(data, 400, 3, conf), rtol=0, atol=1e-12
        )


def test_bootstrap_default_arguments() -> None:
    data = np.random.default_rng(4).random((12, 2))
    np.testing.assert_allclose(
        bootstrap_ci(data), _reference_bootstrap(data, 5000, 0, 0.95), rtol=0, atol=1e-12
    )


def test_bootstrap_resamples_queries_jointly() -> None:
    # the same query draw is applied to every column: each column's CI equals its own bootstrap
    data = np.random.default_rng(5).random((30, 3))
    ci = bootstrap_ci(data, n_resamples=200, seed=11)
    for j in range(3):
        np.testing.assert_allclose(ci[j], bootstrap_ci(data[:, j], n_resamples=200, seed=11))
    # identical columns -> identical intervals; a column and its complement mirror each other
    twin = np.column_stack([data[:, 0], data[:, 0], 1 - data[:, 0]])
    ci = bootstrap_ci(twin, n_resamples=200, seed=0)
    np.testing.assert_array_equal(ci[0], ci[1])
    np.testing.assert_allclose(ci[2], 1 - ci[0][::-1], atol=1e-12)


def test_bootstrap_chunking_does_not_change_result(monkeypatch: pytest.MonkeyPatch) -> None:
    data = np.random.default_rng(6).random((17, 5))
    full = bootstrap_ci(data, n_resamples=301, seed=2)
    for cap in (1, 17 * 5, 17 * 5 * 7 + 3):
        monkeypatch.setattr(stats, "_CHUNK_VALUES", cap)
        np.testing.assert_array_equal(bootstrap_ci(data, n_resamples=301, seed=2), full)


def test_bootstrap_bounded_memory_size() -> None:
    assert stats._CHUNK_VALUES <= 4_000_000
    data = (np.random.default_rng(0).random((1000, 13)) < 0.4).astype(float)
    ci = bootstrap_ci(data, n_resamples=500)
    means = data.mean(axis=0)
    assert np.all(ci[:, 0] <= means) and np.all(means <= ci[:, 1])
    assert np.all(ci[:, 1] - ci[:, 0] < 0.1)


def test_bootstrap_degenerate_inputs() -> None:
    np.testing.assert_array_equal(bootstrap_ci([0.25] * 9, n_resamples=50), [0.25, 0.25])
    np.testing.assert_array_equal(bootstrap_ci([[0.5, 1.0]], n_resamples=50), [[0.5, 0.5], [1, 1]])
    np.testing.assert_array_equal(bootstrap_ci([1.0], n_resamples=1), [1.0, 1.0])


def test_bootstrap_hand_example_two_queries() -> None:
    # 2 queries {0, 1}: replicate means are 0, .5, 1 with probs 1/4, 1/2, 1/4
    ci = bootstrap_ci([0.0, 1.0], n_resamples=4000, seed=0, confidence=0.4)
    np.testing.assert_array_equal(ci, [0.5, 0.5])
    ci = bootstrap_ci([0.0, 1.0], n_resamples=4000, seed=0, confidence=0.99)
    np.testing.assert_array_equal(ci, [0.0, 1.0])


@pytest.mark.parametrize(
    ("data", "kwargs", "match"),
    [
        (np.empty((0, 13)), {}, "^data has zero queries$"),
        ([], {}, "^data has zero queries$"),
        (np.zeros((2, 2, 2)), {}, "^data must be 1-D or 2-D"),
        (5.0, {}, "^data must be 1-D or 2-D"),
        ([1.0, 2.0], {"n_resamples": 0}, "^n_resamples must be >= 1, got 0$"),
        ([1.0, 2.0], {"confidence": 1.0}, "^confidence must be in"),
        ([1.0, 2.0], {"confidence": 0.0}, "^confidence must be in"),
        ([1.0, 2.0], {"confidence": 1.5}, "^confidence must be in"),
    ],
)
def test_bootstrap_invalid(data: object, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        bootstrap_ci(data, **kwargs)


@FAST
@given(
    st.lists(st.lists(st.floats(0, 1), min_size=3, max_size=3), min_size=1, max_size=30),
    st.integers(0, 2**32 - 1),
)
def test_bootstrap_ci_contains_mean(rows: list[list[float]], seed: int) -> None:
    data = np.array(rows)
    ci = bootstrap_ci(data, n_resamples=200, seed=seed)
    means = data.mean(axis=0)
    assert np.all(ci[:, 0] <= ci[:, 1])
    assert np.all(ci[:, 0] <= means + 1e-12) and np.all(means - 1e-12 <= ci[:, 1])
    assert np.all(data.min(axis=0) - 1e-12 <= ci[:, 0])
    assert np.all(ci[:, 1] <= data.max(axis=0) + 1e-12)
    wider = bootstrap_ci(data, n_resamples=200, seed=seed, confidence=0.99)
    assert np.all(wider[:, 0] <= ci[:, 0]) and np.all(ci[:, 1] <= wider[:, 1])


def test_paired_diff_is_bootstrap_of_difference() -> None:
    rng = np.random.default_rng(9)
    a, b = rng.random((20, 13)), rng.random((20, 13))
    got = paired_bootstrap_diff_ci(a, b, n_resamples=300, seed=4, confidence=0.9)
    np.testing.assert_array_equal(got, bootstrap_ci(b - a, n_resamples=300, seed=4, confidence=0.9))
    assert got.shape == (13, 2)
    diff = (b - a).mean(axis=0)
    assert np.all(got[:, 0] <= diff) and np.all(diff <= got[:, 1])
    np.testing.assert_allclose(
        paired_bootstrap_diff_ci(a, b), _reference_bootstrap(b - a, 5000, 0, 0.95), atol=1e-12
    )


def test_paired_diff_hand_examples() -> None:
    a = np.array([0.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(paired_bootstrap_diff_ci(a, a, n_resamples=50), [0.0, 0.0])
    np.testing.assert_array_equal(paired_bootstrap_diff_ci(a, a + 1, n_resamples=50), [1.0, 1.0])
    np.testing.assert_array_equal(paired_bootstrap_diff_ci(a + 1, a, n_resamples=50), [-1, -1])


def test_paired_diff_invalid() -> None:
    with pytest.raises(ValueError, match="^paired inputs differ in shape"):
        paired_bootstrap_diff_ci(np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="^paired inputs differ in shape"):
        paired_bootstrap_diff_ci(np.zeros(3), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="^a has zero queries$"):
        paired_bootstrap_diff_ci([], [1.0])
    with pytest.raises(ValueError, match="^b has zero queries$"):
        paired_bootstrap_diff_ci([1.0], [])
    with pytest.raises(ValueError, match="^a must be 1-D or 2-D"):
        paired_bootstrap_diff_ci(np.zeros((1, 1, 1)), np.zeros((1, 1)))
    with pytest.raises(ValueError, match="^b must be 1-D or 2-D"):
        paired_bootstrap_diff_ci(np.zeros((1, 1)), np.zeros((1, 1, 1)))
    with pytest.raises(ValueError, match="^confidence"):
        paired_bootstrap_diff_ci([1.0], [2.0], confidence=2)


def test_paired_diff_accepts_boolean_flags() -> None:
    # per-query exec@1 flags of two systems: b - a must be computed numerically, not on bools
    a = np.array([True, True, False, False, True])
    b = np.array([True, False, True, True, True])
    got = paired_bootstrap_diff_ci(a, b, n_resamples=200, seed=1)
    want = bootstrap_ci(b.astype(float) - a.astype(float), n_resamples=200, seed=1)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        bootstrap_ci(a, n_resamples=50), bootstrap_ci(a * 1.0, n_resamples=50)
    )


# ---- McNemar -----------------------------------------------------------------------------


def test_mcnemar_hand_example() -> None:
    a = [1, 1, 1, 0, 0, 1, 1, 1]
    b = [0, 0, 0, 0, 1, 1, 1, 1]
    res = mcnemar_exact(a, b)
    # 3 discordant favour a, 1 favours b: p = 2 * (1 + 4) / 16
    assert res == McNemar(n=8, only_a=3, only_b=1, p_value=0.625, difference=-0.25)
    swapped = mcnemar_exact(b, a)
    assert (swapped.only_a, swapped.only_b, swapped.p_value) == (1, 3, 0.625)
    assert swapped.difference == 0.25


def test_mcnemar_small_p() -> None:
    res = mcnemar_exact([False] * 10, [True] * 10)
    assert (res.only_a, res.only_b, res.difference) == (0, 10, 1.0)
    assert res.p_value == 2 / 1024
    assert mcnemar_exact([True] * 6 + [False], [False] * 6 + [True]).p_value == 2 * 8 / 128


def test_mcnemar_no_discordant_pairs() -> None:
    res = mcnemar_exact([True, False, True], [True, False, True])
    assert res == McNemar(n=3, only_a=0, only_b=0, p_value=1.0, difference=0.0)


def test_mcnemar_balanced_is_one() -> None:
    assert mcnemar_exact([1, 0, 1, 0], [0, 1, 0, 1]).p_value == 1.0
    assert mcnemar_exact([1, 0], [0, 1]).p_value == 1.0
    assert mcnemar_exact([1], [0]).p_value == 1.0


def test_mcnemar_is_frozen() -> None:
    res = mcnemar_exact([True], [False])
    with pytest.raises(AttributeError):
        res.p_value = 0.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("a", "b", "match"),
    [
        ([], [], "^McNemar test needs at least one query$"),
        ([True], [True, False], "^a and b must be 1-D of equal length"),
        ([[True]], [[True]], "^a and b must be 1-D of equal length"),
    ],
)
def test_mcnemar_invalid(a: list, b: list, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        mcnemar_exact(a, b)


def test_mcnemar_accepts_float_and_truthy_flags() -> None:
    # e.g. the exec@1 columns of two metric matrices (floats 0.0 / 1.0)
    a = np.array([1.0, 1.0, 0.0, 0.0, 1.0])
    b = np.array([1.0, 0.0, 1.0, 1.0, 1.0])
    assert mcnemar_exact(a, b) == mcnemar_exact(a.astype(bool), b.astype(bool))
    res = mcnemar_exact([2, 0, 3], [0, 5, 1])
    assert (res.only_a, res.only_b) == (1, 1)
    res = mcnemar_exact([0, 0, 0], [2, 4, 1])
    assert (res.only_a, res.only_b, res.difference) == (0, 3, 1.0)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60))
def test_mcnemar_matches_scipy(pairs: list[tuple[bool, bool]]) -> None:
    a = [p for p, _ in pairs]
    b = [q for _, q in pairs]
    res = mcnemar_exact(a, b)
    only_a = sum(p and not q for p, q in pairs)
    only_b = sum(q and not p for p, q in pairs)
    assert (res.n, res.only_a, res.only_b) == (len(pairs), only_a, only_b)
    assert res.difference == pytest.approx(np.mean(b) - np.mean(a), abs=1e-12)
    s = only_a + only_b
    expected = 1.0 if s == 0 else sps.binomtest(min(only_a, only_b), s, 0.5).pvalue
    assert res.p_value == pytest.approx(expected, rel=1e-9, abs=0)
    assert 0.0 < res.p_value <= 1.0


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 10_000), st.data())
def test_mcnemar_counts_large_n_match_scipy(s: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(0, s))
    a = [True] * k + [False] * (s - k)
    res = mcnemar_exact(a, [not x for x in a])
    assert res.p_value == pytest.approx(sps.binomtest(min(k, s - k), s, 0.5).pvalue, rel=1e-9)


@pytest.mark.parametrize(
    ("k", "n"),
    [
        (0, 1),
        (0, 50),
        (3, 10),
        (30, 60),
        (4000, 10_000),
        (4500, 10_000),
        (4990, 10_000),
        (4999, 9999),
    ],
)
def test_binom_half_cdf_matches_scipy(k: int, n: int) -> None:
    assert binom_half_cdf(k, n) == pytest.approx(sps.binom.cdf(k, n, 0.5), rel=1e-10, abs=0)


def test_binom_half_cdf_exact_values_and_edges() -> None:
    assert binom_half_cdf(0, 0) == 1.0
    assert binom_half_cdf(1, 3) == 0.5
    assert binom_half_cdf(2, 4) == 11 / 16
    assert binom_half_cdf(0, 10) == 2.0**-10
    assert binom_half_cdf(1, 10) == 11 / 1024
    assert binom_half_cdf(9, 10) == 1023 / 1024
    assert binom_half_cdf(10, 10) == 1.0
    assert binom_half_cdf(12, 10) == 1.0
    assert binom_half_cdf(-1, 10) == 0.0
    assert binom_half_cdf(0, 1100) == 0.0  # underflows to 0, no exception
    assert 0.0 < binom_half_cdf(4000, 10_000) < 1e-80  # far tail stays representable
    with pytest.raises(ValueError, match="^n must be >= 0, got -1$"):
        binom_half_cdf(0, -1)


def test_binom_half_cdf_is_exact_by_fraction() -> None:
    from fractions import Fraction

    n = 61
    for k in (0, 5, 30):
        exact = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
        assert binom_half_cdf(k, n) == float(exact)


# ---- ranks, AUC, Spearman ----------------------------------------------------------------


@FAST
@given(st.lists(small_ints, min_size=1, max_size=30))
def test_average_ranks_matches_scipy(xs: list[int]) -> None:
    np.testing.assert_allclose(average_ranks(xs), sps.rankdata(xs, method="average"), atol=0)


def test_average_ranks_hand_example() -> None:
    np.testing.assert_array_equal(average_ranks([3, 1, 3, 2, 3]), [4, 1, 4, 2, 4])
    np.testing.assert_array_equal(average_ranks([5, 5, 1, 1]), [3.5, 3.5, 1.5, 1.5])
    assert average_ranks([]).shape == (0,)
    np.testing.assert_array_equal(average_ranks([7.0]), [1.0])


def test_auc_hand_examples() -> None:
    # pairs: 3>1, 3>2, 2>1, 2=2 -> (3 + 0.5) / 4
    assert auc_roc([3, 2], [1, 2]) == 0.875
    assert auc_roc([5, 6], [1, 2, 3]) == 1.0
    assert auc_roc([1, 2], [5, 6, 7]) == 0.0
    assert auc_roc([1, 1], [1, 1, 1]) == 0.5
    assert auc_roc([2.0], [1.0, 3.0]) == 0.5


@FAST
@given(st.lists(small_ints, min_size=1, max_size=25), st.lists(small_ints, min_size=1, max_size=25))
def test_auc_matches_scipy_and_brute_force(pos: list[int], neg: list[int]) -> None:
    got = auc_roc(pos, neg)
    u = sps.mannwhitneyu(pos, neg, alternative="two-sided").statistic
    assert got == pytest.approx(u / (len(pos) * len(neg)), abs=1e-12)
    brute = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg) / (len(pos) * len(neg))
    assert got == pytest.approx(brute, abs=1e-12)
    assert got + auc_roc(neg, pos) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    ("pos", "neg", "match"),
    [
        ([], [1.0], "^positive_scores must be a non-empty 1-D array"),
        ([1.0], [], "^negative_scores must be a non-empty 1-D array"),
        ([np.nan], [1.0], "^positive_scores contains non-finite values$"),
        ([1.0], [np.inf], "^negative_scores contains non-finite values$"),
        ([[1]], [1], "^positive_scores must be a non-empty 1-D array"),
    ],
)
def test_auc_invalid(pos: list, neg: list, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        auc_roc(pos, neg)


def test_scores_are_coerced_to_float() -> None:
    assert auc_roc([True, True], [False, True]) == 0.75
    assert false_high_similarity_rate([False, True, True, True], [True]) == 0.0
    assert false_high_similarity_rate([False, False, False, True], [True]) == 1.0
    assert js_divergence([True, True], [False, False], bins=2) == 1.0
    assert spearman_rho([True, False, True], [3, 1, 2]) == pytest.approx(math.sqrt(3) / 2)


def test_spearman_hand_examples() -> None:
    assert spearman_rho([1, 2, 3, 4], [10, 20, 30, 100]) == 1.0
    assert spearman_rho([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # ranks x = 1..4, y = 1,3,2,4 -> 1 - 6 * 2 / (4 * 15)
    assert spearman_rho([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8, abs=1e-15)
    assert spearman_rho([1, 2], [2, 1]) == -1.0


@pytest.mark.filterwarnings("error")
def test_spearman_constant_is_nan() -> None:
    assert math.isnan(spearman_rho([1, 1, 1], [1, 2, 3]))
    assert math.isnan(spearman_rho([1, 2, 3], [4, 4, 4]))
    assert math.isnan(spearman_rho([1.0], [2.0]))


@pytest.mark.parametrize(
    ("x", "y", "match"),
    [
        ([], [], "^x must be a non-empty"),
        ([1], [], "^y must be a non-empty"),
        ([1, 2], [1, 2, 3], "^x and y differ in length: 2 vs 3$"),
        ([1, np.nan], [1, 2], "^x contains non-finite"),
        ([1, 2], [np.inf, 2], "^y contains non-finite"),
    ],
)
def test_spearman_invalid(x: list, y: list, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        spearman_rho(x, y)


@FAST
@given(st.lists(st.tuples(small_ints, small_ints), min_size=2, max_size=30))
def test_spearman_matches_scipy(pairs: list[tuple[int, int]]) -> None:
    x = [p for p, _ in pairs]
    y = [q for _, q in pairs]
    got = spearman_rho(x, y)
    if len(set(x)) == 1 or len(set(y)) == 1:
        assert math.isnan(got)
    else:
        assert got == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-12)
        assert -1.0 <= got <= 1.0


# ---- Jensen-Shannon ----------------------------------------------------------------------


def test_js_hand_examples() -> None:
    assert js_divergence([0.1, 0.2, 0.3], [0.1, 0.2, 0.3]) == 0.0
    assert js_divergence([0.0, 0.0], [1.0, 1.0], bins=2) == 1.0
    # P = (1, 0), Q = (1/2, 1/2), M = (3/4, 1/4)
    expected = 0.5 * math.log2(4 / 3) + 0.25 * math.log2(2 / 3) + 0.25 * math.log2(2)
    assert js_divergence([0, 0], [0, 1], bins=2) == pytest.approx(expected, abs=1e-15)
    assert js_divergence([5.0], [5.0]) == 0.0  # zero-width range


def test_js_default_is_twenty_equal_width_bins() -> None:
    p = [0.0, 0.04, 1.0]
    q = [0.06, 1.0]  # 0.04 and 0.06 fall in different bins with 20 bins over [0, 1], not 10
    assert js_divergence(p, q) == js_divergence(p, q, bins=20)
    assert js_divergence(p, q) > js_divergence(p, q, bins=10)
    p = [0.0, 0.049, 1.0]
    q = [0.051, 1.0]  # 20 bins split 0.049 | 0.051; 21 bins (width 1/21 > 0.051) do not
    assert js_divergence(p, q) > js_divergence(p, q, bins=21)


def test_js_disjoint_supports_is_exactly_one() -> None:
    # these counts make the unclamped floating-point sum come out at 1 + 2**-52
    p = np.repeat(np.arange(4) + 0.5, [5, 2, 3, 3])
    q = np.repeat(np.arange(4, 9) + 0.5, [3, 3, 1, 3, 3])
    assert js_divergence(p, q, bins=np.arange(10.0)) == 1.0


def test_js_explicit_edges_drop_outside_samples() -> None:
    edges = [0.0, 0.5, 1.0]
    assert js_divergence([0.1, 0.7, 5.0], [0.2, 0.9, -3.0], bins=edges) == 0.0
    with pytest.raises(ValueError, match="^a sample has no values inside the bin edges$"):
        js_divergence([5.0], [0.2], bins=edges)
    with pytest.raises(ValueError, match="^a sample has no values inside the bin edges$"):
        js_divergence([0.2], [5.0], bins=edges)


@pytest.mark.parametrize(
    ("p", "q", "match"),
    [
        ([], [1.0], "^p_samples must be"),
        ([1.0], [], "^q_samples must be"),
        ([np.nan], [1.0], "^p_samples contains"),
        ([1.0], [-np.inf], "^q_samples contains"),
    ],
)
def test_js_invalid(p: list, q: list, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        js_divergence(p, q)


@FAST
@given(
    st.lists(st.floats(-1, 1), min_size=1, max_size=40),
    st.lists(st.floats(-1, 1), min_size=1, max_size=40),
    st.integers(1, 30),
)
def test_js_matches_scipy(p: list[float], q: list[float], bins: int) -> None:
    got = js_divergence(p, q, bins=bins)
    edges = np.histogram_bin_edges(np.concatenate([p, q]), bins=bins)
    ph = np.histogram(p, bins=edges)[0]
    qh = np.histogram(q, bins=edges)[0]
    assert got == pytest.approx(jensenshannon(ph, qh, base=2) ** 2, abs=1e-9)
    assert 0.0 <= got <= 1.0
    assert got == js_divergence(q, p, bins=bins)


# ---- false-high-similarity rate ----------------------------------------------------------


def test_fhsr_hand_examples() -> None:
    eq = [0.0, 1.0, 2.0, 3.0, 4.0]  # 75th percentile = 3
    assert false_high_similarity_rate(eq, [2.0, 3.0, 3.5, 5.0]) == 0.5  # strictly above
    assert false_high_similarity_rate(eq, [2.0, 3.0, 3.5, 5.0], percentile=50) == 0.75
    assert false_high_similarity_rate(eq, [4.0], percentile=100) == 0.0
    assert false_high_similarity_rate(eq, [0.5], percentile=0) == 1.0
    # interpolated threshold: 75th percentile of [0, 1] is 0.75
    assert false_high_similarity_rate([0.0, 1.0], [0.7, 0.8]) == 0.5
    # default is the 75th percentile: threshold 3.0 here (the 76th would be 3.04)
    assert false_high_similarity_rate(eq, [3.02]) == 1.0


@FAST
@given(
    st.lists(st.floats(0, 1), min_size=1, max_size=30),
    st.lists(st.floats(0, 1), min_size=1, max_size=30),
    st.floats(0, 100),
)
def test_fhsr_definition(eq: list[float], mut: list[float], pct: float) -> None:
    thr = np.percentile(eq, pct)
    got = false_high_similarity_rate(eq, mut, percentile=pct)
    assert got == sum(m > thr for m in mut) / len(mut)


@pytest.mark.parametrize(
    ("eq", "mut", "pct", "match"),
    [
        ([], [1.0], 75, "^equivalent_scores must be"),
        ([1.0], [], 75, "^mutant_scores must be"),
        ([np.inf], [1.0], 75, "^equivalent_scores contains"),
        ([1.0], [np.nan], 75, "^mutant_scores contains"),
        ([1.0], [1.0], -1, "^percentile must be in"),
        ([1.0], [1.0], 100.5, "^percentile must be in"),
        ([1.0], [1.0], 101, "^percentile must be in"),
    ],
)
def test_fhsr_invalid(eq: list, mut: list, pct: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        false_high_similarity_rate(eq, mut, percentile=pct)


# ---- pool-density ablation ---------------------------------------------------------------


def _brute_density(is_own: list[bool], passes: list[bool], d: int) -> float:
    own_pos = [i for i, o in enumerate(is_own) if o]
    d = min(d, len(own_pos))
    subsets = list(itertools.combinations(own_pos, d))
    total = 0
    for kept in subsets:
        removed = set(own_pos) - set(kept)
        top = next(i for i in range(len(is_own)) if i not in removed)
        total += passes[top]
    return total / len(subsets)


def test_density_hand_example() -> None:
    # own at ranks 1, 2, 4; d = 1: keep own@1 -> fails; own@2 -> passes; own@4 -> rank 3 passes
    assert density_exec1([1, 1, 0, 1], [0, 1, 1, 0], 1) == pytest.approx(2 / 3, abs=1e-15)
    assert density_exec1([1, 1, 0, 1], [0, 1, 1, 0], 0) == 1.0  # all own removed -> rank 3
    assert density_exec1([1, 1, 0, 1], [0, 1, 1, 0], 3) == 0.0  # nothing removed -> rank 1
    assert density_exec1([1, 1, 0, 1], [0, 1, 1, 0], 99) == 0.0  # clamped to m = 3
    # d = 2: keep {1,2} -> fail, {1,4} -> fail, {2,4} -> pass
    assert density_exec1([1, 1, 0, 1], [0, 1, 1, 0], 2) == pytest.approx(1 / 3, abs=1e-15)


def test_density_no_own_distractors() -> None:
    assert density_exec1([False, True], [True, False], 0) == 1.0
    assert density_exec1([False, True], [False, True], 5) == 0.0
    assert density_exec1([False], [True], 3) == 1.0


def test_density_truncated_ranking_with_n_own() -> None:
    # 4 own distractors, only 2 in the prefix; the prefix reaches a non-own snippet
    full_own = [True, False, True, True, True, False]
    full_pass = [False, True, False, False, True, True]
    for d in range(5):
        got = density_exec1(full_own[:2], full_pass[:2], d, n_own=4)
        assert got == pytest.approx(_brute_density(full_own, full_pass, d), abs=1e-15)
    with pytest.raises(ValueError, match="^n_own=1 is less than the 2 own distractors ranked$"):
        density_exec1([True, True, False], [True, True, True], 1, n_own=1)


def test_density_undetermined_prefix_raises() -> None:
    with pytest.raises(ValueError, match="^ranking ends before the top-1 is determined"):
        density_exec1([True, True], [True, False], 1, n_own=5)
    with pytest.raises(ValueError, match="^ranking ends before the top-1 is determined"):
        density_exec1([True], [True], 0)
    with pytest.raises(ValueError, match="^ranking ends before the top-1 is determined"):
        density_exec1([], [], 0)
    # determined although truncated: keeping 2 of 3 always keeps one of the first two
    assert density_exec1([True, True], [True, True], 2, n_own=3) == 1.0
    assert density_exec1([True, True], [True, False], 2, n_own=3) == pytest.approx(2 / 3)


def test_density_invalid() -> None:
    with pytest.raises(ValueError, match="^is_own and passes differ in length: 2 vs 1$"):
        density_exec1([True, False], [True], 1)
    with pytest.raises(ValueError, match="^is_own and passes differ in length: 1 vs 2$"):
        density_exec1([False], [True, True], 1)
    with pytest.raises(ValueError, match="^d must be >= 0, got -1$"):
        density_exec1([False], [True], -1)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.booleans()), min_size=0, max_size=9),
    st.booleans(),
    st.integers(0, 10),
)
def test_density_matches_brute_force(
    ranked: list[tuple[bool, bool]], last_passes: bool, d: int
) -> None:
    is_own = [o for o, _ in ranked] + [False]  # the canonical is never an own distractor
    passes = [p for _, p in ranked] + [last_passes]
    got = density_exec1(is_own, passes, d)
    assert got == pytest.approx(_brute_density(is_own, passes, d), abs=1e-12)
    assert 0.0 <= got <= 1.0
    m = sum(is_own)
    if d >= m:
        assert got == float(passes[0])


# ---- deception ---------------------------------------------------------------------------


def test_deception_hand_example() -> None:
    res = deception_rates(0.8, [0.9, 0.8, 0.5, 0.1])
    assert res == Deception(share_at_or_above=0.5, any_above=True, margin=pytest.approx(-0.1))
    res = deception_rates(0.8, [0.8, 0.5])
    assert (res.share_at_or_above, res.any_above, res.margin) == (0.5, False, 0.0)
    res = deception_rates(1.0, [0.25, 0.5])
    assert (res.share_at_or_above, res.any_above, res.margin) == (0.0, False, 0.5)
    assert type(res.share_at_or_above) is float and type(res.any_above) is bool


def test_deception_invalid() -> None:
    with pytest.raises(ValueError, match="^own_distractor_scores must be a non-empty"):
        deception_rates(0.5, [])
    with pytest.raises(ValueError, match="^canonical_score is not finite$"):
        deception_rates(math.nan, [0.5])
    with pytest.raises(ValueError, match="^own_distractor_scores contains"):
        deception_rates(0.5, [math.inf])


@FAST
@given(st.floats(-1, 1), st.lists(st.floats(-1, 1), min_size=1, max_size=20))
def test_deception_definition(canon: float, scores: list[float]) -> None:
    assume(all(math.isfinite(s) for s in scores))
    res = deception_rates(canon, scores)
    assert res.share_at_or_above == sum(s >= canon for s in scores) / len(scores)
    assert res.any_above == any(s > canon for s in scores)
    assert res.margin == canon - max(scores)
    assert res.any_above == (res.margin < 0)


# --- the gate's tests: sign-flip, Holm, power -------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.25, 1.0, 0.3]), min_size=2, max_size=12))
def test_sign_flip_exact_matches_scipy(diffs: list[float]) -> None:
    """Exact enumeration equals scipy's exact paired permutation test of the mean difference."""
    got = sign_flip_test(diffs)
    d = np.asarray(diffs)
    if not d.any():
        assert got == 1.0
        return
    ref = sps.permutation_test(
        (d, np.zeros_like(d)),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        alternative="two-sided",
        n_resamples=np.inf,
    ).pvalue
    assert got == pytest.approx(min(1.0, ref), abs=1e-9)


def test_sign_flip_sampled_agrees_with_scipy_and_is_seeded() -> None:
    rng = np.random.default_rng(7)
    d = rng.normal(0.08, 1.0, size=300)
    got = sign_flip_test(d, n_permutations=20_000, seed=1)
    assert got == sign_flip_test(d, n_permutations=20_000, seed=1)
    ref = sps.permutation_test(
        (d, np.zeros_like(d)),
        lambda x, y: np.mean(x - y),
        permutation_type="samples",
        alternative="two-sided",
        n_resamples=20_000,
        random_state=3,
    ).pvalue
    assert abs(got - ref) < 0.02  # two Monte Carlo estimates of the same p (about 0.17)
    assert 0 < sign_flip_test(np.full(40, 1.0), n_permutations=999) <= 1 / 1000


def test_sign_flip_all_zero_differences_is_one() -> None:
    assert sign_flip_test([0.0]) == 1.0
    assert sign_flip_test(np.zeros(40)) == 1.0
    assert sign_flip_test([0.0, 0.0, 0.5]) == 1.0  # one non-zero difference: both signs tie


def test_sign_flip_exact_up_to_sixteen_nonzero_then_sampled() -> None:
    # all differences one way: exactly 2 of the 2**m sign vectors reach |sum| = m
    assert sign_flip_test(np.ones(stats.EXACT_SIGN_FLIPS)) == 2 / 2**stats.EXACT_SIGN_FLIPS
    assert sign_flip_test(np.r_[np.ones(16), np.zeros(30)]) == 2 / 2**16  # zeros do not count
    # 17 non-zero: sampled, so p = (1 + hits) / (1 + n_permutations) >= 1 / 10001, far above the
    # exact 2 / 2**17
    p = sign_flip_test(np.ones(17))
    assert p >= 1 / 10_001
    assert (p * 10_001) == pytest.approx(round(p * 10_001), abs=1e-9)


def test_sign_flip_sampled_p_value_formula() -> None:
    # 40 equal differences: no random sign vector reaches |sum| = 40 (chance 2**-39 each), so
    # p = (1 + 0) / (1 + n_permutations), with the documented default n_permutations = 10_000
    assert sign_flip_test(np.ones(40)) == 1 / 10_001
    assert sign_flip_test(np.ones(40), n_permutations=1) == 1 / 2
    # sum 0: every sign vector is at least as extreme, so p = 1 exactly for any n_permutations
    for n_permutations in (1, 2, 7, 10_000):
        assert sign_flip_test([1.0, -1.0] * 9, n_permutations=n_permutations) == 1.0


def test_sign_flip_default_seed_and_permutations() -> None:
    d = np.r_[np.ones(12), -np.ones(8)]  # p about 0.5, so the random draw shows in the digits
    p = sign_flip_test(d)
    assert p == sign_flip_test(d, n_permutations=10_000, seed=0)
    assert p != sign_flip_test(d, n_permutations=10_000, seed=1)
    assert p != sign_flip_test(d, n_permutations=10_001, seed=0)


@pytest.mark.parametrize(
    "diffs",
    [[1.0, 1.0, -1.0], [1.0] * 9 + [-1.0] * 8],
    ids=["exact", "sampled"],
)
def test_sign_flip_ties_count_as_extreme(diffs: list[float]) -> None:
    """|sum(s * d)| equal to the observed |sum(d)| counts, even where the 1e-9 tolerance is lost
    to rounding: at 2**30 a float's spacing (2**-22) swallows it, and these sums are exact."""
    d = 2.0**30 * np.asarray(diffs)  # sum = 2**30; every sign vector gives an odd multiple
    assert abs(d.sum()) - 1e-9 == abs(d.sum())
    assert sign_flip_test(d) == 1.0


def test_sign_flip_chunking_does_not_change_result(monkeypatch: pytest.MonkeyPatch) -> None:
    d = np.random.default_rng(3).normal(0.1, 1.0, size=23)
    full = sign_flip_test(d, n_permutations=501, seed=5)
    for cap in (1, 23, 23 * 7 + 3):
        monkeypatch.setattr(stats, "_CHUNK_VALUES", cap)
        assert sign_flip_test(d, n_permutations=501, seed=5) == full


@pytest.mark.parametrize(
    ("diff", "kwargs", "match"),
    [
        ([], {}, r"^diff must be a non-empty 1-D array, got shape \(0,\)$"),
        ([[1.0]], {}, r"^diff must be a non-empty 1-D array, got shape \(1, 1\)$"),
        ([1.0, np.nan], {}, "^diff contains non-finite values$"),
        ([np.inf], {}, "^diff contains non-finite values$"),
        (np.ones(17), {"n_permutations": 0}, "^n_permutations must be >= 1, got 0$"),
        (np.ones(17), {"n_permutations": -3}, "^n_permutations must be >= 1, got -3$"),
    ],
)
def test_sign_flip_invalid(diff: object, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sign_flip_test(diff, **kwargs)


def _brute_holm(p: list[float]) -> list[float]:
    """The docstring's formula: adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)), 1-based."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    adjusted = [0.0] * m
    for rank, i in enumerate(order, start=1):
        adjusted[i] = max(min(1.0, (m - j + 1) * p[order[j - 1]]) for j in range(1, rank + 1))
    return adjusted


def test_holm_adjust_hand_example() -> None:
    # sorted 0.01, 0.02, 0.04 -> 3 * 0.01, max(0.03, 2 * 0.02), max(0.04, 1 * 0.04)
    assert holm_adjust([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm_adjust([0.5, 0.6]) == [1.0, 1.0]
    assert holm_adjust([0.7, 0.6]) == [1.0, 1.0]  # 2 * 0.6 capped at 1; then max(1, 0.7)
    assert holm_adjust([0.25]) == [0.25]
    assert holm_adjust([]) == []


def test_holm_adjust_accepts_the_closed_interval() -> None:
    assert holm_adjust([0.0, 1.0]) == [0.0, 1.0]
    assert holm_adjust([1.0, 1.0, 0.0]) == [1.0, 1.0, 0.0]


@pytest.mark.parametrize(
    ("p", "shown"),
    [([1.5], "[1.5]"), ([0.2, -0.1], "[0.2, -0.1]"), ([math.nan], "[nan]"), ([1.0 + 1e-12], None)],
)
def test_holm_adjust_invalid(p: list[float], shown: str | None) -> None:
    got = re.escape(shown) if shown else ".*"
    with pytest.raises(ValueError, match=rf"^p-values must lie in \[0, 1\], got {got}$"):
        holm_adjust(p)


@FAST
@given(st.lists(st.sampled_from([0.0, 0.001, 0.01, 0.02, 0.2, 0.3, 0.45, 0.6, 1.0]), max_size=9))
def test_holm_adjust_matches_formula(p: list[float]) -> None:
    got = holm_adjust(p)
    assert got == _brute_holm(p)
    assert all(x <= a <= 1.0 for x, a in zip(p, got))


def test_detectable_difference_closed_form_and_edges() -> None:
    delta = detectable_difference(1000, 0.2, 0.05, 0.8)
    z_a, z_b = 1.959963984540054, 0.8416212335729143
    assert delta * math.sqrt(1000) == pytest.approx(
        z_a * math.sqrt(0.2) + z_b * math.sqrt(0.2 - delta**2), rel=1e-9
    )
    assert detectable_difference(1000, 0.0, 0.05) is None  # no query differs
    # 2 of 1000 queries differ: the normal approximation would promise 0.003, but an exact test
    # needs 6 queries all one way to reach p < 0.05 (2 / 2**6 = 0.031)
    assert detectable_difference(1000, 0.002, 0.05) == pytest.approx(6 / 1000)
    assert mcnemar_exact([True] * 6 + [False] * 994, [False] * 1000).p_value < 0.05
    assert mcnemar_exact([True] * 5 + [False] * 995, [False] * 1000).p_value > 0.05
    assert detectable_difference(2, 1.0, 0.05) is None  # too few queries for any drop
    assert detectable_difference(4000, 0.2, 0.05) < delta  # more queries, smaller drops


def test_detectable_difference_one_sided_uses_z_of_one_minus_alpha() -> None:
    delta = detectable_difference(1000, 0.2, 0.05, 0.8, two_sided=False)
    z_a, z_b = NormalDist().inv_cdf(0.95), NormalDist().inv_cdf(0.8)
    assert delta * math.sqrt(1000) == pytest.approx(
        z_a * math.sqrt(0.2) + z_b * math.sqrt(0.2 - delta**2), rel=1e-9
    )
    assert delta < detectable_difference(1000, 0.2, 0.05, 0.8)


@pytest.mark.parametrize(
    ("n", "second_moment", "alpha", "two_sided", "z_level", "scale"),
    [
        (4, 4.0, 0.5, True, 0.75, 1.0),
        (16, 4.0, 0.5, True, 0.75, 0.5),
        (4, 4.0, 0.25, False, 0.75, 1.0),
        (16, 1.0, 0.1, False, 0.9, 0.25),
    ],
)
def test_detectable_difference_power_half_is_exact_closed_form(
    n: int, second_moment: float, alpha: float, two_sided: bool, z_level: float, scale: float
) -> None:
    """At power 0.5 (z_b = 0) the equation is linear: delta = z_a * sqrt(E[d^2] / n), returned
    exactly (``scale`` is that square root, exact here), not one float above."""
    got = detectable_difference(n, second_moment, alpha, power=0.5, two_sided=two_sided)
    assert got == NormalDist().inv_cdf(z_level) * scale


@pytest.mark.parametrize("two_sided", [True, False])
def test_detectable_difference_at_the_feasibility_boundary(two_sided: bool) -> None:
    """z_a * sqrt(E[d^2]) = sqrt(n) * sqrt(E[d^2]): delta = sqrt(E[d^2]) solves it (spread 0)."""
    tail = 1 - NormalDist().cdf(2.0)  # alpha of a 2-sigma test, so z_a = 2 = sqrt(4)
    alpha = 2 * tail if two_sided else tail
    if NormalDist().inv_cdf(1 - alpha / 2 if two_sided else 1 - alpha) != 2.0:
        pytest.skip("this platform's normal quantile does not return 2.0 exactly")
    assert detectable_difference(4, 4.0, alpha, two_sided=two_sided) == 2.0
    assert detectable_difference(4, 4.0, alpha * 0.999, two_sided=two_sided) is None


@pytest.mark.parametrize("second_moment", [0.01, 0.5, 1.0])
def test_detectable_difference_needs_sqrt_n_above_z_a(second_moment: float) -> None:
    # alpha 0.05 two-sided: z_a = 1.96; sqrt(3) < z_a < sqrt(4). With 4 queries the equation
    # solves at sqrt(E[d^2]) at most, and the exact floor of 6 discordant queries gives 6 / 4.
    assert detectable_difference(3, second_moment, 0.05) is None
    assert detectable_difference(4, second_moment, 0.05) == 6 / 4
    assert detectable_difference(1, second_moment, 0.05) is None  # n = 1 is valid


def _fewest_exact(alpha: float, two_sided: bool) -> int:
    """Fewest one-way discordant queries with which the exact test reaches p <= alpha."""
    k = 1
    while (2 if two_sided else 1) * 0.5**k > alpha:
        k += 1
    return k


@pytest.mark.parametrize("alpha", [0.1, 0.05, 0.01, 0.001])
@pytest.mark.parametrize("two_sided", [True, False])
def test_detectable_difference_floor_is_the_exact_tests_minimum(
    alpha: float, two_sided: bool
) -> None:
    fewest = _fewest_exact(alpha, two_sided)
    if two_sided:  # the same count from the McNemar test itself
        flags = [True] * fewest + [False] * 100
        assert mcnemar_exact(flags, [False] * len(flags)).p_value <= alpha
        flags = flags[1:]
        assert mcnemar_exact(flags, [False] * len(flags)).p_value > alpha
    # few discordant queries (E[d^2] = 1e-4): the normal approximation (<= 4.2e-4) is below it
    got = detectable_difference(10_000, 1e-4, alpha, two_sided=two_sided)
    assert got == fewest / 10_000


@pytest.mark.parametrize(
    ("n", "second_moment"), [(0, 0.2), (-1, 0.2), (0, 0.0), (10, -0.1), (0, -1.0)]
)
def test_detectable_difference_invalid(n: int, second_moment: float) -> None:
    with pytest.raises(
        ValueError,
        match=rf"^need n >= 1 and second_moment >= 0, got {n}, {re.escape(str(second_moment))}$",
    ):
        detectable_difference(n, second_moment, 0.05)


def test_power_statement_agrees_with_simulation() -> None:
    """At the stated detectable drop, the exact McNemar test (binary exec@k) and the sign-flip
    test (fractional metrics) reject about 80% of the time."""
    rng = np.random.default_rng(0)
    n, discordant = 1000, 0.2
    delta = detectable_difference(n, discordant, 0.05, 0.8)
    p_drop = (1 + delta / discordant) / 2  # a discordant query favours the baseline
    rejections = 0
    sims = 400
    for _ in range(sims):
        is_disc = rng.random(n) < discordant
        drop = rng.random(n) < p_drop
        a = np.where(is_disc, drop, rng.random(n) < 0.5)
        b = np.where(is_disc, ~drop, a)
        test = mcnemar_exact(a, b)
        rejections += test.p_value < 0.05 and test.difference < 0
    assert 0.74 <= rejections / sims <= 0.90

    n, sims = 400, 200
    diffs = rng.normal(0, 0.3, size=(sims, n))
    delta = detectable_difference(n, 0.09, 0.05, 0.8)
    shifted = diffs - delta
    rejections = sum(
        sign_flip_test(d, n_permutations=2000, seed=i) < 0.05 for i, d in enumerate(shifted)
    )
    assert 0.70 <= rejections / sims <= 0.92
