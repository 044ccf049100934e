"""``ce:PATH``: a sentence-transformers ``CrossEncoder`` loaded from a local directory, scoring
each (query, candidate code) pair; higher is better. It reads the query text and the code only.
A directory ``execretrieval train --objective cross-encoder`` wrote carries its training card,
whose split its invocation records (as a fine-tuned embedder's does), and whose view
(:mod:`.views`) it reads the candidates in; any other CrossEncoder reads the code as it is.
Needs the ``local`` extra (torch + sentence-transformers); imported only when chosen. Runs on the
CPU unless ``extra["device"]`` says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...embedders import package_versions
from ...training.card import CardError, invocation_record, read_card
from .base import Reranked, RerankerContext, RerankerError, RerankQuery
from .views import VIEWS, render

BATCH_SIZE = 32


class CrossEncoderReranker:
    def __init__(self, path: str, context: RerankerContext):
        self.path = Path(path).expanduser()
        if not self.path.is_dir():
            raise RerankerError(
                f"ce:{path}: {self.path} is not a directory holding a "
                "sentence-transformers CrossEncoder"
            )
        self.name = f"ce:{path}"
        self.device = context.extra.get("device", "cpu")
        self._model = None
        try:
            card = read_card(self.path) or {}
        except CardError as exc:
            raise RerankerError(f"{self.name}: {exc}") from None
        self.view = card.get("view", "code")
        if self.view not in VIEWS:
            raise RerankerError(f"{self.name}: its card names an unknown view {self.view!r}")

    def invocation(self) -> dict:
        """What determines the scores; for a reranker ``execretrieval train`` made, also what
        it was trained on (``training``: the benchmark refuses to score its training items)."""
        try:
            training = invocation_record(self.path)
        except CardError as exc:
            raise RerankerError(f"{self.name}: {exc}") from None
        return {
            "name": self.name,
            "model": str(self.path.resolve()),
            "batch_size": BATCH_SIZE,
            "view": self.view,
            "package_versions": package_versions("sentence-transformers", "torch"),
            **training,
        }

    def model(self):
        if self._model is None:
            try:
                from sentence_transformers import CrossEncoder
            except ImportError:
                hint = "pip install 'pytest-execretrieval[local]'"
                raise RerankerError(f"ce:PATH needs sentence-transformers: {hint}") from None
            try:
                self._model = CrossEncoder(str(self.path), device=self.device)
            except (OSError, ValueError) as exc:
                raise RerankerError(f"{self.name}: cannot load a CrossEncoder: {exc}") from None
        return self._model

    def rerank(self, first_stage: str, queries: Sequence[RerankQuery]) -> list[Reranked]:
        pairs = [
            (q.item.query, text)
            for q in queries
            for text in render(self.view, [c.code for c in q.candidates])
        ]
        scores = self.model().predict(pairs, batch_size=BATCH_SIZE, show_progress_bar=False)
        flat = [float(s) for s in scores]
        answers, start = [], 0
        for q in queries:
            answers.append(Reranked(tuple(flat[start : start + len(q.candidates)])))
            start += len(q.candidates)
        return answers

    def close(self) -> None:
        self._model = None
