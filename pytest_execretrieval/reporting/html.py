"""``execretrieval report DIR --html``: one self-contained page of a directory's reports.

The page (:func:`html_page`) opens with the verdict: each language pool's gate decisions, then
the queries that flipped at rank 1 against the baseline (both directions, each linked to its
row), and then holds, per language pool (the directory's own reports, then
``DIR/javascript/``'s): the metrics table with 95% CIs and tie bounds (the baseline's row beside
the candidates' when the baseline is given), the plots, the analyses tables, and per report
every query, the regressions first (``pass -> fail``, then ``fail -> pass``, then the rest):
its rank 1 in the candidate and in the baseline, its text and, for a failing rank 1, what
ranked first, its failing tests' outcomes and its diff against the canonical.

Everything on the page is rendered from records: the reports (their gate records and flips,
:class:`..records.Flip`), the baseline report, the pool's items and snippets and the analyses
tables (:mod:`.tables`); it never reads summary.md or the junit XML. Plots come in as PNG bytes
and are inlined as data URIs: the page loads nothing. Without plots (matplotlib, the ``plots``
extra, missing) the page says so.

Every string from items or reports is untrusted: it passes :func:`html.escape` (quotes too)
and, through :func:`..sanitize.escape`, loses its control characters (bidi overrides
included), so a hostile query renders as its text. Nothing here runs code.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape as html_escape

from ..corpus.items import BenchmarkItem
from ..corpus.store import Snippet
from ..records import FLIP_DIRECTIONS, Flip, Rank1, ReportRow
from ..sanitize import escape as control_escape
from ..scoring.analyses import analyses as run_analyses
from ..scoring.compare import report_names
from .report import metrics_table
from .tables import Table, analyses_tables
from .verdict import (
    HTML_FILE,
    anchor,
    direction_text,
    flip_counts,
    gate_flips,
    rank1_text,
    report_label,
)

__all__ = ["HTML_FILE", "PoolPage", "html_page", "query_order", "text"]

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; max-width: 1100px; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
pre { background: #f8f8f8; padding: .5em; margin: .3em 0; white-space: pre-wrap; }
code { white-space: pre-wrap; word-break: break-word; }
.pass { color: #1a7f37; } .fail { color: #cf222e; }
.add { color: #1a7f37; } .del { color: #cf222e; }
img { max-width: 100%; }
"""


@dataclass(frozen=True)
class PoolPage:
    """What one language pool's section shows: its reports by file order, the pool's items and
    snippets by id (for query texts and diffs), its plots (file name -> PNG bytes; none:
    ``plots_note`` says why), the pool's ``baseline`` report when given, and per report (same
    order) its flips against the baseline (``None``: unknown); a report without an entry there
    shows the flips its gate record carries."""

    title: str
    reports: Sequence[dict]
    items: Mapping[str, BenchmarkItem] = field(default_factory=dict)
    snippets: Mapping[str, Snippet] = field(default_factory=dict)
    images: Mapping[str, bytes] = field(default_factory=dict)
    baseline: dict | None = None
    flips: Sequence[Sequence[Flip] | None] = ()
    plots_note: str = ""

    def report_flips(self) -> list[tuple[Flip, ...] | None]:
        """Per report: the flips given, else its gate record's."""
        given = [None if f is None else tuple(f) for f in self.flips]
        return [
            given[i] if i < len(given) else gate_flips(r.get("gate"))
            for i, r in enumerate(self.reports)
        ]


def text(value: object) -> str:
    """Untrusted text as HTML text: control characters escaped, then HTML-escaped."""
    return html_escape(control_escape(str(value)), quote=True)


def html_page(pools: Sequence[PoolPage]) -> str:
    """The whole page: the verdict and the flips of every pool, then a section per pool that
    has reports."""
    shown = [pool for pool in pools if pool.reports]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            "<title>ExecRetrieval report</title>",
            f"<style>{_STYLE}</style></head><body>",
            "<h1>ExecRetrieval report</h1>",
            _verdict_html(shown),
            _flips_html(shown),
            *(_pool_section(pool) for pool in shown),
            "</body></html>",
        ]
    )


def _labelled(pool: PoolPage) -> list[tuple[str, str, dict]]:
    """``(name, label, report)`` per report: its display name and its label across pools."""
    names = report_names(list(pool.reports))
    return [(n, report_label(r, n), r) for n, r in zip(names, pool.reports)]


def _verdict_html(pools: Sequence[PoolPage]) -> str:
    lines = ['<section id="verdict"><h2>Verdict</h2>']
    for pool in pools:
        lines.append(f"<h3>{text(pool.title)}</h3>")
        gated = [(label, r["gate"]) for _, label, r in _labelled(pool) if r.get("gate")]
        if not gated:
            lines.append("<p>No gate: no baseline and no minimum was given to this run.</p>")
        for label, gate in gated:
            decision = gate.get("decision", "PASS" if gate.get("passed") else "FAIL")
            css = "pass" if gate.get("passed") else "fail"
            lines += [
                f'<p><b>{text(label)}</b>: <span class="{css}">{text(decision)}</span> '
                f"&mdash; {text(gate.get('reason', ''))}</p>",
                "<ul>",
                *(f"<li>{text(x)}</li>" for x in gate.get("explanation", [])),
                "</ul>",
            ]
    lines.append("</section>")
    return "\n".join(lines)


def _flips_html(pools: Sequence[PoolPage]) -> str:
    lines = ['<section id="flips"><h2>Flips against the baseline</h2>']
    for pool in pools:
        for (_, label, _r), flips in zip(_labelled(pool), pool.report_flips()):
            if flips is None:
                lines.append(f"<p>{text(label)}: no baseline to compare with.</p>")
                continue
            if not flips:
                lines.append(f"<p>{text(label)}: no query changed at rank 1.</p>")
                continue
            lines += [
                f"<p>{text(label)}: {text(flip_counts(flips))}</p>",
                "<table><thead><tr><th>query</th><th>flip</th><th>rank 1 now</th>"
                "<th>baseline rank 1</th></tr></thead><tbody>",
                *(
                    f'<tr><td><a href="#{text(anchor(label, f.query_id))}">'
                    f"{text(f.query_id)}</a></td>"
                    f'<td class="{"fail" if f.regressed else "pass"}">'
                    f"{text(direction_text(f.direction))}</td>"
                    f"<td>{text(rank1_text(f.candidate, f.query_id))}</td>"
                    f"<td>{text(rank1_text(f.baseline, f.query_id))}</td></tr>"
                    for f in flips
                ),
                "</tbody></table>",
            ]
    lines.append("</section>")
    return "\n".join(lines)


def _pool_section(pool: PoolPage) -> str:
    labelled = _labelled(pool)
    by_name = {name: r for name, _, r in labelled}
    names = list(by_name)
    analyses = [r.get("analyses") or run_analyses(r) for r in pool.reports]
    shown = dict(by_name)
    if pool.baseline is not None:
        shown[f"baseline: {report_names([pool.baseline])[0]}"] = pool.baseline
    parts = [
        f"<section><h2>{text(pool.title)}</h2>",
        "<h3>Metrics (tie-aware expected values, 95% CI)</h3>",
        metrics_table(shown, fmt="html"),  # tabulate's html format escapes every cell
        *(_image_html(name, png) for name, png in pool.images.items()),
        f"<p>{text(pool.plots_note)}</p>" if pool.plots_note else "",
        *(_table_html(t) for t in analyses_tables(names, analyses)),
        *(
            _queries_html(name, label, r, pool, flips)
            for (name, label, r), flips in zip(labelled, pool.report_flips())
        ),
        "</section>",
    ]
    return "\n".join(p for p in parts if p)


def _image_html(name: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<p><img alt="{text(name)}" src="data:image/png;base64,{data}"></p>'


def _table_html(table: Table) -> str:
    head = "".join(f"<th>{text(h)}</th>" for h in table.header)
    body = "".join(
        "<tr>" + "".join(f"<td>{text(c)}</td>" for c in row) + "</tr>" for row in table.rows
    )
    return "\n".join(
        [
            *([f"<h3>{text(table.heading)}</h3>"] if table.heading else []),
            f"<p>{text(table.lead)}</p>",
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>",
        ]
    )


def query_order(rows: Sequence[ReportRow], flips: Sequence[Flip] | None) -> list[ReportRow]:
    """A report's rows by what regressed: the ``pass -> fail`` flips, the ``fail -> pass``
    flips, then the queries still failing, then those passing; each by query id."""
    direction = {f.query_id: f.direction for f in flips or ()}

    def key(row: ReportRow) -> tuple[int, str]:
        d = direction.get(row["query_id"])
        rank = FLIP_DIRECTIONS.index(d) if d else 2 + bool(row["passed"])
        return rank, row["query_id"]

    return sorted(rows, key=key)


def _queries_html(
    name: str, label: str, report: dict, pool: PoolPage, flips: Sequence[Flip] | None
) -> str:
    rows = report.get("per_query", [])
    failed = sum(not row["passed"] for row in rows)
    baseline = {q["query_id"]: q for q in pool.baseline["per_query"]} if pool.baseline else None
    by_query = {f.query_id: f for f in flips or ()}
    gate = report.get("gate") or {}
    not_compared = set((gate.get("coverage") or {}).get("missing_from_baseline", []))
    compared = flips is not None
    return "\n".join(
        [
            f"<h3>Queries of {text(name)}: {len(rows) - failed} of {len(rows)} pass at rank 1</h3>",
            "<p>Regressions first: the queries that flipped pass &rarr; fail against the "
            "baseline, then fail &rarr; pass, then the others (failing first).</p>",
            "<table><thead><tr><th>query</th><th>domain</th><th>flip</th><th>rank 1</th>"
            "<th>baseline rank 1</th><th>query text</th><th>canonical rank</th></tr></thead>"
            "<tbody>",
            *(
                _query_row(
                    row,
                    label,
                    pool,
                    by_query.get(row["query_id"]),
                    _baseline_cell(
                        row,
                        by_query.get(row["query_id"]),
                        baseline,
                        compared and row["query_id"] not in not_compared,
                    ),
                    (baseline or {}).get(row["query_id"]),
                )
                for row in query_order(rows, flips)
            ),
            "</tbody></table>",
        ]
    )


def _verdict_span(passed: bool) -> str:
    return '<span class="pass">passes</span>' if passed else '<span class="fail">fails</span>'


def _baseline_cell(
    row: ReportRow, flip: Flip | None, baseline: Mapping[str, ReportRow] | None, compared: bool
) -> str:
    """The baseline's rank 1 for a query: from the baseline report, else from the flip, else
    (a compared query that did not flip) the same verdict as the candidate's."""
    qid = row["query_id"]
    if baseline is not None:
        before = baseline.get(qid)
        if before is None:
            return "not in the baseline"
        return f"{_verdict_span(before['passed'])}: {text(rank1_text(Rank1.of_row(before), qid))}"
    if flip is not None:
        return f"{_verdict_span(flip.regressed)}: {text(rank1_text(flip.baseline, qid))}"
    if compared:
        return f"{_verdict_span(row['passed'])} (no flip)"
    return "n/a"


def _query_row(
    row: ReportRow,
    label: str,
    pool: PoolPage,
    flip: Flip | None,
    baseline_cell: str,
    before: ReportRow | None,
) -> str:
    qid = row["query_id"]
    item = pool.items.get(qid)
    query = text(item.query) if item else "(item not found)"
    details = "" if row["passed"] else _failure_details(row, item, pool.snippets)
    rank1 = f"{_verdict_span(row['passed'])}: {text(rank1_text(Rank1.of_row(row), qid))}"
    flipped = (
        f'<span class="{"fail" if flip.regressed else "pass"}">'
        f"{text(direction_text(flip.direction))}</span>"
        if flip
        else ""
    )
    canonical = text(row.get("canonical_rank"))
    if before is not None:
        canonical += f" (baseline {text(before.get('canonical_rank'))})"
    return (
        f'<tr id="{text(anchor(label, qid))}"><td>{text(qid)}</td><td>{text(row["domain"])}</td>'
        f"<td>{flipped}</td><td>{rank1}</td><td>{baseline_cell}</td>"
        f"<td>{query}{details}</td><td>{canonical}</td></tr>"
    )


def _failure_details(
    row: ReportRow, item: BenchmarkItem | None, snippets: Mapping[str, Snippet]
) -> str:
    """The failing rank 1: what it is, its failing tests' outcomes and its diff."""
    top1 = min(row["top"], key=lambda h: h["rank"])
    snippet = snippets.get(top1["snippet_id"])
    what = top1["kind"] + (f" ({top1['operator']})" if top1.get("operator") else "")
    if top1["query_id"] != row["query_id"]:
        what += f" of {top1['query_id']}"
    tests = _failing_tests(item, snippet)
    diff = snippet.diff if snippet and top1["query_id"] == row["query_id"] else ""
    return "".join(
        [
            f"<details><summary>rank 1: {text(what)}</summary>",
            f"<ul>{tests}</ul>" if tests else "",
            f"<pre>{_diff_html(diff)}</pre>" if diff else "",
            "</details>",
        ]
    )


def _failing_tests(item: BenchmarkItem | None, snippet: Snippet | None) -> str:
    if item is None or snippet is None or snippet.query_id != item.id:
        return ""  # another query's snippet: its outcomes are for that query's tests
    return "".join(
        f"<li><code>{text(test)}</code> &rarr; {text(outcome)}</li>"
        for test, outcome in zip(item.tests, snippet.outcomes)
        if outcome != "pass"
    )


def _diff_html(diff: str) -> str:
    def line_html(line: str) -> str:
        if line.startswith("+") and not line.startswith("+++"):
            return f'<span class="add">{text(line)}</span>'
        if line.startswith("-") and not line.startswith("---"):
            return f'<span class="del">{text(line)}</span>'
        return text(line)

    return "\n".join(line_html(line) for line in diff.splitlines())
