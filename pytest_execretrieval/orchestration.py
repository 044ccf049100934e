"""What a benchmark or verification session does, as plain functions the pytest hooks call
(``session.py``): load the items and the corpus, open every embedder and reranker before any
work, rank the pool per embedder, rerank, load the baseline, hand xdist workers what they need
(:class:`Handoff`), assemble the reports and gate them. Nothing here imports pytest; a problem
the user must fix before the run starts raises :class:`SetupError`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .bounded_json import JSONBoundError, parse_json
from .corpus.authors import authors_only
from .corpus.background import (
    BackgroundFunction,
    background_snippets,
    pool_sha256,
    with_background,
)
from .corpus.items import BenchmarkItem, ItemContext, ItemSource, item_id, load_items, prepared
from .corpus.pools import combined_sha256
from .corpus.store import (
    DEFAULT_VARIANT,
    Corpus,
    CorpusError,
    CorpusVariant,
    Snippet,
    StaleReason,
    build_command,
    corpus_dir,
    corpus_sha256,
    read_corpus,
    stale_reasons,
)
from .embedders import (
    Embedder,
    EmbedderError,
    EmbedderOptions,
    ServiceError,
    get_embedder,
    usage_fields,
)
from .embedders.cache import stderr_progress
from .execution.contexts import ContextError
from .execution.runner import SuiteRunner
from .execution.sandbox import isolation_in_force
from .ranking.benchmark import BenchmarkRun, run_benchmark, uncached_texts
from .ranking.index import IndexSpecError
from .ranking.pipelines import SECTIONS, Pipeline, PoolInput, run_pipeline, schedule
from .ranking.quantize import QuantizeError
from .ranking.rerank import Reranker, RerankerContext, RerankerError, get_reranker
from .reporting.report import build_report
from .scoring.controls import PoolSnippet, controls_table
from .scoring.lift import lift
from .settings import GateSettings

if TYPE_CHECKING:
    from .corpus.item_cache import ItemCache
    from .scoring.gate import GateDecision, Incomplete

EXIT_INCOMPLETE = 6  # a benchmark run cut short: fewer selected items completed than selected
EXIT_UNDERPOWERED = 7  # a gate that could not decide: too few queries to detect a drop


# The pool travels in the handoff: a million snippets are far beyond a report's size.
HANDOFF_MAX_BYTES = 8 * 1024**3


class SetupError(Exception):
    """The run cannot start: a stale corpus, an unusable embedder or reranker, a bad baseline."""


EXIT_SERVICE = 8  # a hosted embedder's or reranker's server unreachable or failing after retries


class ServiceFailure(Exception):
    """A hosted provider failed the run (:class:`.embedders.ServiceError`), named by its flag."""


@dataclass(frozen=True)
class Loaded:
    """The good items of an items directory and its corpus (``None`` when never built)."""

    items: list[BenchmarkItem]
    corpus: Corpus | None
    corpus_dir: Path  # where the corpus files are (items_dir, or its stack-K/, mutmut/, families/)
    stale: list[StaleReason]  # why the corpus does not match the item files; [] when fresh
    changed: frozenset[str]  # ids of the items whose files changed since the corpus was built
    built: bool = True  # the corpus was ever built (its manifest exists)
    # Functions of --execretrieval-background sources in every query's pool (corpus/background.py)
    background: tuple[Snippet, ...] = ()
    tests: str = "all"  # --execretrieval-tests: "authors" when cut to the authors' tests
    # A pool of several items directories (:func:`load_pool`): each one and its corpus
    # directory, in order; () for one directory (``items`` and ``corpus_dir`` say it all)
    items_dirs: tuple[Path, ...] = ()
    corpus_dirs: tuple[Path, ...] = ()

    @property
    def pool(self) -> Corpus:
        """The corpus with its background, which a benchmark needs (``load(stale_ok=False)``
        refuses to go on without one: an unbuilt corpus is stale)."""
        if self.corpus is None:
            raise SetupError(f"no corpus in {self.corpus_dir}: run `execretrieval build`")
        return with_background(self.corpus, self.background)

    @property
    def pool_sha256(self) -> str:
        """The pool's identity in reports and baselines: the corpus's (of several items
        directories: every corpus's, in order), with its background and which tests decide."""
        corpora = [corpus_sha256(where) for where in self.corpus_dirs or (self.corpus_dir,)]
        sha = pool_sha256(combined_sha256(corpora), self.background)
        if self.tests == "all":
            return sha
        return hashlib.sha256(f"{sha}\ntests={self.tests}".encode()).hexdigest()


def prepare_pool(loaded: Loaded, background: Sequence[str], tests: str) -> Loaded:
    """A benchmark's pool: ``loaded`` with every function mined from the ``background``
    sources beside its snippets, and cut to the authors' tests when ``tests`` is
    ``authors`` (:mod:`.corpus.authors`). A source that cannot be read is a
    :class:`SetupError` naming it."""
    if loaded.corpus is None:
        return loaded
    if tests == "authors":
        items, corpus, _ = authors_only(loaded.items, loaded.corpus)
        loaded = replace(loaded, items=items, corpus=corpus, tests=tests)
    if not background:
        return loaded
    assert loaded.corpus is not None
    functions = [f for source in background for f in background_functions(source)]
    return replace(loaded, background=tuple(background_snippets(functions, loaded.corpus)))


def background_functions(source: str) -> list[BackgroundFunction]:
    """Every self-contained function mined from ``source`` (never imported: mining/)."""
    from .mining.functions import mined_functions
    from .mining.sources import SourceError, load_source

    try:  # load_source turns whatever hostile input raises into a SourceError naming it
        tree = load_source(source)
        functions = mined_functions(tree)
    except (SourceError, RecursionError, MemoryError) as exc:
        raise SetupError(f"--execretrieval-background={source}: {exc}") from None
    origin = f"{tree.distribution} {tree.version}".strip()
    return [BackgroundFunction(f"{origin}:{f.file}", f.name, f.code) for f in functions if f.code]


def load(
    items_dir: Path,
    variant: CorpusVariant = DEFAULT_VARIANT,
    *,
    stale_ok: bool,
    item_cache: ItemCache | None = None,
) -> Loaded:
    """Good items and the ``variant`` corpus; malformed item files are left to collection to
    report.

    A benchmark (``stale_ok=False``) refuses a stale or unreadable corpus. Verification goes on:
    it reports the staleness as a failing gate and checks the distractors of unchanged items only.
    ``item_cache``: item files validated in an earlier run are taken from it instead of being
    parsed again (:mod:`.corpus.item_cache`); the caller saves it once the run does any work.
    """
    from .corpus.build import BuildError, engine

    items, problems = load_items(items_dir, item_cache)
    bad = {item_id(p.path) for p in problems}
    where = corpus_dir(items_dir, variant)
    try:
        now = engine(variant, {item.language for item in items})
    except BuildError as exc:  # mutmut is not installed
        raise SetupError(str(exc)) from None
    # A malformed item file is collection's error to report, not a reason to call the corpus stale.
    stale = [r for r in stale_reasons(items_dir, now, where) if r.item_id not in bad]
    changed = frozenset(r.item_id for r in stale if r.item_id is not None)
    if stale and not stale_ok:
        raise SetupError(
            f"the corpus in {where} is stale; run `"
            f"{build_command(items_dir, variant)}`:\n  " + "\n  ".join(map(str, stale))
        )
    corpus = None
    if (where / "manifest.json").exists():
        try:
            corpus = read_corpus(items_dir, where=where)
        except (CorpusError, OSError, ValueError) as exc:
            if not stale_ok:
                raise SetupError(str(exc)) from None
            stale.append(StaleReason("corpus-unreadable", str(exc)))
    return Loaded(items, corpus, where, stale, changed, (where / "manifest.json").exists())


def load_pool(
    items_dirs: Sequence[Path],
    variant: CorpusVariant = DEFAULT_VARIANT,
    *,
    stale_ok: bool,
    item_caches: Sequence[ItemCache | None] = (),
) -> Loaded:
    """One pool made of the folders ``items_dirs`` (several ``--execretrieval-items``): each
    loaded by :func:`load` (its own corpus, fresh as ever: a stale one names its directory),
    then their union: the items by id, the snippets by snippet id. One folder is :func:`load`'s
    own result. An item id or a snippet's code in two folders is a :class:`SetupError` naming
    both (ids name the queries of reports and baselines)."""
    caches = list(item_caches) + [None] * (len(items_dirs) - len(item_caches))
    parts = [
        load(where, variant, stale_ok=stale_ok, item_cache=cache)
        for where, cache in zip(items_dirs, caches, strict=True)
    ]
    if len(parts) == 1:
        return parts[0]
    owner: dict[str, Path] = {}
    for item in (item for part in parts for item in part.items):
        if item.id in owner:
            raise SetupError(
                f"item {item.id} is in two items directories: {owner[item.id]} and "
                f"{item.path}; an item id names one query of the pool (reports and baselines "
                "name queries by id): rename or remove one"
            )
        owner[item.id] = item.path
    corpus = None
    if all(part.corpus is not None for part in parts):
        corpus = _union([part.corpus for part in parts if part.corpus], parts)
    return Loaded(
        sorted((item for part in parts for item in part.items), key=lambda item: item.id),
        corpus,
        parts[0].corpus_dir,
        [reason for part in parts for reason in part.stale],
        frozenset().union(*(part.changed for part in parts)),
        all(part.built for part in parts),
        items_dirs=tuple(Path(where) for where in items_dirs),
        corpus_dirs=tuple(part.corpus_dir for part in parts),
    )


def _union(corpora: Sequence[Corpus], parts: Sequence[Loaded]) -> Corpus:
    """The corpora of several items directories as one pool (each file sorted by snippet id,
    as a build writes it); the same code in two of them is a :class:`SetupError`."""
    seen: dict[str, Path] = {}
    for corpus, part in zip(corpora, parts, strict=True):
        for snippet in corpus.snippets:
            if snippet.snippet_id in seen:
                raise SetupError(
                    f"identical code in the corpora of {seen[snippet.snippet_id]} and "
                    f"{part.corpus_dir} (snippet {snippet.snippet_id[:16]}, "
                    f"{snippet.query_id}): one pool holds each snippet once; remove the "
                    "duplicate item from one directory"
                )
            seen[snippet.snippet_id] = part.corpus_dir
    by_id = lambda s: s.snippet_id  # noqa: E731
    return Corpus(
        tuple(sorted((s for c in corpora for s in c.snippets), key=by_id)),
        tuple(sorted((s for c in corpora for s in c.alternatives), key=by_id)),
        corpora[0].engine,
    )


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


def refuse_training_items(
    models: Mapping[str, Embedder | Reranker], item_ids: Sequence[str], flag: str = "--embedder"
) -> None:
    """:class:`SetupError` when a fine-tuned model (an embedder, or a reranker given with
    ``flag`` ``--execretrieval-rerank``) would be scored on items it was trained on (its
    card's split, recorded in its invocation): a score on seen items is no measurement."""
    from .model_card import trained_on

    for name, model in models.items():
        try:
            invocation = model.invocation()
        except RerankerError as exc:
            raise SetupError(f"{flag}={name}: {exc}") from None
        seen = trained_on(invocation, item_ids)
        if seen:
            split = invocation["training"]["split"]
            held = ", ".join(split.get("held_out_domains", ())) or "its held-out items"
            raise SetupError(
                f"{flag} {name} was trained on {len(seen)} of the {len(item_ids)} selected "
                f"items (split {split['name']}; e.g. {', '.join(seen[:3])}): select held-out "
                f"items by path (held out: {held}), or pass "
                "--execretrieval-allow-training-items to score them anyway"
            )


def refuse_lexical_indexes(embedders: Mapping[str, Embedder]) -> None:
    """:class:`SetupError` for a lexical scorer in a session with ``--execretrieval-index``:
    an index holds vectors, and a scorer has none."""
    from .embedders import LexicalScorer, contract

    for name, embedder in embedders.items():
        if contract(embedder) is LexicalScorer:
            raise SetupError(
                f"--execretrieval-index: --embedder {name} is a lexical scorer, with no vectors "
                "to index; run it in a session without --execretrieval-index"
            )


def vector_embedders(embedders: Mapping[str, Embedder], quantize: bool) -> list[str]:
    """The embedders with vectors to store quantised (every dense encoder); with
    ``--execretrieval-quantize`` or ``--execretrieval-dims`` (``quantize``) and none, a
    :class:`SetupError`: a lexical scorer has no vectors."""
    from .embedders import DenseEncoder, contract

    dense = [name for name, e in embedders.items() if contract(e) is DenseEncoder]
    if quantize and not dense:
        raise SetupError(
            f"--execretrieval-quantize/--execretrieval-dims: --embedder {', '.join(embedders)} "
            "is a lexical scorer, with no vectors to quantise; add a dense embedder or run "
            "without these options"
        )
    return dense


def open_served(embedders: Mapping[str, Embedder], backends: Sequence[str]) -> dict[str, Embedder]:
    """Every local sentence-transformers embedder served by each backend (by pipeline name),
    each checked usable before any work; with backends and no such embedder, or a backend that
    cannot serve one, a :class:`SetupError` naming it."""
    if not backends:
        return {}
    from .embedders.backends import served
    from .embedders.sentence_transformer import SentenceTransformerEmbedder
    from .ranking.pipelines import backend_name

    local = {n: e for n, e in embedders.items() if isinstance(e, SentenceTransformerEmbedder)}
    if not local:
        raise SetupError(
            f"--execretrieval-backend: no --embedder is a local sentence-transformers model "
            f"({', '.join(embedders)}); a runtime backend serves those only"
        )
    out: dict[str, Embedder] = {}
    try:
        for name, embedder in local.items():
            for backend in backends:
                try:
                    out[backend_name(name, backend)] = served(embedder, backend)
                    out[backend_name(name, backend)].check_usable()
                except EmbedderError as exc:
                    raise SetupError(
                        f"--execretrieval-backend {backend}: --embedder {name}: {exc}"
                    ) from None
    except SetupError:
        for opened in out.values():
            opened.close()
        raise
    return out


def identifier_view(
    embedders: Mapping[str, Embedder], loaded: Loaded, view: str
) -> dict[str, Embedder]:
    """Each embedder seeing the snippets in ``view``: ``original``, or ``neutral`` (renamed
    identifiers, :mod:`.ranking.neutral`; execution still uses the recorded outcomes)."""
    if view == "original":
        return dict(embedders)
    from .ranking.neutral import neutral_view

    entry_points = {item.id: item.entry_point for item in loaded.items}
    snippets = [*loaded.pool.snippets, *loaded.pool.alternatives]
    return {name: neutral_view(e, snippets, entry_points) for name, e in embedders.items()}


def open_rerankers(names: Sequence[str], context: RerankerContext) -> dict[str, Reranker]:
    rerankers = {}
    for name in names:
        try:
            rerankers[name] = get_reranker(name, context)
        except RerankerError as exc:
            raise SetupError(f"--execretrieval-rerank={name}: {exc}") from None
    return rerankers


@dataclass
class Ranked:
    """What ranking produced besides the runs: hosted request figures per embedder, the encoding
    time, per reranked pipeline the report's ``rerank`` section and its wall-clock cost, and per
    indexed pipeline its per-query figures (the report's ``index``) and what the index took."""

    usage: dict[str, dict]
    encode_s: float
    rerank_info: dict[str, dict]
    rerank_cost: dict[str, dict]
    index_info: dict[str, dict] = field(default_factory=dict)
    index_cost: dict[str, dict] = field(default_factory=dict)


def rank(
    loaded: Loaded,
    embedders: Mapping[str, Embedder],
    rerankers: Mapping[str, Reranker],
    pipelines: Sequence[Pipeline],
    rerank_k: int,
    runner: SuiteRunner,
    cache_dir: Path,
    code_similarity: bool,
    runs: MutableMapping[str, BenchmarkRun],
    served: Mapping[str, Embedder] | None = None,
) -> Ranked:
    """Run every pipeline (each embedder among them) in :func:`.ranking.pipelines.schedule`'s
    order (:func:`.ranking.pipelines.run_pipeline`). ``served``: by pipeline name, the embedder
    a runtime backend serves (:mod:`.embedders.backends`). ``runs`` is filled as the work goes
    (the reranker context reads it); every embedder and reranker is closed, each embedder
    once its pipelines ran."""
    ranked = Ranked({}, 0.0, {}, {})
    pool = PoolInput(loaded.items, loaded.pool, loaded.pool_sha256, loaded.tests)
    served = dict(served or {})
    pending: dict[str, Embedder] = {**embedders, **served}  # closed when done, the rest on exit
    try:
        for group in schedule(pipelines):
            for pipeline in group:
                _run_one(
                    pipeline,
                    pool,
                    embedders,
                    served,
                    rerankers,
                    rerank_k,
                    runner,
                    cache_dir,
                    code_similarity,
                    runs,
                    ranked,
                )
            for pipeline in group:
                for name in (pipeline.embedder, pipeline.name):
                    if name in pending:
                        pending.pop(name).close()
    finally:
        for embedder in pending.values():
            embedder.close()
        for r in rerankers.values():
            r.close()
    return ranked


def _run_one(
    pipeline: Pipeline,
    pool: PoolInput,
    embedders: Mapping[str, Embedder],
    served: Mapping[str, Embedder],
    rerankers: Mapping[str, Reranker],
    rerank_k: int,
    runner: SuiteRunner,
    cache_dir: Path,
    code_similarity: bool,
    runs: MutableMapping[str, BenchmarkRun],
    ranked: Ranked,
) -> None:
    """One pipeline's run into ``runs`` and ``ranked``; its errors as the flag that caused them."""
    name = pipeline.name
    vectors = replace(pipeline, quantize=None, index=None, reranker=None)
    embedder = served.get(vectors.name) or embedders.get(pipeline.embedder)
    try:
        done = run_pipeline(
            pipeline,
            pool,
            runs,
            runner,
            cache_dir,
            embedder=embedder,
            reranker=rerankers.get(pipeline.reranker or ""),
            rerank_k=rerank_k,
            progress=stderr_progress,
            code_similarity=code_similarity,
        )
    except ServiceError as exc:
        flag = "--execretrieval-rerank" if pipeline.reranker else f"--embedder {vectors.name}"
        raise ServiceFailure(f"{flag}: {exc}") from None
    except RerankerError as exc:
        raise SetupError(f"--execretrieval-rerank: {exc}") from None
    except EmbedderError as exc:
        raise SetupError(f"--embedder {vectors.name}: {exc}") from None
    except IndexSpecError as exc:
        assert pipeline.index is not None
        raise SetupError(f"--execretrieval-index {pipeline.index.text}: {exc}") from None
    except QuantizeError as exc:
        raise SetupError(f"--execretrieval-quantize/--execretrieval-dims: {exc}") from None
    runs[name] = done.run
    if pipeline.encodes:
        ranked.encode_s += done.run.encode_s
    if pipeline.first_stage is None and embedder is not None:
        ranked.usage[name] = usage_fields(embedder)
    if done.rerank is not None and done.cost is not None:
        ranked.rerank_info[name] = done.rerank
        ranked.rerank_cost[name] = done.cost
    if done.figures is not None and done.cost is not None:
        ranked.index_info[name] = done.figures
        ranked.index_cost[name] = done.cost


def run_loaded(
    loaded: Loaded,
    embedder: Embedder,
    runner: SuiteRunner,
    cache_dir: Path,
    code_similarity: bool = False,
) -> BenchmarkRun:
    """One embedder's run over the loaded pool (:func:`.ranking.benchmark.run_benchmark`)."""
    return run_benchmark(
        loaded.items,
        loaded.pool,
        loaded.pool_sha256,
        embedder,
        runner,
        cache_dir,
        stderr_progress,
        code_similarity,
        loaded.tests,
    )


def read_baseline(path: Path, language: str | None = None) -> dict:
    """The baseline report at ``path``, which must be a complete run of this language pool
    (``language``: the pool's report field, ``None`` for an items directory's own)."""
    from .scoring.compare import ReportError, load_report

    try:
        baseline = load_report(path)
    except ReportError as exc:
        raise SetupError(f"--execretrieval-baseline: {exc}") from None
    if baseline.get("language") != language:

        def pool(name: str | None) -> str:
            return f"the {name} pool" if name else "an items directory's own pool"

        raise SetupError(
            f"--execretrieval-baseline={path} is a report of {pool(baseline.get('language'))}, "
            f"not of {pool(language)}: a baseline is per language (a language pool's reports "
            "are in the report directory's folder of its name, e.g. javascript/)"
        )
    if "incomplete" in baseline:
        done = baseline["incomplete"]
        raise SetupError(
            f"--execretrieval-baseline={path} is the report of a run cut short "
            f"({done['completed']} of {done['selected']} selected queries ran): "
            "re-run the baseline model to completion"
        )
    return baseline


def load_baseline(path: Path, sha: str, language: str | None = None) -> dict:
    """:func:`read_baseline`, which must also be of this very pool (``sha``)."""
    baseline = read_baseline(path, language)
    if baseline["corpus"]["sha256"] != sha:
        raise SetupError(
            f"--execretrieval-baseline={path} was made on corpus "
            f"{baseline['corpus']['sha256'][:16]}, this run's corpus is {sha[:16]}: "
            "a gate compares two models on the same corpus; re-run the baseline model"
        )
    return baseline


@dataclass(frozen=True)
class Refreshed:
    """A baseline re-ranked on this run's pool: its report, and the line that says so."""

    report: dict
    line: str


def refresh_baseline(
    path: Path,
    baseline: dict,
    loaded: Loaded,
    runner: SuiteRunner,
    cache_dir: Path,
    options: EmbedderOptions,
    seed: int,
    language: str | None = None,
) -> Refreshed:
    """The baseline's model, made on another pool (an item added or edited), ranked on this
    run's pool: the two models of a gate are always compared on one pool. The embedding cache
    holds the baseline model's vectors of every text it embedded before, so only the texts it
    lacks are embedded (a hosted model's cost guard says how many and what they cost); the
    model must be the one that made the baseline (the same invocation record), and a pipeline's
    baseline (a reranker, an index) is not refreshed: both are a :class:`SetupError` naming
    what to re-run."""
    recorded, old = baseline["embedder"], baseline["corpus"]["sha256"]
    name = str(recorded.get("name", ""))
    was = (
        f"--execretrieval-baseline={path} was made on corpus {old[:16]}, this run's pool is "
        f"{loaded.pool_sha256[:16]}"
    )
    rerun = f"re-run the baseline: execretrieval baseline --embedder {name} --out {path.parent}"
    if "first_stage" in recorded:
        raise SetupError(f"{was}; a pipeline's baseline ({name}) is not re-ranked here: {rerun}")
    try:
        (embedder,) = open_embedders([name], options).values()
    except SetupError as exc:
        raise SetupError(f"{was}; re-ranking its model on this pool: {exc}") from None
    try:
        fresh = {**embedder.invocation(), "name": name}
        differ = sorted(k for k in {*recorded, *fresh} if recorded.get(k) != fresh.get(k))
        if differ:
            raise SetupError(
                f"{was}, and {name} here is not the model that made it ({', '.join(differ)} "
                f"differ): {rerun}"
            )
        missing, total = uncached_texts(embedder, loaded.items, loaded.pool.snippets, cache_dir)
        started = dt.datetime.now(dt.UTC)
        run = run_loaded(loaded, embedder, runner, cache_dir)
    except ServiceError as exc:
        raise ServiceFailure(f"{was}; re-ranking {name} on this pool: {exc}") from None
    except EmbedderError as exc:
        raise SetupError(f"{was}; re-ranking {name} on this pool: {exc}") from None
    finally:
        embedder.close()
    ended = dt.datetime.now(dt.UTC)
    report = build_report(
        name,
        run,
        [item.id for item in loaded.items],
        (ended - started).total_seconds(),
        seed,
        isolation=isolation_in_force(),
        created_at=ended.isoformat(timespec="seconds"),
        language=language,
        controls=controls_table(loaded.pool.snippets, [item.id for item in loaded.items], seed),
    )
    report["refreshed_from"] = {"path": str(path), "corpus_sha256": old}
    embedded = (
        f"{missing} of {total} texts embedded, the rest read from the embedding cache"
        if total
        else "a lexical scorer: nothing to embed"
    )
    line = (
        f"baseline {name}: re-ranked on this pool ({loaded.pool_sha256[:16]}; {path} was made "
        f"on {old[:16]}); {embedded}"
    )
    return Refreshed(report, line)


def failed_queries(report: dict) -> set[str]:
    return {q["query_id"] for q in report["per_query"] if not q["passed"]}


@dataclass(frozen=True)
class Handoff:
    """What an xdist worker needs from its controller, which loaded and ranked once: the
    loaded items and corpus (the pool only: verification's distractors, the code failure
    messages show), the runs and the queries the baseline fails. It travels as one JSON text in
    ``workerinput`` (builtins only cross execnet), so a worker reads no file its controller
    wrote and re-parses no item: workers on another machine or in another directory
    (``--tx ssh=...``, ``--tx popen//chdir=...``) get the same state, and the per-worker
    start-up is the interpreter's and pytest's alone."""

    loaded: Loaded
    runs: Mapping[str, BenchmarkRun]
    baseline_failed: frozenset[str]

    def to_text(self) -> str:
        loaded = self.loaded
        folder = {where: i for i, where in enumerate(loaded.items_dirs)}
        return json.dumps(
            {
                "items": [_item_json(item, folder) for item in loaded.items],
                "pool": [_fields(s) for s in loaded.corpus.snippets] if loaded.corpus else None,
                "engine": loaded.corpus.engine if loaded.corpus else {},
                "stale": [asdict(r) for r in loaded.stale],
                "changed": sorted(loaded.changed),
                "built": loaded.built,
                "background": [_fields(s) for s in loaded.background],
                "tests": loaded.tests,
                "runs": {n: r.to_json() for n, r in self.runs.items()},
                "baseline_failed": sorted(self.baseline_failed),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_text(
        cls, text: str, items_dir: Path | Sequence[Path], variant: CorpusVariant
    ) -> Handoff:
        """The controller's state in a worker whose items directory is ``items_dir`` (item
        paths are rebuilt there from the ids: the controller's paths may not exist here); a
        pool of several items directories: their folders here, in the controller's order."""
        try:
            data = parse_json(text, "the xdist controller's handoff", max_bytes=HANDOFF_MAX_BYTES)
        except JSONBoundError as exc:
            raise SetupError(str(exc)) from None
        folders = [Path(items_dir)] if isinstance(items_dir, (str, Path)) else list(items_dir)
        items = [
            BenchmarkItem(
                **{
                    **{k: v for k, v in row.items() if k != "folder"},
                    "path": folders[row.get("folder", 0)] / row["path"],
                    "tests": tuple(row["tests"]),
                    "alternatives": tuple(row["alternatives"]),
                    "source": ItemSource.from_table(row["source"]),
                    "context": ItemContext.from_table(row.get("context")),
                }
            )
            for row in data["items"]
        ]
        for item in items:  # a worker on another machine prepares its own
            if item.context is not None:
                try:
                    prepared(item.path, item.context)
                except ContextError as exc:
                    raise SetupError(f"{item.id}: {exc}") from None
        pool = data["pool"]
        corpus = (
            None
            if pool is None
            else Corpus(tuple(Snippet.from_json(row) for row in pool), (), data["engine"])
        )
        several = len(folders) > 1
        loaded = Loaded(
            items,
            corpus,
            corpus_dir(folders[0], variant),
            [StaleReason(**r) for r in data["stale"]],
            frozenset(data["changed"]),
            data["built"],
            tuple(Snippet.from_json(row) for row in data["background"]),
            data["tests"],
            tuple(folders) if several else (),
            tuple(corpus_dir(where, variant) for where in folders) if several else (),
        )
        runs = {name: BenchmarkRun.from_json(run) for name, run in data["runs"].items()}
        return cls(loaded, runs, frozenset(data["baseline_failed"]))


def _fields(record) -> dict:
    """A dataclass's fields, shallow: ``asdict``'s deep copies of the pool's equivalence
    evidence took most of the controller's time making the hand-off."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


def _item_json(item: BenchmarkItem, folder: Mapping[Path, int]) -> dict:
    """An item's handoff row; ``folder``: the index of each items directory of a pool of
    several, which the row names when it is not the first (its path is relative to it)."""
    row = _fields(item)
    row["path"] = f"{item.path.parent.name}/{item.path.name}"  # <domain>/<file>, as collected
    row["source"] = asdict(item.source) if item.source else None
    row["context"] = item.context.to_table() if item.context else None
    if folder.get(item.path.parent.parent):
        row["folder"] = folder[item.path.parent.parent]
    return row


def build_reports(
    runs: Mapping[str, BenchmarkRun],
    ran: Mapping[str, Sequence[str]],
    elapsed: float,
    seed: int,
    usage: Mapping[str, dict],
    pipelines: Mapping[str, Pipeline],
    ranked: Ranked,
    language: str | None = None,
    pool: Sequence[PoolSnippet] = (),
) -> dict[str, dict]:
    """One report per embedder or pipeline that ran queries (``ran``: name -> query ids, in run
    order); a pipeline's report (``pipelines``: by name) has its ``first_stage``, its last
    stage's section (:data:`.ranking.pipelines.SECTIONS`: a reranker's ``rerank`` from
    ``ranked``; an index's, stored codes' or a backend's cost against the first stage,
    :func:`.scoring.serving_cost.serving_cost`, an index's from ``ranked``'s per-query
    figures), and its ``lift`` over the first stage's report of this session. ``language``:
    the pool's report field (see :func:`.reporting.report.build_report`). ``pool``: the
    snippets whose query-blind controls every report carries, over its queries
    (:func:`.scoring.controls.controls_table`, computed once per set of queries)."""
    from .scoring.compare import ComparisonError
    from .scoring.serving_cost import serving_cost

    # What a report records of its circumstances, read here (reporting reads no clock and
    # starts no sandbox): the sandbox layers in force during the run, and when it ended.
    isolation = isolation_in_force()
    created_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    tables: dict[frozenset[str], dict] = {}
    for ids in ran.values():
        if ids and pool and frozenset(ids) not in tables:
            tables[frozenset(ids)] = controls_table(pool, ids, seed)
    reports = {
        name: {
            **build_report(
                name,
                runs[name],
                ids,
                elapsed,
                seed,
                isolation=isolation,
                created_at=created_at,
                language=language,
                controls=tables.get(frozenset(ids)),
            ),
            **usage.get(name, {}),
        }
        for name, ids in ran.items()
        if ids
    }
    for name, report in reports.items():
        pipeline = pipelines.get(name)
        parent = pipeline.first_stage if pipeline else None
        if pipeline is None or parent is None:
            continue
        first = reports.get(parent.name)
        report["first_stage"] = parent.name
        section = SECTIONS[str(pipeline.last_stage)]
        if name in ranked.rerank_info:
            report["rerank"] = ranked.rerank_info[name]
        try:
            if first is None:
                raise ComparisonError(f"the first stage {parent.name} did not run")
            report["lift"] = lift(first, report, seed)
            if section != "rerank":
                report[section] = serving_cost(first, report, ranked.index_info.get(name), seed)
        except ComparisonError as exc:  # e.g. -k selected different queries for the two
            report["lift"] = {"error": str(exc)}
            if section != "rerank":
                report[section] = {"error": str(exc)}
    return reports


def gate_reports(
    reports: Mapping[str, dict],
    baseline: dict | None,
    gate: GateSettings,
    seed: int,
    collection_errors: Sequence[str] = (),
    no_baseline: str | None = None,
) -> dict[str, GateDecision]:
    """Each report's gate decision (its ``gate`` record is stored in the report), or ``{}`` when
    there is neither a baseline nor a minimum. A selected subset (-k/-m) is gated on the same
    baseline queries; ``collection_errors`` fail every decision; a gate that cannot be computed
    fails with the reason (its record says why; the decision is a FAIL without figures).
    ``no_baseline``: why a baseline was asked for and this pool has none; every decision then
    fails with it."""
    if baseline is None and not gate.minimums and no_baseline is None:
        return {}
    from .reporting.gate_text import gate_json
    from .scoring.compare import ComparisonError
    from .scoring.gate import Coverage, GateDecision, gate_decision

    gates = {}
    for name, report in reports.items():
        try:
            if no_baseline is not None:
                raise ValueError(no_baseline)
            gates[name] = gate_decision(
                baseline,
                report,
                gate.alpha,
                seed=seed,
                metrics=gate.metrics,
                margin=gate.margin,
                minimums=gate.minimums,
                collection_errors=collection_errors,
                max_detectable=gate.max_detectable,
            )
        except (ComparisonError, ValueError) as exc:
            n = len(report["per_query"])
            gates[name] = GateDecision(gate.alpha, n, Coverage(n), error=str(exc))
        report["gate"] = gate_json(gates[name])
    return gates


def cut_short(
    reports: Mapping[str, dict],
    gate: GateSettings,
    incomplete: Mapping[str, Incomplete],
    gated: bool,
) -> dict[str, GateDecision]:
    """A run that did not complete (``incomplete``: per report, how many of its selected items
    completed, and why): every report says so (its ``incomplete``), and, when the run is gated,
    every gate is INCOMPLETE (never a pass)."""
    from .reporting.gate_text import gate_json
    from .scoring.gate import Coverage, GateDecision

    gates = {}
    for name, report in reports.items():
        report["incomplete"] = incomplete[name].to_json()
        if gated:
            gates[name] = GateDecision(
                gate.alpha,
                len(report["per_query"]),
                Coverage(len(report["per_query"])),
                incomplete=incomplete[name],
            )
            report["gate"] = gate_json(gates[name])
    return gates


def check_outputs(report_dir: Path | None, cache_dir: Path, names: Sequence[str]) -> None:
    """Before any work: every output directory can be created and written, and every model's
    report files get a name of their own. Raises :class:`SetupError` naming the problem."""
    from .reporting.report import file_stem

    for flag, path in (
        ("--execretrieval-report-dir", report_dir),
        ("--execretrieval-cache-dir", cache_dir),
    ):
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
            raise SetupError(
                f"--execretrieval-report-dir: {owners[stem]!r} and {name!r} would "
                f"both write {file_stem(name)}.json (report file names keep only "
                "letters, digits and ._-); run them in separate sessions or "
                "rename one (e.g. another path for an npz: file)"
            )
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
