"""Code as tokens, and the token edits between two codes: what a distractor's edit looks like to
anything that compares candidates without running them (the rerankers' views, the query-blind
controls). One tokenizer for Python and JavaScript, no parser: strings, ``#`` comments, names,
numbers, operators (``<=`` is one token), other characters one each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher

TOKEN = re.compile(
    r'"(?:\\.|[^"\\\n])*"|'
    r"'(?:\\.|[^'\\\n])*'|"
    r"`(?:\\.|[^`\\])*`|"
    r"#[^\n]*|[A-Za-z_$][\w$]*|\d[\w.]*|"
    r"===|!==|\*\*=?|//=?|>>>?=?|<<=?|[=!<>]=|[-+*/%&|^@]=|->|=>|&&|\|\||\?\?|\S"
)


def tokens(code: str) -> list[re.Match]:
    """``code``'s tokens with their positions."""
    return list(TOKEN.finditer(code))


def words(code: str) -> list[str]:
    """``code``'s tokens as text."""
    return [m.group() for m in TOKEN.finditer(code)]


def matcher(a: Sequence[str], b: Sequence[str]) -> SequenceMatcher:
    """The token matcher of two token sequences (no autojunk: a repeated token is no junk)."""
    return SequenceMatcher(None, a, b, autojunk=False)


def edit_count(found: SequenceMatcher) -> int:
    """The tokens one edit script touches: per differing run, the longer of its two sides (a
    one-token replacement counts 1, ``x`` -> ``x + 1`` counts 2)."""
    return _touched(found.get_opcodes())


def _touched(opcodes: Iterable[tuple[str, int, int, int, int]]) -> int:
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in opcodes if tag != "equal")


def token_edits(a: str, b: str) -> int:
    """:func:`edit_count` of the token sequences of ``a`` and ``b``."""
    return edit_count(matcher(words(a), words(b)))


def trimmed_opcodes(a: Sequence[str], b: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    """The opcodes of ``a`` against ``b`` after their common prefix and suffix, which are equal
    runs by construction (positions are ``a``'s and ``b``'s own): a single-edit mutant beside
    its canonical is matched in the few tokens around its edit instead of the whole function."""
    n = min(len(a), len(b))
    head = 0
    while head < n and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle = matcher(a[head : len(a) - tail], b[head : len(b) - tail]).get_opcodes()
    return [
        (tag, i1 + head, i2 + head, j1 + head, j2 + head)
        for tag, i1, i2, j1, j2 in middle
        if tag != "equal"
    ]


def trimmed_edits(a: Sequence[str], b: Sequence[str]) -> int:
    """:func:`edit_count` over :func:`trimmed_opcodes`: the tokens an edit script touches."""
    return _touched(trimmed_opcodes(a, b))
