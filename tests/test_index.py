"""``--execretrieval-index SPEC``: spec checks, the index's recall on small near-clone pools,
exact re-scoring of the candidates, the content cache (a corrupt file is rebuilt), the
invocation record, and one pytest run producing the ``<embedder>@<SPEC>`` report and junit."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from plugin_runs import bench, without_timing

faiss = pytest.importorskip("faiss")

from pytest_execretrieval.ranking.index import (  # noqa: E402
    BUILD_SEED,
    ApproximateStage,
    IndexSpecError,
    check_spec,
    clamped_factory,
    rank_candidates,
)
from pytest_execretrieval.ranking.retrieval import rank_dense  # noqa: E402

HNSW = "faiss:HNSW32,efSearch=64"
IVF_PQ = "faiss:IVF1024,PQ8x4,nprobe=16"


def near_clone_pool(n_canonicals: int = 300, mutants: int = 9, dim: int = 32, seed: int = 0):
    """Canonicals with their mutants as small perturbations (the benchmark's structure), and a
    query per canonical near it; the targets are the canonicals' positions."""
    rng = np.random.default_rng(seed)
    canonical = rng.normal(size=(n_canonicals, dim))
    clones = canonical[:, None, :] + 0.05 * rng.normal(size=(n_canonicals, mutants, dim))
    pool = np.concatenate([canonical[:, None, :], clones], axis=1).reshape(-1, dim)
    queries = canonical + 0.3 * rng.normal(size=canonical.shape)
    targets = [i * (mutants + 1) for i in range(n_canonicals)]
    return queries.astype(np.float32), pool.astype(np.float32), targets


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean([len(set(x) & set(y)) / len(y) for x, y in zip(a.tolist(), b.tolist())]))


@pytest.mark.parametrize(
    "text, named",
    [
        ("hnsw:HNSW32", "LIBRARY:FACTORY"),
        ("faiss:HNSW32,efSearch=lots", "'efSearch=lots' is not a search parameter"),
        ("faiss:HNSW32,nprobe=16", "nprobe=16 does not apply to 'HNSW32'"),
        ("faiss:Bogus12", "could not parse index string Bogus12"),
        ("faiss:efSearch=64", "no faiss factory string"),
        ("faiss:HNSW32,efSearch=64,PQ8", "'PQ8' follows a search parameter"),
    ],
)
def test_a_bad_spec_is_refused_naming_its_bad_part(text, named):
    with pytest.raises(IndexSpecError, match=named):
        check_spec(text)


def test_a_good_spec_keeps_factory_and_search_parameters_apart():
    spec = check_spec("faiss:IVF1024,PQ48,nprobe=16")
    assert (spec.factory, spec.search) == ("IVF1024,PQ48", (("nprobe", 16.0),))


def test_an_ivf_larger_than_the_pool_is_clamped_with_its_reason():
    factory, reason = clamped_factory("IVF1024,PQ48", 3000)
    assert factory == "IVF76,PQ48"
    assert reason and "nlist 1024 clamped to 76" in reason and "3000 vectors" in reason
    assert clamped_factory("IVF16,Flat", 3000) == ("IVF16,Flat", None)


def test_a_flat_index_ranks_exactly_as_the_exact_path():
    queries, pool, targets = near_clone_pool(100)
    watch = [[t + 1, t + 2] for t in targets]
    exact = rank_dense(queries, pool, targets, 10, watch=watch)
    indexed = ApproximateStage(check_spec("faiss:Flat"), None)(queries, pool, targets, 10, watch)
    for field in ("indices", "scores", "target_rank", "target_score", "target_above"):
        np.testing.assert_array_equal(getattr(indexed, field), getattr(exact, field))
    np.testing.assert_array_equal(indexed.tail_ties, exact.tail_ties)
    assert indexed.watched == exact.watched


def test_a_dropped_canonical_ranks_below_every_candidate_in_one_tie_group():
    queries, pool, targets = near_clone_pool(2)
    candidates = np.array([[1, 2, 3, 4], [10, 11, 12, 13]])  # query 0's canonical 0 is not there
    ranking = rank_candidates(queries, pool, candidates, targets, k=3)
    assert ranking.indices.shape == (2, 3) and set(ranking.indices[0]) <= {1, 2, 3, 4}
    assert ranking.target_span[0].tolist() == [5, len(pool)]  # after the 4 candidates
    assert ranking.target_rank[0] == 5 and ranking.target_above[0] == 4
    assert ranking.retrieves(1, 10) and not ranking.retrieves(0, 0)


@pytest.mark.parametrize("text, least", [(HNSW, 0.95), (IVF_PQ, 0.5)])
def test_the_index_recalls_the_exact_top_10(text, least, tmp_path):
    queries, pool, targets = near_clone_pool()
    exact = rank_dense(queries, pool, targets, 10)
    stage = ApproximateStage(check_spec(text), tmp_path)
    indexed = stage(queries, pool, targets, 10)
    recall = overlap(stage.candidates, exact.indices)
    assert least <= recall <= 1.0
    # Listed documents are the candidates' exact best: where the exact top 10 was recalled
    # whole, the listing equals the exact one.
    whole = [q for q in range(len(queries)) if set(exact.indices[q]) <= set(stage.candidates[q])]
    assert whole
    np.testing.assert_array_equal(indexed.indices[whole], exact.indices[whole])
    np.testing.assert_array_equal(indexed.scores[whole], exact.scores[whole])


def test_ivf_pq_records_its_clamped_nlist_in_the_invocation(tmp_path):
    queries, pool, targets = near_clone_pool()
    stage = ApproximateStage(check_spec(IVF_PQ), tmp_path)
    stage(queries, pool, targets, 10)
    record = stage.invocation()
    assert record["spec"] == IVF_PQ and record["version"] == faiss.__version__
    assert record["build_seed"] == BUILD_SEED and record["search"] == {"nprobe": 16.0}
    assert record["built_factory"] == "IVF76,PQ8x4"
    assert "nlist 1024 clamped to 76" in record["notes"][0]


def test_a_second_run_loads_the_cached_index_and_a_corrupt_one_is_rebuilt(tmp_path):
    queries, pool, targets = near_clone_pool(200)
    spec = check_spec(HNSW)
    first = ApproximateStage(spec, tmp_path)
    ranked = first(queries, pool, targets, 10)
    assert first.built is not None and first.built.source == "built"
    (cached,) = (tmp_path / "indexes").iterdir()
    second = ApproximateStage(spec, tmp_path)
    again = second(queries, pool, targets, 10)
    assert second.built is not None and second.built.source == "cached"
    np.testing.assert_array_equal(again.indices, ranked.indices)
    raw = bytearray(cached.read_bytes())
    raw[-100] ^= 0xFF  # one flipped byte inside the serialised index
    cached.write_bytes(bytes(raw))
    third = ApproximateStage(spec, tmp_path)
    rebuilt = third(queries, pool, targets, 10)
    assert third.built is not None
    assert str(cached) in third.built.source
    assert "does not verify under your key" in third.built.source
    np.testing.assert_array_equal(rebuilt.indices, ranked.indices)
    assert ApproximateStage(spec, tmp_path)(queries, pool, targets, 10).indices.tolist() == (
        ranked.indices.tolist()
    )


def _forge(path, index, factory: str = "Flat") -> None:
    """Overwrite the cached index at ``path`` with ``index``, signed as the tool signs."""
    from pytest_execretrieval.ranking.index import Built, write_cached

    write_cached(path, Built(index, factory, (), "built", 0.0))


def test_a_committed_index_signed_with_another_key_is_rebuilt_not_used(tmp_path, monkeypatch):
    """The forged-gate attack on the indexed pipeline: an index holding only the canonicals,
    so each query's nearest candidate is its canonical, committed to the checkout's cache."""
    queries, pool, targets = near_clone_pool(100)
    spec = check_spec("faiss:Flat")
    honest = ApproximateStage(spec, tmp_path)(queries, pool, targets, 10)
    (cached,) = (tmp_path / "indexes").iterdir()
    forged = faiss.IndexIDMap2(faiss.IndexFlatIP(pool.shape[1]))
    unit = (pool / np.linalg.norm(pool, axis=1, keepdims=True)).astype(np.float32)
    forged.add_with_ids(unit[targets], np.asarray(targets, dtype=np.int64))
    monkeypatch.setenv("EXECRETRIEVAL_CACHE_KEY", "the attacker's key")
    _forge(cached, forged)
    monkeypatch.delenv("EXECRETRIEVAL_CACHE_KEY")
    stage = ApproximateStage(spec, tmp_path)
    ranked = stage(queries, pool, targets, 10)
    assert stage.built is not None and "does not verify under your key" in stage.built.source
    np.testing.assert_array_equal(ranked.indices, honest.indices)
    np.testing.assert_array_equal(stage.candidates.shape, (100, 100))


@pytest.mark.parametrize("hostile", ["fewer vectors", "ids outside the pool", "not faiss"])
def test_a_signed_index_that_is_no_index_of_the_pool_is_rebuilt(tmp_path, hostile):
    """Even under the user's own key (a bug, a faiss upgrade), what faiss reads back must hold
    the pool's shape: named and rebuilt, never an INTERNALERROR."""
    queries, pool, targets = near_clone_pool(50)
    spec = check_spec("faiss:Flat")
    honest = ApproximateStage(spec, tmp_path)(queries, pool, targets, 10)
    (cached,) = (tmp_path / "indexes").iterdir()
    index = faiss.IndexIDMap2(faiss.IndexFlatIP(pool.shape[1]))
    unit = (pool / np.linalg.norm(pool, axis=1, keepdims=True)).astype(np.float32)
    if hostile == "fewer vectors":
        index.add_with_ids(unit[:10], np.arange(10, dtype=np.int64))
        _forge(cached, index)
        reason = "holds 10 vectors"
    elif hostile == "ids outside the pool":
        index.add_with_ids(unit, np.arange(len(unit), dtype=np.int64) + 10**6)
        _forge(cached, index)
        reason = "positions outside the pool"
    else:
        from pytest_execretrieval.signed_files import SignedFiles

        SignedFiles(cached.parent, cached.parent, b"execretrieval-index2").write_body(
            cached, cached.stem, b"Flat\n\n" + b"IxF2 not an index at all"
        )
        reason = "cannot be read by faiss"
    stage = ApproximateStage(spec, tmp_path)
    ranked = stage(queries, pool, targets, 10)
    assert stage.built is not None and reason in stage.built.source, stage.built.source
    np.testing.assert_array_equal(ranked.indices, honest.indices)


def test_an_index_over_other_vectors_is_another_cache_entry(tmp_path):
    queries, pool, targets = near_clone_pool(50)
    spec = check_spec(HNSW)
    ApproximateStage(spec, tmp_path)(queries, pool, targets, 10)
    ApproximateStage(spec, tmp_path)(queries, pool[::-1].copy(), targets, 10)
    assert len(list((tmp_path / "indexes").iterdir())) == 2


def _report_of(directory, name: str) -> dict:
    found = [json.loads(p.read_text()) for p in directory.glob("*.json") if p.name != "x"]
    return next(r for r in found if r.get("embedder", {}).get("name") == name)


def test_an_indexed_pipeline_gets_its_items_report_junit_and_gate(pytester, items):
    from test_plugin_benchmark import make_npz

    npz = "npz:" + str(make_npz(pytester, items))
    args = ("--execretrieval-index", HNSW, "--execretrieval-report-dir=reports")
    result = bench(pytester, items, *args, embedders=(npz,))
    out = result.stdout.str()
    assert result.ret in (0, 1), out
    name = f"{npz}@{HNSW}"
    assert f"strings/count_vowels[{name}]" in out
    assert f"index [{name}]: built in" in out and f"index [{name}]: recall" in out
    reports = pytester.path / "reports"
    exact, indexed = _report_of(reports, npz), _report_of(reports, name)
    assert indexed["first_stage"] == npz
    record = indexed["embedder"]["index"]
    assert record["spec"] == HNSW and record["version"] == faiss.__version__
    assert record["build_seed"] == BUILD_SEED
    # The pool is smaller than the candidates: the index returns all of it, exactly re-scored.
    assert indexed["per_query"] == exact["per_query"]
    assert indexed["index"]["recall@10"] == 1.0 and indexed["index"]["canonical_dropped_n"] == 0
    assert indexed["lift"]["metrics"]["exec@10"]["difference"] == 0
    assert indexed["index"]["by_operator"]
    stem = next(p.stem for p in reports.glob("*.json") if json.loads(p.read_text()) == indexed)
    suite = ET.parse(reports / f"{stem}.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("name") == name
    assert "Approximate index: what it costs" in (reports / "summary.md").read_text()

    again = bench(pytester, items, *args, "--execretrieval-report-dir=again", embedders=(npz,))
    assert f"index [{name}]: cached in" in again.stdout.str()
    assert without_timing(reports / f"{stem}.json") == without_timing(
        pytester.path / "again" / f"{stem}.json"
    )
    baseline = pytester.path / "baseline.json"
    baseline.write_text((reports / f"{stem}.json").read_text())
    gated = bench(
        pytester,
        items,
        *args,
        "--execretrieval-max-detectable=1",
        f"--execretrieval-baseline={baseline}",
        embedders=(npz,),
    )
    assert f"gate [{name}]: PASS" in gated.stdout.str()


def test_an_index_needs_vectors_and_a_good_spec(pytester, items):
    lexical = bench(pytester, items, "--execretrieval-index", HNSW)  # bm25 only
    assert lexical.ret == 4
    assert "bm25 is a lexical scorer" in lexical.stderr.str() + lexical.stdout.str()
    bad = bench(pytester, items, "--execretrieval-index", "faiss:HNSW32,nprobe=4")
    assert bad.ret == 4
    assert "nprobe=4 does not apply to 'HNSW32'" in bad.stderr.str() + bad.stdout.str()
