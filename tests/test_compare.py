"""Tests for pytest_execretrieval.compare: paired comparison, the gate, the compare command."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.compare import (
    ComparisonError,
    compare_reports,
    gate_decision,
    main_compare,
    paired_comparison,
)
from pytest_execretrieval.metrics import (
    KS,
    METRIC_NAMES,
    mean_metrics,
    metric_matrix,
    query_metrics,
)
from pytest_execretrieval.stats import bootstrap_ci, mcnemar_exact, paired_bootstrap_diff_ci

FAST = settings(max_examples=40, deadline=None)
SHA = "ab" * 32


def make_report(ranks: Sequence[int | None], name: str = "m", sha: str = SHA) -> dict:
    """Query ``q<i>``'s canonical (the only passing snippet) sits at rank ``ranks[i]``;
    ``None`` or a rank > 10 leaves it out of the top 10."""
    per_query = []
    for i, r in enumerate(ranks):
        top = [{"rank": k, "snippet_id": f"s{k}", "kind": "canonical" if k == r else "distractor",
                "operator": None, "query_id": f"q{i:03d}" if k == r else "x", "score": 1 - k / 20,
                "passes": k == r} for k in range(1, 11)]  # fmt: skip
        per_query.append({"query_id": f"q{i:03d}", "domain": "d", "passed": r == 1,
                          "canonical_rank": r if r is not None else 50,
                          "canonical_score": 0.5, "top": top})  # fmt: skip
    rows = [query_metrics([h["passes"] for h in q["top"]], q["canonical_rank"])
            for q in per_query]  # fmt: skip
    metrics = mean_metrics(metric_matrix(rows)) if rows else dict.fromkeys(METRIC_NAMES, 0.0)
    ci = bootstrap_ci(metric_matrix(rows), n_resamples=200) if rows else [[0.0, 0.0]] * 13
    return {"schema_version": 1, "embedder": {"name": name},
            "corpus": {"sha256": sha, "n_queries": len(ranks), "n_snippets": 100},
            "metrics": metrics, "ci95": {m: list(map(float, c)) for m, c in zip(METRIC_NAMES, ci)},
            "per_query": per_query}  # fmt: skip


ranks_lists = st.lists(st.one_of(st.none(), st.integers(1, 12)), min_size=1, max_size=30)


@FAST
@given(ranks_lists)
def test_self_comparison_is_null(ranks: list[int | None]) -> None:
    report = make_report(ranks)
    result = paired_comparison(report, report)
    for k in KS:
        assert result["mcnemar"][f"exec@{k}"]["p_value"] == 1.0
    for m in METRIC_NAMES:
        assert result["metrics"][m]["difference"] == 0.0
        assert result["metrics"][m]["ci95"] == [0.0, 0.0]
    gate = gate_decision(report, report)
    assert gate["passed"] and gate["p_value"] == 1.0 and gate["difference"] == 0.0


def test_clear_regression_fails_the_gate() -> None:
    baseline = make_report([1] * 40, "base")
    candidate = make_report([1] * 25 + [None] * 15, "cand")
    gate = gate_decision(baseline, candidate)
    assert not gate["passed"]
    assert gate["p_value"] == pytest.approx(2 * 0.5**15)
    assert gate["difference"] == pytest.approx(-15 / 40)
    assert gate["ci95"][1] < 0
    assert (gate["baseline_exec1"], gate["candidate_exec1"]) == (1.0, 0.625)
    assert gate["reason"].startswith("FAIL: ") and "significant drop" in gate["reason"]
    assert gate["reason"].count(".") >= 1 and "\n" not in gate["reason"]


def test_insignificant_drop_passes() -> None:
    gate = gate_decision(make_report([1] * 40), make_report([1] * 38 + [2, 2]))
    assert gate["passed"]
    assert gate["p_value"] == pytest.approx(0.5)
    assert gate["difference"] == pytest.approx(-0.05)
    assert "not a significant drop" in gate["reason"]


def test_significant_improvement_passes() -> None:
    gate = gate_decision(make_report([None] * 20), make_report([1] * 20))
    assert gate["passed"] and gate["p_value"] < 0.05 and gate["difference"] == 1.0


def test_min_exec1() -> None:
    base, cand = make_report([1] * 40), make_report([1] * 38 + [None] * 2)  # 0.95, p = 0.5
    assert gate_decision(base, cand, min_exec1=0.9)["passed"]
    low = gate_decision(base, cand, min_exec1=0.97)
    assert not low["passed"] and "below the required minimum 0.970" in low["reason"]
    only = gate_decision(None, cand, min_exec1=0.95)
    assert only["passed"] and only["candidate_exec1"] == 0.95
    assert only["p_value"] is None and only["difference"] is None and only["ci95"] is None
    assert only["baseline_exec1"] is None
    assert not gate_decision(None, cand, min_exec1=0.96)["passed"]


def test_gate_refuses_vacuous_decisions() -> None:
    empty = make_report([])
    with pytest.raises(ComparisonError, match="zero queries"):
        gate_decision(empty, empty)
    with pytest.raises(ComparisonError, match="zero queries"):
        gate_decision(None, empty, min_exec1=0.0)
    with pytest.raises(ComparisonError, match="baseline report or min_exec1"):
        gate_decision(None, make_report([1]))
    with pytest.raises(ValueError, match="alpha"):
        gate_decision(make_report([1]), make_report([1]), alpha=0.0)


def test_corpus_mismatch() -> None:
    a, b = make_report([1, 2], sha="a" * 64), make_report([1, 2], sha="b" * 64)
    for call in (lambda: paired_comparison(a, b), lambda: gate_decision(a, b),
                 lambda: compare_reports([a, b])):  # fmt: skip
        with pytest.raises(ComparisonError, match="different corpora") as info:
            call()
        assert "a" * 64 in str(info.value) and "b" * 64 in str(info.value)


def test_query_mismatch() -> None:
    a, b = make_report([1, 2, 3, 4]), make_report([1, 2])
    b["per_query"].append(dict(b["per_query"][0], query_id="zzz"))
    with pytest.raises(ComparisonError, match=r"3 query id\(s\) differ"):
        paired_comparison(a, b)


def test_matches_stats_functions_and_pairs_by_id() -> None:
    rng = random.Random(1)
    ranks_a = [rng.choice([1, 2, 4, 7, None]) for _ in range(30)]
    ranks_b = [rng.choice([1, 1, 3, None]) for _ in range(30)]
    a, b = make_report(ranks_a, "a"), make_report(ranks_b, "b")
    shuffled = dict(b, per_query=list(reversed(b["per_query"])))
    result = paired_comparison(a, shuffled, seed=3)
    assert result == paired_comparison(a, b, seed=3)
    assert (result["a"], result["b"], result["n_queries"]) == ("a", "b", 30)

    def matrix(report: dict) -> np.ndarray:
        return metric_matrix([query_metrics([h["passes"] for h in q["top"]], q["canonical_rank"])
                              for q in report["per_query"]])  # fmt: skip

    ma, mb = matrix(a), matrix(b)
    ci = paired_bootstrap_diff_ci(ma, mb, n_resamples=5000, seed=3)
    for j, m in enumerate(METRIC_NAMES):
        diff = mb[:, j].mean() - ma[:, j].mean()
        assert result["metrics"][m]["difference"] == pytest.approx(diff)
        assert result["metrics"][m]["ci95"] == pytest.approx(list(ci[j]))
    for k in KS:
        j = METRIC_NAMES.index(f"exec@{k}")
        ref = mcnemar_exact(ma[:, j] > 0, mb[:, j] > 0)
        got = result["mcnemar"][f"exec@{k}"]
        assert (got["only_a"], got["only_b"], got["p_value"]) == (ref.only_a, ref.only_b,
                                                                 ref.p_value)  # fmt: skip


def test_compare_reports_text() -> None:
    reports = [make_report([1, 2, None, 1], "alpha"), make_report([1, 1, 3, 1], "beta"),
               make_report([None, 2, 1, 1], "alpha")]  # fmt: skip
    plain = compare_reports(reports)
    assert "alpha (2)" in plain and "beta" in plain and "McNemar p" in plain
    assert plain.count("(paired, 4 queries)") == 3
    assert "beta - alpha (paired" in plain and "alpha (2) - beta (paired" in plain
    md = compare_reports(reports, fmt="markdown")
    assert "| metric" in md and "|---" in md.replace(":", "-") and "### beta - alpha" in md
    assert compare_reports(reports) == plain  # deterministic
    with pytest.raises(ValueError, match="fmt"):
        compare_reports(reports, fmt="html")


def _write(path: Path, report: dict) -> str:
    path.write_text(json.dumps(report))
    return str(path)


def test_main_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path / "a.json", make_report([1, 2, None], "a"))
    b = _write(tmp_path / "b.json", make_report([1, 1, 1], "b"))
    assert main_compare([a, b, "--format", "markdown", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "### b - a" in out

    other = _write(tmp_path / "c.json", make_report([1, 1, 1], "c", sha="c" * 64))
    assert main_compare([a, other]) == 2
    assert "different corpora" in capsys.readouterr().err

    (tmp_path / "bad.json").write_text("{not json")
    assert main_compare([a, str(tmp_path / "bad.json")]) == 2
    assert "bad.json" in capsys.readouterr().err
    assert main_compare([a, str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err
    (tmp_path / "v2.json").write_text(json.dumps({"schema_version": 2}))
    assert main_compare([a, str(tmp_path / "v2.json")]) == 2
    assert "schema_version 1" in capsys.readouterr().err
    assert main_compare([a]) == 2
