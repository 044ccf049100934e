"""Embedders: one protocol, one registry.

An embedder encodes queries and documents (snippets) into vectors for cosine ranking, or, like
BM25, scores them directly. :meth:`Embedder.invocation` describes the exact invocation without
loading the model (so a fully cached run never imports torch); it keys the embedding cache and goes
into reports.

Names: the built-ins below, ``st:PATH`` (a local sentence-transformers directory), ``npz:PATH``
(frozen matrices), and whatever third-party packages register in the entry-point group
``pytest_execretrieval.embedders`` (name -> a callable ``(options) -> Embedder``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

ENTRY_POINT_GROUP = "pytest_execretrieval.embedders"
ROLES = ("query", "document")


class EmbedderError(Exception):
    """An embedder cannot be used here (unknown name, missing package, key or file)."""


@dataclass(frozen=True)
class EmbedderOptions:
    """Session-wide settings an embedder may use."""

    batch_size: int | None = None
    trust_remote_code: bool = False
    cache_dir: str = ".execretrieval_cache"
    extra: dict = field(default_factory=dict)


class Embedder:
    """Base class: subclasses set ``name`` and implement ``invocation`` and ``encode``
    (dense embedders) or ``score`` (lexical ones, with ``similarity = "bm25"``)."""

    name: str = ""
    similarity: str = "cosine"

    def invocation(self) -> dict:
        raise NotImplementedError

    def encode(self, texts: Sequence[str], role: str, ids: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts`` (float32, one row each); ``role`` is "query" or "document";
        ``ids`` are the snippet or query ids (only frozen matrices need them)."""
        raise NotImplementedError

    def check_usable(self) -> None:
        """Raise :class:`EmbedderError` now if a run could not work (missing key, package...)."""

    def close(self) -> None:
        pass


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
    name: str, model: str, dim: int, *, similarity: str = "cosine", query_prefix: str = "",
    document_prefix: str = "", normalize: bool = True, batch_size: int = 0,
    packages: Sequence[str] = (), **extra,
) -> dict:  # fmt: skip
    """An invocation record with the report's fixed keys first, then embedder-specific ones."""
    return {
        "name": name, "model": model, "dim": dim, "similarity": similarity,
        "query_prefix": query_prefix, "document_prefix": document_prefix,
        "normalize": normalize, "batch_size": batch_size,
        "package_versions": package_versions("pytest-execretrieval", *packages), **extra,
    }  # fmt: skip


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
PREFIXED: dict[str, Callable[[EmbedderOptions, str], Embedder]] = {
    "st": lambda options, path: _lazy(".sentence_transformer", "local_model", path)(options),
    "npz": lambda options, path: _lazy(".npz", "FrozenEmbedder", path)(options),
}


def plugin_factories() -> dict[str, Factory]:
    return {ep.name: ep.load() for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def extra_factories() -> dict[str, Factory]:
    """Hosted embedders, when that module is present."""
    try:
        hosted = importlib.import_module(".hosted", __name__)
    except ImportError:
        return {}
    return dict(hosted.FACTORIES)


def known_names() -> list[str]:
    return [*BUILTIN, *extra_factories(), *plugin_factories(), "st:PATH", "npz:PATH"]


def get_embedder(name: str, options: EmbedderOptions = EmbedderOptions()) -> Embedder:
    prefix, sep, arg = name.partition(":")
    if sep and prefix in PREFIXED:
        if not arg:
            raise EmbedderError(f"embedder {name!r} needs a path after {prefix + ':'!r}")
        return PREFIXED[prefix](options, arg)
    factories = {**BUILTIN, **extra_factories(), **plugin_factories()}
    if name not in factories:
        raise EmbedderError(
            f"unknown embedder {name!r}; known: {', '.join(known_names())} "
            f"(or register one in the entry-point group {ENTRY_POINT_GROUP!r})"
        )
    try:
        return factories[name](options)
    except ImportError as exc:
        raise EmbedderError(f"embedder {name!r} is not installed here: {exc}") from None


def usability(name: str, options: EmbedderOptions = EmbedderOptions()) -> str | None:
    """``None`` when ``name`` is usable here, else why not."""
    try:
        embedder = get_embedder(name, options)
        embedder.check_usable()
    except EmbedderError as exc:
        return str(exc)
    return None
