"""An approximate first stage: candidates from an approximate nearest-neighbour index over the
pool's vectors, re-scored exactly, as a served retrieval system does (``--execretrieval-index``).

**Spec.** ``faiss:FACTORY[,NAME=VALUE...]``: the parts of a faiss ``index_factory`` string
(``HNSW32``; ``IVF1024,PQ48``) and search-time parameters set through faiss's
``ParameterSpace`` (``efSearch=64``, ``nprobe=16``). :func:`parse_spec` checks the spelling
without faiss; :func:`check_spec` also builds the factory at a trial dimension, so a bad part is
named at configure time. The pipeline is named ``<embedder>@<SPEC>`` (:func:`index_name`).

**Build.** The index holds the pool's L2-normalised float32 vectors under inner product (the
cosine). It is built on one thread with the clustering seed :data:`BUILD_SEED`, so the same
vectors always give the same index; an IVF whose ``nlist`` would leave fewer than
:data:`POINTS_PER_LIST` pool vectors per list is clamped, and the reason is recorded. Built
indexes are cached by content (the vectors' sha256, the factory, the faiss version, the seed:
specs differing only in search parameters share one) under ``CACHE_DIR/indexes/``, each file
signed with the user's key (:mod:`..signed_files`: the cache may be committed to a checkout): a
corrupt or foreign file is named and rebuilt, never deserialised, and a deserialised index that
does not hold the pool's shape is named and rebuilt.

**Ranking.** Each query's :data:`CANDIDATES` (at least ``k``) nearest candidates by the index are
re-scored exactly (:func:`.retrieval.pool_scores`: the float64 path's scores, rounded to
:data:`.retrieval.DECIMALS`) and ranked by the same rule (score desc, then pool position).
A document the index did not return is ranked after every candidate: the documents left out
form one tie group below them (the served system has no order for them), so the canonical's
tie span when it was dropped is ``[candidates + 1, pool size]``.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..signed_files import SignedFiles
from .retrieval import Ranking, exact_scores, float32_margin, normalize, pool_scores

__all__ = [
    "BUILD_SEED",
    "CANDIDATES",
    "ApproximateStage",
    "IndexSpec",
    "IndexSpecError",
    "check_spec",
    "index_name",
    "parse_spec",
    "rank_candidates",
]

LIBRARIES = ("faiss",)
CANDIDATES = 100  # the first stage's depth per query (at least the listed k)
BUILD_SEED = 1234  # faiss's clustering seed (k-means of IVF lists and PQ codebooks)
# k-means wants about this many training points per centroid (faiss warns below 39).
POINTS_PER_LIST = 39
CACHE_MAGIC = b"execretrieval-index2"
MAX_CACHED = 16 * 1024**3  # bytes of a cached index read (a float32 Flat of 4M x 1024)
_SEARCH_PARAMETER = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=([0-9]+(?:\.[0-9]+)?)$")
_IVF = re.compile(r"\bIVF([0-9]+)")
_PQ = re.compile(r"\b(?:OPQ|PQ)([0-9]+)")
_FACTORY_PART = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_FAISS_LOCATION = re.compile(r"^Error in .*? at \S+:\d+: ")  # "Error in <function> at <file>: "


class IndexSpecError(ValueError):
    """An ``--execretrieval-index`` spec that cannot be used: the message names the bad part."""


@dataclass(frozen=True)
class IndexSpec:
    text: str  # as the user spelled it: the pipeline's name after '@'
    library: str
    factory: str  # the faiss index_factory string
    search: tuple[tuple[str, float], ...]  # search-time parameters, in the given order

    def invocation(self) -> dict:
        return {
            "spec": self.text,
            "library": self.library,
            "factory": self.factory,
            "search": dict(self.search),
        }


def index_name(embedder: str, spec: str) -> str:
    """``<embedder>@<SPEC>``, the pipeline's name in item ids and report file names."""
    return f"{embedder}@{spec}"


def parse_spec(text: str) -> IndexSpec:
    """The spec's parts; :class:`IndexSpecError` naming the first bad one (no faiss needed)."""
    library, sep, rest = text.strip().partition(":")
    if not sep or library not in LIBRARIES:
        raise IndexSpecError(
            f"{text!r}: an index is LIBRARY:FACTORY[,PARAM=VALUE...] with LIBRARY in "
            f"{', '.join(LIBRARIES)}, e.g. faiss:HNSW32,efSearch=64"
        )
    factory, search = [], []
    for part in rest.split(","):
        part = part.strip()
        if "=" in part:
            matched = _SEARCH_PARAMETER.match(part)
            if not matched:
                raise IndexSpecError(f"{text!r}: {part!r} is not a search parameter NAME=NUMBER")
            search.append((matched[1], float(matched[2])))
        elif search:
            raise IndexSpecError(f"{text!r}: {part!r} follows a search parameter: factory first")
        elif not _FACTORY_PART.match(part):
            raise IndexSpecError(f"{text!r}: {part!r} is not a faiss factory part")
        else:
            factory.append(part)
    if not factory:
        raise IndexSpecError(f"{text!r}: no faiss factory string (e.g. HNSW32 or IVF1024,PQ48)")
    names = [name for name, _ in search]
    if len(set(names)) != len(names):
        raise IndexSpecError(f"{text!r}: a search parameter is given twice")
    return IndexSpec(text.strip(), library, ",".join(factory), tuple(search))


def import_faiss() -> ModuleType:
    """faiss, imported on first use; :class:`IndexSpecError` with the install line if missing."""
    try:
        import faiss
    except ImportError:
        raise IndexSpecError(
            "faiss is not installed: pip install 'pytest-execretrieval[index]' (faiss-cpu)"
        ) from None
    return faiss


def _trial_dim(factory: str) -> int:
    """A dimension every product quantiser of ``factory`` divides."""
    subquantizers = [int(m) for m in _PQ.findall(factory)] or [1]
    return 8 * math.lcm(*subquantizers)


def _make(faiss: ModuleType, spec: IndexSpec, dim: int, factory: str | None = None):
    """The empty index with its search parameters set; :class:`IndexSpecError` naming the part
    faiss refused."""
    factory = factory or spec.factory
    try:
        index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        raise IndexSpecError(
            f"{spec.text!r}: faiss cannot build the factory string {factory!r} at dimension "
            f"{dim}: {_faiss_message(exc)}"
        ) from None
    space = faiss.ParameterSpace()
    for name, value in spec.search:
        try:
            space.set_index_parameter(index, name, value)
        except RuntimeError as exc:
            raise IndexSpecError(
                f"{spec.text!r}: {name}={value:g} does not apply to {factory!r}: "
                f"{_faiss_message(exc)}"
            ) from None
    return index


def _faiss_message(exc: Exception) -> str:
    """The line of a faiss exception that says what went wrong (not its C++ location)."""
    text = " ".join(str(exc).split())
    return _FAISS_LOCATION.sub("", text) or "(no message)"


def check_spec(text: str) -> IndexSpec:
    """:func:`parse_spec`, then faiss builds the factory at a trial dimension and takes every
    search parameter: a bad spec fails at configure time, naming its bad part."""
    spec = parse_spec(text)
    _make(import_faiss(), spec, _trial_dim(spec.factory))
    return spec


def clamped_factory(factory: str, n: int) -> tuple[str, str | None]:
    """``factory`` with an IVF's ``nlist`` clamped so that each list gets about
    :data:`POINTS_PER_LIST` of the ``n`` pool vectors, and why (``None``: unchanged)."""
    matched = _IVF.search(factory)
    if not matched:
        return factory, None
    nlist, most = int(matched[1]), max(1, n // POINTS_PER_LIST)
    if nlist <= most:
        return factory, None
    reason = (
        f"IVF nlist {nlist} clamped to {most}: the pool has {n} vectors and k-means needs "
        f"about {POINTS_PER_LIST} per list"
    )
    return factory[: matched.start(1)] + str(most) + factory[matched.end(1) :], reason


def _seed(faiss: ModuleType, index) -> None:
    """Every clustering of ``index`` (IVF lists, PQ codebooks) starts from :data:`BUILD_SEED`."""
    ivf = faiss.try_extract_index_ivf(index)
    for owner in (ivf, index):
        if owner is None:
            continue
        if hasattr(owner, "cp"):
            owner.cp.seed = BUILD_SEED
        pq = getattr(owner, "pq", None)
        if pq is not None:
            pq.cp.seed = BUILD_SEED


@dataclass
class Built:
    """An index over one pool, and how it came to be (``source``: built, cached, or rebuilt
    because the cached file was corrupt; not in the report, whose bytes must not depend on the
    cache)."""

    index: Any  # a faiss.Index
    factory: str  # the factory string built (after clamping)
    notes: tuple[str, ...]  # what was changed from the spec, and why
    source: str
    seconds: float


def build_index(spec: IndexSpec, unit: np.ndarray) -> Built:
    """The index over the rows of ``unit`` (float32 unit vectors), built on one thread."""
    faiss = import_faiss()
    started = time.perf_counter()
    factory, reason = clamped_factory(spec.factory, len(unit))
    index = _make(faiss, spec, unit.shape[1], factory)
    _seed(faiss, index)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # a parallel HNSW insertion order differs run to run
    try:
        index.train(unit)
        index.add(unit)
    except RuntimeError as exc:
        raise IndexSpecError(
            f"{spec.text!r}: faiss cannot train {factory!r} on this pool of {len(unit)} "
            f"vectors: {_faiss_message(exc)}"
        ) from None
    finally:
        faiss.omp_set_num_threads(threads)
    notes = (reason,) if reason else ()
    return Built(index, factory, notes, "built", time.perf_counter() - started)


def cache_key(spec: IndexSpec, unit: np.ndarray, version: str) -> str:
    """The cached index's name: the vectors' bytes, the factory, the faiss version, the seed
    (search parameters do not change what is built: specs differing only there share it)."""
    digest = hashlib.sha256(np.ascontiguousarray(unit, dtype=np.float32).tobytes())
    digest.update(f"\n{unit.shape}\n{spec.factory}\nfaiss {version}\nseed {BUILD_SEED}".encode())
    return digest.hexdigest()


def _notes_line(notes: Sequence[str]) -> bytes:
    return ("\t".join(notes) + "\n").encode()


def _signed(path: Path) -> SignedFiles:
    return SignedFiles(path.parent, path.parent, CACHE_MAGIC)


def write_cached(path: Path, built: Built) -> None:
    """The index's bytes behind the factory built and the notes, signed with the user's key
    (:class:`..signed_files.SignedFiles`) under the file's name, the index's cache key."""
    faiss = import_faiss()
    payload = faiss.serialize_index(built.index).tobytes()
    body = built.factory.encode() + b"\n" + _notes_line(built.notes) + payload
    _signed(path).write_body(path, path.stem, body)


def read_cached(path: Path, unit: np.ndarray) -> Built | str:
    """The cached index over ``unit``, or why the file cannot be trusted: its signature is
    checked before faiss reads a byte, and what faiss read must hold ``unit``'s shape."""
    started = time.perf_counter()
    body = _signed(path).read_body(path, path.stem, MAX_CACHED)
    if body is None:  # an HMAC cannot tell a flipped byte from another key's signature
        return "does not verify under your key (corrupt, or committed or copied from elsewhere)"
    head = body.split(b"\n", 2)
    if len(head) != 3:
        return "is truncated"
    factory, notes, payload = head
    faiss = import_faiss()
    try:
        index = faiss.deserialize_index(np.frombuffer(payload, dtype=np.uint8))
    except (RuntimeError, ValueError, MemoryError) as exc:
        return f"cannot be read by faiss ({_faiss_message(exc)})"
    problem = _shape_problem(faiss, index, unit)
    if problem:
        return problem
    found = tuple(x for x in notes.decode().split("\t") if x)
    return Built(index, factory.decode(), found, "cached", time.perf_counter() - started)


def _shape_problem(faiss: ModuleType, index: Any, unit: np.ndarray) -> str | None:
    """Why ``index`` is no index over ``unit``'s rows (``None`` when it is): its vector count,
    its dimension, and the positions an id map would return."""
    n, dim = unit.shape
    if index.ntotal != n or index.d != dim:
        return f"holds {index.ntotal} vectors of dimension {index.d}, not the pool's {n} x {dim}"
    id_map = getattr(index, "id_map", None)
    if id_map is not None:
        ids = faiss.vector_to_array(id_map)
        if len(ids) != n or (n and (ids.min() < 0 or ids.max() >= n)):
            return "maps vectors to positions outside the pool"
    return None


def obtain_index(spec: IndexSpec, unit: np.ndarray, cache_dir: Path | None) -> Built:
    """The index over ``unit`` from the cache, or built (and cached); a cached file that cannot
    be trusted is named in the result's ``source`` and rebuilt."""
    if cache_dir is None:
        return build_index(spec, unit)
    faiss = import_faiss()
    path = Path(cache_dir) / "indexes" / f"{cache_key(spec, unit, faiss.__version__)}.faiss"
    problem = None
    if os.path.lexists(path):
        cached = read_cached(path, unit)
        if isinstance(cached, Built):
            return cached
        problem = f"the cached index {path} {cached}: rebuilt"
    built = build_index(spec, unit)
    write_cached(path, built)
    return replace(built, source=problem or "built")


def search(built: Built, spec: IndexSpec, queries: np.ndarray, depth: int) -> np.ndarray:
    """(n_queries, depth) pool positions per query, -1 where the index found fewer."""
    faiss = import_faiss()
    space = faiss.ParameterSpace()
    for name, value in spec.search:
        space.set_index_parameter(built.index, name, value)
    _, found = built.index.search(np.ascontiguousarray(queries, dtype=np.float32), depth)
    return found.astype(np.int64)


def rank_candidates(
    queries: np.ndarray,
    documents: np.ndarray,
    candidates: np.ndarray,
    targets: Sequence[int],
    k: int = 10,
    watch: Sequence[Sequence[int]] | None = None,
) -> Ranking:
    """Rank each query's ``candidates`` (pool positions, -1 for none) by their exact scores,
    under :func:`.retrieval.rank_dense`'s rounding and tie rule; the rest of the pool ranks
    below them as one tie group (module docstring). As in ``rank_dense``, the candidates are
    scored in float32 and only those float32 could misplace are re-scored exactly
    (:func:`_screened_scores`)."""
    q64 = normalize(queries, np.float64)
    n, size = len(q64), len(documents)
    target_pos = np.asarray(targets, dtype=np.int64)
    rows, cols = _unique_candidates(np.asarray(candidates, dtype=np.int64).reshape(n, -1))
    starts = np.searchsorted(rows, np.arange(n + 1))
    retrieved = tuple(frozenset(cols[a:b].tolist()) for a, b in zip(starts[:-1], starts[1:]))
    lengths = np.diff(starts).astype(np.int64)
    listed = min(k, size)
    short = np.flatnonzero(lengths < listed)
    if len(short):
        raise IndexSpecError(
            f"the index returned {lengths[short[0]]} candidates for query row {short[0]} "
            f"(and {len(short) - 1} more rows short), fewer than the {listed} a ranking lists: "
            "search deeper (a larger nprobe or efSearch)"
        )
    target_score = pool_scores(q64, documents, np.arange(n), target_pos)
    if np.isnan(target_score).any():
        raise ValueError("a target or candidate position lies outside the pool")
    scores = _screened_scores(q64, documents, rows, cols, starts, listed, target_score)
    order = _by_row_then_score(rows, scores)
    rows, cols, scores = rows[order], cols[order], scores[order]
    place = starts[:-1, None] + np.arange(listed)[None, :]
    idx, top = cols[place], scores[place]
    last = top[:, -1] if listed else np.full(n, np.nan, np.float32)

    def per_row(mask: np.ndarray) -> np.ndarray:
        return np.bincount(rows[mask], minlength=n).astype(np.int64)

    tail = per_row(scores == last[rows])
    t, ts = target_pos[rows], target_score[rows]
    found = per_row(cols == t) > 0
    # retrieved: the candidates' order; left out: below every candidate, in pool-position order
    above = np.where(found, per_row(scores > ts), lengths)
    ties = np.where(found, per_row(scores == ts), size - lengths)
    before = np.where(found, per_row((scores == ts) & (cols < t)), target_pos - per_row(cols < t))
    rank = 1 + above + before
    watched = _watched(q64, documents, watch, n)
    return Ranking(idx, top, rank, target_score, watched, above, ties, tail, retrieved)


def _unique_candidates(candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (row, pool position) pairs of ``candidates``, each once, -1s dropped, by row and
    position."""
    ordered = np.sort(candidates, axis=1)
    keep = ordered >= 0
    keep[:, 1:] &= ordered[:, 1:] != ordered[:, :-1]
    rows, _ = np.nonzero(keep)
    return rows.astype(np.int64), ordered[keep]


def _screened_scores(
    q64: np.ndarray,
    documents: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    starts: np.ndarray,
    listed: int,
    target_score: np.ndarray,
) -> np.ndarray:
    """Scores of the candidate pairs (by row) that rank them as the exact scores do: float32
    scores, and the float64 path's score wherever float32 could decide differently. With m the
    float32 error bound (:func:`.retrieval.float32_margin`), every pair listed or tied with the
    last listed lies within 2m of the row's k-th float32 score, and a pair decides against the
    target's exact score only within m of it: those pairs are re-scored, and every other pair
    compares with the listed scores and the target's as its exact score would."""
    margin = float32_margin(q64.shape[1])
    wanted, where = np.unique(cols, return_inverse=True)
    d64 = normalize(documents[wanted], np.float64)
    d32, q32 = d64.astype(np.float32), q64.astype(np.float32)
    screen = np.empty(len(rows), dtype=np.float32)
    where = where.reshape(-1)
    for row, (a, b) in enumerate(zip(starts[:-1].tolist(), starts[1:].tolist())):
        screen[a:b] = d32[where[a:b]] @ q32[row]  # one row's candidates stay in cache
    kth = _kth_largest(screen, rows, starts, listed) if listed else None
    wide = screen.astype(np.float64)
    exact = np.abs(wide - target_score[rows]) <= margin
    if kth is not None:
        exact |= wide >= kth[rows] - 2 * margin
    scores = screen
    scores[exact] = exact_scores(q64, d64, rows[exact], where[exact])
    return scores


def _by_row_then_score(rows: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The order of pairs sorted by ``rows`` ascending (already so), then ``scores`` descending,
    ties kept in their order: ``np.lexsort((cols, -scores, rows))`` for pairs ordered by row and
    column, as one stable sort of an int64 key (the float32 bits mapped to a monotone integer)."""
    bits = (scores.astype(np.float32) + np.float32(0)).view(np.int32).astype(np.int64)  # -0 -> 0
    monotone = np.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    return np.argsort(rows.astype(np.int64) * (1 << 33) - monotone, kind="stable")


def _kth_largest(scores: np.ndarray, rows: np.ndarray, starts: np.ndarray, k: int) -> np.ndarray:
    """Each row's k-th largest score (rows hold at least k pairs each), in float64."""
    lengths = np.diff(starts)
    padded = np.full((len(lengths), int(lengths.max(initial=k))), -np.inf, dtype=np.float32)
    padded[rows, np.arange(len(rows)) - starts[rows]] = scores
    return -np.partition(-padded, k - 1, axis=1)[:, k - 1].astype(np.float64)


def _watched(
    q64: np.ndarray, documents: np.ndarray, watch: Sequence[Sequence[int]] | None, n: int
) -> list[list[float]]:
    """The exact scores of the watched positions (retrieved or not), per query."""
    watch = watch or [[] for _ in range(n)]
    rows = np.repeat(np.arange(n), [len(w) for w in watch]).astype(np.int64)
    cols = np.fromiter((i for w in watch for i in w), np.int64, len(rows))
    scores = pool_scores(q64, documents, rows, cols)
    if np.isnan(scores).any():
        raise ValueError("a watched position lies outside the pool")
    bounds = np.cumsum([0, *(len(w) for w in watch)])
    return [scores[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])]


@dataclass
class ApproximateStage:
    """A dense ranking function (:data:`.retrieval.RankVectors`) through an index: it obtains
    the index over the documents it is given (:func:`obtain_index`), searches ``depth``
    candidates per query and re-scores them exactly. What it did stays on the object for the
    report: the index built, the candidates per query, and the seconds each step took."""

    spec: IndexSpec
    cache_dir: Path | None
    depth: int = CANDIDATES
    built: Built | None = None
    candidates: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    seconds: dict[str, float] = field(default_factory=dict)

    def __call__(
        self,
        queries: np.ndarray,
        documents: np.ndarray,
        targets: Sequence[int],
        k: int = 10,
        watch: Sequence[Sequence[int]] | None = None,
    ) -> Ranking:
        started = time.perf_counter()
        unit = normalize(documents, np.float64).astype(np.float32)
        self.built = obtain_index(self.spec, unit, self.cache_dir)
        searched = time.perf_counter()
        depth = min(max(k, self.depth), len(unit))
        self.candidates = search(self.built, self.spec, normalize(queries), depth)
        rescored = time.perf_counter()
        ranking = rank_candidates(queries, documents, self.candidates, targets, k, watch)
        done = time.perf_counter()
        self.seconds = {
            "index": searched - started,
            "search": rescored - searched,
            "rescore": done - rescored,
        }
        return ranking

    def invocation(self) -> dict:
        """The spec, the faiss version, the build seed, the factory built and the depth."""
        built = self.built
        return {
            **self.spec.invocation(),
            "version": import_faiss().__version__,
            "build_seed": BUILD_SEED,
            "build_threads": 1,
            "built_factory": built.factory if built else self.spec.factory,
            "notes": list(built.notes) if built else [],
            "candidates": self.depth,
        }
