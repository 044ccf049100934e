"""The plugin's junit XML as CI servers read it: valid against the JUnit schema (tests/data/
junit.xsd, which says where its rules come from), counts that junitparser agrees with and that
equal the report's, and outcomes that agree with the gate's decision."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import xmlschema
from junitparser import Error, Failure, JUnitXml, Skipped
from test_plugin_benchmark import bench, perfect_baseline

from pytest_execretrieval.reporting.report import WITHIN_GATE

SCHEMA = xmlschema.XMLSchema(Path(__file__).parent / "data" / "junit.xsd")


def suite_and_cases(path: Path):
    """The one suite of a junit file and its cases as (name, result types, result elements)."""
    [suite] = list(JUnitXml.fromfile(str(path)))
    cases = [(case.name, [type(r) for r in case.result], case.result) for case in suite]
    return suite, cases


def assert_counts_agree(path: Path) -> dict[str, int]:
    """The suite's attributes equal junitparser's count of its cases; returns them."""
    suite, cases = suite_and_cases(path)
    counted = {
        kind.__name__.lower(): sum(kind in types for _, types, _ in cases)
        for kind in (Failure, Error, Skipped)
    }
    declared = {"failure": suite.failures, "error": suite.errors, "skipped": suite.skipped}
    assert declared == counted and suite.tests == len(cases)
    suite.update_statistics()  # junitparser's own recount
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (
        len(cases),
        counted["failure"],
        counted["error"],
        counted["skipped"],
    )
    return {"tests": len(cases), **counted}


def test_the_schema_rules_are_the_ones_pytest_is_held_to(pytester):
    """The schema accepts pytest's own xunit2 output and rejects test-case properties, as the
    Jenkins schema it follows does (pytest's test-suite validates xunit2 against it)."""
    pytester.makepyfile(
        test_x="""
        import pytest
        def test_pass(): pass
        def test_fail(): assert 0
        @pytest.mark.skip(reason="no")
        def test_skip(): pass
        @pytest.fixture
        def broken(): raise RuntimeError
        def test_error(broken): pass
    """
    )
    pytester.runpytest("-p", "no:execretrieval", "--junitxml=plain.xml")
    SCHEMA.validate(str(pytester.path / "plain.xml"))
    pytester.makepyfile(test_y="def test_p(record_property):\n    record_property('k', 1)\n")
    pytester.runpytest("-p", "no:execretrieval", "test_y.py", "--junitxml=props.xml")
    assert not SCHEMA.is_valid(str(pytester.path / "props.xml"))


def test_junit_is_valid_and_its_counts_are_the_reports(pytester, items):
    bench(pytester, items, "--execretrieval-report-dir=r")
    xml = pytester.path / "r" / "bm25.xml"
    SCHEMA.validate(str(xml))
    report = json.loads((pytester.path / "r" / "bm25.json").read_text())
    counts = assert_counts_agree(xml)
    failing = sum(not q["passed"] for q in report["per_query"])
    assert counts == {
        "tests": report["corpus"]["n_queries"],
        "failure": failing,
        "error": 0,
        "skipped": 0,
    }
    # the whole failure text, not the terminal's one line, is the failure's text; the one line
    # is its message
    _, cases = suite_and_cases(xml)
    failures = [r for _, _, results in cases for r in results]
    assert any("diff canonical -> rank 1:" in r.text for r in failures)
    assert all(
        r.message.startswith("rank 1: ") and "canonical at rank" in r.message for r in failures
    )


def test_baseline_failures_count_as_skipped(pytester, items):
    """With a baseline, the queries it also fails are xfail: <skipped>, and counted so."""
    bench(pytester, items, "--execretrieval-report-dir=base")
    baseline = pytester.path / "base" / "bm25.json"
    failing = sum(not q["passed"] for q in json.loads(baseline.read_text())["per_query"])
    assert failing >= 2
    bench(
        pytester,
        items,
        "--execretrieval-max-detectable=1",  # small fixture: power check off
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-report-dir=gated",
    )
    xml = pytester.path / "gated" / "bm25.xml"
    SCHEMA.validate(str(xml))
    assert assert_counts_agree(xml) == {"tests": 5, "failure": 0, "error": 0, "skipped": failing}


def test_a_green_gate_leaves_no_failed_case_and_a_red_one_only_its_own(pytester, items):
    baseline = perfect_baseline(pytester, items)  # every query is a regression against it
    green = bench(
        pytester,
        items,
        "--execretrieval-max-detectable=1",  # small fixture: power check off
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-report-dir=green",
    )
    assert green.ret == 0
    xml = pytester.path / "green" / "bm25.xml"
    SCHEMA.validate(str(xml))
    assert assert_counts_agree(xml) == {"tests": 5, "failure": 0, "error": 0, "skipped": 4}
    _, cases = suite_and_cases(xml)
    assert {name: [r.type for r in results] for name, _, results in cases} == {
        "gate[bm25]": [],
        **{q: [WITHIN_GATE] for q, _, _ in cases if q != "gate[bm25]"},
    }
    red = bench(
        pytester,
        items,
        "--execretrieval-max-detectable=1",  # small fixture: power check off
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-gate-metric",
        "exec@1",
        "--execretrieval-alpha",
        "0.2",
        "--execretrieval-report-dir=red",
    )
    assert red.ret == 1
    xml = pytester.path / "red" / "bm25.xml"
    SCHEMA.validate(str(xml))
    # the gate is the verdict: its case alone fails; the queries stay measurements
    assert assert_counts_agree(xml) == {"tests": 5, "failure": 1, "error": 0, "skipped": 4}
    _, cases = suite_and_cases(xml)
    assert [types for name, types, _ in cases if name == "gate[bm25]"] == [[Failure]]
    assert {
        name: [r.type for r in results] for name, _, results in cases if name != "gate[bm25]"
    } == {q: [WITHIN_GATE] for q, _, _ in cases if q != "gate[bm25]"}


def test_summary_keeps_every_model_of_the_report_dir(pytester, items):
    """Sessions that run one model each into one report dir: summary.md lists both."""
    bench(pytester, items, "--execretrieval-report-dir=r")
    shutil.copy(pytester.path / "r" / "bm25.json", pytester.path / "bm25-copy.json")
    frozen = "npz:" + str(make_frozen(pytester, items))
    bench(pytester, items, "--execretrieval-report-dir=r", embedders=(frozen,))
    summary = (pytester.path / "r" / "summary.md").read_text()
    table = [line for line in summary.splitlines() if line.startswith("| ")]
    assert any(line.startswith("| bm25 ") for line in table), summary
    assert any(line.startswith(f"| {frozen} ") for line in table), summary
    # the earlier model's report is read, not rewritten
    assert (pytester.path / "r" / "bm25.json").read_text() == (
        pytester.path / "bm25-copy.json"
    ).read_text()


def make_frozen(pytester, items: Path) -> Path:
    from test_plugin_benchmark import make_npz

    return make_npz(pytester, items)


@pytest.mark.parametrize("verbose", [False, True])
def test_a_failing_query_is_one_line_unless_asked(pytester, items, verbose):
    result = bench(pytester, items, *(["-v"] if verbose else []))
    out = result.stdout.str()
    failed = [x for x in result.stdout.lines if x.startswith("FAILED ")]
    assert len(failed) == 4 and all(" - rank 1: " in x for x in failed)
    assert ("diff canonical -> rank 1:" in out) == verbose
    assert ("rank 1 is a wrong implementation for:" in out) == verbose
    if not verbose:  # progress in pytest's letters, no line per item file
        assert not any(x.startswith("strings/count_vowels[bm25] ") for x in result.stdout.lines)
        # one line per failing query, and the last line says why the exit status is 1
        assert len(result.stdout.lines) < 20 + len(failed) + 10
        assert result.stdout.lines[-1].startswith(f"exit 1: {len(failed)} of 4 queries failed")
        assert "--execretrieval-baseline" in result.stdout.lines[-1]
