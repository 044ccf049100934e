"""Stored codes (``ranking/quantize.py``): int8 and Hamming scores against brute-force references
on small random matrices, ties counted exactly, truncation, binary-rescore's candidates, and the
quantisation's name parsing back."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sentence_transformers")

from pytest_execretrieval.ranking.quantize import (  # noqa: E402
    OVERSAMPLE,
    PRECISIONS,
    Quantization,
    QuantizedStage,
    QuantizeError,
    binary_codes,
    binary_scores,
    int8_codes,
    int8_scores,
    parse_quantization,
    truncate,
)
from pytest_execretrieval.ranking.retrieval import rank_dense  # noqa: E402


def _unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _int8_reference(q: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scalar quantisation by hand: 256 buckets per dimension between the documents' min and max."""
    q, d = _unit(q).astype(np.float32), _unit(d).astype(np.float32)
    low, high = d.min(axis=0), d.max(axis=0)
    step = (high - low) / 255
    step = np.where(step == 0, 1, step)

    def code(x):
        return (np.clip(np.floor((x - low) / step), 0, 255) - 128).astype(np.int8)

    return code(q), code(d)


def _scores(blocks) -> np.ndarray:
    return np.concatenate(list(blocks))


def test_int8_scores_are_the_inner_products_of_the_codes():
    rng = np.random.default_rng(1)
    q, d = rng.normal(size=(7, 24)), rng.normal(size=(130, 24))
    qc, dc = int8_codes(q, d)
    ref_q, ref_d = _int8_reference(q, d)
    assert np.array_equal(qc, ref_q) and np.array_equal(dc, ref_d)
    brute = np.array([[sum(int(a) * int(b) for a, b in zip(x, y)) for y in dc] for x in qc])
    assert np.array_equal(_scores(int8_scores(qc, dc)), brute)


def test_hamming_scores_count_the_equal_bits():
    rng = np.random.default_rng(2)
    dims = 21  # not a multiple of 8: the padding bits never count
    q, d = rng.normal(size=(5, dims)), rng.normal(size=(40, dims))
    qb, db = binary_codes(q), binary_codes(d)
    bits = lambda v: int("".join("1" if x > 0 else "0" for x in v), 2)  # noqa: E731
    brute = np.array(
        [[1 - (bits(x) ^ bits(y)).bit_count() / dims for y in d] for x in q], dtype=np.float64
    )
    assert np.allclose(_scores(binary_scores(qb, db, dims)), brute, atol=1e-12)


def _ranked_reference(scores: np.ndarray, targets) -> tuple[np.ndarray, np.ndarray]:
    """Per query: documents strictly above the target, and tied with it (itself included)."""
    rows = np.arange(len(targets))
    ts = scores[rows, targets]
    return (scores > ts[:, None]).sum(axis=1), (scores == ts[:, None]).sum(axis=1)


@pytest.mark.parametrize("precision", ["int8", "binary"])
def test_codes_tie_and_the_ranking_counts_the_ties(precision):
    rng = np.random.default_rng(3)
    dims = 8
    base = rng.normal(size=(6, dims))
    # Each document three times, scaled by powers of two: the same unit vector, the same codes.
    d = np.concatenate([base, base * 2, base * 4])
    q = rng.normal(size=(4, dims))
    targets = [0, 1, 2, 3]
    stage = QuantizedStage(Quantization(precision))
    ranking = stage(q, d, targets, k=5, watch=[[4], [], [5], []])
    if precision == "int8":
        qc, dc = int8_codes(q, d)
        brute = (qc.astype(np.int64) @ dc.astype(np.int64).T).astype(np.float64)
    else:
        brute = _scores(binary_scores(binary_codes(q), binary_codes(d), dims))
    above, ties = _ranked_reference(np.round(brute, 6), targets)
    assert np.array_equal(ranking.target_above, above)
    assert np.array_equal(ranking.target_ties, ties)
    assert (ranking.target_ties >= 3).all()  # every document has its two scaled copies
    for row, listed in zip(np.round(brute, 6), ranking.scores):
        assert np.allclose(listed, np.sort(row)[::-1][:5])
    assert ranking.watched[0] == pytest.approx([np.round(brute[0, 4], 6)])


def test_binary_rescore_reranks_the_hamming_candidates_with_their_ties_exactly():
    rng = np.random.default_rng(4)
    dims = 16
    q, d = rng.normal(size=(3, dims)), rng.normal(size=(200, dims))
    targets = [5, 6, 7]
    k = 3
    ranking = QuantizedStage(Quantization("binary-rescore"))(q, d, targets, k=k)
    hamming = _scores(binary_scores(binary_codes(q), binary_codes(d), dims))
    cosine = _unit(q) @ _unit(d).T
    for row in range(3):
        floor = np.sort(hamming[row])[::-1][OVERSAMPLE * k - 1]
        candidates = set(np.flatnonzero(hamming[row] >= floor).tolist())
        assert ranking.retrieved is not None and ranking.retrieved[row] == candidates
        best = sorted(candidates, key=lambda i: (-round(cosine[row, i], 6), i))[:k]
        assert ranking.indices[row].tolist() == best
        if targets[row] not in candidates:  # below every candidate, one tie group
            assert ranking.target_rank[row] > len(candidates)


def test_truncation_keeps_the_first_dims_renormalised():
    rng = np.random.default_rng(5)
    v = rng.normal(size=(4, 10))
    t = truncate(v, 3)
    assert t.shape == (4, 3) and np.allclose(np.linalg.norm(t, axis=1), 1, atol=1e-6)
    assert np.allclose(t, _unit(v[:, :3]), atol=1e-6)
    with pytest.raises(QuantizeError, match="10 dimensions"):
        truncate(v, 11)
    # Truncation alone ranks exactly: the same as rank_dense on the truncated vectors.
    q = rng.normal(size=(2, 10))
    by_stage = QuantizedStage(Quantization(dims=3))(q, v, [0, 1], k=2)
    direct = rank_dense(truncate(q, 3), truncate(v, 3), [0, 1], k=2)
    assert np.array_equal(by_stage.indices, direct.indices)


@settings(max_examples=200, deadline=None)
@given(
    precision=st.sampled_from([None, *PRECISIONS]),
    dims=st.one_of(st.none(), st.integers(1, 4096)),
)
def test_a_quantisation_name_parses_back(precision, dims):
    if precision is None and dims is None:
        with pytest.raises(QuantizeError):
            Quantization(precision, dims)
        return
    q = Quantization(precision, dims)
    assert parse_quantization(q.text) == q
    assert q.text.replace("-", "").isalnum()


@pytest.mark.parametrize("text", ["int4", "d0", "d256-d128", "int8-d256", "", "binary-int8"])
def test_a_bad_quantisation_is_named(text):
    with pytest.raises(QuantizeError):
        parse_quantization(text)
