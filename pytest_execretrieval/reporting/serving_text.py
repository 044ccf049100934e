"""What a serving choice cost, as text: the terminal line and the summary.md sections (the
figures: ``scoring/serving_cost.py``, in a pipeline report's ``index``, ``quantize`` or
``backend`` section)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["SECTIONS", "serving_lines", "serving_markdown"]

# The report section of each serving stage: (its terminal label, where recall and drops are
# measured, the summary.md title)
SECTIONS = {
    "index": (
        "index",
        "from the candidates",
        "Approximate index: what it costs against exact ranking",
    ),
    "quantize": (
        "quantize",
        "from the top 10",
        "Embedding quantisation: what it costs against the float32 vectors",
    ),
    "backend": (
        "backend",
        "from the top 10",
        "Runtime backend: what it costs against float32 torch",
    ),
}


def _costed(reports: Mapping[str, dict], section: str) -> dict[str, dict]:
    return {n: r for n, r in reports.items() if "recall@10" in r.get(section, {})}


def serving_lines(name: str, report: dict) -> list[str]:
    """One line per section of ``report``: recall of the reference's top 10, canonicals
    dropped, mutants promoted to rank 1 (and, off an index, exec@1 before and after)."""
    lines = []
    for section, (label, where, _) in SECTIONS.items():
        cost = report.get(section)
        if not cost:
            continue
        if "error" in cost:
            lines.append(f"{label} [{name}]: {cost['error']}")
            continue
        exact = "exact" if section == "index" else "float32"
        line = (
            f"{label} [{name}]: recall of the {exact} top 10 {cost['recall@10']:.3f}; canonical "
            f"dropped {where} ({exact} had it in its top 10) for "
            f"{cost['canonical_dropped_n']} of {cost['n']} queries; an own mutant moved to rank 1 "
            f"for {cost['mutant_first_n']}"
        )
        if section != "index":
            e = cost["exec@1"]
            line += f"; exec@1 {e['before']:.3f} -> {e['after']:.3f} (p={e['p']:.3g})"
        lines.append(line)
    return lines


def serving_markdown(reports: Mapping[str, dict]) -> str:
    """The summary.md sections: each costed pipeline's cost overall and per operator class."""
    head = (
        "| {what} | queries | recall@10 of {exact} | canonical dropped | mutant moved to rank 1 |"
        "{exec_head}\n|---|---|---|---|---|{exec_rule}"
    )
    parts = []
    for section, (_, _, title) in SECTIONS.items():
        costed = _costed(reports, section)
        if not costed:
            continue
        index = section == "index"
        fmt = {
            "exact": "exact" if index else "float32",
            "exec_head": "" if index else " exec@1 | exec@10 |",
            "exec_rule": "" if index else "---|---|",
        }
        lines = [f"## {title}", ""]
        lines += head.format(what="pipeline", **fmt).splitlines()
        lines += [_row(name, r[section], index) for name, r in costed.items()]
        for name, r in costed.items():
            rows = r[section]["by_operator"]
            if rows:
                lines += ["", f"### {name}: per operator class", ""]
                lines += head.format(what="operator class", **fmt).splitlines()
                lines += [_row(c, g, index) for c, g in rows.items()]
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def _row(label: str, g: dict, index: bool = True) -> str:
    row = (
        f"| {label} | {g['n']} | {g['recall@10']:.3f} | {g['canonical_dropped']:.3f} "
        f"({g['canonical_dropped_n']}) | {g['mutant_first']:.3f} ({g['mutant_first_n']}) |"
    )
    if index:
        return row
    return row + "".join(
        f" {g[m]['before']:.3f} -> {g[m]['after']:.3f} (p={g[m]['p']:.3g}) |"
        for m in ("exec@1", "exec@10")
    )
