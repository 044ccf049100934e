"""An indexed pipeline ``<embedder>@<SPEC>`` as a benchmark run: the same steps as the exact
run (:func:`.benchmark.run_benchmark`) with the ranking of an approximate first stage
(:class:`.index.ApproximateStage`), and per query what the index cost against the exact run.

The run's invocation is the exact run's plus ``first_stage`` and ``index`` (spec, faiss version,
build seed, the factory built): a change of index is gated like a change of model. Its
per-query figures (:func:`index_figures`) are what the approximation lost, as only the ranking
knows it (the candidates); :mod:`..scoring.index_cost` sums them per operator class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..corpus.items import BenchmarkItem
from ..corpus.store import Corpus
from ..embedders import Embedder, LexicalScorer, contract
from ..execution.runner import SuiteRunner
from ..records import CANONICAL, BenchmarkRun, Invocation
from .benchmark import run_benchmark
from .index import ApproximateStage, IndexSpec, IndexSpecError, index_name

__all__ = ["IndexedRun", "index_figures", "index_run"]


@dataclass(frozen=True)
class IndexedRun:
    run: BenchmarkRun  # the pipeline's results, like an embedder's
    per_query: dict[str, dict]  # by query id: recall@10 of the exact top 10, canonical_dropped
    # What the index took (not in the report: its bytes must not depend on the clock or the
    # cache): source (built, cached, or why a cached file was rebuilt) and seconds per step.
    cost: dict


def index_figures(
    exact: BenchmarkRun,
    items: Sequence[BenchmarkItem],
    snippet_ids: Sequence[str],
    candidates: np.ndarray,
) -> dict[str, dict]:
    """Per query (``items`` in ranking order, ``candidates`` their pool positions): the share of
    the exact run's listed top 10 among the candidates, and whether the index dropped the
    canonical from the candidates although the exact ranking listed it in its top 10."""
    figures = {}
    for item, row in zip(items, candidates):
        found = {snippet_ids[i] for i in row if i >= 0}
        top = exact.results[item.id].top
        canonical = [h.snippet_id for h in top if h.kind == CANONICAL and h.query_id == item.id]
        figures[item.id] = {
            "recall@10": sum(h.snippet_id in found for h in top) / max(1, len(top)),
            "canonical_dropped": any(c not in found for c in canonical),
        }
    return figures


def index_run(
    exact: BenchmarkRun,
    exact_name: str,
    spec: IndexSpec,
    items: Sequence[BenchmarkItem],
    corpus: Corpus,
    corpus_sha256: str,
    embedder: Embedder,
    runner: SuiteRunner,
    cache_dir: Path | None,
    tests: str = "all",
) -> IndexedRun:
    """The pipeline ``<exact_name>@<spec>``: ``embedder``'s vectors (from the embedding cache
    the exact run filled) ranked through an index built over them (cached under
    ``cache_dir/indexes``). :class:`.index.IndexSpecError` for a lexical scorer (no vectors)."""
    if contract(embedder) is LexicalScorer:
        raise IndexSpecError(
            f"{exact_name} is a lexical scorer: it has no vectors to index; run it in a "
            "session without --execretrieval-index"
        )
    stage = ApproximateStage(spec, cache_dir)
    run = run_benchmark(
        items, corpus, corpus_sha256, embedder, runner, cache_dir, tests=tests, rank=stage
    )
    invocation: Invocation = {
        **exact.embedder,
        "name": index_name(exact_name, spec.text),
        "first_stage": exact_name,
        "index": stage.invocation(),
    }
    ordered = sorted((i for i in items if i.id in run.results), key=lambda i: i.id)
    snippet_ids = sorted(s.snippet_id for s in corpus.snippets)
    figures = index_figures(exact, ordered, snippet_ids, stage.candidates)
    cost = {
        "source": stage.built.source if stage.built else "none",
        "seconds": stage.seconds,
        "n_queries": len(ordered),
    }
    return IndexedRun(replace(run, embedder=invocation), figures, cost)
