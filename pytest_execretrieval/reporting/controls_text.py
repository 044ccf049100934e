"""The line that flags a rerank pipeline not beating the query-blind controls, for the terminal
and summary.md (their table is :func:`.tables.query_blind_table`). The figures:
``scoring/controls.py``, in each report's ``analyses.controls``."""

from __future__ import annotations

from collections.abc import Mapping

from .tables import CONTROL_TITLES

__all__ = ["controls_flag_lines", "controls_flag_markdown"]


def controls_flag_lines(reports: Mapping[str, dict]) -> list[str]:
    """One line per rerank pipeline whose exec@1 does not beat the best control."""
    lines = []
    for name, report in reports.items():
        pipeline = report.get("analyses", {}).get("controls", {}).get("pipeline")
        if pipeline and not pipeline["beats_controls"]:
            low, high = pipeline["best_control_ci95"]
            best = CONTROL_TITLES.get(pipeline["best_control"], pipeline["best_control"])
            lines.append(
                f"controls [{name}]: exec@1 {pipeline['exec@1']:.3f} does not beat the "
                f"query-blind {best} "
                f"({pipeline['best_control_rate']:.3f} [{low:.3f}, {high:.3f}]) with no query read"
            )
    return lines


def controls_flag_markdown(reports: Mapping[str, dict]) -> str:
    """The flag lines as a summary.md paragraph ("" when no pipeline is flagged)."""
    lines = controls_flag_lines(reports)
    return "".join(f"- {line}\n" for line in lines) + ("\n" if lines else "")
