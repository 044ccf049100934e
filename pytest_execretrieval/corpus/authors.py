"""Scoring on the authors' tests alone (``--execretrieval-tests authors``, issue 40).

A mined item's tests record where each came from (its ``[source]`` table's ``tests``:
``doctest FILE:LINE``, ``test FILE:LINE`` or ``recorded``, the last being the canonical's own
outputs recorded in the sandbox). With ``authors``, every item keeps only the tests its
package's authors wrote; an item without provenance keeps all of its tests (all are its
authors'), and an item left with none is no query of the run (its snippets stay in the pool).

Nothing runs again: a snippet's recorded outcomes are per test, so the same outcomes at the
kept positions are what it does on the kept tests. A distractor that only a recorded test
killed then passes every kept test, and counts as correct when it is ranked first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .items import BenchmarkItem
from .store import Corpus, Snippet

TESTS = ("all", "authors")  # the values of --execretrieval-tests
RECORDED = "recorded"


def authors_positions(item: BenchmarkItem) -> tuple[int, ...]:
    """The positions of ``item``'s tests its package's authors wrote."""
    provenance = item.source.tests if item.source else ()
    if not provenance:
        return tuple(range(len(item.tests)))
    return tuple(i for i, where in enumerate(provenance) if where != RECORDED)


def authors_only(
    items: Sequence[BenchmarkItem], corpus: Corpus
) -> tuple[list[BenchmarkItem], Corpus, list[str]]:
    """The items with their authors' tests only, the corpus's outcomes cut to match, and the
    ids of the items left without a test (dropped)."""
    kept: dict[str, tuple[int, ...]] = {}
    out, dropped = [], []
    for item in items:
        positions = authors_positions(item)
        if not positions:
            dropped.append(item.id)
            continue
        kept[item.id] = positions
        out.append(_cut_item(item, positions))
    # A dropped item's snippets stay in the pool: the code base is the same.
    pool = tuple(_cut_snippet(s, kept.get(s.query_id)) for s in corpus.snippets)
    return out, replace(corpus, snippets=pool), dropped


def _cut_item(item: BenchmarkItem, positions: tuple[int, ...]) -> BenchmarkItem:
    if len(positions) == len(item.tests):
        return item
    source = item.source
    if source is not None:
        source = replace(source, tests=tuple(source.tests[i] for i in positions))
    return replace(item, tests=tuple(item.tests[i] for i in positions), source=source)


def _cut_snippet(snippet: Snippet, positions: tuple[int, ...] | None) -> Snippet:
    if positions is None or not snippet.outcomes or len(positions) == len(snippet.outcomes):
        return snippet
    outcomes = tuple(snippet.outcomes[i] for i in positions)
    failing = tuple(j for j, o in enumerate(outcomes) if o != "pass")
    return replace(snippet, outcomes=outcomes, failing_tests=failing)
