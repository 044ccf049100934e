"""The bundled benchmark: its size and shape, the items guide's rules, a fresh corpus, and every
snippet behaving as its kind claims (the full verification run)."""

from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
import tokenize
from collections import Counter
from pathlib import Path

import pytest

from pytest_execretrieval.build import engine
from pytest_execretrieval.corpus import stale_reasons
from pytest_execretrieval.items import DOMAINS, load_items

ITEMS = Path(__file__).resolve().parents[1] / "items"
PER_DOMAIN = {d: 85 for d in ("strings", "parsing_validation", "date_time", "bit_manipulation")} | {
    d: 110 for d in DOMAINS[4:]
}


@pytest.fixture(scope="module")
def items():
    loaded, problems = load_items(ITEMS)
    assert not problems, "\n".join(map(str, problems))
    return loaded


def test_one_thousand_items_in_the_ten_domains(items):
    assert Counter(i.domain for i in items) == PER_DOMAIN
    assert len({i.entry_point for i in items}) == len(items)  # names unique across the set


def test_items_follow_the_guide(items):
    for item in items:
        assert 7 <= len(item.tests) <= 10, item.id
        assert item.entry_point not in item.query, item.id
        for code in (item.canonical, *item.alternatives):
            tree = ast.parse(code)
            docstrings = [
                n
                for n in ast.walk(tree)
                if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Module))
                and ast.get_docstring(n)
            ]
            assert not docstrings, f"{item.id}: docstring"
            assert not [n for n in ast.walk(tree) if isinstance(n, ast.Assert)], item.id
            comments = [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
                        if t.type == tokenize.COMMENT]  # fmt: skip
            assert not comments, f"{item.id}: comment"


def test_alternatives_per_part(items):
    with_alt = Counter(i.domain for i in items if i.alternatives)
    part1 = sum(with_alt[d] for d in DOMAINS[:4])
    part2 = sum(with_alt[d] for d in DOMAINS[4:7])
    part3 = sum(with_alt[d] for d in DOMAINS[7:])
    assert part1 >= 110 and part2 >= 100 and part3 >= 100


def test_corpus_is_fresh_and_yields_hold():
    assert stale_reasons(ITEMS, engine()) == []
    rows = [json.loads(line) for line in (ITEMS / "corpus.jsonl").read_text().splitlines()]
    distractors = [r for r in rows if r["kind"] == "distractor"]
    per_item = Counter(r["query_id"] for r in distractors)
    queries = {r["query_id"] for r in rows if r["kind"] == "canonical"}
    assert len(queries) == 1000
    assert sum(per_item[q] >= 4 for q in queries) >= 0.95 * len(queries)
    for part in (DOMAINS[:4], DOMAINS[4:7], DOMAINS[7:]):
        ops = Counter(r["operator"] for r in distractors if r["query_id"].split("/")[0] in part)
        total = sum(ops.values())
        for op in ("off_by_one", "wrong_operator", "swap_arguments", "remove_edge_case_check",
                   "wrong_comparison", "off_by_one_boundary"):  # fmt: skip
            assert ops[op] / total >= 0.08, (part, op, ops[op] / total)


def test_every_bundled_snippet_verifies():
    """The whole verification run: each canonical and alternative passes, each distractor fails
    at least one test, no two items are the same function, the corpus is fresh."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--execretrieval-verify", "-q", "-n", "0",
         "-p", "no:cacheprovider"], cwd=ITEMS.parent, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-5000:]
    snippets = sum(len((ITEMS / name).read_text().splitlines())
                   for name in ("corpus.jsonl", "alternatives.jsonl"))  # fmt: skip
    assert f"{snippets + 2} passed" in done.stdout  # + the name-collision and freshness gates
