"""Rerankers: one protocol, one registry (the second stage of a retrieve-then-rerank pipeline).

A reranker reorders the top ``k`` candidates a first stage (an embedder) ranked for each query.
It sees, per query, the :class:`RerankQuery`: the benchmark item and the candidates (snippet
code, first-stage rank and score). What a reranker may *read* of the item is its own contract,
stated in its docstring: ``exec-consensus:tests`` reads the argument expressions of the tests
(never their expected values), ``exec-consensus:hypothesis`` and the model-based rerankers read
the query and the code only. :func:`.pipeline.rerank_run` turns the scores into the pipeline's
ranking (see there for how ties are broken and counted).

Names: ``exec-consensus`` (= ``exec-consensus:tests``), ``exec-consensus:hypothesis``,
``rrf:A+B`` (reciprocal-rank fusion of embedders A and B, both ranked in the same session),
``ce:PATH`` (a local sentence-transformers CrossEncoder), ``clones:NAME`` (reranker NAME
deciding only between the near clones of the first stage's rank 1), ``medoid`` (a query-blind
control: the clone the others differ from least), ``voyage-rerank-2.5``,
``cohere-rerank-v3.5``, and whatever third-party packages register in the entry-point group
``pytest_execretrieval.rerankers`` (name -> a callable ``(RerankerContext) -> Reranker``).
"""

from __future__ import annotations

from collections.abc import Callable

from ...registry import Registry
from .base import Candidate, Reranked, Reranker, RerankerContext, RerankerError, RerankQuery

ENTRY_POINT_GROUP = "pytest_execretrieval.rerankers"
DEFAULT_K = 10

__all__ = [
    "DEFAULT_K",
    "REGISTRY",
    "ENTRY_POINT_GROUP",
    "Candidate",
    "RerankQuery",
    "Reranked",
    "Reranker",
    "RerankerContext",
    "RerankerError",
    "get_reranker",
    "known_names",
]


Factory = Callable[[RerankerContext], Reranker]


def _consensus(source: str) -> Factory:
    def factory(context: RerankerContext) -> Reranker:
        from .consensus import ExecConsensus

        return ExecConsensus(source, context)

    return factory


def _hosted(name: str) -> Factory:
    def factory(context: RerankerContext) -> Reranker:
        from .hosted import hosted_reranker

        return hosted_reranker(name, context)

    return factory


def _medoid(context: RerankerContext) -> Reranker:
    from .medoid import Medoid

    return Medoid()


BUILTIN: dict[str, Factory] = {
    "exec-consensus": _consensus("tests"),
    "medoid": _medoid,
    "voyage-rerank-2.5": _hosted("voyage-rerank-2.5"),
    "cohere-rerank-v3.5": _hosted("cohere-rerank-v3.5"),
}


def _rrf(arg: str, context: RerankerContext) -> Reranker:
    from .rrf import ReciprocalRankFusion

    parts = arg.split("+")
    if len(parts) != 2 or not all(parts):
        raise RerankerError(
            f"rrf needs two embedder names joined by '+', e.g. rrf:bm25+minilm; got rrf:{arg}"
        )
    return ReciprocalRankFusion(parts[0], parts[1], context)


def _ce(arg: str, context: RerankerContext) -> Reranker:
    from .cross_encoder import CrossEncoderReranker

    return CrossEncoderReranker(arg, context)


def _clones(arg: str, context: RerankerContext) -> Reranker:
    from .clones import WithinClones

    return WithinClones(get_reranker(arg, context))


PREFIXED: dict[str, Callable[[str, RerankerContext], Reranker]] = {
    "exec-consensus": lambda source, context: _consensus(source)(context),
    "rrf": _rrf,
    "ce": _ce,
    "clones": _clones,
}
REGISTRY: Registry[RerankerContext, Reranker] = Registry(
    "reranker",
    ENTRY_POINT_GROUP,
    RerankerError,
    BUILTIN,
    PREFIXED,
    spelled=(
        "exec-consensus:tests",
        "exec-consensus:hypothesis",
        "rrf:A+B",
        "ce:PATH",
        "clones:NAME",
    ),
)


def known_names() -> list[str]:
    return REGISTRY.known_names()


def get_reranker(name: str, context: RerankerContext = RerankerContext()) -> Reranker:
    """The reranker called ``name``; :class:`RerankerError` when unknown or unusable here."""
    return REGISTRY.make(name, context)
