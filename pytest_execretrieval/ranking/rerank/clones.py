"""``clones:NAME``: reranker ``NAME`` deciding only between the near clones of the first stage's
rank 1. The first stage decides what the query is about (which function family); the reranker
decides which of that family's near clones (the code alone shows them: :func:`.views.near_clones`,
a token difflib ratio of at least ``views.NEAR``) is the correct one. The clones move to the top
in ``NAME``'s order; every other candidate follows in the first stage's order (they share one
score below the clones', so the pipeline's first-stage tie-break orders them). A reranker trained
on families, as ``execretrieval train --objective cross-encoder`` trains one, is used here on
what it was trained on. When the rank 1 has no near clone among the top k, ``NAME`` is not asked
and the first-stage order stands (``fallback``). Reads what ``NAME`` reads, of fewer candidates.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Reranked, Reranker, RerankQuery
from .views import NEAR, near_clones

NO_CLONE = "the first stage's rank 1 has no near clone in its top k"


class WithinClones:
    def __init__(self, inner: Reranker):
        self.inner = inner
        self.name = f"clones:{inner.name}"

    def invocation(self) -> dict:
        inner = self.inner.invocation()
        training = {"training": inner["training"]} if "training" in inner else {}
        return {
            "name": self.name,
            "scope": "the near clones of the first stage's rank 1",
            "near_ratio": NEAR,
            "set_aware": True,  # the clones are found among the candidates
            "reranker": inner,
            **training,  # where the refusal to score training items looks
        }

    def rerank(self, first_stage: str, queries: Sequence[RerankQuery]) -> list[Reranked]:
        groups = [near_clones([c.code for c in q.candidates]) for q in queries]
        asked = [(q, group) for q, group in zip(queries, groups) if len(group) > 1]
        answers = iter(
            self.inner.rerank(
                first_stage,
                [RerankQuery(q.item, tuple(q.candidates[j] for j in g)) for q, g in asked],
            )
        )
        out = []
        for q, group in zip(queries, groups):
            if len(group) == 1:
                out.append(Reranked((0.0,) * len(q.candidates), NO_CLONE))
                continue
            answer = next(answers)
            floor = min(answer.scores) - 1.0
            scores = [floor] * len(q.candidates)
            for j, s in zip(group, answer.scores):
                scores[j] = s
            detail = {**answer.detail, "clones": len(group)}
            out.append(Reranked(tuple(scores), answer.fallback, detail))
        return out

    def close(self) -> None:
        self.inner.close()
