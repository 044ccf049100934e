"""`pytest --embedder E --execretrieval-rerank NAME`: pipeline items, junit, report with the lift,
the gate against a pipeline baseline, fusion of two first stages, usage errors."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET

import pytest
from plugin_runs import bench

from pytest_execretrieval.scoring.metrics import METRIC_NAMES


def test_pipeline_items_junit_and_report_with_lift(pytester, items, capsys):
    result = bench(
        pytester,
        items,
        "-rA",
        "--execretrieval-rerank",
        "exec-consensus",
        "--execretrieval-report-dir=reports",
    )
    out = result.stdout.str()
    assert result.ret in (0, 1), out
    for qid in ("strings/count_vowels", "math_number_theory/clamp_add"):
        assert f"{qid}[bm25]" in out and f"{qid}[bm25+exec-consensus]" in out
    assert "lift [bm25+exec-consensus] over bm25: exec@1" in out
    assert "rerank [bm25+exec-consensus]:" in out and "ms/query" in out
    reports = pytester.path / "reports"
    first = json.loads((reports / "bm25.json").read_text())
    pipe = json.loads((reports / "bm25_exec-consensus.json").read_text())
    assert pipe["schema_version"] == 2 and pipe["first_stage"] == "bm25"
    assert pipe["embedder"]["name"] == "bm25+exec-consensus"
    assert pipe["embedder"]["reranker"]["source"] == "tests" and pipe["embedder"]["rerank_k"] == 10
    assert pipe["rerank"]["fallback"]["n"] == 0 and "seconds" not in pipe["rerank"]
    lift = pipe["lift"]
    assert set(lift["metrics"]) == set(METRIC_NAMES)
    for m in METRIC_NAMES:
        d = lift["metrics"][m]
        assert d["before"] == pytest.approx(first["metrics"][m])
        assert d["after"] == pytest.approx(pipe["metrics"][m])
        assert d["difference"] == pytest.approx(d["after"] - d["before"])
        assert d["ci95"][0] <= d["difference"] <= d["ci95"][1]
    mc = lift["exec@1_mcnemar"]
    flips = [(a["passed"], b["passed"]) for a, b in zip(first["per_query"], pipe["per_query"])]
    assert (mc["only_first_stage"], mc["only_pipeline"]) == (
        sum(a and not b for a, b in flips),
        sum(b and not a for a, b in flips),
    )
    assert set(lift["by_domain"]) == {q["domain"] for q in first["per_query"]}
    assert lift["by_operator"] and all(g["n"] >= 1 for g in lift["by_operator"].values())
    # Consensus moves passing code up on this data: no query gets worse, some get better.
    assert mc["only_first_stage"] == 0 and lift["metrics"]["exec@1"]["difference"] > 0
    for q in pipe["per_query"]:
        assert [h["rank"] for h in q["top"]] == list(range(1, 11))
        assert all(len(h["tie_key"]) == 3 for h in q["top"])
        assert sorted(h["snippet_id"] for h in q["top"]) == sorted(
            h["snippet_id"]
            for h in next(f for f in first["per_query"] if f["query_id"] == q["query_id"])["top"]
        )
    suite = ET.parse(reports / "bm25_exec-consensus.xml").getroot().find("testsuite")
    assert suite.get("name") == "bm25+exec-consensus" and suite.get("tests") == "4"
    from pytest_execretrieval.cli import main

    pair = [str(reports / "bm25_exec-consensus.json"), str(reports / "bm25.json")]
    assert main(["compare", *pair]) == 0
    assert (
        "bm25+exec-consensus - bm25 (paired, 4 queries): the pipeline's lift over its first "
        "stage" in capsys.readouterr().out
    )
    summary = (reports / "summary.md").read_text()
    assert "Reranking: rank-1 lift over the first stage" in summary
    assert "| bm25+exec-consensus | bm25 |" in summary


def test_a_pipeline_report_is_a_baseline_for_the_gate(pytester, items):
    args = ("--execretrieval-rerank", "exec-consensus", "--execretrieval-report-dir=reports")
    assert bench(pytester, items, *args).ret in (0, 1)
    baseline = pytester.path / "reports" / "bm25_exec-consensus.json"
    shutil.copy(baseline, pytester.path / "baseline.json")
    gated = bench(
        pytester,
        items,
        *args,
        "--execretrieval-max-detectable=1",
        "--execretrieval-baseline",
        str(pytester.path / "baseline.json"),
    )
    out = gated.stdout.str()
    assert "gate [bm25+exec-consensus]: PASS" in out
    suite = ET.parse(pytester.path / "reports" / "bm25_exec-consensus.xml").getroot()
    assert any(c.get("name") == "gate[bm25+exec-consensus]" for c in suite.iter("testcase"))


def test_rrf_fuses_two_first_stages_of_the_session(pytester, items):
    from test_plugin_benchmark import make_npz

    npz = "npz:" + str(make_npz(pytester, items))
    result = bench(
        pytester,
        items,
        "--execretrieval-rerank",
        f"rrf:bm25+{npz}",
        "--execretrieval-rerank-k",
        "5",
        "--execretrieval-report-dir=reports",
        embedders=("bm25", npz),
    )
    assert result.ret in (0, 1), result.stdout.str()
    names = sorted(p.name for p in (pytester.path / "reports").glob("*.json"))
    assert len(names) == 4  # two first stages, each with its fused pipeline
    summary = (pytester.path / "reports" / "summary.md").read_text()
    # The two first stages with each other, each pipeline with its own first stage only.
    assert sum(line.startswith("### ") and "(paired," in line for line in summary.splitlines()) == 3
    reports = [json.loads(p.read_text()) for p in (pytester.path / "reports").glob("*.json")]
    pipes = [r for r in reports if "first_stage" in r]
    assert sorted(p["first_stage"] for p in pipes) == sorted(["bm25", npz])
    for p in pipes:
        assert p["embedder"]["reranker"]["fused"][0] == "bm25" and p["embedder"]["rerank_k"] == 5
        for q in p["per_query"]:
            assert [len(h["tie_key"]) for h in q["top"]] == [3] * 5 + [2] * 5


@pytest.mark.parametrize(
    "args, message",
    [
        (("--execretrieval-rerank", "rrf:bm25+minilm"), "add --embedder minilm"),
        (("--execretrieval-rerank", "nope"), "unknown reranker 'nope'"),
        (
            ("--execretrieval-rerank", "exec-consensus", "--execretrieval-rerank-k", "11"),
            "is not in 1..10",
        ),
        (
            ("--execretrieval-rerank", "exec-consensus", "--execretrieval-rerank-k", "ten"),
            "'ten' is not a valid int",
        ),
        (
            (
                "--execretrieval-rerank",
                "exec-consensus",
                "--execretrieval-rerank",
                "exec-consensus",
            ),
            "named twice",
        ),
    ],
)
def test_usage_errors_before_any_work(pytester, items, args, message):
    result = bench(pytester, items, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_rerankers_from_the_ini_file(pytester, items):
    pytester.makeini(
        "[pytest]\nexecretrieval_rerank =\n    exec-consensus:tests\nexecretrieval_rerank_k = 3\n"
    )
    result = bench(pytester, items, "--execretrieval-report-dir=reports")
    assert result.ret in (0, 1)
    pipe = json.loads((pytester.path / "reports" / "bm25_exec-consensus_tests.json").read_text())
    assert pipe["rerank"]["k"] == 3 and pipe["embedder"]["name"] == "bm25+exec-consensus:tests"


def test_pipeline_report_identical_with_and_without_xdist(pytester, items):
    pytest.importorskip("xdist")
    args = ("--execretrieval-rerank", "exec-consensus")
    assert bench(pytester, items, *args, "--execretrieval-report-dir=serial", "-n", "0").ret in (
        0,
        1,
    )
    assert bench(pytester, items, *args, "--execretrieval-report-dir=dist", "-n", "2").ret in (0, 1)
    serial, dist = (
        json.loads((pytester.path / d / "bm25_exec-consensus.json").read_text())
        for d in ("serial", "dist")
    )
    for data in (serial, dist):
        for key in ("elapsed_s", "created_at"):
            data.pop(key)
    assert serial == dist
