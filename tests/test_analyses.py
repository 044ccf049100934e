"""Tests for pytest_execretrieval.scoring.analyses on hand-built reports with known answers."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from pytest_execretrieval.mutation.operators import CORE_CLASSES, OPERATOR_CLASSES
from pytest_execretrieval.scoring import analyses as an
from pytest_execretrieval.scoring.metrics import query_metrics
from pytest_execretrieval.scoring.stats import js_divergence

FAST = settings(max_examples=60, deadline=None)


def make_query(
    qid: str,
    ranking: Sequence[str],
    own: Sequence[tuple[str, float, int]] = (),
    *,
    domain: str = "math",
    canonical_score: float = 0.75,
    code_similarity: dict | None = None,
) -> dict:
    """One per_query row.  ``ranking`` (best first): ``"C"`` the query's canonical (passes),
    ``"D<j>"`` its own distractor ``own[j]`` (fails), ``"O"`` / ``"OD"`` another query's
    canonical / distractor (fails), ``"OP"`` another query's snippet that passes.
    ``own``: ``(operator, score, edit_chars)`` of every own distractor."""
    top = []
    for i, token in enumerate(ranking):
        rank = i + 1
        filler = 0.2 - 0.01 * i
        if token == "C":
            hit = ("canonical", None, qid, canonical_score, True, f"{qid}-c")
        elif token.startswith("D"):
            op, score, _ = own[int(token[1:])]
            hit = ("distractor", op, qid, score, False, f"{qid}-d{token[1:]}")
        elif token == "O":
            hit = ("canonical", None, "other", filler, False, f"o{i}")
        elif token == "OD":
            hit = ("distractor", "off_by_one", "other", filler, False, f"o{i}")
        elif token == "OP":
            hit = ("canonical", None, "other", filler, True, f"o{i}")
        else:
            raise ValueError(token)
        kind, op, owner, score, passes, sid = hit
        top.append(
            {
                "rank": rank,
                "snippet_id": sid,
                "kind": kind,
                "operator": op,
                "query_id": owner,
                "score": score,
                "passes": passes,
            }
        )
    rank = list(ranking).index("C") + 1 if "C" in ranking else 11
    return {
        "query_id": qid,
        "domain": domain,
        "passed": bool(top) and top[0]["passes"],
        "canonical_rank": rank,
        "canonical_score": canonical_score,
        "top": top,
        "own_distractors": [
            {
                "snippet_id": f"{qid}-d{j}",
                "operator": op,
                "score": score,
                "edit_lines": 1,
                "edit_chars": chars,
                "kill": "assertion",
            }
            for j, (op, score, chars) in enumerate(own)
        ],
        "code_similarity": code_similarity or {"alternatives": [], "distractors": []},
    }


def make_report(queries: Sequence[dict], name: str = "toy", sha: str = "ab" * 32) -> dict:
    return {
        "schema_version": 1,
        "embedder": {"name": name},
        "corpus": {"sha256": sha, "n_queries": len(queries), "n_snippets": 50},
        "per_query": sorted(queries, key=lambda q: q["query_id"]),
    }


# Scores are dyadic so that margins are exact.
Q1 = make_query(
    "q1",
    ["D0", "C", "O"],
    [("off_by_one", 0.875, 1), ("wrong_operator", 0.5, 2)],
    code_similarity={"alternatives": [0.9, 0.8], "distractors": [0.95, 0.7]},
)
Q2 = make_query(
    "q2",
    ["C", "D1", "D0", "OD"],
    [("off_by_one", 0.625, 3), ("swap_arguments", 0.75, 10)],
    code_similarity={"alternatives": [], "distractors": [0.99, 0.1]},
)
Q3 = make_query(
    "q3",
    ["O", "OD", "C"],
    [("wrong_comparison", 0.25, 5)],
    domain="strings",
    canonical_score=0.5,
    code_similarity={"alternatives": [0.6], "distractors": [0.5]},
)
Q4 = make_query("q4", ["OD", "O", "OP"], [], domain="strings", canonical_score=0.25)
REPORT = make_report([Q1, Q2, Q3, Q4])


def test_per_domain() -> None:
    assert an.per_domain(REPORT) == {
        "math": {"n": 2, "exec@1": 0.5, "exec@10": 1.0},
        "strings": {"n": 2, "exec@1": 0.0, "exec@10": 1.0},
    }


def test_per_operator() -> None:
    result = an.per_operator(REPORT)
    assert list(result) == ["off_by_one", "wrong_operator", "swap_arguments", "wrong_comparison"]
    assert result["off_by_one"] == {"n": 2, "exec@1": 0.5, "exec@10": 1.0, "rank1_capture": 0.5}
    assert result["wrong_operator"] == {"n": 1, "exec@1": 0.0, "exec@10": 1.0, "rank1_capture": 0.0}
    assert result["swap_arguments"]["rank1_capture"] == 0.0
    assert result["swap_arguments"]["exec@1"] == 1.0
    assert result["wrong_comparison"] == {
        "n": 1,
        "exec@1": 0.0,
        "exec@10": 1.0,
        "rank1_capture": 0.0,
    }


def test_deception() -> None:
    result = an.deception(REPORT)
    assert result["overall"] == {
        "n_queries": 3,
        "n_pairs": 5,
        "pair_rate": 0.4,
        "query_rate": 0.333333,
        "median_margin": 0.0,
    }
    by = result["by_operator"]
    assert by["off_by_one"] == {
        "n_queries": 2,
        "n_pairs": 2,
        "pair_rate": 0.5,
        "query_rate": 0.5,
        "median_margin": 0.0,
    }
    assert by["wrong_operator"] == {
        "n_queries": 1,
        "n_pairs": 1,
        "pair_rate": 0.0,
        "query_rate": 0.0,
        "median_margin": 0.25,
    }
    # a tie counts as a deceived pair but not as "canonical strictly below"
    assert by["swap_arguments"] == {
        "n_queries": 1,
        "n_pairs": 1,
        "pair_rate": 1.0,
        "query_rate": 0.0,
        "median_margin": 0.0,
    }
    assert by["wrong_comparison"]["median_margin"] == 0.25


def test_rank1_miss_attribution() -> None:
    assert an.rank1_miss_attribution(REPORT) == {
        "n_misses": 3,
        "own_distractor": 1,
        "other_canonical": 1,
        "other_distractor": 1,
        "own_canonical": 0,
        "own_distractor_share": 0.333333,
        "by_operator": {"off_by_one": 1},
    }


def test_density_ablation() -> None:
    # q1: D0 (fail) above C, 2 own: d=0 -> 1, d=1 -> 1/2 (D0 kept half the time), d>=2 -> 0;
    # q2: C first -> 1; q3, q4: another query's failing snippet first -> 0.
    assert an.density_ablation(REPORT) == {
        "d": [0, 1, 2, 3, 4],
        "expected_exec1": [0.5, 0.375, 0.25, 0.25, 0.25],
        "n_queries": [4, 4, 4, 4, 4],
        "n_undecided": [0, 0, 0, 0, 0],
    }


def test_density_ablation_undecided() -> None:
    # the top holds only two of three own distractors: with d <= 1 every ranked snippet may be
    # removed, so the top cannot tell what would be first; with d = 2 one of them stays.
    own = [("off_by_one", 0.9, 1), ("off_by_one", 0.8, 1), ("off_by_one", 0.1, 1)]
    short = make_query("q5", ["D0", "D1"], own)
    result = an.density_ablation(make_report([Q2, short]))
    assert result["n_undecided"] == [1, 1, 0, 0, 0]
    assert result["n_queries"] == [1, 1, 2, 2, 2]
    assert result["expected_exec1"] == [1.0, 1.0, 0.5, 0.5, 0.5]


def test_density_ablation_rejects_inconsistent_report() -> None:
    bad = make_query("q5", ["D0", "C"], [("off_by_one", 0.9, 1)])
    bad["own_distractors"] = []
    with pytest.raises(ValueError, match="more own distractors"):
        an.density_ablation(make_report([bad]))


def test_edit_size() -> None:
    result = an.edit_size(REPORT)
    assert result["n_pairs"] == 5
    assert result["buckets"] == {
        "1": {"n_pairs": 1, "deception_rate": 1.0, "median_margin": -0.125},
        "2-3": {"n_pairs": 2, "deception_rate": 0.0, "median_margin": 0.1875},
        "4-8": {"n_pairs": 1, "deception_rate": 0.0, "median_margin": 0.25},
        "9+": {"n_pairs": 1, "deception_rate": 1.0, "median_margin": 0.0},
    }
    expected = sps.spearmanr([1, 2, 3, 10, 5], [-0.125, 0.25, 0.125, 0.0, 0.25]).statistic
    assert result["spearman_rho"] == pytest.approx(expected, abs=1e-6)


def test_edit_buckets_cover_all_sizes() -> None:
    for size in range(40):
        assert sum(b.contains(size) for b in an.EDIT_BUCKETS) == 1


def test_code_to_code() -> None:
    # items with alternatives: q1 and q3 (q2's similarities are ignored: no alternatives)
    result = an.code_to_code(REPORT)
    assert result is not None
    assert result["n_items"] == 2
    assert (result["n_equivalent_pairs"], result["n_mutant_pairs"]) == (3, 3)
    # equivalent [0.9, 0.8, 0.6] vs mutant [0.95, 0.7, 0.5]: 5 of 9 pairs ordered correctly
    assert result["auc"] == pytest.approx(5 / 9, abs=1e-6)
    # 75th percentile of the equivalents is 0.85; only 0.95 is above it
    assert result["false_high_rate"] == pytest.approx(1 / 3, abs=1e-6)
    assert result["js_divergence"] == pytest.approx(
        js_divergence([0.9, 0.8, 0.6], [0.95, 0.7, 0.5]), abs=1e-6
    )
    assert (result["median_equivalent"], result["median_mutant"]) == (0.8, 0.7)


def test_code_to_code_inverted_embedding_is_below_half() -> None:
    sim = {"alternatives": [0.5, 0.6], "distractors": [0.9, 0.95]}
    result = an.code_to_code(make_report([make_query("q", ["C"], code_similarity=sim)]))
    assert result["auc"] == 0.0
    assert result["false_high_rate"] == 1.0


def test_no_data_sections() -> None:
    legacy = make_query("q1", ["O", "C"])
    del legacy["own_distractors"], legacy["code_similarity"]
    result = an.analyses(make_report([legacy, Q4]))
    assert result["code_to_code"] is None
    assert result["deception"] == {
        "overall": {
            "n_queries": 0,
            "n_pairs": 0,
            "pair_rate": None,
            "query_rate": None,
            "median_margin": None,
        },
        "by_operator": {},
    }
    assert result["per_operator"] == {}
    assert result["edit_size"]["spearman_rho"] is None
    assert result["density_ablation"]["n_undecided"] == [1] * 5  # legacy row: no own data
    assert result["rank1_miss_attribution"]["own_distractor_share"] == 0.0


def test_analyses_sections_and_json() -> None:
    result = an.analyses(REPORT)
    assert set(result) == {
        "embedder",
        "n_queries",
        "per_domain",
        "per_operator",
        "deception",
        "rank1_miss_attribution",
        "density_ablation",
        "edit_size",
        "code_to_code",
        "per_class",
    }
    assert json.loads(json.dumps(result, allow_nan=False)) == result
    assert an.analyses(REPORT) == result


def test_operator_order() -> None:
    assert an.operator_order(["zz", *reversed(OPERATOR_CLASSES), "aa"]) == [
        *OPERATOR_CLASSES,
        "aa",
        "zz",
    ]


# --- properties ----------------------------------------------------------------------------

RATE_KEYS = {
    "exec@1",
    "exec@10",
    "rank1_capture",
    "pair_rate",
    "query_rate",
    "own_distractor_share",
    "deception_rate",
    "auc",
    "false_high_rate",
    "js_divergence",
    "expected_exec1",
}


def _rates(node: object, key: str = "") -> list[float]:
    if isinstance(node, dict):
        return [x for k, v in node.items() for x in _rates(v, k)]
    if isinstance(node, list):
        return [x for v in node for x in _rates(v, key)]
    return [node] if key in RATE_KEYS and node is not None else []


@st.composite
def queries(draw: st.DrawFn, qid: str) -> dict:
    """A query whose own distractors (0..4) all sit in its top 10."""
    n_own = draw(st.integers(0, 4))
    own = [
        (draw(st.sampled_from(CORE_CLASSES)), draw(st.floats(0, 1)), draw(st.integers(1, 20)))
        for _ in range(n_own)
    ]
    n_other = draw(st.integers(0 if n_own else 1, 10 - n_own - 1))
    tokens = [f"D{j}" for j in range(n_own)]
    tokens += [draw(st.sampled_from(["O", "OD", "OP"])) for _ in range(n_other)]
    if draw(st.booleans()):
        tokens.append("C")
    ranking = draw(st.permutations(tokens))
    alternatives = draw(st.lists(st.floats(-1, 1), max_size=3))
    distractors = draw(st.lists(st.floats(-1, 1), min_size=n_own, max_size=n_own))
    return make_query(
        qid,
        ranking,
        own,
        domain=draw(st.sampled_from(["a", "b"])),
        canonical_score=draw(st.floats(0, 1)),
        code_similarity={"alternatives": alternatives, "distractors": distractors},
    )


@st.composite
def reports(draw: st.DrawFn) -> dict:
    n = draw(st.integers(1, 8))
    return make_report([draw(queries(f"q{i}")) for i in range(n)])


@FAST
@given(reports())
def test_rates_in_unit_interval(report: dict) -> None:
    result = an.analyses(report)
    assert all(0.0 <= x <= 1.0 for x in _rates(result))
    rho = result["edit_size"]["spearman_rho"]
    assert rho is None or -1.0 <= rho <= 1.0
    json.dumps(result, allow_nan=False)


@FAST
@given(reports())
def test_density_at_full_keep_equals_exec1(report: dict) -> None:
    # every query has <= 4 own distractors, all in its top 10: d = 4 keeps the actual pool
    dens = an.density_ablation(report)
    exec1 = [
        query_metrics([h["passes"] for h in q["top"]], q["canonical_rank"])["exec@1"]
        for q in report["per_query"]
    ]
    assert dens["n_undecided"][-1] == 0
    assert dens["expected_exec1"][-1] == pytest.approx(sum(exec1) / len(exec1), abs=1e-6)
    # removing own distractors never hurts exec@1 (they fail)
    values = dens["expected_exec1"]
    decided = [v for v, u in zip(values, dens["n_undecided"]) if u == 0]
    assert decided == sorted(decided, reverse=True)


def _real_bug_query(qid: str, real: float, mutants: Sequence[float], top: list[dict]) -> dict:
    """A per_query row whose canonical scores 0.5, with a real bug and mutants of its own."""
    own = [
        {"snippet_id": f"{qid}-m{i}", "operator": "off_by_one", "score": s}
        | {"edit_lines": 1, "edit_chars": 1, "kill": "assertion"}
        for i, s in enumerate(mutants)
    ]
    own.append(
        {"snippet_id": f"{qid}-rb", "operator": "other", "score": real, "kind": "real_bug"}
        | {"edit_lines": 1, "edit_chars": 3, "kill": "assertion"}
    )
    return {
        "query_id": qid,
        "domain": "d",
        "passed": top[0]["passes"],
        "canonical_rank": 1,
        "canonical_score": 0.5,
        "top": top,
        "own_distractors": own,
    }


def _hit(rank: int, kind: str, score: float, passes: bool, qid: str) -> dict:
    op = {"canonical": None, "real_bug": "other"}.get(kind, "off_by_one")
    return {"rank": rank, "snippet_id": f"{qid}{rank}", "kind": kind, "operator": op} | {
        "query_id": qid,
        "score": score,
        "passes": passes,
    }


def test_real_bug_deception_beside_the_same_queries_mutants():
    """q1: the real bug ties the fix (deceived) and is ranked first; one of its two mutants is
    above. q2: the real bug is below the fix, both mutants above. The mutants' own analyses
    never count the real bug."""
    q1 = _real_bug_query(
        "q1",
        0.5,
        [0.6, 0.1],
        [_hit(1, "real_bug", 0.7, False, "q1"), _hit(2, "canonical", 0.5, True, "q1")],
    )
    q2 = _real_bug_query(
        "q2",
        0.2,
        [0.9, 0.8],
        [_hit(1, "canonical", 0.5, True, "q2"), _hit(2, "real_bug", 0.2, False, "q2")],
    )
    report = {"embedder": {"name": "x"}, "per_query": [q1, q2]}
    section = an.real_bugs(report)
    assert section is not None
    assert (section["n_pairs"], section["n_paired"]) == (2, 2)
    assert section["real_bug_deception"] == 0.5
    assert section["mutant_deception"] == 0.75  # (1/2 + 2/2) / 2
    assert section["difference"] == -0.25
    assert section["p_value"] == 1.0  # two sign flips of +0.5 and -1.0
    assert set(section["by_pattern"]) == {"other"}
    assert section["exec@1"] == {"with_real_bugs": 0.5, "mutants_only": 1.0, "n_undecided": 0}
    assert an.deception(report)["overall"]["n_pairs"] == 4  # mutants only
    assert an.rank1_miss_attribution(report)["own_real_bug"] == 1
    assert an.real_bugs({"embedder": {}, "per_query": [make_query("q", ["C"])]}) is None


def test_a_real_bug_without_a_pattern_counts_as_other():
    q = _real_bug_query("q", 0.9, [], [_hit(1, "real_bug", 0.9, False, "q")])
    q["own_distractors"][-1]["operator"] = None
    section = an.real_bugs({"embedder": {}, "per_query": [q]})
    assert section is not None and section["by_pattern"]["other"]["n_pairs"] == 1
