"""Stacked mutants: k single edits on pairwise-disjoint lines combined into one mutant.

Used by the "number of mutations" ablation (k = 2..4). Choice rule, fully deterministic:

1. Inputs are the single-edit mutants (``len(m.edits) == 1``) in the order given, normally
   :func:`~pytest_execretrieval.mutation.operators.generate_mutants` order.
2. Combinations of k of them are visited in lexicographic order of their input positions,
   keeping only those whose edits touch pairwise-disjoint original line ranges.
3. First pass: only combinations whose edits are of k distinct operator classes. Second pass
   (only if ``limit`` is not reached): the remaining combinations, classes may repeat.
4. A combination is kept when the spliced code compiles, still defines ``entry_point``, and its
   AST differs from the canonical and from every stacked mutant kept before; stop at ``limit``.

The result's ``operator`` is the sorted ``"+"``-joined classes of its edits (repeats kept).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from pytest_execretrieval.mutation.operators import (
    Edit,
    Mutant,
    build_mutant,
    edit_lines,
    validated_dump,
)


def stack_mutants(
    source: str, entry_point: str, k: int, mutants: Sequence[Mutant], limit: int
) -> list[Mutant]:
    """Up to ``limit`` valid mutants each combining ``k`` single edits on disjoint lines."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    edits = [m.edits[0] for m in mutants if len(m.edits) == 1]
    spans = [edit_lines(source, e) for e in edits]
    seen = {ast.dump(ast.parse(source))}
    stacked: list[Mutant] = []
    for distinct in (True, False):
        for combo in _combinations(edits, spans, k, distinct):
            if len(stacked) >= limit:
                return stacked
            if not distinct and len({edits[i].operator for i in combo}) == k:
                continue  # already visited in the first pass
            mutant = build_mutant(source, [edits[i] for i in combo])
            dump = validated_dump(mutant.code, entry_point)
            if dump is not None and dump not in seen:
                seen.add(dump)
                stacked.append(mutant)
    return stacked


def _combinations(
    edits: Sequence[Edit], spans: Sequence[tuple[int, int]], k: int, distinct: bool
) -> Iterator[tuple[int, ...]]:
    """Index k-tuples in lexicographic order with disjoint line spans (and distinct classes).

    Branches are pruned when the remaining candidates cannot supply enough distinct start lines
    (or classes), which keeps short functions with few lines cheap for large k.
    """
    n = len(edits)
    suffix_lines: list[frozenset[int]] = [frozenset()] * (n + 1)
    suffix_classes: list[frozenset[str]] = [frozenset()] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix_lines[i] = suffix_lines[i + 1] | {spans[i][0]}
        suffix_classes[i] = suffix_classes[i + 1] | {edits[i].operator}

    def extend(chosen: tuple[int, ...], start: int) -> Iterator[tuple[int, ...]]:
        need = k - len(chosen)
        if need == 0:
            yield chosen
            return
        taken = [spans[j] for j in chosen]
        classes = {edits[j].operator for j in chosen}
        free_lines = [ln for ln in suffix_lines[start] if not any(a <= ln <= b for a, b in taken)]
        if len(free_lines) < need or (distinct and len(suffix_classes[start] - classes) < need):
            return
        for i in range(start, n):
            first, last = spans[i]
            if any(first <= b and a <= last for a, b in taken):
                continue
            if distinct and edits[i].operator in classes:
                continue
            yield from extend((*chosen, i), i + 1)

    yield from extend((), 0)
