"""``execretrieval mine``: a SOURCE's self-contained documented functions as benchmark items.

The steps, each a function: read the SOURCE (:func:`.sources.load_source`, licence checked),
find the candidates (:func:`.functions.mined_functions`), give each its query and tests
(:func:`candidate_items`: its doctests, :mod:`.doctests`, and its test files' tests,
:mod:`.testfiles`; with ``record``, :mod:`.record`'s), run each canonical on its tests twice
in the sandbox (:func:`confirm_in_sandbox`), name the items and write them with ``MINED.md``
and ``NOTICE``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..corpus.bounds import NAME
from ..execution.runner import SuiteRunner
from ..safe_write import write_atomic
from ..sanitize import has_unsafe
from .density import near_clone_density
from .doctests import doctest_tests
from .functions import MinedFunction, mined_functions
from .query import query_text
from .record import with_recorded
from .sources import SourceError, SourceTree, check_licence, load_source
from .testfiles import FileTests, test_file_tests
from .writer import MinedItem, mined_markdown, notice_text, write_items

NO_DOCSTRING = "no docstring"
CONTROL_DOCSTRING = "docstring holds control characters"
NO_TEST = "no test"
FAILS_OWN_DOCTESTS = "fails its own doctests"
FAILS_OWN_TESTS = "fails its own tests"  # some of them from its test files
NONDETERMINISTIC = "nondeterministic"
# The value codec carries plain values only (an iterator under ``list(...)`` and the other
# consuming wrappers is read into a list in the child: docs/test-grammar.md); an instance of
# the package's own class, or a bare generator, cannot cross the sandbox's pipe.
UNSUPPORTED_OUTCOME = "error:UnsupportedValue"  # a SuiteResult outcome
UNCARRIED = "returns a value the sandbox's value codec cannot carry"


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
    functions: list[MinedFunction], dropped: Counter[str], file_tests: FileTests
) -> tuple[list[MinedItem], dict[int, str]]:
    """The functions that have a query and a test (their doctests, then their test files'
    tests), as (unnamed) items; the others' reasons by index into ``functions``. Doctest
    examples dropped are added to ``dropped``."""
    items: list[MinedItem] = []
    reasons: dict[int, str] = {}
    for index, fn in enumerate(functions):
        if fn.skip:
            reasons[index] = fn.skip
            continue
        query = query_text(fn.docstring)
        if query is None:
            reasons[index] = NO_DOCSTRING
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
        for test, where in file_tests.get(fn.name, []):
            tests.setdefault(test, where)  # a test-file test the doctests already hold: once
        if not tests:
            reasons[index] = NO_TEST
            continue
        items.append(MinedItem(str(index), fn, query, tuple(tests), tuple(tests.values())))
    return items, reasons


def confirm_in_sandbox(items: list[MinedItem], runner: SuiteRunner) -> dict[str, str]:
    """Each item's canonical run on its tests twice in the sandbox: the reason of each item
    (by stem) whose tests do not pass both times."""
    suites = [(i.function.code, "", i.tests, "python", i.stem) for i in items]
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


def named(items: list[MinedItem]) -> list[MinedItem]:
    """The items with their file stems, sorted by stem: the function's name in lower case, or
    module-qualified where two functions share that name."""
    counts = Counter(i.function.name.lower() for i in items)

    def stem(item: MinedItem) -> str:
        fn = item.function
        plain = fn.name.lower()
        qualified = plain if counts[plain] == 1 else f"{fn.module}_{fn.name}".lower()
        return re.sub(r"[^a-z0-9_]", "_", qualified)

    renamed = [MinedItem(stem(i), i.function, i.query, i.tests, i.provenance) for i in items]
    return sorted(renamed, key=lambda i: i.stem)


@contextmanager
def owned_runner(runner: SuiteRunner | None) -> Iterator[SuiteRunner]:
    """``runner``, or a one-job runner of its own, closed after use."""
    if runner is not None:
        yield runner
        return
    own = SuiteRunner(jobs=1)
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


def mine(
    source: str,
    out: Path,
    domain: str | None = None,
    limit: int | None = None,
    allow_licence: str | None = None,
    runner: SuiteRunner | None = None,
    record: int = 0,
) -> Mined:
    """Mine ``source`` into the items directory ``out``; raises :class:`.sources.SourceError`
    (a usage error) for a SOURCE or an ``out`` it cannot use."""
    out = Path(out)
    check_out(out)
    tree = load_source(source)
    check_licence(tree, allow_licence)
    domain = checked_domain(domain or default_domain(tree.distribution))
    functions = mined_functions(tree)
    dropped: Counter[str] = Counter()
    names = {fn.name for fn in functions if not fn.skip}
    candidates, reasons = candidate_items(functions, dropped, test_file_tests(tree, names))
    with owned_runner(runner) as run:
        if record:
            candidates = with_recorded(candidates, run, record)
        failed = confirm_in_sandbox(candidates, run)
    items, decided = settled(functions, candidates, reasons, failed, limit)
    result = Mined(tree, domain, items, decided, dropped)
    write_output(out, result)
    return result


def write_output(out: Path, result: Mined) -> None:
    """The item files, ``MINED.md`` and ``NOTICE``."""
    write_items(out, result.domain, result.items, result.tree)
    density = near_clone_density([fn for fn, _ in result.decided])
    markdown = mined_markdown(
        result.tree, result.domain, result.items, result.decided, result.dropped, density
    )
    write_atomic(out / "MINED.md", markdown, root=out)
    write_atomic(out / "NOTICE", notice_text(result.tree), root=out)
