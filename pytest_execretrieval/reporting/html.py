"""``execretrieval report DIR --html``: one self-contained page of a directory's reports.

The page (:func:`html_page`) holds, per language pool (the directory's own reports, then
``DIR/javascript/``'s): the metrics table with 95% CIs and tie bounds, each report's gate
decision, the per-domain and per-operator-class tables of summary.md, and per query its text,
whether rank 1 passed and, for a failing rank 1, its diff against the canonical, its failing
tests' outcomes and the values it returned. The report JSON holds no values: they are read from
the failure text of the junit XML the run wrote beside it (:func:`junit_failures`; a report
without one shows outcomes only). Plots come in as PNG bytes and are inlined as data URIs:
the page loads nothing.

Every string from items or reports is untrusted: it passes :func:`html.escape` (quotes too)
and, through :func:`..sanitize.escape`, loses its control characters (bidi overrides
included), so a hostile query renders as its text. Nothing here runs code.
"""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape as html_escape

from ..corpus.items import BenchmarkItem
from ..corpus.store import Snippet
from ..sanitize import escape as control_escape
from ..scoring.analyses import analyses as run_analyses
from ..scoring.compare import report_names
from .report import analyses_markdown, metrics_table

__all__ = ["HTML_FILE", "PoolPage", "html_page", "junit_failures", "text"]

HTML_FILE = "report.html"

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
    snippets by id (for query texts and diffs), its plots (file name -> PNG bytes) and per
    report (same order) the failure texts of its junit XML by query id (:func:`junit_failures`)."""

    title: str
    reports: Sequence[dict]
    items: Mapping[str, BenchmarkItem] = field(default_factory=dict)
    snippets: Mapping[str, Snippet] = field(default_factory=dict)
    images: Mapping[str, bytes] = field(default_factory=dict)
    failures: Sequence[Mapping[str, str]] = ()


def text(value: object) -> str:
    """Untrusted text as HTML text: control characters escaped, then HTML-escaped."""
    return html_escape(control_escape(str(value)), quote=True)


def junit_failures(xml: str) -> dict[str, str]:
    """A run's junit XML (``reporting.report.junit_xml``, written by this package) -> the
    failure text of each failing query (a ``<failure>``, or under a gate a ``<skipped>``), by
    query id (the test case's name)."""
    found = {}
    for case in ET.fromstring(xml).iter("testcase"):
        for element in case:
            if element.tag in ("failure", "skipped") and element.text:
                found[case.get("name", "")] = element.text
    return found


def html_page(pools: Sequence[PoolPage]) -> str:
    """The whole page: a section per pool that has reports."""
    body = [_pool_section(pool) for pool in pools if pool.reports]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            "<title>ExecRetrieval report</title>",
            f"<style>{_STYLE}</style></head><body>",
            "<h1>ExecRetrieval report</h1>",
            *body,
            "</body></html>",
        ]
    )


def _pool_section(pool: PoolPage) -> str:
    names = report_names(list(pool.reports))
    by_name = dict(zip(names, pool.reports))
    analyses = [r.get("analyses") or run_analyses(r) for r in pool.reports]
    parts = [
        f"<section><h2>{text(pool.title)}</h2>",
        "<h3>Metrics (tie-aware expected values, 95% CI)</h3>",
        metrics_table(by_name, fmt="html"),  # tabulate's html format escapes every cell
        _gates_html(by_name),
        *(_image_html(name, png) for name, png in pool.images.items()),
        _markdown_tables(analyses_markdown(pool.reports, analyses, (), "")),
        *(
            _queries_html(name, r, pool, failures)
            for (name, r), failures in zip(by_name.items(), _padded(pool.failures, len(names)))
        ),
        "</section>",
    ]
    return "\n".join(p for p in parts if p)


def _padded(failures: Sequence[Mapping[str, str]], n: int) -> list[Mapping[str, str]]:
    return [*failures, *([{}] * (n - len(failures)))]


def _gates_html(reports: Mapping[str, dict]) -> str:
    gated = {name: r["gate"] for name, r in reports.items() if r.get("gate")}
    if not gated:
        return ""
    lines = ["<h3>Gate</h3>"]
    for name, gate in gated.items():
        decision = gate.get("decision", "PASS" if gate.get("passed") else "FAIL")
        css = "pass" if gate.get("passed") else "fail"
        lines += [
            f'<p><b>{text(name)}</b>: <span class="{css}">{text(decision)}</span> '
            f"&mdash; {text(gate.get('reason', ''))}</p>",
            "<ul>",
            *(f"<li>{text(x)}</li>" for x in gate.get("explanation", [])),
            "</ul>",
        ]
    return "\n".join(lines)


def _image_html(name: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<p><img alt="{text(name)}" src="data:image/png;base64,{data}"></p>'


def _markdown_tables(markdown: str) -> str:
    """summary.md's analyses as HTML: its pipe tables become tables, other lines paragraphs
    (the first heading is the page's own and is left out)."""
    out: list[str] = []
    rows: list[list[str]] = []
    for line in markdown.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not all(set(c) <= {"-"} for c in cells):  # the header's separator row
                rows.append(cells)
            continue
        if rows:
            out.append(_table(rows[0], rows[1:]))
            rows = []
        if line.startswith("## "):
            out.append(f"<h3>{text(line[3:])}</h3>")
        elif line.strip() and not line.startswith("# "):
            out.append(f"<p>{text(line.replace('`', ''))}</p>")
    if rows:
        out.append(_table(rows[0], rows[1:]))
    return "\n".join(out)


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{text(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{text(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _queries_html(name: str, report: dict, pool: PoolPage, failures: Mapping[str, str]) -> str:
    rows = report.get("per_query", [])
    failed = sum(not row["passed"] for row in rows)
    return "\n".join(
        [
            f"<h3>Queries of {text(name)}: {len(rows) - failed} of {len(rows)} pass at rank 1</h3>",
            "<table><thead><tr><th>query</th><th>domain</th><th>rank 1</th><th>query text"
            "</th><th>canonical rank</th></tr></thead><tbody>",
            *(_query_row(row, pool, failures.get(row["query_id"], "")) for row in rows),
            "</tbody></table>",
        ]
    )


def _query_row(row: dict, pool: PoolPage, failure: str) -> str:
    item = pool.items.get(row["query_id"])
    verdict = (
        '<span class="pass">passes</span>' if row["passed"] else '<span class="fail">fails</span>'
    )
    query = text(item.query) if item else "(item not found)"
    details = "" if row["passed"] else _failure_details(row, item, pool.snippets, failure)
    return (
        f"<tr><td>{text(row['query_id'])}</td><td>{text(row['domain'])}</td><td>{verdict}</td>"
        f"<td>{query}{details}</td><td>{text(row.get('canonical_rank'))}</td></tr>"
    )


def _failure_details(
    row: dict, item: BenchmarkItem | None, snippets: Mapping[str, Snippet], failure: str
) -> str:
    """The failing rank 1: what it is, its failing tests (outcome, returned value) and its diff."""
    top1 = row["top"][0]
    snippet = snippets.get(top1["snippet_id"])
    what = top1["kind"] + (f" ({top1['operator']})" if top1.get("operator") else "")
    if top1["query_id"] != row["query_id"]:
        what += f" of {top1['query_id']}"
    tests = _failing_tests(item, snippet, failure)
    diff = snippet.diff if snippet and top1["query_id"] == row["query_id"] else ""
    return "".join(
        [
            f"<details><summary>rank 1: {text(what)}</summary>",
            f"<ul>{tests}</ul>" if tests else "",
            f"<pre>{_diff_html(diff)}</pre>" if diff else "",
            "</details>",
        ]
    )


def _failing_tests(item: BenchmarkItem | None, snippet: Snippet | None, failure: str) -> str:
    if item is None or snippet is None or snippet.query_id != item.id:
        return ""  # another query's snippet: its outcomes are for that query's tests
    lines = []
    for test, outcome in zip(item.tests, snippet.outcomes):
        if outcome == "pass":
            continue
        value = _returned(failure, test, outcome)
        lines.append(f"<li><code>{text(test)}</code> &rarr; {text(outcome)}")
        lines.append(f": {text(value)}</li>" if value else "</li>")
    return "".join(lines)


def _returned(failure: str, test: str, outcome: str) -> str:
    """What the failure text says ``test`` returned (its line in ``failures.failure_text``:
    ``    TEST  ->  OUTCOME: VALUE``), ``""`` where it shows none."""
    prefix = f"    {test}  ->  {outcome}: "
    line = next((x for x in failure.splitlines() if x.startswith(prefix)), "")
    return line[len(prefix) :]


def _diff_html(diff: str) -> str:
    def line_html(line: str) -> str:
        if line.startswith("+") and not line.startswith("+++"):
            return f'<span class="add">{text(line)}</span>'
        if line.startswith("-") and not line.startswith("---"):
            return f'<span class="del">{text(line)}</span>'
        return text(line)

    return "\n".join(line_html(line) for line in diff.splitlines())
