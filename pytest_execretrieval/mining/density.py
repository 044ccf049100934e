"""Near-clone density in real code (the token half of issue 40 part 7).

For every self-contained function of a SOURCE (:func:`.functions.mined_functions` with code),
its nearest other such function by token edit distance: Levenshtein distance over the Python
token strings of the two canonicals (:func:`code_tokens`: names, operators, numbers and strings;
comments and layout left out). Bounded: only distances up to :data:`MAX_EDITS` are computed
(a pair whose token counts differ by more is never compared, and a comparison stops once every
alignment is past the bound), so a function with no neighbour that near has none recorded.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass

from .functions import MinedFunction

MAX_EDITS = 3  # the table's widest column
_LAYOUT = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
    }
)


@dataclass(frozen=True)
class NearestNeighbour:
    """A function's nearest other function of the same SOURCE within :data:`MAX_EDITS` token
    edits (``neighbour``/``edits`` None where none is that near)."""

    function: str  # "module.name"
    tokens: int
    neighbour: str | None
    edits: int | None


def code_tokens(code: str) -> tuple[str, ...]:
    """The token strings of ``code``, without comments and layout; () if it does not tokenize."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(code).readline)
        return tuple(t.string for t in tokens if t.type not in _LAYOUT)
    except (tokenize.TokenError, SyntaxError):
        return ()


def bounded_edits(a: tuple[str, ...], b: tuple[str, ...], bound: int) -> int | None:
    """The Levenshtein distance of ``a`` and ``b`` if it is at most ``bound``, else None
    (the band of width ``2 * bound + 1`` around the diagonal: O(len * bound))."""
    if abs(len(a) - len(b)) > bound:
        return None
    far = bound + 1
    previous = {j: j for j in range(min(len(b), bound) + 1)}
    for i in range(1, len(a) + 1):
        current = {0: i} if i <= bound else {}
        for j in range(max(1, i - bound), min(len(b), i + bound) + 1):
            current[j] = min(
                previous.get(j, far) + 1,
                current.get(j - 1, far) + 1,
                previous.get(j - 1, far) + (a[i - 1] != b[j - 1]),
            )
        if min(current.values(), default=far) > bound:
            return None
        previous = current
    distance = previous.get(len(b), far)
    return distance if distance <= bound else None


def near_clone_density(functions: list[MinedFunction]) -> list[NearestNeighbour]:
    """Each function with code, with its nearest neighbour within :data:`MAX_EDITS` edits (the
    first in source order among equally near ones), in the functions' order."""
    coded = [(f"{f.module}.{f.name}", code_tokens(f.code)) for f in functions if f.code]
    by_length = sorted(range(len(coded)), key=lambda i: len(coded[i][1]))
    best: dict[int, tuple[int, int]] = {}  # index -> (edits, neighbour index)
    for position, i in enumerate(by_length):
        for j in by_length[position + 1 :]:
            if len(coded[j][1]) - len(coded[i][1]) > MAX_EDITS:
                break
            edits = bounded_edits(coded[i][1], coded[j][1], MAX_EDITS)
            if edits is None:
                continue
            for one, other in ((i, j), (j, i)):
                if (edits, other) < best.get(one, (MAX_EDITS + 1, len(coded))):
                    best[one] = (edits, other)
    return [
        NearestNeighbour(
            name,
            len(tokens),
            coded[best[i][1]][0] if i in best else None,
            best[i][0] if i in best else None,
        )
        for i, (name, tokens) in enumerate(coded)
    ]


def density_shares(records: list[NearestNeighbour]) -> dict[int, float]:
    """The share of functions with a neighbour within 1, 2, ... :data:`MAX_EDITS` edits."""
    total = len(records) or 1
    return {
        k: sum(1 for r in records if r.edits is not None and r.edits <= k) / total
        for k in range(1, MAX_EDITS + 1)
    }
