"""The pytest nodes of a benchmark or verification session and their failure text.

An item file yields the nodes its session's mode asks for (``Session.item_nodes``): one
:class:`QueryItem` per embedder or pipeline in a benchmark, one :class:`VerifyItem` per snippet in
a verification, whose items directory also yields the corpus-freshness and name-collision gates.
Nodes only look their results up in the session (:func:`session_of`); no ranking happens here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from .corpus.items import BenchmarkItem, ItemError, load_item
from .corpus.store import CorpusError
from .corpus.verify import Case, check, name_collisions, shared_names
from .ranking.benchmark import QueryResult
from .ranking.returned import rank1_returned
from .reporting.failures import failure_line, failure_text
from .reporting.report import report_row
from .sanitize import escape
from .scoring.metrics import junit_properties

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from .session import BenchmarkSession, Session, VerifySession

SESSION_PLUGIN = "execretrieval-session"


def keep_item_ids(config: pytest.Config) -> bool:
    """Show item ids as they are (``<domain>/<stem>[pipeline]``, relative to their items
    directory), not re-based on the invocation directory (``../numbers/x[bm25]``).

    pytest has no hook for this: its terminal reporter passes every id through
    ``Config.cwd_relative_nodeid``, so this is the project's one adaptation of a pytest
    internal, replaced on this ``config`` only. Tested on every pytest version the project
    supports (``tests/test_plugin_benchmark.py``; ``tox -e pytest8`` runs it on the oldest).
    False, and ids re-based as pytest does, where a pytest lacks the method."""
    if not callable(getattr(config, "cwd_relative_nodeid", None)):
        return False
    config.cwd_relative_nodeid = lambda nodeid: nodeid  # type: ignore[method-assign]
    return True


def session_of(node: pytest.Item | pytest.Collector) -> Session:
    """The benchmark or verification session this node belongs to."""
    return cast("Session", node.config.pluginmanager.get_plugin(SESSION_PLUGIN))


class BenchmarkFailure(Exception):
    """A benchmark or verification item failed; its message is the whole report."""


class VerificationFailure(BenchmarkFailure):
    pass


class RankOneFailure(BenchmarkFailure):
    """A query's rank 1 fails: ``str()`` is the whole text, ``line`` its one-line summary."""

    def __init__(self, text: str, line: str):
        super().__init__(text)
        self.line = line


# The whole failure text of a query whose terminal output is one line travels in the test
# report as this section (pytest names it "Captured execretrieval failure call"), so the
# controller's report and junit XML, pytest-html and --report-log keep it, across xdist too.
FAILURE_SECTION = "execretrieval failure"


def shows_full_failures(config: pytest.Config) -> bool:
    """Whether a failing query prints its whole text: with ``-v`` or ``--tb=long|short|native``.

    By default it prints one line (:func:`.failures.failure_line`), so a session with hundreds
    of failing queries stays readable; the whole text is in the report and the junit XML."""
    return config.get_verbosity() > 0 or config.option.tbstyle in ("long", "short", "native")


def running_on_ci() -> bool:
    """pytest's own test (``_pytest.terminal.running_on_ci``): summary lines are not cut there."""
    return any(name in os.environ for name in ("CI", "BUILD_NUMBER"))


FULL_REASON = " … (see -v)"


def fit_line(line: str, room: int) -> str:
    """``line`` if it fits in ``room`` columns, else its words that fit with
    :data:`FULL_REASON` after them (at least the first word)."""
    if len(line) <= room:
        return line
    words = line[: max(room - len(FULL_REASON), 0) + 1].split(" ")
    kept = " ".join(words[:-1]) if len(words) > 1 else line.split(" ", 1)[0]
    return kept.rstrip(";,") + FULL_REASON


def failure_message(report: pytest.TestReport) -> str:
    """The whole failure text of a failed benchmark report (see :data:`FAILURE_SECTION`)."""
    for name, content in report.sections:
        if FAILURE_SECTION in name:
            return content
    return str(report.longrepr)


class ReportingItem(pytest.Item):
    """An item whose own failures read as their message alone, like a good assertion. The
    message quotes item text and what snippets returned: control characters in it are escaped
    (:mod:`.sanitize`) before pytest shows it, records it or writes it to junit."""

    failure_prefix = ""

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, RankOneFailure) and not shows_full_failures(self.config):
            return self._fitted(excinfo.value.line)
        if isinstance(excinfo.value, BenchmarkFailure):
            return escape(self.failure_prefix + str(excinfo.value))
        return super().repr_failure(excinfo, style)

    def _fitted(self, line: str) -> str:
        """``line`` as pytest's short summary shows it (``FAILED <node id> - <line>``): where
        pytest would cut it at the terminal's width, mid-word, it is cut here at a word and
        says how to see the rest (not on CI, where pytest cuts nothing)."""
        if running_on_ci() or self.config.get_verbosity() >= 2:
            return line
        room = self.config.get_terminal_writer().fullwidth - len(f"FAILED {self.nodeid} - ")
        return fit_line(line, room)


class ItemsDir(pytest.Directory):
    """The items directory in a verification run: its entries as ``pytest.Dir`` collects them
    (by name; ``--ignore`` and ``pytest_ignore_collect`` apply), then the two gates.

    Built on ``pytest.Directory`` as pytest's ``customdirectory`` example is: ``pytest.Dir`` is
    final."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        ihook, config = self.ihook, self.config
        for entry in sorted(os.scandir(self.path), key=lambda e: e.name):
            path, is_dir = Path(entry.path), entry.is_dir()
            if not self.session.isinitpath(
                path, with_parents=is_dir
            ) and ihook.pytest_ignore_collect(collection_path=path, config=config):
                continue
            if is_dir:
                collector = ihook.pytest_collect_directory(path=path, parent=self)
                if collector is not None:
                    yield collector
            elif entry.is_file():
                yield from ihook.pytest_collect_file(file_path=path, parent=self)
        yield CorpusFreshnessItem.from_parent(self, name="corpus-freshness")
        yield NameCollisionItem.from_parent(self, name="name-collision")


class ItemFile(pytest.File):
    """One item file: the nodes of its query (a malformed file is a collection error)."""

    def collect(self):
        session = session_of(self)
        item = session.items.get(self.path.resolve()) or load_item(self.path)
        yield from session.item_nodes(self, item)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:  # a collector's failure has no style of its own
        if isinstance(excinfo.value, (ItemError, CorpusError)):
            return escape(str(excinfo.value))
        return super().repr_failure(excinfo)


class VerifyItem(ReportingItem):
    """One snippet against its item's tests: the canonical passes, a distractor fails one.

    Its run starts the suite of the item pytest runs next (``next_case``, set by the session
    from ``pytest_runtest_protocol``), which then runs while pytest reports this one."""

    def __init__(self, *args, case: Case, codes: tuple[str, ...] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.case = case
        self.codes = codes  # every case's code of its item (a runner may build them together)
        self.next_case: Case | None = None
        self.next_codes: tuple[str, ...] = ()
        self.add_marker(case.item.domain)

    def runtest(self) -> None:
        runner = cast("VerifySession", session_of(self)).runner
        runner.expect(self.case.suite, self.codes)
        result = runner.run(*self.case.suite)
        if self.next_case is not None:
            runner.expect(self.next_case.suite, self.next_codes)
            runner.prefetch(*self.next_case.suite)
        problem = check(self.case, result)
        if problem:
            raise VerificationFailure(problem)

    def reportinfo(self):
        return self.path, 0, f"{self.case.item.id}::{self.case.name}"


class NameCollisionItem(ReportingItem):
    failure_prefix = "name collision gate:\n"

    def runtest(self) -> None:
        session = cast("VerifySession", session_of(self))
        run = session.pool_of(self.path)  # the gate of one language pool: its own items
        items = list(run.loaded.items if run.loaded else ())
        found = name_collisions(items, session.runner)
        if found:
            raise VerificationFailure("\n".join(found))
        self.user_properties.append(("shared_names", json.dumps(shared_names(items))))

    def reportinfo(self):
        return self.path, 0, "name-collision gate"


class CorpusFreshnessItem(ReportingItem):
    """Fails when the committed corpus of its language pool (the items directory it is the
    gate of) does not match the item files (or was never built)."""

    failure_prefix = "corpus freshness gate: "

    def runtest(self) -> None:
        session = cast("VerifySession", session_of(self))
        run = session.pool_of(self.path)  # the gate of one language pool: its own corpus
        build = f"`execretrieval build {run.pool.items_dir}`"
        if run.loaded is None or not run.loaded.built:
            raise VerificationFailure(f"no corpus: run {build}")
        stale = session.stale(run)
        if stale:
            raise VerificationFailure(
                f"the corpus is stale; run {build}:\n  " + "\n  ".join(map(str, stale))
            )

    def reportinfo(self):
        return self.path, 0, "corpus-freshness gate"


class QueryItem(ReportingItem):
    """One query for one embedder: passes iff the rank-1 snippet passes the query's tests."""

    def __init__(
        self, *args, item: BenchmarkItem, embedder: str, result: QueryResult | None, **kwargs
    ):
        super().__init__(*args, **kwargs)
        self.item, self.embedder, self.result = item, embedder, result
        self.add_marker("execretrieval")
        self.add_marker(item.domain)

    def runtest(self) -> None:
        r = self.result
        if r is None:  # only a --collect-only session collects a query without a ranking
            raise BenchmarkFailure(f"{self.item.id} has no ranking for {self.embedder}")
        top1 = r.top[0]
        self.user_properties += [
            ("embedder", self.embedder),
            ("query_id", r.query_id),
            ("canonical_rank", r.canonical_rank),
            ("rank1_kind", top1.kind),
            ("rank1_operator", top1.operator or ""),
            ("rank1_score", f"{top1.score:.6f}"),
            ("canonical_score", f"{r.canonical_score:.6f}"),
            ("rank1_tie", r.rank1_tie.get("size", 1)),
            *junit_properties(report_row(r)),
        ]
        if not r.passed:
            session = cast("BenchmarkSession", session_of(self))  # its runner: limits, isolation
            line = failure_line(self.item, r)  # also the whole text's first line: the junit
            code = session.code_by_id()
            returned = rank1_returned(self.item, r, code, session.runner.run)  # values shown
            text = line + "\n" + failure_text(self.item, r, code, returned)  # the message
            if not shows_full_failures(self.config):
                self.add_report_section("call", FAILURE_SECTION, text)
            raise RankOneFailure(text, line)

    def reportinfo(self):
        return self.path, 0, f"{self.item.id}[{self.embedder}]"
