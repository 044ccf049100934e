"""Embedding cache: vectors keyed by the full invocation, the role and sha256 of the text.

Layout: ``<cache>/embeddings/<sha256(invocation)[:32]>/<role>/<shard>.npz``; each shard holds one
encoded batch (text hashes + vectors) and is written atomically (temp file + rename) as soon as the
batch is done, so an interrupted run resumes where it stopped. An unreadable shard is removed and
its texts are encoded again.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Container, Sequence
from pathlib import Path

import numpy as np

from ..safe_write import atomic_path, write_atomic
from . import DenseEncoder, check_vectors

Progress = Callable[[str, int, int, float], None]  # (role, done, total, texts per second)
ENCODE_BATCH = 256  # texts per embedder.encode call of encode_cached


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def invocation_key(invocation: dict) -> str:
    return hashlib.sha256(json.dumps(invocation, sort_keys=True).encode()).hexdigest()[:32]


class EmbeddingCache:
    def __init__(self, root: Path, invocation: dict):
        self.root = Path(root)
        self.dir = self.root / "embeddings" / invocation_key(invocation)
        self.invocation = invocation

    def load(self, role: str) -> dict[str, np.ndarray]:
        table: dict[str, np.ndarray] = {}
        for shard in sorted((self.dir / role).glob("*.npz")):
            try:
                with np.load(shard, allow_pickle=False) as npz:
                    keys, vectors = npz["keys"].tolist(), npz["vectors"]
                check_vectors(vectors, len(keys), str(shard))
            except Exception:  # any damage: forget the shard, its texts get re-encoded
                shard.unlink(missing_ok=True)
                continue
            table.update(zip(keys, vectors))
        return table

    def store(self, role: str, keys: Sequence[str], vectors: np.ndarray) -> None:
        folder = self.dir / role
        meta = self.dir / "invocation.json"
        if not meta.exists():
            write_atomic(
                meta, json.dumps(self.invocation, indent=1, sort_keys=True), root=self.root
            )
        name = hashlib.sha256("".join(keys).encode()).hexdigest()[:24]
        with atomic_path(folder / f"{name}.npz", suffix=".npz", root=self.root) as tmp:
            np.savez(tmp, keys=np.array(list(keys), dtype=str), vectors=vectors)


def stderr_progress(role: str, done: int, total: int, rate: float) -> None:
    end = "\n" if done == total else ""
    noun = "queries" if role == "query" else "documents"
    print(
        f"\r  encoding {noun}: {done}/{total} ({rate:.1f}/s)", end=end, file=sys.stderr, flush=True
    )


def missing_rows(keys: Sequence[str], known: Container[str], texts: Sequence[str]) -> list[int]:
    """Rows to encode: one per distinct key not in ``known``, longest text first (as
    sentence-transformers orders one call: batches of similar length pad least)."""
    return sorted(
        {k: i for i, k in enumerate(keys) if k not in known}.values(),
        key=lambda i: (-len(texts[i]), i),
    )


def encode_cached(
    embedder: DenseEncoder,
    texts: Sequence[str],
    ids: Sequence[str],
    role: str,
    cache: EmbeddingCache | None,
    batch: int = ENCODE_BATCH,
    progress: Progress | None = None,
) -> np.ndarray:
    """Vectors for ``texts`` in order, encoding only what the cache lacks, batch by batch."""
    keys = [text_key(t) for t in texts]
    table = cache.load(role) if cache else {}
    missing = missing_rows(keys, table, texts)
    started = time.perf_counter()
    for start in range(0, len(missing), batch):
        rows = missing[start : start + batch]
        vectors = embedder.encode([texts[i] for i in rows], role, [ids[i] for i in rows])
        vectors = check_vectors(
            vectors, len(rows), f"{embedder.name} ({role} batch {start // batch})"
        )
        if cache:
            cache.store(role, [keys[i] for i in rows], vectors)
        table.update(zip((keys[i] for i in rows), vectors))
        if progress:
            done = start + len(rows)
            progress(role, done, len(missing), done / max(time.perf_counter() - started, 1e-9))
    if not keys:
        return np.zeros((0, 0), np.float32)
    return np.stack([table[k] for k in keys]).astype(np.float32, copy=False)
