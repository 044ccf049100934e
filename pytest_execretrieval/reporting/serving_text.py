"""What an index cost, as text: the terminal line and the summary.md section (the figures:
``scoring/index_cost.py``, in an indexed report's ``index``)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["index_lines", "index_markdown"]


def _indexed(reports: Mapping[str, dict]) -> dict[str, dict]:
    return {n: r for n, r in reports.items() if "recall@10" in r.get("index", {})}


def index_lines(name: str, report: dict) -> list[str]:
    """One line per indexed report: recall of the exact top 10, canonicals dropped, mutants
    promoted to rank 1."""
    cost = report.get("index")
    if not cost:
        return []
    if "error" in cost:
        return [f"index [{name}]: {cost['error']}"]
    return [
        f"index [{name}]: recall of the exact top 10 {cost['recall@10']:.3f}; canonical "
        f"dropped from the candidates (exact had it in its top 10) for "
        f"{cost['canonical_dropped_n']} of {cost['n']} queries; an own mutant moved to rank 1 "
        f"for {cost['mutant_first_n']}"
    ]


def index_markdown(reports: Mapping[str, dict]) -> str:
    """The summary.md section: each indexed pipeline's cost overall and per operator class."""
    indexed = _indexed(reports)
    if not indexed:
        return ""
    head = (
        "| {what} | queries | recall@10 of exact | canonical dropped | mutant moved to rank 1 |\n"
        "|---|---|---|---|---|"
    )
    lines = ["## Approximate index: what it costs against exact ranking", ""]
    lines += head.format(what="pipeline").splitlines()
    lines += [_row(name, cost["index"]) for name, cost in indexed.items()]
    for name, r in indexed.items():
        rows = r["index"]["by_operator"]
        if rows:
            lines += ["", f"### {name}: per operator class", ""]
            lines += head.format(what="operator class").splitlines()
            lines += [_row(c, g) for c, g in rows.items()]
    return "\n".join(lines) + "\n"


def _row(label: str, g: dict) -> str:
    return (
        f"| {label} | {g['n']} | {g['recall@10']:.3f} | {g['canonical_dropped']:.3f} "
        f"({g['canonical_dropped_n']}) | {g['mutant_first']:.3f} ({g['mutant_first_n']}) |"
    )
