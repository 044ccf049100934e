"""Embedders: two contracts, one registry.

An embedder satisfies exactly one of two contracts, structural :class:`typing.Protocol` classes
(as MTEB separates its encoder and search protocols):

* :class:`DenseEncoder`: ``encode(texts, role, ids)`` gives one vector per text; queries rank
  documents by cosine (the sentence-transformers, e5, hosted and ``npz:`` embedders);
* :class:`LexicalScorer`: ``score(queries, documents)`` gives blocks of complete score rows, no
  vectors (BM25).

Both share ``name``, ``invocation()``, ``check_usable()`` and ``close()``.
:meth:`~EmbedderCommon.invocation` describes the exact invocation without loading the model (so a
fully cached run never imports torch); it keys the embedding cache and goes into reports.
:func:`contract` decides which contract an object satisfies and names what is missing otherwise;
the registry applies it to every embedder it hands out, and :func:`.retrieval.retrieve` dispatches
on it (the one place that does).

Names: the built-ins below, ``st:PATH`` (a local sentence-transformers directory), ``npz:PATH``
(frozen matrices), and whatever third-party packages register in the entry-point group
``pytest_execretrieval.embedders`` (name -> a callable ``(options) -> Embedder``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from ..registry import Registry

ENTRY_POINT_GROUP = "pytest_execretrieval.embedders"
ROLES = ("query", "document")


class EmbedderError(Exception):
    """An embedder cannot be used here (unknown name, missing package, key or file, or an object
    that satisfies neither embedder contract)."""


class ServiceError(EmbedderError):
    """A hosted provider's server unreachable or failing after every retry: nothing the user's
    setup can fix (exit status 8, not a usage error)."""


@dataclass(frozen=True)
class EmbedderOptions:
    """Session-wide settings an embedder may use."""

    batch_size: int | None = None
    trust_remote_code: bool = False
    cache_dir: str = ".execretrieval_cache"
    extra: dict = field(default_factory=dict)


@runtime_checkable
class EmbedderCommon(Protocol):
    """What both contracts share."""

    name: str  # the embedder's name in item ids, report file names and the summary

    def invocation(self) -> dict:
        """Everything that determines the scores (model, revision or weights hash, dimension,
        prompts, package versions), JSON-able, without loading the model: it keys the embedding
        cache and is the report's ``embedder`` record."""
        ...

    def check_usable(self) -> None:
        """Raise :class:`EmbedderError` now if a run could not work (missing key, package...)."""
        ...

    def close(self) -> None:
        """Release what the embedder holds (models, connections); called once after its run."""
        ...


@runtime_checkable
class DenseEncoder(EmbedderCommon, Protocol):
    """A dense embedder: vectors, ranked by cosine (L2-normalised inner product)."""

    def encode(self, texts: Sequence[str], role: str, ids: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts`` (float32, one row each); ``role`` is "query" or "document";
        ``ids`` are the snippet or query ids (only frozen matrices need them)."""
        ...


@runtime_checkable
class LexicalScorer(EmbedderCommon, Protocol):
    """A lexical scorer: scores query-document pairs directly, without vectors."""

    def score(self, queries: Sequence[str], documents: Sequence[str]) -> Iterable[np.ndarray]:
        """Score matrices for consecutive blocks of ``queries`` (rows, in order, every query
        exactly once) against all ``documents`` (columns, in order); higher is better."""
        ...


# An embedder is either; annotations use this name, :func:`contract` tells which one.
Embedder = DenseEncoder | LexicalScorer
CONTRACTS: tuple[type, ...] = (DenseEncoder, LexicalScorer)
# What an embedder will send in a run: (role, texts, ids) per batch of work.
Work = list[tuple[str, list[str], list[str]]]


@runtime_checkable
class Metered(Protocol):
    """A capability beside the contracts: an embedder whose runs are paid per token (the hosted
    APIs), or a view of one. Before a run it says what the run will send and refuses one over
    its budget; after, it gives what was sent for the report. Callers go through
    :func:`guard_cost` and :func:`usage_fields`, which ask nothing of other embedders."""

    def guard_cost(self, work: Work, cache: object) -> None:
        """Print what ``work`` will send (after ``cache``), raise :class:`EmbedderError` when
        it is over the embedder's budget: before anything is sent."""
        ...

    def usage_fields(self) -> dict:
        """The report fields of the run's usage (requests, tokens, texts cut)."""
        ...


def guard_cost(embedder: object, work: Work, cache: object) -> None:
    """:meth:`Metered.guard_cost` of a metered embedder; nothing for another."""
    if isinstance(embedder, Metered):
        embedder.guard_cost(work, cache)


def usage_fields(embedder: object) -> dict:
    """:meth:`Metered.usage_fields` of a metered embedder; ``{}`` for another."""
    return embedder.usage_fields() if isinstance(embedder, Metered) else {}


class EmbedderBase:
    """Optional convenience base for embedders: no-op ``check_usable`` and ``close``. Inheriting
    it satisfies no contract by itself; ``name``, ``invocation`` and ``encode`` or ``score`` do."""

    name: str

    def check_usable(self) -> None:
        pass

    def close(self) -> None:
        pass


def members(protocol: type) -> tuple[str, ...]:
    """The members a contract requires (its own and its parent protocols'), parents first."""
    names: list[str] = []
    for base in reversed(protocol.__mro__):
        if Protocol in base.__bases__:
            names += [
                n
                for n in (*base.__dict__.get("__annotations__", {}), *vars(base))
                if not n.startswith("_")
            ]
    return tuple(dict.fromkeys(names))


def lacking(obj: object, protocol: type) -> list[str]:
    """What ``obj`` lacks to satisfy ``protocol``: absent members, methods that are not callable,
    a ``name`` that is not a non-empty string."""
    lacks = []
    for member in members(protocol):
        value = getattr(obj, member, None)
        if member == "name":
            if not isinstance(value, str) or not value:
                lacks.append("name (a non-empty str)")
        elif not callable(value):
            lacks.append(f"{member}()")
    return lacks


def contract(embedder: object) -> type:
    """:class:`DenseEncoder` or :class:`LexicalScorer`, whichever ``embedder`` satisfies;
    :class:`EmbedderError` naming what is missing when it satisfies neither, or when it has both
    ``encode`` and ``score`` (ranking would be ambiguous)."""
    lacks = {protocol: lacking(embedder, protocol) for protocol in CONTRACTS}
    satisfied = [protocol for protocol, missing in lacks.items() if not missing]
    if len(satisfied) == 1:
        return satisfied[0]
    what = f"{type(embedder).__module__}.{type(embedder).__qualname__}"
    if satisfied:
        raise EmbedderError(
            f"{what} has both encode() and score(): an embedder is a dense encoder (encode -> "
            "vectors, cosine) or a lexical scorer (score -> score rows), not both; drop one"
        )
    raise EmbedderError(
        f"{what} satisfies neither embedder contract: as a dense encoder it lacks "
        f"{', '.join(lacks[DenseEncoder])}; as a lexical scorer it lacks "
        f"{', '.join(lacks[LexicalScorer])} (see pytest_execretrieval.embedders.DenseEncoder "
        "and LexicalScorer)"
    )


def require_dense(embedder: Embedder, purpose: str) -> DenseEncoder:
    """``embedder`` if it is a :class:`DenseEncoder`; :class:`EmbedderError` saying that
    ``purpose`` needs vectors otherwise."""
    if contract(embedder) is not DenseEncoder:
        raise EmbedderError(
            f"{purpose} needs a dense encoder, and {embedder.name!r} is a lexical scorer (it "
            "scores queries against documents and has no vectors): choose a dense embedder"
        )
    return embedder  # type: ignore[return-value]


def check_vectors(
    vectors: np.ndarray, rows: int, source: str, dim: int | None = None
) -> np.ndarray:
    """Validate an embedding matrix: shape, finite values, non-zero norms; returns float32."""
    vectors = np.asarray(vectors)
    if vectors.ndim != 2 or vectors.shape[0] != rows:
        raise EmbedderError(f"{source}: expected {rows} vectors, got shape {vectors.shape}")
    if dim is not None and vectors.shape[1] != dim:
        raise EmbedderError(f"{source}: expected dimension {dim}, got {vectors.shape[1]}")
    if not np.isfinite(vectors).all():
        raise EmbedderError(f"{source}: non-finite values (NaN or inf) in the vectors")
    zero = np.flatnonzero(np.linalg.norm(vectors, axis=1) == 0)
    if zero.size:
        raise EmbedderError(f"{source}: zero-norm vectors at rows {zero[:5].tolist()}")
    return vectors.astype(np.float32, copy=False)


def package_versions(*names: str) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def describe(
    name: str,
    model: str,
    dim: int,
    *,
    similarity: str = "cosine",
    query_prefix: str = "",
    document_prefix: str = "",
    normalize: bool = True,
    batch_size: int = 0,
    packages: Sequence[str] = (),
    **extra,
) -> dict:
    """An invocation record with the report's fixed keys first, then embedder-specific ones."""
    return {
        "name": name,
        "model": model,
        "dim": dim,
        "similarity": similarity,
        "query_prefix": query_prefix,
        "document_prefix": document_prefix,
        "normalize": normalize,
        "batch_size": batch_size,
        "package_versions": package_versions("pytest-execretrieval", *packages),
        **extra,
    }


Factory = Callable[[EmbedderOptions], Embedder]


def _lazy(module: str, attr: str, *args) -> Factory:
    """A factory importing its module only when the embedder is chosen."""

    def factory(options: EmbedderOptions) -> Embedder:
        return getattr(importlib.import_module(module, __name__), attr)(options, *args)

    return factory


BUILTIN: dict[str, Factory] = {
    "bm25": _lazy(".bm25", "BM25Embedder"),
    "minilm": _lazy(".sentence_transformer", "minilm"),
    "mpnet": _lazy(".sentence_transformer", "mpnet"),
    "e5-small": _lazy(".e5", "E5Small"),
}
PREFIXED: dict[str, Callable[[str, EmbedderOptions], Embedder]] = {
    "st": lambda path, options: _lazy(".sentence_transformer", "local_model", path)(options),
    "npz": lambda path, options: _lazy(".npz", "FrozenEmbedder", path)(options),
}


def extra_factories() -> dict[str, Factory]:
    """Hosted embedders, when that module is present."""
    try:
        hosted = importlib.import_module(".hosted", __name__)
    except ImportError:
        return {}
    return dict(hosted.FACTORIES)


REGISTRY: Registry[EmbedderOptions, Embedder] = Registry(
    "embedder",
    ENTRY_POINT_GROUP,
    EmbedderError,
    BUILTIN,
    PREFIXED,
    spelled=("st:PATH", "npz:PATH"),
    argument="a path",
    extra=extra_factories,
)


def known_names() -> list[str]:
    return REGISTRY.known_names()


def get_embedder(name: str, options: EmbedderOptions = EmbedderOptions()) -> Embedder:
    """The embedder called ``name``, checked against the contracts (:func:`contract`);
    :class:`EmbedderError` when unknown, not installed here, or satisfying neither contract."""
    embedder = REGISTRY.make(name, options)  # a plug-in's factory may return anything
    try:
        contract(embedder)
    except EmbedderError as exc:
        raise EmbedderError(f"embedder {name!r}: {exc}") from None
    return embedder


def usability(name: str, options: EmbedderOptions = EmbedderOptions()) -> str | None:
    """``None`` when ``name`` is usable here, else why not."""
    try:
        embedder = get_embedder(name, options)
        embedder.check_usable()
    except EmbedderError as exc:
        return str(exc)
    return None
