"""A pipeline is one description, ``embedder -> backend -> quantisation -> index -> rerank``,
each stage but the embedder optional (:class:`Pipeline`); its name is derived here and only
here, and :func:`run_pipeline` runs any of them, :func:`schedule` says in which order.

**Names.** ``E`` (the embedder), ``E+BACKEND`` (a runtime backend, ``onnx``), ``E~Q`` (stored
codes: ``int8``, ``binary``, ``binary-rescore``, ``dN`` or ``dN-PRECISION``,
:mod:`.quantize`), ``E@SPEC`` (an approximate index, :mod:`.index`), ``E+RERANKER`` (a second
stage, :mod:`.rerank.pipeline`), in this order when stages combine (``E~d256@faiss:HNSW32``).

**Runs.** A pipeline's reference is its first stage: the same pipeline less its last stage.
The stages up to the index make one vector ranking: the embedder (served by the backend) gives
the vectors (from the embedding cache the reference's run filled, unless a backend encodes
them anew), the quantisation turns them into what a vector database stores and scores, the index
ranks them approximately; one :func:`.benchmark.run_benchmark` runs it. A reranker reorders its
reference's run. A pipeline's invocation is its reference's plus its name, ``first_stage`` and
the last stage's record: every stage is gated like a change of model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..corpus.items import BenchmarkItem
from ..corpus.store import Corpus
from ..embedders import Embedder, LexicalScorer, contract
from ..embedders.cache import Progress
from ..execution.runner import SuiteRunner
from ..records import BenchmarkRun, Invocation
from .benchmark import run_benchmark
from .index import ApproximateStage, IndexSpec, IndexSpecError, index_name
from .indexed import index_figures
from .quantize import Quantization, QuantizedStage, QuantizeError
from .rerank import Reranker
from .rerank.pipeline import pipeline_name, rerank_run
from .retrieval import RankVectors, rank_dense

__all__ = [
    "SECTIONS",
    "STAGES",
    "Pipeline",
    "PoolInput",
    "StageRun",
    "backend_name",
    "expand",
    "quantized_name",
    "run_pipeline",
    "schedule",
]

STAGES = ("backend", "quantize", "index", "reranker")  # after the embedder, in this order
# The report section a pipeline's last stage fills (the reranker's: its ``rerank`` info; the
# others': their cost against the reference, :mod:`..scoring.serving_cost`)
SECTIONS = {"backend": "backend", "quantize": "quantize", "index": "index", "reranker": "rerank"}


def backend_name(embedder: str, backend: str) -> str:
    """``<embedder>+<backend>``: the model served by a runtime backend."""
    return f"{embedder}+{backend}"


def quantized_name(embedder: str, quantization: Quantization) -> str:
    """``<embedder>~<quantisation>``: the vectors as a database stores them."""
    return f"{embedder}~{quantization.text}"


@dataclass(frozen=True)
class Pipeline:
    """One pipeline: an embedder and its optional stages (:data:`STAGES`)."""

    embedder: str
    backend: str | None = None
    quantize: Quantization | None = None
    index: IndexSpec | None = None
    reranker: str | None = None

    @property
    def stages(self) -> tuple[str, ...]:
        """The stages present, in the pipeline's order."""
        return tuple(s for s in STAGES if getattr(self, s) is not None)

    @property
    def name(self) -> str:
        name = self.embedder
        if self.backend is not None:
            name = backend_name(name, self.backend)
        if self.quantize is not None:
            name = quantized_name(name, self.quantize)
        if self.index is not None:
            name = index_name(name, self.index.text)
        if self.reranker is not None:
            name = pipeline_name(name, self.reranker)
        return name

    @property
    def last_stage(self) -> str | None:
        return self.stages[-1] if self.stages else None

    @property
    def first_stage(self) -> Pipeline | None:
        """The reference: this pipeline less its last stage (``None`` for an embedder)."""
        last = self.last_stage
        if last is None:
            return None
        return replace(
            self,
            backend=None if last == "backend" else self.backend,
            quantize=None if last == "quantize" else self.quantize,
            index=None if last == "index" else self.index,
            reranker=None,  # the last stage whenever present
        )

    @property
    def encodes(self) -> bool:
        """Whether the run encodes the texts itself (an embedder, or one served by a backend);
        the other stages read the vectors its reference's run cached."""
        return self.stages in ((), ("backend",))


def expand(
    embedders: Sequence[str],
    backends: Sequence[str] = (),
    quantizations: Sequence[Quantization] = (),
    indexes: Sequence[IndexSpec] = (),
    rerankers: Sequence[str] = (),
    *,
    served: Sequence[str] | None = None,
    dense: Sequence[str] | None = None,
) -> list[Pipeline]:
    """The session's pipelines, each embedder followed by its own: one per backend (of the
    embedders in ``served``; default all), per quantisation (of the embedders in ``dense``;
    default all), per index, per reranker."""
    out = []
    for e in embedders:
        out.append(Pipeline(e))
        if served is None or e in served:
            out += [Pipeline(e, backend=b) for b in backends]
        if dense is None or e in dense:
            out += [Pipeline(e, quantize=q) for q in quantizations]
        out += [Pipeline(e, index=spec) for spec in indexes]
        out += [Pipeline(e, reranker=r) for r in rerankers]
    return out


def schedule(pipelines: Sequence[Pipeline]) -> list[list[Pipeline]]:
    """The order of the runs: per embedder (in the order given) its vector pipelines, each
    after its reference; then every reranked pipeline (a fusion reranker reads every first
    stage's run). A pipeline whose reference is not among ``pipelines`` is a ``ValueError``."""
    names = {p.name for p in pipelines}
    missing = [p.name for p in pipelines if p.first_stage and p.first_stage.name not in names]
    if missing:
        raise ValueError(f"pipelines without their first stage: {missing}")
    vectors = [p for p in pipelines if p.reranker is None]
    groups: dict[str, list[Pipeline]] = {}
    for p in sorted(vectors, key=lambda p: len(p.stages)):  # stable: references first
        groups.setdefault(p.embedder, []).append(p)
    reranked = sorted((p for p in pipelines if p.reranker), key=lambda p: len(p.stages))
    return [*groups.values(), *([reranked] if reranked else [])]


@dataclass(frozen=True)
class PoolInput:
    """What every run ranks: the items, their pool, its identity, which tests decide."""

    items: Sequence[BenchmarkItem]
    corpus: Corpus
    sha256: str
    tests: str = "all"


@dataclass(frozen=True)
class StageRun:
    """A pipeline's run, and what its last stage adds: the reranker's ``rerank`` section, an
    index's per-query figures, and the wall-clock cost (never in a report: its bytes must not
    depend on the clock)."""

    run: BenchmarkRun
    rerank: dict | None = None
    figures: dict[str, dict] | None = None
    cost: dict | None = None


def run_pipeline(
    pipeline: Pipeline,
    pool: PoolInput,
    runs: Mapping[str, BenchmarkRun],
    runner: SuiteRunner,
    cache_dir: Path | None,
    *,
    embedder: Embedder | None = None,
    reranker: Reranker | None = None,
    rerank_k: int = 10,
    progress: Progress | None = None,
    code_similarity: bool = False,
) -> StageRun:
    """``pipeline``'s run; ``runs`` holds its reference's (:func:`schedule`); ``embedder``: the
    embedder of a vector pipeline (served by its backend, if any); ``reranker``: a reranked
    one's. :class:`.index.IndexSpecError`, :class:`.quantize.QuantizeError`,
    :class:`.rerank.RerankerError` and the embedder's errors name what failed."""
    parent = pipeline.first_stage
    if pipeline.reranker is not None:
        assert parent is not None and reranker is not None
        snippets = {s.snippet_id: s for s in pool.corpus.snippets}
        done = rerank_run(
            runs[parent.name],
            parent.name,
            reranker,
            rerank_k,
            pool.items,
            snippets,
            runner,
            pipeline.reranker,
        )
        return StageRun(done.run, rerank=done.info, cost=done.cost)
    assert embedder is not None
    _needs_vectors(pipeline, embedder)
    index = ApproximateStage(pipeline.index, cache_dir) if pipeline.index else None
    rank = _vector_ranking(pipeline, index)
    encodes = pipeline.encodes
    run = run_benchmark(
        pool.items,
        pool.corpus,
        pool.sha256,
        embedder,
        runner,
        cache_dir,
        progress if encodes else None,
        code_similarity and encodes,
        pool.tests,
        rank,
    )
    if parent is None:
        return StageRun(run)
    reference = runs[parent.name]
    # A backend's run carries the served model's own record; the other stages the reference's.
    base = run.embedder if pipeline.last_stage == "backend" else reference.embedder
    invocation: Invocation = {**base, "name": pipeline.name, "first_stage": parent.name}
    if pipeline.last_stage == "quantize":
        assert pipeline.quantize is not None
        invocation["quantize"] = pipeline.quantize.invocation()
    elif pipeline.last_stage == "index":
        assert index is not None
        invocation["index"] = index.invocation()
    run = dataclasses.replace(run, embedder=invocation)
    if index is None or pipeline.last_stage != "index":
        return StageRun(run)
    ordered = sorted((i for i in pool.items if i.id in run.results), key=lambda i: i.id)
    snippet_ids = sorted(s.snippet_id for s in pool.corpus.snippets)
    figures = index_figures(reference, ordered, snippet_ids, index.candidates)
    cost = {
        "source": index.built.source if index.built else "none",
        "seconds": index.seconds,
        "n_queries": len(ordered),
    }
    return StageRun(run, figures=figures, cost=cost)


def _needs_vectors(pipeline: Pipeline, embedder: Embedder) -> None:
    """A lexical scorer has no vectors to quantise or index: named, never silently exact."""
    if contract(embedder) is not LexicalScorer:
        return
    if pipeline.index is not None:
        raise IndexSpecError(
            f"{pipeline.embedder} is a lexical scorer: it has no vectors to index; run it in a "
            "session without --execretrieval-index"
        )
    if pipeline.quantize is not None:
        raise QuantizeError(
            f"{pipeline.embedder} is a lexical scorer: it has no vectors to quantise; run it "
            "in a session without --execretrieval-quantize and --execretrieval-dims"
        )


def _vector_ranking(pipeline: Pipeline, index: ApproximateStage | None) -> RankVectors:
    """How the pipeline ranks its vectors: stored codes, then an index, else exactly."""
    rank: RankVectors = index if index is not None else rank_dense
    q = pipeline.quantize
    if q is None:
        return rank
    if q.precision is not None and index is not None:
        raise QuantizeError(
            f"{pipeline.name}: an index over {q.precision} codes is not measured here "
            "(the index holds float vectors); combine an index with --execretrieval-dims only"
        )
    return QuantizedStage(q, then=rank)
