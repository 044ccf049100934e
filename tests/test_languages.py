"""The language seam: an item's ``language`` field, the registry, and what the benchmark asks
an item's language instead of knowing Python itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_execretrieval.corpus.items import ItemError, load_item
from pytest_execretrieval.corpus.store import Corpus, Snippet
from pytest_execretrieval.languages import LANGUAGES, language
from pytest_execretrieval.languages.python import PYTHON, Python
from pytest_execretrieval.ranking.benchmark import index_pool, pair_outcomes

SOURCE = Path(__file__).parent / "data" / "items" / "strings" / "count_vowels.toml"


def item_file(root: Path, first_line: str = "", stem: str = "count_vowels") -> Path:
    path = root / "strings" / f"{stem}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(first_line + SOURCE.read_text())
    return path


class Quoted(Python):
    """A second language for the tests: Python's parser and operators, its own spelling of the
    outcome of a snippet that lacks the entry point."""

    name = "quoted"
    missing_entry_point = "error:NoEntryPoint"


def test_an_item_is_python_unless_it_says_otherwise(tmp_path):
    plain = load_item(item_file(tmp_path / "a"))
    said = load_item(item_file(tmp_path / "b", 'language = "python"\n'))
    assert plain.language == said.language == "python"
    assert plain.lang is said.lang is PYTHON is language("python")


@pytest.mark.parametrize(
    "line, reason",
    [
        ('language = "cobol"\n', "unknown language 'cobol' (known: go, javascript, python)"),
        ("language = 3\n", "must be a str, got int"),
    ],
)
def test_a_language_that_is_not_known_is_an_item_problem(tmp_path, line, reason):
    path = item_file(tmp_path, line)
    with pytest.raises(ItemError) as caught:
        load_item(path)
    assert [(p.path, p.field, p.reason) for p in caught.value.problems] == [
        (path, "language", reason)
    ]


def test_a_second_language_is_one_registry_line(tmp_path, monkeypatch):
    monkeypatch.setitem(LANGUAGES, "quoted", Quoted())
    quoted = load_item(item_file(tmp_path, 'language = "quoted"\n', "quoted_vowels"))
    python = load_item(item_file(tmp_path))
    assert quoted.lang.name == "quoted" and python.lang is PYTHON

    # Known without running: a snippet lacking the entry point fails every test, spelled by
    # the query's language; one that defines it must run (None).
    other = Snippet(
        "0" * 64, "strings/other", "canonical", None, None, "def g():\n  return 1\n", ""
    )
    assert pair_outcomes(quoted, other) == ("error:NoEntryPoint",) * len(quoted.tests)
    assert pair_outcomes(python, other) == ("error:NameError",) * len(python.tests)
    canonical = Snippet("1" * 64, python.id, "canonical", None, None, python.canonical, "")
    assert pair_outcomes(quoted, canonical) is None

    # Another query's snippet may pass a query only when it defines the entry point in the
    # query's language: the Python canonical is not a candidate for the quoted query.
    own = Snippet("2" * 64, quoted.id, "canonical", None, None, quoted.canonical, "")
    index = index_pool([quoted, python], Corpus((canonical, own)))
    assert [item.id for item in index.items] == ["strings/count_vowels", "strings/quoted_vowels"]
    assert index.may_pass == ([0], [1])  # each its own canonical only
    with pytest.raises(ValueError, match="items without a canonical in the corpus"):
        index_pool([quoted, python], Corpus((canonical,)))
