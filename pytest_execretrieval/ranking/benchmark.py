"""The benchmark run: embed queries and pool, rank the whole pool per query, decide exec@k.

:func:`run_benchmark` runs four steps, each a function of the step before:

1. :func:`index_pool`: the pool in snippet-id order, each query's canonical, own distractors and
   the other snippets that may pass it (they define its entry point in its language);
2. :func:`rank_pool`: every query's ranking over the whole pool (its cost checked first,
   :func:`guard_cost`), the watched snippets' scores and the code-to-code similarities;
3. :func:`plan_outcomes`: whether each listed snippet, and each snippet below the list tied
   with its last score that may pass, passes the query's tests: the outcomes recorded in the
   corpus when the snippet belongs to that query; a snippet that does not define the query's
   entry point fails without running (its language says how: ``missing_entry_point``); any
   other pair is executed in the sandbox;
4. :func:`assemble`: a :class:`~pytest_execretrieval.records.QueryResult` per query.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast

import numpy as np

from .. import embedders
from ..corpus.background import as_entry_point, describe, is_background
from ..corpus.items import BenchmarkItem
from ..corpus.store import DISTRACTOR_KINDS, Corpus, Snippet
from ..embedders import DenseEncoder, Embedder, contract
from ..embedders.cache import EmbeddingCache, Progress, encode_cached, text_key
from ..execution.runner import SuiteRunner
from ..execution.sandbox import SuiteResult
from ..languages import DEFAULT, Language, language
from ..records import (
    CANONICAL,
    DISTRACTOR,
    BenchmarkRun,
    CodeSimilarity,
    Hit,
    Invocation,
    Outcomes,
    OwnDistractorRow,
    QueryResult,
    TieGroup,
    TieSpan,
    passes_all,
)
from .retrieval import DECIMALS, TIE_POLICY, Ranking, RankVectors, normalize, rank_dense, retrieve

TOP_K = 10


def document_text(snippet: Snippet) -> str:
    return snippet.code


def definers(pool: Sequence[Snippet], languages: Sequence[Language]) -> dict[str, list[int]]:
    """Pool positions by the module-level function names their code defines (``languages``:
    each snippet's language, the language of the item it belongs to)."""
    found: dict[str, list[int]] = {}
    for i, (s, lang) in enumerate(zip(pool, languages)):
        for name in sorted(lang.defined_names(s.code)):
            found.setdefault(name, []).append(i)
    return found


@dataclass(frozen=True)
class Scored:
    ranking: Ranking
    code_similarity: dict[str, CodeSimilarity]  # by query id
    # By query id: the cosine of its canonical and the nearest background function (dense
    # embedders with a background pool only).
    nearest_background: dict[str, float] = field(default_factory=dict)


def rank_pool(
    embedder: Embedder,
    items: Sequence[BenchmarkItem],
    pool: Sequence[Snippet],
    targets: Sequence[int],
    watch: Sequence[Sequence[int]],
    alternatives: Sequence[Snippet],
    cache_dir: Path | None,
    progress: Progress | None = None,
    rank: RankVectors = rank_dense,
) -> Scored:
    """Rank the pool for every item's query (:func:`.retrieval.retrieve` dispatches on the
    embedder's contract; a dense encoder's vectors go through the embedding cache and are
    ranked by ``rank``), and the code-to-code similarity of ``alternatives`` when there are
    pool vectors to compare."""
    queries = [item.query for item in items]
    documents = [document_text(s) for s in pool]
    cache = EmbeddingCache(cache_dir, embedder.invocation()) if cache_dir else None
    guard_cost(embedder, items, pool, alternatives, cache)

    def encode(
        encoder: DenseEncoder, texts: Sequence[str], ids: Sequence[str], role: str
    ) -> np.ndarray:
        return encode_cached(encoder, texts, ids, role, cache, progress=progress)

    retrieved = retrieve(
        embedder,
        queries,
        [item.id for item in items],
        documents,
        [s.snippet_id for s in pool],
        targets,
        TOP_K,
        watch,
        encode,
        rank,
    )
    if retrieved.document_vectors is None:  # a lexical scorer: no vectors to compare code with
        return Scored(retrieved.ranking, {})
    encoder = cast(DenseEncoder, embedder)  # pool vectors come from a dense encoder only
    similarity = code_similarity(
        encoder, pool, retrieved.document_vectors, alternatives, cache, progress
    )
    nearest = nearest_background(pool, retrieved.document_vectors)
    return Scored(retrieved.ranking, similarity, nearest)


def nearest_background(pool: Sequence[Snippet], doc_vectors: np.ndarray) -> dict[str, float]:
    """Per query, the code-to-code cosine of its canonical and the nearest background function
    (the near-clone density of real code, as the embedder sees it); {} without a background."""
    background = [i for i, s in enumerate(pool) if is_background(s)]
    if not background:
        return {}
    unit = normalize(doc_vectors, np.float64)
    canonicals = [(s.query_id, i) for i, s in enumerate(pool) if s.kind == CANONICAL]
    others = unit[background]
    return {
        query_id: float(np.round((others @ unit[i]).max(), DECIMALS)) for query_id, i in canonicals
    }


def guard_cost(
    embedder: Embedder,
    items: Sequence[BenchmarkItem],
    pool: Sequence[Snippet],
    alternatives: Sequence[Snippet],
    cache: EmbeddingCache | None,
) -> None:
    """Hosted embedders, before anything is sent: print what the run will send (after the
    cache) and refuse a run over the ``--execretrieval-max-tokens`` budget
    (:class:`..embedders.Metered`); other embedders: nothing."""
    embedders.guard_cost(
        embedder,
        [
            ("document", [document_text(s) for s in pool], [s.snippet_id for s in pool]),
            ("query", [item.query for item in items], [item.id for item in items]),
            (
                "document",
                [document_text(a) for a in alternatives],
                [a.snippet_id for a in alternatives],
            ),
        ],
        cache,
    )


def uncached_texts(
    embedder: Embedder, items: Sequence[BenchmarkItem], pool: Sequence[Snippet], cache_dir: Path
) -> tuple[int, int]:
    """(texts the embedding cache lacks, distinct texts) of a ranking of ``pool`` for ``items``'
    queries: what a dense encoder would encode now; (0, 0) for a lexical scorer."""
    if contract(embedder) is not DenseEncoder:
        return 0, 0
    cache = EmbeddingCache(cache_dir, embedder.invocation())
    missing = total = 0
    for role, texts in (
        ("query", {item.query for item in items}),
        ("document", {document_text(s) for s in pool}),
    ):
        known = cache.load(role)
        total += len(texts)
        missing += sum(text_key(t) not in known for t in texts)
    return missing, total


def code_similarity(
    embedder: DenseEncoder,
    pool: Sequence[Snippet],
    doc_vectors: np.ndarray,
    alternatives: Sequence[Snippet],
    cache: EmbeddingCache | None,
    progress: Progress | None,
) -> dict[str, CodeSimilarity]:
    """Code->code cosine: each canonical against its alternatives and its own distractors."""
    if not alternatives:
        return {}
    alt_vectors = encode_cached(
        embedder,
        [document_text(a) for a in alternatives],
        [a.snippet_id for a in alternatives],
        "document",
        cache,
        progress=progress,
    )
    unit = normalize(doc_vectors)
    alt_unit = normalize(alt_vectors)
    canonical = {s.query_id: i for i, s in enumerate(pool) if s.kind == CANONICAL}
    out: dict[str, CodeSimilarity] = {}
    for i, s in enumerate(pool):
        if s.kind == DISTRACTOR and s.query_id in canonical:
            sim = float(np.round(unit[canonical[s.query_id]] @ unit[i], DECIMALS))
            out.setdefault(s.query_id, _no_similarity())["distractors"].append(sim)
    for j, a in enumerate(alternatives):
        if a.query_id in canonical:
            sim = float(np.round(unit[canonical[a.query_id]] @ alt_unit[j], DECIMALS))
            out.setdefault(a.query_id, _no_similarity())["alternatives"].append(sim)
    return out


def _no_similarity() -> CodeSimilarity:
    return CodeSimilarity(alternatives=[], distractors=[])


@dataclass(frozen=True)
class PoolIndex:
    """The pool as the ranking sees it (step 1 of :func:`run_benchmark`)."""

    items: tuple[BenchmarkItem, ...]  # by item id
    pool: tuple[Snippet, ...]  # by snippet id: the order ties are listed in
    canonical: dict[str, int]  # query id -> pool position of its canonical
    own: dict[str, list[int]]  # query id -> pool positions of its own distractors
    # Per query (in item order): the snippets that may pass it: its canonical and other queries'
    # snippets defining its entry point in its language. Their scores are watched, so a tie
    # reaching below the list is counted exactly.
    may_pass: tuple[list[int], ...]
    background: frozenset[int] = frozenset()  # pool positions of background functions

    def watch(self) -> list[list[int]]:
        """Per query, the positions whose scores the ranking reports: own distractors first."""
        return [self.own.get(item.id, []) + self.may_pass[q] for q, item in enumerate(self.items)]


def index_pool(items: Sequence[BenchmarkItem], corpus: Corpus) -> PoolIndex:
    """Step 1: the pool in snippet-id order and what each query's ranking watches; raises
    ``ValueError`` for items without a canonical in the corpus."""
    ordered = tuple(sorted(items, key=lambda item: item.id))
    pool = tuple(sorted(corpus.snippets, key=lambda s: s.snippet_id))
    canonical = {s.query_id: i for i, s in enumerate(pool) if s.kind == CANONICAL}
    missing = [item.id for item in ordered if item.id not in canonical]
    if missing:
        raise ValueError(f"items without a canonical in the corpus: {missing[:5]}")
    own: dict[str, list[int]] = {}
    for i, s in enumerate(pool):
        if s.kind in DISTRACTOR_KINDS:
            own.setdefault(s.query_id, []).append(i)
    names = {item.id: item.language for item in ordered}
    by_name = definers(pool, [language(names.get(s.query_id, DEFAULT)) for s in pool])
    # A background function may pass any Python query: it runs as the entry point.
    background = [i for i, s in enumerate(pool) if is_background(s)]
    may_pass = tuple(
        sorted(
            {
                i
                for i in by_name.get(item.entry_point, [])
                if names.get(pool[i].query_id, DEFAULT) == item.language
                and (pool[i].kind == CANONICAL or pool[i].query_id != item.id)
            }
            | set(background if item.lang.packages else ())
        )
        for item in ordered
    )
    return PoolIndex(ordered, pool, canonical, own, may_pass, frozenset(background))


# A (query id, pool position) pair's outcome per test of the query.
OutcomePlan = dict[tuple[str, int], Outcomes]


def honest(result: SuiteResult) -> Outcomes:
    """A run's outcomes; a run that is not a pass although every test passed (e.g. it left a
    child process behind) must not read as passing."""
    if result.passed or any(o != "pass" for o in result.outcomes):
        return result.outcomes
    return ("error:Sandbox",) * len(result.outcomes)


def pair_outcomes(item: BenchmarkItem, snippet: Snippet) -> Outcomes | None:
    """The outcomes of ``snippet`` for ``item``'s tests known without running it: recorded in
    the corpus (its own query's) or a missing entry point; ``None``: it must run."""
    if snippet.query_id == item.id:
        return snippet.outcomes
    if is_background(snippet):
        # background functions are in the language of the packages the miner reads
        return None if item.lang.packages else (item.lang.missing_entry_point,) * len(item.tests)
    if not item.lang.defines(snippet.code, item.entry_point):
        return (item.lang.missing_entry_point,) * len(item.tests)
    return None


def suite_code(item: BenchmarkItem, snippet: Snippet) -> str:
    """The code that runs when ``snippet`` answers ``item``'s query: the snippet's own, or a
    background function bound to the entry point (:func:`..corpus.background.as_entry_point`)."""
    if not is_background(snippet):
        return snippet.code
    defines = item.lang.defines(snippet.code, item.entry_point)
    return as_entry_point(snippet, item.entry_point, defines)


def tied_below(index: PoolIndex, ranking: Ranking) -> list[list[int]]:
    """Per query, the snippets below the list that tie with its last score and may pass."""
    below = []
    for q, item in enumerate(index.items):
        listed = set(ranking.indices[q].tolist())
        last = ranking.scores[q][-1] if len(listed) else None
        watched = ranking.watched[q][len(index.own.get(item.id, [])) :]
        below.append(
            [
                i
                for i, score in zip(index.may_pass[q], watched)
                if score == last and i not in listed and ranking.retrieves(q, i)
            ]
        )
    return below


def plan_outcomes(
    index: PoolIndex, ranking: Ranking, below: Sequence[Sequence[int]], runner: SuiteRunner
) -> OutcomePlan:
    """Step 3: the outcomes of every listed pair and every pair tied ``below`` the list:
    recorded or known first (:func:`pair_outcomes`), the rest executed together."""
    pairs = {
        (item.id, int(i))
        for q, item in enumerate(index.items)
        for i in (*ranking.indices[q], *below[q])
    }
    by_id = {item.id: item for item in index.items}
    outcomes: OutcomePlan = {}
    to_run = []
    for query_id, i in sorted(pairs):
        known = pair_outcomes(by_id[query_id], index.pool[i])
        if known is None:
            to_run.append((query_id, i))
        else:
            outcomes[query_id, i] = known
    suites = [
        (suite_code(by_id[q], index.pool[i]), by_id[q].setup, by_id[q].tests, by_id[q].language)
        for q, i in to_run
    ]
    for key, result in zip(to_run, runner.run_many(suites)):
        outcomes[key] = honest(result)
    return outcomes


def _hits(index: PoolIndex, ranking: Ranking, q: int, outcomes: OutcomePlan) -> list[Hit]:
    item = index.items[q]
    hits = []
    for rank, (i, score) in enumerate(zip(ranking.indices[q], ranking.scores[q]), 1):
        s = index.pool[int(i)]
        hits.append(
            Hit(
                rank,
                s.snippet_id,
                s.kind,
                s.operator,
                s.query_id,
                round(float(score), DECIMALS),
                passes_all(outcomes[item.id, int(i)]),
            )
        )
    return hits


def _own_rows(index: PoolIndex, ranking: Ranking, q: int) -> tuple[OwnDistractorRow, ...]:
    own = index.own.get(index.items[q].id, [])
    return tuple(_own_row(index.pool[i], score) for i, score in zip(own, ranking.watched[q]))


def _own_row(s: Snippet, score: float) -> OwnDistractorRow:
    row = OwnDistractorRow(
        snippet_id=s.snippet_id,
        operator=s.operator,
        score=round(score, DECIMALS),
        edit_lines=s.edit_lines,
        edit_chars=s.edit_chars,
        kill=s.kill,
    )
    if s.kind != DISTRACTOR:  # a real bug; a mutant's row has no kind, as before
        row["kind"] = s.kind
    return row


def tie_groups(
    hits: Sequence[Hit], tail_size: int, passing_below: int
) -> tuple[TieGroup, TieGroup]:
    """The rank-1 and the last listed rank's tie groups over the whole pool (``tail_size``:
    the pool's snippets scoring the last listed score; ``passing_below``: those of them below
    the list that pass)."""
    last_group = [h for h in hits if h.score == hits[-1].score]
    tail = TieGroup(size=tail_size, passing=sum(h.passes for h in last_group) + passing_below)
    if hits[0].score == hits[-1].score:
        return tail, tail
    first_group = [h for h in hits if h.score == hits[0].score]
    return TieGroup(size=len(first_group), passing=sum(h.passes for h in first_group)), tail


def background_above(index: PoolIndex, ranking: Ranking, q: int) -> int | None:
    """How many background functions score above query ``q``'s canonical (None: the pool has
    no background). They are all watched (:attr:`PoolIndex.may_pass`), so this is exact. Under
    an approximate first stage only retrieved ones count, and all of them when the canonical was
    not retrieved (it ranks below every candidate)."""
    if not index.background:
        return None
    item = index.items[q]
    watched = ranking.watched[q][len(index.own.get(item.id, [])) :]
    target = ranking.target_score[q]
    dropped = not ranking.retrieves(q, index.canonical[item.id])
    return sum(
        1
        for i, score in zip(index.may_pass[q], watched)
        if i in index.background and ranking.retrieves(q, i) and (dropped or score > target)
    )


def assemble(
    index: PoolIndex, scored: Scored, below: Sequence[Sequence[int]], outcomes: OutcomePlan
) -> dict[str, QueryResult]:
    """Step 4: each query's :class:`QueryResult` from its ranking and the planned outcomes."""
    ranking = scored.ranking
    out = {}
    for q, item in enumerate(index.items):
        hits = _hits(index, ranking, q, outcomes)
        passing_below = sum(passes_all(outcomes[item.id, i]) for i in below[q])
        rank1, tail = tie_groups(hits, int(ranking.tail_ties[q]), passing_below)
        span = ranking.target_span[q]
        out[item.id] = QueryResult(
            item.id,
            item.domain,
            rank1["passing"] == rank1["size"],
            int(ranking.target_rank[q]),
            round(float(ranking.target_score[q]), DECIMALS),
            tuple(hits),
            outcomes[item.id, int(ranking.indices[q][0])],
            _own_rows(index, ranking, q),
            scored.code_similarity.get(item.id, _no_similarity()),
            rank1,
            tail,
            TieSpan(first=int(span[0]), last=int(span[1])),
            background_above(index, ranking, q),
            asdict(item.source) if item.source else None,
            scored.nearest_background.get(item.id),
        )
    return out


def run_benchmark(
    items: Sequence[BenchmarkItem],
    corpus: Corpus,
    corpus_sha256: str,
    embedder: Embedder,
    runner: SuiteRunner,
    cache_dir: Path | None = None,
    progress: Progress | None = None,
    with_code_similarity: bool = False,
    tests: str = "all",
    rank: RankVectors = rank_dense,
) -> BenchmarkRun:
    """Rank the whole pool for every item's query and decide exec@k from the top 10 (the steps:
    module docstring).

    With ``with_code_similarity`` the alternatives are embedded too (about 15% more encoding on the
    bundled set) for the code-to-code analysis; without it that analysis is absent.
    ``tests``: which tests the items carry (``authors``: cut to their authors', for the
    report); ``rank``: how a dense encoder's vectors are ranked (default: exactly)."""
    index = index_pool(items, corpus)
    alternatives = (
        sorted(corpus.alternatives, key=lambda s: s.snippet_id) if with_code_similarity else []
    )
    started = time.perf_counter()
    scored = rank_pool(
        embedder,
        index.items,
        index.pool,
        [index.canonical[item.id] for item in index.items],
        index.watch(),
        alternatives,
        cache_dir,
        progress,
        rank,
    )
    encode_s = time.perf_counter() - started
    below = tied_below(index, scored.ranking)
    outcomes = plan_outcomes(index, scored.ranking, below, runner)
    results = assemble(index, scored, below, outcomes)
    # The embedder's own record (embedders.describe builds it with the report's fixed keys).
    invocation = cast(Invocation, embedder.invocation())
    n = len(index.pool)
    background = describe(index.pool)
    return BenchmarkRun(invocation, corpus_sha256, n, results, encode_s, background, tests)


__all__ = [
    "TIE_POLICY",
    "TOP_K",
    "BenchmarkRun",
    "Hit",
    "PoolIndex",
    "QueryResult",
    "assemble",
    "document_text",
    "guard_cost",
    "honest",
    "index_pool",
    "pair_outcomes",
    "plan_outcomes",
    "rank_pool",
    "run_benchmark",
    "uncached_texts",
    "suite_code",
]
