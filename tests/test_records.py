"""The records at the bottom: one JSON form, the report's row, read back unchanged."""

from __future__ import annotations

import dataclasses
import json

from pytest_execretrieval.records import (
    BenchmarkRun,
    Hit,
    OwnDistractorRow,
    QueryResult,
    ReportRow,
    TieGroup,
)


def result() -> QueryResult:
    hits = (
        Hit(1, "a", "distractor", "off_by_one", "q/x", 0.9, False, (1, 0.5, 0.9)),
        Hit(2, "b", "canonical", None, "q/x", 0.8, True),
    )
    own = OwnDistractorRow(
        snippet_id="a",
        operator="off_by_one",
        score=0.9,
        edit_lines=1,
        edit_chars=2,
        kill="assertion",
    )
    return QueryResult(
        "q/x",
        "strings",
        False,
        2,
        0.8,
        hits,
        ("pass", "fail"),
        (own,),
        {"alternatives": [0.7], "distractors": [0.95]},
        TieGroup(size=1, passing=0),
        {"size": 1, "passing": 1},
        {"first": 2, "last": 2},
    )


def test_a_query_result_reads_back_from_its_json():
    r = result()
    row = json.loads(json.dumps(r.to_json()))
    assert QueryResult.from_json(row) == r
    run = BenchmarkRun({"name": "m", "dim": 3}, "sha", 2, {"q/x": r}, 0.5)
    assert BenchmarkRun.from_json(json.loads(json.dumps(run.to_json()))) == run
    background = {"sources": ["repo"], "n_snippets": 4}
    run = dataclasses.replace(run, background=background)
    assert BenchmarkRun.from_json(json.loads(json.dumps(run.to_json()))) == run


def test_the_report_row_is_the_json_without_the_rank1_outcomes():
    row = result().to_json(rank1_outcomes=False)
    keys = ReportRow.__required_keys__ | ReportRow.__optional_keys__
    # The key order every schema-2 report was written in.
    order = "query_id domain passed canonical_rank canonical_score rank1_tie tail_tie"
    order += " canonical_tie top own_distractors code_similarity"
    assert list(row) == order.split()
    # a run's own JSON; a background pool's; a mined item's
    optional = {"rank1_outcomes", "background_above", "background_nearest", "source"}
    assert set(row) == keys - optional
    with_background = dataclasses.replace(result(), background_above=3).to_json(False)
    assert list(with_background) == [*order.split(), "background_above"]
    assert QueryResult.from_json(with_background).background_above == 3
    assert row["top"][0]["tie_key"] == [1, 0.5, 0.9] and "tie_key" not in row["top"][1]
    # A report row reads back too (without outcomes: reports do not carry them).
    assert QueryResult.from_json(row).rank1_outcomes == ()
