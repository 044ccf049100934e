"""Embeddings as a vector database stores them (``--execretrieval-quantize``,
``--execretrieval-dims``): the float32 vectors of the embedding cache, truncated and/or quantised,
ranked by the score the database computes on its codes.

**Truncation** (``dims``, Matryoshka): the first N dimensions of every vector, renormalised; the
truncated vectors are ranked like any dense vectors (:func:`.retrieval.rank_dense`, or an index).

**Precisions.** Every vector is L2-normalised first (the float32 pipeline ranks by cosine), then
coded by sentence-transformers' ``quantize_embeddings``:

* ``int8``: scalar quantisation, per dimension 256 buckets between the minimum and maximum of the
  pool's document vectors (the calibration set; queries are coded with the same ranges); the score
  is the inner product of the int8 codes, an integer (exact in float32 up to 1024 dimensions).
* ``binary``: one bit per dimension (``precision="ubinary"``, the sign); the score is the share of
  equal bits, ``1 - hamming / dims``: higher means fewer differing bits.
* ``binary-rescore``: the ``binary`` ranking's top :data:`OVERSAMPLE` x k (every document tying
  the last of them included) re-scored exactly with the float32 vectors, as Qdrant and Weaviate
  rescore binary candidates with the stored original vectors; the rest of the pool ranks below
  them as one tie group (:func:`.index.rank_candidates`, the index's rule).

Codes tie far more often than floats: every score is ranked by :func:`.retrieval.rank_rows` (or
the candidates' rule), which counts tie groups exactly, so the tie-aware metrics never reward a
lucky order.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .retrieval import Ranking, RankVectors, normalize, rank_dense, rank_rows

__all__ = [
    "OVERSAMPLE",
    "PRECISIONS",
    "Quantization",
    "QuantizeError",
    "QuantizedStage",
    "binary_codes",
    "binary_scores",
    "int8_codes",
    "int8_scores",
    "parse_quantization",
    "truncate",
]

PRECISIONS = ("int8", "binary", "binary-rescore")
OVERSAMPLE = 4  # binary-rescore's candidates per listed rank (sentence-transformers' default)
ROWS_PER_BLOCK = 64  # query rows scored at once against the whole pool
INT8_EXACT_DIMS = 1024  # |int8 . int8| <= 128 * 128 * 1024 = 2**24: exact in float32
_DIMS = re.compile(r"^d([1-9][0-9]*)$")


class QuantizeError(ValueError):
    """A quantisation that cannot apply: an unknown precision, more dimensions than the vectors
    have, or a lexical scorer (no vectors)."""


@dataclass(frozen=True)
class Quantization:
    """One serving choice for stored vectors: truncation to ``dims`` and/or a ``precision``."""

    precision: str | None = None  # one of PRECISIONS; None: float32
    dims: int | None = None  # Matryoshka truncation; None: every dimension

    def __post_init__(self) -> None:
        if self.precision is None and self.dims is None:
            raise QuantizeError("a quantisation needs a precision or a dimension count")
        if self.precision is not None and self.precision not in PRECISIONS:
            raise QuantizeError(
                f"{self.precision!r} is not a precision: one of {', '.join(PRECISIONS)}"
            )
        if self.dims is not None and self.dims < 1:
            raise QuantizeError(f"dims {self.dims} is not a positive number")

    @property
    def text(self) -> str:
        """The pipeline name's part after ``~``: ``int8``, ``binary``, ``d256``, ``d256-int8``."""
        parts = [f"d{self.dims}" if self.dims else "", self.precision or ""]
        return "-".join(p for p in parts if p)

    def invocation(self) -> dict:
        record: dict = {"precision": self.precision or "float32", "dims": self.dims}
        if self.precision:
            record["library"] = "sentence-transformers quantize_embeddings"
            record["version"] = _st_version()
        if self.precision == "int8":
            record["calibration"] = "the pool's document vectors"
        if self.precision == "binary-rescore":
            record["rescore"] = f"float32, top {OVERSAMPLE} x k by Hamming with their ties"
        return record


def parse_quantization(text: str) -> Quantization:
    """:attr:`Quantization.text` back to the quantisation; :class:`QuantizeError` otherwise."""
    dims, precision = None, None
    for part in _split(text):
        matched = _DIMS.match(part)
        if matched and dims is None and precision is None:
            dims = int(matched[1])
        elif part in PRECISIONS and precision is None:
            precision = part
        else:
            raise QuantizeError(
                f"{text!r}: a quantisation is dN, a precision ({', '.join(PRECISIONS)}) "
                "or dN-PRECISION"
            )
    return Quantization(precision, dims)


def _split(text: str) -> list[str]:
    head, sep, rest = text.partition("-")
    return [head, rest] if sep and _DIMS.match(head) else [text]


def _st_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("sentence-transformers")


def _quantize_embeddings():
    try:
        from sentence_transformers.util.quantization import quantize_embeddings
    except ImportError:
        raise QuantizeError(
            "--execretrieval-quantize needs sentence-transformers "
            "(pip install 'pytest-execretrieval[local]')"
        ) from None
    return quantize_embeddings


def truncate(vectors: np.ndarray, dims: int) -> np.ndarray:
    """The first ``dims`` dimensions of each vector, renormalised (float32)."""
    if dims > vectors.shape[1]:
        raise QuantizeError(
            f"dims {dims}: the vectors have {vectors.shape[1]} dimensions (truncation keeps "
            "the first N of them)"
        )
    return normalize(np.asarray(vectors)[:, :dims], np.float64).astype(np.float32)


def int8_codes(queries: np.ndarray, documents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The int8 codes of the unit query and document vectors, calibrated on the documents."""
    quantize = _quantize_embeddings()
    q, d = normalize(queries), normalize(documents)
    return (
        quantize(q, precision="int8", calibration_embeddings=d),
        quantize(d, precision="int8", calibration_embeddings=d),
    )


def binary_codes(vectors: np.ndarray) -> np.ndarray:
    """One bit per dimension, packed (``ubinary``: a bit is set where the component is > 0)."""
    return _quantize_embeddings()(normalize(vectors), precision="ubinary")


def int8_scores(q_codes: np.ndarray, d_codes: np.ndarray) -> Iterator[np.ndarray]:
    """Blocks of score rows: the inner products of the int8 codes (exact integers)."""
    if q_codes.shape[1] > INT8_EXACT_DIMS:
        raise QuantizeError(
            f"int8 codes of {q_codes.shape[1]} dimensions: inner products beyond "
            f"{INT8_EXACT_DIMS} dimensions are not exact in float32; truncate first "
            "(--execretrieval-dims)"
        )
    d = d_codes.astype(np.float32)
    for start in range(0, len(q_codes), ROWS_PER_BLOCK):
        yield q_codes[start : start + ROWS_PER_BLOCK].astype(np.float32) @ d.T


def binary_scores(q_bits: np.ndarray, d_bits: np.ndarray, dims: int) -> Iterator[np.ndarray]:
    """Blocks of score rows: ``1 - hamming / dims`` of the packed codes. The equal bits are
    counted as ``(dims + s_q . s_d) / 2`` with s the codes' bits as +-1, an exact integer."""
    signs = _signs(d_bits, dims)
    for start in range(0, len(q_bits), ROWS_PER_BLOCK):
        dot = _signs(q_bits[start : start + ROWS_PER_BLOCK], dims) @ signs.T
        equal = (dims + dot.astype(np.float64)) / 2
        yield equal / dims


def _signs(bits: np.ndarray, dims: int) -> np.ndarray:
    return np.unpackbits(bits, axis=1)[:, :dims].astype(np.float32) * 2 - 1


@dataclass
class QuantizedStage:
    """A dense ranking function (:class:`.retrieval.RankVectors`) over the stored codes of
    ``quantization``. ``then`` ranks truncated float vectors (no precision): exactly, or
    through an index."""

    quantization: Quantization
    then: RankVectors = rank_dense

    def __call__(
        self,
        queries: np.ndarray,
        documents: np.ndarray,
        targets: Sequence[int],
        k: int = 10,
        *,
        watch: Sequence[Sequence[int]] | None = None,
    ) -> Ranking:
        q = self.quantization
        if q.dims is not None:
            queries, documents = truncate(queries, q.dims), truncate(documents, q.dims)
        if q.precision is None:
            return self.then(queries, documents, targets, k, watch=watch)
        if q.precision == "int8":
            q_codes, d_codes = int8_codes(queries, documents)
            return rank_rows(int8_scores(q_codes, d_codes), targets, k, watch)
        dims = queries.shape[1]
        hamming = binary_scores(binary_codes(queries), binary_codes(documents), dims)
        if q.precision == "binary":
            return rank_rows(hamming, targets, k, watch)
        return rescored(queries, documents, hamming, targets, k, watch)


def rescored(
    queries: np.ndarray,
    documents: np.ndarray,
    hamming: Iterator[np.ndarray],
    targets: Sequence[int],
    k: int,
    watch: Sequence[Sequence[int]] | None,
) -> Ranking:
    """The candidates of the Hamming rows (each row's best ``OVERSAMPLE * k``, with every
    document tying the last of them) ranked by their exact float scores."""
    from .index import rank_candidates

    depth = min(OVERSAMPLE * k, len(documents))
    rows = []
    for block in hamming:
        for row in block:
            floor = np.partition(row, len(row) - depth)[len(row) - depth]
            rows.append(np.flatnonzero(row >= floor))
    width = max(len(r) for r in rows) if rows else 0
    candidates = np.full((len(rows), width), -1, dtype=np.int64)
    for i, r in enumerate(rows):
        candidates[i, : len(r)] = r
    return rank_candidates(queries, documents, candidates, targets, k, watch)
