"""Per-query ExecRetrieval metrics and their aggregation.

For each query the whole snippet pool is ranked and each of the top ``max(KS)`` snippets is
executed against the query's tests.  Exactly one snippet per query (its *canonical*) is relevant.
With ``passes[i]`` the pass flag of the snippet at rank ``i + 1`` and ``r`` the 1-based rank of
the canonical:

* ``exec@k``  = 1 if any of ``passes[:k]`` else 0 (success at k);
* ``execp@k`` = ``sum(passes[:k]) / min(k, len(passes))`` (execution precision at k; a pool
  with fewer than k snippets is divided by the number ranked, not by k);
* ``ndcg@k``  = ``1 / log2(r + 1)`` if ``r <= k`` else 0 (binary gain of the canonical only,
  log2 discount; the ideal DCG is 1, so no further normalisation);
* ``mrr``     = ``1 / r`` (reciprocal rank of the canonical, no cut-off).

An unknown canonical rank (``None``) scores 0 on ``ndcg@k`` and ``mrr``.

**Tied scores** (McSherry & Najork, ECIR 2008). Scores are compared as ranked (rounded to
:data:`..ranking.retrieval.DECIMALS` decimals for every embedder), and snippets with
equal scores form a *tie group*. A tie-broken order (by snippet id) is arbitrary, so
:func:`tie_aware_metrics` reports each metric as its **expected value** over all orderings that
permute each tie group uniformly at random, computed exactly, together with its **optimistic**
and **pessimistic** bounds (the best and worst such ordering). With ``s`` positions before a
group of ``n`` snippets of which ``p`` pass, and ``m = min(n, k - s)`` of its positions inside
the top ``k``:

* ``exec@k``: the top ``k`` holds no passing snippet with probability
  ``prod_groups C(n - p, m) / C(n, m)`` (hypergeometric); expected = 1 minus that product;
  optimistic = 1 iff some group reaching into the top ``k`` has ``p > 0``; pessimistic = 1 iff
  some group has ``n - p < m`` (a pass cannot be avoided).
* ``execp@k``: each group contributes ``m * p / n`` expected passes (optimistic ``min(m, p)``,
  pessimistic ``max(0, m - (n - p))``), divided by ``min(k, ranked)``.
* ``ndcg@k`` and ``mrr``: the canonical is equally likely at each rank ``r`` of its group's span
  ``first..last``; expected = mean over the span of ``[r <= k] / log2(r + 1)`` resp. ``1 / r``;
  optimistic at ``r = first``, pessimistic at ``r = last``.

Without ties all three coincide (:func:`query_metrics`). A query *passes* (its pytest item)
only when every snippet of the rank-1 tie group passes: a tie between a passing and a failing
snippet is a failure, since the model cannot tell them apart.

**One definition.** :data:`METRICS` lists every reported metric once (:class:`MetricSpec`: its
name, per-query computation, table column, format, whether it is a junit property, gateable,
broken down by the analyses); the report, ``execretrieval compare``, the gate options, the
analyses and the junit properties all read it, and :data:`METRIC_NAMES` is its names in order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = [
    "HEADLINE",
    "JUNIT_FORMAT",
    "KS",
    "METRICS",
    "METRIC_NAMES",
    "MetricSpec",
    "TieAware",
    "at_k",
    "junit_properties",
    "mean_metrics",
    "metric_matrix",
    "metric_spec",
    "query_metrics",
    "row_metrics",
    "tie_aware_metrics",
    "tie_groups",
]

# The tie groups of a ranked list, best first: (size, passing) per group.
Groups = Sequence[tuple[int, int]]
# The 1-based (first, last) ranks of the canonical's tie group; None when unknown.
Span = tuple[int, int] | None
# One query's value of a metric: (expected, optimistic, pessimistic) over tie orders.
Bounds = tuple[float, float, float]


def _none_pass(n: int, p: int, m: int) -> float:
    """P(no passing snippet among ``m`` drawn without replacement from ``n`` with ``p`` passing)."""
    return math.comb(n - p, m) / math.comb(n, m)


# Sums of more terms than this use the asymptotic expansion of the harmonic numbers.
_EXACT_TERMS = 100_000


def _harmonic(n: int) -> float:
    """``H(n) = sum(1 / r for r in 1..n)`` (``H(0) = 0``): summed below :data:`_EXACT_TERMS`
    terms, else ``ln n + gamma + 1/(2n) - 1/(12n^2)`` (truncation error below 1e-21 there)."""
    if n < _EXACT_TERMS:
        return math.fsum(1.0 / r for r in range(1, n + 1))
    return math.log(n) + 0.5772156649015329 + 1 / (2 * n) - 1 / (12 * n * n)


def _harmonic_span(first: int, last: int) -> float:
    """``sum(1 / r for r in first..last)``: summed for short spans, ``H(last) - H(first - 1)``
    for very long ones."""
    if last - first < _EXACT_TERMS:
        return math.fsum(1.0 / r for r in range(first, last + 1))
    return _harmonic(last) - _harmonic(first - 1)


def _inside_top(groups: Groups, k: int) -> list[tuple[int, int, int]]:
    """``(n, p, m)`` of each group reaching into the top ``k``: ``m`` of its ``n`` positions
    (``p`` of them passing) lie inside."""
    out, start = [], 0
    for n, p in groups:
        if start >= k:
            break
        out.append((n, p, min(n, k - start)))
        start += n
    return out


def _exec_at(groups: Groups, span: Span, k: int) -> Bounds:
    """exec@k: any passing snippet in the top ``k`` (hypergeometric over tie groups)."""
    none_pass, any_opt, any_pes = 1.0, False, False
    for n, p, m in _inside_top(groups, k):
        none_pass *= _none_pass(n, p, m)
        any_opt |= p > 0
        any_pes |= n - p < m
    return (1.0 - none_pass, float(any_opt), float(any_pes))  # no groups: none_pass is 1


def _execp_at(groups: Groups, span: Span, k: int) -> Bounds:
    """execp@k: passing share of the top ``min(k, ranked)`` positions."""
    hits_exp, hits_opt, hits_pes = 0.0, 0, 0
    for n, p, m in _inside_top(groups, k):
        hits_exp += m * p / n
        hits_opt += min(m, p)
        hits_pes += max(0, m - (n - p))
    depth = min(k, sum(n for n, _ in groups))
    if not depth:
        return (0.0, 0.0, 0.0)
    return (hits_exp / depth, hits_opt / depth, hits_pes / depth)


def _ndcg_at(groups: Groups, span: Span, k: int) -> Bounds:
    """nDCG@k of the canonical alone (binary gain, log2 discount), uniform over its span."""
    if span is None:
        return (0.0, 0.0, 0.0)
    first, last = span
    gain = [1.0 / math.log2(r + 1) for r in range(first, min(last, k) + 1)]
    return (
        math.fsum(gain) / (last - first + 1),
        gain[0] if gain else 0.0,
        1.0 / math.log2(last + 1) if last <= k else 0.0,
    )


def _mrr(groups: Groups, span: Span) -> Bounds:
    """Reciprocal rank of the canonical (no cut-off), uniform over its span."""
    if span is None:
        return (0.0, 0.0, 0.0)
    first, last = span
    return (_harmonic_span(first, last) / (last - first + 1), 1.0 / first, 1.0 / last)


@dataclass(frozen=True)
class MetricSpec:
    """One reported metric: the single definition that every report, table, junit property,
    gate option and analysis reads (adding a metric is adding one entry to :data:`METRICS`).

    ``name``: its key in a report's ``metrics``, ``ci95`` and ``metric_bounds`` and its junit
    property name. ``compute(groups, span)``: its per-query ``(expected, optimistic,
    pessimistic)`` values from the tie groups and the canonical's span (:func:`tie_aware_metrics`;
    a report row goes through :func:`row_metrics`). ``k``: the cut-off (``None``: none).
    ``table``: its column in the session's terminal table: ``"ci"`` (mean and 95% CI),
    ``"mean"`` or ``""`` (not shown). ``fmt``: format spec of a value in tables.
    ``junit``: a property of every query's junit test case (:func:`junit_properties`).
    ``gate``: accepted by ``--execretrieval-gate-metric``, ``--execretrieval-margin`` and
    ``--execretrieval-min``. ``breakdown``: reported per domain and per operator class by the
    analyses.
    """

    name: str
    compute: Callable[[Groups, Span], Bounds]
    k: int | None = None
    table: Literal["ci", "mean", ""] = ""
    fmt: str = ".3f"
    junit: bool = False
    gate: bool = False
    breakdown: bool = False

    @property
    def title(self) -> str:
        """The header of its column in the session's terminal table."""
        return f"{self.name} [95% CI]" if self.table == "ci" else self.name


def _at_k(
    family: str, compute: Callable[[Groups, Span, int], Bounds], k: int, **options: Any
) -> MetricSpec:
    def at(groups: Groups, span: Span) -> Bounds:
        return compute(groups, span, k)

    return MetricSpec(f"{family}@{k}", at, k, **options)


# The headline metric: what a query's pytest item asserts (strictly: no mixed tie at rank 1),
# shown with its tie range in the tables.
HEADLINE = "exec@1"

# Every reported metric, in report order. The cut-offs of exec@k are KS; execp@k and ndcg@k
# use the same ones.
METRICS: tuple[MetricSpec, ...] = (
    _at_k("exec", _exec_at, 1, table="ci", junit=True, gate=True, breakdown=True),
    _at_k("exec", _exec_at, 3, junit=True, gate=True),
    _at_k("exec", _exec_at, 5, table="ci", junit=True, gate=True),
    _at_k("exec", _exec_at, 10, table="mean", junit=True, gate=True, breakdown=True),
    _at_k("execp", _execp_at, 1, gate=True),
    _at_k("execp", _execp_at, 3, gate=True),
    _at_k("execp", _execp_at, 5, gate=True),
    _at_k("execp", _execp_at, 10, gate=True),
    _at_k("ndcg", _ndcg_at, 1),
    _at_k("ndcg", _ndcg_at, 3),
    _at_k("ndcg", _ndcg_at, 5),
    _at_k("ndcg", _ndcg_at, 10, table="ci", gate=True),
    MetricSpec("mrr", _mrr, table="mean", gate=True),
)

METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)

# How a junit property shows a metric's value.
JUNIT_FORMAT = ".6g"


def metric_spec(name: str) -> MetricSpec:
    """The :class:`MetricSpec` called ``name``; ``KeyError`` naming the known ones otherwise."""
    for spec in METRICS:
        if spec.name == name:
            return spec
    raise KeyError(f"unknown metric {name!r}; known: {', '.join(METRIC_NAMES)}")


def at_k(family: str) -> tuple[MetricSpec, ...]:
    """The metrics ``<family>@k`` (e.g. ``"exec"``) in :data:`METRICS` order (increasing ``k``)."""
    return tuple(m for m in METRICS if m.k is not None and m.name == f"{family}@{m.k}")


# The cut-offs: the top max(KS) snippets of each query are executed.
KS: tuple[int, ...] = tuple(m.k for m in at_k("exec") if m.k is not None)


def query_metrics(top_passes: Sequence[bool], canonical_rank: int | None) -> dict[str, float]:
    """All of :data:`METRIC_NAMES` for one query ranked without ties.

    ``top_passes``: pass flags of the ranked snippets, best first; at least the top
    ``min(max(KS), pool size)`` must be given (entries beyond ``max(KS)`` are ignored).
    ``canonical_rank``: 1-based rank of the canonical in the full ranking, or ``None``.
    An empty ``top_passes`` (empty pool) scores 0 on ``exec@k`` and ``execp@k``. Each snippet
    is its own tie group, so this is :func:`tie_aware_metrics`' (coinciding) values.
    """
    if canonical_rank is not None and canonical_rank < 1:
        raise ValueError(f"canonical_rank must be >= 1 or None, got {canonical_rank!r}")
    groups = [(1, int(bool(p))) for p in top_passes[: max(KS)]]
    span = None if canonical_rank is None else (canonical_rank, canonical_rank)
    return tie_aware_metrics(groups, span).expected


@dataclass(frozen=True)
class TieAware:
    """One query's metrics under random tie order: expected value and the two bounds."""

    expected: dict[str, float]
    optimistic: dict[str, float]
    pessimistic: dict[str, float]


def tie_groups(
    scores: Sequence[float | tuple], passes: Sequence[bool], tail: tuple[int, int] | None = None
) -> list[tuple[int, int]]:
    """``(size, passing)`` of each tie group of a ranked list, best first.

    Consecutive equal ``scores`` form one group. ``tail`` = ``(size, passing)`` of the whole tie
    group that holds the last listed snippet, counted over the full pool (it may reach below the
    list); ``None`` means the list ends with its group. ``ValueError`` if ``tail`` is smaller
    than the listed part of its group or its passing count is outside ``0..size``.
    """
    groups: list[list[int]] = []
    for i, (score, ok) in enumerate(zip(scores, passes)):
        if i and score == scores[i - 1]:
            groups[-1][0] += 1
            groups[-1][1] += bool(ok)
        else:
            groups.append([1, int(bool(ok))])
    if tail is not None and groups:
        size, passing = tail
        if size < groups[-1][0]:
            listed = tuple(groups[-1])
            raise ValueError(f"tail group {tail} is smaller than its listed part {listed}")
        if not 0 <= passing <= size:
            raise ValueError(f"tail group {tail} must have 0 <= passing <= size")
        groups[-1] = [size, passing]
    return [(n, p) for n, p in groups]


def tie_aware_metrics(groups: Groups, canonical_span: Span) -> TieAware:
    """:data:`METRIC_NAMES` of one query under uniformly random order inside tie groups.

    ``groups``: ``(size, passing)`` per tie group, best first (:func:`tie_groups`), covering
    at least the top ``min(max(KS), pool size)`` positions. ``canonical_span``: the 1-based
    ``(first, last)`` ranks of the canonical's tie group, or ``None`` if unknown (0 on
    ``ndcg@k`` and ``mrr``). Definitions in the module docstring; each value is its
    :class:`MetricSpec`'s ``compute``.
    """
    if canonical_span is not None and not 1 <= canonical_span[0] <= canonical_span[1]:
        raise ValueError(f"canonical span must satisfy 1 <= first <= last, got {canonical_span}")
    values = {m.name: m.compute(groups, canonical_span) for m in METRICS}
    return TieAware(*({name: v[i] for name, v in values.items()} for i in range(3)))


def row_metrics(row: Mapping[str, Any]) -> TieAware:
    """The metrics of one ``per_query`` row of a report JSON (schema_version 1 or 2).

    Version 2 rows carry the tie structure (``top`` scores, ``tail_tie``, ``canonical_tie``);
    version 1 rows do not, so each snippet is its own group (the tie-broken values).
    """
    top = sorted(row["top"], key=lambda h: h["rank"])
    passes = [bool(h["passes"]) for h in top]
    rank = row["canonical_rank"]
    if "canonical_tie" not in row:
        return tie_aware_metrics(
            [(1, int(p)) for p in passes], None if rank is None else (rank, rank)
        )
    tail = row.get("tail_tie")
    # Pipeline rows order by a ``tie_key`` (reranker score, then first-stage score): equal keys tie.
    keys = [h["score"] if h.get("tie_key") is None else tuple(h["tie_key"]) for h in top]
    groups = tie_groups(keys, passes, None if tail is None else (tail["size"], tail["passing"]))
    span = row["canonical_tie"]
    return tie_aware_metrics(groups, None if span is None else (span["first"], span["last"]))


def junit_properties(row: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(name, value)`` of each :data:`METRICS` entry marked ``junit`` for one report row
    (tie-aware expected values, formatted with :data:`JUNIT_FORMAT`)."""
    expected = row_metrics(row).expected
    return [(m.name, format(expected[m.name], JUNIT_FORMAT)) for m in METRICS if m.junit]


def metric_matrix(
    rows: Sequence[Mapping[str, float]], names: Sequence[str] = METRIC_NAMES
) -> np.ndarray:
    """Stack per-query metric dicts into a float array of shape ``(n_queries, len(names))``.

    Columns follow ``names``; extra keys are ignored, a missing one raises ``KeyError``.
    """
    matrix = np.empty((len(rows), len(names)))
    for i, row in enumerate(rows):
        matrix[i] = [row[name] for name in names]
    return matrix


def mean_metrics(matrix: np.ndarray, names: Sequence[str] = METRIC_NAMES) -> dict[str, float]:
    """Macro-average over queries (rows) of a :func:`metric_matrix` with columns ``names``,
    keyed by metric name.

    Raises ``ValueError`` for zero queries (no vacuous mean) or a wrong shape.
    """
    matrix = np.asarray(matrix)
    if matrix.ndim != 2 or matrix.shape[1] != len(names):
        raise ValueError(f"expected shape (n, {len(names)}), got {matrix.shape}")
    if matrix.shape[0] == 0:
        raise ValueError("cannot average metrics over zero queries")
    means = matrix.mean(axis=0)
    return {name: float(v) for name, v in zip(names, means)}
