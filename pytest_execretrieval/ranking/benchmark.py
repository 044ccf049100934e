"""The benchmark run: embed queries and pool, rank the whole pool per query, decide exec@k.

Whether a top-10 snippet passes a query's tests comes from the outcomes recorded in the corpus
when the snippet belongs to that query; a snippet of another query that does not define the
query's entry point fails without running; any other pair is executed in the sandbox.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..corpus.items import BenchmarkItem, defined_names, defines
from ..corpus.store import Corpus, Snippet
from ..embedders import DenseEncoder, Embedder
from ..embedders.cache import EmbeddingCache, Progress, encode_cached
from ..embedders.hosted import cost_guard
from ..execution.runner import SuiteRunner
from .retrieval import DECIMALS, TIE_POLICY, Ranking, normalize, retrieve

TOP_K = 10


@dataclass(frozen=True)
class Hit:
    rank: int
    snippet_id: str
    kind: str
    operator: str | None
    query_id: str
    score: float
    passes: bool
    # Pipelines only (see rerank.pipeline): the ordering key whose equality makes a tie, e.g.
    # (1, reranker score, first-stage score) for a reranked hit; None: the score is the key.
    tie_key: tuple | None = None

    def __post_init__(self) -> None:
        if self.tie_key is not None:
            object.__setattr__(self, "tie_key", tuple(self.tie_key))


@dataclass(frozen=True)
class QueryResult:
    query_id: str
    domain: str
    passed: bool  # the rank-1 snippet passes every test of the query
    canonical_rank: int
    canonical_score: float
    top: tuple[Hit, ...]
    rank1_outcomes: tuple[str, ...]  # rank-1 snippet's outcome per test
    # The query's own distractors with their score for this query (snippet_id, operator, score,
    # edit_lines, edit_chars, kill), and cosine similarities canonical -> alternatives and
    # canonical -> own distractors (dense embedders only).
    own_distractors: tuple[dict, ...] = ()
    code_similarity: dict = field(default_factory=dict)
    # Tie groups over the whole pool: at rank 1 and at the last listed rank ({size, passing}),
    # and the rank span of the canonical's group ({first, last}); see metrics.tie_aware_metrics.
    rank1_tie: dict = field(default_factory=dict)
    tail_tie: dict = field(default_factory=dict)
    canonical_tie: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        row = asdict(self)
        row["top"] = [asdict(h) for h in self.top]
        row["own_distractors"] = list(self.own_distractors)
        return row

    @classmethod
    def from_json(cls, row: dict) -> QueryResult:
        return cls(**{**row, "top": tuple(Hit(**h) for h in row["top"]),
                      "rank1_outcomes": tuple(row["rank1_outcomes"]),
                      "own_distractors": tuple(row["own_distractors"])})  # fmt: skip


@dataclass(frozen=True)
class BenchmarkRun:
    embedder: dict  # the invocation
    corpus_sha256: str
    n_snippets: int
    results: dict[str, QueryResult]  # by query id
    encode_s: float

    def to_json(self) -> dict:
        return {
            "embedder": self.embedder, "corpus_sha256": self.corpus_sha256,
            "n_snippets": self.n_snippets, "encode_s": self.encode_s,
            "results": {q: r.to_json() for q, r in self.results.items()},
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict) -> BenchmarkRun:
        results = {q: QueryResult.from_json(r) for q, r in data["results"].items()}
        return cls(data["embedder"], data["corpus_sha256"], data["n_snippets"], results,
                   data["encode_s"])  # fmt: skip


def document_text(snippet: Snippet) -> str:
    return snippet.code


def definers(pool: Sequence[Snippet]) -> dict[str, list[int]]:
    """Pool positions by the module-level function names their code defines."""
    found: dict[str, list[int]] = {}
    for i, s in enumerate(pool):
        for name in sorted(defined_names(s.code)):
            found.setdefault(name, []).append(i)
    return found


@dataclass(frozen=True)
class Scored:
    ranking: Ranking
    code_similarity: dict[str, dict]  # query id -> {"alternatives": [...], "distractors": [...]}


def rank_pool(
    embedder: Embedder, items: Sequence[BenchmarkItem], pool: Sequence[Snippet],
    targets: Sequence[int],
    watch: Sequence[Sequence[int]], alternatives: Sequence[Snippet], cache_dir: Path | None,
    progress: Progress | None = None,
) -> Scored:  # fmt: skip
    """Rank the pool for every item's query (:func:`.retrieval.retrieve` dispatches on the
    embedder's contract; a dense encoder's vectors go through the embedding cache), and the
    code-to-code similarity of ``alternatives`` when there are pool vectors to compare."""
    queries = [item.query for item in items]
    documents = [document_text(s) for s in pool]
    cache = EmbeddingCache(cache_dir, embedder.invocation()) if cache_dir else None
    cost_guard(embedder, [  # hosted embedders: print the cost, enforce the budget, before sending
        ("document", documents, [s.snippet_id for s in pool]),
        ("query", queries, [item.id for item in items]),
        ("document", [document_text(a) for a in alternatives],
         [a.snippet_id for a in alternatives]),
    ], cache)  # fmt: skip

    def encode(
        encoder: DenseEncoder, texts: Sequence[str], ids: Sequence[str], role: str
    ) -> np.ndarray:
        return encode_cached(encoder, texts, ids, role, cache, progress=progress)

    retrieved = retrieve(embedder, queries, [item.id for item in items], documents,
                         [s.snippet_id for s in pool], targets, TOP_K, watch, encode)  # fmt: skip
    if retrieved.document_vectors is None:  # a lexical scorer: no vectors to compare code with
        return Scored(retrieved.ranking, {})
    return Scored(retrieved.ranking, code_similarity(
        embedder, pool, retrieved.document_vectors, alternatives, cache, progress))  # fmt: skip


def code_similarity(
    embedder: DenseEncoder, pool: Sequence[Snippet], doc_vectors: np.ndarray,
    alternatives: Sequence[Snippet], cache: EmbeddingCache | None, progress: Progress | None,
) -> dict[str, dict]:  # fmt: skip
    """Code->code cosine: each canonical against its alternatives and its own distractors."""
    if not alternatives:
        return {}
    alt_vectors = encode_cached(embedder, [document_text(a) for a in alternatives],
                                [a.snippet_id for a in alternatives], "document", cache,
                                progress=progress)  # fmt: skip
    unit = normalize(doc_vectors)
    alt_unit = normalize(alt_vectors)
    canonical = {s.query_id: i for i, s in enumerate(pool) if s.kind == "canonical"}
    out: dict[str, dict] = {}
    for i, s in enumerate(pool):
        if s.kind == "distractor" and s.query_id in canonical:
            sim = float(np.round(unit[canonical[s.query_id]] @ unit[i], DECIMALS))
            out.setdefault(s.query_id, {"alternatives": [], "distractors": []})
            out[s.query_id]["distractors"].append(sim)
    for j, a in enumerate(alternatives):
        if a.query_id in canonical:
            sim = float(np.round(unit[canonical[a.query_id]] @ alt_unit[j], DECIMALS))
            out.setdefault(a.query_id, {"alternatives": [], "distractors": []})
            out[a.query_id]["alternatives"].append(sim)
    return out


def run_benchmark(
    items: Sequence[BenchmarkItem], corpus: Corpus, corpus_sha256: str, embedder: Embedder,
    runner: SuiteRunner, cache_dir: Path | None = None, progress: Progress | None = None,
    with_code_similarity: bool = False,
) -> BenchmarkRun:  # fmt: skip
    """Rank the whole pool for every item's query and decide exec@k from the top 10.

    With ``with_code_similarity`` the alternatives are embedded too (about 15% more encoding on the
    bundled set) for the code-to-code analysis; without it that analysis is absent."""
    items = sorted(items, key=lambda item: item.id)
    pool = sorted(corpus.snippets, key=lambda s: s.snippet_id)
    position = {s.snippet_id: i for i, s in enumerate(pool)}
    canonical = {s.query_id: position[s.snippet_id] for s in pool if s.kind == "canonical"}
    missing = [item.id for item in items if item.id not in canonical]
    if missing:
        raise ValueError(f"items without a canonical in the corpus: {missing[:5]}")
    own: dict[str, list[int]] = {}
    for i, s in enumerate(pool):
        if s.kind == "distractor":
            own.setdefault(s.query_id, []).append(i)
    # Snippets that may pass a query: its canonical and other queries' snippets defining its
    # entry point. Their scores are watched, so a tie reaching below the list is counted exactly.
    by_name = definers(pool)
    may_pass = [
        [i for i in by_name.get(item.entry_point, []) if pool[i].kind == "canonical"
         or pool[i].query_id != item.id]
        for item in items
    ]  # fmt: skip
    started = time.perf_counter()
    scored = rank_pool(
        embedder, items, pool, [canonical[item.id] for item in items],
        [own.get(item.id, []) + may_pass[q] for q, item in enumerate(items)],
        sorted(corpus.alternatives, key=lambda s: s.snippet_id) if with_code_similarity else [],
        cache_dir, progress,
    )  # fmt: skip
    ranking = scored.ranking
    encode_s = time.perf_counter() - started

    # The listed pairs, and the snippets below the list that tie with its last score and may
    # pass: recorded outcomes first, the rest executed together.
    below: list[list[int]] = []
    for q, item in enumerate(items):
        listed = set(ranking.indices[q].tolist())
        last = ranking.scores[q][-1] if len(listed) else None
        watched = ranking.watched[q][len(own.get(item.id, [])) :]
        below.append([i for i, score in zip(may_pass[q], watched)
                      if score == last and i not in listed])  # fmt: skip
    pairs = {(item.id, int(i)) for q, item in enumerate(items)
             for i in (*ranking.indices[q], *below[q])}  # fmt: skip
    by_id = {item.id: item for item in items}
    outcomes: dict[tuple[str, int], tuple[str, ...]] = {}
    to_run = []
    for query_id, i in sorted(pairs):
        snippet, item = pool[i], by_id[query_id]
        if snippet.query_id == query_id:
            outcomes[query_id, i] = snippet.outcomes
        elif not defines(snippet.code, item.entry_point):
            outcomes[query_id, i] = ("error:NameError",) * len(item.tests)
        else:
            to_run.append((query_id, i))
    results = runner.run_many([(pool[i].code, by_id[q].setup, by_id[q].tests) for q, i in to_run])
    for key, result in zip(to_run, results):
        # A run that is not a pass although every test passed (e.g. it left a child process
        # behind) must not read as passing.
        honest = result.passed or any(o != "pass" for o in result.outcomes)
        outcomes[key] = result.outcomes if honest else ("error:Sandbox",) * len(result.outcomes)

    def passes(query_id: str, i: int) -> bool:
        return all(x == "pass" for x in outcomes[query_id, i])

    out = {}
    for q, item in enumerate(items):
        hits = []
        for rank, (i, score) in enumerate(zip(ranking.indices[q], ranking.scores[q]), 1):
            s = pool[int(i)]
            score = round(float(score), DECIMALS)
            hits.append(Hit(rank, s.snippet_id, s.kind, s.operator, s.query_id, score,
                            passes(item.id, int(i))))  # fmt: skip
        own_rows = tuple(
            {"snippet_id": pool[i].snippet_id, "operator": pool[i].operator,
             "score": round(score, DECIMALS),
             "edit_lines": pool[i].edit_lines, "edit_chars": pool[i].edit_chars,
             "kill": pool[i].kill}
            for i, score in zip(own.get(item.id, []), ranking.watched[q])
        )  # fmt: skip
        last_group = [h for h in hits if h.score == hits[-1].score]
        tail = {"size": int(ranking.tail_ties[q]),
                "passing": sum(h.passes for h in last_group)
                + sum(passes(item.id, i) for i in below[q])}  # fmt: skip
        first_group = [h for h in hits if h.score == hits[0].score]
        rank1 = (
            tail
            if hits[0].score == hits[-1].score
            else {"size": len(first_group), "passing": sum(h.passes for h in first_group)}
        )
        span = ranking.target_span[q]
        out[item.id] = QueryResult(
            item.id, item.domain, rank1["passing"] == rank1["size"],
            int(ranking.target_rank[q]), round(float(ranking.target_score[q]), DECIMALS),
            tuple(hits), outcomes[item.id, int(ranking.indices[q][0])], own_rows,
            scored.code_similarity.get(item.id, {"alternatives": [], "distractors": []}),
            rank1, tail, {"first": int(span[0]), "last": int(span[1])},
        )  # fmt: skip
    return BenchmarkRun(embedder.invocation(), corpus_sha256, len(pool), out, encode_s)


__all__ = ["TIE_POLICY", "BenchmarkRun", "Hit", "QueryResult", "run_benchmark"]
