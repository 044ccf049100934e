"""``npz:PATH``: frozen embedding matrices, so published embeddings replay without the model.

The file holds ``query_ids``, ``query_vectors``, ``snippet_ids``, ``snippet_vectors`` and
``invocation`` (JSON of the embedder that made them); ``execretrieval embed`` writes it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..bounded_json import JSONBoundError, parse_json
from ..safe_write import atomic_path
from . import EmbedderBase, EmbedderError, EmbedderOptions, check_vectors

ROLE_KEYS = {
    "query": ("query_ids", "query_vectors"),
    "document": ("snippet_ids", "snippet_vectors"),
}


def write_npz(
    path: Path, invocation: dict, vectors: dict[str, tuple[list[str], np.ndarray]]
) -> None:
    """``vectors`` maps role -> (ids, matrix)."""
    arrays: dict[str, Any] = {"invocation": np.array(json.dumps(invocation, sort_keys=True))}
    for role, (ids_key, vectors_key) in ROLE_KEYS.items():
        ids, matrix = vectors[role]
        arrays[ids_key] = np.array(ids, dtype=str)
        arrays[vectors_key] = np.asarray(matrix, dtype=np.float32)
    with atomic_path(Path(path), suffix=".npz") as tmp:  # savez appends .npz to other names
        np.savez_compressed(tmp, **arrays)


class FrozenEmbedder(EmbedderBase):
    def __init__(self, options: EmbedderOptions, path: str):
        self.path = Path(path)
        self.name = f"npz:{path}"
        self._data: dict | None = None

    def _load(self) -> dict:
        if self._data is None:
            try:
                with np.load(self.path, allow_pickle=False) as npz:
                    data = {key: npz[key] for key in npz.files}
            except (OSError, ValueError) as exc:
                raise EmbedderError(f"{self.name}: cannot read frozen matrices: {exc}") from None
            missing = {"invocation", *sum(ROLE_KEYS.values(), ())} - set(data)
            if missing:
                raise EmbedderError(f"{self.name}: missing arrays {sorted(missing)}")
            for role, (ids_key, vectors_key) in ROLE_KEYS.items():
                ids = [str(i) for i in data[ids_key].tolist()]
                if len(set(ids)) != len(ids):
                    raise EmbedderError(f"{self.name}: duplicate ids in {ids_key}")
                matrix = check_vectors(data[vectors_key], len(ids), f"{self.name} {vectors_key}")
                data[role] = dict(zip(ids, matrix))
            dims = {data[k].shape[1] for _, k in ROLE_KEYS.values()}
            if len(dims) != 1:
                raise EmbedderError(f"{self.name}: query and snippet dimensions differ: {dims}")
            self._data = data
        return self._data

    def check_usable(self) -> None:
        if not self.path.is_file():
            raise EmbedderError(f"{self.name}: no such file")
        self._load()

    def invocation(self) -> dict:
        try:
            original = parse_json(str(self._load()["invocation"]), f"{self.path}: invocation")
        except JSONBoundError as exc:
            raise EmbedderError(f"{self.name}: {exc}") from None
        return {**original, "name": self.name, "frozen_from": original.get("name")}

    def encode(self, texts: Sequence[str], role: str, ids: Sequence[str]) -> np.ndarray:
        table = self._load()[role]
        missing = [i for i in ids if i not in table]
        if missing:
            raise EmbedderError(
                f"{self.name}: no {role} vector for {len(missing)} ids, "
                f"e.g. {missing[:3]} (frozen for another corpus?)"
            )
        return np.stack([table[i] for i in ids]).astype(np.float32)
