"""Reports of a benchmark run: JSON (schema_version 2), junit XML per model, summary.md, and the
terminal table. Plain functions of plain data; no pytest here, no execution, no clock: what a
report records of its circumstances (the sandbox layers in force, when it was made) is passed in.

Schema version 2 (version 1 reports stay readable by :mod:`.compare`): ``metrics`` are tie-aware
expected values, ``metric_bounds`` their optimistic and pessimistic bounds, ``ties`` counts the
queries whose rank 1 is a tie, and each ``per_query`` row adds ``rank1_tie``, ``tail_tie`` and
``canonical_tie``; ``passed`` is false when rank 1 is a tie of passing and failing snippets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree as ET

from tabulate import tabulate

from ..ranking.retrieval import TIE_POLICY
from ..records import BenchmarkRun, Hit, HitRow, QueryResult, ReportRow
from ..safe_write import check_target, write_atomic
from ..sanitize import escape, xml_text
from ..scoring.analyses import analyses
from ..scoring.compare import report_names
from ..scoring.metrics import (
    HEADLINE,
    METRIC_NAMES,
    METRICS,
    mean_metrics,
    metric_matrix,
    row_metrics,
)
from ..scoring.stats import bootstrap_ci
from .comparison import compare_reports, tie_range
from .controls_text import controls_flag_lines, controls_flag_markdown
from .lift_text import lift_lines, lift_markdown
from .serving_text import serving_lines, serving_markdown
from .tables import analyses_tables, per_class_table, real_bugs_table, table_markdown
from .verdict import HTML_FILE, flip_lines, verdict_markdown

SCHEMA_VERSION = 2


@dataclass
class RecordedTest:
    """One executed benchmark item as the controller saw it (builtins only: crosses xdist)."""

    nodeid: str
    query_id: str
    outcome: str  # "passed" | "failed" | "error" | "xfailed" | "xpassed" | "skipped"
    duration: float
    message: str = ""
    properties: list = field(default_factory=list)


def hit_row(h: Hit) -> HitRow:
    """One ``top`` entry of a ``per_query`` row (``tie_key`` only where it is not the score)."""
    return h.to_json()


def report_row(r: QueryResult) -> ReportRow:
    """One ``per_query`` row of the report JSON (the rank-1 outcomes are not in reports)."""
    return r.to_json(rank1_outcomes=False)


def metric_summary(per_query: Sequence[ReportRow], seed: int = 0) -> dict:
    """``metrics`` (tie-aware expected means), ``metric_bounds``, ``ci95`` and ``ties`` of a
    report's ``per_query`` rows (version 1 rows have no ties: the bounds then coincide)."""
    tie_aware = [row_metrics(q) for q in per_query]
    matrix = metric_matrix([t.expected for t in tie_aware])
    means = mean_metrics(matrix)
    optimistic = mean_metrics(metric_matrix([t.optimistic for t in tie_aware]))
    pessimistic = mean_metrics(metric_matrix([t.pessimistic for t in tie_aware]))
    ci = bootstrap_ci(matrix, seed=seed)
    return {
        "metrics": {m: means[m] for m in METRIC_NAMES},
        "metric_bounds": {
            m: {"pessimistic": pessimistic[m], "optimistic": optimistic[m]} for m in METRIC_NAMES
        },
        "ci95": {m: [float(lo), float(hi)] for m, (lo, hi) in zip(METRIC_NAMES, ci)},
        "ties": {"rank1": sum(q.get("rank1_tie", {}).get("size", 1) > 1 for q in per_query)},
    }


def build_report(
    name: str,
    run: BenchmarkRun,
    query_ids: Sequence[str],
    elapsed_s: float,
    seed: int = 0,
    *,
    isolation: dict,
    created_at: str,
    language: str | None = None,
    controls: dict | None = None,
) -> dict:
    """The report JSON of ``name`` over the queries that ran (``query_ids``); ``controls``: the
    query-blind controls of its pool over those queries
    (:func:`.scoring.controls.controls_table`), its analyses' ``controls`` section (none
    without); ``isolation``:
    the sandbox layers in force during the run (``execution.sandbox.isolation_in_force``),
    ``created_at``: when the run ended (ISO 8601, UTC); ``language``: the language pool's name
    (:mod:`..corpus.pools`), the report's ``language`` field, left out for an items
    directory's own pool (``None``), whose reports stay as they were."""
    per_query = [report_row(run.results[q]) for q in sorted(query_ids)]
    invocation = dict(run.embedder)
    invocation["name"] = name
    report = {
        "schema_version": SCHEMA_VERSION,
        **({"language": language} if language else {}),
        "embedder": invocation,
        "corpus": {
            "sha256": run.corpus_sha256,
            "n_queries": len(per_query),
            "n_snippets": run.n_snippets,
            **({"background": run.background} if run.background else {}),
            **({"tests": run.tests} if run.tests != "all" else {}),
        },
        "tie_policy": TIE_POLICY,
        **metric_summary(per_query, seed),
        "per_query": per_query,
    }
    report["analyses"] = analyses(report, controls)
    report["isolation"] = isolation
    report["elapsed_s"] = round(elapsed_s, 3)
    report["created_at"] = created_at
    return report


def file_stem(name: str) -> str:
    """A file name for an embedder name (``npz:/x/y.npz`` -> ``npz_x_y.npz``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "embedder"


def write_json(path: Path, data: dict) -> None:
    write_atomic(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def gate_record(name: str, gate: dict) -> RecordedTest:
    """The gate as one junit test case ``gate[<embedder>]``: its outcome is the decision, its
    message the explanation, its properties the figures of every gated metric."""
    properties: list[tuple[str, object]] = [
        ("mode", gate.get("mode", "")),
        ("alpha", gate.get("alpha", "")),
    ]
    for metric, row in gate.get("metrics", {}).items():
        for key in (
            "baseline",
            "candidate",
            "difference",
            "p_value",
            "p_adjusted",
            "margin",
            "detectable",
        ):
            if row.get(key) is not None:
                properties.append((f"{metric}.{key}", f"{row[key]:.6g}"))
    for metric, floor in gate.get("minimums", {}).items():
        properties.append((f"{metric}.minimum", f"{floor['required']:.6g}"))
    message = "\n".join(
        [gate["reason"], *gate.get("explanation", []), *flip_lines(name, gate, shown=None)]
    )
    return RecordedTest(
        f"gate[{name}]",
        f"gate[{name}]",
        "passed" if gate["passed"] else "failed",
        0.0,
        "" if gate["passed"] else message,
        properties,
    )


# A query whose rank 1 fails, in the junit of a gated session: the gate is the verdict, so the
# file shows no failure but the gate's (GitLab's widget and Jenkins count <failure>s); the query
# is a <skipped> case of this type, its message the one-line reason, its text the whole failure.
WITHIN_GATE = "execretrieval.rank1-fails-under-gate"


def junit_xml(
    name: str,
    records: Sequence[RecordedTest],
    gate: dict | None = None,
    report: dict | None = None,
    prefix: str = "",
) -> bytes:
    """One junit test suite named for the model: a test case per query, and the gate's
    (``gate[<prefix><name>]``: ``prefix`` names another language pool than the directory's own).

    The file follows the JUnit schema CI servers validate against (xunit2; ``tests/data/
    junit.xsd`` says where the rules come from): a test case holds its outcome element and a
    ``<system-out>`` with its figures as ``name: value`` lines (the schema has no test-case
    properties); the suite's ``<properties>`` hold the model's figures (``report``: corpus and
    metrics). Every name, value and message passes :func:`.sanitize.xml_text`: no control
    character (and nothing XML cannot hold) reaches the file. The suite's ``tests``,
    ``failures``, ``errors`` and ``skipped`` count the elements written. With a ``gate`` the
    file agrees with its decision, as pytest's own outcomes do: the gate's case
    ``gate[<name>]`` passes or fails with the explanation, and a query whose rank 1 fails is a
    measurement, a ``<skipped>`` of type :data:`WITHIN_GATE` with its one-line reason as message
    and its whole failure text (pytest reports it as xfail), so a green gate leaves no failed
    case and a red one exactly the gate's.
    """
    if gate is not None:
        records = [*records, gate_record(prefix + name, gate)]
    suite = ET.Element("testsuite", {"name": xml_text(name)})
    if report is not None:
        props = ET.SubElement(suite, "properties")
        metrics = [(f"metric.{m}", f"{v:.6g}") for m, v in report["metrics"].items()]
        figures = [
            ("corpus_sha256", report["corpus"]["sha256"]),
            ("n_queries", report["corpus"]["n_queries"]),
            *metrics,
        ]
        for key, value in figures:
            ET.SubElement(props, "property", {"name": key, "value": xml_text(str(value))})
    counts = {"failure": 0, "error": 0, "skipped": 0}
    for r in sorted(records, key=lambda r: r.nodeid):
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": xml_text(f"execretrieval.{name}"),
                "name": xml_text(r.query_id),
                "time": f"{r.duration:.3f}",
            },
        )
        message = xml_text(r.message)
        first = message.splitlines()[0] if message else r.outcome
        measured = gate is not None and not r.nodeid.startswith("gate[")
        if measured and r.outcome in ("failed", "xfailed") and r.message:
            tag, attrs = "skipped", {"type": WITHIN_GATE, "message": first}
        elif r.outcome in ("failed", "error"):
            tag, attrs = ("failure" if r.outcome == "failed" else "error"), {"message": first}
        elif r.outcome in ("skipped", "xfailed"):
            tag, attrs = "skipped", {"message": first}
        else:
            tag = None
        if tag is not None:
            ET.SubElement(case, tag, attrs).text = message
            counts[tag] += 1
        if r.properties:
            ET.SubElement(case, "system-out").text = "".join(
                xml_text(f"{key}: {value}\n") for key, value in r.properties
            )
    suite.attrib.update(
        {
            "tests": str(len(records)),
            "failures": str(counts["failure"]),
            "errors": str(counts["error"]),
            "skipped": str(counts["skipped"]),
            "time": f"{sum(r.duration for r in records):.3f}",
        }
    )
    root = ET.Element(
        "testsuites", {k: suite.attrib[k] for k in ("tests", "failures", "errors", "time")}
    )
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def metrics_table(reports: dict[str, dict], fmt: str = "simple") -> str:
    """Per model: queries (``N of M`` when a run was cut short), then a column per metric with
    a ``table`` in :data:`.METRICS` (the mean, with its 95% CI where ``table`` is ``"ci"``); the
    headline metric is followed by its tie range and the number of rank-1 ties (tie-aware
    expected values)."""
    headers = ["embedder", "queries"]
    columns = [m for m in METRICS if m.table]
    for m in columns:
        headers += [
            m.title,
            *((f"{m.name} tie range", "rank-1 ties") if m.name == HEADLINE else ()),
        ]
    rows = []
    for name, r in reports.items():
        short = r.get("incomplete")  # a run cut short: "N of M" queries ran
        row = [
            name,
            f"{r['corpus']['n_queries']} of {short['selected']}"
            if short
            else r["corpus"]["n_queries"],
        ]
        for m in columns:
            value = format(r["metrics"][m.name], m.fmt)
            if m.table == "ci":
                lo, hi = r["ci95"][m.name]
                value += f" [{lo:{m.fmt}}, {hi:{m.fmt}}]"
            row.append(value)
            if m.name == HEADLINE:
                row += [tie_range(r, m.name), r.get("ties", {}).get("rank1", "")]
        rows.append(row)
    return tabulate(rows, headers, tablefmt=fmt, disable_numparse=True)


def gate_lines(name: str, gate: dict) -> list[str]:
    """A gate's decision and its reasons, one per line."""
    return [f"gate [{name}]: {gate['reason']}", *(f"  {x}" for x in gate.get("explanation", []))]


def gate_text(name: str, gate: dict) -> str:
    """A gate's test-case text (the junit ``gate[<name>]`` case, pytest's test report): its
    reasons, then every flip against the baseline (:func:`.verdict.flip_lines`)."""
    return "\n".join([*gate_lines(name, gate), *flip_lines(name, gate, shown=None)])


def final_summary(
    reports: dict[str, dict], gates: dict[str, dict], written: Sequence[Path], encode_s: float
) -> list[str]:
    """The session's closing lines, verdict first: each gate's decision with its reasons, the
    queries that flipped against the baseline, then the metrics table, the lifts and indexes,
    the rerank pipelines that do not beat the query-blind controls, the reports written."""
    lines = [line for name, gate in gates.items() for line in gate_lines(name, gate)]
    lines += [line for name, gate in gates.items() for line in flip_lines(name, gate)]
    lines += metrics_table(reports).splitlines()
    lines.append(f"(tie-aware expected values; embedding and ranking took {encode_s:.1f} s)")
    for name, report in reports.items():
        lines += lift_lines(name, report) + serving_lines(name, report)
    lines += controls_flag_lines(reports)
    if written:
        lines.append("reports: " + ", ".join(str(p) for p in written))
    return lines


def ungated_exit_line(
    records: dict[str, list[RecordedTest]], gates: dict[str, dict], written: Sequence[Path]
) -> str | None:
    """The last line of a session in which queries failed and no gate decided: why pytest
    exits 1 and how to gate or keep reports. ``None`` when a gate decided or nothing failed."""
    failed = sum(r.outcome in ("failed", "error") for rs in records.values() for r in rs)
    if gates or not failed:
        return None
    ran = sum(len(rs) for rs in records.values())
    keep = "" if written else "; keep reports with --execretrieval-report-dir=DIR"
    return (
        f"exit 1: {failed} of {ran} queries failed at rank 1 and no gate decides (plain "
        "pytest semantics); to gate, add --execretrieval-baseline=REPORT.json or "
        f"--execretrieval-min=exec@1=X{keep}"
    )


def analyses_markdown(
    reports: Sequence[dict],
    analyses: Sequence[dict],
    images: Sequence[str],
    metrics_md: str,
    notes: Sequence[str] = (),
    verdict: str = "",
) -> str:
    """The summary.md text of reports with their analyses: the title, the ``verdict``
    (:func:`.verdict.verdict_markdown`: the gates' decisions and the flips, first), the corpus
    line, the metrics tables (``metrics_md``), images (with ``notes`` on the missing ones, see
    :func:`similarity_notes`), the analyses tables (:func:`.tables.analyses_tables`)."""
    names = report_names(list(reports))
    corpus = reports[0]["corpus"]
    lines = [
        "# ExecRetrieval report",
        "",
        *([verdict.rstrip("\n"), ""] if verdict else []),
        (
            f"Corpus `{corpus['sha256'][:16]}`: {corpus.get('n_queries', '?')} queries, "
            f"{corpus.get('n_snippets', '?')} snippets in the pool; {len(reports)} model(s)."
        ),
        "",
        metrics_md.rstrip(),
        "",
    ]
    if images or notes:
        lines += ["## Plots", "", *(f"![{Path(img).stem}]({img})" for img in images), ""]
        lines += [*(note[0].upper() + note[1:] + "." for note in notes), *([""] if notes else [])]
    for table in analyses_tables(names, analyses):
        lines += table_markdown(table)
    return "\n".join(lines) + "\n"


def real_bugs_markdown(names: Sequence[str], analyses: Sequence[dict]) -> list[str]:
    """The real-bug table of summary.md (:func:`.tables.real_bugs_table`) as lines, ``[]`` when
    no pool has real bugs."""
    table = real_bugs_table(names, analyses)
    return [] if table is None else table_markdown(table)


def per_class_markdown(names: Sequence[str], analyses: Sequence[dict]) -> list[str]:
    """The per-class table of summary.md (:func:`.tables.per_class_table`) as lines, ``[]``
    when no report has per-class analyses."""
    table = per_class_table(names, analyses)
    return [] if table is None else table_markdown(table)


def summary_markdown(
    reports: dict[str, dict],
    gates: dict[str, dict],
    analyses: Sequence[dict],
    metrics_md: str,
    images: Sequence[str] = (),
    notes: Sequence[str] = (),
    html: str = HTML_FILE,
) -> str:
    """summary.md, verdict first: the gates' decisions (``gates``: the reports' gate records by
    name) and the queries that flipped against the baseline, then the corpus, the metrics
    (``metrics_md``), the plots (``images``, ``notes``), the analyses tables (``analyses``: the
    reports' analyses, same order), the rerank pipelines the query-blind controls flag, the
    pipelines' lifts and indexes. ``html``: the HTML page's path from the summary (the flips
    link to their rows there)."""
    data = list(reports.values())
    verdict = verdict_markdown(gates, html)
    text = analyses_markdown(data, analyses, images, metrics_md, notes, verdict)
    lifts = lift_markdown(reports) + serving_markdown(reports)
    flags = controls_flag_markdown(reports)
    return text + ("\n" + flags if flags else "") + ("\n" + lifts if lifts else "")


def session_summary_markdown(
    reports: dict[str, dict], gates: dict[str, dict], html: str = HTML_FILE
) -> str:
    """The session's summary.md (:func:`summary_markdown`): every pair of models compared in
    its metrics tables, no plots (they come from `execretrieval report DIR`)."""
    data = list(reports.values())
    metrics_md = compare_reports(data, "markdown", all_pairs=False)
    return summary_markdown(reports, gates, [r["analyses"] for r in data], metrics_md, html=html)


def earlier_reports(report_dir: Path, reports: dict[str, dict], skip: Sequence[Path]) -> dict:
    """The other report JSONs in ``report_dir`` (earlier sessions writing into the same
    directory) of the same corpus as ``reports``, by model name in file-name order; a file that
    is not a report, another corpus's report or one of ``skip`` is left out."""
    from ..scoring.compare import ReportError, load_report

    corpus = next(iter(reports.values()))["corpus"]["sha256"]
    found: dict[str, dict] = {}
    for path in sorted(set(Path(report_dir).glob("*.json")) - set(skip)):
        try:
            data = load_report(path)
        except ReportError:
            continue
        name = str(data["embedder"].get("name", path.stem))
        if data["corpus"].get("sha256") == corpus and "analyses" in data and name not in reports:
            found.setdefault(name, data)
    return found


def write_reports(
    report_dir: Path,
    reports: dict[str, dict],
    records: dict[str, list[RecordedTest]],
    gates: dict[str, dict],
    prefix: str = "",
) -> list[Path]:
    """Write every model's JSON and junit XML and the summary; returns the paths written.

    ``prefix`` names the language pool (``javascript/``) in the gate's junit case and the
    summary's gates, so a CI's test report merging every pool's files names each gate
    once (``gate[javascript/bm25]`` beside ``gate[bm25]``); file names stay the model's.

    ``summary.md`` covers every model whose report JSON is in ``report_dir`` (same corpus):
    sessions run one model at a time into one directory keep each other's (this session's
    models first, then the earlier ones, see :func:`earlier_reports`). Every target is checked
    first (:func:`.safe_write.check_target`): a symlink planted at any of them is refused before
    anything is written."""
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    stems = [file_stem(name) for name in reports]
    written = [report_dir / f"{stem}{ext}" for stem in stems for ext in (".json", ".xml")]
    for path in [*written, report_dir / "summary.md"]:
        check_target(path)
    for (name, data), stem in zip(reports.items(), stems):
        write_json(report_dir / f"{stem}.json", data)
        write_atomic(
            report_dir / f"{stem}.xml",
            junit_xml(name, records[name], gates.get(name), data, prefix),
        )
    earlier = earlier_reports(report_dir, reports, written)
    every_gate = {
        prefix + n: g
        for n, g in {**{n: r["gate"] for n, r in earlier.items() if r.get("gate")}, **gates}.items()
    }
    written.append(report_dir / "summary.md")
    html = "../" * prefix.count("/") + HTML_FILE  # the page is the report directory's
    summary = session_summary_markdown({**reports, **earlier}, every_gate, html)
    write_atomic(written[-1], escape(summary))
    return written
