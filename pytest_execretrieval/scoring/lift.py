"""The rank-1 lift of a retrieve-then-rerank pipeline over its first stage: a paired comparison
of their two reports on the same queries (its sentences: ``reporting/lift_text.py``).

Per metric, pipeline minus first stage with the paired bootstrap CI and test of
:func:`.compare.paired_comparison`; for exec@1 also the exact McNemar test on the per-query
pass/fail of the pytest items (a tie at rank 1 fails), and the same figures per domain and per
operator class (queries with an own distractor of that class, as in :func:`.analyses.per_operator`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..records import GroupLift, Lift, LiftMetric, McNemarLift, ReportRow
from .analyses import operator_order
from .compare import paired_comparison, paired_queries, paired_test
from .metrics import METRIC_NAMES, metric_matrix, row_metrics
from .stats import mcnemar_exact, paired_bootstrap_diff_ci

__all__ = ["group_lift", "lift"]


def _mcnemar(qa: Sequence[ReportRow], qb: Sequence[ReportRow]) -> McNemarLift:
    strict = mcnemar_exact([q["passed"] for q in qa], [q["passed"] for q in qb])
    return McNemarLift(
        only_first_stage=strict.only_a, only_pipeline=strict.only_b, p=strict.p_value
    )


def group_lift(
    qa: Sequence[ReportRow], qb: Sequence[ReportRow], idx: Sequence[int], seed: int
) -> GroupLift:
    """The exec@1 lift over the paired queries at positions ``idx`` (one domain or class)."""
    j = METRIC_NAMES.index("exec@1")
    a = metric_matrix([row_metrics(qa[i]).expected for i in idx])[:, j]
    b = metric_matrix([row_metrics(qb[i]).expected for i in idx])[:, j]
    lo, hi = paired_bootstrap_diff_ci(a, b, n_resamples=2000, seed=seed)
    test = paired_test(a, b, seed)
    return GroupLift(
        n=len(idx),
        before=float(a.mean()),
        after=float(b.mean()),
        difference=float(b.mean() - a.mean()),
        ci95=[float(lo), float(hi)],
        p=test["p_value"],
        test=test["test"],
        mcnemar_passed=_mcnemar([qa[i] for i in idx], [qb[i] for i in idx]),
    )


def _has_own(q: ReportRow, operator: str) -> bool:
    return any(d["operator"] == operator for d in q.get("own_distractors") or [])


def lift(first_stage: dict, pipeline: dict, seed: int = 0) -> Lift:
    """The rank-1 lift of ``pipeline`` over ``first_stage`` (two reports on the same queries).

    ``metrics``: per metric ``{difference, ci95, p, test, before, after}`` (pipeline minus first
    stage); ``exec@1_mcnemar``: the exact McNemar test on the pytest items' pass/fail
    (``only_first_stage``, ``only_pipeline``, ``p``); ``by_domain`` and ``by_operator``: the
    exec@1 figures per domain and per operator class."""
    cmp = paired_comparison(first_stage, pipeline, seed=seed)
    qa, qb = paired_queries(first_stage, pipeline)
    domains: dict[str, list[int]] = {}
    for i, q in enumerate(qa):
        domains.setdefault(q["domain"], []).append(i)
    classes = operator_order(
        d["operator"] for q in first_stage["per_query"] for d in q.get("own_distractors") or []
    )
    metrics = {
        m: LiftMetric(
            difference=c["difference"],
            ci95=c["ci95"],
            p=c["p_value"],
            test=c["test"],
            before=c["a"],
            after=c["b"],
        )
        for m, c in cmp["metrics"].items()
    }
    by_operator = {
        c: group_lift(qa, qb, idx, seed)
        for c in classes
        if (idx := [i for i, q in enumerate(qa) if _has_own(q, c)])
    }
    return {
        "first_stage": cmp["a"],
        "n_queries": cmp["n_queries"],
        "metrics": metrics,
        "exec@1_mcnemar": _mcnemar(qa, qb),
        "by_domain": {d: group_lift(qa, qb, idx, seed) for d, idx in sorted(domains.items())},
        "by_operator": by_operator,
    }
