"""The query item's failure text: what the rank-1 snippet returned in each failing test."""

from __future__ import annotations

from pathlib import Path

from pytest_execretrieval.corpus.items import load_item
from pytest_execretrieval.execution.sandbox import SandboxError, SuiteResult
from pytest_execretrieval.ranking.returned import rank1_returned
from pytest_execretrieval.records import Hit, QueryResult
from pytest_execretrieval.reporting.failures import failure_text

ITEM = load_item(Path(__file__).parent / "data" / "items" / "strings" / "count_vowels.toml")
WRONG = ITEM.canonical.replace('"aeiou"', '"aeio"')  # misses the u: fails 'AEIOU' only
RECORDED = ("pass", "pass", "pass", "fail", "pass", "pass", "pass")
CODE = {"wrong": WRONG, "canonical": ITEM.canonical, "other": "def g():\n    return 1\n"}


def result(top1: str = "wrong", outcomes: tuple[str, ...] = RECORDED) -> QueryResult:
    hits = (
        Hit(1, top1, "distractor", "wrong_operator", ITEM.id, 0.9, False),
        Hit(2, "canonical", "canonical", None, ITEM.id, 0.8, True),
    )
    return QueryResult(
        ITEM.id, ITEM.domain, False, 2, 0.8, hits, outcomes, rank1_tie={"size": 1, "passing": 0}
    )


def test_failing_tests_show_what_the_rank1_snippet_returned():
    r = result()  # the default: a sandbox runs the suite again
    text = failure_text(ITEM, r, CODE, rank1_returned(ITEM, r, CODE))
    assert "    assert count_vowels('AEIOU') == 5  ->  fail: returned 4" in text
    assert "rank 1 fails 1 of 7 tests:" in text


def test_a_value_is_shown_only_where_the_rerun_agrees_with_the_recorded_outcome():
    calls = []

    def run(code, setup, tests, language="python"):
        calls.append(code)
        outcomes = ("pass",) * 3 + ("fail", "fail") + ("pass",) * 2
        returned = ("",) * 3 + ("returned 4", "returned 9") + ("",) * 2
        return SuiteResult(outcomes, False, "", "", returned)

    recorded = RECORDED[:4] + ("timeout",) + RECORDED[5:]
    returned = rank1_returned(ITEM, result(outcomes=recorded), CODE, run)
    assert returned[3:5] == ("returned 4", "")
    text = failure_text(ITEM, result(outcomes=recorded), CODE, returned)
    assert calls == [WRONG]  # one suite, the rank-1 snippet's
    assert "== 5  ->  fail: returned 4" in text
    assert "== 3  ->  timeout\n" in text


def test_without_values_the_text_is_as_before():
    def old_cache_entry(code, setup, tests, language="python"):  # no values recorded
        return SuiteResult(RECORDED, False, "", "")

    def broken(code, setup, tests, language="python"):
        raise SandboxError("could not start")

    for run in (old_cache_entry, broken):
        text = failure_text(ITEM, result(), CODE, rank1_returned(ITEM, result(), CODE, run))
        assert "    assert count_vowels('AEIOU') == 5  ->  fail\n" in text


def test_a_snippet_without_the_entry_point_is_not_run():
    def run(code, setup, tests, language="python"):
        raise AssertionError("must not run")

    r = result("other", ("fail",) * 7)
    assert rank1_returned(ITEM, r, CODE, run) == ()
    text = failure_text(ITEM, r, CODE)
    assert "it does not define count_vowels(), so it fails every test (not executed)" in text


def test_a_failure_reason_too_long_for_the_terminal_is_cut_at_a_word_and_says_v(
    pytester, items, monkeypatch
):
    """pytest cuts the short summary's reason at the terminal's width, mid-word; the item cuts
    it first, at a word, and says how to see the rest (on CI, where pytest cuts nothing, and
    with -v, the whole reason)."""
    from plugin_runs import bench

    from pytest_execretrieval.nodes import FULL_REASON, fit_line

    assert fit_line("rank 1: off_by_one mutant; canonical at rank 3", 100).endswith("rank 3")
    assert fit_line("rank 1: off_by_one mutant; canonical at rank 3", 40) == (
        "rank 1: off_by_one mutant" + FULL_REASON
    )
    for name in ("CI", "BUILD_NUMBER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "90")
    cut = bench(pytester, items)
    summary = [line for line in cut.outlines if line.startswith("FAILED ")]
    assert summary and any(line.endswith(FULL_REASON) for line in summary)
    assert not any(line.endswith("...") for line in summary)
    monkeypatch.setenv("CI", "true")
    whole = bench(pytester, items)
    assert not any(FULL_REASON in line for line in whole.outlines)
