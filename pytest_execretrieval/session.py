"""The two session plugins, one per mode, registered by ``plugin.py`` only when a run asks for
one: :class:`BenchmarkSession` (``--embedder``) and :class:`VerifySession`
(``--execretrieval-verify``).

Either collects the items directory only, with ids relative to it, and each of its language
pools (:mod:`.corpus.pools`: ``items/javascript/`` has its own corpus; its ids are
``javascript/<domain>/<stem>...``, its nodes carry the marker ``javascript``). The hooks are
glue: the work is done by :mod:`.orchestration`, and a benchmark's run state is a
:class:`.state.PoolStates` (a :class:`.state.BenchmarkState` per pool) in
``config.stash[STATE]``. The controller (or the only process, without xdist) loads the items
and the corpus once in ``pytest_sessionstart`` (a benchmark also ranks the pool there) and
hands xdist workers what they need as JSON texts in ``workerinput`` (an
:class:`.orchestration.Handoff` per pool): no file, no path, so a worker in another directory or on
another machine gets the same state, and no worker parses an item again. Items only look their
result up; everything written to reports is assembled in the controller from the test reports
it receives, and each worker's count of suites executed comes back in ``workeroutput``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .bounds import conftests_above, foreign_files
from .corpus.item_cache import ItemCache
from .corpus.items import BenchmarkItem
from .corpus.pools import POOL_LANGUAGES, Pool, combined_pools, duplicate_items
from .corpus.store import (
    Corpus,
    CorpusError,
    Snippet,
    StaleReason,
    corpus_dir,
    read_corpus,
)
from .corpus.verify import distractors_by_query, item_cases
from .execution.runner import SuiteRunner
from .nodes import (
    ItemFile,
    ItemsDir,
    QueryItem,
    RankOneFailure,
    VerifyItem,
    failure_message,
    keep_item_ids,
)
from .orchestration import (
    EXIT_SERVICE,
    Handoff,
    Loaded,
    ServiceFailure,
    SetupError,
    load_pool,
    prepare_pool,
)
from .ranking.benchmark import QueryResult
from .sanitize import escape, one_line
from .settings import Settings
from .state import BenchmarkState, Outcome, PoolStates

# workerinput: {pool name: its Handoff text}; workeroutput: the counts
WORKER_KEY = "execretrieval_handoff"
STATE = pytest.StashKey[PoolStates]()  # the run state of a benchmark session


@dataclass
class PoolRun:
    """What a session holds of one language pool (:mod:`.corpus.pools`): its items and
    corpus once loaded, its item caches (one per folder of the pool), and (verification) its
    distractors by query."""

    pool: Pool
    item_caches: tuple[ItemCache, ...]
    loaded: Loaded | None = None
    distractors: dict[str, list[Snippet]] | None = None

    @property
    def item_cache(self) -> ItemCache:
        return self.item_caches[0]


class Session:
    """What both modes share: the items directory (or several, ranked as one pool), its
    corpus, the sandbox runner, and the collection of item files only, with ids relative to
    the items directory."""

    def __init__(self, config: pytest.Config, settings: Settings):
        self.config = config
        self.settings = settings
        self.items_dirs = [where.resolve() for where in settings.all_items_dirs()]
        for where in self.items_dirs:  # each one untrusted, each one checked
            if not where.is_dir():
                raise pytest.UsageError(f"items directory {where} does not exist")
            refuse_untrusted(where, config)
        self.items_dir = self.items_dirs[0]
        self.corpus_dir = corpus_dir(self.items_dir, settings.corpus)
        self.is_worker = hasattr(config, "workerinput")
        pools = combined_pools(self.items_dirs, settings.corpus)
        twice = duplicate_items(pools)
        if twice:
            raise pytest.UsageError(
                "an item id in two items directories (reports and baselines name queries by "
                "id; rename or remove one): " + "; ".join(map(one_line, twice))
            )
        # item files validated by content; written once the run does work (a usage error or
        # --collect-only leaves no cache directory behind)
        self.pools = {
            pool.name: PoolRun(
                pool, tuple(ItemCache(settings.cache_dir, where) for where in pool.items_dirs)
            )
            for pool in pools
        }
        # the good items of every pool by resolved path, loaded once per process
        self.items: dict[Path, BenchmarkItem] = {}
        self._runner: SuiteRunner | None = None
        self._handoff: dict[str, str] | None = None  # the controller's Handoff texts, made once
        # Collect the benchmark only: the given paths inside the items dir, else all of it.
        inside = [a for a in config.args if self.inside(Path(a).resolve())]
        config.args[:] = inside or [str(where) for where in self.items_dirs]
        config.option.continue_on_collection_errors = True
        keep_item_ids(config)
        domains = {p.name for where in self.items_dirs for p in where.iterdir() if p.is_dir()}
        for domain in sorted(domains):
            if domain not in self.pools:
                config.addinivalue_line("markers", f"{domain}: benchmark items of domain {domain}")
        for name in self.pools:
            if name:
                config.addinivalue_line("markers", f"{name}: benchmark items of the {name} pool")

    @property
    def loaded(self) -> Loaded | None:
        """The items directory's own pool, loaded."""
        return self.pools[""].loaded

    @property
    def item_cache(self) -> ItemCache:
        return self.pools[""].item_cache

    def inside(self, path: Path) -> bool:
        """Whether ``path`` lies in one of the session's items directories."""
        return any(_within(path, where) for where in self.items_dirs)

    def pool_of(self, path: Path) -> PoolRun:
        """The pool a path inside an items directory belongs to."""
        path = path.resolve()
        for name, run in self.pools.items():
            if name and any(_within(path, d.resolve()) for d in run.pool.items_dirs):
                return run
        return self.pools[""]

    def save_item_caches(self) -> None:
        for run in self.pools.values():
            for cache in run.item_caches:
                cache.save()

    @property
    def runner(self) -> SuiteRunner:
        if self._runner is None:
            self._runner = SuiteRunner(
                self.settings.limits,
                self.outcome_cache_dir(),
                jobs=1,
                isolation=self.settings.isolation,
            )
        return self._runner

    def outcome_cache_dir(self) -> Path | None:
        return self.settings.cache_dir

    def load(self, stale_ok: bool) -> dict[str, Loaded]:
        """Every pool's items and corpus (a stale or missing corpus of any pool is a usage
        error for a benchmark, before any work)."""
        for run in self.pools.values():
            try:
                run.loaded = load_pool(
                    run.pool.items_dirs,
                    self.settings.corpus,
                    stale_ok=stale_ok,
                    item_caches=run.item_caches,
                )
            except SetupError as exc:
                raise pytest.UsageError(str(exc)) from None
        self._index_items()
        return {name: run.loaded for name, run in self.pools.items() if run.loaded}

    def _index_items(self) -> None:
        self.items = {
            item.path.resolve(): item
            for run in self.pools.values()
            for item in (run.loaded.items if run.loaded else ())
        }

    def receive(self) -> dict[str, Handoff]:
        """A worker's state: its controller's :class:`.orchestration.Handoff` per pool."""
        texts = self.config.workerinput[WORKER_KEY]  # type: ignore[attr-defined]  # xdist's
        handoffs = {}
        for name, run in self.pools.items():
            handoffs[name] = Handoff.from_text(
                texts[name], run.pool.items_dirs, self.settings.corpus
            )
            run.loaded = handoffs[name].loaded
        self._index_items()
        return handoffs

    def handoff(self, pool: str) -> Handoff:
        loaded = self.pools[pool].loaded
        assert loaded is not None  # handed off after the controller loaded
        return Handoff(loaded, {}, frozenset())

    @pytest.hookimpl(optionalhook=True)  # an xdist hook: pytest-xdist may not be installed
    def pytest_configure_node(self, node) -> None:  # xdist controller only
        if self._handoff is None:
            self._handoff = {name: self.handoff(name).to_text() for name in self.pools}
        node.workerinput[WORKER_KEY] = self._handoff

    @property
    def executed(self) -> int:
        """Suites this process ran in a sandbox."""
        return self._runner.executed if self._runner else 0

    @property
    def foreign(self) -> int:
        """Cached outcomes this process ignored because another key signed them."""
        return self._runner.foreign if self._runner else 0

    @property
    def corpus(self) -> Corpus | None:
        return self.loaded.corpus if self.loaded else None

    def item_nodes(self, parent: ItemFile, item: BenchmarkItem) -> Iterator[pytest.Item]:
        """The pytest items of one benchmark item in this mode."""
        raise NotImplementedError

    def left_out(self, path: Path) -> bool:
        """Whether ``path`` lies in a language pool's folder that this run's corpus leaves out
        (a stacked, mutmut or families run has the directory's own pool only)."""
        return any(
            name not in self.pools and _within(path, where / name)
            for name in POOL_LANGUAGES
            for where in self.items_dirs
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector):
        # The file itself is not resolved: a symlinked item file is collected, to be refused.
        folder = file_path.parent.resolve()
        if file_path.suffix == ".toml" and self.left_out(folder):
            return None
        if file_path.suffix == ".toml" and self.inside(folder):
            name = one_line(file_path.name)  # a file name is item text: shown escaped
            if name == file_path.name:
                return ItemFile.from_parent(parent, path=file_path)
            nodeid = f"{one_line(parent.nodeid)}/{name}" if parent.nodeid else name
            return ItemFile.from_parent(parent, path=file_path, name=name, nodeid=nodeid)
        return None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Progress lines name items by their ids, relative to the items directory.

        pytest writes a progress line's path as the item's node id joined to the rootdir, made
        relative to the invocation directory: ``../numbers/x[bm25]`` from a subdirectory, for
        items anywhere. Node ids here are relative to the items directory already, so the
        reporter's start path becomes the rootdir (after the header) and the line reads
        ``numbers/x[bm25]``. Side effect: ``-vv``'s ``<- file`` and folded skip locations are
        relative to the rootdir too.
        """
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None and hasattr(terminal, "startpath"):
            terminal.startpath = self.config.rootpath

    def close_runner(self) -> None:
        if self._runner:
            self._runner.close()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.close_runner()


class VerifySession(Session):
    """``--execretrieval-verify``: every snippet against its item's tests, and two gates."""

    def outcome_cache_dir(self) -> Path | None:
        return None  # verification re-executes everything

    def stale(self, run: PoolRun) -> list[StaleReason]:
        return run.loaded.stale if run.loaded else []

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.is_worker:
            self.receive()
        else:  # an xdist controller loads for its workers, which collect and verify
            self.load(stale_ok=True)
            if not self.config.option.collectonly:
                self.save_item_caches()

    def pytest_collect_directory(self, path: Path, parent: pytest.Collector):
        # each pool's folder is an items directory with its own gates
        folders = [where for run in self.pools.values() for where in run.pool.items_dirs]
        if any(path.resolve() == where.resolve() for where in folders):
            return ItemsDir.from_parent(parent, path=path)
        return None

    def item_nodes(self, parent: ItemFile, item: BenchmarkItem) -> Iterator[pytest.Item]:
        run = self.pool_of(parent.path)
        # A changed item's recorded distractors belong to its old version: not checked.
        stale = run.loaded is not None and item.id in run.loaded.changed
        cases = list(item_cases(item, () if stale else self.distractors(run, item.id)))
        codes = tuple(case.code for case in cases)
        for case in cases:
            node = VerifyItem.from_parent(
                parent,
                name=case.name,
                nodeid=f"{run.pool.prefix}{item.id}::{case.name}",
                case=case,
                codes=codes,
            )
            if run.pool.name:
                node.add_marker(run.pool.name)
            yield node

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        if isinstance(item, VerifyItem):  # its suite starts the next one's (VerifyItem.runtest)
            item.next_case = nextitem.case if isinstance(nextitem, VerifyItem) else None
            item.next_codes = nextitem.codes if isinstance(nextitem, VerifyItem) else ()

    def distractors(self, run: PoolRun, query_id: str) -> list[Snippet]:
        """The corpus distractors of one item of pool ``run`` (indexed once per process)."""
        if run.distractors is None:
            run.distractors = distractors_by_query(run.loaded.corpus if run.loaded else None)
        return run.distractors.get(query_id, [])


class BenchmarkSession(Session):
    """``--embedder NAME``: one query item per (query, embedder or pipeline), then the reports
    and the gate, whose decision is the exit status. The hooks translate pytest's events for
    the run state (:class:`.state.PoolStates`, in ``config.stash[STATE]``), which sends each
    to its language pool's :class:`.state.BenchmarkState`.

    Under a gate (a baseline or a minimum) a query's outcome is a measurement and the gate is
    the verdict: a query whose rank 1 fails is xfail (its failure text kept in its report), and
    each gate is one more test report, ``gate[<name>]``, passed or failed as decided, so that
    pytest's own junit, pytest-json-report and pytest-html show what the exit status says.
    Benchmark items are deterministic: pytest-rerunfailures is told not to re-run them, and the
    state counts a node id once whatever re-runs it.
    """

    def __init__(self, config: pytest.Config, settings: Settings):
        super().__init__(config, settings)
        config.stash[STATE] = PoolStates(
            settings, bool(config.option.collectonly), list(self.pools)
        )
        self._code: dict[str, str] | None = None

    @property
    def state(self) -> PoolStates:
        return self.config.stash[STATE]

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.is_worker:
            for name, handoff in self.receive().items():
                self.state.pools[name].runs = dict(handoff.runs)
                self.state.pools[name].baseline_failed = set(handoff.baseline_failed)
            return
        loaded = self.load(stale_ok=False)
        if self.state.collect_only:  # --co lists the items; nothing is ranked
            return
        loaded = self.prepare(loaded)
        for name, pool_loaded in loaded.items():  # a pool present is never vacuously passed
            if not pool_loaded.items:
                where = self.pools[name].pool.items_dir
                raise pytest.UsageError(f"no valid benchmark items in {where}")
        spent: Counter[str] = Counter()  # estimated tokens per hosted embedder, every pool
        try:  # every output, embedder and reranker is checked before any work starts
            for name, pool_loaded in loaded.items():
                state = self.state.pools[name]
                state.start(pool_loaded, self.runner, self.selected_ids(pool_loaded), spent)
                for embedder, fields in state.ranked.usage.items():
                    spent[embedder] += fields.get("estimated_tokens", 0)
        except SetupError as exc:
            raise pytest.UsageError(str(exc)) from None
        except ServiceFailure as exc:
            pytest.exit(f"service failure: {exc}", returncode=EXIT_SERVICE)
        self.save_item_caches()

    def prepare(self, loaded: dict[str, Loaded]) -> dict[str, Loaded]:
        """Each pool as the benchmark ranks it (:func:`.orchestration.prepare_pool`): the
        background sources beside the Python pool's snippets, the tests that decide."""
        s = self.settings
        prepared = {}
        try:
            for name, pool_loaded in loaded.items():
                background = s.background if name == "" else ()
                prepared[name] = prepare_pool(pool_loaded, background, s.tests)
                self.pools[name].loaded = prepared[name]
        except SetupError as exc:
            raise pytest.UsageError(str(exc)) from None
        self._index_items()
        return prepared

    def selected_ids(self, loaded: Loaded) -> list[str]:
        """The ids of the items under the paths given on the command line (all by default)."""
        roots = [Path(a.split("::")[0]).resolve() for a in self.config.args]
        return [
            item.id
            for item in loaded.items
            if any(_within(item.path.resolve(), root) for root in roots)
        ]

    def handoff(self, pool: str) -> Handoff:
        loaded, state = self.pools[pool].loaded, self.state.pools[pool]
        assert loaded is not None  # handed off after the controller loaded
        return Handoff(loaded, state.runs, frozenset(state.baseline_failed))

    @pytest.hookimpl(optionalhook=True)  # xdist: a worker's counts, back in its workeroutput
    def pytest_testnodedown(self, node, error) -> None:
        counts = getattr(node, "workeroutput", {}).get(WORKER_KEY, {})
        self.state.executed += counts.get("executed", 0)
        self.state.foreign += counts.get("foreign", 0)

    def item_nodes(self, parent: ItemFile, item: BenchmarkItem) -> Iterator[pytest.Item]:
        pool = self.pool_of(parent.path).pool
        state = self.state.pools[pool.name]
        for name in state.names:
            run = state.runs.get(name)
            result = run.results.get(item.id) if run else None
            if result is None and not state.collect_only:
                raise CorpusError(
                    f"{item.id} has no ranking: the corpus lacks its canonical; "
                    f"run `execretrieval build {item.path.parent.parent}`"
                )
            query = QueryItem.from_parent(
                parent,
                name=f"{pool.prefix}{item.id}[{name}]",
                nodeid=f"{pool.prefix}{item.id}[{name}]",
                item=item,
                embedder=name,
                result=result,
            )
            if pool.name:
                query.add_marker(pool.name)
            if self.rerunfailures:  # deterministic: a re-run would only count the query twice
                query.add_marker(pytest.mark.flaky(reruns=0))
            reason = xfail_reason(state, item.id, result)
            if reason:
                query.add_marker(
                    pytest.mark.xfail(reason=reason, raises=RankOneFailure, strict=False)
                )
            yield query

    @property
    def rerunfailures(self) -> bool:
        return self.config.pluginmanager.hasplugin("rerunfailures")

    def code_by_id(self) -> dict[str, str]:
        """Snippet code by id, of every pool (for failure reports; loaded once per process)."""
        if self._code is None:
            self._code = {}
            for run in self.pools.values():
                corpora = [run.loaded.corpus] if run.loaded and run.loaded.corpus else []
                corpora = corpora or [
                    read_corpus(where, where=corpus_dir(where, self.settings.corpus))
                    for where in run.pool.items_dirs
                ]
                for corpus in corpora:
                    self._code.update({s.snippet_id: s.code for s in corpus.snippets})
        return self._code

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        super().pytest_collection_finish(session)
        self.state.select(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)  # xdist: the controller learns the workers' selection
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        self.state.select(ids)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and not self.is_worker:  # it fails the gates of its pool
            path = self.config.rootpath / report.nodeid.split("::")[0]
            self.state.pools[self.pool_of(path).pool.name].collection_error(report.nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.is_worker:
            self.state.record(outcome_of(report))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session):
        """The decision becomes ``session.exitstatus`` before any other plugin's
        ``pytest_sessionfinish`` runs: a wrapper runs its part before the yield ahead of every
        plain implementation, and ``tryfirst`` puts it ahead of other wrappers. pytest's junit
        (``--junitxml``), pytest-json-report (``exitcode``) and pytest-html write their files in
        their plain implementations, so they see the decision and the gates' test reports."""
        self.close_runner()
        if self.is_worker:
            counts = {"executed": self.executed, "foreign": self.foreign}
            self.config.workeroutput[WORKER_KEY] = counts  # type: ignore[attr-defined]
        else:
            self.state.executed += self.executed
            self.state.foreign += self.foreign
            session.exitstatus = self.state.finish(session.exitstatus, stop_reasons(session))
            publish_gates(self.config, self.state.gate_records, self.items_dir)
        return (yield)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        """Pairwise comparisons in pytest's summary; the verdict comes last (unconfigure)."""
        from .reporting.comparison import compare_reports

        for name, state in self.state.pools.items():
            reports = state.final_reports
            if len(reports) > 1:
                terminalreporter.section(f"ExecRetrieval comparisons{' ' * bool(name)}{name}")
                terminalreporter.write_line(
                    escape(compare_reports(list(reports.values()), all_pairs=False))
                )

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """The last lines of the session, below pytest's own summary so no FAILED line buries
        them: each gate's decision with its reasons and the queries that flipped against the
        baseline, then the metrics table and the reports written (the per-query detail stays in
        ``-rf``, ``-rx`` under a gate, the junit XML and the report)."""
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if terminal is None or self.is_worker:
            return
        lines = self.state.closing_lines()
        if lines:
            terminal.write_sep("=", "ExecRetrieval")
        for line in lines:
            verdict = line.startswith(("gate [", "INCOMPLETE", "exit 1: "))
            bad = verdict and "]: PASS" not in line
            terminal.write_line(escape(line), bold=verdict, red=bad)


def xfail_reason(state: BenchmarkState, query_id: str, result: QueryResult | None) -> str | None:
    """Why a query item is xfail: the baseline fails it too (an xpass when the candidate now
    solves it), or, under a gate, its rank 1 fails (a measurement: the gate decides)."""
    if query_id in state.baseline_failed:
        return "the baseline fails this query too"
    if state.gated and result is not None and not result.passed:
        return (
            "rank 1 fails (a regression: the baseline passes it); the gate decides"
            if state.settings.baseline
            else "rank 1 fails; the gate's minimums decide"
        )
    return None


def outcome_of(report: pytest.TestReport) -> Outcome:
    """What the run state keeps of a test report (an xfail keeps its failure text)."""
    outcome: str = report.outcome
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    failed = report.failed or (outcome == "xfailed" and report.longrepr is not None)
    return Outcome(
        report.nodeid,
        report.when,
        outcome,
        report.duration,
        failure_message(report) if failed else "",
        tuple((k, v) for k, v in report.user_properties if k != "embedder"),
    )


def stop_reasons(session: pytest.Session) -> list[str]:
    """What pytest (or xdist's controller) said when it stopped the run early."""
    dsession = session.config.pluginmanager.get_plugin("dsession")
    said = [getattr(dsession, "shouldstop", None), session.shouldstop, session.shouldfail]
    return [x for x in said if isinstance(x, str) and x]


def publish_gates(config: pytest.Config, gates: dict[str, dict], items_dir: Path) -> None:
    """Each gate as the test report ``gate[<name>]`` of every plugin that records test reports
    (pytest's junit, pytest-json-report, pytest-html, ...), passed or failed as decided, and in
    the terminal's counts and short summary. The terminal reporter gets it in its statistics
    only: fed to its ``pytest_runtest_logreport`` at session end it would print a stray
    progress letter after the last progress line."""
    from .reporting.report import gate_text

    terminal = config.pluginmanager.get_plugin("terminalreporter")
    hook = config.pluginmanager.subset_hook_caller(
        "pytest_runtest_logreport", remove_plugins=[p for p in (terminal,) if p is not None]
    )
    where = Path(os.path.relpath(items_dir, config.rootpath)).as_posix()
    for name, gate in gates.items():
        nodeid = f"gate[{name}]"
        text = gate_text(name, gate)  # the decision, its reasons, the flips
        # a setup, a call and a teardown report, as a real test makes (pytest-html writes a
        # test once its teardown is reported)
        for when in ("setup", "call", "teardown"):
            failed = when == "call" and not gate["passed"]
            report = pytest.TestReport(
                nodeid,
                (where, None, nodeid),
                {"execretrieval": 1},
                "failed" if failed else "passed",
                text if failed else None,
                when,
                user_properties=[("decision", gate.get("decision", ""))],
            )
            hook(report=report)
            if terminal is not None and when == "call":
                category = config.hook.pytest_report_teststatus(report=report, config=config)[0]
                terminal.stats.setdefault(category, []).append(report)


def refuse_untrusted(items_dir: Path, config: pytest.Config) -> None:
    """A usage error, before any work, when collecting ``items_dir`` would make pytest import
    or read something from it (code, a ``conftest.py``, an ini file) or import a
    ``conftest.py``/``__init__.py`` from a folder between it and the folders the user
    configured (the rootdir, ``--confcutdir``). Everything in an items directory is untrusted."""

    def shown(paths: list[Path]) -> str:
        more = f" and {len(paths) - 10} more" if len(paths) > 10 else ""
        return ", ".join(one_line(str(p)) for p in paths[:10]) + more

    found = foreign_files(items_dir)
    if found:
        raise pytest.UsageError(
            f"the items directory {one_line(str(items_dir))} holds code or pytest/tox "
            f"configuration: {shown(found)}. An items directory holds item files and the "
            "generated corpus only (everything in it is untrusted, and pytest would import or "
            "read these): remove them"
        )
    confcutdir = config.known_args_namespace.confcutdir
    stops = [config.rootpath, *([config.invocation_params.dir / confcutdir] if confcutdir else [])]
    stops.append(Path(__file__).resolve().parent)  # the installed package's bundled items: ours
    above = conftests_above(items_dir, stops)
    if above:
        raise pytest.UsageError(
            f"{shown(above)} lie(s) between the items directory {one_line(str(items_dir))} and "
            f"the rootdir {config.rootpath}: pytest would import them while collecting the "
            "items. Move them to the rootdir, or name their folder with --confcutdir if they "
            "are yours"
        )


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
