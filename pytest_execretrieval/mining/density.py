"""Near-clone density in real code (the token half of issue 40 part 7).

For every self-contained function of a SOURCE (:func:`.functions.mined_functions` with code),
its nearest other such function by token edit distance: Levenshtein distance over the Python
token strings of the two canonicals (:func:`code_tokens`: names, operators, numbers and strings;
comments and layout left out). Bounded: only distances up to :data:`MAX_EDITS` are computed
(a pair whose token counts differ by more is never compared; a common prefix and suffix are
matched first, and what lies between is measured bit-parallel, or in a band that stops once
every alignment is past the bound: :func:`bounded_edits`), so a function with no neighbour that
near has none recorded. And each function is compared with at most :data:`MAX_COMPARED`
others on either side of it in token count: a real package has far fewer within three tokens
of one (33 at most in sympy), and a module of a thousand near-identical functions would
otherwise take every pair, quadratic in its size.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass

from .functions import MinedFunction

MAX_EDITS = 3  # the table's widest column
MAX_COMPARED = 64  # functions each one is compared with, the next ones up in token count
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
    """The Levenshtein distance of ``a`` and ``b`` if it is at most ``bound``, else None. A
    common prefix and suffix cost no edit and are matched first; what lies between is measured
    bit-parallel when short (:func:`_myers`: O(len) integer operations), else in the band of
    width ``2 * bound + 1`` around the diagonal (O(len * bound), stopping once every alignment
    is past the bound)."""
    if abs(len(a) - len(b)) > bound:
        return None
    if a == b:
        return 0
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end = 0
    while end < len(a) - start and end < len(b) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a, b = a[start : len(a) - end], b[start : len(b) - end]
    if len(a) <= _SHORT:
        distance = _myers(a, b)
        return distance if distance <= bound else None
    return _banded(a, b, bound)


_SHORT = 64  # tokens: measured bit-parallel, in one machine word or two


def _myers(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """The Levenshtein distance of ``a`` and ``b``: Myers' bit-vector algorithm (in Hyyrö's
    formulation for the global distance), a column of the table per token of ``b``."""
    if not a:
        return len(b)
    match: dict[str, int] = {}
    for i, token in enumerate(a):
        match[token] = match.get(token, 0) | (1 << i)
    full, top = (1 << len(a)) - 1, 1 << (len(a) - 1)
    up, down, distance = full, 0, len(a)  # the column's +1 and -1 steps, its last cell
    for token in b:
        eq = match.get(token, 0)
        diagonal = ((((eq & up) + up) ^ up) | eq | down) & full
        right = down | (full & ~(diagonal | up))
        left = up & diagonal
        if right & top:
            distance += 1
        elif left & top:
            distance -= 1
        right = ((right << 1) | 1) & full
        left = (left << 1) & full
        up = left | (full & ~(diagonal | right))
        down = right & diagonal
    return distance


def _banded(a: tuple[str, ...], b: tuple[str, ...], bound: int) -> int | None:
    n, m = len(a), len(b)
    far = bound + 1
    previous = [j if j <= bound else far for j in range(m + 1)]
    for i in range(1, n + 1):
        current = [far] * (m + 1)  # outside the band: past the bound
        current[0] = nearest = i if i <= bound else far
        token = a[i - 1]
        for j in range(max(1, i - bound), min(m, i + bound) + 1):
            cost = previous[j - 1] + (token != b[j - 1])
            if previous[j] + 1 < cost:
                cost = previous[j] + 1
            if current[j - 1] + 1 < cost:
                cost = current[j - 1] + 1
            current[j] = cost
            if cost < nearest:
                nearest = cost
        if nearest > bound:
            return None
        previous = current
    return previous[m] if previous[m] <= bound else None


def near_clone_density(functions: list[MinedFunction]) -> list[NearestNeighbour]:
    """Each function with code, with its nearest neighbour within :data:`MAX_EDITS` edits (the
    first in source order among equally near ones), in the functions' order; each compared with
    the :data:`MAX_COMPARED` functions after it in token count (stable by source order)."""
    coded = [(f"{f.module}.{f.name}", code_tokens(f.code)) for f in functions if f.code]
    by_length = sorted(range(len(coded)), key=lambda i: len(coded[i][1]))
    best: dict[int, tuple[int, int]] = {}  # index -> (edits, neighbour index)
    for position, i in enumerate(by_length):
        for j in by_length[position + 1 : position + 1 + MAX_COMPARED]:
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
