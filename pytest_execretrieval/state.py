"""The run state of one benchmark session, without pytest: :class:`PoolStates`, one
:class:`BenchmarkState` per language pool of the items directory (:mod:`.corpus.pools`).

The session plugin (:class:`..session.BenchmarkSession`) keeps a :class:`PoolStates` in
``config.stash``, which sends each event to the pool it concerns; a pool's state takes these
calls, the shape of syrupy's session object:

* :meth:`~BenchmarkState.start`: check every output path and report name, open every embedder
  and reranker, load the baseline and rank the pool, before any item runs;
* :meth:`~BenchmarkState.select` / :meth:`~BenchmarkState.collection_error`: which benchmark
  items were selected (after ``-k``, ``-m``, ``--lf``, ``--deselect``) and which item files
  could not be collected;
* :meth:`~BenchmarkState.record`: one test report; reports are kept per node id and the last
  one wins, so a plugin that re-runs an item (pytest-rerunfailures) cannot count a query twice;
* :meth:`~BenchmarkState.finish`: the reports and the gates; returns the exit status.

A gate decides only on a complete run: when fewer selected items completed than were selected
(``-x``, ``--maxfail``, a session timeout, a crashed worker, an interrupt), every gate is
INCOMPLETE and the status is :data:`.orchestration.EXIT_INCOMPLETE` (an interrupt, an internal
error or a usage error keep pytest's own status: they are not 0 either).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .corpus.store import Snippet
from .embedders import EmbedderOptions
from .execution.outcome_cache import foreign_line
from .execution.runner import SuiteRunner
from .orchestration import (
    EXIT_INCOMPLETE,
    EXIT_UNDERPOWERED,
    Loaded,
    Ranked,
    build_reports,
    check_outputs,
    cut_short,
    failed_queries,
    gate_reports,
    identifier_view,
    open_embedders,
    open_rerankers,
    open_served,
    rank,
    read_baseline,
    refresh_baseline,
    refuse_lexical_indexes,
    refuse_training_items,
    vector_embedders,
)
from .ranking.benchmark import BenchmarkRun
from .ranking.pipelines import Pipeline, expand
from .ranking.rerank import RerankerContext
from .reporting.report import RecordedTest, final_summary, ungated_exit_line, write_reports
from .scoring.cross_language import CrossLanguage
from .scoring.gate import GateDecision, Incomplete
from .settings import Settings

# pytest's exit statuses that a gate's decision replaces (the others already say "not a pass")
OK, TESTS_FAILED, INTERRUPTED, NO_TESTS_COLLECTED = 0, 1, 2, 5


def gates_status(gates: Iterable[GateDecision]) -> int:
    """Decided gates' status: a FAIL beats UNDERPOWERED, which beats a PASS."""
    decisions = {g.decision for g in gates}
    if decisions - {"PASS", "UNDERPOWERED"}:
        return TESTS_FAILED
    return EXIT_UNDERPOWERED if "UNDERPOWERED" in decisions else OK


@dataclass(frozen=True)
class Outcome:
    """One test report as the state needs it (builtins only)."""

    nodeid: str
    when: str  # "setup" | "call" | "teardown" | another word for a crashed worker's report
    outcome: str  # "passed" | "failed" | "skipped" | "xfailed" | "xpassed" | "rerun"
    duration: float = 0.0
    message: str = ""
    properties: tuple = ()


class BenchmarkState:
    """Everything a benchmark session knows of one language pool (:mod:`.corpus.pools`), from
    the ranking to the pool's exit status. ``pool``: the pool's name, ``""`` for the items
    directory's own; another pool's node ids start with ``<pool>/``, its reports are written
    to the report directory's folder ``<pool>/`` and its baseline is the baseline report's
    namesake there (``DIR/NAME.json`` -> ``DIR/<pool>/NAME.json``)."""

    def __init__(self, settings: Settings, collect_only: bool = False, pool: str = ""):
        self.settings = settings
        self.collect_only = collect_only
        self.pool = pool
        self.prefix = f"{pool}/" if pool else ""
        self.no_baseline: str | None = None  # why this pool has no baseline though one was asked
        # by name: every embedder, each followed by its pipelines (:func:`plan`); before the
        # embedders are open every embedder counts as dense and served by every backend
        self.pipelines: dict[str, Pipeline] = {}
        self.names: list[str] = []
        self.plan()
        self.runs: dict[str, BenchmarkRun] = {}
        self.ranked = Ranked({}, 0.0, {}, {})
        self.snippets: Sequence[Snippet] = ()  # the pool's, whose controls the reports carry
        self.baseline: dict | None = None
        self.baseline_failed: set[str] = set()
        self.refreshed: str | None = None  # how the baseline was re-ranked on this pool
        self.executed = 0  # suites run in a sandbox, by every process of the session
        self.foreign = 0  # cached outcomes ignored: signed with another key
        self.selected: dict[str, tuple[str, str]] = {}  # node id -> (name, query id)
        self.outcomes: dict[str, Outcome] = {}  # node id -> its final report
        self.collection_errors: dict[str, None] = {}  # node ids, in order, once each
        self.crashed: dict[str, None] = {}
        self.final_reports: dict[str, dict] = {}
        self.gates: dict[str, GateDecision] = {}
        self.incomplete: Incomplete | None = None
        self.written: list[Path] = []
        self.status: int | None = None  # the exit status finish() decided
        self.started = time.perf_counter()

    def plan(self, dense: Sequence[str] | None = None, served: Sequence[str] | None = None) -> None:
        """The pipelines of the session (:func:`.ranking.pipelines.expand`): stored codes for
        the ``dense`` embedders, backends for the ``served`` ones (default: every embedder)."""
        s = self.settings
        pipelines = expand(
            s.embedders, s.backend, s.quantize, s.index, s.rerank, served=served, dense=dense
        )
        self.pipelines = {p.name: p for p in pipelines}
        self.names = list(self.pipelines)

    @property
    def report_dir(self) -> Path | None:
        """Where this pool's reports are written."""
        s = self.settings
        return None if s.report_dir is None else Path(s.report_dir) / self.pool

    @property
    def baseline_path(self) -> Path | None:
        """This pool's baseline report (``None`` without ``--execretrieval-baseline``)."""
        s = self.settings
        return None if s.baseline is None else Path(s.baseline).parent / self.pool / s.baseline.name

    def label(self, name: str) -> str:
        """How the closing lines and the gate's test report name a model of this pool."""
        return self.prefix + name

    @property
    def gated(self) -> bool:
        """Whether the exit status is a gate's decision (a baseline, or a minimum)."""
        return self.settings.baseline is not None or bool(self.settings.gate.minimums)

    def start(
        self,
        loaded: Loaded,
        runner: SuiteRunner,
        selected: Sequence[str],
        spent: Mapping[str, int] | None = None,
    ) -> None:
        """Everything before the first item, every check before any work; a problem the user
        must fix raises :class:`.orchestration.SetupError`. ``selected``: the ids of the items
        under the paths given (a fine-tuned model refuses its own training items); ``spent``:
        per embedder, the estimated tokens the session's earlier pools send (the cost guard's
        budget is the whole run's)."""
        s = self.settings
        check_outputs(self.report_dir, s.cache_dir, self.names)
        self.snippets = loaded.corpus.snippets if loaded.corpus else ()

        def options(name: str) -> EmbedderOptions:
            extra = {} if s.max_tokens is None else {"max_tokens": s.max_tokens}
            return EmbedderOptions(
                batch_size=s.batch_size,
                trust_remote_code=s.trust_remote_code,
                cache_dir=str(s.cache_dir),
                extra=extra | {"spent_tokens": (spent or {}).get(name, 0)},
            )

        context = RerankerContext(runner, Path(s.cache_dir), s.embedders, self.runs)
        embedders = {
            name: opened
            for name in s.embedders
            for opened in open_embedders([name], options(name)).values()
        }
        if not s.allow_training_items:
            refuse_training_items(embedders, selected)
        if s.index:
            refuse_lexical_indexes(embedders)
        dense = vector_embedders(embedders, bool(s.quantize))
        served = open_served(embedders, s.backend)
        self.plan(dense, sorted({self.pipelines[n].embedder for n in served}))
        embedders = identifier_view(embedders, loaded, s.identifiers)
        served = identifier_view(served, loaded, s.identifiers)
        rerankers = open_rerankers(s.rerank, context)
        if not s.allow_training_items:
            refuse_training_items(rerankers, selected, "--execretrieval-rerank")
        path = self.baseline_path
        if path is not None and self.pool and not path.is_file():
            # no error here: the run may select none of this pool's items (-m, -k); a gate
            # that decides on them fails with this reason instead
            self.no_baseline = (
                f"no baseline for the {self.pool} pool: a baseline is per language, and "
                f"{path} (the namesake of --execretrieval-baseline={s.baseline} in its folder "
                f"{self.pool}/) does not exist; write it with --execretrieval-report-dir"
            )
        elif path is not None:
            self.baseline = read_baseline(path, self.pool or None)
            if self.baseline["corpus"]["sha256"] != loaded.pool_sha256:  # an item added, say
                name = str(self.baseline["embedder"].get("name", ""))
                refreshed = refresh_baseline(
                    path,
                    self.baseline,
                    loaded,
                    runner,
                    s.cache_dir,
                    options(name),
                    s.seed,
                    self.pool or None,
                )
                self.baseline, self.refreshed = refreshed.report, refreshed.line
            self.baseline_failed = failed_queries(self.baseline)
        self.ranked = rank(
            loaded,
            embedders,
            rerankers,
            list(self.pipelines.values()),
            s.rerank_k,
            runner,
            s.cache_dir,
            s.code_similarity,
            self.runs,
            served,
        )

    def query_of(self, nodeid: str) -> tuple[str, str] | None:
        """``(name, query id)`` of a benchmark item's node id ``<prefix><query id>[<name>]``
        in this pool (``None`` for any other node)."""
        if not nodeid.startswith(self.prefix):
            return None
        for name in sorted(self.names, key=len, reverse=True):  # "a+b" before "b"
            suffix = f"[{name}]"
            if nodeid.endswith(suffix):
                query_id = nodeid[len(self.prefix) : -len(suffix)]
                run = self.runs.get(name)
                return (name, query_id) if run and query_id in run.results else None
        return None

    def select(self, nodeids: Iterable[str]) -> None:
        """The items pytest will run (after deselection); called once per collecting process."""
        for nodeid in nodeids:
            query = self.query_of(nodeid)
            if query:
                self.selected[nodeid] = query

    def collection_error(self, nodeid: str) -> None:
        self.collection_errors[nodeid] = None

    def record(self, report: Outcome) -> None:
        """Keep an item's final report: the call, or a setup that did not pass. A re-run's
        earlier attempts (``rerun``) are not final; the last report of a node id wins."""
        if self.query_of(report.nodeid) is None:
            return
        if report.when not in ("setup", "call", "teardown"):  # xdist: the worker died in it
            self.crashed[report.nodeid] = None
        elif report.outcome != "rerun" and (
            report.when == "call" or (report.when == "setup" and report.outcome != "passed")
        ):
            self.outcomes[report.nodeid] = report

    def completed(self, name: str) -> list[RecordedTest]:
        """The recorded items of one model, in node id order."""
        out = []
        for nodeid in sorted(self.outcomes):
            owner, query_id = self.query_of(nodeid) or ("", "")  # recorded: a query's node
            if owner == name:
                o = self.outcomes[nodeid]
                outcome = "error" if o.when == "setup" and o.outcome == "failed" else o.outcome
                out.append(
                    RecordedTest(
                        nodeid, query_id, outcome, o.duration, o.message, list(o.properties)
                    )
                )
        return out

    def cut_short(self, status: int, stopped: Sequence[str]) -> Incomplete | None:
        """Why the run is incomplete, or ``None`` when every selected item completed."""
        selected = set(self.selected)
        done = selected & set(self.outcomes)
        if done == selected:
            return None
        why = [x for x in stopped if x][:1]  # what stopped it first (xdist's controller, pytest)
        why += [f"a worker crashed running {n}" for n in self.crashed]
        if status == INTERRUPTED and not why:
            why.append("interrupted")
        return Incomplete(
            len(selected),
            len(done),
            tuple(why or [f"the session ended early (exit status {status})"]),
        )

    def short_models(self, records: dict[str, list[RecordedTest]]) -> dict[str, Incomplete]:
        """The models with a report whose selected items did not all complete."""
        short: dict[str, Incomplete] = {}
        incomplete = self.incomplete
        for name in self.final_reports if incomplete else ():
            selected = sum(owner == name for owner, _ in self.selected.values())
            if incomplete and len(records[name]) < selected:
                short[name] = Incomplete(selected, len(records[name]), incomplete.why)
        return short

    def finish(self, status: int, stopped: Sequence[str] = ()) -> int:
        """Assemble the reports and the gates, write the reports; returns the exit status.

        ``status``: the status pytest would exit with; ``stopped``: what pytest said when it
        stopped early (``session.shouldstop``/``shouldfail``, ``-x``, a timeout)."""
        if self.collect_only:
            return status
        s = self.settings
        records = {name: self.completed(name) for name in self.names}
        ran = {name: [r.query_id for r in rs] for name, rs in records.items()}
        self.final_reports = build_reports(
            self.runs,
            ran,
            time.perf_counter() - self.started,
            s.seed,
            self.ranked.usage,
            self.pipelines,
            self.ranked,
            self.pool or None,
            pool=self.snippets,
        )
        self.incomplete = self.cut_short(status, stopped)
        short = self.short_models(records)
        complete = {n: r for n, r in self.final_reports.items() if n not in short}
        gates = gate_reports(
            complete,
            self.baseline,
            s.gate,
            s.seed,
            list(self.collection_errors),
            self.no_baseline,
        )
        gates |= cut_short({n: self.final_reports[n] for n in short}, s.gate, short, self.gated)
        self.gates = {n: gates[n] for n in self.final_reports if n in gates}
        if self.report_dir and self.final_reports:
            self.written = write_reports(
                self.report_dir, self.final_reports, records, self.gate_records, self.prefix
            )
        self.status = self.exit_status(status)
        return self.status

    def exit_status(self, status: int) -> int:
        if status not in (OK, TESTS_FAILED):
            return status  # interrupted, internal or usage error, nothing collected
        if self.incomplete:
            return EXIT_INCOMPLETE
        if not self.final_reports:
            return NO_TESTS_COLLECTED if status == OK else status  # never a vacuous pass
        if self.gates:
            return gates_status(self.gates.values())
        return status

    @property
    def gate_records(self) -> dict[str, dict]:
        """Each gate's record (the report's ``gate``)."""
        return {name: self.final_reports[name]["gate"] for name in self.gates}

    def closing_lines(self, executed: bool = True, exit_line: bool = True) -> list[str]:
        """The last lines of the session: each gate's decision with its reasons and the queries
        that flipped against the baseline, the metrics table, the cost of every reranker, then
        the reports written (``executed``: with the line of the suites the session executed;
        ``exit_line``: with the line saying why an ungated run exits 1)."""
        if not self.final_reports:
            return [self.incomplete_line(self.incomplete)] if self.incomplete else []
        cost = [
            f"rerank [{name}]: {c['ms_per_query']:.1f} ms/query ({c['seconds']:.1f} s), first "
            f"stage {c['first_stage_ms_per_query']:.1f} ms/query"
            for name, c in self.ranked.rerank_cost.items()
            if name in self.final_reports
        ] + [
            f"index [{name}]: {c['source']} in {c['seconds']['index']:.2f} s; search "
            f"{1000 * c['seconds']['search'] / max(1, c['n_queries']):.2f} ms/query, exact "
            f"re-scoring {1000 * c['seconds']['rescore'] / max(1, c['n_queries']):.2f} ms/query"
            for name, c in self.ranked.index_cost.items()
            if name in self.final_reports and c["seconds"]
        ]
        gates = {self.label(n): g for n, g in self.gate_records.items()}
        lines = final_summary(self.final_reports, gates, self.written, self.ranked.encode_s)
        # the cost goes below the metrics: the verdict and the flips come first
        at = next((i for i, x in enumerate(lines) if x.startswith("reports: ")), len(lines))
        sandbox = [self.executed_line(), *filter(None, [foreign_line(self.foreign)])]
        lines[at:at] = [*filter(None, [self.refreshed]), *cost, *(sandbox if executed else [])]
        if self.incomplete:
            return lines + [self.incomplete_line(self.incomplete)]
        last = self.exit_line() if exit_line else None
        return lines + ([last] if last else [])

    def exit_line(self, others: Sequence[BenchmarkState] = ()) -> str | None:
        """Why an ungated run exits 1, over this pool and ``others``
        (:func:`.reporting.report.ungated_exit_line`)."""
        records: dict[str, list[RecordedTest]] = {}
        gates: dict[str, dict] = {}
        written: list[Path] = []
        for state in (self, *others):
            records |= {state.label(n): state.completed(n) for n in state.names}
            gates |= {state.label(n): g for n, g in state.gate_records.items()}
            written += state.written
        return ungated_exit_line(records, gates, written)

    def executed_line(self) -> str:
        """How many suites the session ran in a sandbox (the controller's and every worker's):
        0 in a warm run, where every outcome and every value a failure message shows is read
        from the corpus and the outcome cache."""
        n = self.executed
        return (
            f"sandbox: {n} suite{'s' * (n != 1)} executed (the other outcomes and values from "
            "the corpus and the outcome cache)"
        )

    def incomplete_line(self, i: Incomplete) -> str:
        return (
            f"INCOMPLETE: {i.completed} of {i.selected} selected benchmark items ran "
            f"({'; '.join(i.why)}); exit status {self.status}"
        )


class PoolStates:
    """The run state of a benchmark session over every language pool of its items directory
    (:mod:`.corpus.pools`): one :class:`BenchmarkState` per pool, the events sent to the pool
    whose node ids they name, and what spans the pools: the exit status and the paired
    cross-language analysis (:mod:`.scoring.cross_language`) of each embedder that ran in two
    pools, for each pair.

    The exit status: pytest's when it is neither 0 nor 1; :data:`.orchestration.EXIT_INCOMPLETE`
    when any pool's run was cut short; the status ``5`` of no tests when no pool ran a query;
    else 1 when any pool that ran queries says 1 (a gate of one language fails: the closing
    lines name which), else 0. A pool none of whose items were selected takes no part."""

    def __init__(
        self, settings: Settings, collect_only: bool = False, pools: Sequence[str] = ("",)
    ):
        self.settings = settings
        self.collect_only = collect_only
        self.pools = {name: BenchmarkState(settings, collect_only, name) for name in pools}
        self.executed = 0  # suites run in a sandbox, by every process of the session
        self.foreign = 0  # cached outcomes ignored: signed with another key
        # per embedder and pair of pools ("bm25 (python vs go)"): the analysis, or why none
        self.cross: dict[str, CrossLanguage] = {}
        self.cross_errors: dict[str, str] = {}
        self.cross_written: list[Path] = []
        self.status: int | None = None

    @property
    def root(self) -> BenchmarkState:
        """The items directory's own pool."""
        return self.pools[""]

    @property
    def names(self) -> list[str]:
        return self.root.names

    def of(self, nodeid: str) -> BenchmarkState:
        """The pool a node id belongs to (the directory's own for one of no other pool)."""
        for name, state in self.pools.items():
            if name and nodeid.startswith(state.prefix):
                return state
        return self.root

    def select(self, nodeids: Iterable[str]) -> None:
        nodeids = list(nodeids)
        for state in self.pools.values():
            state.select(nodeids)

    def record(self, report: Outcome) -> None:
        self.of(report.nodeid).record(report)

    def finish(self, status: int, stopped: Sequence[str] = ()) -> int:
        """Every pool's reports and gates (see :meth:`BenchmarkState.finish`), the
        cross-language analyses, then the session's exit status (see the class docstring)."""
        if self.collect_only:
            return status
        for state in self.pools.values():
            state.finish(status, stopped)
        self.cross_analyses()
        self.status = self.exit_status(status)
        return self.status

    def cross_analyses(self) -> None:
        """The paired analysis of each embedder or pipeline with a report in two pools, for each
        pair of pools (the directory's own first), written beside the reports
        (``cross-language.json``, ``cross-language.md``)."""
        from .reporting.cross_language_text import write_cross_language
        from .scoring.compare import ComparisonError
        from .scoring.cross_language import cross_language

        pools = ["", *sorted(p for p in self.pools if p)]  # the directory's own pool first
        for i, pool_a in enumerate(pools):
            for pool_b in pools[i + 1 :]:
                a, b = self.pools[pool_a], self.pools[pool_b]
                for name, report in b.final_reports.items():
                    first = a.final_reports.get(name)
                    if first is None:
                        continue
                    key = f"{name} ({pool_a or 'python'} vs {pool_b})"
                    try:
                        self.cross[key] = cross_language(first, report, self.settings.seed)
                    except ComparisonError as exc:  # e.g. -k selected no twins
                        self.cross_errors[key] = str(exc)
        if self.settings.report_dir and self.cross:
            self.cross_written = write_cross_language(self.settings.report_dir, self.cross)

    def exit_status(self, status: int) -> int:
        if status not in (OK, TESTS_FAILED):
            return status
        if any(state.incomplete for state in self.pools.values()):
            return EXIT_INCOMPLETE
        ran = [state for state in self.pools.values() if state.final_reports]
        if not ran:
            return NO_TESTS_COLLECTED if status == OK else status  # never a vacuous pass
        statuses = {int(state.status or OK) for state in ran}
        # a FAIL in one pool beats another's UNDERPOWERED (the larger number)
        return TESTS_FAILED if TESTS_FAILED in statuses else max(statuses)

    @property
    def gate_records(self) -> dict[str, dict]:
        """Every pool's gate records, by the name its gate's test report has
        (``gate[javascript/bm25]`` for another pool's)."""
        return {
            state.label(name): gate
            for state in self.pools.values()
            for name, gate in state.gate_records.items()
        }

    def closing_lines(self) -> list[str]:
        """The directory's own pool's closing lines, then each other pool's under a line naming
        it, the cross-language analyses, and which languages' gates failed."""
        from .reporting.cross_language_text import cross_language_lines

        self.root.executed, self.root.foreign = self.executed, self.foreign
        others = [state for pool, state in self.pools.items() if pool]
        # every pool's verdict first, then each pool's block (its verdict, flips, metrics)
        verdicts = [
            f"verdict [{state.label(name)}]: {record['reason']}"
            for state in self.pools.values()
            for name, record in state.gate_records.items()
        ]
        lines = (verdicts if others else []) + self.root.closing_lines(exit_line=not others)
        for state in others:
            more = state.closing_lines(executed=False, exit_line=False)
            if more:
                lines += [f"{state.pool} pool:", *more]
        for c in self.cross.values():
            lines += cross_language_lines(c)
        lines += [f"cross-language [{n}]: {why}" for n, why in self.cross_errors.items()]
        if self.cross_written:
            lines.append("cross-language: " + ", ".join(map(str, self.cross_written)))
        by_status: dict[int, list[str]] = {}
        for pool, state in self.pools.items():
            if state.gates:
                by_status.setdefault(gates_status(state.gates.values()), []).append(
                    pool or "python"
                )
        failed = by_status.get(TESTS_FAILED) or by_status.get(EXIT_UNDERPOWERED)
        if failed and others:
            how = "fails" if TESTS_FAILED in by_status else "cannot decide (UNDERPOWERED)"
            status = TESTS_FAILED if TESTS_FAILED in by_status else EXIT_UNDERPOWERED
            lines.append(f"exit {status}: the gate {how} for {', '.join(failed)}")
        elif others and not any(state.incomplete for state in self.pools.values()):
            last = self.root.exit_line(others)
            lines += [last] if last else []
        return lines
