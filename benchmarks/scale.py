"""Target 5 of the performance issue: ranking memory stays bounded as the pool grows.

Ranks a synthetic pool (random unit vectors, 384 dims) for 1,000 queries at 10k, 100k and 1M
snippets, each size in a fresh process, reporting wall time and peak RSS.

With ``--precision`` (issue 44 part 1) each size instead times, in the same process and over the
same blocks, the physical limit (a bare float32 ``queries @ block.T`` with ``argpartition`` on
vectors normalised beforehand), ``rank_dense`` (float32 blocks, undecided documents re-scored in
float64) and the float64 reference path, and checks that the two rankings are identical.

Usage: python benchmarks/scale.py [--sizes 10000,100000,1000000] [--queries 1000] [--precision]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

DIM = 384


def synthetic(n: int, queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    docs = rng.standard_normal((n, DIM), dtype=np.float32)
    # Queries near some documents, so the top-k is meaningful rather than noise.
    q = docs[rng.integers(0, n, queries)] + 0.5 * rng.standard_normal((queries, DIM), np.float32)
    return q, docs


def one_size(n: int, queries: int) -> dict:
    from pytest_execretrieval.ranking.retrieval import rank_dense

    q, docs = synthetic(n, queries)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    rank_dense(q, docs, [0] * queries, k=10)
    return {
        "n": n,
        "seconds": time.perf_counter() - start,
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "input_gib": (docs.nbytes + q.nbytes) / 2**30,
        "rss_before_gib": base / 2**20,
    }


CHUNK = 65536  # rank_dense's default block
K = 10
DECIDED = ("indices", "scores", "target_rank", "target_score", "target_above", "target_ties")


def bare_float32(q: np.ndarray, docs: np.ndarray) -> None:
    """The physical limit: each block's float32 scores and an unordered top k, nothing else."""
    for start in range(0, len(docs), CHUNK):
        np.argpartition(q @ docs[start : start + CHUNK].T, -K, axis=1)[:, -K:]


def precision_paths(n: int, queries: int) -> dict:
    from pytest_execretrieval.ranking.retrieval import _rank_dense_float64, normalize, rank_dense

    q, docs = synthetic(n, queries)
    targets = [0] * queries  # a document in the bulk of the scores: the widest band to decide
    unit_q, unit_docs = normalize(q), normalize(docs)
    start = time.perf_counter()
    bare_float32(unit_q, unit_docs)
    bare = time.perf_counter() - start
    del unit_q, unit_docs
    start = time.perf_counter()
    fast = rank_dense(q, docs, targets, k=K, chunk=CHUNK)
    mixed = time.perf_counter() - start
    start = time.perf_counter()
    reference = _rank_dense_float64(q, docs, targets, k=K, chunk=CHUNK)
    float64 = time.perf_counter() - start
    fields = (*DECIDED, "tail_ties")
    same = all(np.array_equal(getattr(fast, f), getattr(reference, f)) for f in fields)
    return {"n": n, "bare": bare, "float32": mixed, "float64": float64, "identical": same}


def print_precision(sizes: list[int], queries: int) -> None:
    print(
        f"{'snippets':>10} {'queries':>8} {'bare f32 s':>11} {'rank_dense s':>13} "
        f"{'float64 s':>10} {'vs bare':>8} {'f64/new':>8} {'identical':>10}"
    )
    for n in sizes:
        r = in_fresh_process(["--precision-one", str(n), "--queries", str(queries)])
        print(
            f"{n:>10} {queries:>8} {r['bare']:>11.1f} {r['float32']:>13.1f} {r['float64']:>10.1f} "
            f"{r['float32'] / r['bare']:>7.2f}x {r['float64'] / r['float32']:>7.2f}x "
            f"{str(r['identical']):>10}"
        )
    print("target: rank_dense within 1.3x of the bare float32 path, rankings identical")


def in_fresh_process(arguments: list[str]) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *arguments], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--precision", action="store_true", help="float32 vs float64 vs bare")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--precision-one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_size(args.one, args.queries)))
        return
    if args.precision_one:
        print(json.dumps(precision_paths(args.precision_one, args.queries)))
        return
    if args.precision:
        print_precision(list(map(int, args.sizes.split(","))), args.queries)
        return
    print(f"{'snippets':>10} {'queries':>8} {'time s':>8} {'peak RSS GiB':>13} {'inputs GiB':>11}")
    for n in map(int, args.sizes.split(",")):
        r = in_fresh_process(["--one", str(n), "--queries", str(args.queries)])
        print(
            f"{n:>10} {args.queries:>8} {r['seconds']:>8.1f} {r['peak_rss_gib']:>13.2f} "
            f"{r['input_gib']:>11.2f}"
        )
    print("target: 1M x 1000 x 384 ranks within 24 GiB")


if __name__ == "__main__":
    main()
