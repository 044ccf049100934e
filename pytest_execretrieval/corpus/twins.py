"""The Python twin of a JavaScript item: where it is, what of it the evidence reads.

An items directory's JavaScript pool is its ``javascript/`` folder (:mod:`.pools`), and
``<dir>/javascript/<domain>/<stem>.toml`` is the twin of ``<dir>/<domain>/<stem>.toml``: the
same query in Python. A JavaScript item's differential evidence draws its inputs from the
twin's annotated signature (:mod:`..mutation.twin_evidence`), so the twin is read here (its text
bounded as any item file's, its code parsed, never run), and its signature is recorded in the
manifest (:func:`input_keys`): a corpus built for another signature is stale.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from ..bounds import read_item_text
from ..languages import POOL_LANGUAGES
from ..mutation.equivalence import Inputs
from ..mutation.twin_evidence import Twin, signature_key
from .items import BenchmarkItem, item_id, item_paths

__all__ = ["input_key", "input_keys", "input_types", "twin_path", "twin_source"]


def twin_path(path: Path) -> Path | None:
    """The Python twin's file of the item file ``path`` of a language pool's folder
    (:data:`..languages.POOL_LANGUAGES`), if there is one."""
    path = Path(path)
    pool = path.parent.parent
    if pool.name not in POOL_LANGUAGES:
        return None
    twin = pool.parent / path.parent.name / path.name
    return twin if twin.is_file() else None


def twin_source(path: Path) -> Twin | str:
    """The twin's canonical and entry point, or why there is none to read."""
    twin = twin_path(path)
    if twin is None:
        return "it has no Python twin (the same <domain>/<stem>.toml beside its javascript folder)"
    try:
        data = tomllib.loads(read_item_text(twin))
        canonical, entry_point = data["canonical"], data["entry_point"]
    except Exception as exc:  # noqa: BLE001 - an untrusted file: any failure is its problem
        return f"its Python twin does not load ({type(exc).__name__})"
    if not isinstance(canonical, str) or not isinstance(entry_point, str):
        return "its Python twin's canonical or entry point is not a string"
    return canonical, entry_point


def input_types(item: BenchmarkItem) -> Inputs:
    """The types ``item``'s evidence draws its inputs of, or None and why there are none
    (:meth:`..languages.Language.input_types`: a Python item's are its own)."""
    return item.lang.input_types(item.canonical, item.entry_point, twin_source(item.path))


def input_key(path: Path) -> str | None:
    """What the evidence of the item at ``path`` reads of its twin: the twin's signature
    (:func:`..mutation.twin_evidence.signature_key`); None without a twin."""
    twin = twin_source(path) if twin_path(path) is not None else None
    return signature_key(*twin) if isinstance(twin, tuple) else None


def input_keys(items_dir: Path) -> dict[str, str]:
    """Per item of a JavaScript pool with a Python twin, :func:`input_key`: the manifest's
    ``inputs`` entry. Empty for every other items directory."""
    keys = {item_id(path): input_key(path) for path in item_paths(items_dir)}
    return {iid: key for iid, key in keys.items() if key is not None}
