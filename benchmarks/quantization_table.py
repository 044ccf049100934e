"""Issue 59: the serving tables of docs/serving.md, from the reports of one benchmark session
with ``--execretrieval-quantize`` and ``--execretrieval-dims`` (embedding quantisation) or
``--execretrieval-backend`` (runtime backends).

Per pipeline (the float32 embedder first): exec@1 and exec@10 (tie-aware expected values),
their difference against float32 with the paired test (the report's ``lift``), the pytest
items' rank-1 passes (a tie at rank 1 fails) with the exact McNemar test, the canonicals the
pipeline dropped from the float32 top 10 and the own mutants it moved to rank 1 (the report's
``quantize`` or ``backend`` section).
Prints a markdown table.

Usage: python benchmarks/quantization_table.py REPORT_DIR [--embedder minilm]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

COST_SECTIONS = ("quantize", "backend")  # the serving stages whose reports carry their cost


def _cost(report: dict) -> dict | None:
    return next((report[s] for s in COST_SECTIONS if s in report), None)


def _reports(directory: Path, embedder: str) -> list[dict]:
    found = [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]
    mine = [r for r in found if r.get("embedder", {}).get("name", "").startswith(embedder)]
    mine = [r for r in mine if r["embedder"]["name"] == embedder or _cost(r)]
    return sorted(mine, key=lambda r: (_cost(r) is not None, r["embedder"]["name"]))


def _metric(report: dict, metric: str) -> str:
    value = report["metrics"][metric]
    if "lift" not in report:
        return f"{value:.3f}"
    m = report["lift"]["metrics"][metric]
    return f"{value:.3f} ({m['difference']:+.3f}, p={m['p']:.2g})"


def _strict(report: dict) -> str:
    """The pytest items' rank-1 passes (a tie of passing and failing snippets fails)."""
    passed = sum(q["passed"] for q in report["per_query"])
    if "lift" not in report:
        return str(passed)
    return f"{passed} (p={report['lift']['exec@1_mcnemar']['p']:.2g})"


def table(directory: Path, embedder: str) -> str:
    head = (
        "| pipeline | queries | exec@1 (diff, p) | rank 1 passes, ties failing (McNemar p) | "
        "exec@10 (diff, p) | canonical dropped from top 10 | own mutant moved to rank 1 |\n"
        "|---|---|---|---|---|---|---|"
    )
    rows = [head]
    for r in _reports(directory, embedder):
        cost = _cost(r)
        dropped = f"{cost['canonical_dropped_n']}" if cost else "-"
        promoted = f"{cost['mutant_first_n']}" if cost else "-"
        rows.append(
            f"| {r['embedder']['name']} | {len(r['per_query'])} | {_metric(r, 'exec@1')} | "
            f"{_strict(r)} | {_metric(r, 'exec@10')} | {dropped} | {promoted} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report_dir", type=Path)
    parser.add_argument("--embedder", default="minilm")
    args = parser.parse_args()
    print(table(args.report_dir, args.embedder))


if __name__ == "__main__":
    main()
