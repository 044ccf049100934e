"""Queries a person would type (issue 55, point 3): the docstring summary cleaned, the summaries
that are no query dropped and counted, and ``mine --queries FILE`` (a team's logged queries)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mining_fixtures import write_package, write_quality_module

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.mining import query as query_module
from pytest_execretrieval.mining.query import (
    CODE_EXPRESSION,
    QUALITY_REASONS,
    REFERENCE,
    SIGNATURE,
    TOO_SHORT,
    QueriesFileError,
    entry_parameters,
    read_queries,
    summary_query,
)

# docstring (as ast.get_docstring gives it), function name, parameters -> query or drop reason
CLEANING = [
    # reST field lists end the summary; a docstring that is only fields has none
    (
        "Slugify a string for URLs.\n:param string (str): the text\n:returns: the slug",
        "slugify",
        ("string",),
        "Slugify a string for URLs.",
    ),
    (":param string (str): the text\n:returns: the slug", "slugify", ("string",), TOO_SHORT),
    (
        "Parse a header line.\n:raises ValueError: when empty",
        "parse",
        ("h",),
        "Parse a header line.",
    ),
    # Google sections
    (
        "Split text on commas.\nArgs:\n    text: the text\nReturns:\n    list",
        "tokenize",
        ("text",),
        "Split text on commas.",
    ),
    (
        "Walk the tree depth first.\nArguments:\n    t: it",
        "walk",
        ("t",),
        "Walk the tree depth first.",
    ),
    ("Emit the lines of a file.\nYields:\n    str", "emit", ("f",), "Emit the lines of a file."),
    (
        "Check the number is even.\nRaises:\n    TypeError",
        "check",
        ("n",),
        "Check the number is even.",
    ),
    # NumPy sections, under a rule
    (
        "Compute the moving average\nParameters\n----------\nx : array",
        "moving_average",
        ("x",),
        "Compute the moving average",
    ),
    (
        "Merge two sorted lists into one\nExamples\n--------\n>>> merge([1], [2])\n[1, 2]",
        "merge",
        ("a", "b"),
        "Merge two sorted lists into one",
    ),
    # Example:: and doctest blocks
    (
        "Group items by their key.\nExample::\n\n    group(x)",
        "group",
        ("x",),
        "Group items by their key.",
    ),
    (
        "Count the vowels in a word\n>>> count('ab')\n1",
        "count",
        ("w",),
        "Count the vowels in a word",
    ),
    # .. directive:: blocks, before or after the summary
    (
        ".. deprecated:: 2.0\n   Use other instead.\n\nParse the header into its fields.",
        "parse",
        ("h",),
        "Parse the header into its fields.",
    ),
    (
        "Parse the header into fields.\n.. note:: slow",
        "parse",
        ("h",),
        "Parse the header into fields.",
    ),
    # a sentence cut at :: or : completed, or dropped where it only introduces what follows
    (
        "If *obj* is iterable, return an iterator over its items::",
        "always_iterable",
        ("obj",),
        "If obj is iterable, return an iterator over its items.",
    ),
    (
        "Break *iterable* into lists of length *n*:",
        "chunked",
        ("iterable", "n"),
        "Break iterable into lists of length n.",
    ),
    (
        "Return the running totals of the values. For example:",
        "running",
        ("v",),
        "Return the running totals of the values.",
    ),
    (
        "Splits an iterable on a separator, *sep*. *sep* can be:",
        "split",
        ("src", "sep"),
        "Splits an iterable on a separator, sep.",
    ),
    (
        "Yield ``(beginning, middle, end)`` tuples, where:",
        "windowed_complete",
        ("iterable", "n"),
        "Yield (beginning, middle, end) tuples.",
    ),
    # code-only lines removed; a summary that is only code is a code expression
    (
        "Apply the function repeatedly to the value.\nf(f(f(x))) -> y",
        "nest",
        ("f", "x"),
        "Apply the function repeatedly to the value.",
    ),
    ("f(x) -> y", "apply", ("f", "x"), CODE_EXPRESSION),
    ("x[i:j] + y[k] == z", "glue", ("x", "y"), CODE_EXPRESSION),
    # the signature restated
    ("Identity function. Return *x*.", "identity", ("x",), SIGNATURE),
    ("Returns None.", "return_none", ("x",), SIGNATURE),
    ("Is x iterable?", "isiterable", ("x",), SIGNATURE),
    # too short
    ("Double.", "twice", ("x",), TOO_SHORT),
    # only a reference to another function
    ("See :func:`foo`.", "bar", ("x",), REFERENCE),
    ("Alias of bar", "foo", ("x",), REFERENCE),
    ("Same as baz.", "qux", ("x",), REFERENCE),
    ("Wrapper for :func:`itertools.pairwise`.", "pairwise", ("iterable",), REFERENCE),
    ("Equivalent to ``list(product(*iterables))[index]``.", "nth_product", ("index",), REFERENCE),
    # ... but a reference that says more is a query
    (
        "Same as frange, but generator-based instead of returning a list.",
        "xfrange",
        ("stop",),
        "Same as frange, but generator-based instead of returning a list.",
    ),
    # markup made text: roles, links, literals, emphasis, a reference's underscore
    (
        "Return the :func:`~itertools.chain` of ``iterables``, like `the docs <http://x>`_ say,\n"
        "a form of numeronym_.",
        "chain",
        ("iterables",),
        "Return the chain of iterables, like the docs say, a form of numeronym.",
    ),
    (
        "Check the ``__le__()`` and ``__ge__()`` methods of *cls*.",
        "check_order",
        ("cls",),
        "Check the __le__() and __ge__() methods of cls.",
    ),
]


@pytest.mark.parametrize(("docstring", "name", "params", "expected"), CLEANING)
def test_each_cleaning_rule(docstring, name, params, expected):
    query, reason = summary_query(docstring, name, params)
    if expected.startswith("query: "):
        assert (query, reason) == (None, expected)
    else:
        assert (query, reason) == (expected, None)


def test_entry_parameters_are_read_from_the_canonical():
    code = "import math\n\n\ndef f(a, /, b, *args, c=1, **kw):\n    return a\n"
    assert entry_parameters(code, "f") == ("a", "b", "c", "args", "kw")
    assert entry_parameters("def (", "f") == ()


@pytest.fixture(scope="module")
def quality_mined(tmp_path_factory) -> Path:
    root = write_quality_module(write_package(tmp_path_factory.mktemp("src")))
    out = tmp_path_factory.mktemp("out") / "items"
    assert cli.main(["mine", str(root), "--out", str(out)]) == 0
    return out


def test_quality_drops_are_counted_in_mined_md(quality_mined):
    text = (quality_mined / "MINED.md").read_text()
    skipped = text.split("## Functions skipped, by reason")[1].split("## Per module")[0]
    for row in (
        f"| {REFERENCE} | 1 |",  # see_clamp
        f"| {CODE_EXPRESSION} | 1 |",  # bump
        f"| {SIGNATURE} | 1 |",  # identity
        f"| {TOO_SHORT} | 2 |",  # doubled, param_dump
    ):
        assert row in skipped
    assert "--queries" not in text  # no queries file: no section of its own
    items, problems = load_items(quality_mined)
    assert problems == []
    queries = {i.entry_point: i.query for i in items}
    assert queries["shout"] == "Upper-case the text and add an exclamation mark."
    assert not {"see_clamp", "bump", "identity", "doubled", "param_dump"} & set(queries)


def _lines(*rows: object) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


@pytest.fixture(scope="module")
def logged(tmp_path_factory) -> tuple[Path, Path]:
    """The tiny package mined with a queries file: its out directory and MINED.md's text."""
    root = write_package(tmp_path_factory.mktemp("src"))
    queries = tmp_path_factory.mktemp("logs") / "queries.jsonl"
    queries.write_text(
        _lines(
            {"query": "clamp and add numbers", "function": "tinypkg.core.clamp_sum", "ts": 1},
            {"query": "sum  values\tlimited to a range", "function": "tinypkg.core.clamp_sum"},
            "",
            {"query": "sliding window over a list", "function": "tinypkg.window"},  # re-export
            {"query": "square root", "function": "tinypkg.core.safe_sqrt"},
            {"query": "square root", "function": "tinypkg.core.safe_sqrt"},  # again
            {"query": "download a page", "function": "tinypkg.core.fetch"},  # third-party
            {"query": "identity", "function": "tinypkg.core.undocumented"},  # no test
            {"query": "a method", "function": "tinypkg.core.Thing.method"},
            {"query": "gone", "function": "tinypkg.core.missing"},
        )
    )
    out = tmp_path_factory.mktemp("out") / "items"
    assert cli.main(["mine", str(root), "--out", str(out), "--queries", str(queries)]) == 0
    return out, root


def test_each_logged_query_is_an_item_of_its_function(logged):
    out, _ = logged
    items, problems = load_items(out)
    assert problems == []
    assert {i.id: (i.entry_point, i.query) for i in items} == {
        "tinypkg/clamp_sum": ("clamp_sum", "clamp and add numbers"),
        "tinypkg/clamp_sum_q2": ("clamp_sum", "sum values limited to a range"),
        "tinypkg/safe_sqrt": ("safe_sqrt", "square root"),
        "tinypkg/window": ("window", "sliding window over a list"),
    }
    by_id = {i.id: i for i in items}
    assert by_id["tinypkg/clamp_sum_q2"].tests == by_id["tinypkg/clamp_sum"].tests


def test_logged_lines_that_are_no_item_are_counted_by_reason(logged):
    text = (logged[0] / "MINED.md").read_text()
    section = text.split("## --queries lines skipped, by reason")[1]
    for row in (
        "| a method: minable with --context only | 1 |",
        "| function not found in the SOURCE | 1 |",
        "| the same query for the same function again | 1 |",
        "| function skipped: third-party import | 1 |",
        "| function skipped: no test | 1 |",
    ):
        assert row in section
    assert "| not named in --queries |" in text  # the functions no line names
    assert "items written: 4;" in text


def test_limit_with_queries_keeps_whole_items(logged, tmp_path):
    _, root = logged
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        _lines(
            {"query": "clamp and add numbers", "function": "tinypkg.core.clamp_sum"},
            {"query": "sum of clamped values", "function": "tinypkg.core.clamp_sum"},
            {"query": "square root", "function": "tinypkg.core.safe_sqrt"},
        )
    )
    out = tmp_path / "out"
    argv = ["mine", str(root), "--out", str(out), "--queries", str(queries), "--limit", "2"]
    assert cli.main(argv) == 0
    assert sorted(p.stem for p in (out / "tinypkg").glob("*.toml")) == ["clamp_sum", "clamp_sum_q2"]
    text = (out / "MINED.md").read_text()
    assert "| over --limit | 1 |" in text
    assert "| function skipped: over --limit | 1 |" in text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"query": "a b", "function": "p.m.f"}\nnot json\n', "line 2: not JSON"),
        (b'["a", "p.m.f"]\n', "line 1: a JSON array where a JSON object is expected"),
        (b'{"query": "a b"}\n', 'line 1: not {"query": "...", "function"'),
        (b'{"query": 3, "function": "p.m.f"}\n', "line 1: not {"),
        (b'{"query": "   ", "function": "p.m.f"}\n', "line 1: the query is empty"),
        (b'{"query": "x\\u001b[2J", "function": "p.m.f"}\n', "line 1: the query holds a control"),
        (b'{"query": "x\\u202ey", "function": "p.m.f"}\n', "line 1: the query holds a control"),
        (b'{"query": "x", "function": "os; rm -rf"}\n', "line 1: function 'os; rm -rf' is not"),
        (b'{"query": "x", "function": "f"}\n', "line 1: function 'f' is not a dotted name"),
        (b'{"query": "x", "function": "p.m.f", "m": [[[1]]]}\n', "line 1: JSON nested deeper"),
        (b'{"query": "\xff", "function": "p.m.f"}\n', "line 1: not JSON"),
        (b"\n\n  \n", "holds no query"),
        (b'{"query": "' + b"q" * 2_001 + b'", "function": "p.m.f"}', "longer than the 2,000"),
        (b'{"query": "x", "function": "p.m.f", "pad": "' + b"p" * 17_000 + b'"}', "16,384 bytes"),
    ],
)
def test_a_malformed_or_hostile_queries_file_is_a_clear_error(tmp_path, body, message):
    path = tmp_path / "q.jsonl"
    path.write_bytes(body)
    with pytest.raises(QueriesFileError) as exc:
        read_queries(path)
    assert message in str(exc.value)
    assert "\x1b" not in str(exc.value) and "\u202e" not in str(exc.value)


def test_a_queries_file_over_its_bounds_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    path = tmp_path / "q.jsonl"
    path.write_text(_lines(*({"query": f"q {n}", "function": "p.m.f"} for n in range(5))))
    assert len(read_queries(path)) == 5
    monkeypatch.setattr(query_module, "MAX_QUERIES_LINES", 4)
    with pytest.raises(QueriesFileError, match="more than the 4 lines allowed"):
        read_queries(path)
    monkeypatch.setattr(query_module, "MAX_QUERIES_LINES", 100)
    monkeypatch.setattr(query_module, "MAX_QUERIES_BYTES", 64)
    with pytest.raises(QueriesFileError, match="larger than the 64 bytes allowed"):
        read_queries(path)
    with pytest.raises(QueriesFileError, match="cannot read"):
        read_queries(tmp_path / "missing.jsonl")


def test_a_bad_queries_file_is_a_usage_error_of_mine(tmp_path, capsys):
    root = write_package(tmp_path / "src")
    queries = tmp_path / "q.jsonl"
    queries.write_bytes(b'{"query": "ok query", "function": "tinypkg.core.window"}\n{"query"\n')
    out = tmp_path / "out"
    assert cli.main(["mine", str(root), "--out", str(out), "--queries", str(queries)]) == 4
    err = capsys.readouterr().err
    assert err.startswith("execretrieval mine: --queries ") and ", line 2: not JSON" in err
    assert not out.exists()  # refused before anything is read or written
    argv = ["mine", str(root), "--out", str(out), "--queries", str(queries), "--humaneval"]
    assert cli.main(argv) == 4
    assert "not with --history or --humaneval" in capsys.readouterr().err


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab _*`:.,<>()-=\n>1 ")), max_size=200))
def test_the_summary_cleaner_never_raises(text):
    query, reason = summary_query(text, "f", ("x",))
    if query is None:
        assert reason in QUALITY_REASONS
    else:
        assert reason is None and query == " ".join(query.split()) and "`" not in query


@pytest.mark.parametrize(
    "line",
    [
        "`" + " " * 200_000,
        "1" * 200_000 + "x",
        "`a" + " " * 100_000 + "<" * 100_000,
        ("*" + "a " * 50) * 2_000,
        "a_" * 100_000 + "b",
        "See " + "a, " * 60_000 + ":",
    ],
)
def test_a_hostile_summary_is_cleaned_in_linear_time(line):
    started = time.perf_counter()
    summary_query(line, "f", ("x",))
    assert time.perf_counter() - started < 2.0
