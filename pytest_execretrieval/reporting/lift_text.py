"""A pipeline's lift over its first stage as text: the terminal line and the summary.md section
(the figures: ``scoring/lift.py``, in the report's ``lift``)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["lift_lines", "lift_markdown"]


def lift_lines(name: str, report: dict) -> list[str]:
    """One line per pipeline report: exec@1 before -> after, the lift with CI and p values."""
    lift_ = report.get("lift")
    if not lift_:
        return []
    m = lift_["metrics"]["exec@1"]
    mc = lift_["exec@1_mcnemar"]
    info = report.get("rerank", {})
    fb = info.get("fallback", {}).get("n")
    fallback = f"; first-stage order kept for {fb} queries" if fb else ""
    return [
        f"lift [{name}] over {lift_['first_stage']}: exec@1 {m['before']:.3f} -> "
        f"{m['after']:.3f}, {m['difference']:+.3f} [{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}] "
        f"({m['test']} p = {m['p']:.3g}; McNemar on pass/fail {mc['only_first_stage']} vs "
        f"{mc['only_pipeline']}, p = {mc['p']:.3g}){fallback}"
    ]


def lift_markdown(reports: Mapping[str, dict]) -> str:
    """The summary.md section: each pipeline beside its first stage, exec@1 lift overall and
    per operator class."""
    pipelines = {n: r for n, r in reports.items() if r.get("lift")}
    if not pipelines:
        return ""
    lines = [
        "## Reranking: rank-1 lift over the first stage",
        "",
        "| pipeline | first stage | exec@1 before | after | lift [95% CI] | p | McNemar p "
        "| fallbacks |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in pipelines.items():
        m, mc = r["lift"]["metrics"]["exec@1"], r["lift"]["exec@1_mcnemar"]
        fallbacks = r.get("rerank", {}).get("fallback", {}).get("n", "-")  # none for an index
        lines.append(
            f"| {name} | {r['first_stage']} | {m['before']:.3f} | {m['after']:.3f} | "
            f"{m['difference']:+.3f} [{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}] | "
            f"{m['p']:.3g} | {mc['p']:.3g} | {fallbacks} |"
        )
    for name, r in pipelines.items():
        rows = r["lift"]["by_operator"]
        if rows:
            lines += [
                "",
                f"### {name}: exec@1 lift per operator class",
                "",
                "| operator class | queries | before | after | lift [95% CI] | p |",
                "|---|---|---|---|---|---|",
            ]
            lines += [
                f"| {c} | {g['n']} | {g['before']:.3f} | {g['after']:.3f} | "
                f"{g['difference']:+.3f} [{g['ci95'][0]:+.3f}, {g['ci95'][1]:+.3f}] | "
                f"{g['p']:.3g} |"
                for c, g in rows.items()
            ]
    return "\n".join(lines) + "\n"
