"""What a reranker reads of each candidate: a view computed from the candidates' code alone, so
a search system has it at query time (no tests, no execution, no labels). A reranker
``execretrieval train --objective cross-encoder --view V`` trained reads its candidates in view
``V`` (its card says which); the candidates are a family at training time (canonical,
alternatives, distractors) and the first stage's top k at query time.

* ``code``: the candidate as it is;
* ``diff``: what differs from the candidate's near clones among the same candidates is marked
  «like this» (tokens a clone replaces or lacks), and ``«»`` stands where a clone has tokens this
  candidate lacks: the token that decides between a canonical and its mutant is the marked one.
  Near clones: candidates whose token sequences have a difflib ratio of at least ``NEAR`` (a
  single-edit mutant and its canonical do; two unrelated functions do not);
* ``no-identifiers``: the names the code defines (functions, parameters, variables) become
  ``v1``, ``v2``, ... in order of first appearance; keywords, builtins, attributes after a dot,
  strings and numbers stay: does the model read the logic, or the names?

Tokens: :mod:`...mutation.tokens`'s (strings, ``#`` comments, names, numbers, operators, other
characters one each). « and » are single tokens of the packaged MiniLM's vocabulary.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Sequence
from difflib import SequenceMatcher

from ...mutation.tokens import edit_count, matcher, tokens

VIEWS = ("code", "diff", "no-identifiers")
NEAR = 0.8
OPEN, CLOSE = "«", "»"

NAME = re.compile(r"[A-Za-z_$][\w$]*\Z")
JAVASCRIPT_WORDS = frozenset(
    "function return const let var if else for while do break continue new this typeof "
    "instanceof in of null undefined true false class extends super throw try catch finally "
    "switch case default delete void yield async await static get set Math Number String "
    "Array Object Map Set JSON BigInt Symbol Infinity NaN Error TypeError RangeError "
    "parseInt parseFloat isNaN isFinite console Date RegExp Boolean".split()
)
KEPT_NAMES = frozenset(
    {*keyword.kwlist, *keyword.softkwlist, *dir(builtins), "self", "cls", *JAVASCRIPT_WORDS}
)


class ViewError(ValueError):
    """An unknown view name."""


def check_view(view: str) -> str:
    if view not in VIEWS:
        raise ViewError(f"view {view!r}: choose from {', '.join(VIEWS)}")
    return view


def render(view: str, codes: Sequence[str]) -> list[str]:
    """Each of ``codes`` (one candidate set) as ``view`` shows it, in order."""
    check_view(view)
    if view == "code":
        return list(codes)
    if view == "no-identifiers":
        return [without_identifiers(c) for c in codes]
    return marked_differences(codes)


def without_identifiers(code: str) -> str:
    names: dict[str, str] = {}
    out, last, previous = [], 0, ""
    for m in tokens(code):
        text = m.group()
        if NAME.match(text) and text not in KEPT_NAMES and previous != ".":
            text = names.setdefault(text, f"v{len(names) + 1}")
        out += [code[last : m.start()], text]
        last, previous = m.end(), m.group()
    return "".join(out) + code[last:]


def near_clones(codes: Sequence[str], of: int = 0) -> list[int]:
    """The positions of ``codes[of]`` and of its near clones among ``codes``, in order."""
    words = [[m.group() for m in tokens(c)] for c in codes]
    return [j for j, other in enumerate(words) if j == of or _near(words[of], other) is not None]


def edits_to_clones(codes: Sequence[str]) -> list[list[int]]:
    """For each of ``codes``, its :func:`...mutation.tokens.token_edits` to each of its near
    clones among them (each code tokenised once, one matcher per ordered pair)."""
    words = [[m.group() for m in tokens(c)] for c in codes]
    found = []
    for i, mine in enumerate(words):
        matchers = (_near(mine, other) for j, other in enumerate(words) if j != i)
        found.append([edit_count(m) for m in matchers if m is not None])
    return found


def _near(words: list[str], other: list[str]) -> SequenceMatcher | None:
    """The token matcher of two near clones, ``None`` when they are not."""
    found = matcher(words, other)
    return found if found.ratio() >= NEAR else None


def marked_differences(codes: Sequence[str]) -> list[str]:
    found = [tokens(c) for c in codes]
    words = [[m.group() for m in t] for t in found]
    rendered = []
    for i, code in enumerate(codes):
        marked: set[int] = set()
        gaps: set[int] = set()
        for j, other in enumerate(words):
            matcher = _near(words[i], other) if j != i else None
            if matcher is None:
                continue
            for tag, a, b, _, _ in matcher.get_opcodes():
                if tag in ("replace", "delete"):
                    marked.update(range(a, b))
                elif tag == "insert":
                    gaps.add(a)
        rendered.append(_with_marks(code, found[i], marked, gaps))
    return rendered


def _with_marks(code: str, found: list[re.Match], marked: set[int], gaps: set[int]) -> str:
    """``code`` with each run of consecutive marked tokens in « », and «» before each gap."""
    out, last = [], 0
    for k, m in enumerate(found):
        inside = k in marked and k - 1 in marked
        out.append(code[last : m.start()])
        if k in gaps and not inside:
            out.append(OPEN + CLOSE)
        if k in marked and not inside:
            out.append(OPEN)
        out.append(m.group())
        if k in marked and k + 1 not in marked:
            out.append(CLOSE)
        last = m.end()
    out.append(code[last:])
    if len(found) in gaps:
        out.append(OPEN + CLOSE)
    return "".join(out)
