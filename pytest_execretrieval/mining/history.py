"""Real bugs that shipped: single-statement fixes of module-level functions in a repository's
history (issue 41).

A commit is a candidate when its subject says it fixes something (:data:`FIX_WORDS`), it has one
parent, and its change to the repository's non-test Python files is one diff hunk in one file
(TSSB-3M's criterion, git's default three lines of context). The hunk must lie in one
module-level function that both versions define, the rest of the module unchanged, and change
exactly one statement of it: the function's statements in pre-order, each compared by its own
syntax without the statements it contains (a compound statement by its header), differ at one
position and nowhere else (an added or removed statement is not a single-statement change;
a change of comments or layout alone is no change). The pre-fix function is the real bug, the
post-fix one its fix.

Each pair is named with the operator class whose edit turns the fix into the bug, when one
does exactly (the same syntax tree): the core classes (:mod:`..mutation.operators`) and the
families shaped after TSSB-3M's patterns (:mod:`..mutation.families`); "other" otherwise.
Test files the same commit changed are recorded, with the test functions it added.

Everything is read through :class:`.git_reader.GitReader` (no program the repository names
runs) and parsed with :mod:`ast`; nothing of the repository is imported or executed here.
Every commit not taken is counted by its reason.
"""

from __future__ import annotations

import ast
import copy
import difflib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..corpus.items import SUBJECT, TEST
from ..corpus.real_bugs import OTHER
from ..mutation.families import ALL_OPERATORS
from ..mutation.operators import apply_edits, generate_edits
from .git_reader import Change, Commit, GitReader, Unreadable, blob_text

FIX_WORDS = re.compile(r"\b(fix(e[sd]|ing)?|bug(fix)?|repair(ed|s)?|correct(ed|s)?)\b", re.I)
TEST_PATH = re.compile(
    r"(^|/)(tests?|testing)/|(^|/)test_[^/]*\.py$|_tests?\.py$|(^|/)conftest\.py$"
)
MAX_STATEMENTS = 400  # statements of one function compared; a larger one is skipped
MAX_PATTERN_EDITS = 500  # edits of a fix tried to name its pattern
MAX_FIX_STATEMENTS = 8  # statements one fix may change (wide scans; a single one otherwise)
MAX_DIFF_WORK = 10_000_000  # steps of the line matcher for one diff (about 2 s at most)


@dataclass(frozen=True)
class FixPair:
    """One real bug and its fix, with where they come from."""

    commit: str
    parent: str
    author_date: str
    subject: str
    file: str
    name: str  # the function's name (a method's, with ``owner`` its class)
    line: int  # the fixed function's first line in the post-fix file
    bug: str  # the function's source before the commit
    fix: str  # and after it
    module: str  # the whole post-fix module (its helpers and imports, for mining)
    pattern: str  # the operator class whose edit turns the fix into the bug, or "other"
    tests: tuple[str, ...] = ()  # test files the commit changed
    added_tests: tuple[str, ...] = ()  # "FILE::test_name" of test functions it added
    module_before: str = ""  # the whole pre-fix module
    repository: str = ""  # the repository's name (:func:`repository_name`)
    owner: str = ""  # a method's class (a top-level class of the module), "" for a function
    statements: int = 1  # statements of the function the fix changes
    by_subject: bool = True  # its subject names a fix (else it is one only if its tests say so)
    by_test: bool = False  # a test it added or changed fails on the pre-fix version (in context)
    changed_tests: tuple[str, ...] = ()  # "FILE::name" of test functions it added or changed

    @property
    def admitted(self) -> tuple[str, ...]:
        """What made the commit a fix: its subject, a test (:data:`..corpus.items.ADMISSIONS`)."""
        return tuple(c for c, ok in ((SUBJECT, self.by_subject), (TEST, self.by_test)) if ok)


@dataclass
class HistoryScan:
    pairs: list[FixPair] = field(default_factory=list)
    commits: int = 0
    skipped: Counter = field(default_factory=Counter)  # reason -> commits
    wide: bool = False  # a wide scan's pairs (:func:`scan_history`)

    @property
    def kind(self) -> str:
        """What its pairs are, in words."""
        if self.wide:
            return f"fixes of one function or method (up to {MAX_FIX_STATEMENTS} statements)"
        return "single-statement fixes"


def scan_history(
    repo: Path,
    since: str | None = None,
    limit: int | None = None,
    git: str = "git",
    wide: bool = False,
    repository: str = "",
) -> HistoryScan:
    """The single-statement fixes of ``repo``'s history from ``since`` (exclusive) to HEAD,
    oldest first, at most ``limit`` of them; every other commit counted by its reason. A
    ``wide`` scan (for mining in context) takes more: a fix of a method of a top-level class,
    a fix of up to :data:`MAX_FIX_STATEMENTS` statements of one function in any number of diff
    hunks, and a commit whose subject names no fix but that changes a test too (a fix if the
    test says so: :attr:`FixPair.by_subject` False). Each pair names the repository
    ``repository`` (default: :func:`repository_name`)."""
    scan = HistoryScan(wide=wide)
    with GitReader(repo, git) as reader:
        name = repository or repository_name(reader)
        for commit in reader.commits(since):
            scan.commits += 1
            if limit is not None and len(scan.pairs) >= limit:
                scan.skipped["past --limit"] += 1
                continue
            try:
                scan.pairs.append(replace(_fix_pair(reader, commit, wide), repository=name))
            except Skip as why:
                scan.skipped[str(why)] += 1
    return scan


def repository_name(reader: GitReader, url: str | None = None) -> str:
    """The name a repository is mined as: that of its address ``url`` (``owner/name`` ->
    ``name``; default: its remote's), else its directory's."""
    url = reader.remote_url() if url is None else url
    return url.rpartition("/")[2] if url else reader.repo.resolve().name


class Skip(Exception):
    """A commit that is not a single-statement fix; the message is the reason."""


def _fix_pair(reader: GitReader, commit: Commit, wide: bool = False) -> FixPair:
    if len(commit.parents) != 1:
        raise Skip("merge commit" if commit.parents else "root commit")
    by_subject = bool(FIX_WORDS.search(commit.subject))
    if not (by_subject or wide):
        raise Skip("subject names no fix")
    changes = reader.changes(commit)
    code = [c for c in changes if c.path.endswith(".py") and not TEST_PATH.search(c.path)]
    tests = [c for c in changes if c.path.endswith(".py") and TEST_PATH.search(c.path)]
    if not (by_subject or tests):
        raise Skip("subject names no fix, and no test changed")
    if not code:
        raise Skip("no change to non-test Python code")
    if len(code) > 1:
        raise Skip("more than one Python file changed")
    (change,) = code
    if change.status != "M":
        raise Skip("file added, deleted or moved" if change.status in "AD" else "file type changed")
    try:
        before, after = blob_text(reader, change.old), blob_text(reader, change.new)
        assert before is not None and after is not None  # an M change has both blobs
        if not wide and _hunks(before, after) != 1:
            raise Skip("more than one diff hunk")
        try:
            owner, name, bug, fix, line, changed = _changed_function(before, after, wide)
        except RecursionError:  # ast.dump of a deeply nested expression, anywhere in the module
            raise Skip("a version nests too deeply to compare") from None
        added, touched = _added_tests(reader, tests)  # read only for a commit that is a fix pair
    except Unreadable as why:
        raise Skip(str(why)) from None
    return FixPair(
        commit.sha,
        commit.parents[0],
        commit.author_date,
        commit.subject,
        change.path,
        name,
        line,
        bug,
        fix,
        after,
        pattern(fix, bug),
        tuple(sorted(t.path for t in tests)),
        added,
        before,
        owner=owner,
        statements=changed,
        by_subject=by_subject,
        changed_tests=touched,
    )


def _hunks(before: str, after: str) -> int:
    """The diff hunks (three lines of context) between two versions: difflib's line matcher
    on the whole versions, its work bounded (:class:`_Matcher`). A change whose diff would
    cost more (a module of thousands of lines, many of them repeated: the matcher is quadratic
    in repeated lines, cubic at worst) is diffed on its changed region only: the lines both
    versions begin and end with are equal lines outside every hunk, trimmed first as git's own
    diff trims them. Only as a fallback, since repeated lines at the region's edges may then
    align differently; a region that is too costly as well is skipped, with its reason."""
    a, b = before.splitlines(), after.splitlines()
    try:
        return _Matcher(a, b, MAX_DIFF_WORK).hunks()
    except _TooCostly:
        pass
    start, most = 0, min(len(a), len(b))
    while start < most and a[start] == b[start]:
        start += 1
    end = 0
    while end < most - start and a[-1 - end] == b[-1 - end]:
        end += 1
    try:
        return _Matcher(a[start : len(a) - end], b[start : len(b) - end], MAX_DIFF_WORK).hunks()
    except _TooCostly:
        raise Skip("change too costly to diff") from None


class _TooCostly(Exception):
    pass


class _Matcher(difflib.SequenceMatcher[str]):
    """difflib's matcher (no junk) that refuses (:class:`_TooCostly`) to do more than
    ``budget`` steps: each search for a longest match is charged, before it runs, one step per
    line of ``a`` it scans and per occurrence of that line in ``b`` (an upper bound of its
    loops). Real changes stay far below the budget (a 5,000-line module: under half of it)."""

    def __init__(self, a: list[str], b: list[str], budget: int):
        super().__init__(None, a, b, autojunk=False)
        self._left = budget
        in_b = Counter(b)
        self._cost = [0]  # _cost[i]: the steps of scanning a[:i]
        for line in a:
            self._cost.append(self._cost[-1] + 1 + in_b[line])

    def hunks(self) -> int:
        return sum(1 for _ in self.get_grouped_opcodes(3))

    def find_longest_match(
        self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None
    ) -> difflib.Match:
        ahi = len(self._cost) - 1 if ahi is None else ahi
        self._left -= self._cost[ahi] - self._cost[alo]
        if self._left < 0:
            raise _TooCostly
        return super().find_longest_match(alo, ahi, blo, bhi)


def _parse(text: str) -> ast.Module:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise Skip("a version does not parse") from None


def _functions(module: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in module.body if isinstance(n, ast.FunctionDef)}


def _changed_function(
    before: str, after: str, wide: bool = False
) -> tuple[str, str, str, str, int, int]:
    """The one module-level function (``wide``: or method of a top-level class) whose single
    statement (``wide``: up to :data:`MAX_FIX_STATEMENTS`) the change edits: its class ("" for
    a function), its name, its source before and after, its first line after (decorators
    included), the statements changed."""
    old, new = _parse(before), _parse(after)
    a, b = _one_changed(old.body, new.body, "module-level statement")
    owner = ""
    if wide and isinstance(a, ast.ClassDef) and isinstance(b, ast.ClassDef):
        if a.name != b.name or ast.dump(_header(a)) != ast.dump(_header(b)):
            raise Skip("class header changed")
        owner = b.name
        a, b = _one_changed(a.body, b.body, "class-level statement")
    if not (isinstance(a, ast.FunctionDef) and isinstance(b, ast.FunctionDef)):
        where = "a module-level function or a method" if wide else "a module-level function"
        raise Skip(f"change outside {where}")
    if a.name != b.name:
        raise Skip("function renamed")
    changed, aligned = _statement_changes(_without_docstring(a), _without_docstring(b))
    if changed == 0:
        raise Skip("docstring only")
    if not wide and not (changed == 1 and aligned):
        raise Skip("more than one statement of the function changed")
    if changed > MAX_FIX_STATEMENTS:
        raise Skip(f"more than {MAX_FIX_STATEMENTS} statements of the function changed")
    first = min([b.lineno, *(d.lineno for d in b.decorator_list)])
    return owner, b.name, _source(before, a), _source(after, b), first, changed


def same_syntax(a: str, b: str) -> bool:
    """Whether two versions of a function are one syntax tree, its docstring, comments, layout
    and the names of its local variables aside (each renamed by its first binding's order)."""
    try:
        first, second = _normalised(a), _normalised(b)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return a == b
    return first == second


def _normalised(code: str) -> str:
    module = ast.parse(code)
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and ast.get_docstring(node):
            node.body = node.body[1:] or [ast.Pass()]
    functions = [n for n in module.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if functions:
        _rename_locals(functions[-1])
    return ast.dump(module)


def _rename_locals(func: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """Rename the variables ``func`` binds (not its parameters, nor names it declares global
    or nonlocal) to ``_v0``, ``_v1``, ... in the order of their first binding."""
    declared = {
        name
        for node in ast.walk(func)
        if isinstance(node, ast.Global | ast.Nonlocal)
        for name in node.names
    }
    parameters = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)}
    bound: dict[str, str] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            if node.id not in declared | parameters:
                bound.setdefault(node.id, f"_v{len(bound)}")
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and node.id in bound:
            node.id = bound[node.id]


def _one_changed(old: list[ast.stmt], new: list[ast.stmt], what: str) -> tuple[ast.AST, ast.AST]:
    """The one statement of a body that differs between its versions (none added or removed)."""
    if len(old) != len(new):
        raise Skip(f"{what}s added or removed")
    differing = [(a, b) for a, b in zip(old, new) if ast.dump(a) != ast.dump(b)]
    if not differing:
        raise Skip("no change to the syntax (comments or layout only)")
    if len(differing) > 1:
        raise Skip(f"more than one {what} changed")
    return differing[0]


def _header(node: ast.ClassDef) -> ast.ClassDef:
    shallow = copy.copy(node)
    shallow.body = []
    return shallow


def _source(text: str, node: ast.FunctionDef) -> str:
    """The function's lines (decorators included), a method's dedented by its indentation."""
    lines = text.splitlines(keepends=True)
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    assert node.end_lineno is not None
    margin = " " * node.col_offset
    return "".join(
        line[len(margin) :] if line.startswith(margin) else line
        for line in lines[first - 1 : node.end_lineno]
    )


def _without_docstring(func: ast.FunctionDef) -> ast.FunctionDef:
    body = func.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            shallow = copy.copy(func)
            shallow.body = body[1:]
            return shallow
    return func


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(func: ast.FunctionDef) -> list[str]:
    """The function's header and statements in pre-order, each as its own syntax without the
    statements it contains."""
    out: list[str] = []

    def header(node: ast.AST) -> str:
        shallow = copy.copy(node)
        kept = []  # except handlers and match cases keep their own headers (type, pattern)
        for name in _BODIES:
            if hasattr(shallow, name):
                clauses = (ast.ExceptHandler, ast.match_case)
                kept += [header(c) for c in getattr(node, name) if isinstance(c, clauses)]
                setattr(shallow, name, [])
        return "|".join([ast.dump(shallow), *kept])

    def visit(stmts: Sequence[ast.AST]) -> None:
        for s in stmts:
            out.append(header(s))
            if len(out) > MAX_STATEMENTS:
                raise Skip("function too large to compare")
            for name in _BODIES:
                for child in getattr(s, name, ()):
                    clause = isinstance(child, (ast.ExceptHandler, ast.match_case))
                    visit(child.body if clause else [child])

    visit([func])
    return out


def _statement_changes(a: ast.FunctionDef, b: ast.FunctionDef) -> tuple[int, bool]:
    """How many statements the change edits, adds or removes (the larger side of each differing
    run of the two versions' statements), and whether both versions have as many."""
    old, new = _statements(a), _statements(b)
    if len(old) == len(new):
        return sum(x != y for x, y in zip(old, new)), True
    runs = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in runs if op != "equal"), False


def pattern(fix: str, bug: str) -> str:
    """The first operator class (core, then families) one of whose edits of ``fix`` gives
    exactly ``bug``'s syntax tree; :data:`OTHER` when none does. Only the edits that reach the
    span where the two texts differ are tried (one elsewhere leaves that difference), at most
    :data:`MAX_PATTERN_EDITS` of them: a fix of a 500-line function has thousands of edits,
    each a parse."""
    try:
        target = ast.dump(ast.parse(bug))
        edits = generate_edits(fix, ALL_OPERATORS)
    except (SyntaxError, ValueError, RecursionError):
        return OTHER
    first, last = _differing_span(fix, bug)
    edits = [e for e in edits if e.start <= last and e.end >= first]
    for edit in edits[:MAX_PATTERN_EDITS]:
        try:
            if ast.dump(ast.parse(apply_edits(fix, [edit]))) == target:
                return edit.operator
        except (SyntaxError, ValueError, RecursionError):
            continue
    return OTHER


def _differing_span(a: str, b: str) -> tuple[int, int]:
    """Where ``a`` differs from ``b``: from the first differing character of ``a`` to the end
    of its part before their common suffix."""
    first = 0
    most = min(len(a), len(b))
    while first < most and a[first] == b[first]:
        first += 1
    suffix = 0
    while suffix < most - first and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    return first, len(a) - suffix


def _added_tests(
    reader: GitReader, tests: Sequence[Change]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``FILE::name`` of every test function the commit's test-file changes add, and of every
    one they add or change."""
    added, touched = [], []
    for change in tests:
        before = blob_text(reader, change.old) or ""
        after = blob_text(reader, change.new) or ""
        try:
            old, new = _test_functions(before), _test_functions(after)
        except Skip:
            continue
        added += [f"{change.path}::{name}" for name in sorted(set(new) - set(old))]
        touched += [f"{change.path}::{n}" for n in sorted(new) if old.get(n) != new[n]]
    return tuple(added), tuple(touched)


def _test_functions(text: str) -> dict[str, str]:
    """Test functions and methods (``test*``) a test module defines, each with its syntax (a
    name defined twice: the last)."""
    found = {}
    for node in ast.walk(_parse(text)) if text else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
            "test"
        ):
            found[node.name] = ast.dump(node)
    return found
