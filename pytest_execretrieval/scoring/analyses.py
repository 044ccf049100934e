"""Analyses of one report JSON (schema_version 1): where and why an embedder misses.

Pure functions of the report dict.  Terms used throughout, for a query ``q``:

* *top*: ``q["top"]`` ordered by rank (ranks 1..10), ``passes`` its pass flags;
* *own distractor*: a snippet of kind ``"distractor"`` whose ``query_id`` is ``q``'s, i.e. a
  mutant of ``q``'s canonical; ``q["own_distractors"]`` lists all of them with their score for
  ``q`` (whether or not they reached the top 10);
* *margin* of an own distractor: ``canonical_score - distractor score`` (negative = the
  distractor is ranked closer to the query than the correct code);
* *deceived pair*: a (query, own distractor) pair whose distractor scores ``>=`` the canonical
  (a tie counts: the tie policy may put the distractor first).

Every rate is ``None`` when its denominator is zero; floats are rounded to 6 decimals and
non-finite values become ``None``, so the output is JSON-able and deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..mutation.operators import OPERATOR_CLASSES
from .metrics import METRICS, row_metrics
from .stats import (
    auc_roc,
    deception_rates,
    density_exec1,
    false_high_similarity_rate,
    js_divergence,
    spearman_rho,
)

__all__ = [
    "DENSITIES",
    "EDIT_BUCKETS",
    "FALSE_HIGH_PERCENTILE",
    "EditBucket",
    "analyses",
    "code_similarity_samples",
    "code_to_code",
    "deception",
    "density_ablation",
    "edit_size",
    "operator_order",
    "per_domain",
    "per_operator",
    "rank1_miss_attribution",
]

DENSITIES: tuple[int, ...] = (0, 1, 2, 3, 4)
FALSE_HIGH_PERCENTILE = 75.0


@dataclass(frozen=True)
class EditBucket:
    """Edit-size bucket: ``low <= edit_chars <= high`` (``high`` ``None`` = unbounded)."""

    label: str
    low: int
    high: int | None

    def contains(self, chars: int) -> bool:
        return chars >= self.low and (self.high is None or chars <= self.high)


# The first bucket starts at 0 so that every non-negative size has a bucket (sizes are >= 1 for
# real mutants; a 0 can only come from hand-made data).
EDIT_BUCKETS: tuple[EditBucket, ...] = (
    EditBucket("1", 0, 1),
    EditBucket("2-3", 2, 3),
    EditBucket("4-8", 4, 8),
    EditBucket("9+", 9, None),
)


# --- helpers -------------------------------------------------------------------------------


def _r(x: float | None) -> float | None:
    """Round to 6 decimals; ``None`` for ``None`` / nan / inf."""
    if x is None or not math.isfinite(x):
        return None
    return round(float(x), 6)


def _rate(num: float, den: int) -> float | None:
    return _r(num / den) if den else None


def _median(values: Sequence[float]) -> float | None:
    return _r(float(np.median(values))) if len(values) else None


def _top(q: dict) -> list[dict]:
    return sorted(q["top"], key=lambda h: h["rank"])


def _is_own(q: dict, hit: dict) -> bool:
    return hit["kind"] == "distractor" and hit["query_id"] == q["query_id"]


def _exec_rates(queries: Sequence[dict]) -> dict:
    """``n`` and, per metric marked ``breakdown`` in :data:`.metrics.METRICS` (exec@1 and
    exec@10), the macro mean of its tie-aware values over ``queries``."""
    rows = [row_metrics(q).expected for q in queries]
    n = len(rows)
    breakdown = [m.name for m in METRICS if m.breakdown]
    return {"n": n, **{m: _rate(sum(r[m] for r in rows), n) for m in breakdown}}


def operator_order(names: Iterable[str]) -> list[str]:
    """Operator class names in :data:`OPERATOR_CLASSES` order, unknown names after (sorted)."""
    known = {name: i for i, name in enumerate(OPERATOR_CLASSES)}
    return sorted(set(names), key=lambda n: (n not in known, known.get(n, 0), n))


def _own(q: dict, operator: str | None = None) -> list[dict]:
    own = q.get("own_distractors") or []
    return [d for d in own if operator is None or d["operator"] == operator]


def _classes(report: dict) -> list[str]:
    return operator_order(d["operator"] for q in report["per_query"] for d in _own(q))


# --- sections ------------------------------------------------------------------------------


def per_domain(report: dict) -> dict[str, dict]:
    """``{domain: {n, exec@1, exec@10}}`` over the queries of each domain, domains sorted."""
    domains = sorted({q["domain"] for q in report["per_query"]})
    return {d: _exec_rates([q for q in report["per_query"] if q["domain"] == d]) for d in domains}


def per_operator(report: dict) -> dict[str, dict]:
    """Per operator class ``c``, over the queries with at least one own distractor of class ``c``:

    * ``n``: the number of such queries;
    * ``exec@1``, ``exec@10``: their macro-averaged success;
    * ``rank1_capture``: the share of them whose rank-1 snippet is an own distractor of class
      ``c`` (the class "captured" the top slot).

    A query counts once for each class it has distractors of.  Classes without any own
    distractor in the report are omitted.
    """
    out: dict[str, dict] = {}
    for c in _classes(report):
        queries = [q for q in report["per_query"] if _own(q, c)]
        captured = 0
        for q in queries:
            top = _top(q)
            captured += bool(top) and _is_own(q, top[0]) and top[0]["operator"] == c
        out[c] = _exec_rates(queries) | {"rank1_capture": _rate(captured, len(queries))}
    return out


def _deception_summary(pairs: Sequence[tuple[dict, list[dict]]]) -> dict:
    """Deception over ``(query, its own distractors of interest)`` with at least one each."""
    n_pairs = deceived = above = 0
    margins = []
    for q, own in pairs:
        dec = deception_rates(q["canonical_score"], [d["score"] for d in own])
        n_pairs += len(own)
        deceived += round(dec.share_at_or_above * len(own))
        above += dec.any_above
        margins.append(dec.margin)
    return {
        "n_queries": len(pairs),
        "n_pairs": n_pairs,
        "pair_rate": _rate(deceived, n_pairs),
        "query_rate": _rate(above, len(pairs)),
        "median_margin": _median(margins),
    }


def deception(report: dict) -> dict:
    """How often own distractors score at least as high as the canonical.

    ``overall`` and ``by_operator[c]`` (restricted to own distractors of class ``c``, over the
    queries having one), each with:

    * ``pair_rate``: share of (query, own distractor) pairs that are deceived (score ``>=``);
    * ``query_rate``: share of queries whose canonical scores strictly below at least one of
      those distractors;
    * ``median_margin``: median over queries of ``canonical - best of those distractors``;
    * ``n_pairs``, ``n_queries``.

    Per query this is :func:`pytest_execretrieval.scoring.stats.deception_rates`.
    """

    def pairs(c: str | None) -> list[tuple[dict, list[dict]]]:
        return [(q, _own(q, c)) for q in report["per_query"] if _own(q, c)]

    return {
        "overall": _deception_summary(pairs(None)),
        "by_operator": {c: _deception_summary(pairs(c)) for c in _classes(report)},
    }


def rank1_miss_attribution(report: dict) -> dict:
    """Who holds rank 1 when it fails (``passes`` false at rank 1).

    Counts over those queries (``n_misses``), split by the rank-1 snippet: ``own_distractor``
    (a mutant of the query's own canonical), ``other_canonical`` / ``other_distractor`` (a
    snippet belonging to another query) and ``own_canonical`` (only if the corpus is broken).
    ``own_distractor_share`` = own_distractor / n_misses; ``by_operator`` counts the own
    distractors at rank 1 by class.  Queries with an empty top are ignored.
    """
    counts = dict.fromkeys(("own_distractor", "other_canonical", "other_distractor",
                            "own_canonical"), 0)  # fmt: skip
    by_operator: dict[str, int] = {}
    for q in report["per_query"]:
        top = _top(q)
        if not top or top[0]["passes"]:
            continue
        hit = top[0]
        whose = "own" if hit["query_id"] == q["query_id"] else "other"
        kind = "distractor" if hit["kind"] == "distractor" else "canonical"
        counts[f"{whose}_{kind}"] += 1
        if whose == "own" and kind == "distractor":
            op = hit["operator"] or "unknown"
            by_operator[op] = by_operator.get(op, 0) + 1
    n = sum(counts.values())
    return {
        "n_misses": n,
        **counts,
        "own_distractor_share": _rate(counts["own_distractor"], n),
        "by_operator": {c: by_operator[c] for c in operator_order(by_operator)},
    }


def density_ablation(report: dict, densities: Sequence[int] = DENSITIES) -> dict:
    """Expected exec@1 if each query kept only ``d`` of its ``m`` own distractors.

    Per query: :func:`pytest_execretrieval.scoring.stats.density_exec1` over the top-10 flags (is an
    own distractor, passes) with ``n_own = m = len(own_distractors)``; the expectation is over
    the equally likely kept subsets, and ``d > m`` keeps all ``m``.  A query is *undecided* at
    ``d`` when, with positive probability, every top-10 snippet is a removed own distractor (so
    the top 10 cannot tell what would be first); undecided queries, and queries without an
    ``own_distractors`` entry (reports from before it existed), are excluded from that ``d``'s
    mean and counted in ``n_undecided``.  Returns ``{"d": [...], "expected_exec1":
    [...], "n_queries": [...], "n_undecided": [...]}`` (lists aligned with ``densities``).
    """
    out: dict[str, list] = {"d": [], "expected_exec1": [], "n_queries": [], "n_undecided": []}
    for d in densities:
        values = []
        undecided = 0
        for q in report["per_query"]:
            if "own_distractors" not in q:
                undecided += 1
                continue
            top = _top(q)
            is_own = [_is_own(q, h) for h in top]
            n_own = len(_own(q))
            if sum(is_own) > n_own:
                raise ValueError(f"query {q['query_id']}: more own distractors in its top than "
                                 f"in own_distractors ({sum(is_own)} > {n_own})")  # fmt: skip
            try:
                values.append(density_exec1(is_own, [h["passes"] for h in top], d, n_own=n_own))
            except ValueError:  # inputs are checked above: only "top-1 undetermined" is left
                undecided += 1
        out["d"].append(d)
        out["expected_exec1"].append(_rate(sum(values), len(values)))
        out["n_queries"].append(len(values))
        out["n_undecided"].append(undecided)
    return out


def edit_size(report: dict, buckets: Sequence[EditBucket] = EDIT_BUCKETS) -> dict:
    """Deception by edit size over all (query, own distractor) pairs.

    ``buckets``: per :data:`EDIT_BUCKETS` bucket of ``edit_chars`` (``1`` = at most one
    character, ``2-3``, ``4-8``, ``9+``), ``n_pairs``, ``deception_rate`` (share of deceived
    pairs: distractor score ``>=`` canonical) and ``median_margin``.  ``spearman_rho``: Spearman
    correlation between ``edit_chars`` and margin (canonical - distractor score) over all pairs;
    ``None`` with fewer than two pairs or a constant variable.  Positive means larger edits sit
    further below the canonical, as they should.
    """
    sizes: list[int] = []
    margins: list[float] = []
    for q in report["per_query"]:
        for d in _own(q):
            sizes.append(int(d["edit_chars"]))
            margins.append(q["canonical_score"] - d["score"])
    by_bucket = {}
    for b in buckets:
        ms = [m for s, m in zip(sizes, margins) if b.contains(s)]
        by_bucket[b.label] = {
            "n_pairs": len(ms),
            "deception_rate": _rate(sum(m <= 0 for m in ms), len(ms)),
            "median_margin": _median(ms),
        }
    rho = spearman_rho(sizes, margins) if len(sizes) >= 2 else None
    return {"n_pairs": len(sizes), "buckets": by_bucket, "spearman_rho": _r(rho)}


def code_similarity_samples(report: dict) -> tuple[list[float], list[float]]:
    """``(equivalent, mutant)`` code-to-code similarities pooled over the items with alternatives.

    Equivalent: ``cos(canonical, alternative)``; mutant: ``cos(canonical, own distractor)`` of
    the same items.  Items without alternatives (or without the data) contribute nothing.
    """
    equivalent: list[float] = []
    mutant: list[float] = []
    for q in report["per_query"]:
        sim = q.get("code_similarity") or {}
        if sim.get("alternatives"):
            equivalent.extend(float(x) for x in sim["alternatives"])
            mutant.extend(float(x) for x in sim.get("distractors") or ())
    return equivalent, mutant


def code_to_code(report: dict, percentile: float = FALSE_HIGH_PERCENTILE) -> dict | None:
    """False Proximity: does code-to-code similarity separate equivalents from mutants?

    Over :func:`code_similarity_samples` (positives: equivalent pairs, negatives: mutant pairs):
    ``auc`` = ROC AUC (P(equivalent > mutant) + ties / 2; below 0.5 the embedding puts buggy
    mutants closer to the canonical than correct rewrites), ``false_high_rate`` = share of mutant
    pairs strictly above the ``percentile``-th percentile of the equivalent pairs,
    ``js_divergence`` (base 2, 20 shared bins over the pooled range), medians and counts.
    ``None`` when either sample is empty.
    """
    equivalent, mutant = code_similarity_samples(report)
    if not equivalent or not mutant:
        return None
    n_items = sum(bool((q.get("code_similarity") or {}).get("alternatives"))
                  for q in report["per_query"])  # fmt: skip
    return {
        "n_items": n_items,
        "n_equivalent_pairs": len(equivalent),
        "n_mutant_pairs": len(mutant),
        "auc": _r(auc_roc(equivalent, mutant)),
        "false_high_rate": _r(false_high_similarity_rate(equivalent, mutant, percentile)),
        "false_high_percentile": percentile,
        "js_divergence": _r(js_divergence(equivalent, mutant)),
        "median_equivalent": _median(equivalent),
        "median_mutant": _median(mutant),
    }


def analyses(report: dict) -> dict:
    """Every analysis of one report, keyed by section (see the module and section docstrings)."""
    return {
        "embedder": report["embedder"].get("name"),
        "n_queries": len(report["per_query"]),
        "per_domain": per_domain(report),
        "per_operator": per_operator(report),
        "deception": deception(report),
        "rank1_miss_attribution": rank1_miss_attribution(report),
        "density_ablation": density_ablation(report),
        "edit_size": edit_size(report),
        "code_to_code": code_to_code(report),
    }
