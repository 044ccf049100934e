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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..mutation.families import ALL_CLASSES, TSSB_COUNTS, TSSB_PATTERNS, TSSB_SOURCE
from ..mutation.operators import CORE_CLASSES
from ..records import BACKGROUND, CANONICAL, DISTRACTOR, REAL_BUG
from .controls import beside_controls
from .metrics import METRICS, row_metrics
from .stats import (
    auc_roc,
    deception_rates,
    density_exec1,
    false_high_similarity_rate,
    js_divergence,
    paired_bootstrap_diff_ci,
    sign_flip_test,
    spearman_rho,
)

__all__ = [
    "DENSITIES",
    "EDIT_BUCKETS",
    "FALSE_HIGH_PERCENTILE",
    "EditBucket",
    "analyses",
    "code_similarity_samples",
    "class_only_exec1",
    "code_to_code",
    "controls_section",
    "deception",
    "density_ablation",
    "edit_size",
    "operator_order",
    "per_class",
    "per_domain",
    "per_operator",
    "rank1_miss_attribution",
    "real_bugs",
    "tssb_weights",
]

DENSITIES: tuple[int, ...] = (0, 1, 2, 3, 4)
OTHER = "other"  # a real bug's pattern when no operator class writes it
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
    return hit["kind"] == DISTRACTOR and hit["query_id"] == q["query_id"]


def _exec_rates(queries: Sequence[dict]) -> dict:
    """``n`` and, per metric marked ``breakdown`` in :data:`.metrics.METRICS` (exec@1 and
    exec@10), the macro mean of its tie-aware values over ``queries``."""
    rows = [row_metrics(q).expected for q in queries]
    n = len(rows)
    breakdown = [m.name for m in METRICS if m.breakdown]
    return {"n": n, **{m: _rate(sum(r[m] for r in rows), n) for m in breakdown}}


def operator_order(names: Iterable[str]) -> list[str]:
    """Operator class names in table order (:data:`.mutation.families.ALL_CLASSES`: the core
    table, then the real-bug families), unknown names after (sorted)."""
    known = {name: i for i, name in enumerate(ALL_CLASSES)}
    return sorted(set(names), key=lambda n: (n not in known, known.get(n, 0), n))


def _own(q: dict, operator: str | None = None) -> list[dict]:
    """The query's own mutants (of class ``operator``); its real bug is not one of them."""
    own = q.get("own_distractors") or []
    mutants = [d for d in own if d.get("kind", DISTRACTOR) == DISTRACTOR]
    return [d for d in mutants if operator is None or d["operator"] == operator]


def _real_bug(q: dict) -> dict | None:
    """The query's real bug (an ``own_distractors`` row of kind ``real_bug``), if it has one."""
    own = q.get("own_distractors") or []
    return next((d for d in own if d.get("kind") == REAL_BUG), None)


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
    snippet belonging to another query), ``own_canonical`` (only if the corpus is broken) and,
    in a report whose pool has a background (``corpus.background``), ``background`` (a
    function of the background source) and, when some query has a real bug,
    ``own_real_bug`` (its pre-fix version). ``own_distractor_share`` = own_distractor /
    n_misses;
    ``by_operator`` counts the own distractors at rank 1 by class.  Queries with an empty top
    are ignored.
    """
    kinds = ["own_distractor", "other_canonical", "other_distractor", "own_canonical"]
    if report.get("corpus", {}).get("background"):
        kinds.append("background")
    if any(_real_bug(q) for q in report["per_query"]):
        kinds.append("own_real_bug")
    counts = dict.fromkeys(kinds, 0)
    by_operator: dict[str, int] = {}
    for q in report["per_query"]:
        top = _top(q)
        if not top or top[0]["passes"]:
            continue
        hit = top[0]
        if hit["kind"] in (BACKGROUND, REAL_BUG):
            counts["own_real_bug" if hit["kind"] == REAL_BUG else "background"] += 1
            continue
        whose = "own" if hit["query_id"] == q["query_id"] else "other"
        kind = DISTRACTOR if hit["kind"] == DISTRACTOR else CANONICAL
        counts[f"{whose}_{kind}"] += 1
        if whose == "own" and kind == DISTRACTOR:
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
                raise ValueError(
                    f"query {q['query_id']}: more own distractors in its top than "
                    f"in own_distractors ({sum(is_own)} > {n_own})"
                )
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
    n_items = sum(
        bool((q.get("code_similarity") or {}).get("alternatives")) for q in report["per_query"]
    )
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


def class_only_exec1(q: dict, keep: Iterable[str]) -> float | None:
    """Expected exec@1 of one query if the pool kept only the distractors of the classes in
    ``keep`` (every query's, not only its own; canonicals all stay), or ``None`` when its top
    10 cannot tell.

    Exact from the top 10, as the density ablation: removing snippets does not reorder the
    others, so rank 1 is the best-scoring kept snippet, and with ties (equal scores) the value is
    the passing share of the kept snippets sharing that score (the tie policy's uniform order).
    Undetermined: no kept snippet in the top 10, or the top 10 ends inside that tie group (more
    of it may lie below rank 10)."""
    keep = set(keep)
    return _exec1_kept(q, lambda h: h["kind"] != DISTRACTOR or h["operator"] in keep)


def _exec1_kept(q: dict, kept_hit: Callable[[dict], bool]) -> float | None:
    """Expected exec@1 of ``q`` if the pool kept only the snippets ``kept_hit`` accepts (see
    :func:`class_only_exec1`), or None when its top 10 cannot tell."""
    top = _top(q)
    kept = [h for h in top if kept_hit(h)]
    if not kept:
        return None
    best = kept[0]["score"]
    if len(top) >= 10 and top[-1]["score"] >= best:
        return None
    group = [h for h in kept if h["score"] == best]
    return sum(bool(h["passes"]) for h in group) / len(group)


def _class_only_rates(queries: Sequence[dict], keep: Iterable[str]) -> tuple[float | None, int]:
    """(mean of :func:`class_only_exec1` over the decided queries, number undecided)."""
    keep = tuple(keep)
    values = [class_only_exec1(q, keep) for q in queries]
    decided = [v for v in values if v is not None]
    return _rate(sum(decided), len(decided)), len(values) - len(decided)


def tssb_weights(classes: Iterable[str]) -> dict[str, float]:
    """Realistic-mix weight of each class: the TSSB-3M count of the pattern it writes
    (:data:`.mutation.families.TSSB_PATTERNS`, counts :data:`~.mutation.families.TSSB_COUNTS`,
    source :data:`~.mutation.families.TSSB_SOURCE`) shared equally among the given classes
    writing that pattern, normalised to sum 1. Classes without a pattern (or unknown) get no
    weight and are left out; ``{}`` when none has one."""
    classes = operator_order(classes)
    patterns = {c: TSSB_PATTERNS.get(c) for c in classes}
    sharing = {p: sum(q == p for q in patterns.values()) for p in set(patterns.values()) if p}
    raw = {c: TSSB_COUNTS[p] / sharing[p] for c, p in patterns.items() if p}
    total = sum(raw.values())
    return {c: round(w / total, 6) for c, w in raw.items()} if total else {}


def _mix(values: dict[str, float | None], weights: dict[str, float]) -> float | None:
    """Weighted mean of ``values`` over the weighted classes that have one (weights
    renormalised over them)."""
    pairs = [(weights[c], v) for c, v in values.items() if c in weights and v is not None]
    total = sum(w for w, _ in pairs)
    return _r(sum(w * v for w, v in pairs) / total) if total else None


def per_class(report: dict) -> dict:
    """Per operator class ``c`` (of the report's own distractors), over the queries with at
    least one own distractor of class ``c``:

    * ``n_queries``; ``deception``: the share of (query, own distractor of class ``c``) pairs
      deceived (score ``>=`` canonical, as :func:`deception`);
    * ``exec@1``: expected exec@1 with only class ``c``'s distractors in the pool
      (:func:`class_only_exec1`; ``n_undecided`` queries left out), and ``exec@1_no_distractors``
      the same with none, so their difference is what class ``c`` costs;

    then the mixes over those per-class values: ``realistic_mix`` weights the classes by their
    TSSB-3M frequencies (:func:`tssb_weights`, listed in ``weights`` with ``source``), and
    ``paper_mix`` weighs the six core classes of the ExecRetrieval paper equally (the default
    corpus's near-uniform shares); each holds ``exec@1``, ``deception`` and ``classes``.
    """
    classes = _classes(report)
    by_class = {}
    for c in classes:
        queries = [q for q in report["per_query"] if _own(q, c)]
        exec1, undecided = _class_only_rates(queries, (c,))
        none, _ = _class_only_rates(queries, ())
        by_class[c] = {
            "n_queries": len(queries),
            "deception": _deception_summary([(q, _own(q, c)) for q in queries])["pair_rate"],
            "exec@1": exec1,
            "exec@1_no_distractors": none,
            "n_undecided": undecided,
        }
    weights = tssb_weights(classes)
    paper = {c: 1 / len(CORE_CLASSES) for c in classes if c in CORE_CLASSES}

    def mix(w: dict[str, float]) -> dict:
        return {
            "exec@1": _mix({c: v["exec@1"] for c, v in by_class.items()}, w),
            "deception": _mix({c: v["deception"] for c, v in by_class.items()}, w),
            "classes": [c for c in by_class if c in w],
        }

    return {
        "by_class": by_class,
        "realistic_mix": mix(weights),
        "paper_mix": mix(paper),
        "weights": weights,
        "source": TSSB_SOURCE,
    }


def background_neighbours(report: dict) -> dict | None:
    """With a background pool (``corpus.background``): how often the embedder ranks a real
    function of the code base above the query's canonical (``per_query[].background_above``,
    counted exactly over the whole pool). ``share_above``: the share of queries with at least
    one; ``mean_above``: background functions above the canonical per query;
    ``median_nearest_cosine``: the median code-to-code cosine of a canonical and its nearest
    background function (dense embedders; None for a lexical scorer); None without a
    background."""
    if not report.get("corpus", {}).get("background"):
        return None
    above = [q.get("background_above") or 0 for q in report["per_query"]]
    nearest = [q["background_nearest"] for q in report["per_query"] if "background_nearest" in q]
    n = len(above)
    return {
        "n": n,
        "share_above": _rate(sum(a > 0 for a in above), n),
        "mean_above": _rate(sum(above), n),
        "median_nearest_cosine": _median(nearest),
    }


def _pair_rate(score: float, own: Sequence[dict]) -> float:
    """The share of ``own`` scoring at or above ``score`` (deceived pairs)."""
    return sum(d["score"] >= score for d in own) / len(own)


@dataclass(frozen=True)
class _RealBugRow:
    """A query with a real bug: its pattern, 1.0 if the real bug is deceived (else 0.0), and the
    share of its own mutants deceived (None without mutants)."""

    query: dict
    pattern: str
    bug: float
    mutants: float | None


def _real_bug_rows(report: dict) -> list[_RealBugRow]:
    out = []
    for q in report["per_query"]:
        bug = _real_bug(q)
        if bug is None or "canonical_score" not in q:
            continue
        score, mutants = q["canonical_score"], _own(q)
        shared = _pair_rate(score, mutants) if mutants else None
        out.append(_RealBugRow(q, bug["operator"] or OTHER, float(bug["score"] >= score), shared))
    return out


def _deceived(rows: Sequence[_RealBugRow]) -> dict:
    """Real-bug and mutant deception over ``rows``, macro over the queries that have both, with
    the paired difference (real bug minus mutants)."""
    paired = [(r.bug, r.mutants) for r in rows if r.mutants is not None]
    out: dict = {"n_pairs": len(rows), "n_paired": len(paired)}
    out["real_bug_deception"] = _rate(sum(r.bug for r in rows), len(rows))
    if not paired:
        return out | {"mutant_deception": None, "difference": None}
    bugs, mutants = np.array([b for b, _ in paired]), np.array([m for _, m in paired])
    low, high = paired_bootstrap_diff_ci(mutants, bugs, seed=0)
    return out | {
        "mutant_deception": _r(float(mutants.mean())),
        "difference": _r(float(bugs.mean() - mutants.mean())),
        "difference_ci95": [_r(float(low)), _r(float(high))],
        "p_value": _r(sign_flip_test(bugs - mutants, seed=0)),
    }


def real_bugs(report: dict) -> dict | None:
    """Do embedders prefer a real shipped bug to its fix as often as a mutant to the canonical?

    Over the queries with a real bug (a pre-fix version mined from history, its ``operator``
    the fix's TSSB-3M pattern): ``real_bug_deception``, the share whose real bug scores at or
    above the fix (the canonical); ``mutant_deception``, the mean over the same queries (those
    with own mutants: ``n_paired``) of the share of their mutants that do; ``difference`` (real
    bug minus mutants) with its paired bootstrap 95% CI and the sign-flip test's ``p_value``;
    the same per pattern in ``by_pattern``. ``exec@1``: the expected exec@1 of those queries
    with their real bugs in the pool, and ``mutants_only`` without them (exact from the top 10,
    as :func:`class_only_exec1`; ``n_undecided`` left out), so their difference is what the
    real bugs cost. None when no query has a real bug."""
    rows = _real_bug_rows(report)
    if not rows:
        return None
    patterns = sorted({r.pattern for r in rows})
    by_pattern = {p: _deceived([r for r in rows if r.pattern == p]) for p in patterns}
    queries = [r.query for r in rows]
    without = [_exec1_without_real_bug(q) for q in queries]
    decided = [v for v in without if v is not None]
    return _deceived(rows) | {
        "by_pattern": by_pattern,
        "exec@1": {
            "with_real_bugs": _exec_rates(queries)["exec@1"],
            "mutants_only": _rate(sum(decided), len(decided)),
            "n_undecided": len(without) - len(decided),
        },
    }


def _exec1_without_real_bug(q: dict) -> float | None:
    """Expected exec@1 of ``q`` with the real bugs out of the pool (None: the top 10 cannot
    tell), exactly as :func:`class_only_exec1` removes distractor classes."""
    return _exec1_kept(q, lambda h: h["kind"] != REAL_BUG)


def controls_section(report: dict, table: dict) -> dict:
    """The ``controls`` section: the query-blind controls of the report's pool (``table``:
    :func:`.controls.controls_table` over the report's queries) and, for a rerank pipeline, its
    exec@1 beside the best of them (``pipeline``: :func:`.controls.beside_controls`; its
    ``beats_controls`` false flags the pipeline)."""
    pipeline = beside_controls(report, table)
    return {**table, **({"pipeline": pipeline} if pipeline else {})}


def analyses(report: dict, pool_controls: dict | None = None) -> dict:
    """Every analysis of one report, keyed by section (see the module and section docstrings);
    ``pool_controls``: the query-blind controls of its pool (:func:`controls_section`), which the
    report itself cannot give (its rows hold no code)."""
    neighbours = background_neighbours(report)
    real = real_bugs(report)
    return {
        **(
            {"controls": controls_section(report, pool_controls)}
            if pool_controls is not None
            else {}
        ),
        **({"background_neighbours": neighbours} if neighbours else {}),
        **({"real_bugs": real} if real else {}),
        "embedder": report["embedder"].get("name"),
        "n_queries": len(report["per_query"]),
        "per_domain": per_domain(report),
        "per_operator": per_operator(report),
        "deception": deception(report),
        "rank1_miss_attribution": rank1_miss_attribution(report),
        "density_ablation": density_ablation(report),
        "edit_size": edit_size(report),
        "code_to_code": code_to_code(report),
        "per_class": per_class(report),
    }
