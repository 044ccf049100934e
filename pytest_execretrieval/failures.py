"""A failed query item's message: why its rank 1 is wrong (the tests it fails and the diff from
the canonical), or which snippets tie at rank 1."""

from __future__ import annotations

from .benchmark import QueryResult
from .corpus import unified_diff
from .items import Item, defines


def failure_text(item: Item, r: QueryResult, code: dict[str, str]) -> str:
    """Why a query failed: its rank 1 is a wrong implementation, or a tie of right and wrong."""

    def diff_to(snippet_id: str) -> list[str]:
        lines = unified_diff(item.canonical, code.get(snippet_id, "")).splitlines()
        extra = [f"... ({len(lines) - 40} more lines)"] if len(lines) > 40 else []
        return ["    " + line for line in lines[:40] + extra]

    group = rank1_group(r)
    if r.rank1_tie.get("passing"):  # a tie of passing and failing snippets
        wrong = next((h for h in group if not h.passes), None)
        shown = [f"  diff canonical -> {wrong.kind} ({wrong.operator or wrong.query_id}), tied "
                 f"at rank 1:", *diff_to(wrong.snippet_id)] if wrong else []  # fmt: skip
        return "\n".join([f"rank 1 is a tie for: {item.query}", "  " + tie_text(item, r),
                          *shown])  # fmt: skip
    top1 = r.top[0]
    what = top1.kind + (f" ({top1.operator})" if top1.operator else "")
    if top1.query_id != item.id:
        what += f" of another query, {top1.query_id}"
    if not defines(code.get(top1.snippet_id, ""), item.entry_point):
        failing = [f"    it does not define {item.entry_point}(), so it fails every test "
                   "(not executed)"]  # fmt: skip
    else:
        failing = [f"    {item.tests[i]}  ->  {o}" for i, o in enumerate(r.rank1_outcomes)
                   if o != "pass" and i < len(item.tests)]  # fmt: skip
    tied = [f"  (rank 1 is a tie of {r.rank1_tie['size']} failing snippets)"] if len(group) > 1 \
        else []  # fmt: skip
    return "\n".join([
        f"rank 1 is a wrong implementation for: {item.query}",
        f"  rank 1:    {what}, score {top1.score:.4f}", *tied,
        f"  canonical: rank {r.canonical_rank}, score {r.canonical_score:.4f}",
        f"  rank 1 fails {sum(o != 'pass' for o in r.rank1_outcomes)} of {len(item.tests)} "
        "tests:", *failing,
        "  diff canonical -> rank 1:", *diff_to(top1.snippet_id),
    ])  # fmt: skip


def rank1_group(r: QueryResult) -> list:
    """The listed hits tied with rank 1 (pipelines compare tie keys, embedders scores)."""

    def key(h):
        return h.score if h.tie_key is None else h.tie_key

    return [h for h in r.top if key(h) == key(r.top[0])]


def tie_text(item: Item, r: QueryResult) -> str:
    """``rank 1 is a tie of 3: the canonical and 2 mutants score 0.5544; ...``"""
    group = rank1_group(r)
    parts: dict[str, int] = {}
    for h in group:
        own = h.query_id == item.id
        what = ("the canonical" if h.kind == "canonical" and own else
                "mutants" if own else "snippets of other queries")  # fmt: skip
        parts[what] = parts.get(what, 0) + 1
    size = r.rank1_tie["size"]
    order = ("the canonical", "mutants", "snippets of other queries")
    listed = [k if k == order[0] else f"{parts[k]} {k}" for k in order if k in parts]
    if size > len(group):
        listed.append(f"{size - len(group)} more below rank {len(r.top)}")
    return (
        f"rank 1 is a tie of {size}: {' and '.join(listed)} score {r.top[0].score:.4f}; "
        f"{r.rank1_tie['passing']} of them pass: the model cannot tell them apart "
        "(a tie at rank 1 counts as a failure)"
    )
