"""An item's real bug in a build: the pre-fix version of a fix mined from a repository's
history (the item's ``real_bug``; ``execretrieval mine REPO --history``, docs/real-bugs.md).

It runs under the full limits beside the item's canonical and alternatives. Killed by a test (a
wrong output or an exception) it joins the pool as a snippet of kind ``real_bug``, its operator
the fix's TSSB-3M pattern (``source.pattern``). Passing every test it is a survivor, its
differential evidence drawn as a mutant's. A hang is a failure when the fix is quick: a suite
that ran out of time kills the real bug (kill "timeout") when its fix passes every test within a
tenth of the limit on two runs (:data:`QUICK_FIX_SHARE`), since a bug and a fix that both run
near the limit tell nothing. A suite that proved nothing, or ran out of time beside a fix that
is not quick, makes it neither, and the build says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..execution.sandbox import Limits, SuiteResult
from ..mutation.operators import Edit, Mutant, build_mutant, split_lines
from ..mutation.select import UNUSABLE, kill_kind
from ..records import REAL_BUG
from .items import BenchmarkItem
from .store import Snippet, make_snippet

# A surviving real bug's operator (in the build's survivors and yields.jsonl): an operator
# name, not a snippet kind (a survivor is no snippet), spelled as the kind records.REAL_BUG by
# choice; the killed real bug's snippet is of kind REAL_BUG, its operator the fix's pattern.
SURVIVOR_OPERATOR = "real_bug"
OTHER = "other"  # the pattern of a fix no operator class writes
QUICK_FIX_SHARE = 0.1  # a quick fix passes within this share of the limit (on two runs)
QUICK_FIX_RUNS = 2


def quick_limits(limits: Limits) -> Limits:
    """The limits a fix passes within to be quick: a tenth of the time, the rest as given."""
    return replace(limits, timeout_s=limits.timeout_s * QUICK_FIX_SHARE)


def pattern(item: BenchmarkItem) -> str:
    """The TSSB-3M pattern its ``[source]`` names for the item's real bug."""
    return (item.source.pattern if item.source else "") or OTHER


def as_mutant(item: BenchmarkItem) -> Mutant:
    """The real bug in a mutant's shape: its first differing line and edit sizes."""
    old, new = item.canonical, item.real_bug
    lines = zip(split_lines(old), split_lines(new))
    first = next((n for n, (a, b) in enumerate(lines, 1) if a != b), 1)
    whole = build_mutant(old, [Edit(0, len(old), new, "the pre-fix version", SURVIVOR_OPERATOR)])
    return replace(whole, line=first)


def judged(
    item: BenchmarkItem, result: SuiteResult, quick_fix: bool = False
) -> tuple[Snippet | None, Mutant | None, str]:
    """``(snippet, survivor, unusable)``: the pool snippet of a killed real bug, the real bug as
    a survivor when it passes, else the line saying why it is neither. ``quick_fix``: whether
    the fix passes within :func:`quick_limits` on every one of :data:`QUICK_FIX_RUNS` runs
    (asked only of a real bug that ran out of time), which makes its timeout a kill."""
    kill = kill_kind(result)
    bug = as_mutant(item)
    if kill is None:
        return None, bug, ""
    if kill == UNUSABLE or (kill == "timeout" and not quick_fix):
        why = (
            "its suite proved nothing, twice"
            if kill == UNUSABLE
            else "it ran out of time, and its fix does not pass within a tenth of the limit "
            f"on {QUICK_FIX_RUNS} runs"
        )
        return None, None, f"{item.path}: real_bug is unusable: {why} ({result.detail})"
    snippet = make_snippet(
        item,
        REAL_BUG,
        bug.code,
        result.outcomes,
        operator=pattern(item),
        line=bug.line,
        kill=kill,
        edit_lines=bug.lines_changed,
        edit_chars=bug.chars_changed,
    )
    return snippet, None, ""


def real_bug_report(items: Sequence[BenchmarkItem], pool: Sequence[Snippet], survivors) -> str:
    """One line on the real bugs of a build ("" when no item has one): how many the tests kill
    (in the pool), how many survive (and of those, how many differential evidence shows
    different from the fix), and how many are neither."""
    total = sum(bool(item.real_bug) for item in items)
    if not total:
        return ""
    killed = sum(s.kind == REAL_BUG for s in pool)
    surviving = [s for s in survivors if s.operator == SURVIVOR_OPERATOR]
    shown = sum(bool(s.equivalence and s.equivalence["differing"]) for s in surviving)
    return (
        f"real bugs: {killed}/{total} killed by the fix's tests (in the pool), "
        f"{len(surviving)} survive ({shown} shown different by drawn inputs), "
        f"{total - killed - len(surviving)} unusable"
    )
