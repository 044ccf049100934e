"""``execretrieval mine``: a SOURCE's self-contained documented functions as benchmark items.

The steps, each a function: read the SOURCE (:func:`.sources.load_source`, licence checked),
find the candidates (:func:`.functions.mined_functions`), give each its query and tests
(:func:`candidate_items`: its doctests, :mod:`.doctests`, and its test files' tests,
:mod:`.testfiles`; with ``record``, :mod:`.record`'s), run each canonical on its tests twice
in the sandbox (:func:`confirm_in_sandbox`), name the items and write them with ``MINED.md``
and ``NOTICE``.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from ..bounds import NAME
from ..execution.runner import SuiteRunner
from ..execution.sandbox import Limits
from ..safe_write import write_atomic
from ..sanitize import has_unsafe
from .carve import CARVED, Carved, carve, chosen, constant_passes, test_files
from .context import WrittenContext, written_context
from .density import near_clone_density
from .doctests import doctest_tests
from .functions import (
    MinedFunction,
    context_functions,
    mined_functions,
    module_name,
    source_modules,
)
from .query import LoggedQuery, entry_parameters, read_queries, summary_query
from .record import with_recorded
from .sources import SourceError, SourceTree, check_licence, load_source
from .testfiles import FileTests, test_file_tests
from .writer import NO_TEST, MinedItem, mined_markdown, notice_text, write_items

NO_DOCSTRING = "no docstring"
CONTROL_DOCSTRING = "docstring holds control characters"
ONE_OUTCOME = "its tests expect one outcome only (a constant function passes them)"
FAILS_OWN_DOCTESTS = "fails its own doctests"
FAILS_OWN_TESTS = "fails its own tests"  # some of them from its test files
NONDETERMINISTIC = "nondeterministic"
# The value codec carries plain values only (an iterator under ``list(...)`` and the other
# consuming wrappers is read into a list in the child: docs/test-grammar.md); an instance of
# the package's own class, or a bare generator, cannot cross the sandbox's pipe.
UNSUPPORTED_OUTCOME = "error:UnsupportedValue"  # a SuiteResult outcome
UNCARRIED = "returns a value the sandbox's value codec cannot carry"
# --queries FILE: a function no line names, and why a line became no item.
NOT_NAMED = "not named in --queries"
METHOD = "a method: minable with --context only"
NOT_FOUND = "function not found in the SOURCE"
AMBIGUOUS = "function path names several functions"
REPEATED_QUERY = "the same query for the same function again"
DUPLICATE = "the same code as an earlier module's function (one item: its locations)"
SAME_BEHAVIOUR = "passes the tests of an earlier function of its name, and it its (one item)"


# Carving: a test file's suite under one bound (each test in it under the harness's own), and
# the tests kept per function.
CARVE_LIMITS = Limits(timeout_s=120.0)
CARVED_PER_FUNCTION = 8


class MiningError(SourceError):
    """A usage error of ``execretrieval mine``: the message says what to change."""


@dataclass
class Mined:
    """What one mining run found and wrote."""

    tree: SourceTree
    domain: str
    items: list[MinedItem]
    decided: list[tuple[MinedFunction, str | None]]  # each function, with its skip reason
    dropped: Counter[str] = field(default_factory=Counter)  # doctest examples, by reason
    queries: Counter[str] | None = None  # --queries lines that became no item, by reason
    package: WrittenContext | None = None  # with --context: the context archive written
    carved: Carved | None = None  # with --context: what carving the test suite found

    def summary(self) -> str:
        skipped = sum(1 for _, reason in self.decided if reason)
        return (
            f"{self.tree.distribution} {self.tree.version}: {len(self.items)} items mined "
            f"into {self.domain}/, {skipped} functions skipped"
        )


def default_domain(distribution: str) -> str:
    """The distribution's name as a domain: lower case, every other character an underscore."""
    return re.sub(r"[^a-z0-9_]", "_", distribution.lower()) or "mined"


def checked_domain(domain: str) -> str:
    """``domain``, refused unless it is a valid folder name of an items directory."""
    if not NAME.match(domain):
        raise MiningError(f"domain {domain!r} is not a valid name (a-z, 0-9 and _ only)")
    return domain


def candidate_items(
    functions: list[MinedFunction],
    dropped: Counter[str],
    file_tests: FileTests,
    logged: dict[int, list[str]] | None = None,
    carved: Carved | None = None,
    per_function: int = CARVED_PER_FUNCTION,
) -> tuple[list[MinedItem], dict[int, str]]:
    """The functions that have a query and a test (their doctests, their test files' tests,
    then the calls ``carved`` from the package's suite: at most ``per_function``), as (unnamed)
    items; the others' reasons by index into ``functions``. Doctest examples dropped are added
    to ``dropped``. The query is the docstring's summary (:func:`.query.summary_query`), or
    with ``logged`` (``--queries``) the first logged query of the function (by index; a
    function it does not name is skipped). A method's tests are carved ones only (a test
    file's assert calls a function by its name)."""
    items: list[MinedItem] = []
    reasons: dict[int, str] = {}
    # A test file's assert names its function by name only: in a context, where carving
    # records the function each test really calls, only where one function has that name.
    names = Counter(fn.name for fn in functions if not fn.skip)
    for index, fn in enumerate(functions):
        if fn.skip:
            reasons[index] = fn.skip
            continue
        if logged is not None:
            query, why = (logged[index][0], None) if index in logged else (None, NOT_NAMED)
        elif not fn.docstring.strip():
            query, why = None, NO_DOCSTRING
        else:
            params = entry_parameters(fn.code, fn.name)
            query, why = summary_query(fn.docstring, fn.name, params)
        if query is None:
            reasons[index] = why or NO_DOCSTRING
            continue
        if has_unsafe(query):
            reasons[index] = CONTROL_DOCSTRING
            continue
        converted = doctest_tests(fn.docstring, fn.name)
        dropped.update(converted.dropped)
        tests = dict(
            zip(
                converted.tests,
                (f"doctest {fn.file}:{fn.docstring_line + n}" for n in converted.lines),
                strict=True,
            )
        )
        by_name = not fn.owner and (carved is None or names[fn.name] == 1)
        for test, where in file_tests.get(fn.name, []) if by_name else []:
            tests.setdefault(test, where)  # a test-file test the doctests already hold: once
        own = carved.tests.get((fn.module, fn.owner, fn.name), []) if carved else []
        for test, where in chosen([t for t in own if t[0] not in tests], per_function):
            tests[test] = where
        if not tests:
            reasons[index] = NO_TEST
            continue
        items.append(MinedItem(str(index), fn, query, tuple(tests), tuple(tests.values())))
    return items, reasons


def confirm_in_sandbox(items: list[MinedItem], runner: SuiteRunner) -> dict[str, str]:
    """Each item's canonical run on its tests twice in the sandbox: the reason of each item
    (by stem) whose tests do not pass both times."""
    suites = [(i.function.code, i.function.setup, i.tests, "python", i.stem) for i in items]
    first = runner.run_many(suites)
    second = runner.run_many(suites)
    reasons: dict[str, str] = {}
    for item, one, two in zip(items, first, second, strict=True):
        if one.passed and two.passed:
            continue
        if one.outcomes != two.outcomes:
            reasons[item.stem] = NONDETERMINISTIC
        elif UNSUPPORTED_OUTCOME in one.outcomes:
            reasons[item.stem] = UNCARRIED
        elif all(p.startswith("doctest ") for p in item.provenance):
            reasons[item.stem] = FAILS_OWN_DOCTESTS
        else:
            reasons[item.stem] = FAILS_OWN_TESTS
    return reasons


def without_failing_carved(
    items: list[MinedItem], runner: SuiteRunner
) -> tuple[list[MinedItem], dict[int, str]]:
    """The items without the carved tests their canonical fails in either of two runs (a call
    that depended on what the test did before it, on the clock, ...): a carved test states
    what the suite saw, and only what the function gives on its own is a test of it. An item
    whose tests one fixed answer passes is none (its reason by index): a function that always
    gives it would pass them."""
    carved = [i for i in items if any(p.startswith(CARVED) for p in i.provenance)]
    suites = [(i.function.code, i.function.setup, i.tests, "python", i.stem) for i in carved]
    first, second = runner.run_many(suites), runner.run_many(suites)
    kept: dict[str, MinedItem] = {}
    for item, one, two in zip(carved, first, second, strict=True):
        keep = [
            n
            for n, where in enumerate(item.provenance)
            if not where.startswith(CARVED)
            or (one.outcomes[n] == "pass" and two.outcomes[n] == "pass")
        ]
        kept[item.stem] = replace(
            item,
            tests=tuple(item.tests[n] for n in keep),
            provenance=tuple(item.provenance[n] for n in keep),
        )
    left = [kept.get(i.stem, i) for i in items]
    reasons = {
        int(i.stem): ONE_OUTCOME if i.tests else NO_TEST
        for i in left
        if not i.tests or constant_passes(i.tests)
    }
    return [i for i in left if int(i.stem) not in reasons], reasons


def named(items: list[MinedItem]) -> list[MinedItem]:
    """The items with their file stems, sorted by stem: the function's name in lower case, or
    module-qualified where two functions share that name."""
    counts = Counter(_plain(i.function) for i in items)

    def stem(item: MinedItem) -> str:
        fn = item.function
        plain = _plain(fn)
        qualified = plain if counts[plain] == 1 else f"{fn.module}_{fn.name}".lower()
        return re.sub(r"[^a-z0-9_]", "_", qualified)

    return sorted((replace(i, stem=stem(i)) for i in items), key=lambda i: i.stem)


def _plain(fn: MinedFunction) -> str:
    """A function's name in lower case, a method's ``<class>_<name>``."""
    return f"{fn.owner}_{fn.name}".lower() if fn.owner else fn.name.lower()


def merged_duplicates(
    candidates: list[MinedItem], failed: dict[str, str]
) -> tuple[list[MinedItem], dict[int, str]]:
    """The (unnamed) candidates with each set of identical canonicals (the same syntax tree:
    comments and layout aside) as one item: the first in file and line order, its
    ``locations`` every one's ``FILE:LINE`` (python-slugify 9.2.0's sdist defines
    ``smart_truncate`` in ``slugify/_legacy.py`` and ``tools/legacy_reference.py``: blank lines
    and ``elif`` against ``else: if`` apart, the same); the others' reasons by index. Items
    the sandbox ``failed`` are left as they are."""
    kept: list[MinedItem] = []
    first: dict[str, int] = {}  # normalised canonical -> its index in kept
    reasons: dict[int, str] = {}
    for item in candidates:
        if item.stem in failed:
            kept.append(item)
            continue
        where = f"{item.function.file}:{item.function.line}"
        key = item.function.setup + ast.dump(ast.parse(item.function.code))
        at = first.setdefault(key, len(kept))
        if at < len(kept) and kept[at].function is not item.function:
            kept[at] = replace(kept[at], locations=(*kept[at].locations, where))
            reasons[int(item.stem)] = DUPLICATE
        else:  # the first of its code (or another item of the same function)
            kept.append(replace(item, locations=(where,)))
    return [i if len(i.locations) > 1 else replace(i, locations=()) for i in kept], reasons


def merged_twins(
    candidates: list[MinedItem], failed: dict[str, str], runner: SuiteRunner
) -> tuple[list[MinedItem], dict[int, str]]:
    """:func:`merged_duplicates`, then each function whose canonical passes the tests of an
    earlier one of the same name, and that one its tests (run once each in the sandbox), is
    that one's item too, its location added: a vendored or reference copy written
    differently, which verify's name-collision gate would refuse as two items."""
    candidates, reasons = merged_duplicates(candidates, failed)
    groups: dict[str, list[MinedItem]] = {}
    for item in candidates:
        if item.stem not in failed:
            groups.setdefault(_plain(item.function), []).append(item)
    pairs = [
        (a, b)
        for group in groups.values()
        for n, b in enumerate(group)
        for a in group[:n]
        if a.function is not b.function
    ]
    suites = [
        (x.function.code, y.function.setup, y.tests, "python", f"{x.stem}<{y.stem}")
        for a, b in pairs
        for x, y in ((a, b), (b, a))
    ]
    results = runner.run_many(suites)  # a on b's tests, b on a's, per pair
    twins = {
        (a.stem, b.stem)
        for n, (a, b) in enumerate(pairs)
        if results[2 * n].passed and results[2 * n + 1].passed
    }
    merged: dict[str, MinedItem] = {}  # a later twin's stem -> the item it joined
    kept: dict[str, MinedItem] = {item.stem: item for item in candidates}
    for a, b in pairs:  # in file and line order: each joins its earliest twin still kept
        if (a.stem, b.stem) not in twins or b.stem in merged or a.stem in merged:
            continue
        first = kept[a.stem]
        where = b.locations or (f"{b.function.file}:{b.function.line}",)
        own = first.locations or (f"{first.function.file}:{first.function.line}",)
        kept[a.stem] = replace(first, locations=(*own, *where))
        merged[b.stem] = first
        reasons[int(b.stem)] = SAME_BEHAVIOUR
    return [kept[i.stem] for i in candidates if i.stem not in merged], reasons


@contextmanager
def owned_runner(runner: SuiteRunner | None, jobs: int = 1) -> Iterator[SuiteRunner]:
    """``runner``, or a runner of its own (``jobs`` sandboxes), closed after use."""
    if runner is not None:
        yield runner
        return
    own = SuiteRunner(jobs=jobs)
    try:
        yield own
    finally:
        own.close()


def settled(
    functions: list[MinedFunction],
    candidates: list[MinedItem],
    reasons: dict[int, str],
    failed: dict[str, str],
    limit: int | None,
    naming: Callable[[list[MinedItem]], list[MinedItem]] = named,
) -> tuple[list[MinedItem], list[tuple[MinedFunction, str | None]]]:
    """The items ``naming`` names (those the sandbox confirmed, the first ``limit``) and each
    function with its skip reason (``reasons`` by index into ``functions`` gains the sandbox's
    and the limit's)."""
    for item in candidates:
        if item.stem in failed:
            reasons[int(item.stem)] = failed[item.stem]
    items = naming([i for i in candidates if i.stem not in failed])
    if limit is not None:
        index_of = {id(fn): index for index, fn in enumerate(functions)}
        for item in items[limit:]:
            reasons[index_of[id(item.function)]] = "over --limit"
        items = items[:limit]
    return items, [(fn, reasons.get(index)) for index, fn in enumerate(functions)]


def check_out(out: Path) -> None:
    """Refuse an ``out`` that is not empty and holds no ``MINED.md``: mining replaces the item
    files of its domain, so it never writes into someone else's items directory."""
    if out.is_dir() and any(out.iterdir()) and not (out / "MINED.md").is_file():
        raise MiningError(
            f"{out} is not empty and holds no MINED.md: mine into a new directory (mining "
            "replaces the item files of its domain)"
        )


def resolved_queries(
    lines: list[LoggedQuery], functions: list[MinedFunction], tree: SourceTree
) -> tuple[dict[int, list[str]], list[tuple[LoggedQuery, int]], Counter[str]]:
    """The ``--queries`` lines by the function each names (index into ``functions``: the path
    ``module.name``, or else the one function of that name under the path's package nearest
    to it, as a re-export names it), the lines with their function, and the other lines'
    reasons."""
    exact = {qualified(fn): index for index, fn in enumerate(functions)}
    modules = {module_name(path) for path in source_modules(tree)}
    logged: dict[int, list[str]] = {}
    named_lines: list[tuple[LoggedQuery, int]] = []
    unresolved: Counter[str] = Counter()

    def min_depth(indexes: list[int]) -> int:
        return min((functions[i].module.count(".") for i in indexes), default=0)

    for line in lines:
        prefix, _, name = line.function.rpartition(".")
        under = [
            index
            for index, fn in enumerate(functions)
            if fn.name == name and not fn.owner and (fn.module + ".").startswith(prefix + ".")
        ]
        shallowest = [i for i in under if functions[i].module.count(".") == min_depth(under)]
        index = exact.get(line.function, shallowest[0] if len(shallowest) == 1 else None)
        if index is None:
            owner, _, cls = prefix.rpartition(".")
            method = prefix not in modules and (owner in modules or cls[:1].isupper())
            unresolved[METHOD if method else AMBIGUOUS if under else NOT_FOUND] += 1
        elif line.query in logged.get(index, []):
            unresolved[REPEATED_QUERY] += 1
        else:
            logged.setdefault(index, []).append(line.query)
            named_lines.append((line, index))
    return logged, named_lines, unresolved


def qualified(fn: MinedFunction) -> str:
    """How a ``--queries`` line names a function (``pkg.module.func``) or a method
    (``pkg.module.Class.method``)."""
    return ".".join(part for part in (fn.module, fn.owner, fn.name) if part)


def named_queries(items: list[MinedItem], logged: dict[int, list[str]]) -> list[MinedItem]:
    """One item per logged query of each (unnamed) item's function, sorted by stem: the
    function's stem (:func:`named`), then ``<stem>_q2``, ``<stem>_q3``, ..."""
    queries = {id(item.function): logged[int(item.stem)] for item in items}
    bases = named(items)
    taken = {item.stem for item in bases}
    out: list[MinedItem] = []
    for item in bases:
        for k, query in enumerate(queries[id(item.function)], 1):
            stem = item.stem
            if k > 1:
                stem = f"{item.stem}_q{k}"
                while stem in taken:  # a function of that very name: never one stem twice
                    stem += "_"
                taken.add(stem)
            out.append(replace(item, stem=stem, query=query))
    return sorted(out, key=lambda i: i.stem)


def limited(
    items: list[MinedItem], decided: list[tuple[MinedFunction, str | None]], limit: int | None
) -> tuple[list[MinedItem], list[tuple[MinedFunction, str | None]]]:
    """The first ``limit`` items; a function left with none of its items is ``over --limit``."""
    if limit is None:
        return items, decided
    kept = {id(item.function) for item in items[:limit]}
    cut = {id(item.function) for item in items[limit:]} - kept
    decided = [(fn, "over --limit" if id(fn) in cut else why) for fn, why in decided]
    return items[:limit], decided


def mine(
    source: str,
    out: Path,
    domain: str | None = None,
    limit: int | None = None,
    allow_licence: str | None = None,
    runner: SuiteRunner | None = None,
    record: int = 0,
    queries: Path | None = None,
    context: bool = False,
    jobs: int = 1,
    wheels: Path | None = None,
) -> Mined:
    """Mine ``source`` into the items directory ``out``; raises :class:`.sources.SourceError`
    (a usage error) for a SOURCE, an ``out`` or a ``queries`` file it cannot use. With
    ``queries`` (``--queries FILE``), each line's query for the function it names is an
    item (:func:`.query.read_queries`). With ``context``, every public function and method
    is a candidate in its repository context (:mod:`.context`), and the package's own test
    suite is carved for tests (:mod:`.carve`); ``wheels``: a folder whose pure-Python wheels
    the context holds too (:func:`.context.written_context`)."""
    out = Path(out)
    check_out(out)
    lines = read_queries(Path(queries)) if queries is not None else None
    tree = load_source(source)
    check_licence(tree, allow_licence)
    domain = checked_domain(domain or default_domain(tree.distribution))
    package = written_context(tree, out, wheels, allow_licence) if context else None
    functions = context_functions(tree, package.sha256) if package else mined_functions(tree)
    dropped: Counter[str] = Counter()
    names = {fn.name for fn in functions if not fn.skip}
    logged, named_lines, unresolved = (
        resolved_queries(lines, functions, tree) if lines is not None else (None, [], None)
    )
    with owned_runner(runner, jobs) as run:
        carved = carved_suite(functions, package, run, logged) if package else None
        candidates, reasons = candidate_items(
            functions, dropped, test_file_tests(tree, names), logged, carved
        )
        if carved is not None:
            candidates, weak = without_failing_carved(candidates, run)
            reasons.update(weak)
        if record:
            candidates = with_recorded(candidates, run, record)
        failed = confirm_in_sandbox(candidates, run)
        candidates, duplicates = merged_twins(candidates, failed, run)
    reasons.update(duplicates)
    if logged is None:
        items, decided = settled(functions, candidates, reasons, failed, limit)
    else:
        naming = partial(named_queries, logged=logged)
        items, decided = settled(functions, candidates, reasons, failed, None, naming)
        items, decided = limited(items, decided, limit)
    for _, index in named_lines:  # a logged query's function that became no item
        why = decided[index][1]
        if unresolved is not None and why:
            unresolved[f"function skipped: {why}"] += 1
    result = Mined(tree, domain, items, decided, dropped, unresolved, package, carved)
    write_output(out, result)
    return result


def carved_suite(
    functions: list[MinedFunction],
    package: WrittenContext,
    runner: SuiteRunner,
    logged: dict[int, list[str]] | None = None,
) -> Carved:
    """:func:`.carve.carve` of the candidates (the functions with a docstring, or with
    ``logged`` the ones its lines name) over the package's test files, with a runner of the
    carving limits and ``runner``'s jobs."""
    wanted = [
        fn
        for index, fn in enumerate(functions)
        if not fn.skip and (fn.docstring.strip() if logged is None else index in logged)
    ]
    files = test_files(list(package.files))
    with SuiteRunner(CARVE_LIMITS, jobs=runner.jobs, isolation=runner.isolation) as own:
        return carve(wanted, package.sha256, files, own)


def write_output(out: Path, result: Mined) -> None:
    """The item files, ``MINED.md`` and ``NOTICE``."""
    write_items(out, result.domain, result.items, result.tree, result.package)
    density = near_clone_density([fn for fn, _ in result.decided])
    markdown = mined_markdown(
        result.tree,
        result.domain,
        result.items,
        result.decided,
        result.dropped,
        density,
        result.queries,
        result.carved,
        result.package,
    )
    write_atomic(out / "MINED.md", markdown, root=out)
    write_atomic(out / "NOTICE", notice_text(result.tree, result.package), root=out)
