"""The state and nodes of a benchmark or verification session (loaded only in those modes).

With ``--embedder`` or ``--execretrieval-verify`` the session collects the items directory only.
The controller (or the only process, without xdist) does the shared work once in
``pytest_sessionstart``: it ranks the pool for every query per embedder and hands the results to
xdist workers as a file named in ``workerinput``. Items only look their result up. Everything
written to reports is assembled in the controller from the test reports it receives.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from . import settings
from .benchmark import TOP_K, BenchmarkRun, QueryResult
from .corpus import Corpus, CorpusError, Snippet, corpus_dir, read_corpus, stale_reasons
from .embedders import EmbedderError, EmbedderOptions, get_embedder
from .embedders.hosted import report_fields as hosted_report_fields
from .embedding_cache import stderr_progress
from .execution import SuiteRunner
from .failures import failure_text
from .items import Item, ItemError, item_id, load_item, load_items
from .metrics import row_metrics
from .plugin import SESSION_PLUGIN, bundled_items_dir
from .report import TestRecord, build_report, final_summary, report_row, write_reports
from .rerank import Reranker, RerankerContext, RerankerError, get_reranker
from .rerank.pipeline import lift, pipeline_name, rerank_run
from .verify import Case, check, distractors_by_query, item_cases, name_collisions, shared_names

WORKER_KEY = "execretrieval_runs"


class ExecRetrievalSession:
    """Run state of one benchmark or verification session (one per process)."""

    def __init__(self, config: pytest.Config, embedders: list[str], verify: bool):
        self.config = config
        self.embedders = embedders
        self.verify = verify
        self.items_dir = (settings.setting(config, "items") or bundled_items_dir()).resolve()
        if not self.items_dir.is_dir():
            raise pytest.UsageError(f"items directory {self.items_dir} does not exist")
        self.cache_dir = settings.setting(config, "cache-dir")
        self.stack = settings.setting(config, "stack")
        self.corpus_dir = corpus_dir(self.items_dir, self.stack)
        self.is_worker = hasattr(config, "workerinput")
        try:
            self.gate_settings = None if verify else settings.gate_settings(config)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.final_reports: dict[str, dict] = {}
        self.gates: dict[str, dict] = {}
        self.written: list[Path] = []
        self.encode_s = 0.0  # embedding and ranking, all embedders
        self.state_file: Path | None = None  # the runs handed to xdist workers
        self.runs: dict[str, BenchmarkRun] = {}
        self.usage: dict[str, dict] = {}  # hosted embedders: report fields of their requests
        # Pipelines (--execretrieval-rerank): every embedder's top k reordered by each reranker.
        try:
            self.rerankers: tuple[str, ...] = () if verify else settings.setting(config, "rerank")
            self.rerank_k: int = settings.setting(config, "rerank-k")
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        if self.rerankers and not 1 <= self.rerank_k <= TOP_K:
            raise pytest.UsageError(f"--execretrieval-rerank-k: {self.rerank_k} is not in 1.."
                                    f"{TOP_K} (the first stage lists its top {TOP_K})")  # fmt: skip
        if len(set(self.rerankers)) != len(self.rerankers):
            raise pytest.UsageError(f"a reranker is named twice: {list(self.rerankers)}")
        self.first_stage: dict[str, str] = {}  # pipeline name -> its embedder
        self.names: list[str] = []  # embedders, each followed by its pipelines
        for name in embedders:
            self.names.append(name)
            for reranker in self.rerankers:
                self.first_stage[pipeline_name(name, reranker)] = name
                self.names.append(pipeline_name(name, reranker))
        self.rerank_info: dict[str, dict] = {}
        self.rerank_cost: dict[str, dict] = {}
        self.records: dict[str, list[TestRecord]] = {name: [] for name in self.names}
        self.corpus: Corpus | None = None
        self.stale: list[str] = []
        self.changed: set[str] = set()
        self.baseline: dict | None = None
        self.baseline_failed: set[str] = set()
        self.collection_errors = 0
        self._code: dict[str, str] | None = None
        self._distractors: dict[str, list[Snippet]] | None = None
        self.items: dict[Path, Item] = {}  # loaded once per process, by resolved path
        self.started = time.perf_counter()
        self._runner: SuiteRunner | None = None
        # Collect the benchmark only: the given paths inside the items dir, else all of it.
        inside = [a for a in config.args if _within(Path(a).resolve(), self.items_dir)]
        config.args[:] = inside or [str(self.items_dir)]
        config.option.continue_on_collection_errors = True
        self.collect_only = bool(config.option.collectonly)
        # Item ids are `<domain>/<stem>...`, relative to the items directory: pytest must not
        # re-base them on the invocation directory (`../numbers/x[bm25]` for items elsewhere).
        config.cwd_relative_nodeid = lambda nodeid: nodeid
        for domain in sorted(p.name for p in self.items_dir.iterdir() if p.is_dir()):
            config.addinivalue_line("markers", f"{domain}: benchmark items of domain {domain}")

    # -- shared work -------------------------------------------------------------------------
    @property
    def runner(self) -> SuiteRunner:
        if self._runner is None:
            cache = None if self.verify else self.cache_dir
            self._runner = SuiteRunner(settings.limits(self.config), cache, jobs=1,
                                       isolation=settings.isolation(self.config))  # fmt: skip
        return self._runner

    def load(self) -> list[Item]:
        """Good items and the corpus; malformed files are left to collection to report.

        A benchmark refuses a stale corpus. Verification goes on: it reports the staleness as
        the failing ``corpus-freshness`` gate and checks the distractors of unchanged items only.
        """
        items, problems = load_items(self.items_dir)
        self.items = {item.path.resolve(): item for item in items}
        bad = {item_id(p.path) for p in problems}
        from .build import engine

        self.stale = [r for r in stale_reasons(self.items_dir, engine(self.stack), self.corpus_dir)
                      if not any(f"item {b} " in r for b in bad)]  # fmt: skip
        self.changed = {
            item.id for item in items if any(f"item {item.id} " in r for r in self.stale)
        }
        built = (self.corpus_dir / "manifest.json").exists()
        if self.stale and not self.verify:
            raise pytest.UsageError(
                f"the corpus in {self.items_dir} is stale; run "
                f"`execretrieval build {self.items_dir}`:\n  " + "\n  ".join(self.stale)
            )
        try:
            self.corpus = read_corpus(self.items_dir, where=self.corpus_dir) if built else None
        except (CorpusError, OSError, ValueError) as exc:
            if not self.verify:
                raise pytest.UsageError(str(exc)) from None
            self.stale.append(str(exc))
            self.corpus = None
        return items

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.is_worker:
            self.load_worker_state()
            return
        if self.verify and self.config.pluginmanager.has_plugin("dsession"):
            return  # an xdist controller: the workers collect and verify
        items = self.load()
        if self.verify or self.collect_only:  # --co lists the items; nothing is ranked
            return
        if not items:
            raise pytest.UsageError(f"no valid benchmark items in {self.items_dir}")
        from .benchmark import run_benchmark
        from .corpus import corpus_sha256

        options = EmbedderOptions(
            batch_size=settings.setting(self.config, "batch-size"),
            trust_remote_code=settings.setting(self.config, "trust-remote-code"),
            cache_dir=str(self.cache_dir),
            extra=hosted_options(self.config),
        )  # fmt: skip
        embedders = {}
        for name in self.embedders:  # every embedder is checked before any work starts
            try:
                embedders[name] = get_embedder(name, options)
                embedders[name].check_usable()
            except EmbedderError as exc:
                raise pytest.UsageError(f"--embedder {name}: {exc}") from None
        context = RerankerContext(self.runner, Path(self.cache_dir), tuple(self.embedders),
                                  self.runs)  # fmt: skip
        rerankers = {}
        for name in self.rerankers:  # so is every reranker
            try:
                rerankers[name] = get_reranker(name, context)
            except RerankerError as exc:
                raise pytest.UsageError(f"--execretrieval-rerank {name}: {exc}") from None
        sha = corpus_sha256(self.corpus_dir)
        self.baseline = self.load_baseline(sha)
        for name, embedder in embedders.items():
            try:
                self.runs[name] = run_benchmark(
                    items, self.corpus, sha, embedder, self.runner, self.cache_dir,
                    stderr_progress, settings.setting(self.config, "code-similarity"),
                )  # fmt: skip
            except EmbedderError as exc:
                raise pytest.UsageError(f"--embedder {name}: {exc}") from None
            finally:
                embedder.close()
            self.encode_s += self.runs[name].encode_s
            self.usage[name] = hosted_report_fields(embedder)
        self.run_pipelines(items, rerankers)
        state = Path(self.cache_dir) / "runs" / f"session-{id(self)}-{time.time_ns()}.json"
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps({
            "runs": {n: r.to_json() for n, r in self.runs.items()},
            "baseline_failed": sorted(self.baseline_failed),
        }))  # fmt: skip
        self.state_file = state

    def run_pipelines(self, items: list[Item], rerankers: dict[str, Reranker]) -> None:
        """Every (embedder, reranker) pipeline, after all first stages are ranked (fusion
        needs them all)."""
        snippets = {s.snippet_id: s for s in self.corpus.snippets}
        try:
            for pipeline, first in self.first_stage.items():
                spelled = pipeline[len(first) + 1 :]
                done = rerank_run(self.runs[first], first, rerankers[spelled], self.rerank_k,
                                  items, snippets, self.runner, spelled)  # fmt: skip
                self.runs[pipeline] = done.run
                self.rerank_info[pipeline] = done.info
                self.rerank_cost[pipeline] = done.cost
        except RerankerError as exc:
            raise pytest.UsageError(f"--execretrieval-rerank: {exc}") from None
        finally:
            for reranker in rerankers.values():
                reranker.close()

    def load_baseline(self, sha: str) -> dict | None:
        """The baseline report, which must be for this very corpus."""
        path = settings.setting(self.config, "baseline")
        if path is None:
            return None
        from .compare import ReportError, load_report

        try:
            baseline = load_report(path)
        except ReportError as exc:
            raise pytest.UsageError(f"--execretrieval-baseline: {exc}") from None
        if baseline["corpus"]["sha256"] != sha:
            raise pytest.UsageError(
                f"--execretrieval-baseline {path} was made on corpus "
                f"{baseline['corpus']['sha256'][:16]}, this run's corpus is {sha[:16]}: "
                "a gate compares two models on the same corpus; re-run the baseline model"
            )
        self.baseline_failed = {q["query_id"] for q in baseline["per_query"] if not q["passed"]}
        return baseline

    @pytest.hookimpl(optionalhook=True)  # an xdist hook: pytest-xdist may not be installed
    def pytest_configure_node(self, node) -> None:  # xdist controller only
        node.workerinput[WORKER_KEY] = str(self.state_file or "")

    def load_worker_state(self) -> None:
        path = self.config.workerinput.get(WORKER_KEY)
        if path:
            data = json.loads(Path(path).read_text())
            self.runs = {name: BenchmarkRun.from_json(run) for name, run in data["runs"].items()}
            self.baseline_failed = set(data["baseline_failed"])
        if self.verify:
            self.load()

    def distractors(self, query_id: str) -> list[Snippet]:
        """The corpus distractors of one item (indexed once per process)."""
        if self._distractors is None:
            self._distractors = distractors_by_query(self.corpus)
        return self._distractors.get(query_id, [])

    def code_by_id(self) -> dict[str, str]:
        """Snippet code by id (for failure reports; loaded once per process)."""
        if self._code is None:
            corpus = self.corpus or read_corpus(self.items_dir, where=self.corpus_dir)
            self._code = {s.snippet_id: s.code for s in corpus.snippets}
        return self._code

    # -- collection --------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector):
        if file_path.suffix == ".toml" and _within(file_path.resolve(), self.items_dir):
            return ItemFile.from_parent(parent, path=file_path)
        return None

    def pytest_collect_directory(self, path: Path, parent: pytest.Collector):
        if self.verify and path.resolve() == self.items_dir:
            return ItemsDir.from_parent(parent, path=path)
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

    # -- reporting ---------------------------------------------------------------------------
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
            self.records[name].append(TestRecord(
                report.nodeid, query_id, outcome, report.duration, message,
                [(k, v) for k, v in report.user_properties if k not in ("embedder",)],
            ))  # fmt: skip

    def reports(self) -> dict[str, dict]:
        elapsed = time.perf_counter() - self.started
        seed = settings.setting(self.config, "seed")
        reports = {name: {**build_report(name, self.runs[name], [r.query_id for r in records],
                                         elapsed, seed), **self.usage.get(name, {})}
                   for name, records in self.records.items() if records}  # fmt: skip
        for name, report in reports.items():
            if name in self.first_stage:
                self.add_lift(name, report, reports.get(self.first_stage[name]), seed)
        return reports

    def add_lift(self, name: str, report: dict, first: dict | None, seed: int) -> None:
        """A pipeline report's ``first_stage``, ``rerank`` (k, fallbacks, reranker figures) and
        ``lift`` (over the first stage's report of this session)."""
        from .compare import ComparisonError

        report["first_stage"] = self.first_stage[name]
        report["rerank"] = self.rerank_info[name]
        try:
            if first is None:
                raise ComparisonError(f"the first stage {self.first_stage[name]} did not run")
            report["lift"] = lift(first, report, seed)
        except ComparisonError as exc:  # e.g. -k selected different queries for the two
            report["lift"] = {"error": str(exc)}

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._runner:
            self._runner.close()
        if self.is_worker or self.verify:
            return
        if self.state_file:
            self.state_file.unlink(missing_ok=True)
        if self.collect_only:
            return
        self.final_reports = self.reports()
        if not self.final_reports:
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED  # never a vacuous pass
            return
        self.gates = self.gate(session)
        report_dir = settings.setting(self.config, "report-dir")
        if report_dir:
            self.written = write_reports(report_dir, self.final_reports, self.records, self.gates)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors += 1

    def gate(self, session: pytest.Session) -> dict[str, dict]:
        """With a baseline or a minimum, the exit status is the gate's decision."""
        g = self.gate_settings
        if self.baseline is None and not g.minimums:
            return {}
        from .compare import ComparisonError, gate_decision

        seed = settings.setting(self.config, "seed")
        gates = {}
        for name, report in self.final_reports.items():
            baseline = self.baseline
            if baseline is not None:  # a selected subset (-k/-m) is gated on the same queries
                ran = {q["query_id"] for q in report["per_query"]}
                baseline = {**baseline, "per_query": [q for q in baseline["per_query"]
                                                      if q["query_id"] in ran]}  # fmt: skip
            try:
                gates[name] = gate_decision(baseline, report, g.alpha, seed=seed,
                                            metrics=g.metrics, margin=g.margin,
                                            minimums=g.minimums)  # fmt: skip
            except (ComparisonError, ValueError) as exc:
                gates[name] = {"passed": False, "reason": f"ERROR: {exc}", "explanation": []}
            report["gate"] = gates[name]
        passed = all(g["passed"] for g in gates.values()) and not self.collection_errors
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.OK if passed else pytest.ExitCode.TESTS_FAILED
        return gates

    def pytest_terminal_summary(self, terminalreporter) -> None:
        """Pairwise comparisons in pytest's summary; the verdict comes last (unconfigure)."""
        if len(self.final_reports) > 1:
            from .compare import compare_reports

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
                for name, c in self.rerank_cost.items() if name in self.final_reports]  # fmt: skip
        lines = final_summary(self.final_reports, self.gates, self.written, self.encode_s)
        at = next(
            (i for i, x in enumerate(lines) if x.startswith(("gate [", "reports: "))), len(lines)
        )  # the cost goes above the gates: the verdict stays last
        lines[at:at] = cost
        for line in lines:
            bad = line.startswith("gate [") and "]: PASS" not in line
            terminal.write_line(line, bold=line.startswith("gate ["), red=bad)


def hosted_options(config: pytest.Config) -> dict:
    """``EmbedderOptions.extra`` for the hosted embedders: the cost guard's token budget."""
    max_tokens = settings.setting(config, "max-tokens")
    return {} if max_tokens is None else {"max_tokens": max_tokens}


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def session_state(node: pytest.Node) -> ExecRetrievalSession:
    return node.config.pluginmanager.get_plugin(SESSION_PLUGIN)


class BenchmarkFailure(Exception):
    """A benchmark or verification item failed; its message is the whole report."""


class VerificationFailure(BenchmarkFailure):
    pass


class RankOneFailure(BenchmarkFailure):
    pass


class ReportingItem(pytest.Item):
    """An item whose own failures read as their message alone, like a good assertion."""

    failure_prefix = ""

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, BenchmarkFailure):
            return self.failure_prefix + str(excinfo.value)
        return super().repr_failure(excinfo)


class ItemsDir(pytest.Dir):
    """The items directory in a verification run: its files, then the name-collision gate."""

    def collect(self):
        yield from super().collect()
        yield CorpusFreshnessItem.from_parent(self, name="corpus-freshness")
        yield NameCollisionItem.from_parent(self, name="name-collision")


class ItemFile(pytest.File):
    @property
    def state(self) -> ExecRetrievalSession:
        return session_state(self)

    def collect(self):
        item = self.state.items.get(self.path.resolve()) or load_item(self.path)
        if self.state.verify:
            # A changed item's recorded distractors belong to its old version: not checked.
            stale = item.id in self.state.changed
            for case in item_cases(item, () if stale else self.state.distractors(item.id)):
                yield VerifyItem.from_parent(self, name=case.name, nodeid=f"{item.id}::{case.name}",
                                             case=case)  # fmt: skip
            return
        for name in self.state.names:
            run = self.state.runs.get(name)
            result = run.results.get(item.id) if run else None
            if result is None and not self.state.collect_only:
                raise CorpusError(f"{item.id} has no ranking: the corpus lacks its canonical; "
                                  f"run `execretrieval build {self.state.items_dir}`")  # fmt: skip
            query = QueryItem.from_parent(
                self, name=f"{item.id}[{name}]", nodeid=f"{item.id}[{name}]", item=item,
                embedder=name, result=result,
            )  # fmt: skip
            if item.id in self.state.baseline_failed:  # show only the candidate's regressions
                query.add_marker(pytest.mark.xfail(reason="the baseline fails this query too"))
            yield query

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, (ItemError, CorpusError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class VerifyItem(ReportingItem):
    def __init__(self, *args, case: Case, **kwargs):
        super().__init__(*args, **kwargs)
        self.case = case
        self.state = session_state(self)
        self.add_marker(case.item.domain)

    def runtest(self) -> None:
        c = self.case
        problem = check(c, self.state.runner.run(c.code, c.item.setup, c.item.tests))
        if problem:
            raise VerificationFailure(problem)

    def reportinfo(self):
        return self.path, 0, f"{self.case.item.id}::{self.case.name}"


class NameCollisionItem(ReportingItem):
    failure_prefix = "name collision gate:\n"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.state = session_state(self)

    def runtest(self) -> None:
        items = list(self.state.items.values())
        found = name_collisions(items, self.state.runner)
        if found:
            raise VerificationFailure("\n".join(found))
        self.user_properties.append(("shared_names", json.dumps(shared_names(items))))

    def reportinfo(self):
        return self.path, 0, "name-collision gate"


class CorpusFreshnessItem(ReportingItem):
    """Fails when the committed corpus does not match the item files (or was never built)."""

    failure_prefix = "corpus freshness gate: "

    def runtest(self) -> None:
        state = session_state(self)
        if not (state.corpus_dir / "manifest.json").exists():
            raise VerificationFailure(f"no corpus: run `execretrieval build {state.items_dir}`")
        if state.stale:
            raise VerificationFailure(
                f"the corpus is stale; run `execretrieval build {state.items_dir}`:\n  "
                + "\n  ".join(state.stale)
            )

    def reportinfo(self):
        return self.path, 0, "corpus-freshness gate"


class QueryItem(ReportingItem):
    """One query for one embedder: passes iff the rank-1 snippet passes the query's tests."""

    def __init__(self, *args, item: Item, embedder: str, result: QueryResult | None, **kwargs):
        super().__init__(*args, **kwargs)
        self.item, self.embedder, self.result = item, embedder, result
        self.add_marker("execretrieval")
        self.add_marker(item.domain)

    def runtest(self) -> None:
        r = self.result
        top1 = r.top[0]
        self.user_properties += [
            ("embedder", self.embedder), ("query_id", r.query_id),
            ("canonical_rank", r.canonical_rank), ("rank1_kind", top1.kind),
            ("rank1_operator", top1.operator or ""), ("rank1_score", f"{top1.score:.6f}"),
            ("canonical_score", f"{r.canonical_score:.6f}"),
            ("rank1_tie", r.rank1_tie.get("size", 1)),
            *((m, f"{v:.6g}") for m, v in row_metrics(report_row(r)).expected.items()
              if m.startswith("exec@")),
        ]  # fmt: skip
        if not r.passed:
            state = session_state(self)  # its runner: the session's limits, isolation, cache
            raise RankOneFailure(failure_text(self.item, r, state.code_by_id(), state.runner.run))

    def reportinfo(self):
        return self.path, 0, f"{self.item.id}[{self.embedder}]"
