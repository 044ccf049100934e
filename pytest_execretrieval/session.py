"""The two session plugins, one per mode, registered by ``plugin.py`` only when a run asks for
one: :class:`BenchmarkSession` (``--embedder``) and :class:`VerifySession`
(``--execretrieval-verify``).

Either collects the items directory only, with ids relative to it. The hooks are glue: the work
is done by :mod:`.orchestration`. In a benchmark the controller (or the only process, without
xdist) ranks the pool once in ``pytest_sessionstart`` and hands the runs to xdist workers as a
file named in ``workerinput``; items only look their result up, and everything written to
reports is assembled in the controller from the test reports it receives.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .corpus.items import BenchmarkItem, bundled_items_dir
from .corpus.store import (
    Corpus,
    CorpusError,
    Snippet,
    StaleReason,
    corpus_dir,
    corpus_sha256,
    read_corpus,
)
from .corpus.verify import distractors_by_query, item_cases
from .embedders import EmbedderOptions
from .execution.runner import SuiteRunner
from .nodes import ItemFile, ItemsDir, QueryItem, VerifyItem
from .orchestration import (
    Loaded,
    Ranked,
    SetupError,
    build_reports,
    failed_queries,
    gate_reports,
    identifier_view,
    load,
    load_baseline,
    open_embedders,
    open_rerankers,
    rank,
    read_state,
    refuse_training_items,
    write_state,
)
from .ranking.benchmark import BenchmarkRun
from .ranking.rerank import RerankerContext
from .ranking.rerank.pipeline import pipeline_name
from .reporting.report import RecordedTest, final_summary, write_reports
from .settings import Settings

WORKER_KEY = "execretrieval_runs"


class Session:
    """What both modes share: the items directory, its corpus, the sandbox runner, and the
    collection of item files only, with ids relative to the items directory."""

    def __init__(self, config: pytest.Config, settings: Settings):
        self.config = config
        self.settings = settings
        self.items_dir = (settings.items_dir or bundled_items_dir()).resolve()
        if not self.items_dir.is_dir():
            raise pytest.UsageError(f"items directory {self.items_dir} does not exist")
        self.corpus_dir = corpus_dir(self.items_dir, settings.stack)
        self.is_worker = hasattr(config, "workerinput")
        self.loaded: Loaded | None = None
        # the good items by resolved path, loaded once per process
        self.items: dict[Path, BenchmarkItem] = {}
        self._runner: SuiteRunner | None = None
        # Collect the benchmark only: the given paths inside the items dir, else all of it.
        inside = [a for a in config.args if _within(Path(a).resolve(), self.items_dir)]
        config.args[:] = inside or [str(self.items_dir)]
        config.option.continue_on_collection_errors = True
        # Item ids are `<domain>/<stem>...`, relative to the items directory: pytest must not
        # re-base them on the invocation directory (`../numbers/x[bm25]` for items elsewhere).
        config.cwd_relative_nodeid = lambda nodeid: nodeid
        for domain in sorted(p.name for p in self.items_dir.iterdir() if p.is_dir()):
            config.addinivalue_line("markers", f"{domain}: benchmark items of domain {domain}")

    @property
    def runner(self) -> SuiteRunner:
        if self._runner is None:
            self._runner = SuiteRunner(self.settings.limits, self.outcome_cache_dir(), jobs=1,
                                       isolation=self.settings.isolation)  # fmt: skip
        return self._runner

    def outcome_cache_dir(self) -> Path | None:
        return self.settings.cache_dir

    def load(self, stale_ok: bool) -> Loaded:
        try:
            self.loaded = load(self.items_dir, self.settings.stack, stale_ok=stale_ok)
        except SetupError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.items = {item.path.resolve(): item for item in self.loaded.items}
        return self.loaded

    @property
    def corpus(self) -> Corpus | None:
        return self.loaded.corpus if self.loaded else None

    def item_nodes(self, parent: ItemFile, item: BenchmarkItem) -> Iterator[pytest.Item]:
        """The pytest items of one benchmark item in this mode."""
        raise NotImplementedError

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector):
        if file_path.suffix == ".toml" and _within(file_path.resolve(), self.items_dir):
            return ItemFile.from_parent(parent, path=file_path)
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

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._runner:
            self._runner.close()


class VerifySession(Session):
    """``--execretrieval-verify``: every snippet against its item's tests, and two gates."""

    def __init__(self, config: pytest.Config, settings: Settings):
        super().__init__(config, settings)
        self._distractors: dict[str, list[Snippet]] | None = None

    def outcome_cache_dir(self) -> Path | None:
        return None  # verification re-executes everything

    @property
    def stale(self) -> list[StaleReason]:
        return self.loaded.stale if self.loaded else []

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if not self.is_worker and self.config.pluginmanager.has_plugin("dsession"):
            return  # an xdist controller: the workers collect and verify
        self.load(stale_ok=True)

    def pytest_collect_directory(self, path: Path, parent: pytest.Collector):
        if path.resolve() == self.items_dir:
            return ItemsDir.from_parent(parent, path=path)
        return None

    def item_nodes(self, parent: ItemFile, item: BenchmarkItem) -> Iterator[pytest.Item]:
        # A changed item's recorded distractors belong to its old version: not checked.
        stale = self.loaded is not None and item.id in self.loaded.changed
        for case in item_cases(item, () if stale else self.distractors(item.id)):
            yield VerifyItem.from_parent(parent, name=case.name, nodeid=f"{item.id}::{case.name}",
                                         case=case)  # fmt: skip

    def distractors(self, query_id: str) -> list[Snippet]:
        """The corpus distractors of one item (indexed once per process)."""
        if self._distractors is None:
            self._distractors = distractors_by_query(self.corpus)
        return self._distractors.get(query_id, [])


class BenchmarkSession(Session):
    """``--embedder NAME``: one query item per (query, embedder or pipeline), then the reports
    and the gate, whose decision is the exit status."""

    def __init__(self, config: pytest.Config, settings: Settings):
        super().__init__(config, settings)
        self.collect_only = bool(config.option.collectonly)
        self.pipelines: dict[str, tuple[str, str]] = {}  # name -> (embedder, reranker)
        self.names: list[str] = []  # embedders, each followed by its pipelines
        for name in settings.embedders:
            self.names.append(name)
            for reranker in settings.rerank:
                self.pipelines[pipeline_name(name, reranker)] = (name, reranker)
                self.names.append(pipeline_name(name, reranker))
        self.runs: dict[str, BenchmarkRun] = {}
        self.ranked = Ranked({}, 0.0, {}, {})
        self.baseline: dict | None = None
        self.baseline_failed: set[str] = set()
        self.state_file: Path | None = None  # the runs handed to xdist workers
        self.records: dict[str, list[RecordedTest]] = {name: [] for name in self.names}
        self.collection_errors = 0
        self.final_reports: dict[str, dict] = {}
        self.gates: dict[str, dict] = {}
        self.written: list[Path] = []
        self._code: dict[str, str] | None = None
        self.started = time.perf_counter()

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.is_worker:
            path = self.config.workerinput.get(WORKER_KEY)
            if path:
                self.runs, self.baseline_failed = read_state(Path(path))
            return
        loaded = self.load(stale_ok=False)
        if self.collect_only:  # --co lists the items; nothing is ranked
            return
        if not loaded.items:
            raise pytest.UsageError(f"no valid benchmark items in {self.items_dir}")
        s = self.settings
        extra = {} if s.max_tokens is None else {"max_tokens": s.max_tokens}  # the cost guard
        options = EmbedderOptions(batch_size=s.batch_size, trust_remote_code=s.trust_remote_code,
                                  cache_dir=str(s.cache_dir), extra=extra)  # fmt: skip
        context = RerankerContext(self.runner, Path(s.cache_dir), s.embedders, self.runs)
        try:  # every embedder and reranker is checked before any work starts
            embedders = open_embedders(s.embedders, options)
            if not s.allow_training_items:
                refuse_training_items(embedders, self.selected_ids())
            embedders = identifier_view(embedders, loaded, s.identifiers)
            rerankers = open_rerankers(s.rerank, context)
            if s.baseline is not None:
                self.baseline = load_baseline(s.baseline, corpus_sha256(loaded.corpus_dir))
                self.baseline_failed = failed_queries(self.baseline)
            self.ranked = rank(loaded, embedders, rerankers, self.pipelines, s.rerank_k,
                               self.runner, s.cache_dir, s.code_similarity, self.runs)  # fmt: skip
        except SetupError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.state_file = s.cache_dir / "runs" / f"session-{id(self)}-{time.time_ns()}.json"
        write_state(self.state_file, self.runs, self.baseline_failed)

    def selected_ids(self) -> list[str]:
        """The ids of the items under the paths given on the command line (all by default)."""
        roots = [Path(a.split("::")[0]).resolve() for a in self.config.args]
        return [item.id for item in self.loaded.items
                if any(_within(item.path.resolve(), root) for root in roots)]  # fmt: skip

    @pytest.hookimpl(optionalhook=True)  # an xdist hook: pytest-xdist may not be installed
    def pytest_configure_node(self, node) -> None:  # xdist controller only
        node.workerinput[WORKER_KEY] = str(self.state_file or "")

    def item_nodes(self, parent: ItemFile, item: BenchmarkItem) -> Iterator[pytest.Item]:
        for name in self.names:
            run = self.runs.get(name)
            result = run.results.get(item.id) if run else None
            if result is None and not self.collect_only:
                raise CorpusError(f"{item.id} has no ranking: the corpus lacks its canonical; "
                                  f"run `execretrieval build {self.items_dir}`")  # fmt: skip
            query = QueryItem.from_parent(parent, name=f"{item.id}[{name}]",
                                          nodeid=f"{item.id}[{name}]", item=item, embedder=name,
                                          result=result)  # fmt: skip
            if item.id in self.baseline_failed:  # show only the candidate's regressions
                query.add_marker(pytest.mark.xfail(reason="the baseline fails this query too"))
            yield query

    def code_by_id(self) -> dict[str, str]:
        """Snippet code by id (for failure reports; loaded once per process)."""
        if self._code is None:
            corpus = self.corpus or read_corpus(self.items_dir, where=self.corpus_dir)
            self._code = {s.snippet_id: s.code for s in corpus.snippets}
        return self._code

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors += 1

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        name, query_id = props.get("embedder"), props.get("query_id")
        if self.is_worker or name not in self.records:
            return
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            outcome = report.outcome if report.when == "call" else "error"
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "xpassed"
            message = str(report.longrepr) if report.failed else ""
            self.records[name].append(RecordedTest(
                report.nodeid, query_id, outcome, report.duration, message,
                [(k, v) for k, v in report.user_properties if k not in ("embedder",)],
            ))  # fmt: skip

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        super().pytest_sessionfinish(session)
        if self.is_worker:
            return
        if self.state_file:
            self.state_file.unlink(missing_ok=True)
        if self.collect_only:
            return
        s = self.settings
        ran = {name: [r.query_id for r in records] for name, records in self.records.items()}
        self.final_reports = build_reports(
            self.runs, ran, time.perf_counter() - self.started, s.seed, self.ranked.usage,
            {name: first for name, (first, _) in self.pipelines.items()}, self.ranked.rerank_info,
        )  # fmt: skip
        if not self.final_reports:
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED  # never a vacuous pass
            return
        # With a baseline or a minimum, the exit status is the gate's decision.
        self.gates = gate_reports(self.final_reports, self.baseline, s.gate, s.seed)
        if self.gates and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            passed = all(g["passed"] for g in self.gates.values()) and not self.collection_errors
            session.exitstatus = pytest.ExitCode.OK if passed else pytest.ExitCode.TESTS_FAILED
        if s.report_dir:
            self.written = write_reports(s.report_dir, self.final_reports, self.records,
                                         self.gates)  # fmt: skip

    def pytest_terminal_summary(self, terminalreporter) -> None:
        """Pairwise comparisons in pytest's summary; the verdict comes last (unconfigure)."""
        if len(self.final_reports) > 1:
            from .scoring.compare import compare_reports

            terminalreporter.section("ExecRetrieval comparisons")
            reports = list(self.final_reports.values())
            terminalreporter.write_line(compare_reports(reports, all_pairs=False))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """The last lines of the session: the metrics table, each gate's decision with its
        reasons and the reports written, below pytest's own summary so no FAILED line buries
        them (the per-query detail stays in ``-rf``, the junit XML and the report)."""
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if terminal is None or not self.final_reports or self.is_worker:
            return
        terminal.write_sep("=", "ExecRetrieval")
        cost = [f"rerank [{name}]: {c['ms_per_query']:.1f} ms/query ({c['seconds']:.1f} s), first "
                f"stage {c['first_stage_ms_per_query']:.1f} ms/query"
                for name, c in self.ranked.rerank_cost.items()
                if name in self.final_reports]  # fmt: skip
        lines = final_summary(self.final_reports, self.gates, self.written, self.ranked.encode_s)
        at = next(
            (i for i, x in enumerate(lines) if x.startswith(("gate [", "reports: "))), len(lines)
        )  # the cost goes above the gates: the verdict stays last
        lines[at:at] = cost
        for line in lines:
            bad = line.startswith("gate [") and "]: PASS" not in line
            terminal.write_line(line, bold=line.startswith("gate ["), red=bad)


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
