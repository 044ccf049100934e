"""The sentences of a gate decision (:class:`..scoring.gate.GateDecision`): its one-line
reason, the explanation lines, and the report's ``gate`` record that carries both beside the
decision's figures. Plain functions of the typed decision; nothing is decided here."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..scoring.gate import POWER, Coverage, GateDecision, MetricVerdict, PowerRow

SHOWN_IDS = 10  # query ids listed in a sentence before "and N more"


def gate_json(d: GateDecision) -> dict:
    """The report's ``gate`` record: ``passed``, ``reason``, ``explanation``, then the figures of
    :meth:`GateDecision.to_json` (``mode``, ``alpha``, ``n_queries``, ``metrics``, ``minimums``,
    ``where``, ``invocation``, ``decision``, ``coverage``; ``incomplete`` for a run cut short;
    ``flips`` last, against a baseline: the queries that changed at rank 1, regressions first).
    A gate that could not be computed has only ``passed``, ``reason``, ``explanation`` and
    ``decision``."""
    if d.error:
        return {
            "passed": False,
            "reason": f"ERROR: {d.error}",
            "explanation": [],
            "decision": "FAIL",
        }
    figures = d.to_json()
    decision = figures.pop("decision")
    coverage = figures.pop("coverage")
    flips = {"flips": figures.pop("flips")} if "flips" in figures else {}
    return {
        "passed": d.passed,
        "reason": reason(d),
        "explanation": explanation(d),
        **figures,
        "decision": decision,
        "coverage": coverage,
        **flips,
    }


def reason(d: GateDecision) -> str:
    """One line: ``PASS: <what was tested>[ on N of M queries (selection)]; nothing failed``,
    ``FAIL: ...; failed: <metrics, minimums, coverage problems>``, ``UNDERPOWERED: ...; <the
    queries needed>`` or ``INCOMPLETE: ...``."""
    if d.incomplete:
        i = d.incomplete
        return (
            f"INCOMPLETE: {i.completed} of {i.selected} selected queries ran "
            f"({'; '.join(i.why)}); the gate did not decide"
        )
    summary = tested(d) + _coverage_note(d.coverage)
    if d.decision == "UNDERPOWERED":
        return f"UNDERPOWERED: {summary}; nothing failed, but {underpowered_note(d)}"
    if d.passed:
        return f"PASS: {summary}; nothing failed"
    return f"FAIL: {summary}; failed: {', '.join(d.failed)}"


def underpowered_note(d: GateDecision) -> str:
    """Which metrics could not detect the gate's bound, and the queries each would need."""
    needs = ", ".join(
        f"{m} needs {n:,} queries ({_bound(d.verdicts[m])})" for m, n in d.underpowered.items()
    )
    margins = [
        margin
        for m in d.underpowered
        if d.verdicts[m].mode == "harm" and (margin := d.verdicts[m].reachable_margin) is not None
    ]
    n = d.n_queries
    if not any(d.verdicts[m].mode == "harm" for m in d.underpowered):
        switch = ""
    elif len(margins) == len(d.underpowered):
        switch = (
            f"; at {n:,} queries a non-inferiority gate decides with --execretrieval-margin="
            f"{_up(max(margins))} or more (execretrieval power --queries {n} says what each "
            "gate can decide)"
        )
    else:
        switch = f"; no non-inferiority margin decides at {n:,} queries either: add items"
    return f"too few queries to detect a drop: {needs}; the gate did not decide{switch}"


def _up(x: float) -> str:
    """``x`` rounded up to 3 decimals (a margin below it would still be underpowered)."""
    return f"{math.ceil(x * 1000 - 1e-9) / 1000:.3f}"


def power_lines(rows: Sequence[PowerRow]) -> list[str]:
    """``execretrieval power``: per number of queries, what a harm gate detects and needs and
    the smallest non-inferiority margin that decides."""
    first = rows[0]
    lines = [
        f"gates at alpha {first.alpha:g} with 80% power, {first.metrics} gated metric"
        f"{'s' * (first.metrics != 1)} (a harm gate's Holm adjustment), "
        f"{first.discordant:.0%} of queries differing at rank 1 between the two models:"
    ]
    for r in rows:
        drop = "none up to 1" if r.harm_detectable is None else f"{r.harm_detectable:.3f}"
        harm = (
            f"decides (a drop of {r.max_detectable:g} is detected)"
            if r.harm_needed is None
            else f"UNDERPOWERED for a drop of {r.max_detectable:g} (needs {r.harm_needed:,} "
            "queries)"
        )
        margin = "none up to 1" if r.margin is None else f"--execretrieval-margin={_up(r.margin)}"
        lines.append(
            f"  {r.n:,} queries: harm gate: smallest detectable drop {drop}, {harm}; "
            f"non-inferiority decides from {margin}"
        )
    return lines


def _bound(v: MetricVerdict) -> str:
    drop = "not estimable" if v.detectable is None else f"{v.detectable:.3f}"
    bound = "twice the margin" if v.mode == "non-inferiority" else "the bound"
    return f"smallest detectable {drop} here, above {bound}"


def tested(d: GateDecision) -> str:
    """What the gate tested: every gated metric under its mode, or the minimums only."""
    if not d.has_baseline:
        return "minimums only (no baseline)"
    parts = []
    ni = d.metrics_in("non-inferiority")
    harm = d.metrics_in("harm")
    if ni:
        # beside harm-tested metrics, say which margin each non-inferiority metric has
        per_metric = (
            " (margin " + ", ".join(f"{m} {d.verdicts[m].margin:g}" for m in ni) + ")"
            if harm
            else ""
        )
        parts.append(f"non-inferiority on {', '.join(ni)}{per_metric} at alpha {d.alpha:g}")
    if harm:
        parts.append(f"harm test on {', '.join(harm)} at alpha {d.alpha:g} (Holm)")
    return " + ".join(parts)


def _coverage_note(c: Coverage) -> str:
    if not c.partial:
        return ""
    return f" on {c.compared:,} of {c.baseline_queries:,} queries" + (
        " (selection)" if c.selection else ""
    )


def explanation(d: GateDecision) -> list[str]:
    """The lines below the reason: what the gate could not compare, then per gated metric its
    figures, test and power, the minimums, where each dropped metric dropped, and what differs
    in the invocation."""
    if d.incomplete:
        i = d.incomplete
        return [
            f"{i.completed} of {i.selected} selected benchmark items completed; a gate "
            "decides only on a complete run (one that -x, --maxfail or a timeout does not cut "
            "short)"
        ]
    lines = coverage_lines(d.coverage)
    lines += [metric_line(v, d.alpha) for v in d.verdicts.values()]
    for m, f in d.floors.items():
        relation = "at or above" if f.passed else "below"
        lines.append(
            f"{m}: candidate {f.value:.3f} is {relation} the required minimum {f.required:.3f}"
        )
    for m, w in d.where.items():
        if w.domains or w.operators:
            domains = ", ".join(
                f"{x['domain']} {x['difference']:+.3f} ({x['worse']} of {x['n']} worse)"
                for x in w.domains
            )
            ops = ", ".join(f"{o['operator']} ({o['n']})" for o in w.operators)
            lines.append(
                f"{m} dropped most in {domains or 'no domain'}; the candidate's rank 1 "
                f"on the {len(w.regressed)} worse queries: {ops or 'n/a'}"
            )
    if d.invocation:
        lines.append("invocation differs from the baseline: " + "; ".join(d.invocation))
    return lines


def coverage_lines(c: Coverage) -> list[str]:
    lines = []
    if c.collection_errors:
        lines.append(
            f"collection errors (their queries were not compared): {_listed(c.collection_errors)}"
        )
    if c.missing_from_baseline:
        lines.append(
            f"queries the baseline lacks (not compared): {_listed(c.missing_from_baseline)}"
        )
    return lines


def _listed(ids: tuple[str, ...]) -> str:
    more = len(ids) - SHOWN_IDS
    return ", ".join(ids[:SHOWN_IDS]) + (f" and {more} more" if more > 0 else "")


def metric_line(v: MetricVerdict, alpha: float) -> str:
    """``<metric>: <figures>: <verdict> (<test>); <power>``."""
    figures = (
        f"{v.metric}: {v.candidate:.3f} vs baseline {v.baseline:.3f}, difference "
        f"{v.difference:+.3f} [{v.ci95[0]:+.3f}, {v.ci95[1]:+.3f}] (95% CI)"
    )
    if v.mode == "harm":
        verdict = (
            "a significant drop"
            if not v.passed
            else "no significant drop"
            if v.difference < 0
            else "no drop"
        )
        test = f"{v.test} p = {v.p_value:.3g}, Holm-adjusted {v.p_adjusted:.3g} vs alpha {alpha:g}"
        power = (
            f"power: a true drop of {v.detectable:.3f} or more would be detected with "
            f"{POWER:.0%} probability"
            if v.detectable
            else no_power(v)
        )
    else:
        verdict = "non-inferior" if v.passed else "not shown non-inferior"
        low = float("nan") if v.ci is None else v.ci[0]  # a non-inferiority verdict has its CI
        test = (
            f"lower end of the {1 - 2 * alpha:.0%} CI {low:+.3f} "
            f"{'>' if v.passed else '<='} -{v.margin:g}"
        )
        power = (
            f"power: a candidate truly equal to the baseline passes with {POWER:.0%} "
            f"probability when the margin is at least {v.detectable:.3f}"
            if v.detectable
            else no_power(v)
        )
    return f"{figures}: {verdict} ({test}); {power}"


def no_power(v: MetricVerdict) -> str:
    if not v.differs:
        return "power: no query differs, so no drop size can be estimated"
    return (
        f"power: too few queries ({v.n}) to detect even the largest possible drop with "
        f"{POWER:.0%} probability"
    )
