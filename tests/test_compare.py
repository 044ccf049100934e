"""Tests for scoring/compare.py and scoring/gate.py: paired comparison, the gate (as the report's
``gate`` record), the compare command."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.cli import main
from pytest_execretrieval.reporting.comparison import compare_reports
from pytest_execretrieval.reporting.gate_text import gate_json
from pytest_execretrieval.reporting.report import metric_summary
from pytest_execretrieval.scoring.compare import (
    ComparisonError,
    paired_comparison,
)
from pytest_execretrieval.scoring.gate import gate_decision
from pytest_execretrieval.scoring.metrics import (
    KS,
    METRIC_NAMES,
    mean_metrics,
    metric_matrix,
    query_metrics,
)
from pytest_execretrieval.scoring.stats import (
    bootstrap_ci,
    detectable_difference,
    holm_adjust,
    mcnemar_exact,
    paired_bootstrap_diff_ci,
    sign_flip_test,
)

FAST = settings(max_examples=40, deadline=None)
SHA = "ab" * 32


def make_report(ranks: Sequence[int | None], name: str = "m", sha: str = SHA) -> dict:
    """Query ``q<i>``'s canonical (the only passing snippet) sits at rank ``ranks[i]``;
    ``None`` or a rank > 10 leaves it out of the top 10."""
    per_query = []
    for i, r in enumerate(ranks):
        top = [
            {
                "rank": k,
                "snippet_id": f"s{k}",
                "kind": "canonical" if k == r else "distractor",
                "operator": None,
                "query_id": f"q{i:03d}" if k == r else "x",
                "score": 1 - k / 20,
                "passes": k == r,
            }
            for k in range(1, 11)
        ]
        per_query.append(
            {
                "query_id": f"q{i:03d}",
                "domain": "d",
                "passed": r == 1,
                "canonical_rank": r if r is not None else 50,
                "canonical_score": 0.5,
                "top": top,
            }
        )
    rows = [query_metrics([h["passes"] for h in q["top"]], q["canonical_rank"]) for q in per_query]
    metrics = mean_metrics(metric_matrix(rows)) if rows else dict.fromkeys(METRIC_NAMES, 0.0)
    ci = bootstrap_ci(metric_matrix(rows), n_resamples=200) if rows else [[0.0, 0.0]] * 13
    return {
        "schema_version": 1,
        "embedder": {"name": name},
        "corpus": {"sha256": sha, "n_queries": len(ranks), "n_snippets": 100},
        "metrics": metrics,
        "ci95": {m: list(map(float, c)) for m, c in zip(METRIC_NAMES, ci)},
        "per_query": per_query,
    }


def gated(*args, max_detectable: float = 1.0, **kwargs) -> dict:
    """The report's ``gate`` record of :func:`gate_decision` (figures and sentences). The
    fixtures here are small, and these tests are about the decision's rules, not its power:
    the power check is off (``max_detectable=1``) unless a test sets a bound."""
    return gate_json(gate_decision(*args, max_detectable=max_detectable, **kwargs))


ranks_lists = st.lists(st.one_of(st.none(), st.integers(1, 12)), min_size=1, max_size=30)


@FAST
@given(ranks_lists)
def test_self_comparison_is_null(ranks: list[int | None]) -> None:
    report = make_report(ranks)
    result = paired_comparison(report, report)
    for m in METRIC_NAMES:
        assert result["metrics"][m]["p_value"] == 1.0
        assert result["metrics"][m]["difference"] == 0.0
        assert result["metrics"][m]["ci95"] == [0.0, 0.0]
    gate = gated(report, report)
    assert gate["passed"] and all(r["p_value"] == 1.0 for r in gate["metrics"].values())


def test_clear_regression_fails_the_gate() -> None:
    baseline = make_report([1] * 40, "base")
    candidate = make_report([1] * 25 + [None] * 15, "cand")
    gate = gated(baseline, candidate, metrics=("exec@1",))
    assert not gate["passed"]
    e1 = gate["metrics"]["exec@1"]
    assert e1["test"] == "mcnemar" and e1["p_value"] == pytest.approx(2 * 0.5**15)
    assert e1["p_adjusted"] == e1["p_value"]  # one metric: Holm changes nothing
    assert e1["difference"] == pytest.approx(-15 / 40) and e1["ci95"][1] < 0
    assert (e1["baseline"], e1["candidate"]) == (1.0, 0.625)
    assert gate["reason"] == ("FAIL: harm test on exec@1 at alpha 0.05 (Holm); failed: exec@1")
    assert "a significant drop" in gate["explanation"][0]
    assert gate["where"]["exec@1"]["regressed"] == [f"q{i:03d}" for i in range(25, 40)]


def test_default_metrics_catch_a_top5_drop_that_exec1_misses() -> None:
    """Same exec@1, much worse exec@5: the default gate (exec@1, exec@5, ndcg@10) fails."""
    baseline = make_report([1] * 10 + [3] * 30, "base")
    candidate = make_report([1] * 10 + [None] * 30, "cand")
    gate = gated(baseline, candidate)
    assert not gate["passed"] and "failed: exec@5, ndcg@10" in gate["reason"]
    assert gate["metrics"]["exec@1"]["passed"] and gate["metrics"]["exec@1"]["difference"] == 0
    assert gate["metrics"]["exec@5"]["difference"] == pytest.approx(-0.75)
    assert gated(baseline, candidate, metrics=("exec@1",))["passed"]


def test_holm_adjusts_across_gated_metrics() -> None:
    baseline = make_report([1] * 40)
    candidate = make_report([1] * 34 + [None] * 6)  # exec@1 p = 2 / 64 = 0.03125
    one = gated(baseline, candidate, metrics=("exec@1",))
    three = gated(baseline, candidate, metrics=("exec@1", "exec@3", "mrr"))
    assert not one["passed"] and one["metrics"]["exec@1"]["p_value"] == pytest.approx(1 / 32)
    adjusted = three["metrics"]["exec@1"]["p_adjusted"]
    assert adjusted == pytest.approx(
        holm_adjust([1 / 32, 1 / 32, three["metrics"]["mrr"]["p_value"]])[0]
    )
    assert adjusted > 0.05 and three["passed"]


def test_insignificant_drop_passes_and_states_its_power() -> None:
    gate = gated(make_report([1] * 40), make_report([1] * 38 + [2, 2]), metrics=("exec@1",))
    e1 = gate["metrics"]["exec@1"]
    assert gate["passed"] and e1["p_value"] == pytest.approx(0.5)
    assert e1["difference"] == pytest.approx(-0.05)
    assert "no significant drop" in gate["explanation"][0]
    expected = detectable_difference(40, 2 / 40, 0.05, 0.8)
    assert e1["detectable"] == pytest.approx(expected)
    assert f"a true drop of {expected:.3f} or more" in gate["explanation"][0]


def test_significant_improvement_passes() -> None:
    gate = gated(make_report([None] * 20), make_report([1] * 20))
    e1 = gate["metrics"]["exec@1"]
    assert gate["passed"] and e1["p_value"] < 0.05 and e1["difference"] == 1.0


def test_non_inferiority_margin() -> None:
    baseline = make_report([1] * 200)
    candidate = make_report([1] * 196 + [None] * 4)  # exec@1 -0.02
    strict = gated(baseline, candidate, metrics=("exec@1",), margin=0.01)
    loose = gated(baseline, candidate, metrics=("exec@1",), margin=0.1)
    assert not strict["passed"] and loose["passed"] and loose["mode"] == "non-inferiority"
    lo = loose["metrics"]["exec@1"]["ci"][0]
    assert -0.1 < lo < -0.01  # the 90% CI's lower end decides
    ref = paired_bootstrap_diff_ci(
        np.ones(200), np.r_[np.ones(196), np.zeros(4)], 5000, 0, confidence=0.9
    )
    assert lo == pytest.approx(ref[0])
    per_metric = gated(
        baseline, candidate, metrics=("exec@1", "mrr"), margin={"exec@1": 0.1, "mrr": 0.1}
    )
    assert per_metric["passed"] and set(per_metric["metrics"]) == {"exec@1", "mrr"}


def test_minimums() -> None:
    base, cand = make_report([1] * 40), make_report([1] * 38 + [None] * 2)  # 0.95, p = 0.5
    assert gated(base, cand, minimums={"exec@1": 0.9})["passed"]
    low = gated(base, cand, minimums={"exec@1": 0.97})
    assert not low["passed"] and "failed: exec@1 minimum" in low["reason"]
    assert any("below the required minimum 0.970" in x for x in low["explanation"])
    only = gated(None, cand, minimums={"exec@1": 0.95, "exec@10": 0.95})
    assert only["passed"] and only["minimums"]["exec@1"]["value"] == 0.95
    assert only["metrics"] == {} and only["reason"].startswith("PASS: minimums only")
    assert not gated(None, cand, minimums={"exec@1": 0.96})["passed"]


def test_gate_refuses_vacuous_decisions() -> None:
    empty = make_report([])
    with pytest.raises(ComparisonError, match="zero queries"):
        gated(empty, empty)
    with pytest.raises(ComparisonError, match="zero queries"):
        gated(None, empty, minimums={"exec@1": 0.0})
    with pytest.raises(ComparisonError, match="baseline report or a minimum"):
        gated(None, make_report([1]))
    with pytest.raises(ValueError, match="alpha"):
        gated(make_report([1]), make_report([1]), alpha=0.0)
    with pytest.raises(ValueError, match="unknown metric"):
        gated(make_report([1]), make_report([1]), metrics=("exec@2",))


def test_where_it_regressed_and_what_differs() -> None:
    baseline = make_report([1] * 20, "base")
    candidate = make_report([1] * 12 + [None] * 8, "cand")
    for q, b in zip(candidate["per_query"][12:16], baseline["per_query"][12:16]):
        q["domain"] = b["domain"] = "strings"
        q["top"][0]["operator"] = "wrong_comparison"
        q["top"][0]["query_id"] = q["query_id"]
    baseline["embedder"]["dim"], candidate["embedder"]["dim"] = 384, 768
    gate = gated(baseline, candidate, metrics=("exec@1",))
    where = gate["where"]["exec@1"]
    assert [d["domain"] for d in where["domains"]] == ["strings", "d"]
    assert where["domains"][0] == {"domain": "strings", "difference": -1.0, "n": 4, "worse": 4}
    assert where["operators"][0] == {"operator": "another query's snippet", "n": 4}
    assert {"operator": "wrong_comparison", "n": 4} in where["operators"]
    assert gate["invocation"] == ["dim: 384 -> 768", "name: base -> cand"]
    assert any("invocation differs" in x for x in gate["explanation"])


def tied_report(name: str, tie_size: int, passing: int, n: int = 10) -> dict:
    """A schema-2 report: rank 1 of every query is a tie of ``tie_size`` snippets (the
    canonical among them when ``passing``), the rest of the top 10 strictly lower."""
    per_query = []
    for i in range(n):
        top = [
            {
                "rank": k,
                "snippet_id": f"s{k}",
                "kind": "distractor",
                "operator": "off_by_one",
                "query_id": f"q{i:03d}",
                "score": 0.9 if k <= tie_size else 0.5 - k / 100,
                "passes": k <= passing,
            }
            for k in range(1, 11)
        ]
        per_query.append(
            {
                "query_id": f"q{i:03d}",
                "domain": "d",
                "passed": passing == tie_size,
                "canonical_rank": 1,
                "canonical_score": 0.9,
                "top": top,
                "rank1_tie": {"size": tie_size, "passing": passing},
                "tail_tie": {"size": 1, "passing": 0},
                "canonical_tie": {"first": 1, "last": tie_size},
            }
        )
    report = make_report([], name)
    report["schema_version"] = 2
    report["per_query"] = per_query
    report.update(metric_summary(per_query))
    report["corpus"]["n_queries"] = n
    return report


def test_version_1_and_2_reports_compare_and_ties_count() -> None:
    v1 = make_report([1] * 10, "old")
    v2 = tied_report("new", tie_size=4, passing=1)
    assert v2["metrics"]["exec@1"] == pytest.approx(0.25) and v2["ties"]["rank1"] == 10
    assert v2["metric_bounds"]["exec@1"] == {"pessimistic": 0.0, "optimistic": 1.0}
    cmp = paired_comparison(v1, v2)
    assert cmp["metrics"]["exec@1"]["difference"] == pytest.approx(-0.75)
    assert cmp["metrics"]["exec@1"]["test"] == "sign-flip"  # tie-expected values are fractional
    assert cmp["metrics"]["exec@1"]["p_value"] == pytest.approx(2 / 2**10)
    assert cmp["metrics"]["exec@5"]["test"] == "mcnemar"
    text = compare_reports([v1, v2])
    assert "Queries whose rank 1 is a tie: new 10." in text


def test_corpus_mismatch() -> None:
    a, b = make_report([1, 2], sha="a" * 64), make_report([1, 2], sha="b" * 64)
    for call in (
        lambda: paired_comparison(a, b),
        lambda: gated(a, b),
        lambda: compare_reports([a, b]),
    ):
        with pytest.raises(ComparisonError, match="different corpora") as info:
            call()
        assert "a" * 64 in str(info.value) and "b" * 64 in str(info.value)


def test_the_same_queries_over_two_pools_pair_only_when_asked() -> None:
    star, balanced = (
        make_report([2, 1, 3, 1], sha="a" * 64),
        make_report([1, 1, 1, 2], sha="b" * 64),
    )
    cmp = paired_comparison(star, balanced, across_pools=True)
    assert cmp["n_queries"] == 4
    assert cmp["metrics"]["exec@1"]["difference"] == pytest.approx(0.25)
    assert (cmp["metrics"]["exec@1"]["only_a"], cmp["metrics"]["exec@1"]["only_b"]) == (1, 2)
    fewer = make_report([1, 2, 3], sha="b" * 64)
    with pytest.raises(ComparisonError, match=r"1 query id\(s\) differ"):
        paired_comparison(star, fewer, across_pools=True)
    with pytest.raises(ComparisonError, match="different corpora"):
        paired_comparison(star, balanced)


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
        return metric_matrix(
            [
                query_metrics([h["passes"] for h in q["top"]], q["canonical_rank"])
                for q in report["per_query"]
            ]
        )

    ma, mb = matrix(a), matrix(b)
    ci = paired_bootstrap_diff_ci(ma, mb, n_resamples=5000, seed=3)
    for j, m in enumerate(METRIC_NAMES):
        diff = mb[:, j].mean() - ma[:, j].mean()
        assert result["metrics"][m]["difference"] == pytest.approx(diff)
        assert result["metrics"][m]["ci95"] == pytest.approx(list(ci[j]))
    for k in KS:
        j = METRIC_NAMES.index(f"exec@{k}")
        ref = mcnemar_exact(ma[:, j] > 0, mb[:, j] > 0)
        got = result["metrics"][f"exec@{k}"]
        assert got["test"] == "mcnemar"
        assert (got["only_a"], got["only_b"], got["p_value"]) == (
            ref.only_a,
            ref.only_b,
            ref.p_value,
        )
    mrr = result["metrics"]["mrr"]
    j = METRIC_NAMES.index("mrr")
    assert mrr["test"] == "sign-flip"
    assert mrr["p_value"] == sign_flip_test(mb[:, j] - ma[:, j], 10_000, 3)


def test_compare_reports_text() -> None:
    reports = [
        make_report([1, 2, None, 1], "alpha"),
        make_report([1, 1, 3, 1], "beta"),
        make_report([None, 2, 1, 1], "alpha"),
    ]
    plain = compare_reports(reports)
    assert "alpha (2)" in plain and "beta" in plain and "mcnemar" in plain
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


def main_compare(argv: list[str]) -> int:
    return main(["compare", *argv])


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
    (tmp_path / "v3.json").write_text(json.dumps({"schema_version": 3}))
    assert main_compare([a, str(tmp_path / "v3.json")]) == 2
    assert "schema_version 1 or 2" in capsys.readouterr().err
    assert main_compare([a]) == 2


def test_reports_of_one_embedder_are_labelled_by_their_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs of bm25 (a baseline and a candidate) are told apart by where they are, never
    as ``bm25`` and ``bm25 (2)``, and their labels are no invocation difference."""
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    a = _write(tmp_path / "old" / "bm25.json", make_report([1, 2, None], "bm25"))
    b = _write(tmp_path / "new" / "bm25.json", make_report([1, 1, 1], "bm25"))
    c = _write(tmp_path / "new" / "bm25-retry.json", make_report([1, 1, 2], "bm25"))
    assert main_compare([a, b, c]) == 0
    out = capsys.readouterr().out
    assert "bm25 (2)" not in out and "Invocation differs" not in out
    for label in ("bm25 (old/bm25.json)", "bm25 (new/bm25.json)", "bm25 (new/bm25-retry.json)"):
        assert label in out
    assert "bm25 (new/bm25.json) - bm25 (old/bm25.json)" in out
    assert main_compare([a, a]) == 0  # the same file twice
    out = capsys.readouterr().out
    assert "bm25 (bm25.json)" in out and "bm25 (bm25.json, 2)" in out


def test_compare_json_has_stable_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``compare --json``: the keys docs/ci.md lists, the same numbers as the tables."""
    a = _write(tmp_path / "a.json", make_report([1, 2, None, 1], "base"))
    b = _write(tmp_path / "b.json", make_report([1, 1, 1, 3], "cand"))
    assert main_compare([a, b, "--json", "--seed", "1"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert sorted(found) == ["metrics", "pairs", "reports", "seed", "skipped"]
    assert found["metrics"] == list(METRIC_NAMES) and found["seed"] == 1
    assert [r["label"] for r in found["reports"]] == ["base", "cand"]
    assert sorted(found["reports"][0]) == [
        "ci95",
        "corpus_sha256",
        "label",
        "metrics",
        "n_queries",
        "path",
    ]
    [pair] = found["pairs"]
    assert (pair["a"], pair["b"], pair["n_queries"]) == ("base", "cand", 4)
    assert pair["invocation_differences"] == ["name: base -> cand"]
    expected = paired_comparison(
        json.loads(Path(a).read_text()), json.loads(Path(b).read_text()), 1
    )
    got, want = pair["metrics"]["exec@1"], expected["metrics"]["exec@1"]
    assert got["test"] == want["test"] and got["difference"] == pytest.approx(want["difference"])
    assert got["ci95"] == pytest.approx(want["ci95"]) and got["p_value"] == want["p_value"]
    assert sorted(pair["metrics"]["exec@1"]) == sorted(
        ["a", "b", "difference", "ci95", "test", "p_value", "only_a", "only_b"]
        + ["detectable", "needed"]
    )
    other = _write(tmp_path / "c.json", make_report([1, 1, 1, 1], "c", sha="c" * 64))
    assert main_compare([a, other, "--json"]) == 2  # as without --json


def _without(report: dict, *metrics: str) -> dict:
    """``report`` as a version that did not have ``metrics`` would have written it."""
    out = json.loads(json.dumps(report))
    for m in metrics:
        for key in ("metrics", "ci95"):
            del out[key][m]
    return out


def test_reports_of_different_versions_compare_on_their_shared_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An older report lacks a metric added since (ndcg@3 here); a newer one carries a metric
    this version does not know (recall@10): compare works on the rest and names both."""
    old = _without(make_report([1, 2, 3, None, 1, 5], "old"), "ndcg@3")
    new = make_report([1, 1, 2, 4, None, 1], "new")
    new["metrics"]["recall@10"], new["ci95"]["recall@10"] = 0.5, [0.25, 0.75]
    paths = [_write(tmp_path / "old.json", old), _write(tmp_path / "new.json", new)]
    for order in (paths, paths[::-1]):
        assert main_compare(order) == 0
        out = capsys.readouterr().out
        assert (
            "Metrics not compared: ndcg@3 (not in old); recall@10 (unknown to this version "
            "of pytest-execretrieval)"
        ) in out
        rows = [line.split()[0] for line in out.splitlines() if line[:1].isalpha()]
        assert "ndcg@3" not in rows and "recall@10" not in rows
        assert rows.count("ndcg@5") == 2  # the side-by-side table and the differences
    cmp = paired_comparison(old, new)
    assert list(cmp["metrics"]) == [m for m in METRIC_NAMES if m != "ndcg@3"]
    assert set(cmp["skipped"]) == {"ndcg@3", "recall@10"}
    full = paired_comparison(make_report([1, 2, 3, None, 1, 5], "old"), new)
    assert cmp["metrics"] == {m: v for m, v in full["metrics"].items() if m != "ndcg@3"}


def test_same_metrics_name_nothing_skipped() -> None:
    a, b = make_report([1, 2], "a"), make_report([2, 1], "b")
    assert paired_comparison(a, b)["skipped"] == {}
    assert "not compared" not in compare_reports([a, b])


def test_gate_refuses_a_gated_metric_its_baseline_lacks() -> None:
    baseline = _without(make_report([1] * 10, "old"), "ndcg@10", "mrr")
    candidate = make_report([1] * 10, "new")
    with pytest.raises(ComparisonError, match=r"baseline report lacks gated metric\(s\) ndcg@10"):
        gated(baseline, candidate)  # the default gate includes ndcg@10
    assert gated(baseline, candidate, metrics=("exec@1", "exec@5"))["passed"]
    with pytest.raises(ComparisonError, match="share no metric to compare"):
        compare_reports([_without(baseline, *METRIC_NAMES[:-2]), candidate])


def test_a_per_metric_margin_leaves_the_other_metrics_in_harm_mode() -> None:
    """``margin={"exec@1": x}`` adds exec@1's margin; exec@5 and nDCG@10 stay gated (harm),
    Holm-adjusted over the harm-tested metrics only."""
    baseline = make_report([1] * 10 + [3] * 30, "base")
    candidate = make_report([1] * 10 + [None] * 30, "cand")
    d = gate_decision(baseline, candidate, margin={"exec@1": 0.05})
    assert {m: v.mode for m, v in d.verdicts.items()} == {
        "exec@1": "non-inferiority",
        "exec@5": "harm",
        "ndcg@10": "harm",
    }
    assert d.mode == "mixed" and d.decision == "FAIL" and d.failed == ["exec@5", "ndcg@10"]
    assert d.verdicts["exec@1"].passed and d.verdicts["exec@1"].margin == 0.05
    harm_only = gate_decision(baseline, candidate, metrics=("exec@5", "ndcg@10"))
    assert d.verdicts["exec@5"].p_adjusted == harm_only.verdicts["exec@5"].p_adjusted
    assert gate_json(d)["reason"].startswith(
        "FAIL: non-inferiority on exec@1 (margin exec@1 0.05) at alpha 0.05 + harm test on "
        "exec@5, ndcg@10 at alpha 0.05 (Holm); failed: exec@5, ndcg@10"
    )


def test_the_decision_names_what_it_did_not_compare() -> None:
    baseline = make_report([1] * 40)
    subset = make_report([1] * 20)  # q000..q019: a selection
    # about coverage: the power check (20 queries cannot detect a 0.10 drop) is off
    d = gate_decision(baseline, subset, metrics=("exec@1",), max_detectable=1.0)
    assert d.passed and d.coverage.selection and d.verdicts["exec@1"].n == 20
    assert gate_json(d)["reason"] == (
        "PASS: harm test on exec@1 at alpha 0.05 (Holm) on 20 of "
        "40 queries (selection); nothing failed"
    )
    broken = gate_decision(
        baseline, subset, metrics=("exec@1",), collection_errors=("items/strings/x.toml",)
    )
    assert broken.decision == "FAIL" and broken.failed == ["1 collection error(s)"]
    assert not broken.coverage.selection and "of 40 queries; failed" in gate_json(broken)["reason"]
    assert gate_json(broken)["explanation"][0] == (
        "collection errors (their queries were not compared): items/strings/x.toml"
    )
    extra = gate_decision(baseline, make_report([1] * 41), metrics=("exec@1",))
    assert extra.coverage.missing_from_baseline == ("q040",) and not extra.passed
    assert extra.failed == ["1 queries missing from the baseline"]
    assert gate_json(extra)["coverage"]["compared"] == 40


def test_a_gate_too_small_to_detect_its_bound_is_underpowered_never_a_pass() -> None:
    """9 queries, one of them worse: the smallest drop detected with 80% power is 0.778, far
    above the default bound 0.10, so nothing failing is not a PASS."""
    baseline = make_report([1] * 9, "base")
    candidate = make_report([1] * 8 + [2], "cand")
    d = gate_decision(baseline, candidate)
    assert d.failed == [] and not d.passed and d.decision == "UNDERPOWERED"
    assert d.verdicts["exec@1"].detectable == pytest.approx(7 / 9)
    needed = d.underpowered["exec@1"]
    assert needed > 9 and detectable_difference(needed, 1 / 9, 0.05 / 3) <= 0.10
    assert detectable_difference(needed - 1, 1 / 9, 0.05 / 3) > 0.10
    record = gate_json(d)
    assert record["decision"] == "UNDERPOWERED" and not record["passed"]
    assert record["reason"].startswith("UNDERPOWERED: harm test on exec@1, exec@5, ndcg@10")
    assert f"exec@1 needs {needed:,} queries" in record["reason"]
    assert record["metrics"]["exec@1"]["needed"] == needed


def test_a_significant_drop_fails_even_when_underpowered() -> None:
    baseline = make_report([1] * 12, "base")
    candidate = make_report([None] * 12, "cand")
    d = gate_decision(baseline, candidate, metrics=("exec@1",))
    assert d.underpowered and d.decision == "FAIL" and d.failed == ["exec@1"]


def test_non_inferiority_is_underpowered_beyond_twice_its_margin() -> None:
    """60 identical queries: a one-sided exact test needs 5 differing queries, so the smallest
    detectable margin is 5/60 = 0.083: within twice 0.05, not within twice 0.03."""
    report = make_report([1] * 30 + [3] * 30)
    wide = gate_decision(report, report, metrics=("exec@1",), margin=0.05)
    narrow = gate_decision(report, report, metrics=("exec@1",), margin=0.03)
    assert wide.decision == "PASS"
    assert narrow.decision == "UNDERPOWERED" and narrow.underpowered == {"exec@1": 84}
    assert "twice the margin" in gate_json(narrow)["reason"]


def test_the_full_set_against_itself_has_the_power_to_pass() -> None:
    report = make_report([1] * 300 + [3] * 300)
    assert gate_decision(report, report).decision == "PASS"


def test_compare_says_when_the_queries_cannot_decide() -> None:
    """Like the gate, compare states the caveat: 4 queries cannot detect a drop of 0.10 (it
    would need the named number of queries), while 1,000 identical rank-1 hits can."""
    few = compare_reports([make_report([1, 2, None, 1], "a"), make_report([1, 1, 3, 1], "b")])
    caveat = next(line for line in few.splitlines() if line.startswith("UNDERPOWERED"))
    assert "4 queries cannot detect a drop of 0.10 with 80% power" in caveat
    assert re.search(r"exec@1 needs \d[\d,]* queries", caveat)
    many = [make_report([1] * 1000, name) for name in ("a", "b")]
    assert "UNDERPOWERED" not in compare_reports(many)
