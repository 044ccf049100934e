"""The reranker contract: what a reranker is given per query and what it answers (the
registry, in the package's ``__init__``, names and builds them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ...corpus.items import BenchmarkItem
    from ...execution.runner import SuiteRunner
    from ..benchmark import BenchmarkRun


class RerankerError(Exception):
    """A reranker cannot be used here (unknown name, missing package, key, file or embedder)."""


@dataclass(frozen=True)
class Candidate:
    """One first-stage candidate of a query."""

    snippet_id: str
    code: str
    first_stage_rank: int  # 1-based, in the first stage's listed (tie-broken) order
    first_stage_score: float


@dataclass(frozen=True)
class RerankQuery:
    item: BenchmarkItem
    candidates: tuple[Candidate, ...]  # the first stage's top k, in its order


@dataclass(frozen=True)
class Reranked:
    """A reranker's answer for one query: one score per candidate (higher is better, rounded
    by the pipeline to 6 decimals) and, when the reranker could not use its signal for this
    query and left the first-stage order, why (``fallback``)."""

    scores: tuple[float, ...]
    fallback: str | None = None
    detail: dict = field(default_factory=dict)  # reranker-specific figures (JSON-able)


@dataclass(frozen=True)
class RerankerContext:
    """Session-wide things a reranker may use: the execution runner (sandbox + outcome cache),
    the cache directory, every first stage's run by embedder name (for fusion), options."""

    runner: SuiteRunner | None = None
    cache_dir: Path | None = None
    embedders: tuple[str, ...] = ()  # the session's first stages (checked by rrf:A+B up front)
    runs: Mapping[str, BenchmarkRun] = field(default_factory=dict)  # filled as they are ranked
    extra: dict = field(default_factory=dict)


@runtime_checkable
class Reranker(Protocol):
    """``name``; ``invocation()`` (what determines the scores, JSON-able, for reports; its
    ``set_aware`` says whether a candidate's score depends on the other candidates, as a vote's
    or a listwise model's does: such a pipeline is shown beside the query-blind controls,
    :mod:`...scoring.controls`, and taken to be set-aware when it does not say);
    ``rerank(first_stage, queries)`` -> one :class:`Reranked` per query, in order
    (``first_stage`` is the embedder name whose top k is reordered); ``close()``."""

    name: str

    def invocation(self) -> dict: ...

    def rerank(self, first_stage: str, queries: Sequence[RerankQuery]) -> list[Reranked]: ...

    def close(self) -> None: ...
