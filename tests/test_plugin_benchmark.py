"""`pytest --embedder NAME`: items, failure output, reports, determinism, caches, selection."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np  # imported at collection: pytester's module snapshot must not drop numpy
import pytest
from plugin_runs import bench, without_timing

from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import read_corpus
from pytest_execretrieval.embedders.npz import write_npz
from pytest_execretrieval.nodes import keep_item_ids


def test_one_item_per_query_with_readable_failures(pytester, items):
    result = bench(pytester, items, "-v", "--execretrieval-report-dir=reports")
    out = result.stdout.str()
    assert result.ret in (0, 1)
    for qid in (
        "strings/count_vowels",
        "arrays_lists/window_sums",
        "arrays_lists/last_index_of",
        "math_number_theory/clamp_add",
    ):
        assert f"{qid}[bm25]" in out
    assert "embedder" in out and "exec@1" in out and "mrr" in out  # the terminal table
    # pytest's own footer times the items only; the closing lines say what the ranking took
    assert re.search(r"embedding and ranking took \d+\.\d s", out)
    report = json.loads((pytester.path / "reports" / "bm25.json").read_text())
    assert report["schema_version"] == 2
    assert report["corpus"]["n_queries"] == 4 and report["corpus"]["n_snippets"] == 20
    assert report["tie_policy"].startswith("scores rounded to 6 decimals")
    assert set(report["ci95"]) == set(report["metrics"]) == set(report["metric_bounds"])
    for q in report["per_query"]:
        assert [h["rank"] for h in q["top"]] == list(range(1, 11))
        tie = q["rank1_tie"]
        assert q["passed"] == (tie["passing"] == tie["size"])
        assert tie["size"] == sum(h["score"] == q["top"][0]["score"] for h in q["top"])
    # BM25 gives a mutant with the canonical's token bag the canonical's score: ties at rank 1
    # decide nothing silently (expected value between its bounds, failure text says so).
    assert report["ties"]["rank1"] >= 1
    bounds = report["metric_bounds"]["exec@1"]
    assert bounds["pessimistic"] < report["metrics"]["exec@1"] < bounds["optimistic"]
    assert "rank 1 is a tie for:" in out and "the model cannot tell them apart" in out
    assert "rank 1 is a wrong implementation for:" in out
    assert "canonical: rank" in out and "diff canonical -> rank 1" in out
    # what the rank-1 snippet returned, from a re-run of its suite (the corpus has outcomes only)
    assert "assert last_index_of([1], 1) == 0  ->  fail: returned -1" in out


def test_junit_per_model_and_summary(pytester, items):
    npz = "npz:" + str(make_npz(pytester, items))
    result = bench(
        pytester,
        items,
        "--execretrieval-report-dir=reports",
        "--execretrieval-code-similarity",
        embedders=("bm25", npz),
    )
    assert result.ret in (0, 1), result.stdout.str()
    reports = pytester.path / "reports"
    xmls = sorted(p.name for p in reports.glob("*.xml"))
    assert len(xmls) == 2
    suite = ET.parse(reports / "bm25.xml").getroot().find("testsuite")
    assert suite.get("name") == "bm25" and suite.get("tests") == "4"
    # per-query figures in each case's <system-out> (the schema has no test-case properties),
    # the model's in the suite's <properties>
    figures = {
        line.split(": ")[0]
        for case in suite.iter("testcase")
        for line in case.find("system-out").text.splitlines()
    }
    assert {
        "canonical_rank",
        "rank1_kind",
        "rank1_operator",
        "rank1_tie",
        "exec@1",
        "exec@10",
    } <= figures
    assert {"corpus_sha256", "metric.exec@1"} <= {p.get("name") for p in suite.iter("property")}
    summary = (reports / "summary.md").read_text()
    assert "# ExecRetrieval report" in summary and "(paired, 4 queries)" in summary
    assert "## Analyses highlights" in summary
    report = json.loads((reports / "bm25.json").read_text())
    assert {"deception", "density_ablation", "code_to_code"} <= set(report["analyses"])
    [frozen] = reports.glob("npz*.json")
    c2c = json.loads(frozen.read_text())["analyses"]["code_to_code"]
    assert c2c is not None and 0 <= c2c["auc"] <= 1  # alternatives embedded on request


def make_npz(pytester, items: Path) -> Path:
    """Deterministic frozen matrices for the data items (no model needed)."""
    corpus = read_corpus(items)
    snippets = [*corpus.snippets, *corpus.alternatives]
    qs, _ = load_items(items)
    rng = np.random.default_rng(0)
    path = pytester.path / "frozen.npz"
    write_npz(
        path,
        {"name": "random", "model": "random", "dim": 8},
        {
            "query": ([q.id for q in qs], rng.normal(size=(len(qs), 8))),
            "document": ([s.snippet_id for s in snippets], rng.normal(size=(len(snippets), 8))),
        },
    )
    return path


def test_report_identical_with_and_without_xdist(pytester, items):
    npz = "npz:" + str(make_npz(pytester, items))
    for flag in ("0", "2"):
        bench(
            pytester,
            items,
            "-n",
            flag,
            f"--execretrieval-report-dir=n{flag}",
            embedders=("bm25", npz),
        )
    serial = sorted((pytester.path / "n0").glob("*.json"))
    assert len(serial) == 2  # bm25 (with ties) and the frozen matrices
    for path in serial:
        assert without_timing(path) == without_timing(pytester.path / "n2" / path.name)
        assert path.read_text().count("\n") > 10


def test_markers_and_k_select_subsets(pytester, items):
    result = bench(pytester, items, "-m", "arrays_lists", "--execretrieval-report-dir=r")
    result.assert_outcomes(
        **{k: v for k, v in result.parseoutcomes().items() if k in ("passed", "failed")}
    )
    report = json.loads((pytester.path / "r" / "bm25.json").read_text())
    assert {q["domain"] for q in report["per_query"]} == {"arrays_lists"}
    assert report["corpus"]["n_queries"] == 2


def test_last_failed_reruns_only_failures(pytester, items):
    first = bench(pytester, items)
    failed = first.parseoutcomes().get("failed", 0)
    again = bench(pytester, items, "--lf")
    assert again.parseoutcomes().get("failed", 0) == failed
    assert again.parseoutcomes().get("passed", 0) == 0 or failed == 0


def test_unknown_embedder_is_a_usage_error(pytester, items):
    result = bench(pytester, items, embedders=("no-such-model",))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown embedder 'no-such-model'" in result.stderr.str()


def test_zero_selected_items_is_not_a_pass(pytester, items):
    result = bench(pytester, items, "-k", "nothing_matches_this")
    assert result.ret != 0


def test_stale_corpus_is_a_usage_error(pytester, items):
    path = items / "strings" / "count_vowels.toml"
    path.write_text(path.read_text().replace("(a, e, i, o, u", "(a e i o u"))
    result = bench(pytester, items)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "item strings/count_vowels changed" in result.stderr.str()


def test_malformed_item_is_a_collection_error_and_others_run(pytester, items):
    path = items / "strings" / "count_vowels.toml"
    path.write_text(path.read_text() + "\nunexpected = 1\n")
    result = bench(pytester, items, "-rA")
    out = result.stdout.str()
    assert "count_vowels.toml: unexpected: unknown key" in out
    assert "arrays_lists/window_sums[bm25]" in out
    assert result.ret != 0


def test_repo_tests_are_not_collected_alongside(pytester, items):
    pytester.makepyfile(test_unrelated="def test_x():\n    assert False\n")
    result = bench(pytester, items)  # the invocation directory holds both
    assert "test_unrelated" not in result.stdout.str()
    assert "[bm25]" in result.stdout.str()


def test_explicit_paths_outside_the_items_are_a_usage_error(pytester, items):
    """`pytest tests/ --embedder=minilm` must not silently benchmark the bundled items."""
    pytester.mkdir("tests")
    pytester.makepyfile(**{"tests/test_unrelated": "def test_x():\n    pass\n"})
    result = bench(pytester, items, "tests")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "tests: not in the items directory" in err and "--execretrieval-items=DIR" in err
    assert not (pytester.path / "cache").exists()  # before any work
    inside = bench(pytester, items, str(items / "strings"))  # a path inside selects from it
    assert inside.ret in (0, 1) and "strings/count_vowels[bm25]" in inside.stdout.str()
    assert "arrays_lists" not in inside.stdout.str()


def perfect_baseline(pytester, items) -> Path:
    """A report in which every query passed: any candidate can only lose against it."""
    bench(pytester, items, "--execretrieval-report-dir=base")
    report = json.loads((pytester.path / "base" / "bm25.json").read_text())
    for q in report["per_query"]:
        q["passed"] = True
        for hit in q["top"]:
            hit["passes"] = True
        for tie in (q["rank1_tie"], q["tail_tie"]):
            tie["passing"] = tie["size"]
    path = pytester.path / "perfect.json"
    path.write_text(json.dumps(report))
    return path


def test_gate_exit_status_is_the_decision(pytester, items):
    baseline = perfect_baseline(pytester, items)
    # 4 queries, each worse at exec@1: exact sign-flip p = 2/16 = 0.125 (tie-expected values are
    # fractional); Holm over the 3 default metrics makes it 0.375 -> PASS at 0.05, exit 0.
    lenient = bench(
        pytester,
        items,
        "--execretrieval-max-detectable=1",  # small fixture: power check off
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-report-dir=gated",
    )
    out = lenient.stdout.str()
    assert "gate [bm25]: PASS" in out and "sign-flip p = 0.125, Holm-adjusted 0.375" in out
    assert lenient.ret == 0
    report = json.loads((pytester.path / "gated" / "bm25.json").read_text())
    gate = report["gate"]
    assert gate["passed"] is True and gate["metrics"]["exec@1"]["p_value"] == 0.125
    assert set(gate["metrics"]) == {"exec@1", "exec@5", "ndcg@10"}
    assert "## Upgrade gate" in (pytester.path / "gated" / "summary.md").read_text()
    case = [
        c
        for c in ET.parse(pytester.path / "gated" / "bm25.xml").iter("testcase")
        if c.get("name") == "gate[bm25]"
    ]
    assert len(case) == 1 and case[0].find("failure") is None
    assert "exec@1.p_value: " in case[0].find("system-out").text
    assert "exec@1.p_adjusted: " in case[0].find("system-out").text
    assert "power: too few queries (4)" in out
    strict = bench(
        pytester,
        items,
        "--execretrieval-max-detectable=1",  # small fixture: power check off
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-gate-metric",
        "exec@1",
        "--execretrieval-alpha",
        "0.2",
        "--execretrieval-report-dir=strict",
    )
    assert "gate [bm25]: FAIL" in strict.stdout.str() and strict.ret == 1
    [case] = [
        c
        for c in ET.parse(pytester.path / "strict" / "bm25.xml").iter("testcase")
        if c.get("name") == "gate[bm25]"
    ]
    assert "failed: exec@1" in case.find("failure").get("message")


def test_verdict_comes_last(pytester, items):
    """CI logs show the end: after pytest's summary, the gate decision first, then the table
    and the report paths."""
    result = bench(
        pytester, items, "--execretrieval-min", "exec@5=0.5", "--execretrieval-report-dir=r"
    )
    lines = [x for x in result.stdout.lines if x.strip()]
    stats = max(i for i, x in enumerate(lines) if " in " in x and x.startswith("="))
    tail = lines[stats + 1 :]
    assert "ExecRetrieval" in tail[0] and tail[1].startswith("gate [bm25]: PASS")
    assert any("exec@1 [95% CI]" in x for x in tail[2:])
    assert tail[-1].startswith("reports: ") and "bm25.xml" in tail[-1]
    assert not any(x.startswith("FAILED") for x in tail)


def test_margin_mode_is_non_inferiority(pytester, items):
    baseline = perfect_baseline(pytester, items)
    wide = bench(
        pytester,
        items,
        "--execretrieval-max-detectable=1",
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-margin",
        "1.5",
    )
    assert "gate [bm25]: PASS: non-inferiority" in wide.stdout.str() and wide.ret == 0
    narrow = bench(
        pytester,
        items,
        "--execretrieval-max-detectable=1",  # small fixture: power check off
        "--execretrieval-baseline",
        str(baseline),
        "--execretrieval-margin",
        "exec@1=0.01",
    )
    assert "FAIL: non-inferiority on exec@1" in narrow.stdout.str() and narrow.ret == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (("--execretrieval-gate-metric", "exec@2"), "unknown metric(s) ['exec@2']"),
        (("--execretrieval-margin", "wide"), "'wide' is neither a number nor METRIC=DELTA"),
        (
            ("--execretrieval-margin", "0.02"),
            "--execretrieval-margin without --execretrieval-baseline",
        ),
        (("--execretrieval-min", "exec@1"), "is not METRIC=VALUE"),
        (("--execretrieval-alpha", "0.7"), "is not in (0, 0.5)"),
        # every other setting is resolved in pytest_configure too (once an INTERNALERROR, or an
        # error only after the whole run)
        (("--execretrieval-stack", "abc"), "--execretrieval-stack: 'abc' is not a valid int"),
        (("--execretrieval-stack", "9"), "--execretrieval-stack: 9 is not in 1..4"),
        (("--execretrieval-seed", "x1"), "--execretrieval-seed: 'x1' is not a valid int"),
        (("--execretrieval-rerank-k", "0"), "--execretrieval-rerank-k: 0 is not in 1..10"),
        (("--execretrieval-timeout", "0"), "Limits.timeout_s must be > 0"),
        (("--execretrieval-isolation", "loose"), "'loose' is not one of ('best', 'strict')"),
        (("--execretrieval-batch-size", "0"), "--execretrieval-batch-size: 0 is not a positive"),
        (("--embedder", "bm25"), "an embedder is named twice"),
    ],
)
def test_bad_settings_are_usage_errors_before_any_work(pytester, items, args, message):
    result = bench(pytester, items, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert not (pytester.path / "cache").exists()  # nothing ran


def test_baseline_failures_are_xfail(pytester, items):
    bench(pytester, items, "--execretrieval-report-dir=base")
    base = json.loads((pytester.path / "base" / "bm25.json").read_text())
    failed = sum(not q["passed"] for q in base["per_query"])
    again = bench(
        pytester,
        items,
        "--execretrieval-max-detectable=1",
        "--execretrieval-baseline",
        str(pytester.path / "base" / "bm25.json"),
    )
    assert again.parseoutcomes().get("xfailed", 0) == failed
    assert again.ret == 0  # identical model: no regression


def test_a_baseline_of_another_corpus_is_re_ranked_never_compared_across_pools(pytester, items):
    """The perfect baseline's figures are of corpus 000...: the gate re-ranks its model (bm25)
    on this pool and compares with that (the same model: a PASS), never with the other pool's
    figures (a FAIL). A model that is not the one installed is a usage error."""
    baseline = perfect_baseline(pytester, items)
    data = json.loads(baseline.read_text())
    data["corpus"]["sha256"] = "0" * 64
    baseline.write_text(json.dumps(data))
    args = ("--execretrieval-max-detectable=1", "--execretrieval-baseline", str(baseline))
    result = bench(pytester, items, *args)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["baseline bm25: re-ranked on this pool (*; * was made on 0000000000000000); *"]
    )
    data["embedder"]["k1"] = 9.0  # another build of the model
    baseline.write_text(json.dumps(data))
    other = bench(pytester, items, *args)
    assert other.ret == pytest.ExitCode.USAGE_ERROR
    assert "was made on corpus 0000000000000000" in other.stderr.str()
    assert "bm25 here is not the model that made it (k1 differ)" in other.stderr.str()


def test_min_exec1_gates_without_baseline(pytester, items):
    result = bench(pytester, items, "--execretrieval-min-exec1", "0.9")
    assert "gate [bm25]: FAIL" in result.stdout.str() and result.ret == 1
    ok = bench(pytester, items, "--execretrieval-min-exec1", "0")
    assert "gate [bm25]: PASS" in ok.stdout.str() and ok.ret == 0


def test_runs_without_pytest_xdist(pytester, items):
    """The main job installs no xdist: its hooks must be optional."""
    result = bench(pytester, items, "-p", "no:xdist")
    assert result.ret in (0, 1), result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "[bm25]" in result.stdout.str()


def test_gate_configured_in_ini_makes_the_plain_command_the_gate(pytester, items):
    """The CI recipe: baseline, metrics and margin as ini keys (a margin of 0.5: 4 queries
    cannot detect one of twice 0.01, and this test is about the ini keys, not power)."""
    baseline = perfect_baseline(pytester, items)
    pytester.makepyprojecttoml(f"""
        [tool.pytest.ini_options]
        execretrieval_baseline = "{baseline}"
        execretrieval_gate_metric = ["exec@5"]
        execretrieval_margin = ["0.5"]
        execretrieval_report_dir = "ci"
    """)
    result = bench(pytester, items)
    assert "gate [bm25]: PASS: non-inferiority on exec@5" in result.stdout.str()
    assert result.ret == 0
    assert (pytester.path / "ci" / "bm25.xml").exists()


def test_collect_only_is_cheap_and_exits_0(pytester, items):
    result = bench(pytester, items, "--co", "-q", embedders=("bm25", "minilm"))
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert "strings/count_vowels[minilm]" in result.stdout.str()
    assert not (pytester.path / "cache").exists()  # nothing was encoded or executed


def test_the_one_adapted_pytest_internal_is_there_and_keeps_ids(pytestconfig):
    """``nodes.keep_item_ids`` replaces ``Config.cwd_relative_nodeid`` on this pytest (the
    behaviour is the next test's); a pytest without it leaves ids to pytest."""
    config = copy.copy(pytestconfig)
    assert keep_item_ids(config)
    assert config.cwd_relative_nodeid("numbers/x[bm25]") == "numbers/x[bm25]"
    assert pytestconfig.cwd_relative_nodeid is not config.cwd_relative_nodeid
    assert not keep_item_ids(types.SimpleNamespace())


def test_items_outside_the_rootdir_keep_their_ids_and_markers(pytester, items):
    """A user's items anywhere on disk, with a domain folder of their own."""
    elsewhere = pytester.path.parent / f"{pytester.path.name}-user-items"
    shutil.copytree(items, elsewhere)
    (elsewhere / "math_number_theory").rename(elsewhere / "numbers")
    for path in (elsewhere / "numbers").glob("*.toml"):
        path.write_text(path.read_text().replace('"math_number_theory"', '"numbers"'))
    from pytest_execretrieval.cli import main as cli_main

    assert cli_main(["build", str(elsewhere), "--cache-dir", str(pytester.path / "cache")]) == 0
    sub = pytester.mkdir("project")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--embedder",
            "bm25",
            "-v",
            "-p",
            "no:randomly",
            "--execretrieval-items",
            str(elsewhere),
            "--execretrieval-cache-dir",
            str(pytester.path / "cache"),
            "-W",
            "error::pytest.PytestUnknownMarkWarning",
            "-m",
            "numbers",
        ],
        cwd=sub,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = result.stdout
    assert result.returncode in (0, 1), out + result.stderr
    assert "FAILED numbers/clamp_add[bm25]" in out or "PASSED numbers/clamp_add[bm25]" in out
    # the progress line names the item as its id does, not relative to the invocation directory
    assert re.search(
        r"^numbers/clamp_add\[bm25\] (PASSED|FAILED|XFAIL|XPASS)", out, re.MULTILINE
    ), out
    assert "../" not in out
