"""A third-party embedder package as the tests install it: plain classes that import nothing of
pytest-execretrieval's embedder classes (the contracts are structural), registered through a real
``*.dist-info/entry_points.txt`` in the entry-point group ``pytest_execretrieval.embedders``.

:class:`FakeDense` and :class:`FakeLexical` score every (query, document) pair identically (the
cosine of :func:`vector`, computed with the same arithmetic as the dense ranking), one through
``encode``, the other through ``score``, so their rankings must agree exactly. :class:`Half`
satisfies neither contract, :class:`Both` both.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

DIM = 32
ENTRY_POINTS = {
    "fake-dense": "FakeDense",
    "fake-lexical": "FakeLexical",
    "fake-half": "Half",
    "fake-both": "Both",
}


def vector(text: str) -> np.ndarray:
    """A bag of the text's words hashed into ``DIM - 1`` buckets, plus a constant (never zero)."""
    v = np.zeros(DIM, np.float32)
    for word in text.split():
        v[zlib.crc32(word.encode()) % (DIM - 1)] += 1
    v[-1] = 1
    return v


def unit(vectors: np.ndarray) -> np.ndarray:
    """Unit rows in float64, as the dense ranking normalizes them before its product."""
    vectors = vectors.astype(np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


class FakeDense:
    name = "fake-dense"

    def __init__(self, options):
        self.encoded: list[tuple[str, int]] = []  # (role, texts) per call

    def invocation(self) -> dict:
        return {"name": self.name, "model": "hashed-words", "dim": DIM}

    def check_usable(self) -> None:
        pass

    def close(self) -> None:
        pass

    def encode(self, texts: Sequence[str], role: str, ids: Sequence[str]) -> np.ndarray:
        self.encoded.append((role, len(texts)))
        return np.stack([vector(t) for t in texts])


class FakeLexical:
    name = "fake-lexical"

    def __init__(self, options):
        pass

    def invocation(self) -> dict:
        return {"name": self.name, "model": "hashed-words-scorer", "dim": 0}

    def check_usable(self) -> None:
        pass

    def close(self) -> None:
        pass

    def score(self, queries: Sequence[str], documents: Sequence[str]) -> Iterator[np.ndarray]:
        """The whole matrix in one product (the dense ranking's arithmetic), handed over in
        blocks of three rows."""
        q = unit(np.stack([vector(t) for t in queries]))
        scores = q @ unit(np.stack([vector(t) for t in documents])).T
        for start in range(0, len(queries), 3):
            yield scores[start : start + 3]


class Half:
    """Has a name and an invocation, neither ``encode`` nor ``score``, nor ``close``."""

    name = "fake-half"

    def __init__(self, options):
        pass

    def invocation(self) -> dict:
        return {"name": self.name}

    def check_usable(self) -> None:
        pass


class Both(FakeDense):
    name = "fake-both"

    score = FakeLexical.score


def install(root: Path) -> Path:
    """Register the fakes as an installed distribution under ``root`` (put ``root`` and this
    module's folder on the path); returns ``root``."""
    info = root / "fake_embedders-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-embedders\nVersion: 1.0\n")
    lines = [f"{name} = fake_embedders:{attr}" for name, attr in ENTRY_POINTS.items()]
    (info / "entry_points.txt").write_text(
        "[pytest_execretrieval.embedders]\n" + "\n".join(lines) + "\n"
    )
    return root
