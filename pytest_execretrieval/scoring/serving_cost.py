"""What a serving choice costs the benchmark's question against the pipeline it replaces (an
approximate index against exact ranking, stored codes or a runtime backend against the float32
torch model), from the two reports and, where only the ranking knows them, per-query figures:

* ``recall@10``: the share of the reference's listed top 10 that the served pipeline still has
  (an index: among its candidates, ``ranking/indexed.py``; otherwise: in its own top 10);
* ``canonical_dropped``: the share of queries whose canonical the reference listed in its top
  10 and the served pipeline lost (an index: from its candidates; otherwise: from its top 10);
* ``mutant_first``: how often the served rank 1 is one of the query's own mutants where the
  reference's rank 1 was not (does the serving choice prefer the mutant, or just lose the
  canonical?);
* ``exec@1`` and ``exec@10``: the tie-aware means before and after, their difference and the
  paired test (:func:`.compare.paired_test`);

overall and per operator class (the queries with an own distractor of that class, as in
:func:`.lift.lift`). The report's ``lift`` has the same comparison with bootstrap intervals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..records import CANONICAL, DISTRACTOR, ReportRow
from .analyses import operator_order
from .compare import paired_queries, paired_test
from .metrics import METRIC_NAMES, metric_matrix, row_metrics

__all__ = ["serving_cost", "top10_figures"]

COMPARED = ("exec@1", "exec@10")


def _mutant_first(row: ReportRow, operator: str | None = None) -> bool:
    """Whether ``row``'s rank 1 is one of its query's own distractors (of ``operator``)."""
    first = row["top"][0] if row["top"] else None
    return (
        first is not None
        and first["kind"] == DISTRACTOR
        and first["query_id"] == row["query_id"]
        and operator in (None, first["operator"])
    )


def top10_figures(reference: dict, served: dict) -> dict[str, dict]:
    """Per query: the share of the reference's listed top 10 in the served top 10, and whether
    the served top 10 lost the canonical the reference listed."""
    qa, qb = paired_queries(reference, served)
    figures = {}
    for a, b in zip(qa, qb):
        kept = {h["snippet_id"] for h in b["top"]}
        canonical = [
            h["snippet_id"]
            for h in a["top"]
            if h["kind"] == CANONICAL and h["query_id"] == a["query_id"]
        ]
        figures[a["query_id"]] = {
            "recall@10": sum(h["snippet_id"] in kept for h in a["top"]) / max(1, len(a["top"])),
            "canonical_dropped": any(c not in kept for c in canonical),
        }
    return figures


def _exec(qa: Sequence[ReportRow], qb: Sequence[ReportRow], idx: Sequence[int], seed: int) -> dict:
    columns = [METRIC_NAMES.index(m) for m in COMPARED]
    a = metric_matrix([row_metrics(qa[i]).expected for i in idx])[:, columns]
    b = metric_matrix([row_metrics(qb[i]).expected for i in idx])[:, columns]
    out = {}
    for j, metric in enumerate(COMPARED):
        test = paired_test(a[:, j], b[:, j], seed) if len(idx) else {"p_value": 1.0, "test": ""}
        out[metric] = {
            "before": float(np.mean(a[:, j])) if len(idx) else 0.0,
            "after": float(np.mean(b[:, j])) if len(idx) else 0.0,
            "difference": float(np.mean(b[:, j] - a[:, j])) if len(idx) else 0.0,
            "p": test["p_value"],
            "test": test["test"],
        }
    return out


def _group(
    reference: Sequence[ReportRow],
    served: Sequence[ReportRow],
    figures: Mapping[str, dict],
    idx: Sequence[int],
    seed: int,
    operator: str | None = None,
) -> dict:
    n = max(1, len(idx))
    rows = [figures[reference[i]["query_id"]] for i in idx]
    promoted = sum(
        _mutant_first(served[i], operator) and not _mutant_first(reference[i], operator)
        for i in idx
    )
    dropped = sum(f["canonical_dropped"] for f in rows)
    return {
        "n": len(idx),
        "recall@10": sum(f["recall@10"] for f in rows) / n,
        "canonical_dropped": dropped / n,
        "canonical_dropped_n": dropped,
        "mutant_first": promoted / n,
        "mutant_first_n": promoted,
        **_exec(reference, served, idx, seed),
    }


def _has_own(row: ReportRow, operator: str) -> bool:
    return any(d["operator"] == operator for d in row.get("own_distractors") or [])


def serving_cost(
    reference: dict, served: dict, figures: Mapping[str, dict] | None = None, seed: int = 0
) -> dict:
    """The figures over the queries both reports ran (module docstring); ``figures``: per
    query id ``recall@10`` and ``canonical_dropped`` as only the ranking knows them (an
    index's candidates), by default :func:`top10_figures`. ``by_operator`` in the mutation
    table's order of the classes."""
    qa, qb = paired_queries(reference, served)
    figures = top10_figures(reference, served) if figures is None else figures
    everyone = list(range(len(qa)))
    classes = operator_order(
        d["operator"] for q in reference["per_query"] for d in q.get("own_distractors") or []
    )
    by_operator = {
        c: _group(qa, qb, figures, idx, seed, c)
        for c in classes
        if (idx := [i for i, q in enumerate(qa) if _has_own(q, c)])
    }
    return {**_group(qa, qb, figures, everyone, seed), "by_operator": by_operator}
