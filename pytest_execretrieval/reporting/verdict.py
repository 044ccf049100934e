"""What every output opens with: each gate's verdict, then the queries that flipped at rank 1
against the baseline, as terminal lines, junit text and summary.md markdown (the HTML page,
``html.py``, renders the same records with the anchors made here).

The flips are records (:class:`..records.Flip`), computed by :func:`..scoring.compare.flips`
when a gate compares a candidate with its baseline and carried by the report's gate record
(``gate.flips``): the regressions (``pass->fail``) first, then the fixes (``fail->pass``), each
with what the candidate and the baseline put at rank 1. Nothing is decided here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..records import FLIP_DIRECTIONS, Flip, Rank1
from ..sanitize import one_line

__all__ = [
    "HTML_FILE",
    "MARKDOWN_FLIPS",
    "SHOWN_FLIPS",
    "anchor",
    "direction_text",
    "flip_counts",
    "flip_lines",
    "flips_markdown",
    "gate_flips",
    "gate_markdown",
    "rank1_text",
    "report_label",
    "verdict_markdown",
]

HTML_FILE = "report.html"  # `execretrieval report DIR --html`'s page, where a flip's details are
SHOWN_FLIPS = 10  # flips listed per direction in the terminal before "and N more"
MARKDOWN_FLIPS = 50  # per direction and model in summary.md (a pull-request comment is bounded)


def gate_flips(gate: Mapping | None) -> tuple[Flip, ...] | None:
    """The flips a report's gate record carries; ``None`` where it carries none (no gate, a gate
    without a baseline, a report written before flips were recorded)."""
    if not gate or "flips" not in gate:
        return None
    return tuple(Flip.from_json(row) for row in gate["flips"])


def direction_text(direction: str) -> str:
    """``pass -> fail``."""
    return direction.replace("->", " -> ")


def rank1_text(r: Rank1 | None, query_id: str) -> str:
    """What stood at rank 1: ``distractor (off_by_one)``, ``canonical of strings/other``,
    ``distractor (wrong_operator), tied with 2 more (1 of 3 passing)``; ``n/a`` when unknown."""
    if r is None:
        return "n/a"
    what = r.kind + (f" ({r.operator})" if r.operator else "")
    if r.query_id != query_id:
        what += f" of {r.query_id}"
    size = r.tie.get("size", 1)
    if size > 1:
        what += f", tied with {size - 1} more ({r.tie.get('passing', 0)} of {size} passing)"
    return what


def flip_counts(flips: Sequence[Flip]) -> str:
    """``2 pass -> fail, 1 fail -> pass``."""
    return ", ".join(
        f"{sum(f.direction == d for f in flips)} {direction_text(d)}" for d in FLIP_DIRECTIONS
    )


def report_label(report: Mapping, name: str) -> str:
    """How a report named ``name`` is labelled beside other language pools' (a gate's name, a
    page's anchors): ``javascript/bm25`` for a report with a ``language``, else ``name``, as a
    session names its gates."""
    language = report.get("language")
    return f"{language}/{name}" if language else name


def anchor(label: str, query_id: str) -> str:
    """The HTML id of a query's row for a report labelled ``label`` (its pool's prefix and
    name: ``javascript/bm25``): letters, digits and ``_`` kept, every other character written as
    ``-<hex>-``, so different queries never share an id and the id needs no URL escaping."""
    return "q-" + re.sub(r"[^A-Za-z0-9_]", lambda m: f"-{ord(m.group()):x}-", f"{label}/{query_id}")


def flip_lines(name: str, gate: Mapping, shown: int | None = SHOWN_FLIPS) -> list[str]:
    """The terminal's (and the junit gate case's) lines of a gate's flips: a count line, then
    per direction up to ``shown`` queries (``None``: all) with what each report put at rank
    1; ``[]`` for a gate without a baseline."""
    flips = gate_flips(gate)
    if flips is None:
        return []
    if not flips:
        return [f"flips [{name}] against the baseline: none (no query changed at rank 1)"]
    lines = [f"flips [{name}] against the baseline: {flip_counts(flips)}"]
    for direction in FLIP_DIRECTIONS:
        these = [f for f in flips if f.direction == direction]
        listed = these if shown is None else these[:shown]
        lines += [
            f"  {direction_text(direction)}  {one_line(f.query_id)}: rank 1 "
            f"{one_line(rank1_text(f.candidate, f.query_id))}; baseline "
            f"{one_line(rank1_text(f.baseline, f.query_id))}"
            for f in listed
        ]
        if len(these) > len(listed):
            lines.append(
                f"  ... and {len(these) - len(listed)} more {direction_text(direction)} (every "
                "flip: the report's gate.flips, summary.md)"
            )
    return lines


def gate_markdown(gates: Mapping[str, Mapping]) -> str:
    """summary.md's ``## Upgrade gate``: each gate's decision and its reasons."""
    lines = ["## Upgrade gate", ""]
    for name, decision in gates.items():
        lines.append(f"- **{name}**: {decision['reason']}")
        lines += [f"  - {x}" for x in decision.get("explanation", [])]
    return "\n".join(lines) + "\n"


def _cell(value: str) -> str:
    return one_line(value).replace("|", "\\|")


def flips_markdown(gates: Mapping[str, Mapping], html: str = HTML_FILE) -> str:
    """summary.md's ``## Flips against the baseline``: per gate with a baseline, its counts and
    a table of the flipped queries (regressions first; up to :data:`MARKDOWN_FLIPS` per
    direction), each linked to its row of the HTML page (``html``: the page's path from the
    summary); ``""`` when no gate has a baseline."""
    of_gate = {name: gate_flips(g) for name, g in gates.items()}
    flipped = {name: found for name, found in of_gate.items() if found is not None}
    if not flipped:
        return ""
    lines = [
        "## Flips against the baseline",
        "",
        "Queries whose rank 1 changed against the baseline: pass -> fail (a regression) first, "
        "then fail -> pass, with what each model put at rank 1 (kind, operator class); each "
        f"links to its row in `{HTML_FILE}` (`execretrieval report DIR --html`).",
    ]
    for name, flips in flipped.items():
        lines += ["", f"**{name}**: {flip_counts(flips) if flips else 'no query flipped'}"]
        if not flips:
            continue
        lines += [
            "",
            "| query | flip | rank 1 now | baseline rank 1 | details |",
            "|---|---|---|---|---|",
        ]
        for direction in FLIP_DIRECTIONS:
            these = [f for f in flips if f.direction == direction]
            for f in these[:MARKDOWN_FLIPS]:
                lines.append(
                    f"| {_cell(f.query_id)} | {direction_text(direction)} | "
                    f"{_cell(rank1_text(f.candidate, f.query_id))} | "
                    f"{_cell(rank1_text(f.baseline, f.query_id))} | "
                    f"[details]({html}#{anchor(name, f.query_id)}) |"
                )
            if len(these) > MARKDOWN_FLIPS:
                more = len(these) - MARKDOWN_FLIPS
                lines.append(
                    f"| ... and {more} more | {direction_text(direction)} | | | "
                    "the report's gate.flips |"
                )
    return "\n".join(lines) + "\n"


def verdict_markdown(gates: Mapping[str, Mapping], html: str = HTML_FILE) -> str:
    """What summary.md opens with under its title: the gates' decisions, then the flips;
    ``""`` without a gate."""
    if not gates:
        return ""
    flips = flips_markdown(gates, html)
    return gate_markdown(gates) + ("\n" + flips if flips else "")
