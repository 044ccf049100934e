"""Item files validated once: the checked fields of every good item file, keyed by its bytes.

Validating an item file (the schema, the AST gates, every test through the test grammar) costs
about 2.5 ms, 2.5 s for the bundled 1,000 items, and every benchmark and verification run
starts with it. The result is a function of the file's bytes, its path under the items
directory and the validating code, so :class:`ItemCache` keeps it: one entry per items
directory, ``<cache dir>/items/<sha256 of the directory's path>.json``, holding per item file
(``<domain>/<name>.toml``) the sha256 of its text and the :class:`.items.BenchmarkItem` fields.
An entry answers only for a file whose text has that sha256, under the same
:func:`validator_fingerprint` (the code of ``items.py``, ``bounds.py``, the test grammar and
JavaScript's gate and parser, the Python version, whose standard-library names the import gate
reads, and the tree-sitter versions, whose grammar JavaScript's gate parses with).

The cache directory may sit in a checkout (a pull request can commit files there), and an
entry says "this file passed the gates": entries are signed like the outcome cache's, with the
user's key (:class:`..signed_files.SignedFiles`); one that does not verify is
deleted and every file validated again. Malformed files are never cached: their problems are
found, and reported, on every run. The file's text is still read on every run (bounded, a
symlink refused: :func:`.bounds.read_item_text`), only the parsing is skipped.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from dataclasses import asdict
from pathlib import Path

from .. import bounds
from ..bounded_json import parse_json
from ..execution import _grammar
from ..execution.contexts import ContextError
from ..languages import LANGUAGES
from ..signed_files import SignedFiles
from . import items
from .items import BenchmarkItem, ItemContext, ItemSource, prepared

_MAX_BYTES = 64 * 1024 * 1024  # an entry for many thousands of items
_MAGIC = b"execretrieval-items1"
_FIELDS = (
    "id",
    "domain",
    "query",
    "entry_point",
    "canonical",
    "tests",
    "setup",
    "alternatives",
    "language",
    "source",
    "real_bug",
    "context",
)


@functools.lru_cache(maxsize=1)
def validator_fingerprint() -> str:
    """What an item's validation depends on besides its file: the validating modules' code,
    the Python version and each language's gates (:meth:`..languages.Language.gate_inputs`)."""
    digest = hashlib.sha256(sys.version.encode())
    for module in (items, bounds, _grammar):
        digest.update(Path(str(module.__file__)).read_bytes())
    for name in sorted(LANGUAGES):
        for part in LANGUAGES[name].gate_inputs():
            digest.update(part)
    return digest.hexdigest()


class ItemCache:
    """The validated items of one items directory (``load_items(root, cache)`` asks it first);
    :meth:`save` writes what changed."""

    def __init__(self, cache_dir: Path, items_dir: Path):
        self.items_dir = Path(items_dir).resolve()
        where = hashlib.sha256(str(self.items_dir).encode()).hexdigest()
        self.key = hashlib.sha256(f"{validator_fingerprint()}\n{where}".encode()).hexdigest()
        self.signer = SignedFiles(Path(cache_dir) / "items", Path(cache_dir), _MAGIC)
        self.path = Path(cache_dir) / "items" / f"{where[:32]}.json"
        self.entries: dict[str, list] = {}  # "<domain>/<name>.toml" -> [text sha256, fields]
        self.seen: dict[str, list] = {}  # what this load found: the next entry
        self.read: dict[str, str | None] = {}  # the text sha256 each file had at get()
        try:  # the user's key cannot be read or made: every file is validated, as without
            body = self.signer.read_body(self.path, self.key, _MAX_BYTES)
            self.entries = parse_json(body, str(self.path)) if body else {}
        except (OSError, ValueError):
            self.entries = {}

    def _text_sha(self, path: Path) -> str | None:
        try:
            text = bounds.read_item_text(path)
        except Exception:  # noqa: BLE001 - the file's problem: validation names it
            return None
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, path: Path) -> BenchmarkItem | None:
        """The item of ``path`` as validated before, if its text is the one validated."""
        name = f"{path.parent.name}/{path.name}"
        sha = self.read[name] = self._text_sha(path)
        entry = self.entries.get(name)
        if entry is None or sha is None or sha != entry[0]:
            return None
        self.seen[name] = entry
        fields = {
            **entry[1],
            "tests": tuple(entry[1]["tests"]),
            "alternatives": tuple(entry[1]["alternatives"]),
            "source": ItemSource.from_table(entry[1].get("source")),
            "context": ItemContext(**entry[1]["context"]) if entry[1].get("context") else None,
        }
        item = BenchmarkItem(path=path, **fields)
        if item.context is not None:
            try:
                prepared(path, item.context)  # the user's cache may have lost it
            except ContextError:
                return None  # validated again: the problem is named there
        return item

    def put(self, path: Path, item: BenchmarkItem) -> None:
        """Record ``item``, just validated from ``path`` after :meth:`get` missed. The text is
        read again: a file that changed between the two reads is not recorded (the fields
        might be the other text's)."""
        name = f"{path.parent.name}/{path.name}"
        sha = self._text_sha(path)
        if sha is not None and sha == self.read.get(name):
            fields = asdict(item)
            self.seen[name] = [sha, {k: fields[k] for k in _FIELDS}]

    def save(self) -> None:
        """Write the entry when this load found anything else than it holds (files added,
        changed or gone); a cache directory that cannot be written only costs the next run."""
        if self.seen == self.entries:
            return
        body = json.dumps(self.seen, sort_keys=True, separators=(",", ":")).encode()
        try:
            self.signer.write_body(self.path, self.key, body)
        except (OSError, ValueError):
            pass
