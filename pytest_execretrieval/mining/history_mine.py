"""``execretrieval mine REPO --history``: real bugs that shipped, as items whose pool holds the
pre-fix version beside the mutants (issue 41; docs/real-bugs.md).

The steps, each a function: find the single-statement fixes (:func:`.history.scan_history`);
read each fix commit's tree through git plumbing (:func:`.sources.commit_tree`; the licence is
the one HEAD declares); mine the fixed function there as :mod:`.mine` mines any function (its
self-contained code, the post-fix docstring as query, the doctests and the test files' asserts
at the fix commit, recorded tests if asked); mine the same function from the pre-fix module, so
the bug has the canonical's shape; run the fix on its tests twice in the sandbox (kept only if
it passes both) and the bug once (killed or surviving: the count ``MINED.md`` states; the build
decides again and keeps a killed bug as a ``real_bug`` distractor). A function fixed twice is
one item, at its latest fix. Nothing of the repository is
imported or run outside the sandbox.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..execution.runner import SuiteRunner
from ..safe_write import write_atomic
from ..sanitize import one_line
from .functions import MinedFunction, mined_functions
from .git_reader import GitError, GitReader
from .history import FixPair, HistoryScan, repository_name, scan_history
from .mine import (
    MiningError,
    candidate_items,
    check_out,
    checked_domain,
    confirm_in_sandbox,
    default_domain,
    owned_runner,
)
from .record import with_recorded
from .sources import SourceTree, check_licence, commit_tree
from .testfiles import test_file_tests
from .writer import MinedItem, count_table, notice_text, write_items

NOT_MINED = "the fixed function is not minable"  # + its reason (functions.py)
BUG_NOT_MINED = "the pre-fix function is not minable"
SAME_CODE = "the fix changes nothing the item holds"  # e.g. only a docstring line
LATER_FIX = "the function is fixed again later (its latest fix is the item)"


@dataclass
class MinedHistory:
    """What one history mining run found and wrote."""

    head: SourceTree
    domain: str
    scan: HistoryScan
    items: list[MinedItem]
    dropped: Counter[str] = field(default_factory=Counter)  # fix pairs not kept, by reason
    bug_passes: tuple[str, ...] = ()  # stems whose pre-fix version passes the fix's tests

    def summary(self) -> str:
        return (
            f"{self.head.distribution}: {self.scan.commits} commits, {len(self.scan.pairs)} "
            f"single-statement fixes, {len(self.items)} items mined into {self.domain}/ "
            f"({len(self.items) - len(self.bug_passes)} real bugs killed by the fix's tests, "
            f"{len(self.bug_passes)} surviving)"
        )


def mine_history(
    repo: Path,
    out: Path,
    since: str | None = None,
    limit: int | None = None,
    domain: str | None = None,
    allow_licence: str | None = None,
    runner: SuiteRunner | None = None,
    record: int = 0,
    git: str = "git",
) -> MinedHistory:
    """Mine the single-statement fixes of ``repo``'s history into the items directory ``out``;
    raises :class:`.mine.MiningError` (a usage error) for a repository or ``out`` it cannot use."""
    out = Path(out)
    check_out(out)
    try:
        scan = scan_history(Path(repo), since, limit, git)
        with GitReader(Path(repo), git) as reader:
            head = commit_tree(reader, "HEAD", repository_name(reader))
            head = replace(head, url=reader.remote_url() or head.url)
            check_licence(head, allow_licence)
            domain = checked_domain(domain or default_domain(head.distribution) + "_history")
            dropped: Counter[str] = Counter()
            candidates = _latest_per_function(
                [c for c in (_candidate(reader, p, dropped) for p in scan.pairs) if c], dropped
            )
    except GitError as exc:
        raise MiningError(one_line(str(exc))) from None
    with owned_runner(runner) as run:
        if record:
            candidates = with_recorded(candidates, run, record)
        failed = confirm_in_sandbox(candidates, run)
        dropped.update(f"the fix {why}" for why in failed.values())
        items = [i for i in candidates if i.stem not in failed]
        passing = _bugs_passing(items, run)
    result = MinedHistory(head, domain, scan, items, dropped, passing)
    write_items(out, domain, items, head)
    write_atomic(out / "MINED.md", history_markdown(result), root=out)
    write_atomic(out / "NOTICE", notice_text(head), root=out)
    return result


def _candidate(reader: GitReader, pair: FixPair, dropped: Counter[str]) -> MinedItem | None:
    """The item of one fix pair (unconfirmed), or None with the reason counted in ``dropped``."""
    tree = commit_tree(reader, pair.commit, reader.repo.resolve().name)
    fix = _function(tree, pair)
    if fix is None or fix.skip:
        dropped[f"{NOT_MINED}: {fix.skip if fix else 'not found'}"] += 1
        return None
    before = replace(tree, files={**tree.files, pair.file: pair.module_before.encode()})
    bug = _function(before, pair)
    if bug is None or bug.skip:
        dropped[f"{BUG_NOT_MINED}: {bug.skip if bug else 'not found'}"] += 1
        return None
    if bug.code == fix.code:
        dropped[SAME_CODE] += 1
        return None
    found: Counter[str] = Counter()
    items, reasons = candidate_items([fix], found, test_file_tests(tree, {fix.name}))
    if not items:
        dropped[reasons[0]] += 1
        return None
    stem = re.sub(r"[^a-z0-9_]", "_", f"{fix.name.lower()}_{pair.commit[:8]}")
    return replace(items[0], stem=stem, fix=pair, real_bug=bug.code, version=tree.version)


def _latest_per_function(items: list[MinedItem], dropped: Counter[str]) -> list[MinedItem]:
    """One item per function name, its latest fix: two fixes of one function (in one module, or
    before and after a move) make items whose canonicals may pass each other's tests, which the
    name-collision gate refuses."""
    latest = {i.function.name: i for i in items}  # oldest first: the last one wins
    if len(latest) < len(items):
        dropped[LATER_FIX] += len(items) - len(latest)
    return [i for i in items if latest[i.function.name] is i]


def _function(tree: SourceTree, pair: FixPair) -> MinedFunction | None:
    return next(
        (f for f in mined_functions(tree) if (f.file, f.name) == (pair.file, pair.name)), None
    )


def _bugs_passing(items: list[MinedItem], runner: SuiteRunner) -> tuple[str, ...]:
    """The stems whose real bug passes every test of its item (a survivor, not a distractor)."""
    results = runner.run_many([(i.real_bug, "", i.tests, "python", i.stem) for i in items])
    return tuple(i.stem for i, r in zip(items, results, strict=True) if r.passed)


def history_markdown(result: MinedHistory) -> str:
    """``MINED.md`` of a history mining run: commits scanned and why each was not a fix pair,
    fix pairs not kept and why, and per item its commit, pattern and whether the bug survives."""
    scan, head = result.scan, result.head
    found = Counter(p.pattern for p in scan.pairs)
    patterns = Counter(i.fix.pattern for i in result.items if i.fix)
    lines = [
        f"# Mined from history: {head.distribution}",
        "",
        f"- licence (at HEAD): {head.license_expression or 'unknown'}",
        f"- project URL: {head.url or 'unknown'}",
        f"- domain: `{result.domain}`",
        f"- commits scanned: {scan.commits}; single-statement fixes: {len(scan.pairs)}; "
        f"items written: {len(result.items)}; real bugs the fix's tests kill: "
        f"{len(result.items) - len(result.bug_passes)}; surviving: {len(result.bug_passes)}",
        "",
        "## Commits that are not single-statement fixes, by reason",
        "",
        *count_table(("reason", "commits"), scan.skipped),
        "",
        "## Fixes not kept, by reason",
        "",
        *count_table(("reason", "fixes"), result.dropped),
        "",
        "## Patterns (the operator class whose edit of the fix writes the bug, else other)",
        "",
        "Of every single-statement fix found:",
        "",
        *count_table(("pattern", "fixes"), found),
        "",
        "Of the fixes kept as items:",
        "",
        *count_table(("pattern", "fixes"), patterns),
        "",
        "## Items",
        "",
        "| item | commit | pattern | the pre-fix version | subject |",
        "|---|---|---|---|---|",
    ]
    for item in result.items:
        fix = item.fix
        assert fix is not None
        verdict = "passes (survivor)" if item.stem in result.bug_passes else "killed"
        subject = one_line(fix.subject).replace("|", "\\|")
        lines.append(
            f"| `{item.stem}` | `{fix.commit[:12]}` | {fix.pattern} | {verdict} | {subject} |"
        )
    return "\n".join(lines) + "\n"
