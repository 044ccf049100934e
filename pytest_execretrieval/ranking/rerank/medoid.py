"""``medoid``: a control, not a remedy. It reads neither the query nor anything learnt: each
candidate scores minus its mean token edits to its near clones among the same candidates
(:func:`.views.edits_to_clones`), so the clone that the others differ from least goes first. A
candidate with no near clone goes below every clone; when no candidate has one, the first stage's
order stands (``fallback``). Used as ``clones:medoid``, it picks among the first stage's rank 1
and its clones.

Why it exists: a pool built like this benchmark's (a canonical and several single-edit mutants
of it) is a star, whose centre is the canonical: any reranker that sees the candidates together
(the ``diff`` view, ``clones:``, a listwise model) can find it from the shape alone. A set-aware
reranker's lift means something only beside this control's. A pair (one mutant beside its
canonical, as a real code base holds) has no centre: both score the same and the first stage's
order decides.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Reranked, RerankQuery
from .views import NEAR, edits_to_clones

NO_CLONE = "no candidate has a near clone among the top k"


def centrality(codes: Sequence[str]) -> list[float | None]:
    """Minus each code's mean token edits to its near clones among ``codes``; ``None`` for a
    code without one."""
    return [-sum(edits) / len(edits) if edits else None for edits in edits_to_clones(codes)]


class Medoid:
    name = "medoid"

    def invocation(self) -> dict:
        return {
            "name": self.name,
            "reads": "the candidates' code only (not the query; nothing learnt)",
            "set_aware": True,
            "score": "minus the mean token edits to the candidate's near clones",
            "near_ratio": NEAR,
        }

    def rerank(self, first_stage: str, queries: Sequence[RerankQuery]) -> list[Reranked]:
        out = []
        for q in queries:
            found = centrality([c.code for c in q.candidates])
            known = [s for s in found if s is not None]
            if not known:
                out.append(Reranked((0.0,) * len(found), NO_CLONE))
                continue
            floor = min(known) - 1.0
            out.append(Reranked(tuple(floor if s is None else s for s in found)))
        return out

    def close(self) -> None:
        pass
