"""Issue 44 part 5: the bundled benchmark's ranking time, exact against each approximate index.

Reads an embedder's vectors of the bundled pool from the embedding cache (a benchmark run with
the same ``--execretrieval-cache-dir`` filled it), then times, best of ``--repeat``, the exact
``rank_dense`` and each index's first stage (:class:`ApproximateStage`: the cached index read,
the search, the exact re-scoring of the candidates), and with ``--build`` the index's build
(IVF-PQ takes minutes on a loaded machine). Prints JSON.

Usage: python benchmarks/index_speed.py --cache-dir DIR [--embedder minilm] [--items DIR]
       [--spec faiss:HNSW32,efSearch=64 ...] [--repeat 3] [--build]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import cast

import numpy as np

from pytest_execretrieval.corpus.items import bundled_items_dir, load_items
from pytest_execretrieval.corpus.store import read_corpus
from pytest_execretrieval.embedders import DenseEncoder, EmbedderOptions, get_embedder
from pytest_execretrieval.embedders.cache import EmbeddingCache, encode_cached
from pytest_execretrieval.ranking.index import ApproximateStage, build_index, check_spec
from pytest_execretrieval.ranking.retrieval import normalize, rank_dense

SPECS = (
    "faiss:HNSW8,efSearch=64",
    "faiss:HNSW32,efSearch=64",
    "faiss:IVF1024,PQ48,nprobe=16",
    "faiss:IVF1024,PQ16,nprobe=4",
)


def best(seconds: list[float]) -> float:
    return round(min(seconds), 4)


def vectors(name: str, items_dir: Path, cache_dir: Path) -> tuple[np.ndarray, np.ndarray, list]:
    """The pool's and the queries' vectors (pool in snippet-id order), and the targets."""
    items, _ = load_items(items_dir)
    items = sorted(items, key=lambda i: i.id)
    pool = sorted(read_corpus(items_dir).snippets, key=lambda s: s.snippet_id)
    embedder = cast(DenseEncoder, get_embedder(name, EmbedderOptions(cache_dir=str(cache_dir))))
    cache = EmbeddingCache(cache_dir, embedder.invocation())
    docs = encode_cached(
        embedder, [s.code for s in pool], [s.snippet_id for s in pool], "document", cache
    )
    queries = encode_cached(
        embedder, [i.query for i in items], [i.id for i in items], "query", cache
    )
    position = {s.snippet_id: p for p, s in enumerate(pool)}
    canonical = {s.query_id: s.snippet_id for s in pool if s.kind == "canonical"}
    return queries, docs, [position[canonical[i.id]] for i in items]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--items", type=Path, default=bundled_items_dir())
    parser.add_argument("--spec", action="append", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--build", action="store_true", help="also time each index's build")
    args = parser.parse_args()
    queries, docs, targets = vectors(args.embedder, args.items, args.cache_dir)
    exact = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        rank_dense(queries, docs, targets, 10)
        exact.append(time.perf_counter() - started)
    indexes: dict[str, dict] = {}
    rows = {"pool": len(docs), "queries": len(queries), "exact_s": best(exact), "indexes": indexes}
    unit = normalize(docs, np.float64).astype(np.float32)
    for text in args.spec or SPECS:
        spec = check_spec(text)
        build = build_index(spec, unit).seconds if args.build else None
        stage = ApproximateStage(spec, args.cache_dir)
        runs, steps = [], []
        for _ in range(args.repeat):
            started = time.perf_counter()
            stage(queries, docs, targets, 10)
            runs.append(time.perf_counter() - started)
            steps.append(stage.seconds)
        indexes[text] = {
            "build_s": None if build is None else round(build, 3),
            "ranking_s": best(runs),
            "search_s": best([s["search"] for s in steps]),
            "rescore_s": best([s["rescore"] for s in steps]),
            "load_s": best([s["index"] for s in steps]),
            "vs_exact": round(min(runs) / min(exact), 2),
        }
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
