"""What a benchmark or verification session does, as plain functions the pytest hooks call
(``session.py``): load the items and the corpus, open every embedder and reranker before any
work, rank the pool per embedder, rerank, load the baseline, hand the runs to xdist workers,
assemble the reports and gate them. Nothing here imports pytest; a problem the user must fix
before the run starts raises :class:`SetupError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .corpus.items import BenchmarkItem, item_id, load_items
from .corpus.store import (
    Corpus,
    CorpusError,
    StaleReason,
    corpus_dir,
    corpus_sha256,
    read_corpus,
    stale_reasons,
)
from .embedders import Embedder, EmbedderError, EmbedderOptions, get_embedder
from .embedders.cache import stderr_progress
from .embedders.hosted import report_fields as hosted_report_fields
from .execution.runner import SuiteRunner
from .ranking.benchmark import BenchmarkRun, run_benchmark
from .ranking.rerank import Reranker, RerankerContext, RerankerError, get_reranker
from .ranking.rerank.pipeline import lift, rerank_run
from .reporting.report import build_report
from .safe_write import write_atomic
from .settings import GateSettings

if TYPE_CHECKING:
    from .scoring.gate import GateDecision, Incomplete

EXIT_INCOMPLETE = 6  # a benchmark run cut short: fewer selected items completed than selected


class SetupError(Exception):
    """The run cannot start: a stale corpus, an unusable embedder or reranker, a bad baseline."""


@dataclass(frozen=True)
class Loaded:
    """The good items of an items directory and its corpus (``None`` when never built)."""

    items: list[BenchmarkItem]
    corpus: Corpus | None
    corpus_dir: Path  # where the corpus files are (items_dir, or its stack-K/ or families/)
    stale: list[StaleReason]  # why the corpus does not match the item files; [] when fresh
    changed: frozenset[str]  # ids of the items whose files changed since the corpus was built


def load(items_dir: Path, stack: int, *, stale_ok: bool, families: bool = False) -> Loaded:
    """Good items and the corpus (``families``: the families corpus); malformed item files are
    left to collection to report.

    A benchmark (``stale_ok=False``) refuses a stale or unreadable corpus. Verification goes on:
    it reports the staleness as a failing gate and checks the distractors of unchanged items only.
    """
    from .corpus.build import engine

    items, problems = load_items(items_dir)
    bad = {item_id(p.path) for p in problems}
    where = corpus_dir(items_dir, stack, families)
    # A malformed item file is collection's error to report, not a reason to call the corpus stale.
    current = engine(stack, families)
    stale = [r for r in stale_reasons(items_dir, current, where) if r.item_id not in bad]
    changed = frozenset(r.item_id for r in stale if r.item_id is not None)
    if stale and not stale_ok:
        flag = " --families" if families else f" --stack {stack}" if stack > 1 else ""
        raise SetupError(f"the corpus in {items_dir} is stale; run `execretrieval build "
                         f"{items_dir}{flag}`:\n  " + "\n  ".join(map(str, stale)))  # fmt: skip
    corpus = None
    if (where / "manifest.json").exists():
        try:
            corpus = read_corpus(items_dir, where=where)
        except (CorpusError, OSError, ValueError) as exc:
            if not stale_ok:
                raise SetupError(str(exc)) from None
            stale.append(StaleReason("corpus-unreadable", str(exc)))
    return Loaded(items, corpus, where, stale, changed)


def open_embedders(names: Sequence[str], options: EmbedderOptions) -> dict[str, Embedder]:
    """Every embedder, each checked usable before any work starts."""
    embedders = {}
    for name in names:
        try:
            embedders[name] = get_embedder(name, options)
            embedders[name].check_usable()
        except EmbedderError as exc:
            raise SetupError(f"--embedder {name}: {exc}") from None
    return embedders


def refuse_training_items(embedders: Mapping[str, Embedder], item_ids: Sequence[str]) -> None:
    """:class:`SetupError` when a fine-tuned model would be scored on items it was trained on
    (its card's split, recorded in its invocation): a score on seen items is no measurement."""
    from .training.card import trained_on

    for name, embedder in embedders.items():
        seen = trained_on(embedder.invocation(), item_ids)
        if seen:
            split = embedder.invocation()["training"]["split"]
            held = ", ".join(split.get("held_out_domains", ())) or "its held-out items"
            raise SetupError(
                f"--embedder {name} was trained on {len(seen)} of the {len(item_ids)} selected "
                f"items (split {split['name']}; e.g. {', '.join(seen[:3])}): select held-out "
                f"items by path (held out: {held}), or pass "
                "--execretrieval-allow-training-items to score them anyway"
            )


def identifier_view(
    embedders: Mapping[str, Embedder], loaded: Loaded, view: str
) -> dict[str, Embedder]:
    """Each embedder seeing the snippets in ``view``: ``original``, or ``neutral`` (renamed
    identifiers, :mod:`.ranking.neutral`; execution still uses the recorded outcomes)."""
    if view == "original":
        return dict(embedders)
    from .ranking.neutral import neutral_view

    entry_points = {item.id: item.entry_point for item in loaded.items}
    snippets = [*loaded.corpus.snippets, *loaded.corpus.alternatives]
    return {name: neutral_view(e, snippets, entry_points) for name, e in embedders.items()}


def open_rerankers(names: Sequence[str], context: RerankerContext) -> dict[str, Reranker]:
    rerankers = {}
    for name in names:
        try:
            rerankers[name] = get_reranker(name, context)
        except RerankerError as exc:
            raise SetupError(f"--execretrieval-rerank {name}: {exc}") from None
    return rerankers


@dataclass
class Ranked:
    """What ranking produced besides the runs: hosted request figures per embedder, the encoding
    time, and per pipeline the report's ``rerank`` section and its wall-clock cost."""

    usage: dict[str, dict]
    encode_s: float
    rerank_info: dict[str, dict]
    rerank_cost: dict[str, dict]


def rank(
    loaded: Loaded, embedders: Mapping[str, Embedder], rerankers: Mapping[str, Reranker],
    pipelines: Mapping[str, tuple[str, str]], rerank_k: int, runner: SuiteRunner,
    cache_dir: Path, code_similarity: bool, runs: MutableMapping[str, BenchmarkRun],
) -> Ranked:  # fmt: skip
    """Rank the pool for every query with each embedder, then every pipeline (``pipelines``:
    name -> (embedder, reranker); fusion needs all first stages first). ``runs`` is filled as
    the work goes (the reranker context reads it); every embedder and reranker is closed."""
    sha = corpus_sha256(loaded.corpus_dir)
    ranked = Ranked({}, 0.0, {}, {})
    pending = dict(embedders)  # closed as each is done, the rest on the way out
    try:
        for name, embedder in embedders.items():
            del pending[name]
            try:
                runs[name] = run_benchmark(loaded.items, loaded.corpus, sha, embedder, runner,
                                           cache_dir, stderr_progress, code_similarity)  # fmt: skip
            except EmbedderError as exc:
                raise SetupError(f"--embedder {name}: {exc}") from None
            finally:
                embedder.close()
            ranked.encode_s += runs[name].encode_s
            ranked.usage[name] = hosted_report_fields(embedder)
        snippets = {s.snippet_id: s for s in loaded.corpus.snippets}
        for pipeline, (first, reranker) in pipelines.items():
            done = rerank_run(runs[first], first, rerankers[reranker], rerank_k, loaded.items,
                              snippets, runner, reranker)  # fmt: skip
            runs[pipeline] = done.run
            ranked.rerank_info[pipeline] = done.info
            ranked.rerank_cost[pipeline] = done.cost
    except RerankerError as exc:
        raise SetupError(f"--execretrieval-rerank: {exc}") from None
    finally:
        for embedder in pending.values():
            embedder.close()
        for r in rerankers.values():
            r.close()
    return ranked


def load_baseline(path: Path, sha: str) -> dict:
    """The baseline report, which must be for this very corpus."""
    from .scoring.compare import ReportError, load_report

    try:
        baseline = load_report(path)
    except ReportError as exc:
        raise SetupError(f"--execretrieval-baseline: {exc}") from None
    if "incomplete" in baseline:
        done = baseline["incomplete"]
        raise SetupError(f"--execretrieval-baseline {path} is the report of a run cut short "
                         f"({done['completed']} of {done['selected']} selected queries ran): "
                         "re-run the baseline model to completion")  # fmt: skip
    if baseline["corpus"]["sha256"] != sha:
        raise SetupError(
            f"--execretrieval-baseline {path} was made on corpus "
            f"{baseline['corpus']['sha256'][:16]}, this run's corpus is {sha[:16]}: "
            "a gate compares two models on the same corpus; re-run the baseline model"
        )
    return baseline


def failed_queries(report: dict) -> set[str]:
    return {q["query_id"] for q in report["per_query"] if not q["passed"]}


def write_state(path: Path, runs: Mapping[str, BenchmarkRun], baseline_failed: set[str]) -> None:
    """The runs (and the queries the baseline fails) for xdist workers, which only look up."""
    write_atomic(path, json.dumps({
        "runs": {n: r.to_json() for n, r in runs.items()},
        "baseline_failed": sorted(baseline_failed),
    }))  # fmt: skip


def read_state(path: Path) -> tuple[dict[str, BenchmarkRun], set[str]]:
    data = json.loads(path.read_text())
    runs = {name: BenchmarkRun.from_json(run) for name, run in data["runs"].items()}
    return runs, set(data["baseline_failed"])


def build_reports(
    runs: Mapping[str, BenchmarkRun], ran: Mapping[str, Sequence[str]], elapsed: float,
    seed: int, usage: Mapping[str, dict], first_stage: Mapping[str, str],
    rerank_info: Mapping[str, dict],
) -> dict[str, dict]:  # fmt: skip
    """One report per embedder or pipeline that ran queries (``ran``: name -> query ids, in run
    order); a pipeline's report has its ``first_stage``, ``rerank`` and ``lift`` over the first
    stage's report of this session."""
    from .scoring.compare import ComparisonError

    reports = {name: {**build_report(name, runs[name], ids, elapsed, seed), **usage.get(name, {})}
               for name, ids in ran.items() if ids}  # fmt: skip
    for name, report in reports.items():
        if name not in first_stage:
            continue
        first = reports.get(first_stage[name])
        report["first_stage"] = first_stage[name]
        report["rerank"] = rerank_info[name]
        try:
            if first is None:
                raise ComparisonError(f"the first stage {first_stage[name]} did not run")
            report["lift"] = lift(first, report, seed)
        except ComparisonError as exc:  # e.g. -k selected different queries for the two
            report["lift"] = {"error": str(exc)}
    return reports


def gate_reports(
    reports: Mapping[str, dict], baseline: dict | None, gate: GateSettings, seed: int,
    collection_errors: Sequence[str] = (),
) -> dict[str, GateDecision]:  # fmt: skip
    """Each report's gate decision (its ``gate`` record is stored in the report), or ``{}`` when
    there is neither a baseline nor a minimum. A selected subset (-k/-m) is gated on the same
    baseline queries; ``collection_errors`` fail every decision; a gate that cannot be computed
    fails with the reason (its record says why; the decision is a FAIL without figures)."""
    if baseline is None and not gate.minimums:
        return {}
    from .reporting.gate_text import gate_json
    from .scoring.compare import ComparisonError
    from .scoring.gate import Coverage, GateDecision, gate_decision

    gates = {}
    for name, report in reports.items():
        try:
            gates[name] = gate_decision(baseline, report, gate.alpha, seed=seed,
                                        metrics=gate.metrics, margin=gate.margin,
                                        minimums=gate.minimums,
                                        collection_errors=collection_errors)  # fmt: skip
        except (ComparisonError, ValueError) as exc:
            n = len(report["per_query"])
            gates[name] = GateDecision(gate.alpha, n, Coverage(n), error=str(exc))
        report["gate"] = gate_json(gates[name])
    return gates


def cut_short(
    reports: Mapping[str, dict], gate: GateSettings, incomplete: Mapping[str, Incomplete],
    gated: bool,
) -> dict[str, GateDecision]:  # fmt: skip
    """A run that did not complete (``incomplete``: per report, how many of its selected items
    completed, and why): every report says so (its ``incomplete``), and, when the run is gated,
    every gate is INCOMPLETE (never a pass)."""
    from .reporting.gate_text import gate_json
    from .scoring.gate import Coverage, GateDecision

    gates = {}
    for name, report in reports.items():
        report["incomplete"] = incomplete[name].to_json()
        if gated:
            gates[name] = GateDecision(gate.alpha, len(report["per_query"]),
                                       Coverage(len(report["per_query"])),
                                       incomplete=incomplete[name])  # fmt: skip
            report["gate"] = gate_json(gates[name])
    return gates


def check_outputs(report_dir: Path | None, cache_dir: Path, names: Sequence[str]) -> None:
    """Before any work: every output directory can be created and written, and every model's
    report files get a name of their own. Raises :class:`SetupError` naming the problem."""
    from .reporting.report import file_stem

    for flag, path in (("--execretrieval-report-dir", report_dir),
                       ("--execretrieval-cache-dir", cache_dir)):  # fmt: skip
        if path is not None:
            problem = _unwritable(Path(path))
            if problem:
                raise SetupError(f"{flag} {path}: {problem}")
    if report_dir is None:
        return
    owners: dict[str, str] = {}
    for name in names:
        # casefold: on a case-insensitive file system BM25.json and bm25.json are one file
        stem = file_stem(name).casefold()
        if stem in owners:
            raise SetupError(f"--execretrieval-report-dir: {owners[stem]!r} and {name!r} would "
                             f"both write {file_stem(name)}.json (report file names keep only "
                             "letters, digits and ._-); run them in separate sessions or "
                             "rename one (e.g. another path for an npz: file)")  # fmt: skip
        owners[stem] = name
        for suffix in (".json", ".xml"):
            target = Path(report_dir) / f"{file_stem(name)}{suffix}"
            if target.is_dir():
                raise SetupError(f"--execretrieval-report-dir: {target} is a directory")


def _unwritable(path: Path) -> str | None:
    """Why directory ``path`` cannot be created or written (``None`` when it can)."""
    if path.exists():
        if not path.is_dir():
            return "exists and is not a directory"
        return None if os.access(path, os.W_OK | os.X_OK) else "is not writable"
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is a file, so no directory can be made under it"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot be created: {parent} is not writable"
    return None
