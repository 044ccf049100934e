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
from .benchmark import BenchmarkRun, QueryResult
from .corpus import Corpus, CorpusError, Snippet, corpus_dir, read_corpus, stale_reasons
from .embedders import EmbedderError, EmbedderOptions, get_embedder
from .embedding_cache import stderr_progress
from .execution import SuiteRunner
from .items import Item, ItemError, defines, item_id, load_item, load_items
from .plugin import SESSION_PLUGIN, bundled_items_dir
from .report import TestRecord, build_report, metrics_table, write_reports
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
        self.runs: dict[str, BenchmarkRun] = {}
        self.records: dict[str, list[TestRecord]] = {name: [] for name in embedders}
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
        if self.verify:
            return
        if not items:
            raise pytest.UsageError(f"no valid benchmark items in {self.items_dir}")
        from .benchmark import run_benchmark
        from .corpus import corpus_sha256

        options = EmbedderOptions(
            batch_size=settings.setting(self.config, "batch-size"),
            trust_remote_code=settings.setting(self.config, "trust-remote-code"),
            cache_dir=str(self.cache_dir),
        )  # fmt: skip
        embedders = {}
        for name in self.embedders:  # every embedder is checked before any work starts
            try:
                embedders[name] = get_embedder(name, options)
                embedders[name].check_usable()
            except EmbedderError as exc:
                raise pytest.UsageError(f"--embedder {name}: {exc}") from None
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
        state = Path(self.cache_dir) / "runs" / f"session-{id(self)}-{time.time_ns()}.json"
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps({
            "runs": {n: r.to_json() for n, r in self.runs.items()},
            "baseline_failed": sorted(self.baseline_failed),
        }))  # fmt: skip
        self.state_file = state

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
        node.workerinput[WORKER_KEY] = str(getattr(self, "state_file", ""))

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
        return {name: build_report(name, self.runs[name], [r.query_id for r in records],
                                   elapsed, seed)
                for name, records in self.records.items() if records}  # fmt: skip

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._runner:
            self._runner.close()
        if self.is_worker or self.verify:
            return
        state = getattr(self, "state_file", None)
        if state:
            Path(state).unlink(missing_ok=True)
        self.final_reports = self.reports()
        if not self.final_reports:
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED  # never a vacuous pass
            return
        self.gates = self.gate(session)
        report_dir = settings.setting(self.config, "report-dir")
        if report_dir:
            write_reports(report_dir, self.final_reports, self.records, self.gates)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors += 1

    def gate(self, session: pytest.Session) -> dict[str, dict]:
        """With a baseline or a minimum exec@1, the exit status is the gate's decision."""
        min_exec1 = settings.setting(self.config, "min-exec1")
        if self.baseline is None and min_exec1 is None:
            return {}
        from .compare import ComparisonError, gate_decision

        alpha = settings.setting(self.config, "alpha")
        seed = settings.setting(self.config, "seed")
        gates = {}
        for name, report in self.final_reports.items():
            baseline = self.baseline
            if baseline is not None:  # a selected subset (-k/-m) is gated on the same queries
                ran = {q["query_id"] for q in report["per_query"]}
                baseline = {**baseline, "per_query": [q for q in baseline["per_query"]
                                                      if q["query_id"] in ran]}  # fmt: skip
            try:
                gates[name] = gate_decision(baseline, report, alpha, min_exec1, seed)
            except (ComparisonError, ValueError) as exc:
                gates[name] = {"passed": False, "reason": f"ERROR: {exc}"}
            report["gate"] = gates[name]
        passed = all(g["passed"] for g in gates.values()) and not self.collection_errors
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            session.exitstatus = pytest.ExitCode.OK if passed else pytest.ExitCode.TESTS_FAILED
        return gates

    def pytest_terminal_summary(self, terminalreporter) -> None:
        reports = getattr(self, "final_reports", None)
        if not reports:
            return
        terminalreporter.section("ExecRetrieval")
        terminalreporter.write_line(metrics_table(reports))
        if len(reports) > 1:
            from .compare import compare_reports

            terminalreporter.write_line("")
            terminalreporter.write_line(compare_reports(list(reports.values())))
        for name, decision in getattr(self, "gates", {}).items():
            terminalreporter.write_line(f"gate [{name}]: {decision['reason']}",
                                        bold=True, red=not decision["passed"])  # fmt: skip


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
        for name in self.state.embedders:
            run = self.state.runs.get(name)
            result = run.results.get(item.id) if run else None
            if result is None:
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

    def __init__(self, *args, item: Item, embedder: str, result: QueryResult, **kwargs):
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
            *((f"exec@{k}", int(any(h.passes for h in r.top[:k]))) for k in (1, 3, 5, 10)),
        ]  # fmt: skip
        if not r.passed:
            raise RankOneFailure(failure_text(self.item, r, session_state(self).code_by_id()))

    def reportinfo(self):
        return self.path, 0, f"{self.item.id}[{self.embedder}]"


def failure_text(item: Item, r: QueryResult, code: dict[str, str]) -> str:
    from .corpus import unified_diff

    top1 = r.top[0]
    what = top1.kind + (f" ({top1.operator})" if top1.operator else "")
    if top1.query_id != item.id:
        what += f" of another query, {top1.query_id}"
    if not defines(code.get(top1.snippet_id, ""), item.entry_point):
        failing = [f"    it does not define {item.entry_point}(), so it fails every test "
                   "(not executed)"]  # fmt: skip
    else:
        failing = [f"    {item.tests[i]}  ->  {o}" for i, o in enumerate(r.rank1_outcomes)
                   if o != "pass" and i < len(item.tests)]  # fmt: skip
    diff = unified_diff(item.canonical, code.get(top1.snippet_id, ""))
    diff_lines = diff.splitlines()
    if len(diff_lines) > 40:
        diff_lines = diff_lines[:40] + [f"... ({len(diff.splitlines()) - 40} more lines)"]
    return "\n".join([
        f"rank 1 is a wrong implementation for: {item.query}",
        f"  rank 1:    {what}, score {top1.score:.4f}",
        f"  canonical: rank {r.canonical_rank}, score {r.canonical_score:.4f}",
        f"  rank 1 fails {sum(o != 'pass' for o in r.rank1_outcomes)} of {len(item.tests)} "
        "tests:", *failing,
        "  diff canonical -> rank 1:", *("    " + line for line in diff_lines),
    ])  # fmt: skip
