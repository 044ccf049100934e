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
from ..scoring.analyses import DENSITIES, analyses, operator_order
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
from .index_text import index_lines, index_markdown
from .lift_text import lift_lines, lift_markdown

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
) -> dict:
    """The report JSON of ``name`` over the queries that ran (``query_ids``); ``isolation``:
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
    report["analyses"] = analyses(report)
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
    message = "\n".join([gate["reason"], *gate.get("explanation", [])])
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


def final_summary(
    reports: dict[str, dict], gates: dict[str, dict], written: Sequence[Path], encode_s: float
) -> list[str]:
    """The session's closing lines: the metrics table, the gates, the reports written."""
    lines = metrics_table(reports).splitlines()
    lines.append(f"(tie-aware expected values; embedding and ranking took {encode_s:.1f} s)")
    for name, report in reports.items():
        lines += lift_lines(name, report) + index_lines(name, report)
    for name, gate in gates.items():
        lines += gate_lines(name, gate)
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


def gate_markdown(gates: dict[str, dict]) -> str:
    lines = ["## Upgrade gate", ""]
    for name, decision in gates.items():
        lines.append(f"- **{name}**: {decision['reason']}")
        lines += [f"  - {x}" for x in decision.get("explanation", [])]
    return "\n".join(lines) + "\n"


def or_na(x: float | None, spec: str = ".3f") -> str:
    return "n/a" if x is None else format(x, spec)


def analyses_markdown(
    reports: Sequence[dict],
    analyses: Sequence[dict],
    images: Sequence[str],
    metrics_md: str,
    notes: Sequence[str] = (),
) -> str:
    """The summary.md text of reports with their analyses: corpus line, metrics tables
    (``metrics_md``), images (with ``notes`` on the missing ones, see
    :func:`similarity_notes`), analysis highlights."""
    names = report_names(list(reports))
    corpus = reports[0]["corpus"]
    lines = [
        "# ExecRetrieval report",
        "",
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
    lines += [
        "## Analyses highlights",
        "",
        (
            "Deceived pair: an own distractor (mutant of the query's canonical) scoring >= the "
            "canonical. Margin: canonical score minus the best own distractor score. "
            "Rank-1 misses: share of failing rank-1 snippets that are the query's own distractor. "
            "Density: expected exec@1 keeping d own distractors per query. "
            "rho: Spearman(edit chars, margin). "
            "AUC: equivalent vs mutant code-to-code similarity (< 0.5 = inverted)."
        ),
        "",
        (
            "| model | deceived pairs | queries deceived | median margin | rank-1 misses to own "
            f"distractor | exec@1 at d={DENSITIES[0]} / d={DENSITIES[-1]} | rho | AUC | "
            "false-high rate |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, a in zip(names, analyses):
        dec = a["deception"]["overall"]
        dens = a["density_ablation"]["expected_exec1"]
        c2c = a["code_to_code"] or {}
        miss = a["rank1_miss_attribution"]
        lines.append(
            f"| {name} | {or_na(dec['pair_rate'])} ({dec['n_pairs']}) | "
            f"{or_na(dec['query_rate'])} | "
            f"{or_na(dec['median_margin'], '+.4f')} | {or_na(miss['own_distractor_share'])} "
            f"({miss['n_misses']} misses) | {or_na(dens[0])} / {or_na(dens[-1])} | "
            f"{or_na(a['edit_size']['spearman_rho'])} | {or_na(c2c.get('auc'))} | "
            f"{or_na(c2c.get('false_high_rate'))} |"
        )
    domains = sorted({d for a in analyses for d in a["per_domain"]})
    if domains:
        lines += [
            "",
            f"{HEADLINE} by domain (queries):",
            "",
            f"| domain | {' | '.join(names)} |",
            f"|---|{'---|' * len(names)}",
        ]
        for dom in domains:
            cells = [a["per_domain"].get(dom) for a in analyses]
            lines.append(
                f"| {dom} | "
                + " | ".join(
                    "n/a" if c is None else f"{or_na(c[HEADLINE])} ({c['n']})" for c in cells
                )
                + " |"
            )
    lines += per_class_markdown(names, analyses)
    lines += real_bugs_markdown(names, analyses)
    return "\n".join(lines) + "\n"


def real_bugs_markdown(names: Sequence[str], analyses: Sequence[dict]) -> list[str]:
    """The real-bug table of summary.md (:func:`.scoring.analyses.real_bugs`), when a pool has
    real bugs: per model, real-bug against mutant deception on the same queries, the paired
    difference with its CI and p, then the same per TSSB-3M pattern."""
    sections = [a.get("real_bugs") for a in analyses]
    if not any(sections):
        return []

    def cell(v: dict | None) -> str:
        if not v:
            return "n/a"
        text = f"{or_na(v['real_bug_deception'])} vs {or_na(v['mutant_deception'])}"
        if v.get("difference_ci95"):
            low, high = v["difference_ci95"]
            text += f"; {v['difference']:+.3f} [{low:+.3f}, {high:+.3f}], p {v['p_value']:.3g}"
        return f"{text} ({v['n_pairs']})"

    patterns = sorted({p for s in sections if s for p in s["by_pattern"]})
    lines = [
        "",
        "Real bugs from history: the share of real-bug/fix pairs where the pre-fix version "
        "scores at or above its fix, vs the share of the same queries' mutants at or above "
        "the canonical; the paired difference (real bug - mutants) with its bootstrap 95% CI "
        "and sign-flip p (pairs).",
        "",
        f"| pattern | {' | '.join(names)} |",
        f"|---|{'---|' * len(names)}",
        f"| all | {' | '.join(cell(s) for s in sections)} |",
    ]
    for p in patterns:
        cells = [cell((s or {}).get("by_pattern", {}).get(p)) for s in sections]
        lines.append(f"| {p} | {' | '.join(cells)} |")
    exec1 = [(s or {}).get("exec@1") for s in sections]
    lines.append(
        "| exec@1 with / without real bugs | "
        + " | ".join(
            "n/a" if not e else f"{or_na(e['with_real_bugs'])} / {or_na(e['mutants_only'])}"
            for e in exec1
        )
        + " |"
    )
    return lines


def per_class_markdown(names: Sequence[str], analyses: Sequence[dict]) -> list[str]:
    """The per-class table of summary.md (:func:`.scoring.analyses.per_class`): per operator
    class and model, the deception rate and exec@1 with only that class's distractors in the
    pool, then the realistic (TSSB-3M-weighted) and the paper's six-class mixes."""
    sections = [a.get("per_class") for a in analyses]
    classes = operator_order(c for p in sections if p for c in p["by_class"])
    if not classes:
        return []
    lines = [
        "",
        "Per operator class: deceived pairs / exec@1 with only that class's distractors in "
        "the pool (queries). Mixes weigh those per-class values: realistic by the TSSB-3M "
        "frequency of the pattern each class writes ("
        + next(p for p in sections if p)["source"]
        + "), paper by the six core classes equally.",
        "",
        f"| class | {' | '.join(names)} |",
        f"|---|{'---|' * len(names)}",
    ]
    for c in classes:
        cells = [(p or {}).get("by_class", {}).get(c) for p in sections]
        lines.append(
            f"| {c} | "
            + " | ".join(
                "n/a"
                if v is None
                else f"{or_na(v['deception'])} / {or_na(v['exec@1'])} ({v['n_queries']})"
                for v in cells
            )
            + " |"
        )
    for mix in ("realistic_mix", "paper_mix"):
        cells = [(p or {}).get(mix) for p in sections]
        lines.append(
            f"| {mix.replace('_', ' ')} | "
            + " | ".join(
                "n/a" if v is None else f"{or_na(v['deception'])} / {or_na(v['exec@1'])}"
                for v in cells
            )
            + " |"
        )
    return lines


def session_summary_markdown(reports: dict[str, dict], gates: dict[str, dict]) -> str:
    """The session's summary.md: metrics with CIs, every pair of models compared, the analyses
    highlights, the pipelines' lifts and the gate decisions (plots come from
    `execretrieval report DIR`)."""
    data = list(reports.values())
    text = analyses_markdown(
        data, [r["analyses"] for r in data], [], compare_reports(data, "markdown", all_pairs=False)
    )
    lifts = lift_markdown(reports) + index_markdown(reports)
    return text + ("\n" + lifts if lifts else "") + ("\n" + gate_markdown(gates) if gates else "")


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
    write_atomic(written[-1], escape(session_summary_markdown({**reports, **earlier}, every_gate)))
    return written
