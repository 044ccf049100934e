"""Target 5 of the performance issue: ranking memory stays bounded as the pool grows.

Ranks a synthetic pool (random unit vectors, 384 dims) for 1,000 queries at 10k, 100k and 1M
snippets, each size in a fresh process, reporting wall time and peak RSS.

Usage: python benchmarks/scale.py [--sizes 10000,100000,1000000] [--queries 1000]
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
    rank_dense(q, docs, np.zeros(queries, dtype=np.int64), k=10)
    return {
        "n": n,
        "seconds": time.perf_counter() - start,
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "input_gib": (docs.nbytes + q.nbytes) / 2**30,
        "rss_before_gib": base / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_size(args.one, args.queries)))
        return
    print(f"{'snippets':>10} {'queries':>8} {'time s':>8} {'peak RSS GiB':>13} {'inputs GiB':>11}")
    for n in map(int, args.sizes.split(",")):
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(n), "--queries", str(args.queries)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout)
        print(
            f"{n:>10} {args.queries:>8} {r['seconds']:>8.1f} {r['peak_rss_gib']:>13.2f} "
            f"{r['input_gib']:>11.2f}"
        )
    print("target: 1M x 1000 x 384 ranks within 24 GiB")


if __name__ == "__main__":
    main()
