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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["KS", "METRIC_NAMES", "mean_metrics", "metric_matrix", "query_metrics"]

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
