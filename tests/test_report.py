"""Tests for reporting/report.py: typed rows, the table's columns, the names it exports."""

from __future__ import annotations

import dataclasses
import inspect
import math

from pytest_execretrieval.ranking.benchmark import BenchmarkRun, Hit, QueryResult
from pytest_execretrieval.records import HitRow, ReportRow
from pytest_execretrieval.reporting import plots, report
from pytest_execretrieval.reporting.report import hit_row, metric_summary, metrics_table, report_row


def result(query_id: str, canonical_rank: int, tied_top: int = 1) -> QueryResult:
    """A query whose canonical (the only passing snippet) sits at ``canonical_rank``; the
    first ``tied_top`` snippets share the top score."""
    hits = tuple(
        Hit(
            r,
            f"{query_id}-s{r}",
            "canonical" if r == canonical_rank else "distractor",
            None if r == canonical_rank else "boundary",
            query_id,
            1.0 if r <= tied_top else round(1 - r / 20, 6),
            r == canonical_rank,
        )
        for r in range(1, 11)
    )
    first = 1 if canonical_rank <= tied_top else canonical_rank
    last = tied_top if canonical_rank <= tied_top else canonical_rank
    rank1 = {"size": tied_top, "passing": int(canonical_rank <= tied_top)}
    return QueryResult(
        query_id,
        "strings",
        canonical_rank == 1 and tied_top == 1,
        canonical_rank,
        hits[canonical_rank - 1].score,
        hits,
        ("pass",),
        (),
        {},
        rank1,
        {"size": 1, "passing": 0},
        {"first": first, "last": last},
    )


def keys(typed: type) -> set[str]:
    return set(typed.__required_keys__ | typed.__optional_keys__)


def test_report_row_writes_exactly_the_typed_keys() -> None:
    row = report_row(result("strings/a", 2))
    # a run's own JSON; a background pool's; a mined item's
    optional = {"rank1_outcomes", "background_above", "background_nearest", "source"}
    assert set(row) == keys(ReportRow) - optional
    full = dataclasses.replace(
        result("strings/a", 2), background_above=0, background_nearest=0.5, source={"file": "x"}
    )
    assert set(report_row(full)) == keys(ReportRow) - {"rank1_outcomes"}
    assert set(row["top"][0]) == keys(HitRow) - {"tie_key"}  # tie_key: pipelines only
    tied = hit_row(Hit(1, "s", "canonical", None, "q", 0.5, True, (1, 0.5, 0.25)))
    assert set(tied) == keys(HitRow) and tied["tie_key"] == [1, 0.5, 0.25]


def test_metrics_table_columns_and_values() -> None:
    rows = [report_row(result("strings/a", 1)), report_row(result("strings/b", 3, tied_top=3))]
    data = {"corpus": {"n_queries": 2}, **metric_summary(rows)}
    lines = metrics_table({"m": data}).splitlines()
    headers = [h.strip() for h in lines[0].split("  ") if h.strip()]
    assert headers == [
        "embedder",
        "queries",
        "exec@1 [95% CI]",
        "exec@1 tie range",
        "rank-1 ties",
        "exec@5 [95% CI]",
        "exec@10",
        "ndcg@10 [95% CI]",
        "mrr",
    ]
    exec1 = (1 + 1 / 3) / 2  # the second query's rank 1 is a three-way tie, one passing
    mrr = (1 + (1 + 1 / 2 + 1 / 3) / 3) / 2
    ndcg10 = (1 + (1 + 1 / math.log2(3) + 1 / math.log2(4)) / 3) / 2
    cells = lines[2].split()
    assert cells[:3] == ["m", "2", f"{exec1:.3f}"]
    assert cells[5:7] == ["0.500-1.000", "1"]  # tie range of exec@1, rank-1 ties
    assert cells[-1] == f"{mrr:.3f}" and f"{ndcg10:.3f}" in cells


def test_no_collectable_or_clashing_names() -> None:
    """pytest would collect a ``Test*`` class; ``report`` and ``plots`` (which ``report``
    calls) must not define one public name twice."""
    for module in (report, plots):
        classes = [
            n
            for n, obj in inspect.getmembers(module, inspect.isclass)
            if obj.__module__ == module.__name__
        ]
        assert not [n for n in classes if n.startswith("Test")], module.__name__

    def own(module: object) -> set[str]:
        """The public functions and classes ``module`` defines itself."""
        name = module.__name__
        return {
            n
            for n, obj in vars(module).items()
            if not n.startswith("_") and getattr(obj, "__module__", None) == name
        }

    assert not own(report) & own(plots)
    assert {"session_summary_markdown", "analyses_markdown", "RecordedTest"} <= own(report)


def test_build_report_records_the_circumstances_it_is_given() -> None:
    """Reporting reads no clock and probes no sandbox: the isolation layers in force and the
    time come from the caller, so the same run gives the same report."""
    top = tuple(
        Hit(
            r,
            f"s{r}",
            "canonical",
            None,
            "strings/a" if r == 1 else f"strings/o{r}",
            1 - r / 20,
            True,
        )
        for r in range(1, 11)
    )
    r = QueryResult("strings/a", "strings", True, 1, 0.95, top, ("pass",))
    run = BenchmarkRun({"name": "m", "dim": 3}, "sha", 20, {"strings/a": r}, 0.1)
    isolation = {"layers": ["user"], "missing": {"seccomp": "no libseccomp"}}
    reports = [
        report.build_report("m", run, ["strings/a"], 1.5, isolation=isolation, created_at="then")
        for _ in range(2)
    ]
    assert reports[0] == reports[1]
    assert reports[0]["isolation"] == isolation and reports[0]["created_at"] == "then"
