"""``ce:PATH``: a sentence-transformers ``CrossEncoder`` loaded from a local directory, scoring
each (query, candidate code) pair; higher is better. It reads the query text and the code only.
A directory ``execretrieval train --objective cross-encoder`` wrote carries its training card,
whose split its invocation records (as a fine-tuned embedder's does), and whose view
(:mod:`.views`) it reads the candidates in; any other CrossEncoder reads the code as it is.
Needs the ``local`` extra (torch + sentence-transformers); imported only when chosen. Runs on the
CPU unless ``extra["device"]`` says otherwise.

The directory is untrusted input (a pull request's, a download):
:func:`...model_dir.check_model_dir` (the ``cross-encoder`` kind) reads its configuration itself
(bounded JSON) before anything is loaded, and refuses, naming the file and the reason, a
directory that holds code, an executable, a pickle or weights other than ``model.safetensors``,
or whose configuration names what to import or call (an activation other than the sigmoid or
identity, ``auto_map``, ``trust_remote_code``, an architecture, model type, tokenizer class or
``modules.json`` module outside the encoder cross-encoders the trainer writes, loader
arguments). The CrossEncoder is then built with the activation chosen there, remote code off and
safetensors only, so the configuration's own choice is never imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...embedders import package_versions
from ...model_card import CardError, invocation_record, read_card
from ...model_dir import CROSS_ENCODER, ModelDirError, check_model_dir, load_kwargs
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
            self.activation = check_model_dir(self.path, CROSS_ENCODER)
            card = read_card(self.path) or {}
        except (ModelDirError, CardError) as exc:
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
            "set_aware": self.view == "diff",  # marks what differs from the other candidates
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
            import torch

            try:  # the activation ours, the config's never imported; nothing remote, no pickle
                self._model = CrossEncoder(
                    str(self.path),
                    device=self.device,
                    activation_fn=getattr(torch.nn, self.activation)(),
                    **load_kwargs(),
                )
            except Exception as exc:  # any deserialiser's refusal (safetensors, JSON, tokenizer)
                raise RerankerError(
                    f"{self.name}: cannot load a CrossEncoder: {type(exc).__name__}: {exc}"
                ) from None
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
