"""A retrieve-then-rerank pipeline as a benchmark run, and its rank-1 lift over the first stage.

**Ordering.** For each query the reranker scores the first stage's top ``k`` (its listed,
tie-broken order). The pipeline lists those ``k`` by (reranker score desc, first-stage score
desc, first-stage position asc), then ranks ``k + 1 ..`` exactly as the first stage did (they
are not rescored, so the reranker cannot lift a snippet from below ``k``).

**Scores and ties.** A pipeline hit carries ``score`` = the reranker's score (rounded to 6
decimals) at ranks ``1..k`` and the first stage's score below, and ``tie_key`` = ``(1, reranker
score, first-stage score)`` resp. ``(0, first-stage score)``. Two hits tie iff their tie keys are
equal, i.e. the reranker cannot separate them *and* the first stage could not either; the
first-stage order decides every other reranker tie (it is the pipeline's definition, not an
arbitrary tie-break). The tie-aware metrics (:func:`..metrics.row_metrics`) count the groups of
equal tie keys, so a reranker that ties a passing and a failing candidate that the first stage
had also tied still gets the expected value, never a lucky order. The tie group at the last
listed rank and the canonical's group are carried over from the first stage where they lie
below ``k``; a first-stage tie that straddles rank ``k`` is cut there (the reranked part is
scored, the rest is not).

``canonical_score`` and ``own_distractors`` of a pipeline row are the first stage's (the reranker
scores the top ``k`` only); ``passes`` of every hit is the first stage's (same query, same
snippet).

**Lift** (:func:`lift`): per metric, pipeline minus first stage over the same queries, with the
paired bootstrap CI and test of :func:`..compare.paired_comparison`; for exec@1 also the exact
McNemar test on the per-query pass/fail of the pytest items (a tie at rank 1 fails), and the
same figures per domain and per operator class (queries with an own distractor of that class,
as in :func:`..analyses.per_operator`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...corpus.items import BenchmarkItem, defines
from ...corpus.store import Snippet
from ...execution.runner import SuiteRunner
from ..benchmark import BenchmarkRun, Hit, QueryResult
from ..retrieval import DECIMALS
from .base import Candidate, Reranked, Reranker, RerankerError, RerankQuery

__all__ = ["PipelineRun", "lift", "lift_lines", "lift_markdown", "pipeline_name", "rerank_run"]


def pipeline_name(embedder: str, reranker: str) -> str:
    """``<embedder>+<reranker>``, the name in item ids and report file names."""
    return f"{embedder}+{reranker}"


@dataclass(frozen=True)
class PipelineRun:
    run: BenchmarkRun  # the pipeline's results, like an embedder's
    info: dict  # the report's ``rerank`` section: reranker, k, fallbacks, reranker figures
    # Wall-clock cost (not in the report, whose only timing fields are elapsed_s/created_at):
    # seconds, ms_per_query, and the first stage's first_stage_seconds, first_stage_ms_per_query.
    cost: dict


def _group_spans(keys: Sequence) -> list[tuple[int, int]]:
    """0-based ``(first, last)`` of the run of equal keys holding each position."""
    spans: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(keys) + 1):
        if i == len(keys) or keys[i] != keys[start]:
            spans += [(start, i - 1)] * (i - start)
            start = i
    return spans


# The pipeline's hits, rank-1 tie, tail tie, canonical span and canonical rank of one query.
Reordered = tuple[list[Hit], dict, dict, dict, int]


def reorder(r: QueryResult, scores: Sequence[float], k: int) -> Reordered:
    """The pipeline's view of one query whose first ``k`` listed hits got ``scores`` (the tie
    groups as in :class:`..benchmark.QueryResult`; ordering and ties: module docstring)."""
    top = list(r.top)
    k = min(k, len(top))
    rounded = [round(float(s), DECIMALS) for s in scores]
    order = sorted(range(k), key=lambda i: (-rounded[i], -top[i].score, i))
    hits = [Hit(pos + 1, top[i].snippet_id, top[i].kind, top[i].operator, top[i].query_id,
                rounded[i], top[i].passes, (1, rounded[i], top[i].score))
            for pos, i in enumerate(order)]  # fmt: skip
    hits += [Hit(i + 1, h.snippet_id, h.kind, h.operator, h.query_id, h.score, h.passes,
                 (0, h.score)) for i, h in enumerate(top[k:], start=k)]  # fmt: skip
    keys = [h.tie_key for h in hits]
    spans = _group_spans(keys)
    last_first, last_last = spans[-1]
    if k == len(top):  # the whole list was reranked: nothing below ties with it
        tail = {"size": last_last - last_first + 1,
                "passing": sum(h.passes for h in hits[last_first:])}  # fmt: skip
    else:  # the first stage's tail group, less its members that were reranked
        moved = [h for h in top[:k] if h.score == top[-1].score]
        tail = {"size": r.tail_tie["size"] - len(moved),
                "passing": r.tail_tie["passing"] - sum(h.passes for h in moved)}  # fmt: skip
    first_group = hits[: spans[0][1] + 1]
    rank1 = tail if spans[0] == spans[-1] else {
        "size": len(first_group), "passing": sum(h.passes for h in first_group)}  # fmt: skip
    canonical = next((p for p, h in enumerate(hits)
                      if h.kind == "canonical" and h.query_id == r.query_id), None)  # fmt: skip
    if canonical is not None and canonical < k:
        a, b = spans[canonical]
        if spans[canonical] == spans[-1]:
            b = a + tail["size"] - 1
        span = {"first": a + 1, "last": b + 1}
        rank = canonical + 1
    else:  # below the reranked part: ranks are the first stage's
        span = {"first": max(r.canonical_tie["first"], k + 1), "last": r.canonical_tie["last"]}
        rank = r.canonical_rank
    return hits, rank1, tail, span, rank


def _outcomes(item: BenchmarkItem, snippet: Snippet, runner: SuiteRunner) -> tuple[str, ...]:
    """The snippet's outcome per test of ``item`` (recorded, not callable, or run, cached)."""
    if snippet.query_id == item.id:
        return snippet.outcomes
    if not defines(snippet.code, item.entry_point):
        return ("error:NameError",) * len(item.tests)
    result = runner.run(snippet.code, item.setup, item.tests)
    honest = result.passed or any(o != "pass" for o in result.outcomes)
    return result.outcomes if honest else ("error:Sandbox",) * len(result.outcomes)


def rerank_run(
    first: BenchmarkRun, first_name: str, reranker: Reranker, k: int,
    items: Sequence[BenchmarkItem],
    snippets: Mapping[str, Snippet], runner: SuiteRunner, name: str | None = None,
) -> PipelineRun:  # fmt: skip
    """Rerank ``first``'s top ``k`` of every item's query with ``reranker``.

    ``snippets``: the corpus by snippet id; ``name``: the reranker as the user spelled it (the
    pipeline is ``<first_name>+<name>``; default ``reranker.name``). Raises
    :class:`RerankerError` when the reranker answers with the wrong number of scores."""
    if k < 1:
        raise RerankerError(f"the rerank depth k must be at least 1, got {k}")
    items = sorted((i for i in items if i.id in first.results), key=lambda i: i.id)
    queries = [
        RerankQuery(item, tuple(Candidate(h.snippet_id, snippets[h.snippet_id].code, h.rank,
                                          h.score)
                                for h in first.results[item.id].top[:k]))
        for item in items
    ]  # fmt: skip
    started = time.perf_counter()
    answers: list[Reranked] = reranker.rerank(first_name, queries)
    seconds = time.perf_counter() - started
    if len(answers) != len(queries):
        raise RerankerError(f"reranker {reranker.name!r} answered {len(answers)} queries of "
                            f"{len(queries)}")  # fmt: skip
    results: dict[str, QueryResult] = {}
    fallbacks: Counter[str] = Counter()
    fallback_ids: list[str] = []
    details: dict[str, dict] = {}
    for item, query, answer in zip(items, queries, answers):
        if len(answer.scores) != len(query.candidates):
            raise RerankerError(f"reranker {reranker.name!r} gave {len(answer.scores)} scores "
                                f"for {len(query.candidates)} candidates of {item.id}")  # fmt: skip
        if answer.fallback:
            fallbacks[answer.fallback] += 1
            fallback_ids.append(item.id)
        if answer.detail:
            details[item.id] = answer.detail
        r = first.results[item.id]
        hits, rank1, tail, span, rank = reorder(r, answer.scores, k)
        same = hits[0].snippet_id == r.top[0].snippet_id
        outcomes = r.rank1_outcomes if same else _outcomes(item, snippets[hits[0].snippet_id],
                                                            runner)  # fmt: skip
        results[item.id] = QueryResult(
            item.id, item.domain, rank1["passing"] == rank1["size"], rank, r.canonical_score,
            tuple(hits), tuple(outcomes), r.own_distractors, {}, rank1, tail, span,
        )  # fmt: skip
    # The first stage's invocation plus the reranker's: a comparison with the first stage
    # shows exactly what the second stage adds.
    invocation = {**first.embedder, "name": pipeline_name(first_name, name or reranker.name),
                  "first_stage": first_name, "reranker": reranker.invocation(),
                  "rerank_k": k}  # fmt: skip
    n = max(1, len(queries))
    info = {
        "reranker": reranker.name, "k": k,
        "fallback": {"n": len(fallback_ids), "reasons": dict(sorted(fallbacks.items())),
                     "query_ids": fallback_ids},
        "totals": {key: sum(d[key] for d in details.values() if key in d)
                   for key in sorted({k for d in details.values() for k, v in d.items()
                                      if isinstance(v, (int, float))})},
        "per_query": details,
    }  # fmt: skip
    cost = {"seconds": seconds, "ms_per_query": 1000 * seconds / n,
            "first_stage_seconds": first.encode_s,
            "first_stage_ms_per_query": 1000 * first.encode_s / n}  # fmt: skip
    return PipelineRun(BenchmarkRun(invocation, first.corpus_sha256, first.n_snippets, results,
                                    seconds), info, cost)  # fmt: skip


def _group_figures(qa: list[dict], qb: list[dict], idx: list[int], seed: int) -> dict:
    from ...scoring.compare import paired_test
    from ...scoring.metrics import METRIC_NAMES, metric_matrix, row_metrics
    from ...scoring.stats import mcnemar_exact, paired_bootstrap_diff_ci

    j = METRIC_NAMES.index("exec@1")
    a = metric_matrix([row_metrics(qa[i]).expected for i in idx])[:, j]
    b = metric_matrix([row_metrics(qb[i]).expected for i in idx])[:, j]
    lo, hi = paired_bootstrap_diff_ci(a, b, n_resamples=2000, seed=seed)
    strict = mcnemar_exact([qa[i]["passed"] for i in idx], [qb[i]["passed"] for i in idx])
    test = paired_test(a, b, seed)
    return {
        "n": len(idx), "before": float(a.mean()), "after": float(b.mean()),
        "difference": float(b.mean() - a.mean()), "ci95": [float(lo), float(hi)],
        "p": test["p_value"], "test": test["test"],
        "mcnemar_passed": {"only_first_stage": strict.only_a, "only_pipeline": strict.only_b,
                           "p": strict.p_value},
    }  # fmt: skip


def lift(first_stage: dict, pipeline: dict, seed: int = 0) -> dict:
    """The rank-1 lift of ``pipeline`` over ``first_stage`` (two reports on the same queries).

    ``metrics``: per metric ``{difference, ci95, p, test, before, after}`` (pipeline minus first
    stage); ``exec@1_mcnemar``: the exact McNemar test on the pytest items' pass/fail
    (``only_first_stage``, ``only_pipeline``, ``p``); ``by_domain`` and ``by_operator``: the
    exec@1 figures per domain and per operator class."""
    from ...scoring.analyses import _classes, _own
    from ...scoring.compare import _paired_queries, paired_comparison
    from ...scoring.stats import mcnemar_exact

    cmp = paired_comparison(first_stage, pipeline, seed=seed)
    qa, qb = _paired_queries(first_stage, pipeline)
    strict = mcnemar_exact([q["passed"] for q in qa], [q["passed"] for q in qb])
    domains: dict[str, list[int]] = {}
    for i, q in enumerate(qa):
        domains.setdefault(q["domain"], []).append(i)
    classes = _classes(first_stage)
    return {
        "first_stage": cmp["a"],
        "n_queries": cmp["n_queries"],
        "metrics": {
            m: {
                "difference": c["difference"],
                "ci95": c["ci95"],
                "p": c["p_value"],
                "test": c["test"],
                "before": c["a"],
                "after": c["b"],
            }
            for m, c in cmp["metrics"].items()
        },  # fmt: skip
        "exec@1_mcnemar": {
            "only_first_stage": strict.only_a,
            "only_pipeline": strict.only_b,
            "p": strict.p_value,
        },  # fmt: skip
        "by_domain": {d: _group_figures(qa, qb, idx, seed) for d, idx in sorted(domains.items())},
        "by_operator": {
            c: _group_figures(qa, qb, idx, seed)
            for c in classes
            if (idx := [i for i, q in enumerate(qa) if _own(q, c)])
        },
    }


def lift_lines(name: str, report: dict) -> list[str]:
    """One line per pipeline report: exec@1 before -> after, the lift with CI and p values."""
    lift_ = report.get("lift")
    if not lift_:
        return []
    m = lift_["metrics"]["exec@1"]
    mc = lift_["exec@1_mcnemar"]
    info = report.get("rerank", {})
    fb = info.get("fallback", {}).get("n")
    fallback = f"; first-stage order kept for {fb} queries" if fb else ""
    return [f"lift [{name}] over {lift_['first_stage']}: exec@1 {m['before']:.3f} -> "
            f"{m['after']:.3f}, {m['difference']:+.3f} [{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}] "
            f"({m['test']} p = {m['p']:.3g}; McNemar on pass/fail {mc['only_first_stage']} vs "
            f"{mc['only_pipeline']}, p = {mc['p']:.3g}){fallback}"]  # fmt: skip


def lift_markdown(reports: Mapping[str, dict]) -> str:
    """The summary.md section: each pipeline beside its first stage, exec@1 lift overall and
    per operator class."""
    pipelines = {n: r for n, r in reports.items() if r.get("lift")}
    if not pipelines:
        return ""
    lines = ["## Reranking: rank-1 lift over the first stage", "",
             "| pipeline | first stage | exec@1 before | after | lift [95% CI] | p | McNemar p "
             "| fallbacks |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, r in pipelines.items():
        m, mc, info = r["lift"]["metrics"]["exec@1"], r["lift"]["exec@1_mcnemar"], r["rerank"]
        lines.append(f"| {name} | {r['first_stage']} | {m['before']:.3f} | {m['after']:.3f} | "
                     f"{m['difference']:+.3f} [{m['ci95'][0]:+.3f}, {m['ci95'][1]:+.3f}] | "
                     f"{m['p']:.3g} | {mc['p']:.3g} | {info['fallback']['n']} |")  # fmt: skip
    for name, r in pipelines.items():
        rows = r["lift"]["by_operator"]
        if rows:
            lines += ["", f"### {name}: exec@1 lift per operator class", "",
                      "| operator class | queries | before | after | lift [95% CI] | p |",
                      "|---|---|---|---|---|---|"]  # fmt: skip
            lines += [f"| {c} | {g['n']} | {g['before']:.3f} | {g['after']:.3f} | "
                      f"{g['difference']:+.3f} [{g['ci95'][0]:+.3f}, {g['ci95'][1]:+.3f}] | "
                      f"{g['p']:.3g} |" for c, g in rows.items()]  # fmt: skip
    return "\n".join(lines) + "\n"
