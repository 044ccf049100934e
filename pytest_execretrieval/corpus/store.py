"""The generated corpus: snippets, their JSONL files and the manifest.

``corpus.jsonl`` is the retrieval pool (canonicals and distractors), ``alternatives.jsonl`` the
equivalent implementations kept out of the pool, ``yields.jsonl`` what each item's build yielded
(what an incremental build needs to reuse the item, see :mod:`.incremental`), ``manifest.json``
the hashes that tie them to the item files. Everything is written byte-identically for the same
items on every machine.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..bounded_json import JSONBoundError, parse_json, read_json
from ..records import ALTERNATIVE, CANONICAL, DISTRACTOR, REAL_BUG, Kind
from ..safe_write import write_atomic
from .items import BenchmarkItem, item_id, item_paths
from .twins import input_keys
from .variants import DEFAULT_VARIANT as DEFAULT_VARIANT  # which corpus: kept importable here
from .variants import MAX_STACK as MAX_STACK
from .variants import SOURCES as SOURCES
from .variants import CorpusVariant as CorpusVariant
from .variants import build_command as build_command
from .variants import corpus_dir as corpus_dir

CORPUS = "corpus.jsonl"
ALTERNATIVES = "alternatives.jsonl"
MANIFEST = "manifest.json"
YIELDS = "yields.jsonl"
# The kinds a committed corpus holds: every kind but BACKGROUND (a run adds those, unwritten).
CORPUS_KINDS: tuple[Kind, ...] = (CANONICAL, DISTRACTOR, REAL_BUG, ALTERNATIVE)
# The pool's wrong snippets: mutants (``distractor``) and pre-fix versions mined from history
# (``real_bug``, its ``operator`` the TSSB-3M pattern of the fix).
DISTRACTOR_KINDS: tuple[Kind, ...] = (DISTRACTOR, REAL_BUG)


class CorpusError(Exception):
    """The corpus is missing, stale or malformed; the message says which and how to fix it."""


@dataclass(frozen=True)
class Snippet:
    snippet_id: str
    query_id: str
    kind: Kind  # a corpus row's is checked as read (read_snippets, incremental.mismatch)
    operator: str | None
    line: int | None
    code: str
    diff: str
    outcomes: tuple[str, ...] = ()  # per test of the owning query, in test order
    failing_tests: tuple[int, ...] = ()
    kill: str | None = None  # distractors: "assertion" | "exception" | "timeout"
    edit_lines: int = 0
    edit_chars: int = 0
    # Annotated entry points only: {"inputs": N, "differing": D}, inputs drawn by hypothesis on
    # which this snippet and the canonical disagree (see mutation/equivalence.py).
    equivalence: dict | None = None

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, row: dict) -> Snippet:
        row = dict(row)
        row["outcomes"] = tuple(row.get("outcomes", ()))
        row["failing_tests"] = tuple(row.get("failing_tests", ()))
        return cls(**row)


@dataclass(frozen=True)
class Corpus:
    snippets: tuple[Snippet, ...]  # the retrieval pool, sorted by snippet_id
    alternatives: tuple[Snippet, ...] = ()
    engine: dict = field(default_factory=dict)

    def by_query(self) -> dict[str, list[Snippet]]:
        groups: dict[str, list[Snippet]] = {}
        for snippet in self.snippets:
            groups.setdefault(snippet.query_id, []).append(snippet)
        return groups


def sha256(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def unified_diff(canonical: str, code: str) -> str:
    lines = difflib.unified_diff(
        canonical.splitlines(keepends=True),
        code.splitlines(keepends=True),
        "canonical",
        "snippet",
        n=1,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def make_snippet(
    item: BenchmarkItem, kind: Kind, code: str, outcomes: tuple[str, ...], **extra
) -> Snippet:
    failing = tuple(i for i, outcome in enumerate(outcomes) if outcome != "pass")
    return Snippet(
        snippet_id=sha256(code),
        query_id=item.id,
        kind=kind,
        operator=extra.pop("operator", None),
        line=extra.pop("line", None),
        code=code,
        diff=unified_diff(item.canonical, code),
        outcomes=outcomes,
        failing_tests=failing,
        **extra,
    )


def jsonl(snippets: Sequence[Snippet]) -> bytes:
    rows = sorted(snippets, key=lambda s: s.snippet_id)
    text = "".join(
        json.dumps(s.to_json(), ensure_ascii=False, sort_keys=False) + "\n" for s in rows
    )
    return text.encode()


def manifest(
    items_dir: Path,
    corpus: Corpus,
    corpus_bytes: bytes,
    alt_bytes: bytes,
    records: dict[str, str] | None = None,
) -> dict:
    """``records``: per item id the digest of its committed records (:mod:`.incremental`)."""
    per_domain: dict[str, Counter] = {}
    for snippet in corpus.snippets:
        per_domain.setdefault(snippet.query_id.partition("/")[0], Counter())[snippet.kind] += 1
    operators = Counter(s.operator for s in corpus.snippets if s.kind == DISTRACTOR)
    patterns = Counter(s.operator for s in corpus.snippets if s.kind == REAL_BUG)
    real_bugs = (  # a corpus mined from history only: the others' manifests stay as they were
        {"real_bugs": sum(patterns.values()), "per_pattern": dict(sorted(patterns.items()))}
        if patterns
        else {}
    )
    return {
        "corpus_sha256": sha256(corpus_bytes),
        "alternatives_sha256": sha256(alt_bytes),
        "engine": corpus.engine,
        "counts": {
            "queries": sum(s.kind == CANONICAL for s in corpus.snippets),
            "snippets": len(corpus.snippets),
            "distractors": sum(operators.values()),
            "alternatives": len(corpus.alternatives),
            "per_domain": {d: dict(sorted(c.items())) for d, c in sorted(per_domain.items())},
            "per_operator": dict(sorted(operators.items())),
            **real_bugs,
        },
        "items": {item_id(p): sha256(p.read_bytes()) for p in item_paths(items_dir)},
        **_twin_inputs(items_dir),
    } | ({"records": records} if records is not None else {})


def _twin_inputs(items_dir: Path) -> dict:
    keys = input_keys(items_dir)
    return {"inputs": keys} if keys else {}  # a Python pool's manifest stays as it was


def write_corpus(
    items_dir: Path,
    corpus: Corpus,
    out_dir: Path | None = None,
    yields: bytes | None = None,
    records: dict[str, str] | None = None,
) -> dict:
    """Write corpus.jsonl, alternatives.jsonl, yields.jsonl (when given) and manifest.json, the
    manifest last; returns the manifest."""
    items_dir = Path(items_dir)
    out_dir = Path(out_dir or items_dir)
    corpus_bytes, alt_bytes = jsonl(corpus.snippets), jsonl(corpus.alternatives)
    meta = manifest(items_dir, corpus, corpus_bytes, alt_bytes, records)
    for name, data in (
        (CORPUS, corpus_bytes),
        (ALTERNATIVES, alt_bytes),
        *([(YIELDS, yields)] if yields is not None else []),
        (MANIFEST, (json.dumps(meta, indent=2, sort_keys=False) + "\n").encode()),
    ):
        # A committed symlink (the file, or `stack-K/`) must not redirect the write.
        write_atomic(out_dir / name, data, root=items_dir if _inside(out_dir, items_dir) else None)
    return meta


def _inside(path: Path, root: Path) -> bool:
    path, root = Path(path).absolute(), Path(root).absolute()
    return path == root or root in path.parents


STALE_KINDS = (
    "manifest-missing",
    "manifest-unreadable",
    "file-missing",
    "file-changed",
    "engine",
    "item-removed",
    "item-new",
    "item-changed",
    "corpus-unreadable",
)


@dataclass(frozen=True)
class StaleReason:
    """One way a committed corpus differs from its item files or the engine.

    ``kind`` is one of :data:`STALE_KINDS`; ``item_id`` names the item for the ``item-*`` kinds
    and is None for corpus-wide reasons (manifest, corpus files, engine). ``message`` is for
    people only: code decides on ``kind`` and ``item_id``, never on the text.
    """

    kind: str
    message: str
    item_id: str | None = None

    def __str__(self) -> str:
        return self.message


def stale_reasons(items_dir: Path, engine: dict, where: Path | None = None) -> list[StaleReason]:
    """Why the committed corpus does not match the item files and engine (empty: up to date).

    Compares hashes only (no execution): every item file against the manifest, the corpus files
    against their recorded sha256, and the engine versions that generated them. Reasons come in
    that order (corpus files, engine, then items sorted by id); a missing or unreadable manifest
    is the only reason given.
    """
    items_dir = Path(items_dir)
    where = Path(where or items_dir)
    if not (where / MANIFEST).exists():
        message = f"{where / MANIFEST} does not exist: the corpus was never built"
        return [StaleReason("manifest-missing", message)]
    try:
        meta = read_json(where / MANIFEST)
    except JSONBoundError as exc:
        return [StaleReason("manifest-unreadable", f"the manifest is unreadable: {exc}")]
    reasons = []
    for name, key in ((CORPUS, "corpus_sha256"), (ALTERNATIVES, "alternatives_sha256")):
        path = where / name
        if not path.exists():
            reasons.append(StaleReason("file-missing", f"{path} is missing"))
        elif sha256(path.read_bytes()) != meta.get(key):
            message = f"{path} differs from the manifest (edited or truncated)"
            reasons.append(StaleReason("file-changed", message))
    if meta.get("engine") != engine:
        message = f"generated by engine {meta.get('engine')}, current engine is {engine}"
        reasons.append(StaleReason("engine", message))
    recorded: dict = meta.get("items", {})
    current = {item_id(p): p for p in item_paths(items_dir)}
    twins, built_for = input_keys(items_dir), meta.get("inputs", {})
    built_for = built_for if isinstance(built_for, dict) else {}
    for iid in sorted(set(recorded) | set(current)):
        if iid not in current:
            message = f"item {iid} was removed since the corpus was built"
            reasons.append(StaleReason("item-removed", message, iid))
        elif iid not in recorded:
            reasons.append(StaleReason("item-new", f"item {iid} is new: not in the corpus", iid))
        elif sha256(current[iid].read_bytes()) != recorded[iid]:
            message = f"item {iid} changed since the corpus was built ({current[iid]})"
            reasons.append(StaleReason("item-changed", message, iid))
        elif twins.get(iid) != built_for.get(iid):
            message = f"the signature of item {iid}'s Python twin changed since the build"
            reasons.append(StaleReason("item-changed", message, iid))
    return reasons


def read_snippets(path: Path) -> list[Snippet]:
    snippets = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                snippet = Snippet.from_json(parse_json(line, f"{path}:{number}"))
            except JSONBoundError as exc:
                raise CorpusError(f"malformed corpus row: {exc}") from None
            except TypeError as exc:
                raise CorpusError(f"{path}:{number}: malformed corpus row: {exc}") from None
            if snippet.kind not in CORPUS_KINDS or snippet.snippet_id != sha256(snippet.code):
                raise CorpusError(f"{path}:{number}: bad kind or snippet_id does not hash its code")
            snippets.append(snippet)
    return snippets


def read_corpus(
    items_dir: Path,
    engine: dict | None = None,
    where: Path | None = None,
    variant: CorpusVariant = DEFAULT_VARIANT,
) -> Corpus:
    """Load the committed ``variant`` corpus (from ``where``, default its directory of the
    items directory); raises :class:`CorpusError` when it is missing, malformed or, given
    ``engine``, stale, naming the command that builds it."""
    items_dir = Path(items_dir)
    where = Path(where or corpus_dir(items_dir, variant))
    if engine is not None:
        reasons = stale_reasons(items_dir, engine, where)
        if reasons:
            raise CorpusError(
                f"the corpus in {where} is stale; run `{build_command(items_dir, variant)}`:\n  "
                + "\n  ".join(map(str, reasons))
            )
    try:
        meta = read_json(where / MANIFEST)
    except JSONBoundError as exc:
        raise CorpusError(f"{exc}; run `execretrieval build`") from None
    return Corpus(
        snippets=tuple(read_snippets(where / CORPUS)),
        alternatives=tuple(read_snippets(where / ALTERNATIVES)),
        engine=meta.get("engine", {}),
    )


def corpus_sha256(where: Path) -> str:
    return json.loads((Path(where) / MANIFEST).read_text())["corpus_sha256"]
