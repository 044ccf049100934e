"""What an indexed pipeline ``<embedder>@<SPEC>`` (run by :func:`.pipelines.run_pipeline`)
lost against the exact run, per query, as only the ranking knows it (the index's candidates);
:mod:`..scoring.serving_cost` sums the figures per operator class.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..corpus.items import BenchmarkItem
from ..records import CANONICAL, BenchmarkRun

__all__ = ["index_figures"]


def index_figures(
    exact: BenchmarkRun,
    items: Sequence[BenchmarkItem],
    snippet_ids: Sequence[str],
    candidates: np.ndarray,
) -> dict[str, dict]:
    """Per query (``items`` in ranking order, ``candidates`` their pool positions): the share of
    the exact run's listed top 10 among the candidates, and whether the index dropped the
    canonical from the candidates although the exact ranking listed it in its top 10."""
    figures = {}
    for item, row in zip(items, candidates):
        found = {snippet_ids[i] for i in row if i >= 0}
        top = exact.results[item.id].top
        canonical = [h.snippet_id for h in top if h.kind == CANONICAL and h.query_id == item.id]
        figures[item.id] = {
            "recall@10": sum(h.snippet_id in found for h in top) / max(1, len(top)),
            "canonical_dropped": any(c not in found for c in canonical),
        }
    return figures
