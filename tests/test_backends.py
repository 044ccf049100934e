"""Runtime backends (embedders/backends.py, embedders/onnx_export.py) with the packaged MiniLM on
a sample of the bundled pool: the ONNX Runtime and OpenVINO float32 exports give torch's
vectors, int8 gives close ones; the export is cached by content, and a corrupted one is
exported again; what cannot be served says why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_execretrieval.corpus.items import bundled_items_dir, load_items
from pytest_execretrieval.corpus.store import read_corpus
from pytest_execretrieval.embedders import DenseEncoder, EmbedderOptions, contract, get_embedder
from pytest_execretrieval.embedders.backends import BACKENDS, BackendError, served
from pytest_execretrieval.embedders.onnx_export import MANIFEST, MODEL_FILE

os.environ.setdefault("HF_HUB_OFFLINE", "1")

QUERIES = 6  # items of the sample: their queries, canonicals and distractors
LONG = "def long(x):\n" + "    x = x + 1\n" * 300  # past MiniLM's 256 tokens: truncation


@pytest.fixture(scope="module")
def sample() -> tuple[list[str], list[str], list[int]]:
    """The queries of every 100th item, the documents of their pools (and one long text), and
    each query's canonical document."""
    snippets = sorted(read_corpus(bundled_items_dir()).snippets, key=lambda s: s.snippet_id)
    chosen = sorted({s.query_id for s in snippets})[::100][:QUERIES]
    docs = [s for s in snippets if s.query_id in chosen]
    canonical = {s.query_id: i for i, s in enumerate(docs) if s.kind == "canonical"}
    items = {i.id: i for i in load_items(bundled_items_dir())[0]}
    return (
        [items[q].query for q in chosen],
        [s.code for s in docs] + [LONG],
        [canonical[q] for q in chosen],
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("backends-cache")


@pytest.fixture(scope="module")
def minilm(cache):
    return get_embedder("minilm", EmbedderOptions(cache_dir=str(cache)))


@pytest.fixture(scope="module")
def torch_vectors(minilm, sample) -> tuple[np.ndarray, np.ndarray]:
    queries, docs, _ = sample
    return minilm.encode(queries, "query", []), minilm.encode(docs, "document", [])


@pytest.fixture(scope="module")
def vectors(minilm, sample) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    queries, docs, _ = sample
    found = {}
    for backend in BACKENDS:
        encoder = served(minilm, backend)
        found[backend] = encoder.encode(queries, "query", []), encoder.encode(docs, "document", [])
    return found


@pytest.fixture(scope="module")
def shuffled_encoder(minilm):
    return served(minilm, "onnx")


def rank1(queries: np.ndarray, docs: np.ndarray) -> list[int]:
    return np.argmax(queries @ docs.T, axis=1).tolist()


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_float32_backends_give_torchs_vectors(backend, vectors, torch_vectors):
    (queries, docs), (torch_queries, torch_docs) = vectors[backend], torch_vectors
    cosines = np.concatenate([(queries * torch_queries).sum(1), (docs * torch_docs).sum(1)])
    assert cosines.min() >= 0.999
    assert rank1(queries, docs) == rank1(torch_queries, torch_docs)
    assert np.allclose(np.linalg.norm(docs, axis=1), 1, atol=1e-5)


def test_int8_is_close_to_torch_but_not_identical(vectors, torch_vectors, sample):
    (queries, docs), (torch_queries, torch_docs) = vectors["onnx-int8"], torch_vectors
    cosines = np.concatenate([(queries * torch_queries).sum(1), (docs * torch_docs).sum(1)])
    assert np.median(cosines) >= 0.98 and cosines.max() < 0.9999
    # the canonical is still found for most queries
    found = np.mean(np.array(rank1(queries, docs)) == np.array(sample[2]))
    torch_found = np.mean(np.array(rank1(torch_queries, torch_docs)) == np.array(sample[2]))
    assert found >= torch_found - 0.25


@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_texts_vector_does_not_depend_on_its_batch(shuffled_encoder, sample, vectors, data):
    """Batches are length-sorted and scattered back: any order and batch size gives each text
    the same vector."""
    docs = sample[1][-12:]
    order = data.draw(st.permutations(range(len(docs))))
    encoder = shuffled_encoder
    encoder.batch_size = data.draw(st.integers(1, 9))
    again = encoder.encode([docs[i] for i in order], "document", [])
    np.testing.assert_allclose(again, vectors["onnx"][1][-12:][order], atol=1e-5)


def test_batches_hold_texts_of_equal_tokens(minilm):
    """Batched by tokens, not characters: no batch pads a row where batching by characters
    would put a text of 3 tokens beside one of 22 in each batch."""
    encoder = served(minilm, "onnx")
    encoder.batch_size = 2
    widths: list[list[int]] = []
    session, tokenizer = encoder._load()
    encoder._session = lambda inputs: (
        widths.append(inputs["attention_mask"].sum(axis=1).tolist()) or session(inputs)
    )
    letters = "abcdefghijklmnopqrst"
    texts = ["x" + " " * 70, "  ".join(letters), "y" + " " * 45, " ".join(letters)]
    assert [len(t) for t in texts] == sorted((len(t) for t in texts), reverse=True)
    tokens = [len(tokenizer.encode(t).ids) for t in texts]
    assert tokens[0] == tokens[2] < tokens[1] == tokens[3]  # by characters: mixed batches
    encoder.encode(texts, "document", [])
    assert all(len(set(row)) == 1 for row in widths), widths
    assert sorted(w for row in widths for w in row) == sorted(tokens)


def export_dir(encoder) -> Path:
    return Path(encoder.export.directory)


def test_the_export_is_cached_and_the_invocation_stable(minilm, vectors):
    first = served(minilm, "onnx")
    model = export_dir(first) / MODEL_FILE
    written = model.stat().st_mtime_ns
    again = served(get_embedder("minilm", minilm.options), "onnx")
    assert again.invocation() == first.invocation() == first.invocation()
    assert export_dir(again) == export_dir(first) and model.stat().st_mtime_ns == written


def test_invocations_name_backend_runtime_and_file(minilm):
    base = minilm.invocation()
    invocations = {backend: served(minilm, backend).invocation() for backend in BACKENDS}
    for backend, invocation in invocations.items():
        assert {k: invocation[k] for k in base} == base
        assert invocation["backend"] == backend and len(invocation["model_file_sha256"]) == 64
    assert invocations["onnx"]["runtime"].startswith("onnxruntime ")
    assert invocations["openvino"]["runtime"].startswith("openvino ")
    # OpenVINO reads the float32 ONNX file; int8 is a file of its own
    assert invocations["openvino"]["model_file_sha256"] == invocations["onnx"]["model_file_sha256"]
    assert invocations["onnx-int8"]["model_file_sha256"] != invocations["onnx"]["model_file_sha256"]
    assert len({json.dumps(i, sort_keys=True) for i in invocations.values()}) == len(BACKENDS)
    encoder = served(minilm, "onnx-int8")
    assert encoder.name == "minilm+onnx-int8" and contract(encoder) is DenseEncoder


@pytest.mark.parametrize("damage", ["model", "manifest"])
def test_a_damaged_export_is_exported_again(minilm, sample, vectors, damage):
    encoder = served(minilm, "onnx")
    directory = export_dir(encoder)
    sha = encoder.invocation()["model_file_sha256"]
    if damage == "model":  # a flipped byte in the weights
        with open(directory / MODEL_FILE, "r+b") as f:
            f.seek(-100, os.SEEK_END)
            byte = f.read(1)
            f.seek(-100, os.SEEK_END)
            f.write(bytes([byte[0] ^ 0xFF]))
    else:  # a partial write of the manifest
        (directory / MANIFEST).write_bytes((directory / MANIFEST).read_bytes()[:40])
    damaged = (directory / MODEL_FILE).stat().st_mtime_ns
    redone = served(get_embedder("minilm", minilm.options), "onnx")
    assert redone.invocation()["model_file_sha256"] == sha
    assert (export_dir(redone) / MODEL_FILE).stat().st_mtime_ns != damaged
    np.testing.assert_allclose(
        redone.encode(sample[1][:4], "document", []), vectors["onnx"][1][:4], atol=1e-5
    )


@pytest.mark.parametrize("name", ["bm25", "e5-small", "voyage-code-3", "npz:frozen.npz"])
def test_what_is_not_a_local_sentence_transformers_model_is_refused(name):
    embedder = get_embedder(name)
    with pytest.raises(BackendError, match="serves local sentence-transformers models"):
        served(embedder, "onnx")


def test_an_unknown_backend_is_refused(minilm):
    with pytest.raises(BackendError, match="unknown backend 'tensorrt'; known: onnx"):
        served(minilm, "tensorrt")


@pytest.mark.parametrize(
    "backend, module, extra",
    [
        ("onnx", "onnxruntime", "onnx"),
        ("onnx-int8", "onnx", "onnx"),
        ("openvino", "openvino", "openvino"),
    ],
)
def test_a_missing_extra_is_named(minilm, monkeypatch, backend, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    with pytest.raises(BackendError, match=rf"needs {module}.*pytest-execretrieval\[{extra}\]"):
        served(minilm, backend)


def test_a_cached_export_serves_without_torch(minilm, vectors, sample, cache):
    """Once exported, a fresh process serves the model from the cache and never imports torch."""
    script = (
        "import sys, numpy as np\n"
        "from pytest_execretrieval.embedders import EmbedderOptions, get_embedder\n"
        "from pytest_execretrieval.embedders.backends import served\n"
        f"encoder = served(get_embedder('minilm', EmbedderOptions(cache_dir={str(cache)!r})), "
        "'onnx')\n"
        "encoder.invocation()\n"
        f"np.save(sys.argv[1], encoder.encode({sample[1][:3]!r}, 'document', []))\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    out = cache / "served.npy"
    subprocess.run([sys.executable, "-c", script, str(out)], check=True, timeout=300)
    np.testing.assert_allclose(np.load(out), vectors["onnx"][1][:3], atol=1e-5)
