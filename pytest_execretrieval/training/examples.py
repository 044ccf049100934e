"""Contrastive training examples from a corpus: what a model learns from one split's items.

One example per (query, positive): the positive is the item's canonical, or one of its
alternatives (equivalent rewrites kept out of the pool); the negatives are the query's own chosen
distractors, the mutants that execution proves wrong: the hard negatives the benchmark punishes a
model for ranking high. Every example of a query carries the same negatives, in snippet-id order,
padded cyclically to the split's largest count (the dataset needs a fixed number of columns, and a
repeated negative only repeats a term of the loss). Only items in ``ids`` contribute anything.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..corpus.items import BenchmarkItem
from ..corpus.store import Corpus


@dataclass(frozen=True)
class Example:
    item_id: str
    query: str
    positive: str
    negatives: tuple[str, ...]


def training_examples(
    items: Sequence[BenchmarkItem],
    corpus: Corpus,
    ids: Collection[str],
    negatives: int = 0,
    alternatives: bool = True,
) -> list[Example]:
    """The examples of the items in ``ids``, sorted by item id (canonical first, then, with
    ``alternatives``, the alternatives in snippet-id order). ``negatives`` > 0 keeps that many
    distractors per query, the first in snippet-id order (a hash order: a reproducible,
    effectively random choice). Items without distractors are left out: they have no hard
    negative to teach."""
    from ..ranking.benchmark import document_text  # what the benchmark embeds of a snippet

    ids = set(ids)
    by_query = corpus.by_query()
    extra: dict[str, list] = {}
    for a in sorted(corpus.alternatives, key=lambda s: s.snippet_id) if alternatives else ():
        extra.setdefault(a.query_id, []).append(a)
    rows: list[tuple[str, str, str, list[str]]] = []
    for item in sorted(items, key=lambda i: i.id):
        if item.id not in ids:
            continue
        own = sorted(by_query.get(item.id, []), key=lambda s: s.snippet_id)
        canonical = [s for s in own if s.kind == "canonical"]
        hard = [document_text(s) for s in own if s.kind == "distractor"][: negatives or None]
        if not canonical or not hard:
            continue
        for positive in (canonical[0], *extra.get(item.id, [])):
            rows.append((item.id, item.query, document_text(positive), hard))
    width = max((len(n) for *_, n in rows), default=0)
    return [Example(i, q, p, tuple(n[j % len(n)] for j in range(width))) for i, q, p, n in rows]


def as_columns(examples: Sequence[Example]) -> dict[str, list[str]]:
    """The columns sentence-transformers' losses read: anchor, positive, negative_1..n."""
    columns = {"anchor": [e.query for e in examples], "positive": [e.positive for e in examples]}
    width = len(examples[0].negatives) if examples else 0
    for j in range(width):
        columns[f"negative_{j + 1}"] = [e.negatives[j] for e in examples]
    return columns
