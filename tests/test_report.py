"""Tests for reporting/report.py: typed rows, the table's columns, the names it exports."""

from __future__ import annotations

import dataclasses
import inspect
import math
import re

import pytest

from pytest_execretrieval.ranking.benchmark import BenchmarkRun, Hit, QueryResult
from pytest_execretrieval.records import Flip, FlipRow, HitRow, Rank1, Rank1Row, ReportRow
from pytest_execretrieval.reporting import plots, report, verdict
from pytest_execretrieval.reporting.gate_text import gate_json
from pytest_execretrieval.reporting.report import hit_row, metric_summary, metrics_table, report_row
from pytest_execretrieval.reporting.verdict import verdict_markdown
from pytest_execretrieval.scoring.compare import ComparisonError, flips
from pytest_execretrieval.scoring.gate import gate_decision


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


def flip_reports() -> tuple[dict, dict]:
    """A baseline and a candidate on one corpus: a passes in the baseline only (a regression),
    b in the candidate only (a fix), c in both, d in neither, e only in the candidate."""
    rank = {"a": (1, 2), "b": (3, 1), "c": (1, 1), "d": (2, 2)}
    rows = [
        [report_row(result(f"strings/{q}", ranks[i])) for q, ranks in rank.items()] for i in (0, 1)
    ]
    rows[1].append(report_row(result("strings/e", 1)))
    baseline, candidate = (
        {"embedder": {"name": n}, "corpus": {"sha256": "sha", "n_queries": len(r)}, "per_query": r}
        | metric_summary(r)
        for n, r in zip(("old", "new"), rows)
    )
    return baseline, candidate


def test_flips_are_computed_both_ways_regressions_first() -> None:
    baseline, candidate = flip_reports()
    found = flips(baseline, candidate)
    assert [(f.query_id, f.direction) for f in found] == [
        ("strings/a", "pass->fail"),
        ("strings/b", "fail->pass"),
    ]
    regression = found[0]
    assert regression.regressed and regression.candidate is not None
    assert (regression.candidate.kind, regression.candidate.operator) == ("distractor", "boundary")
    assert regression.baseline is not None and regression.baseline.kind == "canonical"
    assert [Flip.from_json(f.to_json()) for f in found] == list(found)  # one JSON form
    other = dict(baseline, corpus={"sha256": "other"})
    with pytest.raises(ComparisonError, match="different corpora"):
        flips(other, candidate)


def test_a_gate_against_a_baseline_records_its_flips() -> None:
    baseline, candidate = flip_reports()
    record = gate_json(gate_decision(baseline, candidate, max_detectable=1))
    assert [(f["query_id"], f["direction"]) for f in record["flips"]] == [
        ("strings/a", "pass->fail"),
        ("strings/b", "fail->pass"),
    ]
    assert set(record["flips"][0]) == keys(FlipRow)
    assert set(record["flips"][0]["candidate"]) == keys(Rank1Row)
    # minimums alone compare with no baseline: no flips at all (not an empty list)
    assert "flips" not in gate_json(gate_decision(None, candidate, minimums={"exec@1": 0}))


def test_the_closing_lines_and_summary_open_with_the_verdict_then_the_flips() -> None:
    baseline, candidate = flip_reports()
    gate = gate_json(gate_decision(baseline, candidate, max_detectable=1))
    candidate["gate"] = gate
    lines = report.final_summary({"new": candidate}, {"new": gate}, [], 0.0)
    assert lines[0].startswith("gate [new]: ")
    counts = lines.index("flips [new] against the baseline: 1 pass -> fail, 1 fail -> pass")
    assert lines[counts + 1] == (
        "  pass -> fail  strings/a: rank 1 distractor (boundary); baseline canonical"
    )
    assert lines[counts + 2].startswith("  fail -> pass  strings/b: rank 1 canonical; ")
    assert counts < next(i for i, x in enumerate(lines) if x.startswith("embedder "))
    markdown = verdict_markdown({"javascript/new": gate}, html="../report.html")
    assert markdown.startswith("## Upgrade gate\n\n- **javascript/new**: ")
    assert markdown.index("## Flips against the baseline") > markdown.index("- **javascript/")
    assert (
        "| strings/a | pass -> fail | distractor (boundary) | canonical | "
        "[details](../report.html#q-javascript-2f-new-2f-strings-2f-a) |"
    ) in markdown
    assert verdict_markdown({}) == ""


def test_flip_text_is_escaped_for_each_output() -> None:
    """A query id is item data: one line in the terminal, no table break in markdown, and an
    anchor that no two queries share."""
    rank1 = Rank1("s", "distractor", "a|b", "q/x\x1b[2J|y")
    flip = Flip("q/x\x1b[2J|y", "q", "pass->fail", rank1)
    gate = {"reason": "FAIL: x", "flips": [flip.to_json()]}
    lines = verdict.flip_lines("m", gate)
    assert "\x1b" not in "".join(lines) and "\\x1b[2J" in lines[1]
    row = next(x for x in verdict.flips_markdown({"m": gate}).splitlines() if x.startswith("| q/"))
    assert row.count(" | ") == 4 and "q/x\\x1b[2J\\|y" in row and "(a\\|b)" in row
    assert verdict.anchor("m", "a/b_c") != verdict.anchor("m", "a_b/c")
    assert re.fullmatch(r"q-[A-Za-z0-9_-]+", verdict.anchor("m", "q/x\x1b[2J|y"))
