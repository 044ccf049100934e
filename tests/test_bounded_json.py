"""Every JSON read from a user is bounded: depth, size and type, a usage error otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_runs import bench

from pytest_execretrieval import bounded_json
from pytest_execretrieval.bounded_json import JSONBoundError, parse_json, read_json
from pytest_execretrieval.model_card import CARD, CardError, read_card
from pytest_execretrieval.scoring.compare import ReportError, load_report

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_deep_text_past_the_interpreter_stack_is_a_bound_error():
    with pytest.raises(JSONBoundError, match="nested deeper than the 64 levels allowed"):
        parse_json(DEEP, "deep.json", expect=list)


def test_a_depth_within_the_stack_but_over_the_bound_is_refused():
    text = "[" * 65 + "]" * 65
    with pytest.raises(JSONBoundError, match="deep.json: JSON nested deeper than the 64"):
        parse_json(text, "deep.json", expect=list)
    assert parse_json("[" * 64 + "]" * 64, "ok", expect=list)


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"x": "a" * 100}))
    with pytest.raises(JSONBoundError, match=r"big.json: larger than the 50 bytes allowed"):
        read_json(path, max_bytes=50)


def test_the_wrong_top_level_type_is_refused(tmp_path):
    with pytest.raises(JSONBoundError, match="a JSON array where a JSON object is expected"):
        parse_json("[1]", "x.json")


def test_a_report_too_deep_too_big_or_of_the_wrong_type_is_a_report_error(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    for text, message in [(DEEP, "nested deeper"), ("[1, 2]", "a JSON array where a JSON object")]:
        path.write_text(text)
        with pytest.raises(ReportError, match=message):
            load_report(path)
    path.write_text('{"schema_version": 2, "pad": "' + "a" * 200 + '"}')
    monkeypatch.setattr(bounded_json, "MAX_BYTES", 100)
    with pytest.raises(ReportError, match="r.json: larger than the 100 bytes allowed"):
        load_report(path)


def test_a_deep_model_card_is_a_card_error(tmp_path):
    (tmp_path / CARD).write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    with pytest.raises(CardError, match="nested deeper"):
        read_card(tmp_path)
    (tmp_path / CARD).write_text("[]")
    with pytest.raises(CardError, match="a JSON array where a JSON object"):
        read_card(tmp_path)


def test_a_100000_deep_baseline_is_a_usage_error_naming_the_file(pytester, items):
    baseline = pytester.path / "deep.json"
    baseline.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    result = bench(pytester, items, f"--execretrieval-baseline={baseline}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"{baseline}: JSON nested deeper than the 64 levels allowed" in err
    assert "INTERNALERROR" not in err + result.stdout.str()


def test_handoff_of_the_wrong_shape_is_a_setup_error():
    from pytest_execretrieval.corpus.store import CorpusVariant
    from pytest_execretrieval.orchestration import Handoff, SetupError

    with pytest.raises(SetupError, match="handoff: JSON nested deeper"):
        Handoff.from_text(DEEP, Path("."), CorpusVariant())
