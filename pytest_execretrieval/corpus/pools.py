"""The language pools of an items directory: which items are ranked against which corpus.

An items directory holds its own pool (its ``<domain>/<stem>.toml`` files and the corpus built
beside them) and, for each language of :data:`POOL_LANGUAGES` whose folder it has, that
language's pool: ``<items_dir>/javascript/`` is an items directory of its own (its items
``javascript/<domain>/<stem>.toml``, its own ``corpus.jsonl`` and manifest, built by
``execretrieval build <items_dir>/javascript``). A query is ranked against its own pool only,
and twins are paired by item id: ``strings/x`` in the directory's pool and ``strings/x`` in the
JavaScript pool are the same query in two languages.

The directory's own pool is named ``""``: its node ids, report files and reports are what they
were before any other pool existed. Another pool's node ids are prefixed with its name
(``javascript/strings/x[bm25]``), its reports go to a folder of that name in the report
directory and carry a ``language`` field.

Several items directories (``--execretrieval-items=A --execretrieval-items=B``) make one pool
per language: the union of each directory's own pool, and of each one's ``javascript/`` folder
(:func:`combined_pools`). Each directory keeps its own committed corpus; an item id may be in
one directory only (:func:`duplicate_items`), and the pool's identity covers every directory's
corpus in order (:func:`combined_sha256`), so a single directory's is unchanged.

A language pool takes part in the default corpus only: the stacked, mutmut and families corpora
are built from Python's operator table (or mutmut, which reads Python), so a run of one of
those leaves the other languages' folders alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..languages import POOL_LANGUAGES
from .items import item_id, item_paths
from .store import DEFAULT_VARIANT, CorpusVariant

__all__ = [
    "POOL_LANGUAGES",
    "Pool",
    "combined_pools",
    "combined_sha256",
    "duplicate_items",
    "language_pools",
]


@dataclass(frozen=True)
class Pool:
    """One pool of an items directory: ``name`` ``""`` for the directory's own, else the
    language whose folder ``items_dir`` is. ``others``: the same pool's folders in further
    items directories (several ``--execretrieval-items``), ranked as one pool with it."""

    name: str
    items_dir: Path
    others: tuple[Path, ...] = ()

    @property
    def items_dirs(self) -> tuple[Path, ...]:
        """Every folder of this pool, in the order the items directories were named."""
        return (self.items_dir, *self.others)

    @property
    def prefix(self) -> str:
        """What this pool's node ids start with (``""`` or ``"javascript/"``)."""
        return f"{self.name}/" if self.name else ""

    @property
    def language(self) -> str | None:
        """The ``language`` field of this pool's reports (``None``: the field is left out)."""
        return self.name or None


def language_pools(items_dir: Path, variant: CorpusVariant = DEFAULT_VARIANT) -> list[Pool]:
    """The pools of ``items_dir`` in a run of the ``variant`` corpus: its own, then each
    language of :data:`POOL_LANGUAGES` whose folder is there (default corpus only)."""
    pools = [Pool("", Path(items_dir))]
    if variant == DEFAULT_VARIANT:
        pools += [
            Pool(name, Path(items_dir) / name)
            for name in POOL_LANGUAGES
            if (Path(items_dir) / name).is_dir() and not (Path(items_dir) / name).is_symlink()
        ]
    return pools


def combined_pools(
    items_dirs: Sequence[Path], variant: CorpusVariant = DEFAULT_VARIANT
) -> list[Pool]:
    """The pools of several items directories ranked together: per pool name, the folders of
    every directory that has it, in order (one directory: :func:`language_pools`)."""
    folders: dict[str, list[Path]] = {}
    for items_dir in items_dirs:
        for pool in language_pools(items_dir, variant):
            folders.setdefault(pool.name, []).append(pool.items_dir)
    return [Pool(name, found[0], tuple(found[1:])) for name, found in folders.items()]


def duplicate_items(pools: Sequence[Pool]) -> list[str]:
    """Each item id that two folders of one pool both hold, with both files: item ids name the
    queries of reports and baselines, so an id is one item's in a pool."""
    found = []
    for pool in pools:
        first: dict[str, Path] = {}
        for folder in pool.items_dirs:
            for path in item_paths(folder):
                qid = pool.prefix + item_id(path)
                if qid in first:
                    found.append(f"{qid}: {first[qid]} and {path}")
                else:
                    first[qid] = path
    return found


def combined_sha256(corpus_sha256s: Sequence[str]) -> str:
    """The identity of a pool made of several directories' corpora: a hash of each corpus's
    sha256, in order; one corpus's is its own (a single directory's reports are unchanged)."""
    if len(corpus_sha256s) == 1:
        return corpus_sha256s[0]
    text = "\n".join(["items directories", *corpus_sha256s])
    return hashlib.sha256(text.encode()).hexdigest()
