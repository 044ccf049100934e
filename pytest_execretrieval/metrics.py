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
:data:`pytest_execretrieval.retrieval.DECIMALS` decimals for every embedder), and snippets with
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

Without ties all three coincide with :func:`query_metrics`. A query *passes* (its pytest item)
only when every snippet of the rank-1 tie group passes: a tie between a passing and a failing
snippet is a failure, since the model cannot tell them apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "KS",
    "METRIC_NAMES",
    "TieAware",
    "mean_metrics",
    "metric_matrix",
    "query_metrics",
    "row_metrics",
    "tie_aware_metrics",
    "tie_groups",
]

KS: tuple[int, ...] = (1, 3, 5, 10)

METRIC_NAMES: tuple[str, ...] = (
    *(f"exec@{k}" for k in KS),
    *(f"execp@{k}" for k in KS),
    *(f"ndcg@{k}" for k in KS),
    "mrr",
)


def query_metrics(top_passes: Sequence[bool], canonical_rank: int | None) -> dict[str, float]:
    """All of :data:`METRIC_NAMES` for one query.

    ``top_passes``: pass flags of the ranked snippets, best first; at least the top
    ``min(max(KS), pool size)`` must be given (entries beyond ``max(KS)`` are ignored).
    ``canonical_rank``: 1-based rank of the canonical in the full ranking, or ``None``.
    An empty ``top_passes`` (empty pool) scores 0 on ``exec@k`` and ``execp@k``.
    """
    if canonical_rank is not None and canonical_rank < 1:
        raise ValueError(f"canonical_rank must be >= 1 or None, got {canonical_rank!r}")
    passes = [bool(p) for p in top_passes[: max(KS)]]
    out: dict[str, float] = {}
    for k in KS:
        top = passes[:k]
        out[f"exec@{k}"] = float(any(top))
        out[f"execp@{k}"] = sum(top) / len(top) if top else 0.0
    for k in KS:
        hit = canonical_rank is not None and canonical_rank <= k
        out[f"ndcg@{k}"] = 1.0 / math.log2(canonical_rank + 1) if hit else 0.0
    out["mrr"] = 0.0 if canonical_rank is None else 1.0 / canonical_rank
    return out


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
    list); ``None`` means the list ends with its group.
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
        if size < groups[-1][0] or not 0 <= passing <= size:
            raise ValueError(f"tail group {tail} is smaller than its listed part {groups[-1]}")
        groups[-1] = [size, passing]
    return [(n, p) for n, p in groups]


def _none_pass(n: int, p: int, m: int) -> float:
    """P(no passing snippet among ``m`` drawn without replacement from ``n`` with ``p`` passing)."""
    return math.comb(n - p, m) / math.comb(n, m)


def _harmonic_span(first: int, last: int) -> float:
    """``sum(1 / r for r in first..last)``; an asymptotic expansion for very long spans."""
    if last - first < 100_000:
        return math.fsum(1.0 / r for r in range(first, last + 1))

    def h(n: int) -> float:  # H(n), error below 1e-18 for n >= 1e5
        return math.log(n) + 0.5772156649015329 + 1 / (2 * n) - 1 / (12 * n * n)

    return h(last) - h(first - 1)


def tie_aware_metrics(
    groups: Sequence[tuple[int, int]], canonical_span: tuple[int, int] | None
) -> TieAware:
    """:data:`METRIC_NAMES` of one query under uniformly random order inside tie groups.

    ``groups``: ``(size, passing)`` per tie group, best first (:func:`tie_groups`), covering
    at least the top ``min(max(KS), pool size)`` positions. ``canonical_span``: the 1-based
    ``(first, last)`` ranks of the canonical's tie group, or ``None`` if unknown (0 on
    ``ndcg@k`` and ``mrr``). Definitions in the module docstring.
    """
    if canonical_span is not None and not 1 <= canonical_span[0] <= canonical_span[1]:
        raise ValueError(f"canonical span must satisfy 1 <= first <= last, got {canonical_span}")
    exp: dict[str, float] = {}
    opt: dict[str, float] = {}
    pes: dict[str, float] = {}
    ranked = sum(n for n, _ in groups)
    for k in KS:
        none_pass, any_opt, any_pes = 1.0, False, False
        hits_exp, hits_opt, hits_pes = 0.0, 0, 0
        start = 0
        for n, p in groups:
            if start >= k:
                break
            m = min(n, k - start)
            none_pass *= _none_pass(n, p, m)
            any_opt |= p > 0
            any_pes |= n - p < m
            hits_exp += m * p / n
            hits_opt += min(m, p)
            hits_pes += max(0, m - (n - p))
            start += n
        depth = min(k, ranked)
        exp[f"exec@{k}"], opt[f"exec@{k}"], pes[f"exec@{k}"] = (
            1.0 - none_pass if depth else 0.0, float(any_opt), float(any_pes))  # fmt: skip
        for out, hits in ((exp, hits_exp), (opt, hits_opt), (pes, hits_pes)):
            out[f"execp@{k}"] = hits / depth if depth else 0.0
    for k in KS:
        if canonical_span is None:
            values = (0.0, 0.0, 0.0)
        else:
            first, last = canonical_span
            gain = [1.0 / math.log2(r + 1) for r in range(first, min(last, k) + 1)]
            values = (math.fsum(gain) / (last - first + 1), gain[0] if gain else 0.0,
                      1.0 / math.log2(last + 1) if last <= k else 0.0)  # fmt: skip
        exp[f"ndcg@{k}"], opt[f"ndcg@{k}"], pes[f"ndcg@{k}"] = values
    if canonical_span is None:
        exp["mrr"] = opt["mrr"] = pes["mrr"] = 0.0
    else:
        first, last = canonical_span
        exp["mrr"] = _harmonic_span(first, last) / (last - first + 1)
        opt["mrr"], pes["mrr"] = 1.0 / first, 1.0 / last
    order = list(METRIC_NAMES)
    return TieAware(*({m: d[m] for m in order} for d in (exp, opt, pes)))


def row_metrics(row: Mapping) -> TieAware:
    """The metrics of one ``per_query`` row of a report JSON (schema_version 1 or 2).

    Version 2 rows carry the tie structure (``top`` scores, ``tail_tie``, ``canonical_tie``);
    version 1 rows do not, so each snippet is its own group (the tie-broken values).
    """
    top = sorted(row["top"], key=lambda h: h["rank"])
    passes = [bool(h["passes"]) for h in top]
    rank = row["canonical_rank"]
    if "canonical_tie" not in row:
        return tie_aware_metrics([(1, int(p)) for p in passes],
                                 None if rank is None else (rank, rank))  # fmt: skip
    tail = row.get("tail_tie")
    # Pipeline rows order by a ``tie_key`` (reranker score, then first-stage score): equal keys tie.
    keys = [h["score"] if h.get("tie_key") is None else tuple(h["tie_key"]) for h in top]
    groups = tie_groups(keys, passes,
                        None if tail is None else (tail["size"], tail["passing"]))  # fmt: skip
    span = row["canonical_tie"]
    return tie_aware_metrics(groups, None if span is None else (span["first"], span["last"]))


def metric_matrix(rows: Sequence[Mapping[str, float]]) -> np.ndarray:
    """Stack per-query metric dicts into a float array of shape ``(n_queries, len(METRIC_NAMES))``.

    Columns follow :data:`METRIC_NAMES`; extra keys are ignored, a missing one raises ``KeyError``.
    """
    matrix = np.empty((len(rows), len(METRIC_NAMES)))
    for i, row in enumerate(rows):
        matrix[i] = [row[name] for name in METRIC_NAMES]
    return matrix


def mean_metrics(matrix: np.ndarray) -> dict[str, float]:
    """Macro-average over queries (rows) of a :func:`metric_matrix`, keyed by metric name.

    Raises ``ValueError`` for zero queries (no vacuous mean) or a wrong shape.
    """
    matrix = np.asarray(matrix)
    if matrix.ndim != 2 or matrix.shape[1] != len(METRIC_NAMES):
        raise ValueError(f"expected shape (n, {len(METRIC_NAMES)}), got {matrix.shape}")
    if matrix.shape[0] == 0:
        raise ValueError("cannot average metrics over zero queries")
    means = matrix.mean(axis=0)
    return {name: float(v) for name, v in zip(METRIC_NAMES, means)}
