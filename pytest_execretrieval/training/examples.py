"""Contrastive training examples from a corpus: what a model learns from one split's items.

One example per (query, positive): the positive is the item's canonical, or one of its
alternatives (equivalent rewrites kept out of the pool); the negatives are the query's own chosen
distractors, the mutants that execution proves wrong: the hard negatives the benchmark punishes a
model for ranking high. Every example of a query carries the same negatives, in snippet-id order,
padded cyclically to the split's largest count (the dataset needs a fixed number of columns, and a
repeated negative only repeats a term of the loss). Only items in ``ids`` contribute anything.

A cross-encoder learns from whole :class:`Family` records instead: :func:`pair_columns` (one
labelled pair per document) or :func:`list_columns` (one labelled list per query).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..corpus.items import BenchmarkItem
from ..corpus.store import Corpus
from ..records import CANONICAL, DISTRACTOR


@dataclass(frozen=True)
class Example:
    item_id: str
    query: str
    positive: str
    negatives: tuple[str, ...]


@dataclass(frozen=True)
class Family:
    """A query's family as a reranker learns it: the canonical and (optionally) the
    alternatives as positives, the chosen distractors as negatives (document texts)."""

    item_id: str
    query: str
    positives: tuple[str, ...]
    negatives: tuple[str, ...]


def families(
    items: Sequence[BenchmarkItem],
    corpus: Corpus,
    ids: Collection[str],
    negatives: int = 0,
    alternatives: bool = True,
) -> list[Family]:
    """The families of the items in ``ids``, sorted by item id (positives: canonical first,
    then, with ``alternatives``, the alternatives in snippet-id order). ``negatives`` > 0 keeps
    that many distractors per query, the first in snippet-id order (a hash order: a
    reproducible, effectively random choice). Items without distractors are left out: they
    have no hard negative to teach."""
    from ..ranking.benchmark import document_text  # what the benchmark embeds of a snippet

    ids = set(ids)
    by_query = corpus.by_query()
    extra: dict[str, list] = {}
    for a in sorted(corpus.alternatives, key=lambda s: s.snippet_id) if alternatives else ():
        extra.setdefault(a.query_id, []).append(a)
    found = []
    for item in sorted(items, key=lambda i: i.id):
        if item.id not in ids:
            continue
        own = sorted(by_query.get(item.id, []), key=lambda s: s.snippet_id)
        canonical = [s for s in own if s.kind == CANONICAL]
        hard = [document_text(s) for s in own if s.kind == DISTRACTOR][: negatives or None]
        if not canonical or not hard:
            continue
        positives = (canonical[0], *extra.get(item.id, []))
        found.append(
            Family(item.id, item.query, tuple(document_text(p) for p in positives), tuple(hard))
        )
    return found


def training_examples(
    items: Sequence[BenchmarkItem],
    corpus: Corpus,
    ids: Collection[str],
    negatives: int = 0,
    alternatives: bool = True,
) -> list[Example]:
    """The examples of :func:`families` (same arguments): see :func:`examples_of`."""
    return examples_of(families(items, corpus, ids, negatives, alternatives))


def examples_of(found: Sequence[Family]) -> list[Example]:
    """One example per (query, positive), in the families' order, every example's negatives
    padded cyclically to the largest count."""
    width = max((len(f.negatives) for f in found), default=0)
    return [
        Example(
            f.item_id, f.query, p, tuple(f.negatives[j % len(f.negatives)] for j in range(width))
        )
        for f in found
        for p in f.positives
    ]


def as_columns(examples: Sequence[Example]) -> dict[str, list[str]]:
    """The columns sentence-transformers' losses read: anchor, positive, negative_1..n."""
    columns = {"anchor": [e.query for e in examples], "positive": [e.positive for e in examples]}
    width = len(examples[0].negatives) if examples else 0
    for j in range(width):
        columns[f"negative_{j + 1}"] = [e.negatives[j] for e in examples]
    return columns


def pair_columns(found: Sequence[Family]) -> dict[str, list]:
    """One row per (query, document) with a 0/1 label (a pointwise loss: ``bce``)."""
    rows = [
        (f.query, doc, float(label))
        for f in found
        for label, docs in ((1, f.positives), (0, f.negatives))
        for doc in docs
    ]
    return {
        "query": [q for q, _, _ in rows],
        "document": [d for _, d, _ in rows],
        "label": [y for _, _, y in rows],
    }


def list_columns(found: Sequence[Family]) -> dict[str, list]:
    """One row per family: the query, its documents, their 0/1 labels (listwise losses)."""
    return {
        "query": [f.query for f in found],
        "documents": [[*f.positives, *f.negatives] for f in found],
        "labels": [[1.0] * len(f.positives) + [0.0] * len(f.negatives) for f in found],
    }
