"""Paired comparisons of reports as text: the tables of ``execretrieval compare``, the terminal
summary and summary.md (the figures: ``scoring/compare.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from ..scoring.compare import (
    MAX_DETECTABLE,
    ComparisonError,
    beside_first_stage,
    invocation_differences,
    paired_comparison,
    report_names,
    shared_metrics,
    skipped_line,
)
from ..scoring.metrics import HEADLINE, metric_spec

__all__ = ["compare_reports", "tie_range"]


def tie_range(report: dict, metric: str) -> str:
    """A metric's pessimistic-optimistic range over tie orders, as text."""
    b = report.get("metric_bounds", {}).get(metric)
    return "n/a (schema 1)" if b is None else f"{b['pessimistic']:.3f}-{b['optimistic']:.3f}"


def _fmt_ci(value: float, ci: Sequence[float], signed: bool = False, fmt: str = ".3f") -> str:
    f = "+" + fmt if signed else fmt
    return f"{value:{f}} [{ci[0]:{f}}, {ci[1]:{f}}]"


def _pairs(reports: Sequence[dict], names: Sequence[str], all_pairs: bool) -> list[tuple[int, int]]:
    """The pairs ``i < j`` to compare: all, or (``all_pairs=False``) a pipeline with its first
    stage only, and pairs of which neither is a pipeline."""
    return [
        (i, j)
        for i in range(len(reports))
        for j in range(i + 1, len(reports))
        if all_pairs
        or reports[j].get("first_stage") == names[i]
        or not ({"first_stage"} & (reports[i].keys() | reports[j].keys()))
    ]


def _side_by_side(
    reports: Sequence[dict], names: Sequence[str], shared: Sequence[str], tablefmt: str
) -> tuple[str, str]:
    """The heading sentence and the table of every shared metric's mean and CI per report."""
    corpus = reports[0]["corpus"]
    head = (
        f"Corpus {corpus['sha256'][:16]}: {len(reports[0]['per_query'])} queries. "
        "Mean [95% CI, query-level bootstrap]."
    )
    rows = [
        [m, *(_fmt_ci(r["metrics"][m], r["ci95"][m], fmt=metric_spec(m).fmt) for r in reports)]
        for m in shared
    ]
    if HEADLINE in shared and any("metric_bounds" in r for r in reports):
        rows.append(
            [f"{HEADLINE} worst-best tie order", *(tie_range(r, HEADLINE) for r in reports)]
        )
    ties = ", ".join(f"{n} {r['ties']['rank1']}" for n, r in zip(names, reports) if "ties" in r)
    if ties:
        head += f" Queries whose rank 1 is a tie: {ties}."
    return head, tabulate(rows, ["metric", *names], tablefmt=tablefmt, disable_numparse=True)


def _pair_section(
    reports: Sequence[dict], names: Sequence[str], i: int, j: int, cmp: dict, fmt: str
) -> list[str]:
    """One pair's lines: its title, the table of differences, what differs in the invocations."""
    title = f"{names[j]} - {names[i]} (paired, {cmp['n_queries']} queries)"
    if reports[j].get("first_stage") == names[i]:
        title += ": the pipeline's lift over its first stage"
    rows = [
        [
            m,
            _fmt_ci(d["difference"], d["ci95"], signed=True, fmt=metric_spec(m).fmt),
            f"{d['p_value']:.3g}",
            d["test"],
        ]
        for m, d in cmp["metrics"].items()
    ]
    table = tabulate(
        rows,
        ["metric", "difference [95% CI]", "p", "test"],
        tablefmt="github" if fmt == "markdown" else "simple",
        disable_numparse=True,
    )
    lines = ["", f"### {title}" if fmt == "markdown" else title, "", table]
    weak = {m: d for m, d in cmp["metrics"].items() if d.get("needed")}
    if weak:
        lines += [
            "",
            f"UNDERPOWERED: {cmp['n_queries']} queries cannot detect a drop of "
            f"{MAX_DETECTABLE:.2f} with 80% power (a gate on them would not decide): "
            + "; ".join(f"{m} needs {d['needed']:,} queries" for m, d in weak.items()),
        ]
    differs = invocation_differences(reports[i], reports[j])
    if differs:
        lines += ["", "Invocation differs: " + "; ".join(differs)]
    return lines


def compare_reports(
    reports: list[dict], fmt: str = "plain", seed: int = 0, all_pairs: bool = True
) -> str:
    """Side-by-side metrics with 95% CIs, then every pair's paired differences.

    Pipeline reports (with ``first_stage``) stand beside their first stage
    (:func:`..scoring.compare.beside_first_stage`); with ``all_pairs=False`` a pipeline is
    paired with its first stage only (a session with several rerankers would otherwise compare
    every pipeline with every other).

    The first table has one row per metric that every report carries
    (:func:`..scoring.compare.shared_metrics`; the others are named as skipped) and one column
    per report (mean and the report's own ``ci95``), and the queries whose rank 1 is a tie.
    Then, for each pair ``i < j``, the difference ``reports[j] - reports[i]`` of every metric
    with its paired bootstrap CI and the p-value of :func:`..scoring.compare.paired_test`, and
    what differs between their invocations. ``fmt``: ``"plain"`` (terminal) or ``"markdown"``
    (GitHub tables, e.g. for a pull-request comment).  Raises
    :class:`..scoring.compare.ComparisonError` when any two reports are not comparable or there
    are none.
    """
    if fmt not in ("plain", "markdown"):
        raise ValueError(f"fmt must be 'plain' or 'markdown', got {fmt!r}")
    if not reports:
        raise ComparisonError("no reports to compare")
    if not reports[0]["per_query"]:
        raise ComparisonError("reports have zero queries: nothing to compare")
    reports = beside_first_stage(reports)
    names = report_names(reports)
    shared, skipped = shared_metrics(reports)
    if not shared:
        raise ComparisonError(f"the reports share no metric to compare ({skipped_line(skipped)})")
    pairs = [
        (i, j, paired_comparison(reports[i], reports[j], seed=seed, metrics=shared))
        for i, j in _pairs(reports, names, all_pairs)
    ]
    head, side = _side_by_side(reports, names, shared, "github" if fmt == "markdown" else "simple")
    lines = [("## Metrics" if fmt == "markdown" else "Metrics"), "", head, "", side]
    if skipped:
        lines += ["", skipped_line(skipped)]
    for i, j, cmp in pairs:
        lines += _pair_section(reports, names, i, j, cmp, fmt)
    return "\n".join(lines) + "\n"
