"""Reports of a benchmark run: JSON (schema_version 1), junit XML per model, summary.md, and the
terminal table. Plain functions of plain data; no pytest here."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from xml.etree import ElementTree as ET

from tabulate import tabulate

from .analyses import analyses
from .benchmark import BenchmarkRun, QueryResult
from .metrics import METRIC_NAMES, mean_metrics, metric_matrix, query_metrics
from .retrieval import TIE_POLICY
from .sandbox import isolation_in_force
from .stats import bootstrap_ci

SCHEMA_VERSION = 1
TABLE_METRICS = ("exec@1", "exec@3", "exec@5", "exec@10", "execp@1", "execp@3", "execp@5",
                 "execp@10", "ndcg@10", "mrr")  # fmt: skip


@dataclass
class TestRecord:
    """One executed benchmark item as the controller saw it (builtins only: crosses xdist)."""

    nodeid: str
    query_id: str
    outcome: str  # "passed" | "failed" | "error" | "xfailed" | "xpassed" | "skipped"
    duration: float
    message: str = ""
    properties: list = field(default_factory=list)


def per_query_metrics(result: QueryResult) -> dict[str, float]:
    return query_metrics([h.passes for h in result.top], result.canonical_rank)


def build_report(
    name: str, run: BenchmarkRun, query_ids: Sequence[str], elapsed_s: float, seed: int = 0
) -> dict:
    """The report JSON of ``name`` over the queries that ran (``query_ids``)."""
    results = [run.results[q] for q in sorted(query_ids)]
    rows = [per_query_metrics(r) for r in results]
    matrix = metric_matrix(rows)
    means = mean_metrics(matrix)
    ci = bootstrap_ci(matrix, seed=seed)
    invocation = dict(run.embedder)
    invocation["name"] = name
    report = {
        "schema_version": SCHEMA_VERSION,
        "embedder": invocation,
        "corpus": {
            "sha256": run.corpus_sha256,
            "n_queries": len(results),
            "n_snippets": run.n_snippets,
        },  # fmt: skip
        "tie_policy": TIE_POLICY,
        "metrics": {m: means[m] for m in METRIC_NAMES},
        "ci95": {m: [float(lo), float(hi)] for m, (lo, hi) in zip(METRIC_NAMES, ci)},
        "per_query": [
            {
                "query_id": r.query_id,
                "domain": r.domain,
                "passed": r.passed,
                "canonical_rank": r.canonical_rank,
                "canonical_score": r.canonical_score,
                "top": [asdict(h) for h in r.top],
                "own_distractors": list(r.own_distractors),
                "code_similarity": r.code_similarity,
            }
            for r in results
        ],  # fmt: skip
    }
    report["analyses"] = analyses(report)
    report["isolation"] = isolation_in_force()  # the sandbox layers in force during the run
    report["elapsed_s"] = round(elapsed_s, 3)
    report["created_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return report


def file_stem(name: str) -> str:
    """A file name for an embedder name (``npz:/x/y.npz`` -> ``npz_x_y.npz``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "embedder"


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def junit_xml(name: str, records: Sequence[TestRecord]) -> bytes:
    """One junit test suite named for the model, one test case per query."""
    counts = {k: sum(r.outcome == k for r in records) for k in ("failed", "error", "skipped")}
    suite = ET.Element("testsuite", {
        "name": name, "tests": str(len(records)), "failures": str(counts["failed"]),
        "errors": str(counts["error"]), "skipped": str(counts["skipped"]),
        "time": f"{sum(r.duration for r in records):.3f}",
    })  # fmt: skip
    for r in sorted(records, key=lambda r: r.nodeid):
        case = ET.SubElement(suite, "testcase", {
            "classname": f"execretrieval.{name}", "name": r.query_id, "time": f"{r.duration:.3f}",
        })  # fmt: skip
        if r.properties:
            props = ET.SubElement(case, "properties")
            for key, value in r.properties:
                ET.SubElement(props, "property", {"name": str(key), "value": str(value)})
        if r.outcome in ("failed", "error"):
            tag = "failure" if r.outcome == "failed" else "error"
            first = r.message.splitlines()[0] if r.message else r.outcome
            ET.SubElement(case, tag, {"message": first}).text = r.message
        elif r.outcome in ("skipped", "xfailed"):
            ET.SubElement(case, "skipped", {"message": r.outcome}).text = r.message
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def metrics_table(reports: dict[str, dict], fmt: str = "simple") -> str:
    headers = ["embedder", *TABLE_METRICS]
    rows = [
        [name, *(f"{r['metrics'][m]:.3f}" for m in TABLE_METRICS)] for name, r in reports.items()
    ]
    return tabulate(rows, headers, tablefmt=fmt)


def gate_markdown(gates: dict[str, dict]) -> str:
    lines = ["## Upgrade gate", ""]
    lines += [f"- **{name}**: {decision['reason']}" for name, decision in gates.items()]
    return "\n".join(lines) + "\n"


def summary_markdown(reports: dict[str, dict], gates: dict[str, dict]) -> str:
    """The session's summary.md: metrics with CIs, every pair of models compared, the analyses
    highlights and the gate decisions (plots come from `execretrieval report DIR`)."""
    from .compare import compare_reports
    from .plots import summary_markdown as analysis_summary

    data = list(reports.values())
    text = analysis_summary(data, [r["analyses"] for r in data], [],
                            compare_reports(data, "markdown"))  # fmt: skip
    return text + ("\n" + gate_markdown(gates) if gates else "")


def write_reports(
    report_dir: Path, reports: dict[str, dict], records: dict[str, list[TestRecord]],
    gates: dict[str, dict],
) -> None:  # fmt: skip
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    for name, data in reports.items():
        write_json(report_dir / f"{file_stem(name)}.json", data)
        (report_dir / f"{file_stem(name)}.xml").write_bytes(junit_xml(name, records[name]))
    (report_dir / "summary.md").write_text(summary_markdown(reports, gates))
