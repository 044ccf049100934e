"""The two embedder contracts (dense encoder, lexical scorer): what satisfies which, what the
registry refuses and why, and that plug-ins of either kind rank through the same retrieval path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import fake_embedders
import numpy as np
import pytest

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.build import engine
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import read_corpus
from pytest_execretrieval.embedders import (
    BUILTIN,
    DenseEncoder,
    EmbedderError,
    LexicalScorer,
    contract,
    extra_factories,
    get_embedder,
    known_names,
    members,
    require_dense,
    usability,
)
from pytest_execretrieval.ranking.benchmark import rank_pool
from pytest_execretrieval.ranking.retrieval import retrieve

DATA = Path(__file__).parent / "data" / "items"
COMMON = ("name", "invocation", "check_usable", "close")


@pytest.fixture
def plugins(tmp_path, monkeypatch) -> Path:
    """The fake embedder package installed in this process (entry points included)."""
    root = fake_embedders.install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    return root


def test_contract_members():
    assert members(DenseEncoder) == (*COMMON, "encode")
    assert members(LexicalScorer) == (*COMMON, "score")


@pytest.mark.parametrize("protocol", [DenseEncoder, LexicalScorer])
def test_members_are_exactly_what_isinstance_checks(protocol):
    """``members`` (which the registry's messages name) and the protocol's own runtime check
    agree: all members make an instance, any one missing does not."""

    def with_members(names):
        return type("Obj", (), {n: ("x" if n == "name" else lambda self: None) for n in names})()

    assert isinstance(with_members(members(protocol)), protocol)
    assert contract(with_members(members(protocol))) is protocol
    for dropped in members(protocol):
        partial = with_members([m for m in members(protocol) if m != dropped])
        assert not isinstance(partial, protocol), dropped
        with pytest.raises(EmbedderError, match="satisfies neither embedder contract"):
            contract(partial)


def test_every_builtin_satisfies_one_contract():
    kinds = {name: contract(get_embedder(name)) for name in [*BUILTIN, *extra_factories()]}
    assert kinds.pop("bm25") is LexicalScorer
    assert set(kinds.values()) == {DenseEncoder}, kinds


def test_plugins_of_either_contract_are_accepted(plugins):
    assert {"fake-dense", "fake-lexical"} <= set(known_names())
    assert contract(get_embedder("fake-dense")) is DenseEncoder
    assert contract(get_embedder("fake-lexical")) is LexicalScorer
    assert usability("fake-dense") is None and usability("fake-lexical") is None


def test_a_plugin_satisfying_neither_is_refused_naming_what_is_missing(plugins):
    with pytest.raises(EmbedderError) as err:
        get_embedder("fake-half")
    assert str(err.value) == (
        "embedder 'fake-half': fake_embedders.Half satisfies neither embedder contract: as a "
        "dense encoder it lacks close(), encode(); as a lexical scorer it lacks close(), score() "
        "(see pytest_execretrieval.embedders.DenseEncoder and LexicalScorer)"
    )
    assert "satisfies neither" in usability("fake-half")  # what `execretrieval embedders` shows


def test_a_plugin_with_both_encode_and_score_is_refused(plugins):
    with pytest.raises(EmbedderError, match=r"fake-both.*has both encode\(\) and score\(\)"):
        get_embedder("fake-both")


def test_a_name_must_be_a_non_empty_string():
    nameless = fake_embedders.FakeDense(None)
    nameless.name = ""
    with pytest.raises(EmbedderError, match=r"lacks name \(a non-empty str\)"):
        contract(nameless)


def test_retrieve_ranks_dense_and_lexical_alike():
    queries = ["add two numbers", "reverse a list", "count the vowels", "sum of squares"]
    documents = [
        "def add(a, b): return a + b",
        "def rev(xs): return xs[::-1]",
        "def vowels(s): return sum(c in 'aeiou' for c in s)",
        "add numbers two",
        "a list reversed",
        "squares sum of",
    ]
    args = (
        queries,
        ["q1", "q2", "q3", "q4"],
        documents,
        [f"d{i}" for i in range(6)],
        [0, 1, 2, 5],
        3,
        [[3], [4], [], [0]],
    )
    dense = fake_embedders.FakeDense(None)
    by_vectors = retrieve(dense, *args)
    by_rows = retrieve(fake_embedders.FakeLexical(None), *args)
    assert dense.encoded == [("document", 6), ("query", 4)]
    assert by_vectors.document_vectors.shape == (6, fake_embedders.DIM)
    assert by_rows.document_vectors is None
    for field in (
        "indices",
        "scores",
        "target_rank",
        "target_score",
        "target_above",
        "target_ties",
        "tail_ties",
    ):
        assert np.array_equal(getattr(by_vectors.ranking, field), getattr(by_rows.ranking, field))
    assert by_vectors.ranking.watched == by_rows.ranking.watched
    assert by_vectors.ranking.target_rank.tolist() != [1, 1, 1, 1]  # not trivially equal
    with pytest.raises(EmbedderError, match="satisfies neither"):
        retrieve(fake_embedders.Half(None), *args)


def test_rank_pool_caches_dense_vectors_only(tmp_path):
    items, _ = load_items(DATA)
    corpus = read_corpus(DATA, engine())
    pool = sorted(corpus.snippets, key=lambda s: s.snippet_id)
    position = {s.snippet_id: i for i, s in enumerate(pool)}
    targets = [
        position[s.snippet_id]
        for item in items
        for s in pool
        if s.query_id == item.id and s.kind == "canonical"
    ]
    watch = [[] for _ in items]
    alternatives = sorted(corpus.alternatives, key=lambda s: s.snippet_id)
    assert alternatives, "the test data needs alternatives for the code-similarity check"
    dense, lexical = fake_embedders.FakeDense(None), fake_embedders.FakeLexical(None)
    by_vectors = rank_pool(dense, items, pool, targets, watch, alternatives, tmp_path / "a")
    by_rows = rank_pool(lexical, items, pool, targets, watch, alternatives, tmp_path / "b")
    assert np.array_equal(by_vectors.ranking.indices, by_rows.ranking.indices)
    assert by_vectors.code_similarity and by_rows.code_similarity == {}
    assert (tmp_path / "a" / "embeddings").is_dir() and not (tmp_path / "b").exists()
    again = fake_embedders.FakeDense(None)
    rank_pool(again, items, pool, targets, watch, alternatives, tmp_path / "a")
    assert again.encoded == []  # everything came from the cache


def test_pytest_runs_dense_and_lexical_plugins_to_the_same_report(
    pytester, items, tmp_path, monkeypatch
):
    """End to end: both fakes registered through installed entry points, one session."""
    site = fake_embedders.install(tmp_path / "site")
    path = [str(site), str(Path(fake_embedders.__file__).parent), os.environ.get("PYTHONPATH")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path if p))
    result = pytester.runpytest_subprocess(
        "--embedder",
        "fake-dense",
        "--embedder",
        "fake-lexical",
        "--execretrieval-items",
        str(items),
        "--execretrieval-cache-dir",
        str(pytester.path / "cache"),
        "--execretrieval-code-similarity",
        "--execretrieval-report-dir=reports",
        "-p",
        "no:randomly",
    )
    assert result.ret in (0, 1), result.stderr.str()
    dense, lexical = (
        json.loads((pytester.path / "reports" / f"{n}.json").read_text())
        for n in ("fake-dense", "fake-lexical")
    )
    assert dense["metrics"] == lexical["metrics"]
    strip = [{k: v for k, v in q.items() if k != "code_similarity"} for q in dense["per_query"]]
    assert strip == [
        {k: v for k, v in q.items() if k != "code_similarity"} for q in lexical["per_query"]
    ]
    assert any(q["code_similarity"]["alternatives"] for q in dense["per_query"])
    assert not any(q.get("code_similarity", {}).get("alternatives") for q in lexical["per_query"])

    refused = pytester.runpytest_subprocess(
        "--embedder",
        "fake-half",
        "--execretrieval-items",
        str(items),
        "--execretrieval-cache-dir",
        str(pytester.path / "cache"),
    )
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        [
            "*--embedder fake-half: embedder 'fake-half': *Half satisfies neither embedder "
            "contract*lacks close(), encode()*"
        ]
    )


def test_embed_command_refuses_a_lexical_scorer(tmp_path, capsys):
    out = tmp_path / "bm25.npz"
    assert (
        cli.main(
            [
                "embed",
                str(DATA),
                "--embedder",
                "bm25",
                "--out",
                str(out),
                "--cache-dir",
                str(tmp_path / "cache"),
            ]
        )
        == 2
    )
    assert "freezing vectors needs a dense encoder, and 'bm25' is a lexical scorer" in (
        capsys.readouterr().err
    )
    assert not out.exists()
    with pytest.raises(EmbedderError, match="a lexical scorer"):
        require_dense(get_embedder("bm25"), "this")
