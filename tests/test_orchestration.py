"""A whole benchmark session's work from plain Python, no pytest session: load, rank with BM25,
report, gate; and the errors a user must fix before a run."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_execretrieval.corpus.store import DEFAULT_VARIANT
from pytest_execretrieval.embedders import EmbedderOptions
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.orchestration import (
    Handoff,
    SetupError,
    build_reports,
    gate_reports,
    load,
    load_baseline,
    open_embedders,
    open_rerankers,
    rank,
)
from pytest_execretrieval.ranking.pipelines import expand
from pytest_execretrieval.ranking.rerank import RerankerContext
from pytest_execretrieval.scoring.gate import DEFAULT_GATE_METRICS
from pytest_execretrieval.settings import GateSettings

DATA = Path(__file__).parent / "data" / "items"


@pytest.fixture
def items(tmp_path) -> Path:
    shutil.copytree(DATA, tmp_path / "items")
    return tmp_path / "items"


def test_a_session_without_pytest(items, tmp_path):
    loaded = load(items, stale_ok=False)
    assert len(loaded.items) == 4 and loaded.stale == [] and not loaded.changed
    runs: dict = {}
    with SuiteRunner(cache_dir=tmp_path / "cache") as runner:
        embedders = open_embedders(["bm25"], EmbedderOptions(cache_dir=str(tmp_path / "cache")))
        rerankers = open_rerankers(
            ["exec-consensus"], RerankerContext(runner, tmp_path, ("bm25",), runs)
        )
        pipelines = expand(["bm25"], rerankers=["exec-consensus"])
        assert [p.name for p in pipelines] == ["bm25", "bm25+exec-consensus"]
        ranked = rank(
            loaded, embedders, rerankers, pipelines, 5, runner, tmp_path / "cache", False, runs
        )
    assert set(runs) == {"bm25", "bm25+exec-consensus"}
    assert set(ranked.rerank_info) == {"bm25+exec-consensus"} and ranked.encode_s >= 0
    ran = {name: sorted(run.results) for name, run in runs.items()}
    by_name = {p.name: p for p in pipelines}
    reports = build_reports(runs, ran, 1.0, 0, ranked.usage, by_name, ranked)
    assert reports["bm25"]["corpus"]["n_queries"] == 4
    assert reports["bm25+exec-consensus"]["first_stage"] == "bm25"
    assert "lift" in reports["bm25+exec-consensus"]
    # 4 queries cannot detect a drop of 0.10 (UNDERPOWERED): the power check is off here
    gate = GateSettings(DEFAULT_GATE_METRICS, None, max_detectable=1.0)
    assert gate_reports(reports, None, gate, 0) == {}  # no baseline, no minimum: no gate
    gates = gate_reports({"bm25": reports["bm25"]}, reports["bm25"], gate, 0)
    assert gates["bm25"].passed and reports["bm25"]["gate"]["passed"]
    assert reports["bm25"]["gate"]["decision"] == "PASS"
    # what xdist workers get: one JSON text, item paths rebuilt under the worker's items dir
    elsewhere = tmp_path / "elsewhere"
    text = Handoff(loaded, runs, frozenset({"strings/x"})).to_text()
    again = Handoff.from_text(json.loads(json.dumps(text)), elsewhere, DEFAULT_VARIANT)
    assert again.baseline_failed == {"strings/x"}
    assert again.runs["bm25"].to_json() == runs["bm25"].to_json()
    moved = [replace(item, path=elsewhere / item.path.relative_to(items)) for item in loaded.items]
    assert list(again.loaded.items) == moved and again.loaded.built
    assert again.loaded.corpus.snippets == loaded.corpus.snippets
    assert (again.loaded.stale, again.loaded.changed) == (loaded.stale, loaded.changed)


def test_a_changed_item_is_named_stale(items):
    path = items / "strings" / "count_vowels.toml"
    path.write_text(path.read_text().replace("Count the vowels", "Count vowels"))
    with pytest.raises(SetupError, match="the corpus in .* is stale") as raised:
        load(items, stale_ok=False)
    assert "strings/count_vowels" in str(raised.value)
    tolerated = load(items, stale_ok=True)  # verification goes on
    assert tolerated.changed == {"strings/count_vowels"}
    assert [r.kind for r in tolerated.stale] == ["item-changed"]


def test_an_unusable_embedder_or_reranker_stops_the_run_before_any_work(tmp_path):
    with pytest.raises(SetupError, match="--embedder nope: unknown embedder 'nope'"):
        open_embedders(["nope"], EmbedderOptions(cache_dir=str(tmp_path)))
    with pytest.raises(SetupError, match="--execretrieval-rerank=nope: unknown reranker"):
        open_rerankers(["nope"], RerankerContext())


def test_a_baseline_of_another_corpus_is_refused(items, tmp_path):
    loaded = load(items, stale_ok=False)
    runs: dict = {}
    with SuiteRunner(cache_dir=tmp_path / "cache") as runner:
        embedders = open_embedders(["bm25"], EmbedderOptions(cache_dir=str(tmp_path / "cache")))
        ranked = rank(
            loaded, embedders, {}, expand(["bm25"]), 10, runner, tmp_path / "cache", False, runs
        )
    report = build_reports(
        runs, {"bm25": sorted(runs["bm25"].results)}, 1.0, 0, ranked.usage, {}, ranked
    )["bm25"]
    path = tmp_path / "bm25.json"
    path.write_text(json.dumps(report))
    assert load_baseline(path, report["corpus"]["sha256"])["per_query"]
    with pytest.raises(SetupError, match="was made on corpus .*re-run the baseline model"):
        load_baseline(path, "0" * 64)
