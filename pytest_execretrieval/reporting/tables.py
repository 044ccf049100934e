"""The analyses tables of a set of reports as data (:class:`Table`: a heading, the sentence
that reads it, a header and rows of cell texts), built once from the analyses records
(:func:`..scoring.analyses.analyses`) and rendered by each output in its own way:
:func:`table_markdown` for summary.md, ``html.py`` for the page. No output parses another's
text back into cells.

The tables: the highlights (deception, margin, rank-1 miss attribution, density, edit size,
code-to-code similarity), the query-blind controls beside the rerank pipelines, exec@1 per
domain, per operator class with the two mixes, and the real bugs of a pool that has them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..scoring.analyses import DENSITIES, operator_order
from ..scoring.metrics import HEADLINE

__all__ = [
    "CONTROL_TITLES",
    "Table",
    "analyses_tables",
    "domain_table",
    "highlights_table",
    "or_na",
    "per_class_table",
    "query_blind_table",
    "real_bugs_table",
    "table_markdown",
]


@dataclass(frozen=True)
class Table:
    """One table: ``heading`` (a section title, ``""`` for none), ``lead`` (the sentence above
    it), ``header`` and ``rows`` (cell texts, one per header cell)."""

    heading: str
    lead: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def or_na(x: float | None, spec: str = ".3f") -> str:
    return "n/a" if x is None else format(x, spec)


def table_markdown(table: Table) -> list[str]:
    """A table as summary.md lines: its heading (or a blank line), the lead, a pipe table."""
    return [
        *((f"## {table.heading}", "") if table.heading else ("",)),
        table.lead,
        "",
        "| " + " | ".join(table.header) + " |",
        "|" + "---|" * len(table.header),
        *("| " + " | ".join(row) + " |" for row in table.rows),
    ]


CONTROL_TITLES = {
    "family_medoid": "family medoid",
    "pair_classifier": "pair classifier (held out)",
    "single_classifier": "single-snippet classifier (held out)",
}


def _ci(low: float | None, high: float | None) -> str:
    return f"[{or_na(low)}, {or_na(high)}]"


def query_blind_table(names: Sequence[str], analyses: Sequence[dict]) -> Table | None:
    """The controls of the first report that has them, then every rerank pipeline's exec@1
    beside the best control; ``None`` when no report has controls."""
    sections = [(n, a.get("controls")) for n, a in zip(names, analyses)]
    first = next((s for _, s in sections if s and s.get("controls")), None)
    if first is None:
        return None
    rows = [
        (
            CONTROL_TITLES.get(name, name),
            f"{or_na(c['rate'])} {_ci(*c['ci95'])}",
            or_na(c["chance"]),
            or_na(c["above_chance"], "+.3f"),
            f"{c['n']} {c['unit']}" + (f", held out by {c['folds']}" if c.get("folds") else ""),
        )
        for name, c in first["controls"].items()
    ]
    for name, section in sections:
        pipeline = (section or {}).get("pipeline")
        if pipeline:
            verdict = "beats" if pipeline["beats_controls"] else "**does not beat**"
            aware = "set-aware" if pipeline["set_aware"] else "pointwise"
            rows.append(
                (
                    f"{name} (exec@1, {aware})",
                    f"{or_na(pipeline['exec@1'])} {_ci(*pipeline['ci95'])}",
                    "",
                    "",
                    f"{verdict} the {CONTROL_TITLES.get(pipeline['best_control'], '')}",
                )
            )
    lead = (
        f"Query-blind controls ({first['n_families']} families: a canonical and its own "
        "distractors): how often the pool names its canonical with no query read, with a blind "
        "guess's rate (chance) and the 95% bootstrap CI. A rerank pipeline beats them when its "
        "exec@1 is above the best control's CI."
    )
    header = ("control", "rate [95% CI]", "chance", "above chance", "over")
    return Table("Query-blind controls", lead, header, tuple(rows))


def analyses_tables(names: Sequence[str], analyses: Sequence[dict]) -> list[Table]:
    """Every analyses table of the reports named ``names`` (their analyses, same order)."""
    found = [highlights_table(names, analyses), query_blind_table(names, analyses)]
    found.append(domain_table(names, analyses))
    found += [per_class_table(names, analyses), real_bugs_table(names, analyses)]
    return [t for t in found if t is not None]


def highlights_table(names: Sequence[str], analyses: Sequence[dict]) -> Table:
    """Per model: deception, margin, rank-1 miss attribution, density, rho, AUC."""
    rows = []
    for name, a in zip(names, analyses):
        dec = a["deception"]["overall"]
        dens = a["density_ablation"]["expected_exec1"]
        c2c = a["code_to_code"] or {}
        miss = a["rank1_miss_attribution"]
        rows.append(
            (
                name,
                f"{or_na(dec['pair_rate'])} ({dec['n_pairs']})",
                or_na(dec["query_rate"]),
                or_na(dec["median_margin"], "+.4f"),
                f"{or_na(miss['own_distractor_share'])} ({miss['n_misses']} misses)",
                f"{or_na(dens[0])} / {or_na(dens[-1])}",
                or_na(a["edit_size"]["spearman_rho"]),
                or_na(c2c.get("auc")),
                or_na(c2c.get("false_high_rate")),
            )
        )
    return Table(
        "Analyses highlights",
        "Deceived pair: an own distractor (mutant of the query's canonical) scoring >= the "
        "canonical. Margin: canonical score minus the best own distractor score. "
        "Rank-1 misses: share of failing rank-1 snippets that are the query's own distractor. "
        "Density: expected exec@1 keeping d own distractors per query. "
        "rho: Spearman(edit chars, margin). "
        "AUC: equivalent vs mutant code-to-code similarity (< 0.5 = inverted).",
        (
            "model",
            "deceived pairs",
            "queries deceived",
            "median margin",
            "rank-1 misses to own distractor",
            f"exec@1 at d={DENSITIES[0]} / d={DENSITIES[-1]}",
            "rho",
            "AUC",
            "false-high rate",
        ),
        tuple(rows),
    )


def domain_table(names: Sequence[str], analyses: Sequence[dict]) -> Table | None:
    """The headline metric per domain and model (queries); ``None`` without domains."""
    domains = sorted({d for a in analyses for d in a["per_domain"]})
    if not domains:
        return None
    rows = []
    for dom in domains:
        cells = [a["per_domain"].get(dom) for a in analyses]
        rows.append(
            (dom, *("n/a" if c is None else f"{or_na(c[HEADLINE])} ({c['n']})" for c in cells))
        )
    return Table("", f"{HEADLINE} by domain (queries):", ("domain", *names), tuple(rows))


def per_class_table(names: Sequence[str], analyses: Sequence[dict]) -> Table | None:
    """Per operator class and model (:func:`..scoring.analyses.per_class`), the deception
    rate and exec@1 with only that class's distractors in the pool, then the realistic
    (TSSB-3M-weighted) and the paper's six-class mixes; ``None`` when no report has them."""
    sections = [a.get("per_class") for a in analyses]
    classes = operator_order(c for p in sections if p for c in p["by_class"])
    if not classes:
        return None
    rows = []
    for c in classes:
        cells = [(p or {}).get("by_class", {}).get(c) for p in sections]
        rows.append(
            (
                c,
                *(
                    "n/a"
                    if v is None
                    else f"{or_na(v['deception'])} / {or_na(v['exec@1'])} ({v['n_queries']})"
                    for v in cells
                ),
            )
        )
    for mix in ("realistic_mix", "paper_mix"):
        mixes = [(p or {}).get(mix) for p in sections]
        rows.append(
            (
                mix.replace("_", " "),
                *(
                    "n/a" if v is None else f"{or_na(v['deception'])} / {or_na(v['exec@1'])}"
                    for v in mixes
                ),
            )
        )
    lead = (
        "Per operator class: deceived pairs / exec@1 with only that class's distractors in "
        "the pool (queries). Mixes weigh those per-class values: realistic by the TSSB-3M "
        "frequency of the pattern each class writes ("
        + next(p for p in sections if p)["source"]
        + "), paper by the six core classes equally."
    )
    return Table("", lead, ("class", *names), tuple(rows))


def real_bugs_table(names: Sequence[str], analyses: Sequence[dict]) -> Table | None:
    """Per model, real-bug against mutant deception on the same queries, the paired difference
    with its CI and p, then the same per TSSB-3M pattern (:func:`..scoring.analyses.real_bugs`);
    ``None`` when the pool has no real bugs."""
    sections = [a.get("real_bugs") for a in analyses]
    if not any(sections):
        return None

    def cell(v: dict | None) -> str:
        if not v:
            return "n/a"
        text = f"{or_na(v['real_bug_deception'])} vs {or_na(v['mutant_deception'])}"
        if v.get("difference_ci95"):
            low, high = v["difference_ci95"]
            text += f"; {v['difference']:+.3f} [{low:+.3f}, {high:+.3f}], p {v['p_value']:.3g}"
        return f"{text} ({v['n_pairs']})"

    patterns = sorted({p for s in sections if s for p in s["by_pattern"]})
    rows = [("all", *(cell(s) for s in sections))]
    rows += [
        (p, *(cell((s or {}).get("by_pattern", {}).get(p)) for s in sections)) for p in patterns
    ]
    exec1 = [(s or {}).get("exec@1") for s in sections]
    rows.append(
        (
            "exec@1 with / without real bugs",
            *(
                "n/a" if not e else f"{or_na(e['with_real_bugs'])} / {or_na(e['mutants_only'])}"
                for e in exec1
            ),
        )
    )
    lead = (
        "Real bugs from history: the share of real-bug/fix pairs where the pre-fix version "
        "scores at or above its fix, vs the share of the same queries' mutants at or above "
        "the canonical; the paired difference (real bug - mutants) with its bootstrap 95% CI "
        "and sign-flip p (pairs)."
    )
    return Table("", lead, ("pattern", *names), tuple(rows))
