"""BM25 (bm25s, Lucene variant, k1 = 1.5, b = 0.75) with a code-aware tokenizer."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import numpy as np

from . import EmbedderBase, EmbedderError, EmbedderOptions, describe

K1, B = 1.5, 0.75
# An identifier splits at underscores, lower->upper case changes, acronym ends and digit runs:
# "parseHTTPResponse_v2" -> parse, http, response, v, 2.
WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|\b|_)|[A-Z]?[a-z]+|[A-Z]+|\d+")


def tokenize(text: str) -> list[str]:
    return [word.lower() for word in WORD.findall(text)]


class BM25Embedder(EmbedderBase):
    name = "bm25"

    def __init__(self, options: EmbedderOptions):
        self.options = options

    def invocation(self) -> dict:
        return describe(
            self.name,
            "bm25s-lucene",
            0,
            similarity="bm25",
            normalize=False,
            packages=["bm25s"],
            k1=K1,
            b=B,
            tokenizer="code-aware: snake_case, camelCase, digits",
        )

    def check_usable(self) -> None:
        try:
            import bm25s  # noqa: F401
        except ImportError as exc:
            raise EmbedderError(f"bm25 needs the bm25s package: {exc}") from None

    def score(
        self, queries: Sequence[str], documents: Sequence[str], chunk: int = 256
    ) -> Iterator[np.ndarray]:
        """Score matrices (rows: queries, in chunks of ``chunk``; columns: documents)."""
        import bm25s

        retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
        # bm25s drops empty documents' vocabulary gracefully; keep one token so ids stay aligned.
        retriever.index([tokenize(d) or ["<empty>"] for d in documents], show_progress=False)
        tokens = [tokenize(q) for q in queries]
        for start in range(0, len(tokens), chunk):
            rows = [
                retriever.get_scores(t) if t else np.zeros(len(documents), np.float32)
                for t in tokens[start : start + chunk]
            ]
            yield np.asarray(rows, dtype=np.float32).reshape(-1, len(documents))
