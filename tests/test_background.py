"""The background pool (corpus/background.py): a code base's functions in every query's pool.

Execution decides: a background function ranked first passes a query iff it passes the query's
tests in the sandbox, called as the query's entry point; reports count the rank-1 misses it
holds, and how many background functions outscore each canonical."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from plugin_runs import bench

from pytest_execretrieval.corpus.background import (
    BackgroundFunction,
    as_entry_point,
    background_snippets,
    describe,
    pool_sha256,
    with_background,
)
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import corpus_sha256, read_corpus
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.ranking.benchmark import run_benchmark
from pytest_execretrieval.reporting.report import build_report
from pytest_execretrieval.scoring.analyses import rank1_miss_attribution

DATA = Path(__file__).parent / "data" / "items"

# A correct duplicate of count_vowels under another name, and a wrong one.
DUPLICATE = BackgroundFunction(
    "repo:text.py",
    "vowel_total",
    "def vowel_total(s):\n    return sum(c in 'aeiouAEIOU' for c in s)\n",
)
WRONG = BackgroundFunction(
    "repo:text.py", "vowel_guess", "def vowel_guess(s):\n    return len(s) // 2\n"
)


class Favouring:
    """A lexical scorer that puts one marked document first for every query, the rest after."""

    name = "favouring"

    def __init__(self, marker: str):
        self.marker = marker

    def invocation(self) -> dict:
        return {"name": self.name, "model": self.marker, "dim": 0}

    def check_usable(self) -> None:
        pass

    def close(self) -> None:
        pass

    def score(self, queries: Sequence[str], documents: Sequence[str]) -> Iterator[np.ndarray]:
        row = np.array(
            [1.0 if self.marker in d else 0.5 - i * 1e-4 for i, d in enumerate(documents)]
        )
        yield np.tile(row, (len(queries), 1))


def run_with(function: BackgroundFunction, marker: str, tmp_path: Path):
    items, problems = load_items(DATA)
    assert not problems
    corpus = read_corpus(DATA)
    background = background_snippets([function], corpus)
    pool = with_background(corpus, background)
    sha = pool_sha256(corpus_sha256(DATA), background)
    with SuiteRunner(cache_dir=tmp_path) as runner:
        return run_benchmark(items, pool, sha, Favouring(marker), runner, tmp_path)


def test_a_correct_duplicate_ranked_first_passes_under_another_name(tmp_path):
    run = run_with(DUPLICATE, "vowel_total", tmp_path)
    vowels = run.results["strings/count_vowels"]
    assert vowels.top[0].kind == "background" and vowels.top[0].passes
    assert vowels.passed
    others = [r for q, r in run.results.items() if q != "strings/count_vowels"]
    assert all(r.top[0].kind == "background" and not r.passed for r in others)
    assert all(r.background_above == 1 for r in run.results.values())
    assert run.background == {"sources": ["repo"], "n_snippets": 1}


def test_a_wrong_function_ranked_first_fails_and_reports_name_it(tmp_path):
    run = run_with(WRONG, "vowel_guess", tmp_path)
    assert not any(r.passed for r in run.results.values())
    report = build_report(
        "favouring", run, sorted(run.results), 0.0, isolation={}, created_at="now"
    )
    assert report["corpus"]["background"] == {"sources": ["repo"], "n_snippets": 1}
    misses = rank1_miss_attribution(report)
    assert misses["background"] == misses["n_misses"] == len(run.results)
    assert report["per_query"][0]["background_above"] == 1


def test_without_a_background_nothing_changes(tmp_path):
    corpus = read_corpus(DATA)
    assert with_background(corpus, []) is corpus
    assert pool_sha256(corpus_sha256(DATA), []) == corpus_sha256(DATA)
    assert describe(corpus.snippets) is None
    report = {"corpus": {}, "per_query": []}
    assert "background" not in rank1_miss_attribution(report)


def test_the_pool_keeps_one_copy_of_code_it_holds_and_a_new_identity():
    corpus = read_corpus(DATA)
    canonical = next(s for s in corpus.snippets if s.kind == "canonical")
    same = BackgroundFunction("repo:a.py", "f", canonical.code)
    twice = [DUPLICATE, BackgroundFunction("repo:b.py", "vowel_total", DUPLICATE.code)]
    snippets = background_snippets([same, *twice], corpus)
    assert [s.query_id for s in snippets] == ["background:repo:b.py:vowel_total"]  # sorted first
    assert pool_sha256("a" * 64, snippets) != "a" * 64


@pytest.mark.parametrize(
    ("name", "defines", "bound"),
    [("vowel_total", False, True), ("count_vowels", False, False), ("vowel_total", True, False)],
)
def test_a_background_function_runs_as_the_entry_point(name, defines, bound):
    corpus = read_corpus(DATA)
    code = f"def {name}(s):\n    return 0\n"
    (snippet,) = background_snippets([BackgroundFunction("r:x.py", name, code)], corpus)
    run = as_entry_point(snippet, "count_vowels", defines)
    assert run.endswith(f"count_vowels = {name}\n") is bound


# --- the plugin: --execretrieval-background and --execretrieval-tests --------------------------


def test_the_plugin_adds_a_background_source_and_reports_it(pytester, items):
    """A directory of source as the background: its functions join the pool (never imported:
    its package's __init__ would leave a marker), the report names the source, the pool's
    sha256 changes, and a run without it is unchanged."""
    package = pytester.path / "repo" / "textkit"
    package.mkdir(parents=True)
    marker = pytester.path / "imported"
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (package / "words.py").write_text(
        "def vowel_total(s):\n    return sum(c in 'aeiouAEIOU' for c in s)\n\n\n"
        "def shout(s):\n    return s.upper()\n"
    )
    (pytester.path / "repo" / "pyproject.toml").write_text(
        '[project]\nname = "textkit"\nversion = "0.1"\nlicense = "MIT"\n'
    )
    plain = bench(pytester, items, "--execretrieval-report-dir=plain")
    result = bench(
        pytester,
        items,
        f"--execretrieval-background={pytester.path / 'repo'}",
        "--execretrieval-report-dir=with",
    )
    assert plain.ret in (0, 1) and result.ret in (0, 1), result.stdout.str()
    assert not marker.exists()
    before = json.loads((pytester.path / "plain" / "bm25.json").read_text())
    after = json.loads((pytester.path / "with" / "bm25.json").read_text())
    assert "background" not in before["corpus"]
    assert after["corpus"]["background"]["n_snippets"] == 2
    assert after["corpus"]["background"]["sources"][0].startswith("textkit")
    assert after["corpus"]["n_snippets"] == before["corpus"]["n_snippets"] + 2
    assert after["corpus"]["sha256"] != before["corpus"]["sha256"]
    assert all("background_above" in q for q in after["per_query"])
    assert "background" in after["analyses"]["rank1_miss_attribution"]
    neighbours = after["analyses"]["background_neighbours"]
    above = [q["background_above"] for q in after["per_query"]]
    assert neighbours["share_above"] == sum(a > 0 for a in above) / len(above)
    assert "background_neighbours" not in before["analyses"]


def test_a_background_source_that_cannot_be_read_is_a_usage_error(pytester, items):
    result = bench(pytester, items, "--execretrieval-background=no-such-distribution-xyz")
    assert result.ret == 4
    assert "--execretrieval-background=no-such-distribution-xyz" in result.stderr.str()


def test_tests_must_be_all_or_authors(pytester, items):
    result = bench(pytester, items, "--execretrieval-tests=mine")
    assert result.ret == 4 and "--execretrieval-tests" in result.stderr.str()


def test_the_authors_tests_alone_keep_their_outcomes_and_drop_recorded_ones():
    from dataclasses import replace

    from pytest_execretrieval.corpus.authors import authors_only
    from pytest_execretrieval.corpus.items import ItemSource

    items, _ = load_items(DATA)
    corpus = read_corpus(DATA)
    vowels = next(i for i in items if i.id == "strings/count_vowels")
    where = ["doctest t.py:3", "recorded", "test t.py:9", "recorded", "doctest t.py:4"]
    where += ["recorded"] * (len(vowels.tests) - len(where))
    source = ItemSource("d", "1", "t.py", 1, "0" * 64, "MIT", "", tuple(where))
    only_recorded = replace(
        next(i for i in items if i.id == "strings/count_vowels"),
        id="strings/recorded_only",
        source=replace(source, tests=("recorded",) * len(vowels.tests)),
    )
    mined = [replace(vowels, source=source), only_recorded]
    kept, cut, dropped = authors_only(mined, corpus)
    assert dropped == ["strings/recorded_only"] and [i.id for i in kept] == [vowels.id]
    assert kept[0].tests == (vowels.tests[0], vowels.tests[2], vowels.tests[4])
    assert kept[0].source is not None and "recorded" not in kept[0].source.tests
    before = {s.snippet_id: s for s in corpus.snippets}
    for s in cut.snippets:
        if s.query_id == vowels.id:
            assert s.outcomes == tuple(before[s.snippet_id].outcomes[i] for i in (0, 2, 4))
        else:
            assert s == before[s.snippet_id]


def test_a_dense_embedder_reports_each_canonical_s_nearest_background_function(tmp_path):
    from fake_embedders import FakeDense, unit, vector

    items, _ = load_items(DATA)
    corpus = read_corpus(DATA)
    background = background_snippets([DUPLICATE, WRONG], corpus)
    pool = with_background(corpus, background)
    with SuiteRunner(cache_dir=tmp_path) as runner:
        run = run_benchmark(items, pool, "sha", FakeDense(None), runner, tmp_path)
    canonical = next(
        s for s in corpus.snippets if s.query_id == "strings/count_vowels" and s.kind == "canonical"
    )
    vectors = unit(np.stack([vector(s.code) for s in (canonical, *background)]))
    expected = round(float((vectors[1:] @ vectors[0]).max()), 6)
    assert run.results["strings/count_vowels"].background_nearest == expected
    report = build_report("d", run, sorted(run.results), 0.0, isolation={}, created_at="now")
    assert report["analyses"]["background_neighbours"]["median_nearest_cosine"] is not None
    plain = run_benchmark(items, corpus, "sha", FakeDense(None), SuiteRunner(), tmp_path)
    assert all(r.background_nearest is None for r in plain.results.values())


def test_the_authors_tests_are_a_pool_of_their_own_in_the_report(pytester, items):
    """Items without provenance keep every test, so the figures are the same; the report says
    which tests decided and cites another pool sha256, so the two are never gated together."""
    bench(pytester, items, "--execretrieval-report-dir=all")
    bench(pytester, items, "--execretrieval-tests=authors", "--execretrieval-report-dir=authors")
    every = json.loads((pytester.path / "all" / "bm25.json").read_text())
    authors = json.loads((pytester.path / "authors" / "bm25.json").read_text())
    assert authors["corpus"]["tests"] == "authors" and "tests" not in every["corpus"]
    assert authors["corpus"]["sha256"] != every["corpus"]["sha256"]
    assert authors["metrics"] == every["metrics"]
