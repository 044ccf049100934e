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

A language pool takes part in the default corpus only: the stacked, mutmut and families corpora
are built from Python's operator table (or mutmut, which reads Python), so a run of one of
those leaves the other languages' folders alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .store import DEFAULT_VARIANT, CorpusVariant

__all__ = ["POOL_LANGUAGES", "Pool", "language_pools"]

# The languages whose pool may sit in a folder of that name inside an items directory.
POOL_LANGUAGES = ("javascript",)


@dataclass(frozen=True)
class Pool:
    """One pool of an items directory: ``name`` ``""`` for the directory's own, else the
    language whose folder ``items_dir`` is."""

    name: str
    items_dir: Path

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
