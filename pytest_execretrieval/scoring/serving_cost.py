"""What an approximate index costs the benchmark's question, from the exact report, the indexed
report and the per-query figures only the ranking knows (``ranking/indexed.py``): the index's
recall of the exact top 10, the share of queries whose canonical it dropped from the candidates
while the exact ranking listed it in its top 10, and how often the index's rank 1 is one of the
query's own mutants where the exact rank 1 was not (does approximation prefer the mutant, or
just lose the canonical?); overall and per operator class (the queries with an own distractor
of that class, as in :func:`.lift.lift`). exec@1 and exec@10 against exact, with their paired
tests, are the report's ``lift``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..records import DISTRACTOR, ReportRow
from .analyses import operator_order
from .compare import paired_queries

__all__ = ["index_cost"]


def _mutant_first(row: ReportRow, operator: str | None = None) -> bool:
    """Whether ``row``'s rank 1 is one of its query's own distractors (of ``operator``)."""
    first = row["top"][0] if row["top"] else None
    return (
        first is not None
        and first["kind"] == DISTRACTOR
        and first["query_id"] == row["query_id"]
        and operator in (None, first["operator"])
    )


def _group(
    exact: Sequence[ReportRow],
    indexed: Sequence[ReportRow],
    figures: Mapping[str, dict],
    idx: Sequence[int],
    operator: str | None = None,
) -> dict:
    n = max(1, len(idx))
    rows = [figures[exact[i]["query_id"]] for i in idx]
    promoted = sum(
        _mutant_first(indexed[i], operator) and not _mutant_first(exact[i], operator) for i in idx
    )
    dropped = sum(f["canonical_dropped"] for f in rows)
    return {
        "n": len(idx),
        "recall@10": sum(f["recall@10"] for f in rows) / n,
        "canonical_dropped": dropped / n,
        "canonical_dropped_n": dropped,
        "mutant_first": promoted / n,
        "mutant_first_n": promoted,
    }


def _has_own(row: ReportRow, operator: str) -> bool:
    return any(d["operator"] == operator for d in row.get("own_distractors") or [])


def index_cost(exact: dict, indexed: dict, figures: Mapping[str, dict]) -> dict:
    """The figures over the queries both reports ran (module docstring); ``by_operator`` in the
    mutation table's order of the classes."""
    qa, qb = paired_queries(exact, indexed)
    everyone = list(range(len(qa)))
    classes = operator_order(
        d["operator"] for q in exact["per_query"] for d in q.get("own_distractors") or []
    )
    by_operator = {
        c: _group(qa, qb, figures, idx, c)
        for c in classes
        if (idx := [i for i, q in enumerate(qa) if _has_own(q, c)])
    }
    return {**_group(qa, qb, figures, everyone), "by_operator": by_operator}
