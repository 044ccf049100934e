"""Embedding cache: vectors keyed by the full invocation, the role and sha256 of the text.

Layout: ``<cache>/embeddings/<sha256(invocation)[:32]>/<role>/<shard>.vec``; each shard holds
one encoded batch (text hashes + vectors, an ``.npz`` archive read without pickles) and is
written atomically as soon as the batch is done, so an interrupted run resumes where it
stopped. A shard is a signed file (:class:`..signed_files.SignedFiles`): the cache may sit in a
checkout, and both the invocation key and the text keys are computable by anyone, so a vector
there is used only when the user's key signed it. An unreadable or foreign shard is removed
and its texts are encoded again; shards not signed with the user's key (committed, copied from
another machine, or ``.npz`` shards of earlier versions) are named in one warning per role.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import time
import warnings
from collections.abc import Callable, Container, Sequence
from pathlib import Path

import numpy as np

from ..safe_write import write_atomic
from ..signed_files import KEY_ENV, KEY_FILE_ENV, SignedFiles, discard
from . import DenseEncoder, check_vectors

Progress = Callable[[str, int, int, float], None]  # (role, done, total, texts per second)
ENCODE_BATCH = 256  # texts per embedder.encode call of encode_cached
MAX_SHARD = 256 * 1024 * 1024  # bytes of one shard read: a batch of 256 texts, 4,096 dimensions
_MAGIC = b"execretrieval-vectors1"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def invocation_key(invocation: dict) -> str:
    return hashlib.sha256(json.dumps(invocation, sort_keys=True).encode()).hexdigest()[:32]


class EmbeddingCache:
    def __init__(self, root: Path, invocation: dict):
        self.root = Path(root)
        self.dir = self.root / "embeddings" / invocation_key(invocation)
        self.invocation = invocation
        self.signed = SignedFiles(self.dir, self.root, _MAGIC)
        self.ignored = 0  # shards not signed with the user's key: removed, texts re-encoded

    def _entry_key(self, role: str, name: str) -> str:
        return f"{self.dir.name}/{role}/{name}"

    def load(self, role: str) -> dict[str, np.ndarray]:
        table: dict[str, np.ndarray] = {}
        folder = self.dir / role
        foreign = self.signed.foreign
        unsigned = sorted(folder.glob("*.npz"))  # earlier versions' shards: no signature
        for shard in unsigned:
            discard(shard, None)
        for shard in sorted(folder.glob("*.vec")):
            body = self.signed.read_body(shard, self._entry_key(role, shard.stem), MAX_SHARD)
            if body is None:
                continue
            try:
                with np.load(io.BytesIO(body), allow_pickle=False) as npz:
                    keys, vectors = npz["keys"].tolist(), npz["vectors"]
                check_vectors(vectors, len(keys), str(shard))
            except Exception:  # any damage: forget the shard, its texts get re-encoded
                shard.unlink(missing_ok=True)
                continue
            table.update(zip(keys, vectors))
        ignored = len(unsigned) + self.signed.foreign - foreign
        if ignored:
            self.ignored += ignored
            warnings.warn(ignored_line(ignored, folder), UserWarning, stacklevel=2)
        return table

    def store(self, role: str, keys: Sequence[str], vectors: np.ndarray) -> None:
        meta = self.dir / "invocation.json"
        if not meta.exists():
            write_atomic(
                meta, json.dumps(self.invocation, indent=1, sort_keys=True), root=self.root
            )
        name = hashlib.sha256("".join(keys).encode()).hexdigest()[:24]
        buffer = io.BytesIO()
        np.savez(buffer, keys=np.array(list(keys), dtype=str), vectors=vectors)
        path = self.dir / role / f"{name}.vec"
        self.signed.write_body(path, self._entry_key(role, name), buffer.getvalue())


def ignored_line(count: int, folder: Path) -> str:
    """The line naming the cached embedding shards not used for their signature."""
    return (
        f"{count} cached embedding shard{'s' * (count != 1)} in {folder} ignored: not signed "
        "with your key (committed to the checkout, copied from another machine, or written by "
        f"an earlier version); their texts are encoded again. To share a cache between "
        f"machines, set {KEY_ENV} or {KEY_FILE_ENV} to one secret on each"
    )


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
