"""Statistics for ExecRetrieval: query-level bootstrap, exact McNemar and analysis helpers.

All functions are pure functions of arrays (numpy only).  Inputs called *matrix or vector* are
either ``(n_queries,)`` or ``(n_queries, n_metrics)``; queries are the resampling unit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "Deception",
    "McNemar",
    "auc_roc",
    "average_ranks",
    "binom_half_cdf",
    "bootstrap_ci",
    "deception_rates",
    "density_exec1",
    "detectable_difference",
    "smallest_bound",
    "queries_needed",
    "false_high_similarity_rate",
    "holm_adjust",
    "js_divergence",
    "mcnemar_exact",
    "paired_bootstrap_diff_ci",
    "sign_flip_test",
    "spearman_rho",
]

# Upper bound on the number of float64 values materialised per bootstrap chunk (~16 MiB).
_CHUNK_VALUES = 2_000_000


def _query_array(data: ArrayLike, name: str = "data") -> np.ndarray:
    arr = np.asarray(data, dtype=float)
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D or 2-D (queries first), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} has zero queries")
    return arr


def _check_bootstrap_args(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def bootstrap_ci(
    data: ArrayLike, n_resamples: int = 5000, seed: int = 0, confidence: float = 0.95
) -> np.ndarray:
    """Percentile bootstrap CI of the per-column mean over queries.

    Each replicate draws ``n_queries`` query indices with replacement from
    ``np.random.default_rng(seed)`` and applies the same draw to every column, so the
    intervals of different metrics come from the same resampled query sets.  The bounds are the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles (numpy's default linear
    interpolation) of the replicate means.  Replicates are drawn in chunks, so memory stays
    bounded; the result depends only on the inputs.

    Returns shape ``(n_metrics, 2)`` for a 2-D input and ``(2,)`` for a 1-D input
    (columns ``[low, high]``).  Raises ``ValueError`` on zero queries.
    """
    arr = _query_array(data)
    _check_bootstrap_args(n_resamples, confidence)
    matrix = arr[:, None] if arr.ndim == 1 else arr
    n, m = matrix.shape
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_VALUES // (n * m))
    means = np.empty((n_resamples, m))
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = matrix[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    ci = np.quantile(means, [alpha, 1.0 - alpha], axis=0).T
    return ci.reshape((*arr.shape[1:], 2))


def paired_bootstrap_diff_ci(
    a: ArrayLike,
    b: ArrayLike,
    n_resamples: int = 5000,
    seed: int = 0,
    confidence: float = 0.95,
) -> np.ndarray:
    """Paired percentile bootstrap CI of ``mean(b) - mean(a)`` per column.

    ``a`` and ``b`` are same-shape matrices (or vectors) whose rows are the same queries; each
    replicate resamples query indices once and applies them to both, i.e. this is
    :func:`bootstrap_ci` of ``b - a`` (same seed semantics and output shape).
    """
    a_arr = _query_array(a, "a")
    b_arr = _query_array(b, "b")
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"paired inputs differ in shape: {a_arr.shape} vs {b_arr.shape}")
    return bootstrap_ci(b_arr - a_arr, n_resamples=n_resamples, seed=seed, confidence=confidence)


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test of two paired binary outcomes (e.g. per-query exec@1 of systems a, b).

    ``only_a``: queries where a passes and b fails; ``only_b``: b passes and a fails;
    ``difference`` = ``mean(b) - mean(a)`` = ``(only_b - only_a) / n``.
    """

    n: int
    only_a: int
    only_b: int
    p_value: float
    difference: float


def binom_half_cdf(k: int, n: int) -> float:
    """Exact ``P(X <= k)`` for ``X ~ Binomial(n, 1/2)``.

    Sums the binomial coefficients in exact integer arithmetic and divides by ``2**n`` once
    (Python's correctly rounded int division), so there is no cancellation or underflow for
    any ``n`` that fits in memory.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    total = 0
    coef = 1  # C(n, 0)
    for i in range(k + 1):
        total += coef
        coef = coef * (n - i) // (i + 1)
    return total / 2**n


def mcnemar_exact(a: Sequence[bool] | np.ndarray, b: Sequence[bool] | np.ndarray) -> McNemar:
    """Exact two-sided McNemar test on paired pass/fail flags.

    With ``s = only_a + only_b`` discordant pairs, ``p = min(1, 2 * P(X <= min(only_a, only_b)))``
    for ``X ~ Binomial(s, 1/2)``; ``p = 1`` when there are no discordant pairs.  This equals
    ``scipy.stats.binomtest(min(only_a, only_b), s, 0.5).pvalue``.  Raises ``ValueError`` on
    zero queries or unequal lengths.
    """
    a_arr = np.asarray(a, dtype=bool)
    b_arr = np.asarray(b, dtype=bool)
    if a_arr.ndim != 1 or a_arr.shape != b_arr.shape:
        raise ValueError(f"a and b must be 1-D of equal length, got {a_arr.shape}, {b_arr.shape}")
    n = a_arr.size
    if n == 0:
        raise ValueError("McNemar test needs at least one query")
    only_a = int(np.count_nonzero(a_arr & ~b_arr))
    only_b = int(np.count_nonzero(b_arr & ~a_arr))
    p_value = min(1.0, 2.0 * binom_half_cdf(min(only_a, only_b), only_a + only_b))
    return McNemar(n, only_a, only_b, p_value, (only_b - only_a) / n)


# Up to this many non-zero paired differences the sign-flip test enumerates every sign vector.
EXACT_SIGN_FLIPS = 16


def sign_flip_test(diff: ArrayLike, n_permutations: int = 10_000, seed: int = 0) -> float:
    """Two-sided paired randomization (sign-flip) test of ``mean(diff) == 0``.

    Under the null each paired difference is as likely to have either sign, so the statistic
    ``|sum(diff)|`` is compared with ``|sum(s * diff)|`` for random sign vectors ``s`` (zero
    differences do not matter).  With at most :data:`EXACT_SIGN_FLIPS` non-zero differences all
    ``2**m`` sign vectors are enumerated and ``p`` is the exact fraction at least as extreme;
    otherwise ``p = (1 + hits) / (1 + n_permutations)`` over ``n_permutations`` sign vectors
    drawn from ``np.random.default_rng(seed)`` (a valid p-value, never 0).  Values within 1e-9
    of the observed statistic count as at least as extreme.  ``p = 1`` when every difference
    is zero.  Raises ``ValueError`` on zero queries or non-finite values.
    """
    d = _finite_1d(diff, "diff")
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    observed = abs(d.sum()) - 1e-9
    if d.size <= EXACT_SIGN_FLIPS:
        signs = 1 - 2 * ((np.arange(2**d.size)[:, None] >> np.arange(d.size)) & 1)
        return float(np.count_nonzero(np.abs(signs @ d) >= observed) / 2**d.size)
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_VALUES // d.size)
    hits = 0
    for start in range(0, n_permutations, chunk):
        signs = rng.integers(0, 2, size=(min(chunk, n_permutations - start), d.size)) * 2 - 1
        hits += int(np.count_nonzero(np.abs(signs @ d) >= observed))
    return (1 + hits) / (1 + n_permutations)


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down; family-wise error control).

    With the ``m`` p-values sorted ascending, ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``;
    rejecting where ``adj < alpha`` controls the family-wise error rate at ``alpha``.  Returned
    in the input order.
    """
    p = [float(x) for x in p_values]
    if any(not 0.0 <= x <= 1.0 for x in p):
        raise ValueError(f"p-values must lie in [0, 1], got {p}")
    m = len(p)
    adjusted = [0.0] * m
    running = 0.0
    for j, i in enumerate(sorted(range(m), key=lambda i: p[i])):
        running = max(running, min(1.0, (m - j) * p[i]))
        adjusted[i] = running
    return adjusted


def detectable_difference(
    n: int, second_moment: float, alpha: float, power: float = 0.8, two_sided: bool = True
) -> float | None:
    """The smallest true mean paired difference a level-``alpha`` test detects with ``power``.

    Normal approximation for a paired test on ``n`` queries whose paired differences ``d`` have
    ``E[d^2] = second_moment`` (for pass/fail flags: the fraction of discordant queries, as in
    McNemar's test).  Under the null the mean difference has variance ``E[d^2] / n``; under an
    alternative with mean ``delta`` it has ``(E[d^2] - delta^2) / n``.  ``delta`` solves
    ``z_a * sqrt(E[d^2]) + z_b * sqrt(E[d^2] - delta^2) = delta * sqrt(n)`` with
    ``z_a = z(1 - alpha / 2)`` (``z(1 - alpha)`` one-sided) and ``z_b = z(power)`` (Connor's
    1987 sample-size formula for McNemar's test, solved for the difference).  The normal
    approximation fails when few queries differ: an exact sign-type test (McNemar, sign flips)
    cannot reject with fewer than ``ceil(log2(2 / alpha))`` differing queries (``log2(1 / alpha)``
    one-sided) even if all favour one side, so the answer is at least that many queries' worth of
    difference, that count divided by ``n``.  Returns ``None`` when ``second_moment`` is 0 (no
    query differs: nothing to scale a drop by) or no ``delta <= sqrt(E[d^2])`` solves it (too few
    queries).
    """
    if n < 1 or second_moment < 0:
        raise ValueError(f"need n >= 1 and second_moment >= 0, got {n}, {second_moment}")
    if second_moment == 0:
        return None
    z_a = NormalDist().inv_cdf(1 - alpha / 2 if two_sided else 1 - alpha)
    z_b = NormalDist().inv_cdf(power)
    root = math.sqrt(second_moment)

    def excess(delta: float) -> float:  # increasing in delta; the root is the answer
        spread = math.sqrt(max(0.0, second_moment - delta**2))
        return delta * math.sqrt(n) - z_a * root - z_b * spread

    if excess(root) < 0:
        return None
    lo, hi = 0.0, root
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if excess(mid) < 0 else (lo, mid)
    return max(hi, _fewest_differing(alpha, two_sided) / n)


def _fewest_differing(alpha: float, two_sided: bool) -> int:
    """The fewest differing queries with which an exact sign-type test can reject at all."""
    return math.ceil(math.log2((2 if two_sided else 1) / alpha))


def _detects(
    n: int, second_moment: float, alpha: float, power: float, two_sided: bool, bound: float
) -> bool:
    """Whether ``n`` queries detect a drop of ``bound`` with ``power``. No query differing gives
    no spread to scale by, but the exact test's floor still holds: fewer than
    :func:`_fewest_differing` queries' worth of difference is never detected."""
    if second_moment == 0:
        return _fewest_differing(alpha, two_sided) / n <= bound
    drop = detectable_difference(n, second_moment, alpha, power, two_sided)
    return drop is not None and drop <= bound


def smallest_bound(
    n: int, second_moment: float, alpha: float, power: float = 0.8, two_sided: bool = True
) -> float | None:
    """The smallest bound on a drop that ``n`` queries detect with ``power`` (the bound
    :func:`queries_needed` meets at ``n``): the detectable difference at this spread, or, where
    no query differs, the exact test's floor; ``None`` when no drop of at most 1 is detected."""
    if second_moment == 0:
        bound: float | None = _fewest_differing(alpha, two_sided) / n
    else:
        bound = detectable_difference(n, second_moment, alpha, power, two_sided)
    return bound if bound is not None and bound <= 1 else None


def queries_needed(
    n: int,
    second_moment: float,
    alpha: float,
    bound: float,
    power: float = 0.8,
    two_sided: bool = True,
) -> int | None:
    """``None`` when ``n`` queries detect a true drop of ``bound`` (see
    :func:`detectable_difference`, same arguments); else the fewest queries that would, at the
    same spread of the paired differences (the detectable drop only shrinks as ``n`` grows)."""
    if not 0 < bound <= 1:
        raise ValueError(f"the bound must be in (0, 1], got {bound}")
    args = (second_moment, alpha, power, two_sided, bound)
    if _detects(n, *args):
        return None
    lo, hi = n, 2 * n
    while not _detects(hi, *args):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # _detects(lo) is false, _detects(hi) true
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _detects(mid, *args) else (mid, hi)
    return hi


def _finite_1d(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    return arr


def average_ranks(x: ArrayLike) -> np.ndarray:
    """1-based ranks of a 1-D array, ties receiving the average of the ranks they span."""
    arr = np.asarray(x)
    order = np.argsort(arr)  # any sort order will do: tied values all get their group's mean
    srt = arr[order]
    new = np.concatenate(([True], srt[1:] != srt[:-1]))  # starts of groups of equal values
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], srt.size)  # exclusive; a tie group spans ranks starts+1..ends
    group_rank = (starts + 1 + ends) / 2.0
    ranks = np.empty(srt.size)
    ranks[order] = group_rank[np.cumsum(new) - 1]
    return ranks


def auc_roc(positive_scores: ArrayLike, negative_scores: ArrayLike) -> float:
    """ROC AUC = ``P(pos > neg) + 0.5 * P(pos == neg)`` over all positive/negative pairs.

    Computed as the Mann-Whitney ``U`` of the positives divided by ``n_pos * n_neg``.
    Raises ``ValueError`` on an empty or non-finite input.
    """
    pos = _finite_1d(positive_scores, "positive_scores")
    neg = _finite_1d(negative_scores, "negative_scores")
    ranks = average_ranks(np.concatenate([pos, neg]))
    u = ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2.0
    return float(u / (pos.size * neg.size))


def spearman_rho(x: ArrayLike, y: ArrayLike) -> float:
    """Spearman rank correlation: Pearson correlation of the average ranks (ties averaged).

    ``nan`` when either input is constant (including a single observation).  Raises
    ``ValueError`` on empty, non-finite or unequal-length inputs.
    """
    xa = _finite_1d(x, "x")
    ya = _finite_1d(y, "y")
    if xa.size != ya.size:
        raise ValueError(f"x and y differ in length: {xa.size} vs {ya.size}")
    rx = average_ranks(xa)
    ry = average_ranks(ya)
    rx -= rx.mean()
    ry -= ry.mean()
    denom = math.sqrt(float(rx @ rx) * float(ry @ ry))
    if denom == 0.0:
        return math.nan
    return float(rx @ ry) / denom


def js_divergence(
    p_samples: ArrayLike, q_samples: ArrayLike, bins: int | Sequence[float] = 20
) -> float:
    """Jensen-Shannon divergence (base 2, in ``[0, 1]``) between two samples' histograms.

    ``bins``: an int gives that many equal-width bins spanning the pooled range of both samples
    (``np.histogram_bin_edges`` of the concatenation); a sequence gives explicit shared edges,
    and samples outside them are dropped.  With ``P``, ``Q`` the normalised histograms and
    ``M = (P + Q) / 2``: ``JS = KL(P || M) / 2 + KL(Q || M) / 2`` with ``0 log 0 = 0``.
    Raises ``ValueError`` on an empty or non-finite sample or one with no mass in the bins.
    """
    p_arr = _finite_1d(p_samples, "p_samples")
    q_arr = _finite_1d(q_samples, "q_samples")
    edges = np.histogram_bin_edges(np.concatenate([p_arr, q_arr]), bins=bins)
    p_counts = np.histogram(p_arr, bins=edges)[0]
    q_counts = np.histogram(q_arr, bins=edges)[0]
    if p_counts.sum() == 0 or q_counts.sum() == 0:
        raise ValueError("a sample has no values inside the bin edges")
    p_hist = p_counts / p_counts.sum()
    q_hist = q_counts / q_counts.sum()
    mid = (p_hist + q_hist) / 2.0

    def _kl(dist: np.ndarray) -> float:
        nz = dist > 0
        return float(np.sum(dist[nz] * np.log2(dist[nz] / mid[nz])))

    return float(min(1.0, max(0.0, (_kl(p_hist) + _kl(q_hist)) / 2.0)))


def false_high_similarity_rate(
    equivalent_scores: ArrayLike, mutant_scores: ArrayLike, percentile: float = 75
) -> float:
    """Share of mutant scores strictly above the ``percentile``-th percentile of equivalent scores.

    The threshold is ``np.percentile(equivalent_scores, percentile)`` (linear interpolation).
    Raises ``ValueError`` on an empty or non-finite input or a percentile outside ``[0, 100]``.
    """
    if not 0.0 <= percentile <= 100.0:
        raise ValueError(f"percentile must be in [0, 100], got {percentile}")
    eq = _finite_1d(equivalent_scores, "equivalent_scores")
    mut = _finite_1d(mutant_scores, "mutant_scores")
    threshold = np.percentile(eq, percentile)
    return float(np.mean(mut > threshold))


def density_exec1(
    is_own: Sequence[bool], passes: Sequence[bool], d: int, *, n_own: int | None = None
) -> float:
    """Expected exec@1 of one query when only ``d`` of its ``m`` own distractors stay in the pool.

    ``is_own[i]`` / ``passes[i]``: whether the snippet at rank ``i + 1`` (best first) is one of
    the query's own distractors / passes the query's tests.  Every other snippet is kept.  The
    expectation is exact over all ``C(m, d)`` equally likely kept subsets: the top-1 is the first
    snippet that is not a removed own distractor, so the own distractor with 0-based own-index
    ``j`` is top-1 with probability ``C(m - j - 1, d - 1) / C(m, d)`` and the first other
    snippet, below ``t`` own distractors, with probability ``C(m - t, d) / C(m, d)``.

    ``m`` is ``n_own`` if given (for a ranking truncated before all own distractors), else
    ``sum(is_own)``.  ``d > m`` is clamped to ``m`` (every own distractor kept), so a density
    sweep can use one ``d`` grid for queries with different ``m``; ``d < 0`` raises.  Raises
    ``ValueError`` if the ranking ends while the top-1 is still undetermined (with positive
    probability every snippet given is a removed own distractor).
    """
    if len(is_own) != len(passes):
        raise ValueError(f"is_own and passes differ in length: {len(is_own)} vs {len(passes)}")
    if d < 0:
        raise ValueError(f"d must be >= 0, got {d}")
    seen = sum(bool(o) for o in is_own)
    m = seen if n_own is None else n_own
    if m < seen:
        raise ValueError(f"n_own={m} is less than the {seen} own distractors ranked")
    d = min(d, m)
    total = math.comb(m, d)
    numerator = 0  # sum of pass flags weighted by the number of subsets making them top-1
    j = 0  # own distractors ranked so far
    for own, ok in zip(is_own, passes):  # lengths checked above
        if own:
            numerator += bool(ok) * math.comb(m - j - 1, d - 1) if d else 0
            j += 1
        else:
            numerator += bool(ok) * math.comb(m - j, d)
            return numerator / total
    if math.comb(m - j, d):
        raise ValueError("ranking ends before the top-1 is determined; pass a longer prefix")
    return numerator / total


@dataclass(frozen=True)
class Deception:
    """How one query's own distractors score against its canonical (higher score = closer).

    ``share_at_or_above``: fraction of own distractors scoring ``>=`` the canonical;
    ``any_above``: some own distractor scores strictly above it;
    ``margin``: canonical score minus the best own distractor score (negative = deceived).
    """

    share_at_or_above: float
    any_above: bool
    margin: float


def deception_rates(canonical_score: float, own_distractor_scores: ArrayLike) -> Deception:
    """Summarise how the canonical compares with its own distractors; raises on none given."""
    scores = _finite_1d(own_distractor_scores, "own_distractor_scores")
    if not math.isfinite(canonical_score):
        raise ValueError("canonical_score is not finite")
    return Deception(
        share_at_or_above=float(np.mean(scores >= canonical_score)),
        any_above=bool(np.any(scores > canonical_score)),
        margin=float(canonical_score - scores.max()),
    )
