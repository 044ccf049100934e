"""The upgrade gate: a typed decision on a candidate report, against a baseline report and/or
minimums. Numbers only; the sentences that explain a decision are rendered by
:mod:`..reporting.gate_text`.

Every gated metric (:data:`DEFAULT_GATE_METRICS` unless chosen) is tested in one of two modes:

* **harm** (no margin for the metric): the metric fails iff it dropped significantly; the
  family-wise error over the harm-tested metrics is controlled by Holm-Bonferroni at ``alpha``
  (:class:`HarmTest`);
* **non-inferiority** (a margin ``delta`` for the metric): the metric passes iff the lower end of
  the paired two-sided ``1 - 2 * alpha`` bootstrap CI of ``candidate - baseline`` lies above
  ``-delta`` (an intersection-union test: each metric at level ``alpha``, no correction needed;
  :class:`NonInferiorityTest`).

A metric has a margin when one is given for it (``M=DELTA``) or for all (``DELTA``); the others
stay in harm mode, so naming one metric's margin never drops the other gated metrics. Minimums
(``metric >= x``) apply with or without a baseline. The gate passes iff every gated metric and
every minimum passes and nothing is missing: a collection error, or a query of this run that the
baseline lacks, makes it fail. Baseline queries this run did not select (``-k``, ``-m``, ...) are
left out of the comparison, and the decision's :class:`Coverage` says so; a run cut short is
never decided (:class:`Incomplete`).

Each gated metric also states its power: the smallest drop (harm) or the smallest margin
(non-inferiority) the gate would detect with 80% power at this number of queries and the observed
spread of the paired differences (:func:`.stats.detectable_difference`). A gate that cannot
detect a drop of ``max_detectable`` (harm; default :data:`MAX_DETECTABLE`) or of twice the
margin (non-inferiority) on some metric is UNDERPOWERED (a bound of 1 turns this off), with the
queries it would need (:func:`.stats.queries_needed`): never a PASS, though a metric that failed
still makes it a FAIL.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..records import Flip, ReportRow
from .compare import (
    MAX_DETECTABLE,
    N_RESAMPLES,
    POWER,
    ComparisonError,
    comparison_rows,
    flips,
    invocation_differences,
    same_corpus,
    shared_metrics,
)
from .metrics import METRIC_NAMES, METRICS, mean_metrics, metric_matrix, row_metrics
from .stats import (
    detectable_difference,
    holm_adjust,
    paired_bootstrap_diff_ci,
    queries_needed,
    smallest_bound,
)

__all__ = [
    "DEFAULT_GATE_METRICS",
    "MAX_DETECTABLE",
    "GATE_METRICS",
    "POWER",
    "Coverage",
    "Drop",
    "Floor",
    "GateDecision",
    "HarmTest",
    "Incomplete",
    "MetricVerdict",
    "NonInferiorityTest",
    "Paired",
    "PowerRow",
    "gate_decision",
    "power_at",
]

DEFAULT_GATE_METRICS = ("exec@1", "exec@5", "ndcg@10")
GATE_METRICS = tuple(m.name for m in METRICS if m.gate)


def _matrix(queries: Sequence[ReportRow]) -> np.ndarray:
    return metric_matrix([row_metrics(q).expected for q in queries])


@dataclass(frozen=True)
class Paired:
    """The baseline's and the candidate's rows of the queries both cover (sorted by id) and
    their per-query values of every metric (columns :data:`.metrics.METRIC_NAMES`), computed
    once for every test and breakdown of a decision."""

    baseline: list[ReportRow]
    candidate: list[ReportRow]
    a: np.ndarray
    b: np.ndarray

    @classmethod
    def of(cls, baseline: dict, candidate: dict) -> Paired:
        same_corpus(baseline, candidate)
        qa = {q["query_id"]: q for q in baseline["per_query"]}
        qb = {q["query_id"]: q for q in candidate["per_query"]}
        ids = sorted(qa.keys() & qb.keys())
        if not ids:
            raise ComparisonError(
                "the baseline and the candidate share zero queries: nothing to compare"
            )
        rows_a, rows_b = [qa[i] for i in ids], [qb[i] for i in ids]
        return cls(rows_a, rows_b, _matrix(rows_a), _matrix(rows_b))

    @property
    def n(self) -> int:
        return len(self.baseline)

    def columns(self, metrics: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        idx = [METRIC_NAMES.index(m) for m in metrics]
        # C order, as a matrix built for these columns: numpy's sums depend on the layout
        return np.ascontiguousarray(self.a[:, idx]), np.ascontiguousarray(self.b[:, idx])

    def differences(self, metric: str) -> np.ndarray:
        j = METRIC_NAMES.index(metric)
        return self.b[:, j] - self.a[:, j]


@dataclass(frozen=True)
class MetricVerdict:
    """One gated metric: the means, the 95% CI of the difference and the paired test (as in
    :func:`.compare.paired_comparison`), then what its mode decided. ``p_adjusted`` (harm) or
    ``ci`` and ``margin`` (non-inferiority) are ``None`` in the other mode; ``detectable`` is
    ``None`` when no drop size can be estimated, ``differs`` whether any query differs;
    ``needed``: the queries that would detect the gate's bound, when these do not (``None``)."""

    metric: str
    mode: str  # "harm" | "non-inferiority"
    baseline: float
    candidate: float
    difference: float
    ci95: tuple[float, float]
    test: str
    p_value: float
    passed: bool
    detectable: float | None
    differs: bool
    n: int
    p_adjusted: float | None = None
    ci: tuple[float, float] | None = None
    margin: float | None = None
    needed: int | None = None
    # harm mode: the smallest margin a non-inferiority gate would decide with at this size and
    # spread (what an underpowered harm gate can switch to); None when none up to 1 would
    reachable_margin: float | None = None

    @property
    def underpowered(self) -> bool:
        return self.needed is not None

    def to_json(self) -> dict:
        """The report's ``gate.metrics[metric]`` row (key order as in schema 2; ``mode`` added)."""
        row: dict = {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "difference": self.difference,
            "ci95": list(self.ci95),
            "test": self.test,
            "p_value": self.p_value,
        }
        if self.mode == "harm":
            row["p_adjusted"] = self.p_adjusted
            if self.needed is not None:  # underpowered: the margin a switch to NI would need
                row["reachable_margin"] = self.reachable_margin
        else:
            row |= {"ci": None if self.ci is None else list(self.ci), "margin": self.margin}
        return row | {
            "passed": self.passed,
            "detectable": self.detectable,
            "mode": self.mode,
            "needed": self.needed,
        }


@dataclass(frozen=True)
class HarmTest:
    """Harm mode: a metric fails iff it dropped significantly, Holm-adjusted over the metrics
    this test covers at ``alpha``; two-sided paired tests (:func:`.compare.paired_test`)."""

    alpha: float
    max_detectable: float = MAX_DETECTABLE

    def verdicts(
        self, paired: Paired, compared: Mapping[str, dict], metrics: Sequence[str]
    ) -> dict[str, MetricVerdict]:
        adjusted = holm_adjust([compared[m]["p_value"] for m in metrics]) if metrics else []
        out = {}
        for m, p_adjusted in zip(metrics, adjusted):
            c = compared[m]
            d = paired.differences(m)
            power_args = (paired.n, float(np.mean(d**2)), self.alpha / len(metrics))
            out[m] = _verdict(
                m,
                "harm",
                c,
                paired.n,
                d,
                passed=not (p_adjusted < self.alpha and c["difference"] < 0),
                detectable=detectable_difference(*power_args, POWER),
                p_adjusted=p_adjusted,
                needed=_needed_within(power_args, self.max_detectable, two_sided=True),
                reachable_margin=reachable_margin(paired.n, float(np.var(d)), self.alpha),
            )
        return out


@dataclass(frozen=True)
class NonInferiorityTest:
    """Non-inferiority mode: a metric passes iff the lower end of the paired two-sided
    ``1 - 2 * alpha`` bootstrap CI of ``candidate - baseline`` is above ``-margins[metric]``."""

    alpha: float
    margins: Mapping[str, float]

    def verdicts(
        self, paired: Paired, compared: Mapping[str, dict], metrics: Sequence[str], seed: int
    ) -> dict[str, MetricVerdict]:
        out = {}
        for m in metrics:
            j = METRIC_NAMES.index(m)
            lo, hi = paired_bootstrap_diff_ci(
                paired.a[:, j], paired.b[:, j], N_RESAMPLES, seed, confidence=1 - 2 * self.alpha
            )
            d = paired.differences(m)
            power_args = (paired.n, float(np.var(d)), self.alpha)
            out[m] = _verdict(
                m,
                "non-inferiority",
                compared[m],
                paired.n,
                d,
                passed=bool(lo > -self.margins[m]),
                detectable=detectable_difference(*power_args, POWER, two_sided=False),
                ci=(float(lo), float(hi)),
                margin=self.margins[m],
                needed=_needed_within(power_args, 2 * self.margins[m], two_sided=False),
            )
        return out


def reachable_margin(n: int, variance: float, alpha: float) -> float | None:
    """The smallest non-inferiority margin that ``n`` queries decide at this spread of the
    paired differences: a non-inferiority gate is UNDERPOWERED unless it detects twice its
    margin (one-sided, as :class:`NonInferiorityTest` tests)."""
    bound = smallest_bound(n, variance, alpha, POWER, two_sided=False)
    return None if bound is None else bound / 2


@dataclass(frozen=True)
class PowerRow:
    """What ``n`` queries decide for one spread of the paired differences (``discordant``: the
    share of queries whose rank-1 outcome differs between the two models)."""

    n: int
    discordant: float
    alpha: float
    metrics: int  # gated metrics: a harm gate's Holm adjustment divides alpha among them
    harm_detectable: float | None  # the smallest drop a harm gate detects with 80% power
    harm_needed: int | None  # queries a harm gate needs for max_detectable (None: these do)
    max_detectable: float
    margin: float | None  # the smallest non-inferiority margin decided at this size


def power_at(
    n: int,
    discordant: float,
    alpha: float = 0.05,
    metrics: int = len(DEFAULT_GATE_METRICS),
    max_detectable: float = MAX_DETECTABLE,
) -> PowerRow:
    """Which gate can decide at ``n`` queries when a share ``discordant`` of them differ at
    rank 1 between the models (a 0/1 metric's paired differences: ``E[d^2] = discordant``,
    their variance at most that): a harm gate's smallest detectable drop and the queries it
    needs for ``max_detectable``, and the smallest non-inferiority margin (``execretrieval
    power``)."""
    if n < 1 or not 0 <= discordant <= 1:
        raise ValueError(f"need n >= 1 and a discordant share in [0, 1], got {n}, {discordant}")
    args = (n, discordant, alpha / metrics)
    return PowerRow(
        n,
        discordant,
        alpha,
        metrics,
        smallest_bound(*args, POWER),
        _needed_within(args, max_detectable, two_sided=True),
        max_detectable,
        reachable_margin(n, discordant, alpha),
    )


def _needed_within(
    power_args: tuple[int, float, float], bound: float, *, two_sided: bool
) -> int | None:
    """The queries needed to detect a drop of ``bound``, when these do not. A bound of 1 or
    more (the largest drop a metric can show) turns the check off, as a bound of 0 (a
    non-inferiority margin of 0) has nothing to meet."""
    if not 0 < bound < 1:
        return None
    return queries_needed(*power_args, bound, POWER, two_sided=two_sided)


def _verdict(metric: str, mode: str, c: dict, n: int, d: np.ndarray, **decided) -> MetricVerdict:
    return MetricVerdict(
        metric,
        mode,
        c["a"],
        c["b"],
        c["difference"],
        tuple(c["ci95"]),
        c["test"],
        c["p_value"],
        differs=bool(np.any(d)),
        n=n,
        **decided,
    )


@dataclass(frozen=True)
class Floor:
    """A minimum on the candidate: ``value >= required``."""

    metric: str
    required: float
    value: float

    @property
    def passed(self) -> bool:
        return self.value >= self.required

    def to_json(self) -> dict:
        return {"required": self.required, "value": self.value, "passed": self.passed}


@dataclass(frozen=True)
class Drop:
    """Where a gated metric dropped: the domains with the largest mean drop (``domain``,
    ``difference``, ``n``, ``worse``), what the candidate ranked first on the queries that got
    worse (``operator``, ``n``), and their ids."""

    domains: tuple[dict, ...]
    operators: tuple[dict, ...]
    regressed: tuple[str, ...]

    @classmethod
    def of(cls, paired: Paired, metric: str, top: int = 3) -> Drop:
        j = METRIC_NAMES.index(metric)
        qa, qb, ma, mb = paired.baseline, paired.candidate, paired.a, paired.b
        worse = [i for i in range(len(qa)) if mb[i, j] < ma[i, j] - 1e-12]
        by_domain: dict[str, list[int]] = {}
        for i, q in enumerate(qa):
            by_domain.setdefault(q["domain"], []).append(i)
        domains: list[dict] = sorted(
            (
                {
                    "domain": d,
                    "difference": float(np.mean(mb[idx, j] - ma[idx, j])),
                    "n": len(idx),
                    "worse": sum(i in set(worse) for i in idx),
                }
                for d, idx in by_domain.items()
            ),
            key=lambda row: (row["difference"], row["domain"]),
        )
        operators: Counter[str] = Counter()
        for i in worse:
            operators[_rank1_kind(qb[i])] += 1
        ranked = sorted(operators.items(), key=lambda x: (-x[1], x[0]))[:top]
        return cls(
            tuple(d for d in domains if d["difference"] < 0)[:top],
            tuple({"operator": o, "n": n} for o, n in ranked),
            tuple(qa[i]["query_id"] for i in worse),
        )

    def to_json(self) -> dict:
        return {
            "domains": list(self.domains),
            "operators": list(self.operators),
            "regressed": list(self.regressed),
        }


def _rank1_kind(q: ReportRow) -> str:
    """What a worse query's candidate put at rank 1: an operator class, another query's
    snippet, or (a passing snippet at rank 1) a tie that the tie-aware value counts partly."""
    hit = min(q["top"], key=lambda h: h["rank"]) if q["top"] else None
    if hit is None or hit["passes"]:
        return "a tie at rank 1"
    if hit["query_id"] != q["query_id"]:
        return "another query's snippet"
    return hit.get("operator") or hit["kind"]


@dataclass(frozen=True)
class Coverage:
    """Which queries a decision compared. ``compared``: queries of the candidate the baseline
    also has (all of the candidate's without a baseline); ``baseline_queries``: the baseline's
    (``None`` without one); ``selection``: the candidate ran a subset of the baseline's queries
    (``-k``, ``-m``, ``--lf``, ``--deselect``); ``missing_from_baseline``: candidate queries the
    baseline lacks; ``collection_errors``: the items that could not be collected (their queries
    were not compared). Either of the last two makes the decision fail."""

    compared: int
    baseline_queries: int | None = None
    missing_from_baseline: tuple[str, ...] = ()
    collection_errors: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        """Fewer queries compared than the baseline has."""
        return self.baseline_queries is not None and self.compared < self.baseline_queries

    @property
    def selection(self) -> bool:
        """Partial by a deliberate selection: no collection error explains the missing ones."""
        return self.partial and not self.collection_errors

    def problems(self) -> list[str]:
        """What makes the decision fail, as the short names the decision lists."""
        out = []
        if self.collection_errors:
            out.append(f"{len(self.collection_errors)} collection error(s)")
        if self.missing_from_baseline:
            out.append(f"{len(self.missing_from_baseline)} queries missing from the baseline")
        return out

    def to_json(self) -> dict:
        return {
            "compared": self.compared,
            "baseline_queries": self.baseline_queries,
            "selection": self.selection,
            "missing_from_baseline": list(self.missing_from_baseline),
            "collection_errors": list(self.collection_errors),
        }


@dataclass(frozen=True)
class Incomplete:
    """A run cut short: ``completed`` of ``selected`` benchmark items finished, and why."""

    selected: int
    completed: int
    why: tuple[str, ...]

    def to_json(self) -> dict:
        return {"selected": self.selected, "completed": self.completed, "why": list(self.why)}


@dataclass(frozen=True)
class GateDecision:
    """A gate's decision: the verdict of every gated metric (in the order gated) and minimum,
    where the gated metrics dropped, what differs in the invocation, which queries it covered,
    the queries that flipped at rank 1 against the baseline (:func:`.compare.flips`: the
    regressions first); or, for a run cut short, only that (``incomplete``: never a pass); or
    why it could not be computed (``error``: a FAIL)."""

    alpha: float
    n_queries: int
    coverage: Coverage
    has_baseline: bool = False
    verdicts: Mapping[str, MetricVerdict] = field(default_factory=dict)
    floors: Mapping[str, Floor] = field(default_factory=dict)
    where: Mapping[str, Drop] = field(default_factory=dict)
    invocation: tuple[str, ...] = ()
    incomplete: Incomplete | None = None
    error: str | None = None
    flips: tuple[Flip, ...] = ()

    def metrics_in(self, mode: str) -> list[str]:
        return [m for m, v in self.verdicts.items() if v.mode == mode]

    @property
    def mode(self) -> str:
        """``harm``, ``non-inferiority`` or ``mixed`` (``harm`` when nothing is gated)."""
        modes = {v.mode for v in self.verdicts.values()}
        return "mixed" if len(modes) > 1 else modes.pop() if modes else "harm"

    @property
    def failed(self) -> list[str]:
        """What failed: the error, metric names, ``<metric> minimum``, the coverage problems."""
        return (
            ([self.error] if self.error else [])
            + [m for m, v in self.verdicts.items() if not v.passed]
            + [f"{m} minimum" for m, f in self.floors.items() if not f.passed]
            + self.coverage.problems()
        )

    @property
    def underpowered(self) -> dict[str, int]:
        """The gated metrics that could not detect the gate's bound: the queries each needs."""
        return {m: v.needed for m, v in self.verdicts.items() if v.needed is not None}

    @property
    def passed(self) -> bool:
        return self.incomplete is None and not self.failed and not self.underpowered

    @property
    def decision(self) -> str:
        """INCOMPLETE beats FAIL, which beats UNDERPOWERED (a drop found is decided), then PASS."""
        if self.incomplete:
            return "INCOMPLETE"
        if self.failed:
            return "FAIL"
        return "UNDERPOWERED" if self.underpowered else "PASS"

    def to_json(self) -> dict:
        """The figures of the report's ``gate`` record (its sentences come from
        :func:`..reporting.gate_text.gate_json`); ``flips`` (a list of
        :class:`..records.FlipRow`) only against a baseline."""
        out = {
            "decision": self.decision,
            "mode": self.mode,
            "alpha": self.alpha,
            "n_queries": self.n_queries,
            "metrics": {m: v.to_json() for m, v in self.verdicts.items()},
            "minimums": {m: f.to_json() for m, f in self.floors.items()},
            "where": {m: w.to_json() for m, w in self.where.items()},
            "invocation": list(self.invocation),
            "coverage": self.coverage.to_json(),
        }
        if self.has_baseline:
            out["flips"] = [f.to_json() for f in self.flips]
        if self.incomplete:
            out["incomplete"] = self.incomplete.to_json()
        return out


def gate_margins(
    metrics: Sequence[str], margin: Mapping[str, float] | float | None
) -> dict[str, float]:
    """Each gated metric's non-inferiority margin: one number for all, or per metric (a
    metric without one is harm-tested)."""
    if margin is None:
        return {}
    if not isinstance(margin, Mapping):
        return dict.fromkeys(metrics, float(margin))
    return {m: float(margin[m]) for m in metrics if m in margin}


def _check(
    baseline: dict | None,
    candidate: dict,
    alpha: float,
    metrics: Sequence[str],
    minimums: Mapping[str, float],
) -> None:
    """Refuse a gate that cannot decide (see :func:`gate_decision`)."""
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    unknown = [m for m in (*metrics, *minimums) if m not in METRIC_NAMES]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; known: {', '.join(METRIC_NAMES)}")
    if baseline is None and not minimums:
        raise ComparisonError("the gate needs a baseline report or a minimum")
    if not candidate["per_query"]:
        raise ComparisonError("the candidate report has zero queries: nothing to gate")
    if baseline is None:
        return
    if not metrics:
        raise ValueError("a gate against a baseline needs at least one gated metric")
    lacking = [m for m in metrics if m not in shared_metrics([baseline, candidate])[0]]
    if lacking:
        raise ComparisonError(
            f"the baseline report lacks gated metric(s) {', '.join(lacking)} (written by an "
            "earlier version): gate on metrics both reports carry, or re-run the baseline"
        )


def gate_decision(
    baseline: dict | None,
    candidate: dict,
    alpha: float = 0.05,
    seed: int = 0,
    *,
    metrics: Sequence[str] = DEFAULT_GATE_METRICS,
    margin: Mapping[str, float] | float | None = None,
    minimums: Mapping[str, float] | None = None,
    collection_errors: Sequence[str] = (),
    max_detectable: float = MAX_DETECTABLE,
) -> GateDecision:
    """The decision on ``candidate`` (rules in the module docstring).

    ``metrics``: the gated metrics (compared with ``baseline``); ``margin``: ``None`` for harm
    mode, one non-inferiority margin for every gated metric, or ``{metric: delta}`` (metrics
    named there are gated too; the others stay in harm mode); ``minimums``: ``{metric: x}``
    floors on the candidate; ``max_detectable``: the harm-mode bound on the smallest drop detected
    with 80% power, beyond which the gate is UNDERPOWERED. Without a baseline only the
    minimums are gated (at least one is then required). The comparison pairs the queries both
    reports cover; ``collection_errors`` (the items a session could not collect) fail it.

    Raises :class:`.compare.ComparisonError` for zero queries (never a vacuous pass), reports
    of different corpora or a gated metric the baseline lacks, ``ValueError`` for a bad alpha
    or an unknown metric.
    """
    minimums = dict(minimums or {})
    if isinstance(margin, Mapping):
        metrics = tuple(dict.fromkeys((*metrics, *margin)))
    _check(baseline, candidate, alpha, metrics, minimums)
    cand = mean_metrics(_matrix(candidate["per_query"]))
    floors = {m: Floor(m, x, cand[m]) for m, x in minimums.items()}
    coverage = Coverage(len(candidate["per_query"]), collection_errors=tuple(collection_errors))
    if baseline is None:
        return GateDecision(alpha, len(candidate["per_query"]), coverage, floors=floors)
    paired = Paired.of(baseline, candidate)
    base_ids = {q["query_id"] for q in baseline["per_query"]}
    missing = sorted({q["query_id"] for q in candidate["per_query"]} - base_ids)
    coverage = Coverage(paired.n, len(base_ids), tuple(missing), tuple(collection_errors))
    compared = comparison_rows(*paired.columns(metrics), metrics, seed)
    margins = gate_margins(metrics, margin)
    harm = [m for m in metrics if m not in margins]
    by_metric = {
        **HarmTest(alpha, max_detectable).verdicts(paired, compared, harm),
        **NonInferiorityTest(alpha, margins).verdicts(
            paired, compared, [m for m in metrics if m in margins], seed
        ),
    }
    verdicts = {m: by_metric[m] for m in metrics}
    where = {m: Drop.of(paired, m) for m, v in verdicts.items() if v.difference < 0}
    return GateDecision(
        alpha,
        len(candidate["per_query"]),
        coverage,
        True,
        verdicts,
        floors,
        where,
        tuple(invocation_differences(baseline, candidate)),
        flips=flips(baseline, candidate),
    )
