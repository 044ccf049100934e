"""The query-blind controls (scoring/controls.py): the medoid of hand-built families whose answer
is known, tie-aware; the classifiers seeded and held out by domain (a held-out domain never
reaches a model, as labels or as vocabulary); the table a pool gets, and the flag a rerank
pipeline gets beside it; every report of a session carries them."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_runs import bench

from pytest_execretrieval.records import CANONICAL, DISTRACTOR
from pytest_execretrieval.reporting.controls_text import controls_flag_lines
from pytest_execretrieval.reporting.tables import query_blind_table
from pytest_execretrieval.scoring.analyses import analyses
from pytest_execretrieval.scoring.controls import (
    CONTROLS,
    ControlsError,
    Family,
    beside_controls,
    controls_table,
    families,
    held_out_folds,
    measure,
    medoid_values,
    pair_values,
    single_values,
)

BASE = "def f ( xs , n ) : total = 0 ; for x in xs : if x >= n : total = total + x ; return total"


def edit(code: str, position: int, token: str) -> str:
    """``code`` (space-separated tokens) with the token at ``position`` replaced."""
    tokens = code.split()
    tokens[position] = token
    return " ".join(tokens)


# One-token mutants of BASE at distinct places: each 1 edit from BASE, 2 from one another.
STAR = (BASE, edit(BASE, 19, ">"), edit(BASE, 15, "0"), edit(BASE, 25, "-"), edit(BASE, 28, "n"))


@dataclass(frozen=True)
class Row:
    snippet_id: str
    query_id: str
    kind: str
    code: str


def pool_of(found: list[Family]) -> list[Row]:
    return [
        Row(f"{f.query_id}-{j}", f.query_id, CANONICAL if j == 0 else DISTRACTOR, code)
        for f in found
        for j, code in enumerate(f.codes)
    ]


def test_the_canonical_at_the_centre_of_a_star_is_its_medoid():
    assert medoid_values([Family("d/q", "d", STAR)]) == [1.0]


def test_a_family_centred_on_a_wrong_member_names_that_member():
    wrong = edit(BASE, 19, ">")  # the canonical is one of its leaves
    leaves = (edit(wrong, 15, "0"), edit(wrong, 25, "-"), edit(wrong, 28, "n"))
    assert medoid_values([Family("d/q", "d", (BASE, wrong, *leaves))]) == [0.0]


def test_tied_medoids_share_the_credit():
    assert medoid_values([Family("d/q", "d", (BASE, edit(BASE, 19, ">")))]) == [0.5]
    # two centres, BASE and m, each with a leaf of its own: both 4 edits from the others
    m = edit(BASE, 19, ">")
    family = Family("d/q", "d", (BASE, m, edit(BASE, 15, "0"), edit(m, 25, "-")))
    assert medoid_values([family]) == [0.5]


def test_families_are_the_canonical_and_its_own_distractors_by_query():
    found = [Family("b/q2", "b", STAR[:3]), Family("a/q1", "a", STAR)]
    rows = [*pool_of(found), Row("lonely", "a/q3", CANONICAL, BASE)]
    assert families(rows) == sorted(found, key=lambda f: f.query_id)  # q3 has no distractor
    assert families(rows, ["b/q2"]) == [found[0]]
    with pytest.raises(ControlsError, match="two canonicals"):
        families([*rows, Row("again", "a/q1", CANONICAL, BASE)])


def stars(domains: dict[str, int]) -> list[Family]:
    """Star families per domain, the mutants' edits varied by the family's number."""
    found = []
    for domain, n in sorted(domains.items()):
        for i in range(n):
            canonical = edit(BASE, 7, f"{i}")
            codes = (
                canonical,
                edit(canonical, 19, ">" if i % 2 else "<"),
                edit(canonical, 28, "n"),
                edit(canonical, 25, "-" if i % 3 else "*"),
            )
            found.append(Family(f"{domain}/q{i}", domain, codes))
    return found


def test_the_table_of_a_pool_and_its_determinism():
    pool = pool_of(stars({"a": 4, "b": 3, "c": 3}))
    table = controls_table(pool, seed=7)
    assert table == controls_table(list(reversed(pool)), seed=7)  # order-free, seeded
    assert list(table["controls"]) == list(CONTROLS) and table["n_families"] == 10
    medoid = table["controls"]["family_medoid"]
    assert medoid["rate"] == 1.0 and medoid["chance"] == 0.25 and medoid["above_chance"] == 0.75
    pair = table["controls"]["pair_classifier"]
    assert pair["chance"] == 0.5 and pair["n"] == 30 and pair["folds"] == "domains"
    for figures in table["controls"].values():
        low, high = figures["ci95"]
        assert 0 <= low <= figures["rate"] <= high <= 1
    assert table["best"] == "family_medoid"
    assert json.loads(json.dumps(table)) == table
    assert controls_table([Row("x", "a/q", CANONICAL, BASE)]) == {
        "n_families": 0,
        "controls": {},
        "best": None,
    }


def test_the_classifiers_are_deterministic_under_the_seed():
    found = stars({"a": 5, "b": 5})
    for seed in (0, 3):
        assert pair_values(found, seed) == pair_values(found, seed)
        assert single_values(found, seed) == single_values(found, seed)
    # a single domain: seeded folds of families, which the seed chooses
    one = stars({"only": 9})
    how, folds = held_out_folds(one, seed=1)
    assert how == "queries" and folds == held_out_folds(one, seed=1)[1]
    assert sorted(i for fold in folds for i in fold) == list(range(9))
    assert folds != held_out_folds(one, seed=2)[1]


def test_a_single_family_gets_the_medoid_only():
    (only,) = measure([Family("d/q", "d", STAR)])
    assert only.name == "family_medoid"
    with pytest.raises(ControlsError):
        measure([])


@st.composite
def pools(draw: st.DrawFn) -> list[Family]:
    """Families in two to three domains: a canonical with one-token mutants of it."""
    found = []
    for domain in ("a", "b", "c")[: draw(st.integers(2, 3))]:
        for i in range(draw(st.integers(1, 3))):
            canonical = edit(BASE, 7, draw(st.sampled_from(["0", "1", "2", "7"])))
            spots = draw(st.lists(st.sampled_from([15, 19, 25, 28]), min_size=1, max_size=3))
            tokens = draw(st.lists(st.sampled_from(["<", ">", "-", "1", "n"]), min_size=3))
            mutants = {edit(canonical, s, t) for s, t in zip(spots, tokens)} - {canonical}
            if mutants:
                found.append(Family(f"{domain}/q{i}", domain, (canonical, *sorted(mutants))))
    return found


@settings(max_examples=30, deadline=None)
@given(pools(), st.data())
def test_a_held_out_domain_never_reaches_its_model(found, data):
    """Leave one domain out: a held-out family's predictions are the same whatever the rest of
    its domain holds (here: nothing), so neither its labels nor its features were trained on."""
    how, folds = held_out_folds(found)
    domains = sorted({f.domain for f in found})
    if len(domains) < 2:
        return
    assert how == "domains" and len(folds) == len(domains)
    for domain, held in zip(domains, folds):
        assert {found[i].domain for i in held} == {domain}
    target = data.draw(st.sampled_from(range(len(found))))
    alone = [f for i, f in enumerate(found) if i == target or f.domain != found[target].domain]
    if len({f.domain for f in alone}) < 2:
        return
    at = alone.index(found[target])
    assert single_values(found)[1][target] == single_values(alone)[1][at]
    starts = [sum(len(f.codes) - 1 for f in fs[:k]) for fs, k in ((found, target), (alone, at))]
    width = len(found[target].codes) - 1
    whole, cut = pair_values(found)[1], pair_values(alone)[1]
    assert whole[starts[0] : starts[0] + width] == cut[starts[1] : starts[1] + width]


def pipeline_report(exec1: float, ci: tuple[float, float], reranker: dict | None) -> dict:
    embedder = {"name": "bm25+x", **({"reranker": reranker} if reranker else {})}
    return {"embedder": embedder, "metrics": {"exec@1": exec1}, "ci95": {"exec@1": list(ci)}}


def test_a_pipeline_is_flagged_unless_above_the_best_controls_ci():
    table = controls_table(pool_of(stars({"a": 4, "b": 4})))
    high = table["controls"]["family_medoid"]["ci95"][1]
    assert beside_controls(pipeline_report(0.5, (0.4, 0.6), None), table) is None
    medoid = {"name": "medoid", "set_aware": True}
    low = beside_controls(pipeline_report(0.5, (0.4, 0.6), medoid), table)
    assert low is not None and not low["beats_controls"] and low["best_control"] == "family_medoid"
    assert low["set_aware"]
    rrf = {"name": "rrf:a+b", "set_aware": False}
    assert not beside_controls(pipeline_report(high, (0.9, 1.0), rrf), table)["set_aware"]
    third_party = {"name": "theirs"}  # says nothing: handed the candidates together
    assert beside_controls(pipeline_report(0.5, (0.4, 0.6), third_party), table)["set_aware"]


def test_report_analyses_summary_and_flag_line_show_the_controls():
    table = controls_table(pool_of(stars({"a": 4, "b": 4})))
    report = {
        **pipeline_report(0.5, (0.4, 0.6), {"name": "medoid", "set_aware": True}),
        "per_query": [],
    }
    report["analyses"] = analyses(report, table)
    section = report["analyses"]["controls"]
    assert section["controls"] == table["controls"] and not section["pipeline"]["beats_controls"]
    shown = query_blind_table(["bm25+medoid"], [report["analyses"]])
    assert shown is not None and len(shown.rows) == len(CONTROLS) + 1
    assert "does not beat" in shown.rows[-1][-1]
    (line,) = controls_flag_lines({"bm25+medoid": report})
    assert line.startswith("controls [bm25+medoid]: exec@1 0.500 does not beat the query-blind")
    assert "controls" not in analyses(report)  # a report read back without its pool


def test_every_report_of_a_session_carries_the_controls(pytester, items):
    result = bench(
        pytester, items, "--execretrieval-rerank", "medoid", "--execretrieval-report-dir=r"
    )
    assert result.ret in (0, 1), result.stdout.str()
    first = json.loads((pytester.path / "r" / "bm25.json").read_text())
    pipe = json.loads((pytester.path / "r" / "bm25_medoid.json").read_text())
    assert first["analyses"]["controls"]["controls"] == pipe["analyses"]["controls"]["controls"]
    assert set(first["analyses"]["controls"]["controls"]) == set(CONTROLS)
    assert "pipeline" not in first["analyses"]["controls"]  # a pointwise embedder: no flag
    beside = pipe["analyses"]["controls"]["pipeline"]
    assert beside["set_aware"] and beside["reranker"] == "medoid"
    summary = (pytester.path / "r" / "summary.md").read_text()
    assert "## Query-blind controls" in summary and "bm25+medoid (exec@1, set-aware)" in summary
    flagged = "controls [bm25+medoid]: exec@1" in result.stdout.str()
    assert flagged == (not beside["beats_controls"])
