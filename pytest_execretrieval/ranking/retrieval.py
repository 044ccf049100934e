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
:func:`rank_dense` gives the same ranking in one pass at float32 speed: each block is scored in
float32, and only the documents whose float32 score lies within :func:`float32_margin` of a
decision (the running k-th score, the target's score) are re-scored in float64 and rounded like the
float64 path (:func:`_rank_dense_float64`, kept as the reference).
:func:`retrieve` is the one place that chooses between the two, by the embedder's contract
(:class:`.embedders.DenseEncoder` or :class:`.embedders.LexicalScorer`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol, cast

import numpy as np

from ..embedders import DenseEncoder, Embedder, LexicalScorer, check_vectors, contract

TIE_POLICY = (
    "scores rounded to 6 decimals; metrics are expected values over random order "
    "within tied scores (listed order: score desc, then snippet_id asc)"
)
# Scores are rounded to this many decimals: BLAS kernels for different block shapes differ in the
# last bits, which would otherwise make exact ties depend on chunking. Dense scores are computed
# in float64 before rounding: float32's error (~1e-7) straddles a rounding boundary for about one
# score in ten, so two tied documents in different blocks could round apart. The float32 path
# therefore decides near a boundary in float64 (see float32_margin).
DECIMALS = 6
# A query row whose band of undecided documents in a block is wider than this share of the block
# is re-scored whole in float64 (a row of the float64 path), which bounds the candidates' memory;
# small blocks always allow MIN_CANDIDATES.
CANDIDATE_SHARE = 1 / 32
MIN_CANDIDATES = 64
# (query, document) pairs re-scored in float64 per step: bounds the gathered vectors' memory
# (and keeps them in cache).
PAIRS_PER_STEP = 1024
# Rows normalised in float64 per step by :func:`unit_rows`, so that the float64 copies stay in
# cache instead of a whole block's going through memory.
NORMALISE_ROWS = 256
# A crowded row's k-th float32 score is first bounded from below by the k-th of its first
# SAMPLE_COLUMNS columns (:func:`kth_largest`).
SAMPLE_COLUMNS = 4096


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
    # Per query, the pool positions a first stage retrieved (an approximate index's candidates,
    # :mod:`.index`); None: the whole pool was ranked.
    retrieved: tuple[frozenset[int], ...] | None = None

    def retrieves(self, q: int, position: int) -> bool:
        """Whether query ``q``'s ranking saw pool ``position`` (always, ranking the whole pool)."""
        return self.retrieved is None or position in self.retrieved[q]

    @property
    def target_span(self) -> np.ndarray:
        """(n_queries, 2): the first and last 1-based rank the target's tie group spans."""
        return np.stack([self.target_above + 1, self.target_above + self.target_ties], axis=1)


def normalize(vectors: np.ndarray, dtype: type = np.float32) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=dtype)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1, norms)).astype(dtype, copy=False)


def unit_rows(vectors: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``normalize(vectors, np.float64).astype(np.float32)`` into ``out``, the same values (each
    row is normalised on its own), :data:`NORMALISE_ROWS` rows at a time."""
    for start in range(0, len(vectors), NORMALISE_ROWS):
        out[start : start + NORMALISE_ROWS] = normalize(
            vectors[start : start + NORMALISE_ROWS], np.float64
        )
    return out


def unit_rows64(vectors: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``normalize(vectors[positions], np.float64)``, the same values, :data:`NORMALISE_ROWS` rows
    at a time."""
    out = np.empty((len(positions), vectors.shape[1]), dtype=np.float64)
    for start in range(0, len(positions), NORMALISE_ROWS):
        out[start : start + NORMALISE_ROWS] = normalize(
            vectors[positions[start : start + NORMALISE_ROWS]], np.float64
        )
    return out


def row_counts(mask: np.ndarray) -> np.ndarray:
    """The True entries of each row of a 2-d boolean array (``count_nonzero(axis=1)``, faster)."""
    return mask.view(np.uint8).sum(axis=1, dtype=np.int32).astype(np.int64)


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


def _rank_dense_float64(
    queries: np.ndarray,
    documents: np.ndarray,
    targets: Sequence[int],
    k: int = 10,
    chunk: int = 65536,
    watch: Sequence[Sequence[int]] | None = None,
) -> Ranking:
    """The reference: every score in float64, rounded, two passes (:func:`rank_dense` equals it)."""
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


def float32_margin(dim: int) -> float:
    """A bound on |float32 score - float64 path's score| for vectors of ``dim`` dimensions.

    Both paths normalise in float64, each row on its own (:func:`unit_rows` gives the same values
    in pieces); the float32 path casts the unit vectors to float32, so each
    component carries a relative error c <= u32 + (dim + 4) * u64 (the cast plus float64's
    normalisation). The exact dot of the cast vectors then differs from the exact cosine by at
    most (2c + c^2) * sum|q_i x_i| <= 2c + c^2 (Cauchy-Schwarz on unit vectors), and sgemm's sum of
    ``dim`` products, in any order, adds at most gamma_dim * (1 + c)^2 with
    gamma_dim = dim * u32 / (1 - dim * u32) (Higham, Accuracy and Stability, 3.1). The float64
    path's score is its own float64 product (within (3 * dim + 16) * u64 of the cosine) rounded to
    DECIMALS (half a unit of the last decimal) and cast to float32 (u32 for |score| <= 1).
    """
    u32, u64 = 2.0**-24, 2.0**-53
    c = u32 + (dim + 4) * u64
    gamma = dim * u32 / (1 - dim * u32)
    float32_error = gamma * (1 + c) ** 2 + 2 * c + c**2
    float64_score_error = (3 * dim + 16) * u64 + 0.5 * 10.0**-DECIMALS + u32
    return float32_error + float64_score_error


def _below(bound: np.ndarray) -> np.ndarray:
    """float32 values at most ``bound`` (a float64 bound), so that no candidate is missed."""
    return np.nextafter(bound.astype(np.float32), np.float32(-np.inf))


def _above(bound: np.ndarray) -> np.ndarray:
    """float32 values at least ``bound``."""
    return np.nextafter(bound.astype(np.float32), np.float32(np.inf))


def exact_scores(
    q64: np.ndarray, d64: np.ndarray, rows: np.ndarray, cols: np.ndarray
) -> np.ndarray:
    """The float64 path's scores of the pairs (q64[rows], d64[cols]): float64 products rounded to
    DECIMALS, as float32. (This product may differ from the float64 path's dgemm in its last bits,
    which matters only within ~1e-16 of a rounding midpoint, as between its block shapes.)"""
    out = np.empty(len(rows), dtype=np.float32)
    for start in range(0, len(rows), PAIRS_PER_STEP):
        r, c = rows[start : start + PAIRS_PER_STEP], cols[start : start + PAIRS_PER_STEP]
        out[start : start + len(r)] = np.round(np.einsum("ij,ij->i", q64[r], d64[c]), DECIMALS)
    return out


def pool_scores(
    q64: np.ndarray, documents: np.ndarray, rows: np.ndarray, positions: np.ndarray
) -> np.ndarray:
    """Exact scores of (query row, pool position) pairs; nan where a position lies outside the
    pool."""
    inside = (positions >= 0) & (positions < len(documents))
    scores = np.full(len(positions), np.nan, dtype=np.float32)
    wanted, where = np.unique(positions[inside], return_inverse=True)
    d64 = unit_rows64(documents, wanted)
    scores[inside] = exact_scores(q64, d64, rows[inside], where.reshape(-1))
    return scores


@dataclass(frozen=True)
class Candidates:
    """One block's undecided documents, re-scored in float64, per query row.

    ``rows``/``cols``/``scores``: the sparse candidates (block columns) of the rows scored in
    float32, ``near_target`` marks those within the margin of the row's target score;
    ``sure_above``: per row, the documents whose float32 score is above the target's beyond doubt;
    ``dense_rows``/``dense``: the rows with too many candidates, re-scored whole in float64."""

    rows: np.ndarray
    cols: np.ndarray
    scores: np.ndarray
    near_target: np.ndarray
    sure_above: np.ndarray
    dense_rows: np.ndarray
    dense: np.ndarray


def listing_floor(
    block32: np.ndarray, listed_last: np.ndarray, full: bool, k: int, margin: float, cap: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, a float32 score below which no document of this block can be listed or tie with
    the final last listed score, and the mask of the block's scores at or above it.

    Such a document's score is at least the running last listed score (if the list is full) and
    at least the block's own k-th score, which is at least the block's k-th float32 score minus
    the margin. The k-th float32 score (:func:`kth_largest`) is found only for the rows the first
    bound leaves crowded (every row of the first block).
    """
    n, width = block32.shape
    floor = np.full(n, -np.inf, dtype=np.float32)
    if full:
        floor = _below(listed_last.astype(np.float64) - margin)
    listed = block32 >= floor[:, None]
    if width <= k:
        return floor, listed
    crowded = np.flatnonzero(row_counts(listed) > cap)
    if len(crowded):
        kth = kth_largest(block32, crowded, k, cap)
        floor[crowded] = np.maximum(floor[crowded], _below(kth.astype(np.float64) - 2 * margin))
        if len(crowded) == n:
            np.greater_equal(block32, floor[:, None], out=listed)
        else:
            listed[crowded] = block32[crowded] >= floor[crowded, None]
    return floor, listed


def kth_largest(block32: np.ndarray, rows: np.ndarray, k: int, cap: int) -> np.ndarray:
    """The k-th largest score of each of ``rows`` (ascending, ``k`` < the block's width), as
    ``np.partition`` of the whole row finds it, without partitioning whole rows.

    The k-th largest of a row's first :data:`SAMPLE_COLUMNS` scores is at most the row's k-th
    largest, so the row's k largest scores are among those at least that good; these (a few times
    ``k`` for scores in no particular order) are sorted per row. A row with more than ``cap`` of
    them (many ties) is partitioned whole."""
    n, width = block32.shape
    every = len(rows) == n
    sample = max(k, min(width, SAMPLE_COLUMNS))
    head = block32[:, :sample] if every else block32[rows, :sample]
    lower = np.partition(head, sample - k, axis=1)[:, sample - k]
    whole = block32 if every else block32[rows]
    good = whole >= lower[:, None]
    many = row_counts(good) > cap
    kth = np.empty(len(rows), dtype=np.float32)
    if many.any():
        crowded = np.flatnonzero(many)
        kth[crowded] = np.partition(whole[crowded], width - k, axis=1)[:, width - k]
        good[crowded] = False
    flat = np.flatnonzero(good)
    at, scores = flat // width, whole.reshape(-1)[flat]
    order = np.lexsort((-scores, at))  # by row, best first
    starts = np.searchsorted(at[order], np.flatnonzero(~many))
    kth[~many] = scores[order][starts + k - 1]
    return kth


def candidates(
    block32: np.ndarray,
    q64: np.ndarray,
    part: np.ndarray,
    listed: np.ndarray,
    target_score: np.ndarray,
    margin: float,
    cap: int,
) -> Candidates:
    """The documents of this block (``part``, as given) whose float32 score cannot decide the
    ranking: at or above the row's listing floor (``listed``, the mask :func:`listing_floor`
    gives; this reuses it), or within ``margin`` of the row's target score, re-scored in float64
    (:func:`pool_scores`; a row with over ``cap`` of them, in full)."""
    width = block32.shape[1]
    target = target_score.astype(np.float64)
    above_target = block32 > _above(target + margin)[:, None]
    near_target = block32 >= _below(target - margin)[:, None]
    near_target ^= above_target  # the upper bound is above the lower, so this removes them
    wanted = np.logical_or(listed, near_target, out=listed)
    dense_rows = np.flatnonzero(row_counts(wanted) > cap)
    wanted[dense_rows] = False
    flat = np.flatnonzero(wanted)
    rows, cols = flat // width, flat % width
    sure_above = row_counts(above_target)
    sure_above[dense_rows] = 0
    dense = np.zeros((0, width), dtype=np.float32)
    if len(dense_rows):
        d64 = normalize(part, np.float64)
        dense = np.round(q64[dense_rows] @ d64.T, DECIMALS).astype(np.float32)
    return Candidates(
        rows,
        cols,
        pool_scores(q64, part, rows, cols),
        near_target.reshape(-1)[flat],
        sure_above,
        dense_rows,
        dense,
    )


def candidate_top(found: Candidates, n: int, k: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best ``k`` candidates by (score desc, position asc), padded with -inf scores."""
    idx = np.full((n, k), -1, dtype=np.int64)
    score = np.full((n, k), -np.inf, dtype=np.float32)
    order = np.lexsort((found.cols, -found.scores, found.rows))
    rows, cols, scores = found.rows[order], found.cols[order], found.scores[order]
    place = np.arange(len(rows)) - np.searchsorted(rows, rows)  # the rank within its row
    keep = place < k
    idx[rows[keep], place[keep]] = cols[keep] + offset
    score[rows[keep], place[keep]] = scores[keep]
    if len(found.dense_rows):
        dense_idx, dense_score = block_top(found.dense, offset, k)
        idx[found.dense_rows, : dense_idx.shape[1]] = dense_idx
        score[found.dense_rows, : dense_idx.shape[1]] = dense_score
    return idx, score


def candidate_counts(
    found: Candidates,
    offset: int,
    targets: np.ndarray,
    target_score: np.ndarray,
    last_score: np.ndarray,
) -> np.ndarray:
    """:func:`counts` of one block from its candidates: the documents they leave out are above
    the target beyond doubt (``sure_above``) or can neither reach it nor the last listed score."""
    n = len(targets)
    rows, positions, scores = found.rows, found.cols + offset, found.scores
    ts = target_score[rows]
    greater = found.near_target & (scores > ts)
    equal = found.near_target & (scores == ts)
    before = greater | (equal & (positions < targets[rows]))
    tail = scores == last_score[rows]
    total = np.stack(
        [np.bincount(rows[m], minlength=n) for m in (before, greater, equal, tail)], axis=1
    ).astype(np.int64)
    total[:, :2] += found.sure_above[:, None]
    dense = found.dense_rows
    if len(dense):
        total[dense] += counts(
            found.dense, offset, targets[dense], target_score[dense], last_score[dense]
        )
    return total


class Listing:
    """The running top ``k`` over the blocks seen (padded with -inf scores while fewer than ``k``
    documents were seen), and how many of the documents seen score equal to its last listed
    score: all of them scoring above the previous last listed score are listed, so the count
    carries over or is recounted from the previous list."""

    def __init__(self, n: int, k: int):
        self.k, self.seen = k, 0
        self.idx = np.full((n, k), -1, dtype=np.int64)
        self.scores = np.full((n, k), -np.inf, dtype=np.float32)
        self.tail = np.zeros(n, dtype=np.int64)

    @property
    def full(self) -> bool:
        return self.seen >= self.k

    def last(self) -> np.ndarray:
        return last_listed(self.scores[:, : min(self.k, self.seen)])

    def add(
        self,
        idx: np.ndarray,
        scores: np.ndarray,
        width: int,
        block_counts: Callable[[np.ndarray], np.ndarray],
    ) -> np.ndarray:
        """Merge a block's top ``k``; ``block_counts(last listed score)`` gives the block's four
        :func:`counts`, which are returned."""
        previous, previous_last = self.scores, self.last()
        self.idx, self.scores = merge(self.idx, self.scores, idx, scores, self.k)
        self.seen += width
        last = self.last()
        found = block_counts(last)
        recounted = np.count_nonzero(previous == last[:, None], axis=1)
        self.tail = np.where(last == previous_last, self.tail, recounted) + found[:, 3]
        return found

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        length = min(self.k, self.seen)
        return self.idx[:, :length], self.scores[:, :length]


def rank_dense(
    queries: np.ndarray,
    documents: np.ndarray,
    targets: Sequence[int],
    k: int = 10,
    chunk: int = 65536,
    watch: Sequence[Sequence[int]] | None = None,
) -> Ranking:
    """Rank the pool for each query, exactly as :func:`_rank_dense_float64` does, in one pass of
    float32 blocks (see :func:`float32_margin`).

    Beyond a bare float32 top k (``queries @ block.T`` and a partition, on vectors normalised
    beforehand) it normalises each block (in float64, then cast), decides in float64 every
    document whose float32 score lies within the margin of a decision (the running k-th score or
    the target's score), and counts per query the documents above and tied with its target (its
    rank and tie group) and tied with the last listed score, which the tie-aware metrics need.
    Per block, after the matmul, that is a few comparison passes over the float32 scores and the
    float64 re-scoring of a few dozen documents per query; no block is partitioned whole except
    rows crowded by ties (:func:`kth_largest`)."""
    return _rank_dense_float32(queries, documents, targets, k, chunk, watch)


def _rank_dense_float32(
    queries: np.ndarray,
    documents: np.ndarray,
    targets: Sequence[int],
    k: int = 10,
    chunk: int = 65536,
    watch: Sequence[Sequence[int]] | None = None,
    max_candidates: int | None = None,
) -> Ranking:
    """:func:`rank_dense`; ``max_candidates`` (default: a share of the block) is the most
    candidates a row may have in a block before it is re-scored whole in float64."""
    q64 = normalize(queries, np.float64)
    q32 = q64.astype(np.float32)
    n = len(q64)
    target_pos = np.asarray(targets, dtype=np.int64)
    target_score = pool_scores(q64, documents, np.arange(n), target_pos)
    if np.isnan(target_score).any():
        raise ValueError("a target position lies outside the pool")
    watched = Watch(watch, n)
    watched.scores = pool_scores(q64, documents, watched.rows, watched.cols)
    margin = float32_margin(q64.shape[1])
    listing = Listing(n, k)
    total = np.zeros((n, 4), dtype=np.int64)
    most = min(chunk, len(documents))  # the buffers below are reused by every block
    units = np.empty((most, q64.shape[1]), dtype=np.float32)
    products = np.empty(n * most, dtype=np.float32)
    for offset in range(0, len(documents), chunk):
        part = documents[offset : offset + chunk]
        width = len(part)
        d32 = unit_rows(part, units[:width])
        block32 = np.matmul(q32, d32.T, out=products[: n * width].reshape(n, width))
        cap = max_candidates
        if cap is None:
            cap = max(MIN_CANDIDATES, int(width * CANDIDATE_SHARE))
        _, listed = listing_floor(block32, listing.last(), listing.full, k, margin, cap)
        found = candidates(block32, q64, part, listed, target_score, margin, cap)
        block_counts = partial(candidate_counts, found, offset, target_pos, target_score)
        total += listing.add(*candidate_top(found, n, k, offset), width, block_counts)
    idx, scores = listing.result()
    return Ranking(
        idx,
        scores,
        1 + total[:, 0],
        target_score,
        watched.result(),
        total[:, 1],
        total[:, 2],
        listing.tail,
    )


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


class RankVectors(Protocol):
    """How dense vectors are ranked: :func:`rank_dense`, or an approximate first stage
    (:class:`.index.ApproximateStage`)."""

    def __call__(
        self,
        queries: np.ndarray,
        documents: np.ndarray,
        targets: Sequence[int],
        k: int = 10,
        *,
        watch: Sequence[Sequence[int]] | None = None,
    ) -> Ranking: ...


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
    rank: RankVectors = rank_dense,
) -> Retrieved:
    """Rank ``documents`` for each query by the embedder's contract: a
    :class:`~.embedders.LexicalScorer`'s score rows go to :func:`rank_rows`; a
    :class:`~.embedders.DenseEncoder`'s vectors (documents first, then queries, through
    ``encode``) go to ``rank`` (:func:`rank_dense`, or an approximate first stage).
    :class:`.embedders.EmbedderError` when the embedder satisfies neither contract."""
    if contract(embedder) is LexicalScorer:
        scorer = cast(LexicalScorer, embedder)  # contract() checked the members
        return Retrieved(rank_rows(scorer.score(queries, documents), targets, k, watch), None)
    encoder = cast(DenseEncoder, embedder)
    document_vectors = encode(encoder, documents, document_ids, "document")
    query_vectors = encode(encoder, queries, query_ids, "query")
    ranking = rank(query_vectors, document_vectors, targets, k, watch=watch)
    return Retrieved(ranking, document_vectors)
