"""The pipeline description (``ranking/pipelines.py``): names derived in one place, in the
stages' order, each stage optional; references (first stages) and the order of the runs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.ranking.index import parse_spec
from pytest_execretrieval.ranking.pipelines import STAGES, Pipeline, expand, schedule
from pytest_execretrieval.ranking.quantize import PRECISIONS, Quantization

HNSW = parse_spec("faiss:HNSW32,efSearch=64")
IVF = parse_spec("faiss:IVF16,Flat,nprobe=4")
INT8, D256 = Quantization("int8"), Quantization(dims=256)


def test_the_names_of_today_stay_and_stages_join_in_order():
    assert Pipeline("minilm").name == "minilm"
    assert Pipeline("minilm", index=HNSW).name == "minilm@faiss:HNSW32,efSearch=64"
    assert Pipeline("minilm", reranker="exec-consensus").name == "minilm+exec-consensus"
    assert Pipeline("minilm", backend="onnx").name == "minilm+onnx"
    assert Pipeline("minilm", quantize=INT8).name == "minilm~int8"
    assert Pipeline("minilm", quantize=D256).name == "minilm~d256"
    assert Pipeline("minilm", quantize=Quantization("binary-rescore", 128)).name == (
        "minilm~d128-binary-rescore"
    )
    every = Pipeline("e", backend="onnx", quantize=D256, index=HNSW, reranker="rrf")
    assert every.name == "e+onnx~d256@faiss:HNSW32,efSearch=64+rrf"
    assert every.stages == STAGES


def test_a_reference_is_the_pipeline_less_its_last_stage():
    every = Pipeline("e", backend="onnx", quantize=D256, index=HNSW, reranker="rrf")
    chain = []
    p: Pipeline | None = every
    while p is not None:
        chain.append(p.name)
        p = p.first_stage
    assert chain == [
        "e+onnx~d256@faiss:HNSW32,efSearch=64+rrf",
        "e+onnx~d256@faiss:HNSW32,efSearch=64",
        "e+onnx~d256",
        "e+onnx",
        "e",
    ]
    assert Pipeline("e", quantize=INT8).last_stage == "quantize"
    assert Pipeline("e").first_stage is None and Pipeline("e").encodes
    assert Pipeline("e", backend="onnx").encodes and not Pipeline("e", quantize=INT8).encodes


def test_expand_gives_each_embedder_its_pipelines_in_the_order_of_the_reports():
    names = [
        p.name
        for p in expand(
            ["bm25", "minilm"],
            ["onnx"],
            [INT8, D256],
            [HNSW],
            ["rrf"],
            served=["minilm"],
            dense=["minilm"],
        )
    ]
    assert names == [
        "bm25",
        "bm25@faiss:HNSW32,efSearch=64",
        "bm25+rrf",
        "minilm",
        "minilm+onnx",
        "minilm~int8",
        "minilm~d256",
        "minilm@faiss:HNSW32,efSearch=64",
        "minilm+rrf",
    ]
    assert [p.name for p in expand(["bm25"])] == ["bm25"]  # the default: the embedder alone


def test_schedule_runs_references_first_per_embedder_and_rerankers_last():
    pipelines = [
        Pipeline("a", reranker="rrf"),
        Pipeline("a", quantize=D256, index=HNSW),
        Pipeline("a", quantize=D256),
        Pipeline("a"),
        Pipeline("b"),
        Pipeline("b", quantize=INT8),
    ]
    order = [[p.name for p in group] for group in schedule(pipelines)]
    assert order == [
        ["a", "a~d256", "a~d256@faiss:HNSW32,efSearch=64"],
        ["b", "b~int8"],
        ["a+rrf"],
    ]
    with pytest.raises(ValueError, match="without their first stage"):
        schedule([Pipeline("a", quantize=INT8)])


names = st.text(alphabet="abcdefghij0123456789_", min_size=1, max_size=8)
pipelines = st.builds(
    Pipeline,
    embedder=st.sampled_from(["minilm", "e5-small", "npz:x.npz"]),
    backend=st.sampled_from([None, "onnx", "onnx-int8", "openvino"]),
    quantize=st.one_of(
        st.none(),
        st.builds(
            Quantization,
            precision=st.sampled_from(PRECISIONS),
            dims=st.one_of(st.none(), st.sampled_from([64, 128, 256])),
        ),
        st.builds(Quantization, dims=st.sampled_from([64, 128, 256])),
    ),
    index=st.sampled_from([None, HNSW, IVF]),
    reranker=st.one_of(st.none(), names.map(lambda n: f"r_{n}")),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(pipelines, min_size=2, max_size=12, unique=True))
def test_distinct_pipelines_have_distinct_names_and_a_reference_chain(found):
    by_name = {p.name: p for p in found}
    assert len(by_name) == len(found)  # one name per description
    for p in found:
        assert p.name.startswith(p.embedder)
        depth, ref = 0, p.first_stage
        while ref is not None:
            assert p.name.startswith(ref.name) and ref.name != p.name
            depth, ref = depth + 1, ref.first_stage
        assert depth == len(p.stages)
