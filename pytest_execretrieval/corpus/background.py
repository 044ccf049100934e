"""A background pool: a code base's real functions beside every query's own snippets.

``--execretrieval-background SOURCE`` (issue 40) adds every function mined from SOURCE, with
tests or without, to the pool of every query as a natural neighbour: what a search system over
that code base would also hold. Each becomes a :class:`~.store.Snippet` of kind ``background``
whose ``query_id`` says where it came from, ``background:<SOURCE>:<file>:<name>`` (on one
line, control characters escaped: the source's metadata is untrusted text): it belongs to no
query. A source that cannot be read, an archive bomb included, is a usage error naming it
(:func:`..orchestration.background_functions`, :mod:`..mining.sources`).

Execution still decides. A background function ranked first passes a query iff it passes the
query's tests in the sandbox, called as the query's entry point: a code base's duplicate of a
canonical rarely has its name, so a function that does not define the entry point is run with
the entry point bound to it (``<entry> = <name>`` after its code). One that defines the entry
point (as a helper of its own) is run as it is, as any other query's snippet would be.

The pool's identity changes with its background: :func:`pool_sha256` is the corpus's sha256
when there is none (so reports without a background are unchanged), else a hash of the
corpus's and every background snippet's, so a report is never gated against a baseline of
another pool.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..records import BACKGROUND
from ..sanitize import one_line
from .store import Corpus, Snippet, sha256

PREFIX = "background:"


@dataclass(frozen=True)
class BackgroundFunction:
    """One function of a background source: ``origin`` (``SOURCE:FILE``), its own ``name``
    and its self-contained ``code`` (the helpers it needs included)."""

    origin: str
    name: str
    code: str


def background_snippets(functions: Iterable[BackgroundFunction], corpus: Corpus) -> list[Snippet]:
    """The background snippets of ``functions``, by snippet id; code that the corpus's pool
    already holds (a mined canonical is its own source's function) or that two functions share
    is kept once, the first origin in sorted order."""
    taken = {s.snippet_id for s in corpus.snippets}
    out: dict[str, Snippet] = {}
    for f in sorted(functions, key=lambda f: (f.origin, f.name)):
        sid = sha256(f.code)
        if sid in taken or sid in out:
            continue
        query_id = one_line(f"{PREFIX}{f.origin}:{f.name}")  # the source's metadata: untrusted
        out[sid] = Snippet(sid, query_id, BACKGROUND, None, None, f.code, "")
    return [out[sid] for sid in sorted(out)]


def with_background(corpus: Corpus, snippets: Sequence[Snippet]) -> Corpus:
    """``corpus`` whose pool also holds ``snippets`` (the pool stays sorted by snippet id)."""
    if not snippets:
        return corpus
    pool = tuple(sorted((*corpus.snippets, *snippets), key=lambda s: s.snippet_id))
    return replace(corpus, snippets=pool)


def pool_sha256(corpus_sha256: str, snippets: Sequence[Snippet]) -> str:
    """The pool's identity in reports (see the module docs)."""
    if not snippets:
        return corpus_sha256
    digest = hashlib.sha256(corpus_sha256.encode())
    for s in sorted(snippets, key=lambda s: s.snippet_id):
        digest.update(f"\n{s.snippet_id} {s.query_id}".encode())
    return digest.hexdigest()


def describe(pool: Sequence[Snippet]) -> dict | None:
    """The report's ``corpus.background`` of a pool: its sources and how many functions it
    added (None: no background)."""
    found = [s for s in pool if is_background(s)]
    if not found:
        return None
    sources = sorted({s.query_id[len(PREFIX) :].rsplit(":", 2)[0] for s in found})
    return {"sources": sources, "n_snippets": len(found)}


def is_background(snippet: Snippet) -> bool:
    return snippet.kind == BACKGROUND


def function_name(snippet: Snippet) -> str:
    """A background snippet's own function name (the last field of its ``query_id``)."""
    return snippet.query_id.rsplit(":", 1)[1]


def as_entry_point(snippet: Snippet, entry_point: str, defines: bool) -> str:
    """The code that runs when ``snippet`` (a background function) answers a query whose entry
    point is ``entry_point`` (``defines``: its code already defines that name)."""
    name = function_name(snippet)
    if defines or name == entry_point:
        return snippet.code
    return f"{snippet.code.rstrip()}\n\n{entry_point} = {name}\n"
