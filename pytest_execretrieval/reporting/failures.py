"""Why a benchmark query failed, as text: the rank-1 snippet, its failing tests, its diff.

A failing query item prints :func:`failure_line` by default (one line: what ranked first, the
canonical's rank), and :func:`failure_text` with ``-v`` or ``--tb=long|short`` and in the report
and the junit XML (``pytest --embedder NAME``). A rank 1 that is a wrong implementation lists
each failing test with what the snippet returned there (``assert f(3) == 4  ->  fail: returned
5``): those values are given (``ranking/returned.py`` obtains them); nothing here runs code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..corpus.items import BenchmarkItem
from ..corpus.store import unified_diff
from ..records import CANONICAL, DISTRACTOR, REAL_BUG, Hit, QueryResult

__all__ = ["failure_line", "failure_text", "rank1_group", "tie_members", "tie_text"]

_DIFF_LINES = 40


def failure_text(
    item: BenchmarkItem, r: QueryResult, code: Mapping[str, str], returned: Sequence[str] = ()
) -> str:
    """Why a query failed: its rank 1 is a wrong implementation, or a tie of right and wrong.

    ``code``: snippet code by id; ``returned``: what the rank-1 snippet returned in each test,
    ``""`` where unknown (:func:`..ranking.returned.rank1_returned`; none: no values shown).
    """

    def diff_to(snippet_id: str) -> list[str]:
        lines = unified_diff(item.canonical, code.get(snippet_id, "")).splitlines()
        extra = [f"... ({len(lines) - _DIFF_LINES} more lines)"] if len(lines) > _DIFF_LINES else []
        return ["    " + line for line in lines[:_DIFF_LINES] + extra]

    group = rank1_group(r)
    if r.rank1_tie.get("passing"):  # a tie of passing and failing snippets
        wrong = next((h for h in group if not h.passes), None)
        shown = (
            [
                f"  diff canonical -> {wrong.kind} ({wrong.operator or wrong.query_id}), tied "
                f"at rank 1:",
                *diff_to(wrong.snippet_id),
            ]
            if wrong
            else []
        )
        return "\n".join([f"rank 1 is a tie for: {item.query}", "  " + tie_text(item, r), *shown])
    top1 = r.top[0]
    what = top1.kind + (f" ({top1.operator})" if top1.operator else "")
    if top1.query_id != item.id:
        what += f" of another query, {top1.query_id}"
    if not item.lang.defines(code.get(top1.snippet_id, ""), item.entry_point):
        failing = [
            f"    it does not define {item.entry_point}(), so it fails every test (not executed)"
        ]
    else:
        failing = [
            f"    {item.tests[i]}  ->  {o}"
            + (f": {returned[i]}" if i < len(returned) and returned[i] else "")
            for i, o in enumerate(r.rank1_outcomes)
            if o != "pass" and i < len(item.tests)
        ]
    tied = (
        [f"  (rank 1 is a tie of {r.rank1_tie['size']} failing snippets)"] if len(group) > 1 else []
    )
    return "\n".join(
        [
            f"rank 1 is a wrong implementation for: {item.query}",
            f"  rank 1:    {what}, score {top1.score:.4f}",
            *tied,
            f"  canonical: rank {r.canonical_rank}, score {r.canonical_score:.4f}",
            f"  rank 1 fails {sum(o != 'pass' for o in r.rank1_outcomes)} of {len(item.tests)} "
            "tests:",
            *failing,
            "  diff canonical -> rank 1:",
            *diff_to(top1.snippet_id),
        ]
    )


def failure_line(item: BenchmarkItem, r: QueryResult) -> str:
    """Why a query failed, in one line: what ranked first and where the canonical is.

    ``rank 1: off_by_one mutant; canonical at rank 3``, ``rank 1: canonical of strings/other;
    canonical at rank 2``, or for a tie ``rank 1: tie of 3 (the canonical and 2 mutants);
    canonical at rank 1``. No query text, test or diff (:func:`failure_text` has them), so a
    session with hundreds of failing queries prints one short line each.
    """
    canonical = f"canonical at rank {r.canonical_rank}"
    if r.rank1_tie.get("passing"):
        return f"rank 1: tie of {r.rank1_tie['size']} ({tie_members(item, r)}); {canonical}"
    top1 = r.top[0]
    what = (
        f"{top1.operator} mutant"
        if top1.kind == DISTRACTOR
        else f"real bug ({top1.operator})"
        if top1.kind == REAL_BUG
        else top1.kind
    )
    if top1.query_id != item.id:
        what += f" of {top1.query_id}"
    if r.rank1_tie.get("size", 1) > 1:
        what += f" tied with {r.rank1_tie['size'] - 1} more"
    return f"rank 1: {what}; {canonical}"


def rank1_group(r: QueryResult) -> list[Hit]:
    """The listed hits tied with rank 1 (pipelines compare tie keys, embedders scores)."""

    def key(h: Hit) -> object:
        return h.score if h.tie_key is None else h.tie_key

    return [h for h in r.top if key(h) == key(r.top[0])]


def tie_members(item: BenchmarkItem, r: QueryResult) -> str:
    """Who is tied at rank 1: ``the canonical and 2 mutants and 1 more below rank 10``."""
    group = rank1_group(r)
    parts: dict[str, int] = {}
    for h in group:
        own = h.query_id == item.id
        what = (
            "the canonical"
            if h.kind == CANONICAL and own
            else "mutants"
            if own
            else "snippets of other queries"
        )
        parts[what] = parts.get(what, 0) + 1
    size = r.rank1_tie["size"]
    order = ("the canonical", "mutants", "snippets of other queries")
    listed = [k if k == order[0] else f"{parts[k]} {k}" for k in order if k in parts]
    if size > len(group):
        listed.append(f"{size - len(group)} more below rank {len(r.top)}")
    return " and ".join(listed)


def tie_text(item: BenchmarkItem, r: QueryResult) -> str:
    """``rank 1 is a tie of 3: the canonical and 2 mutants score 0.5544; ...``"""
    return (
        f"rank 1 is a tie of {r.rank1_tie['size']}: {tie_members(item, r)} score "
        f"{r.top[0].score:.4f}; {r.rank1_tie['passing']} of them pass: the model cannot tell "
        "them apart (a tie at rank 1 counts as a failure)"
    )
