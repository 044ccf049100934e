"""``rrf:A+B``: reciprocal-rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009) of two first
stages ranked in the same session.

A candidate's score is ``sum over A, B of 1 / (RRF_K + rank)``, its listed rank in that
embedder's top 10 for the query (tie-broken order, as the reports list it); a candidate outside
one list gets nothing from it (its rank there is beyond 10 and not kept). Both embedders must
be given with ``--embedder`` in the session (their rankings are what is fused); the pipeline
``E+rrf:A+B`` reorders E's top k, so ``bm25+rrf:bm25+minilm`` and ``minilm+rrf:bm25+minilm``
fuse the same two lists over different candidate sets.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Reranked, RerankerContext, RerankerError, RerankQuery

RRF_K = 60


class ReciprocalRankFusion:
    def __init__(self, a: str, b: str, context: RerankerContext):
        if a == b:
            raise RerankerError(f"rrf:{a}+{b} fuses an embedder with itself; name two embedders")
        missing = [e for e in (a, b) if context.embedders and e not in context.embedders]
        if missing:
            raise RerankerError(
                f"rrf:{a}+{b} fuses the rankings of {a} and {b}: add "
                + " ".join(f"--embedder {e}" for e in missing)
            )
        self.a, self.b = a, b
        self.name = f"rrf:{a}+{b}"
        self.runs = context.runs

    def invocation(self) -> dict:
        return {
            "name": self.name,
            "fused": [self.a, self.b],
            "rrf_k": RRF_K,
            "depth": 10,
            "set_aware": False,  # each candidate's two ranks alone
        }

    def rerank(self, first_stage: str, queries: Sequence[RerankQuery]) -> list[Reranked]:
        missing = [e for e in (self.a, self.b) if e not in self.runs]
        if missing:
            flags = " ".join(f"--embedder {e}" for e in missing)
            raise RerankerError(
                f"{self.name}: no ranking of {', '.join(missing)} in this session; add {flags}"
            )
        answers = []
        for q in queries:
            ranks = [
                {h.snippet_id: h.rank for h in self.runs[e].results[q.item.id].top}
                for e in (self.a, self.b)
            ]
            answers.append(
                Reranked(
                    tuple(
                        sum(1.0 / (RRF_K + r[c.snippet_id]) for r in ranks if c.snippet_id in r)
                        for c in q.candidates
                    )
                )
            )
        return answers

    def close(self) -> None:
        pass
