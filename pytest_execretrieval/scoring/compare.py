"""Paired comparison of report JSONs (schema_version 1 or 2) and the upgrade gate.

Two reports are comparable when they were run on the same corpus (``corpus.sha256``) over the
same query ids; queries are then paired by id.  Per-query metrics are recomputed from each row
with :func:`.metrics.row_metrics` (tie-aware expected values for version 2
rows; version 1 rows carry no ties and keep their tie-broken values).  Differences are always
``b - a`` (candidate minus baseline).

Reports written by different versions may carry different metrics: a comparison covers the
metrics of :data:`.metrics.METRICS` that every report carries (:func:`shared_metrics`) and names
the others as skipped.

Significance per metric: when both systems' per-query values are all 0 or 1 (exec@k without
ties), the exact McNemar test; otherwise (tie-expected exec@k, execp@k, nDCG, MRR) the paired
randomization (sign-flip) test with :data:`N_PERMUTATIONS` seeded sign vectors, as recommended
for IR evaluation (Smucker, Allan & Carterette, CIKM 2007).

The upgrade gate built on these comparisons is :mod:`.gate`; their tables are
``reporting/comparison.py``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..bounded_json import JSONBoundError, read_json
from ..records import FLIP_DIRECTIONS, Flip, Rank1, ReportRow
from .metrics import METRIC_NAMES, mean_metrics, metric_matrix, row_metrics
from .stats import (
    detectable_difference,
    mcnemar_exact,
    paired_bootstrap_diff_ci,
    queries_needed,
    sign_flip_test,
)

POWER = 0.8
MAX_DETECTABLE = 0.10  # the largest smallest-detectable drop a harm-mode gate may decide with
ALPHA = 0.05  # the level of compare's own power statement (two-sided, one metric)

__all__ = [
    "N_PERMUTATIONS",
    "N_RESAMPLES",
    "ComparisonError",
    "ReportError",
    "beside_first_stage",
    "comparison_rows",
    "flips",
    "invocation_differences",
    "load_report",
    "paired_comparison",
    "paired_queries",
    "paired_test",
    "report_names",
    "same_corpus",
    "shared_metrics",
    "skipped_line",
]

N_RESAMPLES = 5000
N_PERMUTATIONS = 10_000
SCHEMA_VERSIONS = (1, 2)
_REQUIRED_KEYS = ("embedder", "corpus", "metrics", "ci95", "per_query")


class ComparisonError(ValueError):
    """Reports that cannot be compared (different corpus or queries, no queries)."""


class ReportError(ValueError):
    """A file that is not a readable report (schema_version 1 or 2)."""


def load_report(path: str | Path) -> dict:
    """Read and minimally validate a report JSON; ``ReportError`` says why it is not one."""
    try:
        data = read_json(path)
    except JSONBoundError as exc:
        raise ReportError(f"cannot read a JSON report: {exc}") from None
    if data.get("schema_version") not in SCHEMA_VERSIONS:
        raise ReportError(f"{path}: not an ExecRetrieval report with schema_version 1 or 2")
    missing = [k for k in _REQUIRED_KEYS if k not in data]
    if missing:
        raise ReportError(f"{path}: report lacks {', '.join(missing)}")
    return data


def report_names(reports: Sequence[dict]) -> list[str]:
    """Display names (``embedder.name``), a repeated name suffixed `` (2)``, `` (3)``, ..."""
    names: list[str] = []
    for i, r in enumerate(reports):
        base = str(r.get("embedder", {}).get("name") or f"report {i + 1}")
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base} ({n})"
        names.append(name)
    return names


def shared_metrics(reports: Sequence[dict]) -> tuple[tuple[str, ...], dict[str, str]]:
    """The metrics that can be compared across ``reports`` and why the others cannot.

    Returns the names of :data:`.metrics.METRIC_NAMES` (in that order) that every report
    carries in both ``metrics`` and ``ci95``, and ``{metric: reason}`` for every other metric
    that this version defines or some report carries (``"not in <names>"`` or ``"unknown to
    this version of pytest-execretrieval"``): an older report lacks a newer metric, a newer one
    may carry a metric this version does not know.
    """
    have = [set(r["metrics"]) & set(r["ci95"]) for r in reports]
    shared = tuple(m for m in METRIC_NAMES if all(m in h for h in have))
    names = report_names(reports)
    skipped: dict[str, str] = {}
    extra = sorted(set().union(*have) - set(METRIC_NAMES))
    for m in [*METRIC_NAMES, *extra]:
        if m in shared:
            continue
        if m not in METRIC_NAMES:
            skipped[m] = "unknown to this version of pytest-execretrieval"
        else:
            skipped[m] = "not in " + ", ".join(n for n, h in zip(names, have) if m not in h)
    return shared, skipped


def skipped_line(skipped: Mapping[str, str]) -> str:
    return "Metrics not compared: " + "; ".join(f"{m} ({why})" for m, why in skipped.items())


def _by_query(report: dict) -> dict[str, ReportRow]:
    return {q["query_id"]: q for q in report["per_query"]}


def _rows(queries: Sequence[ReportRow], names: Sequence[str] = METRIC_NAMES) -> np.ndarray:
    """The per-query values (rows) of metrics ``names`` (columns), recomputed from the rows."""
    return metric_matrix([row_metrics(q).expected for q in queries], names)


def same_corpus(a: dict, b: dict) -> None:
    """Raise :class:`ComparisonError` unless both reports were run on the same corpus."""
    sha_a, sha_b = a["corpus"]["sha256"], b["corpus"]["sha256"]
    if sha_a != sha_b:
        raise ComparisonError(
            f"reports were run on different corpora: {report_names([a])[0]} has corpus sha256 "
            f"{sha_a}, {report_names([b])[0]} has {sha_b}"
        )


def flips(baseline: dict, candidate: dict) -> tuple[Flip, ...]:
    """The queries of both reports (same corpus, else :class:`ComparisonError`) whose rank 1
    passes in one and fails in the other (``passed``: a tie of passing and failing snippets at
    rank 1 fails), with what each report put at rank 1: the candidate's regressions
    (``pass->fail``) first, then its fixes (``fail->pass``), each by query id. Queries only one
    report covers are no flips (a gate names those the baseline lacks)."""
    same_corpus(baseline, candidate)
    base = _by_query(baseline)
    found = []
    for row in sorted(candidate["per_query"], key=lambda q: q["query_id"]):
        before = base.get(row["query_id"])
        if before is None or bool(before["passed"]) == bool(row["passed"]):
            continue
        found.append(
            Flip(
                row["query_id"],
                row["domain"],
                FLIP_DIRECTIONS[0] if before["passed"] else FLIP_DIRECTIONS[1],
                Rank1.of_row(row),
                Rank1.of_row(before),
            )
        )
    return tuple(sorted(found, key=lambda f: FLIP_DIRECTIONS.index(f.direction)))


def paired_queries(
    a: dict, b: dict, across_pools: bool = False
) -> tuple[list[ReportRow], list[ReportRow]]:
    """The two reports' per-query rows, paired by query id (sorted); raises if not comparable.
    ``across_pools``: the same queries over two pools (a corpus variant against the star corpus
    of the same items) are comparable too; every command compares one corpus's reports only."""
    if not across_pools:
        same_corpus(a, b)
    qa, qb = _by_query(a), _by_query(b)
    if qa.keys() != qb.keys():
        only_a, only_b = sorted(qa.keys() - qb.keys()), sorted(qb.keys() - qa.keys())
        example = (only_a or only_b)[0]
        raise ComparisonError(
            f"reports cover different queries: {len(only_a) + len(only_b)} query id(s) differ "
            f"({len(only_a)} only in the first, {len(only_b)} only in the second; e.g. {example})"
        )
    if not qa:
        raise ComparisonError("reports have zero queries: nothing to compare")
    ids = sorted(qa)
    return [qa[i] for i in ids], [qb[i] for i in ids]


def paired_test(a: np.ndarray, b: np.ndarray, seed: int = 0) -> dict:
    """The significance test of one metric's paired per-query values (see the module docstring):
    ``{"test": "mcnemar" | "sign-flip", "p_value", "only_a", "only_b"}`` (the counts of queries
    where one system is better)."""
    binary = bool(np.isin(a, (0.0, 1.0)).all() and np.isin(b, (0.0, 1.0)).all())
    if binary:
        test = mcnemar_exact(a > 0, b > 0)
        return {
            "test": "mcnemar",
            "p_value": test.p_value,
            "only_a": test.only_a,
            "only_b": test.only_b,
        }
    return {
        "test": "sign-flip",
        "p_value": sign_flip_test(b - a, N_PERMUTATIONS, seed),
        "only_a": int(np.count_nonzero(a > b)),
        "only_b": int(np.count_nonzero(b > a)),
    }


def paired_comparison(
    a: dict,
    b: dict,
    seed: int = 0,
    metrics: Sequence[str] | None = None,
    across_pools: bool = False,
) -> dict:
    """Paired comparison of report ``b`` against report ``a`` (differences ``b - a``).

    Returns ``{"a", "b" (names), "n_queries", "seed", "n_resamples", "metrics": {name: {"a",
    "b", "difference", "ci95": [low, high], "test", "p_value", "only_a", "only_b", "detectable",
    "needed"}},
    "skipped": {name: reason}}``.  ``metrics``: the metrics to compare (default: the two
    reports' :func:`shared_metrics`; ``skipped`` then says why the others are not compared).
    ``ci95`` is the paired query-level percentile bootstrap
    (:func:`pytest_execretrieval.scoring.stats.paired_bootstrap_diff_ci`, :data:`N_RESAMPLES`
    resamples, ``seed``); the test is :func:`paired_test`.  Raises :class:`ComparisonError`
    for different corpora (unless ``across_pools``: see :func:`paired_queries`), different
    query ids, zero queries or no metric to compare.
    """
    qa, qb = paired_queries(a, b, across_pools)
    shared, skipped = shared_metrics([a, b])
    names = tuple(shared if metrics is None else metrics)
    if not names:
        raise ComparisonError(f"the reports share no metric to compare ({skipped_line(skipped)})")
    ma, mb = _rows(qa, names), _rows(qb, names)
    compared = {
        name: row | power_statement(len(ma), float(np.mean((mb[:, j] - ma[:, j]) ** 2)))
        for j, (name, row) in enumerate(comparison_rows(ma, mb, names, seed).items())
    }
    labels = report_names([a, b])
    return {
        "a": labels[0],
        "b": labels[1],
        "n_queries": len(qa),
        "seed": seed,
        "n_resamples": N_RESAMPLES,
        "metrics": compared,
        "skipped": {m: why for m, why in skipped.items() if m not in names},
    }


def comparison_rows(
    ma: np.ndarray, mb: np.ndarray, names: Sequence[str], seed: int = 0
) -> dict[str, dict]:
    """The ``metrics`` of :func:`paired_comparison` from paired per-query values (rows: the
    same queries; columns: ``names``)."""
    mean_a, mean_b = mean_metrics(ma, names), mean_metrics(mb, names)
    ci = paired_bootstrap_diff_ci(ma, mb, n_resamples=N_RESAMPLES, seed=seed)
    return {
        name: {
            "a": mean_a[name],
            "b": mean_b[name],
            "difference": mean_b[name] - mean_a[name],
            "ci95": [float(ci[j, 0]), float(ci[j, 1])],
            **paired_test(ma[:, j], mb[:, j], seed),
        }
        for j, name in enumerate(names)
    }


def power_statement(n: int, second_moment: float) -> dict[str, float | int | None]:
    """What ``n`` paired queries can detect: ``detectable``, the smallest drop a two-sided
    level-:data:`ALPHA` test finds with :data:`POWER`, and ``needed``, the queries a drop of
    :data:`MAX_DETECTABLE` would take when these cannot (else ``None``); the gate's own
    statement uses its alpha and bound (:mod:`.gate`)."""
    return {
        "detectable": detectable_difference(n, second_moment, ALPHA, POWER),
        "needed": queries_needed(n, second_moment, ALPHA, MAX_DETECTABLE, POWER),
    }


def invocation_differences(baseline: dict, candidate: dict) -> list[str]:
    """What differs between two reports' embedder invocations, as ``key: a -> b`` lines."""

    def flat(d: Mapping, prefix: str = "") -> dict[str, object]:
        out: dict[str, object] = {}
        for key, value in d.items():
            if isinstance(value, Mapping):
                out |= flat(value, f"{prefix}{key}.")
            else:
                out[f"{prefix}{key}"] = value
        return out

    a, b = flat(baseline.get("embedder", {})), flat(candidate.get("embedder", {}))
    return [
        f"{k}: {a.get(k, '(none)')} -> {b.get(k, '(none)')}"
        for k in sorted(a.keys() | b.keys())
        if a.get(k) != b.get(k)
    ]


def beside_first_stage(reports: Sequence[dict]) -> list[dict]:
    """``reports`` in their order, except that each pipeline report (one with ``first_stage``)
    follows its first stage's report when that is among them."""
    names = report_names(reports)
    out: list[dict] = []
    placed: set[int] = set()
    for i, r in enumerate(reports):
        if i in placed or r.get("first_stage") in names[:i] + names[i + 1 :]:
            continue
        out.append(r)
        placed.add(i)
        for j, p in enumerate(reports):
            if j not in placed and p.get("first_stage") == names[i]:
                out.append(p)
                placed.add(j)
    return out + [r for i, r in enumerate(reports) if i not in placed]
