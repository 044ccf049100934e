"""The gate under the pytest options and plugins a CI carries: runs cut short are INCOMPLETE,
re-runs count once, every consumer of the session's outcome agrees with the decision, report
names are unique, gate options mean one thing and every output path is checked before any work.
The real plugins run here: pytest-rerunfailures, pytest-timeout, pytest-json-report,
pytest-html (the ``test`` extra)."""

from __future__ import annotations

import html
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_plugin_benchmark import bench

from pytest_execretrieval.orchestration import EXIT_INCOMPLETE, EXIT_UNDERPOWERED


def flawless_baseline(pytester, items) -> Path:
    """A report in which every query passed with its canonical alone at rank 1: BM25 (which
    fails all 4 data items, each by a tie or a wrong rank 1) loses exec@1 and nDCG@10 on every
    query, and ties on exec@5 (its canonicals are all in the top 5)."""
    assert bench(pytester, items, "--execretrieval-report-dir=base").ret == 1
    report = json.loads((pytester.path / "base" / "bm25.json").read_text())
    for q in report["per_query"]:
        q["passed"], q["canonical_rank"] = True, 1
        q["canonical_tie"] = {"first": 1, "last": 1}
        for hit in q["top"]:
            hit["passes"] = True
        for tie in (q["rank1_tie"], q["tail_tie"]):
            tie["passing"] = tie["size"]
    path = pytester.path / "flawless.json"
    path.write_text(json.dumps(report))
    return path


def last_line(result) -> str:
    return [x for x in result.stdout.lines if x.strip()][-1]


@pytest.mark.parametrize(
    "args, status, ran",
    [
        (("-x",), EXIT_INCOMPLETE, "1 of 4"),
        (("--maxfail", "2"), EXIT_INCOMPLETE, "2 of 4"),
        # xdist's controller stops the workers: pytest's own status (interrupted) is kept
        (("-x", "-n", "2"), pytest.ExitCode.INTERRUPTED, "of 4"),
    ],
)
def test_a_run_cut_short_is_incomplete_and_never_exits_0(pytester, items, args, status, ran):
    result = bench(pytester, items, *args, "--execretrieval-report-dir=r")
    assert result.ret == status
    assert last_line(result).startswith("INCOMPLETE: ")
    assert f"{ran} selected benchmark items ran (stopping after" in last_line(result)
    assert "PASS" not in result.stdout.str()
    assert re.search(r"^bm25 +\d of 4 ", result.stdout.str(), re.MULTILINE)  # the table says so
    report = json.loads((pytester.path / "r" / "bm25.json").read_text())
    assert report["incomplete"]["selected"] == 4
    assert report["incomplete"]["completed"] == report["corpus"]["n_queries"] < 4


def test_a_session_timeout_makes_the_gate_incomplete(pytester, items):
    baseline = flawless_baseline(pytester, items)
    result = bench(
        pytester,
        items,
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-margin",
        "2",
        "--session-timeout",
        "0.001",
        "--execretrieval-report-dir=r",
    )
    out = result.stdout.str()
    assert result.ret == EXIT_INCOMPLETE, out
    assert "PASS" not in out
    assert re.search(
        r"gate \[bm25\]: INCOMPLETE: 1 of 4 selected queries ran \(session-timeout", out
    )
    report = json.loads((pytester.path / "r" / "bm25.json").read_text())
    assert report["gate"]["decision"] == "INCOMPLETE" and report["gate"]["passed"] is False
    # a report of a run cut short is no baseline
    again = bench(
        pytester, items, "--execretrieval-baseline", str(pytester.path / "r" / "bm25.json")
    )
    assert again.ret == pytest.ExitCode.USAGE_ERROR
    assert "is the report of a run cut short (1 of 4 selected queries ran)" in again.stderr.str()


def test_under_a_gate_x_does_not_cut_the_run_short(pytester, items):
    """Under a gate a query's outcome is a measurement (xfail when it fails), not a failure
    that -x stops at: the gate decides on every query."""
    baseline = flawless_baseline(pytester, items)
    result = bench(
        pytester,
        items,
        "-x",
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-margin",
        "2",
    )
    assert result.ret == 0 and "gate [bm25]: PASS: non-inferiority" in result.stdout.str()
    assert result.parseoutcomes() == {"passed": 1, "xfailed": 4}  # the gate is the one pass


@pytest.mark.parametrize("reruns", ["--reruns", "--force-reruns"])
def test_reruns_count_each_query_once(pytester, items, reruns):
    """pytest-rerunfailures does not re-run benchmark items (``flaky(reruns=0)``); forced, a
    re-run still counts once (the last report of a node id wins)."""
    result = bench(pytester, items, reruns, "2", "--execretrieval-report-dir=r")
    assert result.ret == 1
    report = json.loads((pytester.path / "r" / "bm25.json").read_text())
    assert report["corpus"]["n_queries"] == len(report["per_query"]) == 4
    assert report["ties"]["rank1"] == 3  # not tripled
    assert re.search(r"^bm25 +4 ", result.stdout.str(), re.MULTILINE)
    if reruns == "--reruns":
        assert "rerun" not in result.parseoutcomes()
    suite = ET.parse(pytester.path / "r" / "bm25.xml").getroot().find("testsuite")
    assert len(suite.findall("testcase")) == 4


def html_results(path: Path) -> dict[str, list[str]]:
    """pytest-html's results per test id (the JSON the report page is built from)."""
    blob = re.search(r'data-jsonblob="([^"]*)"', path.read_text()).group(1)
    tests = json.loads(html.unescape(blob))["tests"]
    return {k: [r["result"] for r in v] for k, v in tests.items()}


@pytest.mark.parametrize("green", [True, False])
def test_every_consumer_agrees_with_the_gate(pytester, items, green):
    """pytest's junit, pytest-json-report and pytest-html record what the exit status says:
    query outcomes are measurements (xfail), the gate is the one test that passes or fails."""
    baseline = flawless_baseline(pytester, items)
    margin = "2" if green else "exec@1=0.01"
    result = bench(
        pytester,
        items,
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-margin",
        margin,
        "--junitxml=pj.xml",
        "--json-report",
        "--json-report-file=jr.json",
        "--html=h.html",
    )
    assert result.ret == (0 if green else 1)
    suite = ET.parse(pytester.path / "pj.xml").getroot().find("testsuite")
    assert suite.get("failures") == ("0" if green else "1") and suite.get("errors") == "0"
    [gate] = [c for c in suite.iter("testcase") if c.get("name") == "gate[bm25]"]
    assert (gate.find("failure") is None) == green
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ([] if green else ["gate[bm25]"])
    report = json.loads((pytester.path / "jr.json").read_text())
    assert report["exitcode"] == result.ret
    assert report["summary"].get("failed", 0) == (0 if green else 1)
    results = html_results(pytester.path / "h.html")
    assert results["gate[bm25]"] == ["Passed" if green else "Failed"]
    assert sum(r == ["Failed"] for r in results.values()) == (0 if green else 1)
    assert ("FAILED gate[bm25]" in result.stdout.str()) != green


def test_colliding_report_names_are_a_usage_error_before_any_work(pytester, items):
    result = bench(
        pytester,
        items,
        "--execretrieval-report-dir=r",
        embedders=("npz:npz/a/b.npz", "npz:npz/a_b.npz"),
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "'npz:npz/a/b.npz' and 'npz:npz/a_b.npz' would both write npz_npz_a_b.npz.json"
        in result.stderr.str()
    )
    assert not (pytester.path / "cache").exists() and not (pytester.path / "r").exists()


@pytest.mark.parametrize(
    "args",
    [
        ("--execretrieval-margin", "0.02"),
        ("--execretrieval-margin", "exec@1=0.02"),
        ("--execretrieval-gate-metric", "exec@1"),
        ("--execretrieval-alpha", "0.1"),
    ],
)
def test_gate_options_without_a_baseline_are_a_usage_error(pytester, items, args):
    result = bench(pytester, items, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{args[0]} without --execretrieval-baseline" in result.stderr.str()
    assert not (pytester.path / "cache").exists()


def test_an_unusable_output_path_is_a_usage_error_before_any_work(pytester, items):
    (pytester.path / "README.md").write_text("a file\n")
    for flag, value in (
        ("--execretrieval-report-dir", "README.md/reports"),
        ("--execretrieval-cache-dir", "README.md/cache"),
    ):
        result = bench(pytester, items, f"{flag}={value}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert f"{flag} {value}: README.md is a file" in result.stderr.str()
        assert not (pytester.path / "cache").exists()  # nothing ranked, nothing executed
    if os.geteuid() != 0:  # root writes anywhere
        locked = pytester.mkdir("locked")
        locked.chmod(0o555)
        result = bench(pytester, items, "--execretrieval-report-dir=locked/r")
        assert result.ret == pytest.ExitCode.USAGE_ERROR and "is not writable" in (
            result.stderr.str()
        )


def test_a_collection_error_beside_a_passing_gate_fails_it_by_name(pytester, items):
    baseline = flawless_baseline(pytester, items)
    path = items / "strings" / "count_vowels.toml"
    path.write_text(path.read_text() + "\nunexpected = 1\n")
    result = bench(
        pytester, items, "--execretrieval-baseline", str(baseline), "--execretrieval-margin", "2"
    )
    out = result.stdout.str()
    assert result.ret == 1 and "PASS" not in out
    assert (
        "gate [bm25]: FAIL: non-inferiority on exec@1, exec@5, ndcg@10 at alpha 0.05 on 3 "
        "of 4 queries; failed: 1 collection error(s)"
    ) in out
    assert re.search(
        r"collection errors \(their queries were not compared\): .*"
        r"strings/count_vowels\.toml",
        out,
    )


def test_a_selection_is_gated_on_the_same_baseline_queries_and_says_so(pytester, items):
    baseline = flawless_baseline(pytester, items)
    result = bench(
        pytester,
        items,
        "-m",
        "arrays_lists",
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-margin",
        "2",
        "--execretrieval-report-dir=r",
    )
    assert result.ret == 0
    assert (
        "gate [bm25]: PASS: non-inferiority on exec@1, exec@5, ndcg@10 at alpha 0.05 on 2 "
        "of 4 queries (selection); nothing failed"
    ) in result.stdout.str()
    coverage = json.loads((pytester.path / "r" / "bm25.json").read_text())["gate"]["coverage"]
    assert coverage == {
        "compared": 2,
        "baseline_queries": 4,
        "selection": True,
        "missing_from_baseline": [],
        "collection_errors": [],
    }
    # queries the baseline lacks are named, and fail the gate
    data = json.loads(baseline.read_text())
    data["per_query"] = [q for q in data["per_query"] if q["domain"] != "strings"]
    baseline.write_text(json.dumps(data))
    lacking = bench(
        pytester, items, "--execretrieval-baseline", str(baseline), "--execretrieval-margin", "2"
    )
    assert lacking.ret == 1
    out = lacking.stdout.str()
    assert "failed: 1 queries missing from the baseline" in out
    assert "queries the baseline lacks (not compared): strings/count_vowels" in out


def test_a_per_metric_margin_leaves_the_other_gated_metrics_gated(pytester, items):
    """``M=DELTA`` sets M's margin; the other default metrics stay, harm-tested: BM25 loses
    nDCG@10 on all 4 queries (exact sign-flip p = 1/8, Holm over exec@5 and nDCG@10: 1/4)."""
    baseline = flawless_baseline(pytester, items)
    result = bench(
        pytester,
        items,
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-margin",
        "exec@1=1.5",
        "--execretrieval-alpha",
        "0.3",
        "--execretrieval-report-dir=r",
    )
    out = result.stdout.str()
    assert result.ret == 1
    assert (
        "gate [bm25]: FAIL: non-inferiority on exec@1 (margin exec@1 1.5) at alpha 0.3 + "
        "harm test on exec@5, ndcg@10 at alpha 0.3 (Holm); failed: ndcg@10"
    ) in out
    gate = json.loads((pytester.path / "r" / "bm25.json").read_text())["gate"]
    assert gate["mode"] == "mixed"
    assert {m: row["mode"] for m, row in gate["metrics"].items()} == {
        "exec@1": "non-inferiority",
        "exec@5": "harm",
        "ndcg@10": "harm",
    }
    assert gate["metrics"]["exec@1"]["passed"] and gate["metrics"]["ndcg@10"]["p_adjusted"] == 0.25


def test_a_crashed_xdist_worker_makes_the_gate_incomplete(pytester, items):
    baseline = flawless_baseline(pytester, items)
    pytester.makeconftest("""
        import os

        def pytest_runtest_call(item):  # the worker dies running one benchmark item
            if item.nodeid.startswith("strings/") and hasattr(item.config, "workerinput"):
                os._exit(1)
    """)
    result = bench(
        pytester,
        items,
        "-n",
        "2",
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-margin",
        "2",
    )
    out = result.stdout.str()
    assert result.ret == EXIT_INCOMPLETE and "PASS" not in out
    assert (
        "gate [bm25]: INCOMPLETE: 3 of 4 selected queries ran (a worker crashed running "
        "strings/count_vowels[bm25])"
    ) in out


def test_a_gate_too_small_to_decide_is_underpowered_everywhere(pytester, items):
    """4 queries against their own report: nothing differs, but 4 queries cannot detect a drop
    of 0.10, so the gate does not decide: exit 7 and a red gate case, never a PASS."""
    assert bench(pytester, items, "--execretrieval-report-dir=base").ret == 1
    result = bench(
        pytester,
        items,
        "--execretrieval-baseline",
        str(pytester.path / "base" / "bm25.json"),
        "--execretrieval-report-dir=r",
        "--junitxml=pj.xml",
    )
    assert result.ret == EXIT_UNDERPOWERED
    out = result.stdout.str()
    assert "gate [bm25]: UNDERPOWERED: harm test on exec@1, exec@5, ndcg@10" in out
    assert "exec@1 needs 70 queries" in out and "PASS" not in out
    gate = json.loads((pytester.path / "r" / "bm25.json").read_text())["gate"]
    assert gate["decision"] == "UNDERPOWERED" and not gate["passed"]
    assert gate["metrics"]["exec@1"]["needed"] == 70
    assert "UNDERPOWERED" in (pytester.path / "r" / "summary.md").read_text()
    suite = ET.parse(pytester.path / "pj.xml").getroot().find("testsuite")
    [case] = [c for c in suite.iter("testcase") if c.get("name") == "gate[bm25]"]
    failure = case.find("failure")
    assert failure is not None and "exec@1 needs 70 queries" in failure.get("message", "") + (
        failure.text or ""
    )
    # the same selection with the check off decides
    off = bench(
        pytester,
        items,
        "--execretrieval-baseline",
        str(pytester.path / "base" / "bm25.json"),
        "--execretrieval-max-detectable",
        "1",
    )
    assert off.ret == 0 and "gate [bm25]: PASS" in off.stdout.str()


@pytest.mark.parametrize("value", ["0", "1.5", "x"])
def test_a_bad_max_detectable_is_a_usage_error(pytester, items, value):
    result = bench(
        pytester,
        items,
        "--execretrieval-baseline",
        str(pytester.path / "none.json"),
        "--execretrieval-max-detectable",
        value,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--execretrieval-max-detectable" in result.stderr.str()


def test_a_gated_run_opens_every_output_with_the_verdict_and_the_flips(pytester, items):
    """summary.md, the terminal and the junit gate case start with the decision, then the
    queries that flipped against the baseline (the report's ``gate.flips``), then the metrics;
    ``execretrieval report --html`` leaves that summary.md byte for byte as the run wrote it."""
    from pytest_execretrieval.cli import main

    baseline = flawless_baseline(pytester, items)
    result = bench(
        pytester,
        items,
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-margin",
        "exec@1=0.01",
        "--execretrieval-report-dir=r",
    )
    assert result.ret == 1
    reports = pytester.path / "r"
    # the report JSON: every query regressed (the baseline passes all 4, BM25 none)
    flips = json.loads((reports / "bm25.json").read_text())["gate"]["flips"]
    assert [f["query_id"] for f in flips] == [
        "arrays_lists/last_index_of",
        "arrays_lists/window_sums",
        "math_number_theory/clamp_add",
        "strings/count_vowels",
    ]
    assert {f["direction"] for f in flips} == {"pass->fail"}
    first = flips[0]
    assert (first["candidate"]["kind"], first["candidate"]["operator"]) == (
        "distractor",
        "remove_edge_case_check",
    )
    assert first["baseline"]["kind"] == "distractor" and first["baseline"]["tie"]["passing"] == 1
    # summary.md: title, the gate, the flips, and only then the corpus and metrics
    summary = (reports / "summary.md").read_text()
    lines = summary.splitlines()
    assert lines[:3] == ["# ExecRetrieval report", "", "## Upgrade gate"]
    assert lines[4].startswith("- **bm25**: FAIL: ")
    flips_at = lines.index("## Flips against the baseline")
    assert flips_at < lines.index("## Metrics") and flips_at < lines.index("## Analyses highlights")
    assert "**bm25**: 4 pass -> fail, 0 fail -> pass" in lines[flips_at:]
    row = next(x for x in lines if x.startswith("| arrays_lists/last_index_of |"))
    assert "| pass -> fail | distractor (remove_edge_case_check) |" in row
    assert "(report.html#q-bm25-2f-arrays_lists-2f-last_index_of)" in row
    # the terminal: the ExecRetrieval block opens with the gate, then the flips, then the table
    out = result.stdout.lines
    block = out[next(i for i, x in enumerate(out) if "= ExecRetrieval =" in x) + 1 :]
    assert block[0].startswith("gate [bm25]: FAIL: ")
    count = block.index("flips [bm25] against the baseline: 4 pass -> fail, 0 fail -> pass")
    table = next(i for i, x in enumerate(block) if x.startswith("embedder "))
    assert count < table
    assert block[count + 1].startswith("  pass -> fail  arrays_lists/last_index_of: rank 1 ")
    # the junit gate case carries them too
    [case] = [
        c for c in ET.parse(reports / "bm25.xml").iter("testcase") if c.get("name") == "gate[bm25]"
    ]
    assert "pass -> fail  strings/count_vowels: rank 1 " in case.find("failure").text
    # the HTML page renders the records and rewrites nothing else
    before = (reports / "summary.md").read_bytes()
    assert main(["report", str(reports), "--html", "--items", str(items)]) == 0
    assert (reports / "summary.md").read_bytes() == before
    page = (reports / "report.html").read_text()
    assert page.index('id="verdict"') < page.index('id="flips"') < page.index("<h3>Metrics")
    assert '<a href="#q-bm25-2f-strings-2f-count_vowels">' in page
    assert '<tr id="q-bm25-2f-strings-2f-count_vowels">' in page
