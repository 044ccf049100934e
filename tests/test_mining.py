"""`execretrieval mine` on a directory: candidates, queries, doctests, the written items."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mining_fixtures import MARKER, write_package

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.items import load_item, load_items
from pytest_execretrieval.mining.doctests import DROPPED, NOT_LITERAL, TOO_LARGE, doctest_tests
from pytest_execretrieval.mining.functions import mined_functions
from pytest_execretrieval.mining.query import query_text
from pytest_execretrieval.mining.sources import load_source


@pytest.fixture(scope="module")
def mined(tmp_path_factory) -> Path:
    """The tiny and hostile package, mined once (the sandbox runs each canonical twice)."""
    root = write_package(tmp_path_factory.mktemp("src"), hostile=True)
    out = tmp_path_factory.mktemp("out") / "items"
    assert cli.main(["mine", str(root), "--out", str(out)]) == 0
    return out


def test_mined_items_load_with_their_source_table(mined):
    items, problems = load_items(mined)
    assert problems == []
    by_name = {i.entry_point: i for i in items}
    assert sorted(by_name) == ["clamp_sum", "huge", "safe_sqrt", "window"]
    sqrt = by_name["safe_sqrt"]
    assert sqrt.query == "Square root that refuses negatives."
    assert sqrt.tests == (
        "assert safe_sqrt(9.0) == 3.0",
        "assert safe_sqrt(16.0) == 4.0",
        "assert raises(ValueError, safe_sqrt, -1)",
    )
    assert sqrt.source is not None
    assert (sqrt.source.distribution, sqrt.source.version, sqrt.source.license) == (
        "tinypkg",
        "0.1",
        "MIT",
    )
    assert sqrt.source.file == "tinypkg/core.py"
    assert sqrt.source.tests == tuple(f"doctest tinypkg/core.py:{n}" for n in (40, 43, 45))


def test_helpers_and_constants_travel_and_the_docstring_stays_out(mined):
    item = load_item(mined / "tinypkg" / "clamp_sum.toml")
    assert item.canonical == (
        "LIMIT = 10\n\n\ndef _clamp(n):\n    return max(0, min(n, LIMIT))\n\n\n"
        "def clamp_sum(values):\n    return sum(_clamp(v) for v in values)\n"
    )
    assert item.query == "Sum the values, each clamped into 0..LIMIT; see _clamp."


def test_skipped_functions_are_counted_by_reason(mined):
    text = (mined / "MINED.md").read_text()
    for row in (
        "| third-party import | 1 |",
        "| I/O, process or introspection: open | 1 |",
        "| decorated | 1 |",
        "| docstring holds control characters | 1 |",
        "| no test | 1 |",
        "| module nests more than 100 levels deep (the limit) | 1 |",
    ):
        assert row in text
    assert "codec cannot carry" not in text  # a generator under list(...) is read in the child
    assert f"| {TOO_LARGE} | 3 |" in text or f"| {NOT_LITERAL} |" in text
    assert "## Near-clone density (token edit distance)" in text


def test_a_generator_s_doctests_under_list_become_tests_that_pass(mined, tmp_path):
    window = load_item(mined / "tinypkg" / "window.toml")
    assert window.tests[0].startswith("assert list(window([1, 2, 3], 2)) == ")
    assert cli.main(["build", str(mined), "-j", "1", "--cache-dir", str(tmp_path / "c")]) == 0


def test_mining_never_imports_the_package(mined, tmp_path):
    root = write_package(tmp_path / "again")
    cli.main(["mine", str(root), "--out", str(tmp_path / "out")])
    assert not list(tmp_path.rglob(MARKER))
    assert not list(mined.parent.parent.rglob(MARKER))


def test_mining_twice_is_byte_identical(tmp_path):
    root = write_package(tmp_path / "src")
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        assert cli.main(["mine", str(root), "--out", str(out), "--limit", "1"]) == 0
    files = [sorted(p.relative_to(o) for o in [out] for p in out.rglob("*")) for out in outs]
    assert files[0] == files[1] and len(files[0]) == 4  # MINED.md, NOTICE, domain, one item
    for name in files[0]:
        if (outs[0] / name).is_file():
            assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()
    assert "Copyright (c) 2024 Tiny Authors" in (outs[0] / "NOTICE").read_text()


def test_usage_errors_exit_4(tmp_path, capsys):
    assert cli.main(["mine", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 4
    assert "not a directory" in capsys.readouterr().err
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "keep.txt").write_text("mine")
    root = write_package(tmp_path / "src")
    assert cli.main(["mine", str(root), "--out", str(occupied)]) == 4
    assert cli.main(["mine", str(root), "--out", str(tmp_path / "x"), "--domain", "Bad-Name"]) == 4


def test_the_query_is_the_first_paragraph_without_markup():
    docstring = (
        "Return the :func:`~itertools.chain` of ``iterables``, like\n"
        ":meth:`the method <Foo.bar>` does.\n>>> f(1)\n1\n\nSecond paragraph."
    )
    assert query_text(docstring) == "Return the chain of iterables, like the method does."
    assert query_text("") is None
    assert query_text(">>> f(1)\n1") is None


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_the_query_cleaner_never_raises_and_leaves_no_backtick(text):
    query = query_text(text)
    assert query is None or ("`" not in query and query == " ".join(query.split()))


def test_doctest_examples_become_grammar_statements():
    docstring = (
        ">>> xs = [3, 1, 2]\n>>> sorted(f(xs))\n[1, 2, 3]\n>>> f('ab')\n'ab'\n"
        ">>> print(f(1))\n1\n>>> f(x for x in y)\n1\n>>> f(1)\nTraceback (most recent call last):\n"
        "  ...\nKeyError: 1\n>>> f(2)\nTraceback (most recent call last):\n  ...\nMyError: no\n"
        ">>> f(3)\n<object at 0x1>\n"
    )
    converted = doctest_tests(docstring, "f")
    assert converted.tests == [
        "assert sorted(f([3, 1, 2])) == [1, 2, 3]",
        "assert f('ab') == 'ab'",
        "assert raises(KeyError, f, 1)",
    ]
    assert converted.lines == [1, 3, 9]
    assert sum(converted.dropped.values()) == 4
    assert set(converted.dropped) <= set(DROPPED)


def test_inlined_bindings_cannot_grow_past_the_grammar_bound():
    doubling = "".join(">>> x = x + x\n" for _ in range(40))
    converted = doctest_tests(">>> x = [1]\n" + doubling + ">>> f(x)\n1\n", "f")
    assert converted.tests == []
    assert converted.dropped[TOO_LARGE] >= 1


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(">.() []{}'\"\n:x=1f\\\x1b")), max_size=300))
def test_the_doctest_converter_never_raises(text):
    converted = doctest_tests(text, "f")
    assert len(converted.tests) == len(converted.lines)


def test_a_function_that_loads_an_unknown_name_is_skipped(tmp_path):
    (tmp_path / "m.py").write_text(
        "class K:\n    pass\n\n\ndef uses_class():\n    return K()\n\n\n"
        "def uses_global():\n    global G\n    return 1\n\n\n"
        "def uses_clock():\n    import datetime\n    return datetime.date.today()\n\n\n"
        "def uses_nothing():\n    return missing_name\n"
    )
    reasons = {f.name: f.skip for f in mined_functions(load_source(str(tmp_path)))}
    assert reasons == {
        "uses_class": "uses a module-level class or computed value",
        "uses_global": "global or nonlocal",
        "uses_clock": "clock: .today",
        "uses_nothing": "uses a name defined nowhere in its module",
    }


def test_a_source_table_is_checked_like_every_field(mined, tmp_path):
    text = (mined / "tinypkg" / "safe_sqrt.toml").read_text()
    folder = tmp_path / "tinypkg"
    folder.mkdir()
    path = folder / "safe_sqrt.toml"
    cases = {
        "unknown key": text.replace("[source]\n", "[source]\nextra = 1\n"),
        "must be a int": text.replace("line = 37", 'line = "37"'),
        "provenances for 3 tests": text.replace('  "doctest tinypkg/core.py:45",\n', ""),
        "missing required field": text.replace('url = ""\n', ""),
    }
    for expected, body in cases.items():
        assert body != text
        path.write_text(body)
        items, problems = load_items(tmp_path)
        assert items == [] and any(expected in p.reason for p in problems), expected
    data = tomllib.loads(text)
    assert data["source"]["line"] == 37


def test_mined_items_build_verify_and_benchmark_as_they_are(mined, tmp_path):
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert cli.main(["build", str(mined), "-j", "1", *cache]) == 0
    assert cli.main(["build", "--check", str(mined)]) == 0
    verify = subprocess.run(
        [sys.executable, "-m", "pytest_execretrieval.cli", "verify", str(mined), "-n", "0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert verify.returncode == 0, verify.stdout[-2000:]
    bench = subprocess.run(
        [sys.executable, "-m", "pytest", "--embedder", "bm25", "--execretrieval-items", str(mined),
         "--execretrieval-cache-dir", str(tmp_path / "cache"), "--strict-markers", "-p",
         "no:randomly", "-q"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )  # fmt: skip
    assert bench.returncode in (0, 1), bench.stdout[-2000:]
    assert re.search(r"^[.F]{4} ", bench.stdout, re.M), bench.stdout[-500:]  # one item a query
