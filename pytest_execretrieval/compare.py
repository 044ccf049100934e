"""Paired comparison of report JSONs (schema_version 1) and the regression gate.

Two reports are comparable when they were run on the same corpus (``corpus.sha256``) over the
same query ids; queries are then paired by id.  Per-query metric rows are recomputed from each
query's ``top`` pass flags and ``canonical_rank`` with
:func:`pytest_execretrieval.metrics.query_metrics`, so ``exec@k`` of a query is "any of its top k
passes".  Differences are always ``b - a`` (candidate minus baseline).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tabulate import tabulate

from .metrics import KS, METRIC_NAMES, mean_metrics, metric_matrix, query_metrics
from .stats import mcnemar_exact, paired_bootstrap_diff_ci

__all__ = [
    "N_RESAMPLES",
    "ComparisonError",
    "ReportError",
    "compare_reports",
    "gate_decision",
    "load_report",
    "main_compare",
    "paired_comparison",
    "report_names",
]

N_RESAMPLES = 5000
_REQUIRED_KEYS = ("embedder", "corpus", "metrics", "ci95", "per_query")


class ComparisonError(ValueError):
    """Reports that cannot be compared (different corpus or queries, no queries)."""


class ReportError(ValueError):
    """A file that is not a readable schema_version 1 report."""


def load_report(path: str | Path) -> dict:
    """Read and minimally validate a report JSON; ``ReportError`` says why it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: cannot read a JSON report ({exc})") from exc
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise ReportError(f"{path}: not an ExecRetrieval report with schema_version 1")
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


def _by_query(report: dict) -> dict[str, dict]:
    return {q["query_id"]: q for q in report["per_query"]}


def _rows(queries: Sequence[dict]) -> np.ndarray:
    return metric_matrix([
        query_metrics([h["passes"] for h in sorted(q["top"], key=lambda h: h["rank"])],
                      q["canonical_rank"])
        for q in queries
    ])  # fmt: skip


def _paired_queries(a: dict, b: dict) -> tuple[list[dict], list[dict]]:
    """The two reports' per-query rows, paired by query id (sorted); raises if not comparable."""
    sha_a, sha_b = a["corpus"]["sha256"], b["corpus"]["sha256"]
    if sha_a != sha_b:
        raise ComparisonError(
            f"reports were run on different corpora: {report_names([a])[0]} has corpus sha256 "
            f"{sha_a}, {report_names([b])[0]} has {sha_b}"
        )
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


def paired_comparison(a: dict, b: dict, seed: int = 0) -> dict:
    """Paired comparison of report ``b`` against report ``a`` (differences ``b - a``).

    Returns ``{"a", "b" (names), "n_queries", "seed", "n_resamples", "metrics": {name: {"a",
    "b", "difference", "ci95": [low, high]}}, "mcnemar": {"exec@k": {"only_a", "only_b",
    "p_value", "difference"}}}``.  ``ci95`` is the paired query-level percentile bootstrap
    (:func:`pytest_execretrieval.stats.paired_bootstrap_diff_ci`, :data:`N_RESAMPLES`
    resamples, ``seed``); the McNemar test is exact (two-sided) on the per-query ``exec@k``
    flags, for k in :data:`pytest_execretrieval.metrics.KS`.  Raises :class:`ComparisonError`
    for different corpora, different query ids or zero queries.
    """
    qa, qb = _paired_queries(a, b)
    ma, mb = _rows(qa), _rows(qb)
    mean_a, mean_b = mean_metrics(ma), mean_metrics(mb)
    ci = paired_bootstrap_diff_ci(ma, mb, n_resamples=N_RESAMPLES, seed=seed)
    metrics = {
        name: {"a": mean_a[name], "b": mean_b[name], "difference": mean_b[name] - mean_a[name],
               "ci95": [float(ci[j, 0]), float(ci[j, 1])]}
        for j, name in enumerate(METRIC_NAMES)
    }  # fmt: skip
    mcnemar = {}
    for k in KS:
        j = METRIC_NAMES.index(f"exec@{k}")
        test = mcnemar_exact(ma[:, j] > 0, mb[:, j] > 0)
        mcnemar[f"exec@{k}"] = {
            "only_a": test.only_a,
            "only_b": test.only_b,
            "p_value": test.p_value,
            "difference": test.difference,
        }
    names = report_names([a, b])
    return {"a": names[0], "b": names[1], "n_queries": len(qa), "seed": seed,
            "n_resamples": N_RESAMPLES, "metrics": metrics, "mcnemar": mcnemar}  # fmt: skip


def gate_decision(
    baseline: dict | None,
    candidate: dict,
    alpha: float = 0.05,
    min_exec1: float | None = None,
    seed: int = 0,
) -> dict:
    """Pass/fail of ``candidate`` for CI: FAIL iff exec@1 dropped significantly, or is too low.

    FAIL iff (exact McNemar ``p < alpha`` AND exec@1 difference ``candidate - baseline < 0``)
    OR (``min_exec1`` is given AND candidate exec@1 ``< min_exec1``).  With ``baseline=None``
    only the point estimate is gated (``min_exec1`` is then required; ``p_value``,
    ``difference``, ``ci95``, ``baseline_exec1`` are ``None``).  Returns ``passed``, ``reason``
    (one sentence), ``p_value``, ``difference``, ``ci95`` (paired bootstrap of the exec@1
    difference, as in :func:`paired_comparison`), ``alpha``, ``min_exec1``, ``candidate_exec1``,
    ``baseline_exec1``.  Zero queries raise :class:`ComparisonError` (never a vacuous pass).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if baseline is None and min_exec1 is None:
        raise ComparisonError("the gate needs a baseline report or min_exec1")
    p_value = difference = baseline_exec1 = None
    ci95 = None
    if baseline is not None:
        cmp = paired_comparison(baseline, candidate, seed=seed)
        e1 = cmp["metrics"]["exec@1"]
        p_value = cmp["mcnemar"]["exec@1"]["p_value"]
        difference, ci95 = e1["difference"], e1["ci95"]
        baseline_exec1, candidate_exec1 = e1["a"], e1["b"]
    else:
        if not candidate["per_query"]:
            raise ComparisonError("the candidate report has zero queries: nothing to gate")
        candidate_exec1 = mean_metrics(_rows(candidate["per_query"]))["exec@1"]

    regressed = p_value is not None and p_value < alpha and difference < 0
    too_low = min_exec1 is not None and candidate_exec1 < min_exec1
    parts = []
    if baseline is not None:
        change = (f"exec@1 {candidate_exec1:.3f} vs baseline {baseline_exec1:.3f} (difference "
                  f"{difference:+.3f}, 95% CI [{ci95[0]:+.3f}, {ci95[1]:+.3f}], exact McNemar "
                  f"p = {p_value:.3g})")  # fmt: skip
        if regressed:
            parts.append(f"{change} is a significant drop at alpha {alpha:g}")
        elif difference < 0:
            parts.append(f"{change} is not a significant drop at alpha {alpha:g}")
        else:
            parts.append(f"{change} is no drop")
    if min_exec1 is not None:
        relation = "below" if too_low else "at or above"
        parts.append(f"candidate exec@1 {candidate_exec1:.3f} is {relation} the required "
                     f"minimum {min_exec1:.3f}")  # fmt: skip
    passed = not (regressed or too_low)
    reason = f"{'PASS' if passed else 'FAIL'}: {'; '.join(parts)}."
    return {
        "passed": passed, "reason": reason, "p_value": p_value, "difference": difference,
        "ci95": ci95, "alpha": alpha, "min_exec1": min_exec1,
        "candidate_exec1": candidate_exec1, "baseline_exec1": baseline_exec1,
    }  # fmt: skip


def _fmt_ci(value: float, ci: Sequence[float], signed: bool = False) -> str:
    f = "+.3f" if signed else ".3f"
    return f"{value:{f}} [{ci[0]:{f}}, {ci[1]:{f}}]"


def compare_reports(reports: list[dict], fmt: str = "plain", seed: int = 0) -> str:
    """Side-by-side metrics with 95% CIs, then every pair's paired differences.

    The first table has one row per metric and one column per report (mean and the report's
    own ``ci95``).  Then, for each pair ``i < j``, the difference ``reports[j] - reports[i]``
    of every metric with its paired bootstrap CI, and the exact McNemar p of ``exec@k``
    (:func:`paired_comparison`).  ``fmt``: ``"plain"`` (terminal) or ``"markdown"`` (GitHub
    tables, e.g. for a pull-request comment).  Raises :class:`ComparisonError` when any two
    reports are not comparable or there are none.
    """
    if fmt not in ("plain", "markdown"):
        raise ValueError(f"fmt must be 'plain' or 'markdown', got {fmt!r}")
    if not reports:
        raise ComparisonError("no reports to compare")
    if not reports[0]["per_query"]:
        raise ComparisonError("reports have zero queries: nothing to compare")
    names = report_names(reports)
    pairs = [(i, j, paired_comparison(reports[i], reports[j], seed=seed))
             for i in range(len(reports)) for j in range(i + 1, len(reports))]  # fmt: skip
    tablefmt = "github" if fmt == "markdown" else "simple"
    corpus = reports[0]["corpus"]
    head = (f"Corpus {corpus['sha256'][:16]}: {len(reports[0]['per_query'])} queries. "
            "Mean [95% CI, query-level bootstrap].")  # fmt: skip
    side = tabulate(
        [[m, *(_fmt_ci(r["metrics"][m], r["ci95"][m]) for r in reports)] for m in METRIC_NAMES],
        ["metric", *names], tablefmt=tablefmt, disable_numparse=True,
    )  # fmt: skip
    lines = [("## Metrics" if fmt == "markdown" else "Metrics"), "", head, "", side]
    for i, j, cmp in pairs:
        title = f"{names[j]} - {names[i]} (paired, {cmp['n_queries']} queries)"
        rows = []
        for m in METRIC_NAMES:
            d = cmp["metrics"][m]
            p = cmp["mcnemar"].get(m, {}).get("p_value")
            rows.append([m, _fmt_ci(d["difference"], d["ci95"], signed=True),
                         "" if p is None else f"{p:.3g}"])  # fmt: skip
        table = tabulate(rows, ["metric", "difference [95% CI]", "McNemar p"],
                         tablefmt=tablefmt, disable_numparse=True)  # fmt: skip
        lines += ["", f"### {title}" if fmt == "markdown" else title, "", table]
    return "\n".join(lines) + "\n"


def main_compare(argv: Sequence[str] | None = None) -> int:
    """``execretrieval compare A.json B.json [...] [--format plain|markdown] [--seed N]``."""
    p = argparse.ArgumentParser(prog="execretrieval compare",
                                description="Paired comparison of report JSONs.")  # fmt: skip
    p.add_argument("reports", nargs="+", metavar="REPORT.json")
    p.add_argument("--format", choices=("plain", "markdown"), default="plain")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    args = p.parse_args(argv)
    if len(args.reports) < 2:
        print("execretrieval compare: give at least two report files", file=sys.stderr)
        return 2
    try:
        reports = [load_report(path) for path in args.reports]
        text = compare_reports(reports, fmt=args.format, seed=args.seed)
    except (ReportError, ComparisonError) as exc:
        print(f"execretrieval compare: {exc}", file=sys.stderr)
        return 2
    except KeyError as exc:
        print(f"execretrieval compare: malformed report (missing key {exc})", file=sys.stderr)
        return 2
    print(text, end="")
    return 0
