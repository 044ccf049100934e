"""`pytest --embedder NAME`: items, failure output, reports, determinism, caches, selection."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np  # imported at collection: pytester's module snapshot must not drop numpy
import pytest

from pytest_execretrieval.corpus import read_corpus
from pytest_execretrieval.embedders.npz import write_npz
from pytest_execretrieval.items import load_items

DATA = Path(__file__).parent / "data" / "items"
TIMING = ("elapsed_s", "created_at")


@pytest.fixture
def items(pytester) -> Path:
    target = pytester.path / "items"
    shutil.copytree(DATA, target)
    return target


def bench(pytester, items: Path, *args: str, embedders=("bm25",)):
    flags = [f for name in embedders for f in ("--embedder", name)]
    return pytester.runpytest_subprocess(
        *flags, "--execretrieval-items", str(items),
        "--execretrieval-cache-dir", str(pytester.path / "cache"), "-p", "no:randomly", *args,
    )  # fmt: skip


def without_timing(path: Path) -> dict:
    data = json.loads(path.read_text())
    for key in TIMING:
        data.pop(key)
    return data


def test_one_item_per_query_with_readable_failures(pytester, items):
    result = bench(pytester, items, "-rA", "--execretrieval-report-dir=reports")
    out = result.stdout.str()
    assert result.ret in (0, 1)
    for qid in ("strings/count_vowels", "arrays_lists/window_sums", "arrays_lists/last_index_of",
                "math_number_theory/clamp_add"):  # fmt: skip
        assert f"{qid}[bm25]" in out
    assert "embedder" in out and "exec@1" in out and "mrr" in out  # the terminal table
    report = json.loads((pytester.path / "reports" / "bm25.json").read_text())
    assert report["schema_version"] == 1
    assert report["corpus"]["n_queries"] == 4 and report["corpus"]["n_snippets"] == 20
    assert report["tie_policy"] == "score desc, then snippet_id asc"
    assert set(report["ci95"]) == set(report["metrics"])
    for q in report["per_query"]:
        assert [h["rank"] for h in q["top"]] == list(range(1, 11))
        assert q["passed"] == q["top"][0]["passes"]
    failed = [q for q in report["per_query"] if not q["passed"]]
    if failed:  # the failure text names the query, both ranks and the diff
        assert "rank 1 is a wrong implementation for:" in out
        assert "canonical: rank" in out and "diff canonical -> rank 1" in out


def test_junit_per_model_and_summary(pytester, items):
    npz = "npz:" + str(make_npz(pytester, items))
    result = bench(pytester, items, "--execretrieval-report-dir=reports",
                   "--execretrieval-code-similarity", embedders=("bm25", npz))  # fmt: skip
    assert result.ret in (0, 1), result.stdout.str()
    reports = pytester.path / "reports"
    xmls = sorted(p.name for p in reports.glob("*.xml"))
    assert len(xmls) == 2
    suite = ET.parse(reports / "bm25.xml").getroot().find("testsuite")
    assert suite.get("name") == "bm25" and suite.get("tests") == "4"
    props = {p.get("name") for p in suite.iter("property")}
    assert {"canonical_rank", "rank1_kind", "rank1_operator", "exec@1", "exec@10"} <= props
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
    write_npz(path, {"name": "random", "model": "random", "dim": 8}, {
        "query": ([q.id for q in qs], rng.normal(size=(len(qs), 8))),
        "document": ([s.snippet_id for s in snippets], rng.normal(size=(len(snippets), 8))),
    })  # fmt: skip
    return path


def test_report_identical_with_and_without_xdist(pytester, items):
    npz = "npz:" + str(make_npz(pytester, items))
    bench(pytester, items, "-n", "0", "--execretrieval-report-dir=serial", embedders=(npz,))
    bench(pytester, items, "-n", "2", "--execretrieval-report-dir=parallel", embedders=(npz,))
    [serial] = (pytester.path / "serial").glob("*.json")
    parallel = pytester.path / "parallel" / serial.name
    assert without_timing(serial) == without_timing(parallel)
    assert serial.read_text().count("\n") > 10


def test_markers_and_k_select_subsets(pytester, items):
    result = bench(pytester, items, "-m", "arrays_lists", "--execretrieval-report-dir=r")
    result.assert_outcomes(**{k: v for k, v in result.parseoutcomes().items()
                              if k in ("passed", "failed")})  # fmt: skip
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
    result = bench(pytester, items, str(pytester.path))
    assert "test_unrelated" not in result.stdout.str()


def perfect_baseline(pytester, items) -> Path:
    """A report in which every query passed: any candidate can only lose against it."""
    bench(pytester, items, "--execretrieval-report-dir=base")
    report = json.loads((pytester.path / "base" / "bm25.json").read_text())
    for q in report["per_query"]:
        q["passed"] = True
        q["top"][0]["passes"] = True
    path = pytester.path / "perfect.json"
    path.write_text(json.dumps(report))
    return path


def test_gate_exit_status_is_the_decision(pytester, items):
    baseline = perfect_baseline(pytester, items)
    # 4 discordant queries: exact McNemar p = 0.125, not significant at 0.05 -> PASS, exit 0
    lenient = bench(pytester, items, "--execretrieval-baseline", str(baseline),
                    "--execretrieval-report-dir=gated")  # fmt: skip
    assert "gate [bm25]: PASS" in lenient.stdout.str() and "p = 0.125" in lenient.stdout.str()
    assert lenient.ret == 0
    report = json.loads((pytester.path / "gated" / "bm25.json").read_text())
    assert report["gate"]["passed"] is True and report["gate"]["p_value"] == 0.125
    assert "## Upgrade gate" in (pytester.path / "gated" / "summary.md").read_text()
    strict = bench(pytester, items, "--execretrieval-baseline", str(baseline),
                   "--execretrieval-alpha", "0.2")  # fmt: skip
    assert "gate [bm25]: FAIL" in strict.stdout.str() and strict.ret == 1


def test_baseline_failures_are_xfail(pytester, items):
    bench(pytester, items, "--execretrieval-report-dir=base")
    base = json.loads((pytester.path / "base" / "bm25.json").read_text())
    failed = sum(not q["passed"] for q in base["per_query"])
    again = bench(pytester, items, "--execretrieval-baseline", str(pytester.path / "base" /
                                                                      "bm25.json"))  # fmt: skip
    assert again.parseoutcomes().get("xfailed", 0) == failed
    assert again.ret == 0  # identical model: no regression


def test_baseline_for_another_corpus_is_an_error(pytester, items):
    baseline = perfect_baseline(pytester, items)
    data = json.loads(baseline.read_text())
    data["corpus"]["sha256"] = "0" * 64
    baseline.write_text(json.dumps(data))
    result = bench(pytester, items, "--execretrieval-baseline", str(baseline))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "was made on corpus 0000000000000000" in result.stderr.str()


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
