"""The paired cross-language analysis: is near-clone deception a property of one language?

One embedder's report on an items directory's own pool (Python) and its report on a language
pool (JavaScript, :mod:`..corpus.pools`) share queries: the twins, an item id present in both
(``strings/x`` and ``javascript/strings/x``, the same query text in two languages, each ranked
against its own language's pool). On the twins only:

* **exec@1 per language**: the tie-aware expected exec@1 (:mod:`.metrics`) averaged over the
  twins, with its 95% percentile bootstrap CI (:func:`.stats.bootstrap_ci`, ``seed``);
* **the paired test**: the difference ``b - a`` (the second language minus the first), its
  paired bootstrap CI and the test :func:`.compare.comparison_rows` chooses, as
  ``execretrieval compare`` does: the exact McNemar test on the twins' rank-1 correctness when
  every per-query value is 0 or 1, the paired sign-flip test where a rank-1 tie makes a value
  fractional; ``only_a``/``only_b`` count the twins only one language gets right;
* **deception per operator class per language**: :func:`.analyses.deception` over the twins'
  rows of each report (``pair_rate``, ``query_rate``, ``median_margin``, ``n_pairs``,
  ``n_queries``), overall and per operator class; a class one language has no distractor of
  (the JavaScript-only classes, Python's ``slice_bound``...) is ``None`` for the other.

The two reports come from different corpora by construction, so no corpus check applies; the
queries are paired by id. Numbers only: :mod:`..reporting.cross_language_text` renders them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .analyses import deception, operator_order
from .compare import N_RESAMPLES, ComparisonError, comparison_rows
from .metrics import metric_matrix, row_metrics
from .stats import bootstrap_ci

__all__ = ["METRIC", "CrossLanguage", "cross_language", "report_language"]

METRIC = "exec@1"


def report_language(report: dict) -> str:
    """A report's language: its ``language`` field, ``python`` for a report without one (an
    items directory's own pool, reports written before language pools existed)."""
    return str(report.get("language") or "python")


@dataclass(frozen=True)
class CrossLanguage:
    """The analysis of one embedder's two reports (see the module docstring). ``languages``:
    ``(a, b)``; ``exec1[lang]``: ``{"mean", "ci95"}``; ``paired``: the row
    :func:`.compare.comparison_rows` gives for exec@1 (``a``, ``b``, ``difference``, ``ci95``,
    ``test``, ``p_value``, ``only_a``, ``only_b``); ``deception``: ``{"overall": {lang:
    summary}, "by_operator": {class: {lang: summary or None}}}``; ``untwinned[lang]``: that
    report's queries without a twin (left out)."""

    embedder: str
    languages: tuple[str, str]
    n_twins: int
    untwinned: dict[str, int]
    exec1: dict[str, dict]
    paired: dict
    deception: dict
    seed: int = 0

    def to_json(self) -> dict:
        return {
            "embedder": self.embedder,
            "languages": list(self.languages),
            "metric": METRIC,
            "n_twins": self.n_twins,
            "untwinned": self.untwinned,
            "seed": self.seed,
            "n_resamples": N_RESAMPLES,
            "exec@1": self.exec1,
            "paired": self.paired,
            "deception": self.deception,
        }


def _values(rows: Sequence[dict]) -> np.ndarray:
    return metric_matrix([row_metrics(q).expected for q in rows], (METRIC,))


def cross_language(a: dict, b: dict, seed: int = 0) -> CrossLanguage:
    """The paired analysis of report ``b`` against report ``a`` of the same embedder in two
    languages (:func:`report_language` each), on their twin queries. Raises
    :class:`.compare.ComparisonError` when both are of one language, they name different
    embedders, or they share no query."""
    langs = (report_language(a), report_language(b))
    if langs[0] == langs[1]:
        raise ComparisonError(f"both reports are of the {langs[0]} pool: nothing to pair")
    names = [r.get("embedder", {}).get("name") for r in (a, b)]
    if names[0] != names[1]:
        raise ComparisonError(f"the reports are of different embedders: {names[0]}, {names[1]}")
    qa = {q["query_id"]: q for q in a["per_query"]}
    qb = {q["query_id"]: q for q in b["per_query"]}
    twins = sorted(qa.keys() & qb.keys())
    if not twins:
        raise ComparisonError(
            f"the {langs[0]} and {langs[1]} reports share no query id: no twins to pair"
        )
    rows_a, rows_b = [qa[i] for i in twins], [qb[i] for i in twins]
    ma, mb = _values(rows_a), _values(rows_b)
    exec1 = {}
    for lang, m in zip(langs, (ma, mb)):
        lo, hi = bootstrap_ci(m, n_resamples=N_RESAMPLES, seed=seed)[0]
        exec1[lang] = {"mean": float(m[:, 0].mean()), "ci95": [float(lo), float(hi)]}
    paired = comparison_rows(ma, mb, (METRIC,), seed)[METRIC]
    found = [deception({"per_query": rows}) for rows in (rows_a, rows_b)]
    classes = operator_order(c for d in found for c in d["by_operator"])
    return CrossLanguage(
        embedder=str(names[0]),
        languages=langs,
        n_twins=len(twins),
        untwinned={langs[0]: len(qa) - len(twins), langs[1]: len(qb) - len(twins)},
        exec1=exec1,
        paired=paired,
        deception={
            "overall": {lang: d["overall"] for lang, d in zip(langs, found)},
            "by_operator": {
                c: {lang: d["by_operator"].get(c) for lang, d in zip(langs, found)} for c in classes
            },
        },
        seed=seed,
    )
