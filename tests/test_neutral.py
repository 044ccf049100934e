"""The identifier-free view: a deterministic alpha-renaming that keeps the program.

Checked three ways: the renamed AST is the original AST with the names mapped (nothing else
moved), the renamed code computes the same results (my own snippets: executed here; the bundled
test items: run in the sandbox with the entry point renamed back), and a benchmark with
``--execretrieval-identifiers neutral`` records the view in its report.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from plugin_runs import bench

from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import read_corpus
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.ranking.neutral import neutral_names, renaming

DATA = Path(__file__).parent / "data" / "items"

TRICKY = '''
import math
from collections import Counter as C

TOTAL = 0


def helper(xs, *, key=None):
    """Sum of xs."""
    global TOTAL
    out = sorted(xs, key=key)  # key= of a builtin stays
    TOTAL += len(out)
    return sum(out)


class Box:
    size = 2

    def grow(self, by):
        self.size += by
        return self.size


def shadow():
    len = 3  # a local that shadows a builtin used elsewhere: must stay len
    return len


def entry(items, scale=1.5):
    def inner(v):
        nonlocal scale
        scale += 0
        return v * scale
    try:
        total = helper([inner(i) for i in items], key=None)
    except ValueError as err:
        return str(err)
    counts = C(f"{total:.1f}")
    b = Box()
    match items:
        case [first, *rest]:
            pass
    return total, math.floor(total), b.grow(1), shadow(), TOTAL, sorted(counts), first, rest
'''


class MapNames(ast.NodeTransformer):
    def __init__(self, mapping):
        self.m = mapping

    def visit_Name(self, node):
        node.id = self.m.get(node.id, node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.m.get(node.arg, node.arg)
        return node

    def visit_FunctionDef(self, node):
        node.name = self.m.get(node.name, node.name)
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node):
        node.name = self.m.get(node.name, node.name)
        self.generic_visit(node)
        return node

    def visit_ExceptHandler(self, node):
        node.name = self.m.get(node.name, node.name) if node.name else None
        self.generic_visit(node)
        return node

    def visit_Global(self, node):
        node.names = [self.m.get(n, n) for n in node.names]
        return node

    visit_Nonlocal = visit_Global

    def visit_keyword(self, node):
        node.arg = self.m.get(node.arg, node.arg) if node.arg else None
        self.generic_visit(node)
        return node


def same_shape(code: str, entry_point: str) -> None:
    mapping = renaming(code, entry_point)
    renamed = neutral_names(code, entry_point)
    expected = ast.dump(MapNames(mapping).visit(ast.parse(code)))
    assert ast.dump(ast.parse(renamed)) == expected


def test_renaming_is_deterministic_and_keeps_the_ast_shape():
    renamed = neutral_names(TRICKY, "entry")
    assert renamed == neutral_names(TRICKY, "entry")
    same_shape(TRICKY, "entry")
    mapping = renaming(TRICKY, "entry")
    assert mapping["entry"] == "f" and mapping["helper"].startswith("v")
    assert mapping["Box"].startswith("v")  # a class is a local identifier; its members stay
    for kept in ("len", "math", "C", "size", "grow", "key", "first", "rest", "sorted"):
        assert kept not in mapping, kept
    assert "# key= of a builtin stays" in renamed and '"""Sum of xs."""' in renamed
    assert "def f(" in renamed and "def helper" not in renamed


def test_renamed_code_computes_the_same_results():
    def run(code: str, name: str):
        namespace: dict = {}
        exec(compile(code, "<snippet>", "exec"), namespace)  # our own literal, not an item
        return namespace[name]([1, 2, 3])

    assert run(neutral_names(TRICKY, "entry"), "f") == run(TRICKY, "entry")


def test_the_entry_point_name_is_fresh_when_f_is_taken():
    code = "import f\n\ndef go(x):\n    return f(x)\n"
    renamed = neutral_names(code, "go")
    assert "import f" in renamed and "def f0(v0):" in renamed
    assert neutral_names("def (:\n", "x") == "def (:\n"  # code that does not parse: as is


def test_bundled_snippets_keep_their_behaviour_in_the_sandbox(tmp_path):
    """Renamed canonical and distractors of the test items, with the entry point renamed back,
    give exactly the recorded outcomes."""
    items, _ = load_items(DATA)
    corpus = read_corpus(DATA)
    by_id = {i.id: i for i in items}
    cases = []
    for s in corpus.snippets:
        item = by_id[s.query_id]
        renamed = neutral_names(s.code, item.entry_point)
        assert renamed != s.code
        same_shape(s.code, item.entry_point)
        new_name = renaming(s.code, item.entry_point)[item.entry_point]
        back = f"{renamed}\n{item.entry_point} = {new_name}\n"
        cases.append((s, (back, item.setup, item.tests)))
    with SuiteRunner(cache_dir=tmp_path) as runner:
        results = runner.run_many([c for _, c in cases])
    for (snippet, _), result in zip(cases, results):
        assert tuple(result.outcomes) == snippet.outcomes, snippet.snippet_id


def test_a_benchmark_in_the_neutral_view_records_it(pytester, items):
    result = bench(
        pytester,
        items,
        "--execretrieval-identifiers",
        "neutral",
        "--execretrieval-report-dir",
        "neutral",
    )
    assert result.ret in (0, 1)
    report = json.loads((pytester.path / "neutral" / "bm25.json").read_text())
    assert report["embedder"]["identifiers"] == "neutral"
    original = bench(pytester, items, "--execretrieval-report-dir", "original")
    assert original.ret in (0, 1)
    plain = json.loads((pytester.path / "original" / "bm25.json").read_text())
    assert "identifiers" not in plain["embedder"]  # the default view's report is unchanged
    scores = lambda r: [h["score"] for q in r["per_query"] for h in q["top"]]  # noqa: E731
    assert scores(report) != scores(plain)  # the lexical scorer saw renamed code


@pytest.mark.parametrize("value", ["bogus", "Neutral"])
def test_an_unknown_view_is_a_usage_error(pytester, items, value):
    result = pytester.runpytest_subprocess(
        "--embedder",
        "bm25",
        "--execretrieval-items",
        str(items),
        "--execretrieval-identifiers",
        value,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--execretrieval-identifiers*not one of*"])
