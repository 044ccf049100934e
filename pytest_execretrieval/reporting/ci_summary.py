"""``execretrieval summary``: every language pool's verdicts, then its ``summary.md``, from a
report directory, as one markdown text for a CI step summary or a pull-request comment. It
renders the report JSONs' gate records (their ``decision`` and ``reason``), never another
renderer's sentences."""

from __future__ import annotations

from pathlib import Path

from ..corpus.pools import POOL_LANGUAGES
from ..sanitize import escape
from ..scoring.compare import ReportError, load_report

# The first line of ``execretrieval summary``: the CI recipe finds its own pull-request comment
# by it and edits that one in place (docs/ci.md).
SUMMARY_MARKER = "<!-- execretrieval-summary -->"
# A GitHub comment holds 65,536 characters: past this, the pools' summaries are left out.
MAX_SUMMARY = 60_000


def ci_summary(directory: Path) -> str:
    """The markdown of ``execretrieval summary``: :data:`SUMMARY_MARKER`, one verdict line per
    report of every pool that ran (its gate's decision and reason, as the junit case
    ``gate[NAME]`` names it), then each pool's ``summary.md`` folded."""
    folders = [("", directory)] + [
        (name, directory / name) for name in POOL_LANGUAGES if (directory / name).is_dir()
    ]
    verdicts: list[str] = []
    summaries: list[tuple[Path, str]] = []
    for pool, folder in folders:
        for label, report in pool_reports(folder, pool):
            verdicts.append(escape(verdict_line(label, report)))
        path = folder / "summary.md"
        if path.is_file():
            summaries.append((path, path.read_text(encoding="utf-8", errors="replace")))
    lines = [SUMMARY_MARKER, "## ExecRetrieval", ""]
    if not verdicts and not summaries:
        lines.append(
            f"No ExecRetrieval reports in `{escape(str(directory))}`: the benchmark wrote none "
            "(its log says why)."
        )
        return "\n".join(lines) + "\n"
    lines += verdicts or ["- no report JSON found beside the summaries"]
    folded = [
        f"\n<details><summary>{escape(str(path))}</summary>\n\n{text.rstrip()}\n\n</details>"
        for path, text in summaries
    ]
    if sum(map(len, folded)) + sum(map(len, lines)) > MAX_SUMMARY:
        folded = [
            "\nThe pools' summaries are too long for a comment: "
            + ", ".join(f"`{escape(str(path))}`" for path, _ in summaries)
            + " (in the uploaded reports)."
        ]
    return "\n".join(lines + folded) + "\n"


def pool_reports(folder: Path, pool: str) -> list[tuple[str, dict]]:
    """The report JSONs directly in ``folder`` (not ``cross-language.json`` or anything else
    that is no report), each with its name as the pool's gate case names it."""
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            report = load_report(path)
        except ReportError:
            continue
        name = str(report["embedder"].get("name") or path.stem)
        found.append((f"{pool}/{name}" if pool else name, report))
    return found


def verdict_line(label: str, report: dict) -> str:
    """``- **PASS** `gate[bm25]`: harm test on ...; nothing failed``, or for a run without a
    gate its exec@1."""
    gate = report.get("gate")
    if not isinstance(gate, dict):
        exec1 = report.get("metrics", {}).get("exec@1")
        shown = f"exec@1 {exec1:.3f}" if isinstance(exec1, int | float) else "no exec@1"
        return f"- `{label}`: no gate ran; {shown}"
    decision = str(gate.get("decision") or ("PASS" if gate.get("passed") else "FAIL"))
    rest = str(gate.get("reason", "")).removeprefix(f"{decision}: ")
    return f"- **{decision}** `gate[{label}]`: {rest}"
