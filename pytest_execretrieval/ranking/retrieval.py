"""Exact top-k ranking in bounded memory.

Scores are rounded to :data:`DECIMALS` decimals for every embedder (cosine and BM25 alike); equal
rounded scores are a tie. The listed order breaks ties by pool position (the pool is sorted by
snippet_id, so ties go to the smaller snippet_id), but no metric relies on that order: the
ranking also reports the size of every tie that matters (the canonical's tie group, the group at
the last listed rank), and the metrics average over tie orders (:mod:`.metrics`).
Dense scores (cosine of L2-normalised vectors) are computed in blocks of the pool and merged into
a running top-k, so the full query x pool matrix never exists; a second pass over the same blocks
counts, per query, the documents scoring above and equal to its target (the canonical) and equal
to its k-th score. Lexical scorers (BM25) hand over blocks of whole rows instead.
:func:`retrieve` is the one place that chooses between the two, by the embedder's contract
(:class:`.embedders.DenseEncoder` or :class:`.embedders.LexicalScorer`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from ..embedders import DenseEncoder, Embedder, LexicalScorer, check_vectors, contract

TIE_POLICY = (
    "scores rounded to 6 decimals; metrics are expected values over random order "
    "within tied scores (listed order: score desc, then snippet_id asc)"
)
# Scores are rounded to this many decimals: BLAS kernels for different block shapes differ in the
# last bits, which would otherwise make exact ties depend on chunking. Dense scores are computed
# in float64 before rounding: float32's error (~1e-7) straddles a rounding boundary for about one
# score in ten, so two tied documents in different blocks could round apart.
DECIMALS = 6


@dataclass(frozen=True)
class Ranking:
    indices: np.ndarray  # (n_queries, k) pool positions, best first
    scores: np.ndarray  # (n_queries, k)
    target_rank: np.ndarray  # (n_queries,) 1-based rank of each query's target in the whole pool
    target_score: np.ndarray  # (n_queries,)
    watched: list[list[float]]  # per query, the scores of its watched positions, in order
    target_above: np.ndarray  # (n_queries,) documents scoring strictly above the target
    target_ties: np.ndarray  # (n_queries,) documents scoring equal to the target, itself included
    tail_ties: np.ndarray  # (n_queries,) documents scoring equal to the last listed score

    @property
    def target_span(self) -> np.ndarray:
        """(n_queries, 2): the first and last 1-based rank the target's tie group spans."""
        return np.stack([self.target_above + 1, self.target_above + self.target_ties], axis=1)


def normalize(vectors: np.ndarray, dtype: type = np.float32) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=dtype)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1, norms)).astype(dtype, copy=False)


def merge(
    idx_a: np.ndarray, score_a: np.ndarray, idx_b: np.ndarray, score_b: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` of two candidate sets per row, by (score desc, position asc)."""
    idx = np.concatenate([idx_a, idx_b], axis=1)
    score = np.concatenate([score_a, score_b], axis=1)
    order = np.lexsort((idx, -score), axis=1)[:, :k]
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(score, order, axis=1)


def block_top(block: np.ndarray, offset: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` of one block, exact under the tie rule.

    A partition finds each row's k-th best score; every entry at least that good (ties
    included) is a candidate, and only the candidates are sorted by (score desc, position asc).
    """
    n, width = block.shape
    if width <= k:
        idx = np.argsort(-block, axis=1, kind="stable")
        return idx + offset, np.take_along_axis(block, idx, axis=1)
    kth = np.partition(block, width - k, axis=1)[:, width - k]
    rows, cols = np.nonzero(block >= kth[:, None])
    order = np.lexsort((cols, -block[rows, cols], rows))
    rows, cols = rows[order], cols[order]
    starts = np.searchsorted(rows, np.arange(n))
    keep = np.arange(len(rows)) - starts[rows] < k
    idx = cols[keep].reshape(n, k)
    return idx + offset, np.take_along_axis(block, idx, axis=1)


def counts(
    block: np.ndarray,
    offset: int,
    targets: np.ndarray,
    target_score: np.ndarray,
    last_score: np.ndarray,
) -> np.ndarray:
    """Per row of this block, four counts: documents ranked before the row's target (the tie
    rule), scoring above it, scoring equal to it, and scoring equal to ``last_score``."""
    ts = target_score[:, None]
    positions = np.arange(offset, offset + block.shape[1])[None, :]
    greater, equal = block > ts, block == ts
    before = greater | (equal & (positions < targets[:, None]))
    tail = block == last_score[:, None]
    return np.stack([m.sum(axis=1) for m in (before, greater, equal, tail)], axis=1)


class Watch:
    """Scores of chosen (query, position) pairs, read from the same blocks as the ranking so that
    they compare exactly with the ranked scores."""

    def __init__(self, watch: Sequence[Sequence[int]] | None, n: int):
        watch = watch or [[] for _ in range(n)]
        self.shape = [len(w) for w in watch]
        self.rows = np.repeat(np.arange(n), self.shape).astype(np.int64)
        self.cols = np.concatenate(
            [np.asarray(w, np.int64) for w in watch] or [np.zeros(0, np.int64)]
        )
        self.cols = self.cols.astype(np.int64)
        self.scores = np.full(len(self.cols), np.nan, dtype=np.float32)

    def see(self, block: np.ndarray, offset: int, row_offset: int = 0) -> None:
        rows = self.rows - row_offset
        inside = (rows >= 0) & (rows < block.shape[0])
        inside &= (self.cols >= offset) & (self.cols < offset + block.shape[1])
        self.scores[inside] = block[rows[inside], self.cols[inside] - offset]

    def result(self) -> list[list[float]]:
        if np.isnan(self.scores).any():
            raise ValueError("a watched position lies outside the pool")
        bounds = np.cumsum([0, *self.shape])
        return [self.scores[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])]


def rank_dense(
    queries: np.ndarray,
    documents: np.ndarray,
    targets: Sequence[int],
    k: int = 10,
    chunk: int = 65536,
    watch: Sequence[Sequence[int]] | None = None,
) -> Ranking:
    q = normalize(queries, np.float64)
    target_pos = np.asarray(targets, dtype=np.int64)
    n = len(q)

    def blocks() -> Iterator[tuple[int, np.ndarray]]:
        for start in range(0, len(documents), chunk):
            block = q @ normalize(documents[start : start + chunk], np.float64).T
            yield start, np.round(block, DECIMALS).astype(np.float32)

    best_idx, best_score = np.zeros((n, 0), np.int64), np.zeros((n, 0), np.float32)
    target_score = np.full(n, np.nan, dtype=np.float32)
    watched = Watch(watch, n)
    for offset, block in blocks():
        inside = (target_pos >= offset) & (target_pos < offset + block.shape[1])
        target_score[inside] = block[inside, target_pos[inside] - offset]
        watched.see(block, offset)
        best_idx, best_score = merge(best_idx, best_score, *block_top(block, offset, k), k)
    if np.isnan(target_score).any():
        raise ValueError("a target position lies outside the pool")
    total = np.zeros((n, 4), dtype=np.int64)
    last = last_listed(best_score)
    for offset, block in blocks():
        total += counts(block, offset, target_pos, target_score, last)
    return Ranking(
        best_idx,
        best_score,
        1 + total[:, 0],
        target_score,
        watched.result(),
        total[:, 1],
        total[:, 2],
        total[:, 3],
    )


def last_listed(scores: np.ndarray) -> np.ndarray:
    """Each row's last listed score (nan for an empty list, which equals nothing)."""
    if scores.shape[1] == 0:
        return np.full(scores.shape[0], np.nan, dtype=np.float32)
    return scores[:, -1]


def rank_rows(
    row_blocks: Iterable[np.ndarray],
    targets: Sequence[int],
    k: int = 10,
    watch: Sequence[Sequence[int]] | None = None,
) -> Ranking:
    """Rank from blocks of complete score rows (consecutive queries, every pool column); the
    scores are rounded like dense ones (in float64)."""
    target_pos = np.asarray(targets, dtype=np.int64)
    watched = Watch(watch, len(target_pos))
    parts = []
    start = 0
    for block in row_blocks:
        block = np.round(np.asarray(block, dtype=np.float64), DECIMALS).astype(np.float32)
        t = target_pos[start : start + len(block)]
        ts = block[np.arange(len(block)), t]
        watched.see(block, 0, row_offset=start)
        idx, score = block_top(block, 0, k)
        c = counts(block, 0, t, ts, last_listed(score))
        parts.append((idx, score, 1 + c[:, 0], ts, c[:, 1], c[:, 2], c[:, 3]))
        start += len(block)
    if start != len(target_pos):
        raise ValueError(f"scorer returned {start} rows for {len(target_pos)} queries")
    idx, score, rank, ts, above, ties, tail = (np.concatenate(p) for p in zip(*parts))
    return Ranking(idx, score, rank, ts, watched.result(), above, ties, tail)


# (encoder, texts, ids, role) -> one vector per text, in order (e.g. through the embedding cache)
Encode = Callable[[DenseEncoder, Sequence[str], Sequence[str], str], np.ndarray]


def encode_directly(
    encoder: DenseEncoder, texts: Sequence[str], ids: Sequence[str], role: str
) -> np.ndarray:
    """``encoder.encode`` in one call, its vectors validated (:func:`.embedders.check_vectors`)."""
    return check_vectors(encoder.encode(texts, role, ids), len(texts), f"{encoder.name} ({role})")


@dataclass(frozen=True)
class Retrieved:
    ranking: Ranking
    document_vectors: np.ndarray | None  # a dense encoder's pool vectors; None for a scorer


def retrieve(
    embedder: Embedder,
    queries: Sequence[str],
    query_ids: Sequence[str],
    documents: Sequence[str],
    document_ids: Sequence[str],
    targets: Sequence[int],
    k: int = 10,
    watch: Sequence[Sequence[int]] | None = None,
    encode: Encode = encode_directly,
) -> Retrieved:
    """Rank ``documents`` for each query by the embedder's contract: a
    :class:`~.embedders.LexicalScorer`'s score rows go to :func:`rank_rows`; a
    :class:`~.embedders.DenseEncoder`'s vectors (documents first, then queries, through
    ``encode``) go to :func:`rank_dense`. :class:`.embedders.EmbedderError` when the embedder
    satisfies neither contract."""
    if contract(embedder) is LexicalScorer:
        scorer = cast(LexicalScorer, embedder)  # contract() checked the members
        return Retrieved(rank_rows(scorer.score(queries, documents), targets, k, watch), None)
    encoder = cast(DenseEncoder, embedder)
    document_vectors = encode(encoder, documents, document_ids, "document")
    query_vectors = encode(encoder, queries, query_ids, "query")
    ranking = rank_dense(query_vectors, document_vectors, targets, k, watch=watch)
    return Retrieved(ranking, document_vectors)
