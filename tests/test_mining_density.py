"""Near-clone density: each mined function's nearest other function by token edit distance."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.mining.density import (
    bounded_edits,
    code_tokens,
    density_shares,
    near_clone_density,
)
from pytest_execretrieval.mining.functions import MinedFunction
from pytest_execretrieval.mining.writer import density_markdown


def levenshtein(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


tokens = st.lists(st.sampled_from("abc"), max_size=12).map(tuple)


@settings(max_examples=300, deadline=None)
@given(tokens, tokens, st.integers(0, 4))
def test_bounded_edits_is_levenshtein_within_the_bound(a, b, bound):
    exact = levenshtein(a, b)
    assert bounded_edits(a, b, bound) == (exact if exact <= bound else None)


def fn(name: str, code: str) -> MinedFunction:
    return MinedFunction("m", "m.py", 1, name, code, "", "")


def test_each_function_gets_its_nearest_neighbour_within_the_bound():
    functions = [
        fn("argmax", "def argmax(xs):\n    return max(range(len(xs)), key=xs.__getitem__)\n"),
        fn("argmin", "def argmin(xs):\n    return min(range(len(xs)), key=xs.__getitem__)\n"),
        fn("other", "def other(a, b, c):\n    # a comment\n    return [a, b, c] * 2\n"),
        fn("skipped", ""),
    ]
    records = near_clone_density(functions)
    assert [(r.function, r.neighbour, r.edits) for r in records] == [
        ("m.argmax", "m.argmin", 2),
        ("m.argmin", "m.argmax", 2),
        ("m.other", None, None),
    ]
    assert "#" not in code_tokens(functions[2].code)
    assert density_shares(records) == {1: 0.0, 2: 2 / 3, 3: 2 / 3}
    table = density_markdown(records)
    assert "| 2 edits | 2 | 66.7% |" in table
    assert "| `m.argmax` | `m.argmin` | 2 |" in table
