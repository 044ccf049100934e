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

With ``context`` (``--context``), each fix is mined in its repository context instead: the fix
commit's tree is the item's context archive (``contexts/<repository>-<commit>.zip``), the fixed
function or method its canonical as it stands in its module, the pre-fix one its ``real_bug``
run in the same context, and its tests the doctests, the test files' asserts and the calls
carved from the test files at the fix commit that the commit changed or that name the function.

A pre-fix version that is the fix's syntax tree (docstring, comments and local names aside), or
that gives the fix's answers on every call of its tests and the calls drawn near them, is no
bug: counted, never a ``real_bug``.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from ..execution import _grammar
from ..execution.runner import SuiteRunner
from ..safe_write import write_atomic
from ..sanitize import one_line
from .carve import CARVED, carve, test_files
from .context import CONTEXTS, WrittenContext, written_context
from .functions import MinedFunction, context_functions, importable_path, mined_functions
from .git_reader import GitError, GitReader, public_url
from .history import FixPair, HistoryScan, repository_name, same_syntax, scan_history
from .mine import (
    CARVE_LIMITS,
    NO_DOCSTRING,
    MiningError,
    candidate_items,
    check_out,
    checked_domain,
    confirm_in_sandbox,
    default_domain,
    owned_runner,
    without_failing_carved,
)
from .record import derived_calls, with_recorded
from .sources import SourceTree, check_licence, commit_tree
from .testfiles import test_file_tests
from .writer import MinedItem, count_table, notice_text, write_items

NOT_MINED = "the fixed function is not minable"  # + its reason (functions.py)
BUG_NOT_MINED = "the pre-fix function is not minable"
NO_CHANGE = "no behavioural change"  # + how it was seen
SAME_CODE = f"{NO_CHANGE}: the same syntax tree (docstring, comments, local names aside)"
SAME_ANSWERS = f"{NO_CHANGE}: the fix's answers on every call of its tests and near them"
MAX_FIX_TEST_FILES = 12  # test files carved for one fix: those it changed, then those naming it
NOT_BY_TEST = "subject names no fix, and no test the commit added or changed fails on the bug"
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
    contexts: int = 0  # context archives written (one per fix commit mined in context)

    def summary(self) -> str:
        return (
            f"{self.head.distribution}: {self.scan.commits} commits, {len(self.scan.pairs)} "
            f"{self.scan.kind}, {len(self.items)} items mined into {self.domain}/ "
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
    url: str | None = None,
    context: bool = False,
    jobs: int = 1,
    wheels: Path | None = None,
) -> MinedHistory:
    """Mine the fixes of ``repo``'s history (single-statement ones; with ``context``, those of a
    wide scan: :func:`.history.scan_history`) into the items directory ``out``;
    raises :class:`.mine.MiningError` (a usage error) for a repository or ``out`` it cannot use.
    ``url``: the repository's public address where its remote names none (``--repo-url``);
    ``context``, ``jobs``, ``wheels``: each fix in its repository context (``--context``)."""
    out = Path(out)
    check_out(out)
    address = public_url(url) if url else ""
    if url and not address:
        raise MiningError(f"--repo-url {one_line(url)!r} is no public https address")
    dropped: Counter[str] = Counter()
    try:
        with GitReader(Path(repo), git) as reader, owned_runner(runner, jobs) as run:
            address = address or reader.remote_url()
            name = repository_name(reader, address)
            head = commit_tree(reader, "HEAD", name)
            head = replace(head, url=address or head.url)
            check_licence(head, allow_licence)  # before the scan: a refusal costs nothing
            scan = scan_history(Path(repo), since, limit, git, context, name)
            domain = checked_domain(domain or default_domain(head.distribution) + "_history")
            if context:
                mined = _in_context(reader, scan.pairs, out, run, dropped, wheels, allow_licence)
            else:
                mined = [c for p in scan.pairs if (c := _candidate(reader, p, dropped))]
            candidates = _latest_per_function(mined, dropped)
            if record:
                candidates = with_recorded(candidates, run, record)
            failed = confirm_in_sandbox(candidates, run)
            dropped.update(f"the fix {why}" for why in failed.values())
            items = [i for i in candidates if i.stem not in failed]
            passing = _bugs_passing(items, run)
            same = _same_answers([i for i in items if i.stem in passing], run)
    except GitError as exc:
        raise MiningError(one_line(str(exc))) from None
    dropped.update({SAME_ANSWERS: len(same)} if same else {})
    items = [i for i in items if i.stem not in same]
    passing = tuple(stem for stem in passing if stem not in same)
    contexts = {i.context.package for i in items if i.context}
    for archive in sorted((out / CONTEXTS).glob("*.zip")):  # the fixes not kept, or mined before
        if f"{CONTEXTS}/{archive.name}" not in contexts:
            archive.unlink()
    result = MinedHistory(head, domain, scan, items, dropped, passing, len(contexts))
    write_items(out, domain, items, head)
    write_atomic(out / "MINED.md", history_markdown(result), root=out)
    write_atomic(out / "NOTICE", notice_text(head), root=out)
    return result


def _candidate(reader: GitReader, pair: FixPair, dropped: Counter[str]) -> MinedItem | None:
    """The item of one fix pair (unconfirmed), or None with the reason counted in ``dropped``."""
    tree = commit_tree(reader, pair.commit, pair.repository)
    pair_of = _pair_functions(tree, pair, mined_functions, dropped)
    if pair_of is None:
        return None
    fix, bug = pair_of
    found: Counter[str] = Counter()
    items, reasons = candidate_items([fix], found, test_file_tests(tree, {fix.name}))
    if not items:
        dropped[reasons[0]] += 1
        return None
    return _as_fix(items[0], pair, bug, tree)


def _pair_functions(
    tree: SourceTree,
    pair: FixPair,
    functions: Callable[[SourceTree], list[MinedFunction]],
    dropped: Counter[str],
) -> tuple[MinedFunction, MinedFunction] | None:
    """The fixed function of ``tree`` and its pre-fix version as ``functions`` mines them, or
    None with the reason counted: either is not minable, or they are the same syntax tree."""
    fix = _function(functions(tree), pair)
    if fix is None or fix.skip:
        dropped[f"{NOT_MINED}: {fix.skip if fix else 'not found'}"] += 1
        return None
    before = replace(tree, files={**tree.files, pair.file: pair.module_before.encode()})
    bug = _function(functions(before), pair)
    if bug is None or bug.skip:
        dropped[f"{BUG_NOT_MINED}: {bug.skip if bug else 'not found'}"] += 1
        return None
    if same_syntax(bug.code, fix.code):
        dropped[SAME_CODE] += 1
        return None
    return fix, bug


def _as_fix(item: MinedItem, pair: FixPair, bug: MinedFunction, tree: SourceTree) -> MinedItem:
    name = f"{pair.owner}_{pair.name}" if pair.owner else pair.name
    stem = re.sub(r"[^a-z0-9_]", "_", f"{name.lower()}_{pair.commit[:8]}")
    return replace(item, stem=stem, fix=pair, real_bug=bug.code, version=tree.version)


def _in_context(
    reader: GitReader,
    pairs: list[FixPair],
    out: Path,
    runner: SuiteRunner,
    dropped: Counter[str],
    wheels: Path | None,
    allow_licence: str | None,
) -> list[MinedItem]:
    """Each fix pair's item in its repository context (unconfirmed): the fix commit's archive,
    the fixed function or method and its pre-fix version there, its tests carved from the test
    files at the fix commit (:func:`_fix_test_files`); the others' reasons in ``dropped``."""
    candidates: list[MinedItem] = []
    with SuiteRunner(CARVE_LIMITS, jobs=runner.jobs, isolation=runner.isolation) as carving:
        for pair in pairs:
            if not _documented(pair.fix):  # no query: no archive to write, nothing to carve
                dropped[NO_DOCSTRING] += 1
                continue
            tree = commit_tree(reader, pair.commit, pair.repository)
            package = written_context(
                tree, out, wheels, allow_licence, f"{pair.repository}-{pair.commit[:12]}"
            )
            functions = partial(context_functions, sha256=package.sha256)
            pair_of = _pair_functions(tree, pair, functions, dropped)
            if pair_of is None:
                continue
            fix, bug = pair_of
            carved = carve([fix], package.sha256, _fix_test_files(package, pair, fix), carving)
            found: Counter[str] = Counter()
            items, reasons = candidate_items(
                [fix], found, test_file_tests(tree, {fix.name}), carved=carved
            )
            items, weak = without_failing_carved(items, runner)
            if not items:
                dropped[{**reasons, **weak}[0]] += 1
                continue
            by_test = _killed_by_its_tests(items[0], bug, pair, runner)
            if not (pair.by_subject or by_test):
                dropped[NOT_BY_TEST] += 1
                continue
            admitted = replace(pair, by_test=by_test)
            candidates.append(replace(_as_fix(items[0], admitted, bug, tree), context=package))
    return candidates


def _killed_by_its_tests(
    item: MinedItem, bug: MinedFunction, pair: FixPair, runner: SuiteRunner
) -> bool:
    """Whether a call carved from a test function the fix commit added or changed fails on the
    pre-fix version (run in the fix's context, the rest of the module the fix's: the commit
    changed nothing else, so it is the test failing on the parent)."""
    changed = {_test_key(t) for t in pair.changed_tests}
    own = [n for n, where in enumerate(item.provenance) if _test_key(where) in changed]
    if not own:
        return False
    tests = [item.tests[n] for n in own]
    (result,) = runner.run_many([(bug.code, bug.setup, tests, "python", item.stem)])
    return any(outcome != "pass" for outcome in result.outcomes)


def _test_key(where: str) -> tuple[str, str]:
    """A test function as (file as it imports, its name): from ``FILE::name`` or a carved
    test's provenance ``carved FILE::[Class::]name[params]``."""
    test = where.removeprefix(f"{CARVED} ")
    path, _, name = test.partition("::")
    return importable_path(path), name.rpartition("::")[2].partition("[")[0]


def _documented(source: str) -> bool:
    """Whether a function's source has a docstring (its query)."""
    try:
        node = ast.parse(source).body[0]
    except (SyntaxError, ValueError, RecursionError, MemoryError, IndexError):
        return False
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and bool(
        (ast.get_docstring(node) or "").strip()
    )


def _fix_test_files(package: WrittenContext, pair: FixPair, fix: MinedFunction) -> list[str]:
    """The test files carving runs for a fix: those the fix commit changed, then those that
    name the function, in name order (where none does, every test file: a test may reach it
    through another function); at most :data:`MAX_FIX_TEST_FILES`."""
    files = test_files(list(package.files))
    changed = {importable_path(path) for path in pair.tests}
    word = re.compile(rf"\b{re.escape(fix.name)}\b".encode())
    naming = [f for f in files if f not in changed and word.search(package.files[f])]
    chosen = [f for f in files if f in changed] + naming
    return (chosen or files)[:MAX_FIX_TEST_FILES]


def _latest_per_function(items: list[MinedItem], dropped: Counter[str]) -> list[MinedItem]:
    """One item per function name, its latest fix: two fixes of one function (in one module, or
    before and after a move) make items whose canonicals may pass each other's tests, which the
    name-collision gate refuses."""
    latest = {i.function.name: i for i in items}  # oldest first: the last one wins
    if len(latest) < len(items):
        dropped[LATER_FIX] += len(items) - len(latest)
    return [i for i in items if latest[i.function.name] is i]


def _function(functions: list[MinedFunction], pair: FixPair) -> MinedFunction | None:
    where = (pair.file, pair.owner, pair.name)
    return next((f for f in functions if (f.file, f.owner, f.name) == where), None)


def _bugs_passing(items: list[MinedItem], runner: SuiteRunner) -> tuple[str, ...]:
    """The stems whose real bug passes every test of its item (a survivor, not a distractor)."""
    suites = [(i.real_bug, i.function.setup, i.tests, "python", i.stem) for i in items]
    results = runner.run_many(suites)
    return tuple(i.stem for i, r in zip(items, results, strict=True) if r.passed)


def _same_answers(items: list[MinedItem], runner: SuiteRunner) -> set[str]:
    """The stems whose real bug gives its fix's answers (values, exceptions) on every call of
    the item's tests and every call :func:`.record.derived_calls` draws near them: no bug."""
    calls = {
        i.stem: list(
            dict.fromkeys(
                [_grammar.parse_test(t).call.source for t in i.tests] + derived_calls(i.tests)
            )
        )
        for i in items
    }
    fixes = runner.run_many(
        [(i.function.code, i.function.setup, calls[i.stem], "python", i.stem) for i in items]
    )
    bugs = runner.run_many(
        [(i.real_bug, i.function.setup, calls[i.stem], "python", i.stem) for i in items]
    )
    return {
        i.stem
        for i, fix, bug in zip(items, fixes, bugs, strict=True)
        if fix.values and len(fix.values) == len(calls[i.stem]) and fix.values == bug.values
    }


def history_markdown(result: MinedHistory) -> str:
    """``MINED.md`` of a history mining run: commits scanned and why each was not a fix pair,
    fix pairs not kept and why, and per item its commit, pattern and whether the bug survives."""
    scan, head = result.scan, result.head
    found = Counter(p.pattern for p in scan.pairs)
    fixes = [i.fix for i in result.items if i.fix]
    patterns = Counter(f.pattern for f in fixes)
    admitted = Counter(" and ".join(f.admitted) for f in fixes)
    statements = Counter("one" if f.statements == 1 else "more than one" for f in fixes)
    lines = [
        f"# Mined from history: {head.distribution}",
        "",
        f"- licence (at HEAD): {head.license_expression or 'unknown'}",
        f"- project URL: {head.url or 'unknown'}",
        f"- domain: `{result.domain}`",
        f"- commits scanned: {scan.commits}; {scan.kind}: {len(scan.pairs)}; "
        f"items written: {len(result.items)}; real bugs the fix's tests kill: "
        f"{len(result.items) - len(result.bug_passes)}; surviving: {len(result.bug_passes)}",
        *(
            [f"- in repository context: one archive per fix commit kept ({result.contexts})"]
            if result.contexts
            else []
        ),
        "",
        f"## Commits that are not {scan.kind}, by reason",
        "",
        *count_table(("reason", "commits"), scan.skipped),
        "",
        "## Fixes not kept, by reason",
        "",
        *count_table(("reason", "fixes"), result.dropped),
        "",
        "## Patterns (the operator class whose edit of the fix writes the bug, else other)",
        "",
        f"Of all {scan.kind} found:",
        "",
        *count_table(("pattern", "fixes"), found),
        "",
        "Of the fixes kept as items:",
        "",
        *count_table(("pattern", "fixes"), patterns),
        "",
        "## What made the fixes kept fixes, and the statements they changed",
        "",
        *count_table(("admitted by", "fixes"), admitted),
        "",
        *count_table(("statements changed", "fixes"), statements),
        "",
        "## Items",
        "",
        "| item | commit | pattern | statements | admitted by | the pre-fix version | subject |",
        "|---|---|---|---:|---|---|---|",
    ]
    for item in result.items:
        fix = item.fix
        assert fix is not None
        verdict = "passes (survivor)" if item.stem in result.bug_passes else "killed"
        subject = one_line(fix.subject).replace("|", "\\|")
        lines.append(
            f"| `{item.stem}` | `{fix.commit[:12]}` | {fix.pattern} | {fix.statements} "
            f"| {' and '.join(fix.admitted)} | {verdict} | {subject} |"
        )
    return "\n".join(lines) + "\n"
