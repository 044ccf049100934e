"""A retrieve-then-rerank pipeline as a benchmark run, and its rank-1 lift over the first stage.

**Ordering.** For each query the reranker scores the first stage's top ``k`` (its listed,
tie-broken order). The pipeline lists those ``k`` by (reranker score desc, first-stage score
desc, first-stage position asc), then ranks ``k + 1 ..`` exactly as the first stage did (they
are not rescored, so the reranker cannot lift a snippet from below ``k``).

**Scores and ties.** A pipeline hit carries ``score`` = the reranker's score (rounded to 6
decimals) at ranks ``1..k`` and the first stage's score below, and ``tie_key`` = ``(1, reranker
score, first-stage score)`` resp. ``(0, first-stage score)``. Two hits tie iff their tie keys are
equal, i.e. the reranker cannot separate them *and* the first stage could not either; the
first-stage order decides every other reranker tie (it is the pipeline's definition, not an
arbitrary tie-break). The tie-aware metrics (:func:`..metrics.row_metrics`) count the groups of
equal tie keys, so a reranker that ties a passing and a failing candidate that the first stage
had also tied still gets the expected value, never a lucky order. The tie group at the last
listed rank and the canonical's group are carried over from the first stage where they lie
below ``k``; a first-stage tie that straddles rank ``k`` is cut there (the reranked part is
scored, the rest is not).

``canonical_score`` and ``own_distractors`` of a pipeline row are the first stage's (the reranker
scores the top ``k`` only); ``passes`` of every hit is the first stage's (same query, same
snippet).

The pipeline's lift over its first stage is a comparison of their two reports
(:func:`pytest_execretrieval.scoring.lift.lift`); its sentences are
:mod:`pytest_execretrieval.reporting.lift_text`'s.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...corpus.items import BenchmarkItem
from ...corpus.store import Snippet
from ...execution.runner import SuiteRunner
from ...records import (
    CANONICAL,
    BenchmarkRun,
    CodeSimilarity,
    Hit,
    Invocation,
    Outcomes,
    QueryResult,
    TieGroup,
    TieSpan,
)
from ..benchmark import honest, pair_outcomes, suite_code
from ..retrieval import DECIMALS
from .base import Candidate, Reranked, Reranker, RerankerError, RerankQuery

__all__ = ["PipelineRun", "pipeline_name", "rerank_run"]


def pipeline_name(embedder: str, reranker: str) -> str:
    """``<embedder>+<reranker>``, the name in item ids and report file names."""
    return f"{embedder}+{reranker}"


@dataclass(frozen=True)
class PipelineRun:
    run: BenchmarkRun  # the pipeline's results, like an embedder's
    info: dict  # the report's ``rerank`` section: reranker, k, fallbacks, reranker figures
    # Wall-clock cost (not in the report, whose only timing fields are elapsed_s/created_at):
    # seconds, ms_per_query, and the first stage's first_stage_seconds, first_stage_ms_per_query.
    cost: dict


def _group_spans(keys: Sequence) -> list[tuple[int, int]]:
    """0-based ``(first, last)`` of the run of equal keys holding each position."""
    spans: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            spans += [(start, i - 1)] * (i - start)
            start = i
    return spans


# The pipeline's hits, rank-1 tie, tail tie, canonical span and canonical rank of one query.
Reordered = tuple[list[Hit], TieGroup, TieGroup, TieSpan, int]


def reorder(r: QueryResult, scores: Sequence[float], k: int) -> Reordered:
    """The pipeline's view of one query whose first ``k`` listed hits got ``scores`` (the tie
    groups as in :class:`..benchmark.QueryResult`; ordering and ties: module docstring)."""
    if r.tail_tie is None or r.canonical_tie is None:
        raise ValueError(f"{r.query_id}: a first-stage result without its tie groups")
    top = list(r.top)
    k = min(k, len(top))
    rounded = [round(float(s), DECIMALS) for s in scores]
    order = sorted(range(k), key=lambda i: (-rounded[i], -top[i].score, i))
    hits = [
        Hit(
            pos + 1,
            top[i].snippet_id,
            top[i].kind,
            top[i].operator,
            top[i].query_id,
            rounded[i],
            top[i].passes,
            (1, rounded[i], top[i].score),
        )
        for pos, i in enumerate(order)
    ]
    hits += [
        Hit(i + 1, h.snippet_id, h.kind, h.operator, h.query_id, h.score, h.passes, (0, h.score))
        for i, h in enumerate(top[k:], start=k)
    ]
    keys = [h.tie_key for h in hits]
    spans = _group_spans(keys)
    last_first, last_last = spans[-1]
    if k == len(top):  # the whole list was reranked: nothing below ties with it
        tail = TieGroup(
            size=last_last - last_first + 1, passing=sum(h.passes for h in hits[last_first:])
        )
    else:  # the first stage's tail group, less its members that were reranked
        moved = [h for h in top[:k] if h.score == top[-1].score]
        tail = TieGroup(
            size=r.tail_tie["size"] - len(moved),
            passing=r.tail_tie["passing"] - sum(h.passes for h in moved),
        )
    first_group = hits[: spans[0][1] + 1]
    rank1 = (
        tail
        if spans[0] == spans[-1]
        else TieGroup(size=len(first_group), passing=sum(h.passes for h in first_group))
    )
    canonical = next(
        (p for p, h in enumerate(hits) if h.kind == CANONICAL and h.query_id == r.query_id), None
    )
    if canonical is not None and canonical < k:
        a, b = spans[canonical]
        if spans[canonical] == spans[-1]:
            b = a + tail["size"] - 1
        span = TieSpan(first=a + 1, last=b + 1)
        rank = canonical + 1
    else:  # below the reranked part: ranks are the first stage's
        span = TieSpan(first=max(r.canonical_tie["first"], k + 1), last=r.canonical_tie["last"])
        rank = r.canonical_rank
    return hits, rank1, tail, span, rank


def _outcomes(item: BenchmarkItem, snippet: Snippet, runner: SuiteRunner) -> Outcomes:
    """The snippet's outcome per test of ``item`` (recorded, not callable, or run, cached)."""
    known = pair_outcomes(item, snippet)
    if known is not None:
        return known
    return honest(runner.run(suite_code(item, snippet), item.setup, item.tests, item.language))


def rerank_run(
    first: BenchmarkRun,
    first_name: str,
    reranker: Reranker,
    k: int,
    items: Sequence[BenchmarkItem],
    snippets: Mapping[str, Snippet],
    runner: SuiteRunner,
    name: str | None = None,
) -> PipelineRun:
    """Rerank ``first``'s top ``k`` of every item's query with ``reranker``.

    ``snippets``: the corpus by snippet id; ``name``: the reranker as the user spelled it (the
    pipeline is ``<first_name>+<name>``; default ``reranker.name``). Raises
    :class:`RerankerError` when the reranker answers with the wrong number of scores."""
    if k < 1:
        raise RerankerError(f"the rerank depth k must be at least 1, got {k}")
    items = sorted((i for i in items if i.id in first.results), key=lambda i: i.id)
    queries = [
        RerankQuery(
            item,
            tuple(
                Candidate(h.snippet_id, snippets[h.snippet_id].code, h.rank, h.score)
                for h in first.results[item.id].top[:k]
            ),
        )
        for item in items
    ]
    started = time.perf_counter()
    answers: list[Reranked] = reranker.rerank(first_name, queries)
    seconds = time.perf_counter() - started
    if len(answers) != len(queries):
        raise RerankerError(
            f"reranker {reranker.name!r} answered {len(answers)} queries of {len(queries)}"
        )
    results: dict[str, QueryResult] = {}
    fallbacks: Counter[str] = Counter()
    fallback_ids: list[str] = []
    details: dict[str, dict] = {}
    for item, query, answer in zip(items, queries, answers):
        if len(answer.scores) != len(query.candidates):
            raise RerankerError(
                f"reranker {reranker.name!r} gave {len(answer.scores)} scores "
                f"for {len(query.candidates)} candidates of {item.id}"
            )
        if answer.fallback:
            fallbacks[answer.fallback] += 1
            fallback_ids.append(item.id)
        if answer.detail:
            details[item.id] = answer.detail
        r = first.results[item.id]
        hits, rank1, tail, span, rank = reorder(r, answer.scores, k)
        same = hits[0].snippet_id == r.top[0].snippet_id
        outcomes = (
            r.rank1_outcomes if same else _outcomes(item, snippets[hits[0].snippet_id], runner)
        )
        results[item.id] = QueryResult(
            item.id,
            item.domain,
            rank1["passing"] == rank1["size"],
            rank,
            r.canonical_score,
            tuple(hits),
            tuple(outcomes),
            r.own_distractors,
            CodeSimilarity(),
            rank1,
            tail,
            span,
            source=r.source,
        )
    # The first stage's invocation plus the reranker's: a comparison with the first stage
    # shows exactly what the second stage adds.
    invocation: Invocation = {
        **first.embedder,
        "name": pipeline_name(first_name, name or reranker.name),
        "first_stage": first_name,
        "reranker": reranker.invocation(),
        "rerank_k": k,
    }
    n = max(1, len(queries))
    info = {
        "reranker": reranker.name,
        "k": k,
        "fallback": {
            "n": len(fallback_ids),
            "reasons": dict(sorted(fallbacks.items())),
            "query_ids": fallback_ids,
        },
        "totals": {
            key: sum(d[key] for d in details.values() if key in d)
            for key in sorted(
                {k for d in details.values() for k, v in d.items() if isinstance(v, (int, float))}
            )
        },
        "per_query": details,
    }
    cost = {
        "seconds": seconds,
        "ms_per_query": 1000 * seconds / n,
        "first_stage_seconds": first.encode_s,
        "first_stage_ms_per_query": 1000 * first.encode_s / n,
    }
    return PipelineRun(
        BenchmarkRun(
            invocation,
            first.corpus_sha256,
            first.n_snippets,
            results,
            seconds,
            first.background,
            first.tests,
        ),
        info,
        cost,
    )
