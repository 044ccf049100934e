"""Target 5 of the performance issue: ranking memory stays bounded as the pool grows.

Ranks a synthetic pool (random unit vectors, 384 dims) for 1,000 queries at 10k, 100k and 1M
snippets, each size in a fresh process, reporting wall time and peak RSS.

With ``--precision`` (issue 44 part 1, issue 59 part 3) each size instead times, in one process
and over the same blocks, the physical limit (the bare float32 path: vectors normalised
beforehand, each block's ``queries @ block.T`` into a reused buffer, its top k by
``argpartition``, merged into a running top k) and ``rank_dense`` (float32 blocks, undecided
documents re-scored in float64; it also normalises, and finds each query's target rank and tie
counts) ALTERNATELY: bare, rank_dense, bare, rank_dense, ... ``--repeats`` times each, so that a
change of the shared machine's speed hits both sides of a pair. Reported: each side's median and
the median of the per-pair ratios. The float64 reference path runs once, before the
alternation; every ``rank_dense`` result is checked identical to it.

With ``--near-clones`` (issue 44 part 4) each size is a pool with a near-clone structure, written
to a memory-mapped ``.npy`` file under ``--dir``: one group per query (its canonical and
``MUTANTS`` one-edit mutants a hair away, cosine ~0.99), the rest background functions; every
function sits around one of ``TOPICS`` shared topic centres (cosine ~0.71), so the background is
not uniform noise, and each query lies around its canonical (cosine ~0.55). Exact ``rank_dense``
ranks the pool from the file; an IVF-PQ index (``--factory``, trained on a sample, filled chunk by
chunk) is searched at each ``--nprobe`` for ``CANDIDATES`` candidates per query, re-scored exactly
by ``index.rank_candidates``. Reported per size: each step's time, peak RSS (mapped file pages
included) and peak anonymous memory, and per index setting the canonical's recall (share of
queries whose canonical is among the candidates), the recall of the exact top 10, the queries
whose canonical the exact ranking had in its top 10 and the index dropped, and the rank-1 snippet
kept or turned into one of the query's own mutants.

Usage: python benchmarks/scale.py [--sizes 10000,100000,1000000] [--queries 1000]
       python benchmarks/scale.py --precision [--sizes 100000,1000000] [--repeats 5]
       python benchmarks/scale.py --near-clones --sizes 5000000,20000000 [--factory IVF1024,PQ48]
           [--nprobe 16,64] [--query-spread 1.5] [--no-exact-above N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

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


def bare_float32(q: np.ndarray, docs: np.ndarray, buffer: np.ndarray) -> np.ndarray:
    """The physical limit: each block's float32 scores (into ``buffer``, reused as ``rank_dense``
    reuses its own) and their unordered top k by ``argpartition``, merged into a running top k;
    returns its pool positions."""
    n = len(q)
    best_idx, best = np.zeros((n, 0), np.int64), np.zeros((n, 0), np.float32)
    for start in range(0, len(docs), CHUNK):
        part = docs[start : start + CHUNK]
        block = np.matmul(q, part.T, out=buffer[: n * len(part)].reshape(n, len(part)))
        top = np.argpartition(block, -min(K, len(part)), axis=1)[:, -K:]
        idx = np.concatenate([best_idx, top + start], axis=1)
        score = np.concatenate([best, np.take_along_axis(block, top, axis=1)], axis=1)
        keep = np.argpartition(score, -min(K, score.shape[1]), axis=1)[:, -K:]
        best_idx, best = np.take_along_axis(idx, keep, 1), np.take_along_axis(score, keep, 1)
    return best_idx


def precision_paths(n: int, queries: int, repeats: int) -> dict:
    """One size of ``--precision`` (module docstring), in this process."""
    from pytest_execretrieval.ranking.retrieval import _rank_dense_float64, normalize, rank_dense

    q, docs = synthetic(n, queries)
    targets = [0] * queries  # a document in the bulk of the scores: the widest band to decide
    fields = (*DECIDED, "tail_ties", "watched")
    start = time.perf_counter()
    reference = _rank_dense_float64(q, docs, targets, k=K, chunk=CHUNK)
    float64 = time.perf_counter() - start
    unit_q, unit_docs = normalize(q), normalize(docs)
    buffer = np.empty(queries * min(CHUNK, n), np.float32)
    bare, ranked, identical = [], [], True
    for _ in range(repeats):
        start = time.perf_counter()
        bare_float32(unit_q, unit_docs, buffer)
        bare.append(time.perf_counter() - start)
        start = time.perf_counter()
        fast = rank_dense(q, docs, targets, k=K, chunk=CHUNK)
        ranked.append(time.perf_counter() - start)
        identical &= all(np.array_equal(getattr(fast, f), getattr(reference, f)) for f in fields)
    ratios = [r / b for b, r in zip(bare, ranked)]
    return {
        "n": n,
        "queries": queries,
        "bare_s": bare,
        "rank_dense_s": ranked,
        "ratios": ratios,
        "bare_median": float(np.median(bare)),
        "rank_dense_median": float(np.median(ranked)),
        "ratio_median": float(np.median(ratios)),
        "float64_s": float64,
        "identical": bool(identical),
        "load_after": os.getloadavg(),
    }


def print_precision(sizes: list[int], queries: int, repeats: int) -> None:
    print(f"alternating bare float32 and rank_dense, {repeats} times each, one process per size")
    print(
        f"{'snippets':>10} {'queries':>8} {'bare f32 s':>11} {'rank_dense s':>13} "
        f"{'ratio':>7} {'ratios (min-max)':>17} {'float64 s':>10} {'identical':>10}"
    )
    for n in sizes:
        r = in_fresh_process(
            ["--precision-one", str(n), "--queries", str(queries), "--repeats", str(repeats)]
        )
        spread = f"{min(r['ratios']):.2f}-{max(r['ratios']):.2f}"
        print(
            f"{n:>10} {queries:>8} {r['bare_median']:>11.2f} {r['rank_dense_median']:>13.2f} "
            f"{r['ratio_median']:>6.2f}x {spread:>17} {r['float64_s']:>10.1f} "
            f"{str(r['identical']):>10}"
        )
        print(json.dumps(r), file=sys.stderr)
    print("seconds: medians; ratio: median of the per-pair ratios rank_dense / bare")
    print("target: rank_dense within 1.3x of the bare float32 path, rankings identical")


TOPICS = 1024  # shared topic centres of the pool's functions
MUTANTS = 5  # one-edit mutants per canonical
# Noise as the expected norm of the noise vector (per-dimension sd * sqrt(DIM)): a spread of 1.0
# gives cosine ~0.71 to the base, 1.5 ~0.55, 0.15 ~0.99.
TOPIC_SPREAD, MUTANT_SPREAD, QUERY_SPREAD = 1.0, 0.15, 1.5
GEN_CHUNK = 1 << 20  # rows generated, written and added to the index per step
TRAIN_ROWS = 131072  # the index's training sample (k-means of the IVF lists and PQ codebooks)


def _noisy(rng: np.random.Generator, base: np.ndarray, spread: float) -> np.ndarray:
    from pytest_execretrieval.ranking.retrieval import normalize

    noise = rng.standard_normal(base.shape, dtype=np.float32)
    return normalize(base + np.float32(spread / np.sqrt(DIM)) * noise)


def near_clone_pool(
    path: Path, n: int, queries: int, query_spread: float, seed: int = 0
) -> tuple[np.ndarray, list]:
    """Write the pool (module docstring) to ``path``; returns the queries and their canonicals'
    positions (group g: its canonical at g * (1 + MUTANTS), its mutants right after it)."""
    rng = np.random.default_rng([seed, 0])
    centres = _noisy(rng, np.zeros((TOPICS, DIM), np.float32), 1.0)
    group = 1 + MUTANTS
    pool = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, DIM))
    canonicals = _noisy(rng, centres[rng.integers(0, TOPICS, queries)], TOPIC_SPREAD)
    pool[: queries * group : group] = canonicals
    for m in range(1, group):
        pool[m : queries * group : group] = _noisy(rng, canonicals, MUTANT_SPREAD)
    for chunk, start in enumerate(range(queries * group, n, GEN_CHUNK)):
        stop = min(n, start + GEN_CHUNK)
        part = np.random.default_rng([seed, 1, chunk])
        around = centres[part.integers(0, TOPICS, stop - start)]
        pool[start:stop] = _noisy(part, around, TOPIC_SPREAD)
    pool.flush()
    del pool
    asked = _noisy(rng, canonicals, query_spread)
    return asked, [g * group for g in range(queries)]


class PeakMemory:
    """The peak of the process's anonymous resident memory (``RssAnon``) per step, sampled in a
    thread: ``ru_maxrss`` also counts the mapped file's pages, which the kernel may drop."""

    def __init__(self) -> None:
        self.peak_kib = 0
        self.steps: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    @staticmethod
    def _anon_kib() -> int:
        status = Path("/proc/self/status").read_text()
        return int(status.split("RssAnon:")[1].split()[0])

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            self.peak_kib = max(self.peak_kib, self._anon_kib())

    def step(self, name: str) -> None:
        """The peak since the last step, in GiB, recorded as ``name``'s."""
        self.steps[name] = max(self.peak_kib, self._anon_kib()) / 2**20
        self.peak_kib = self._anon_kib()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        return self.steps


def _ivf_pq(factory: str, pool: np.ndarray, seed: int):
    """The IVF-PQ index over ``pool``: trained on a seeded sample, filled chunk by chunk."""
    from pytest_execretrieval.ranking.index import _seed, import_faiss

    faiss = import_faiss()
    index = faiss.index_factory(DIM, factory, faiss.METRIC_INNER_PRODUCT)
    _seed(faiss, index)
    sample = np.random.default_rng([seed, 2]).choice(len(pool), min(TRAIN_ROWS, len(pool)), False)
    sample.sort()
    index.train(np.ascontiguousarray(pool[sample]))
    for start in range(0, len(pool), GEN_CHUNK):
        index.add(np.ascontiguousarray(pool[start : start + GEN_CHUNK]))
    return index


def near_clones(
    n: int,
    queries: int,
    query_spread: float,
    factory: str,
    nprobes: list[int],
    exact: bool,
    folder: Path,
) -> dict:
    """One size of the near-clone benchmark (module docstring), in this process."""
    from pytest_execretrieval.ranking.index import CANDIDATES, rank_candidates
    from pytest_execretrieval.ranking.retrieval import normalize, rank_dense

    memory = PeakMemory()
    path = folder / f"near-clones-{n}.npy"
    started = time.perf_counter()
    asked, targets = near_clone_pool(path, n, queries, query_spread)
    pool = np.load(path, mmap_mode="r")
    out: dict = {
        "n": n,
        "queries": queries,
        "query_spread": query_spread,
        "generate_s": time.perf_counter() - started,
    }
    memory.step("generate")
    own = np.asarray(targets)[:, None] + np.arange(1, 1 + MUTANTS)[None, :]
    mutant_first = lambda first: float(np.mean((first[:, None] == own).any(axis=1)))  # noqa: E731
    if exact:
        started = time.perf_counter()
        truth = rank_dense(asked, pool, targets, k=10)
        out["exact"] = {
            "seconds": time.perf_counter() - started,
            "canonical_first": float(np.mean(truth.target_rank == 1)),
            "canonical_top10": float(np.mean(truth.target_rank <= 10)),
            "mutant_first": mutant_first(truth.indices[:, 0]),
        }
        memory.step("exact")
    started = time.perf_counter()
    index = _ivf_pq(factory, pool, 0)
    memory.step("build")
    out["index"] = {
        "factory": factory,
        "build_s": time.perf_counter() - started,
        "candidates": CANDIDATES,
    }
    out["runs"] = []
    unit = normalize(asked)
    for nprobe in nprobes:
        index.nprobe = nprobe
        started = time.perf_counter()
        _, found = index.search(unit, CANDIDATES)
        searched = time.perf_counter() - started
        ranking = rank_candidates(asked, pool, found, targets, k=10)
        run = {
            "nprobe": nprobe,
            "search_s": searched,
            "rescore_s": time.perf_counter() - started - searched,
            "canonical_recall": float(np.mean((found == np.asarray(targets)[:, None]).any(1))),
            "canonical_first": float(np.mean(ranking.target_rank == 1)),
            "mutant_first": mutant_first(ranking.indices[:, 0]),
        }
        if exact:
            top = truth.indices
            run["recall_at_10"] = float(
                np.mean([len(set(t) & set(f)) / 10 for t, f in zip(top, found)])
            )
            dropped = (truth.target_rank <= 10) & ~(found == np.asarray(targets)[:, None]).any(1)
            run["dropped"] = float(np.mean(dropped))
            run["rank1_kept"] = float(np.mean(ranking.indices[:, 0] == top[:, 0]))
        out["runs"].append(run)
    memory.step("search")
    del pool
    path.unlink()
    out["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    out["peak_anon_gib"] = memory.stop()
    out["file_gib"] = n * DIM * 4 / 2**30
    return out


def print_near_clones(args: argparse.Namespace) -> None:
    folder = Path(args.dir or tempfile.mkdtemp(prefix="scale-"))
    for n in map(int, args.sizes.split(",")):
        extra = ["--no-exact-above", str(args.no_exact_above)]
        r = in_fresh_process(
            [
                "--near-clones-one",
                str(n),
                "--queries",
                str(args.queries),
                "--query-spread",
                str(args.query_spread),
                "--factory",
                args.factory,
                "--nprobe",
                args.nprobe,
                "--dir",
                str(folder),
                *extra,
            ]
        )
        exact = r.get("exact")
        anon = ", ".join(f"{step} {gib:.2f}" for step, gib in r["peak_anon_gib"].items())
        print(
            f"{n:,} snippets (a {r['file_gib']:.1f} GiB file), {r['queries']} queries at "
            f"query spread {r['query_spread']}: generated in {r['generate_s']:.0f} s; peak RSS "
            f"{r['peak_rss_gib']:.2f} GiB (mapped pages included); peak anonymous GiB: {anon}"
        )
        if exact:
            print(
                f"  exact: {exact['seconds']:.0f} s; canonical first "
                f"{exact['canonical_first']:.3f},"
                f" in the top 10 {exact['canonical_top10']:.3f}; own mutant first "
                f"{exact['mutant_first']:.3f}"
            )
        print(f"  {r['index']['factory']}: built in {r['index']['build_s']:.0f} s")
        for run in r["runs"]:
            line = (
                f"    nprobe={run['nprobe']}: search {run['search_s']:.1f} s, re-score "
                f"{run['rescore_s']:.1f} s; canonical among the "
                f"{r['index']['candidates']} candidates "
                f"{run['canonical_recall']:.3f}; canonical first {run['canonical_first']:.3f};"
                f" own mutant first {run['mutant_first']:.3f}"
            )
            if "dropped" in run:
                line += (
                    f"; recall@10 of exact {run['recall_at_10']:.3f}; dropped "
                    f"{run['dropped']:.3f}; rank 1 kept {run['rank1_kept']:.3f}"
                )
            print(line)
        print(json.dumps(r), file=sys.stderr)


def in_fresh_process(arguments: list[str]) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *arguments], stdout=subprocess.PIPE, text=True, check=True
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--precision", action="store_true", help="float32 vs float64 vs bare")
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="bare and rank_dense runs each, alternating (precision)",
    )
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--precision-one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--near-clones", action="store_true", help="pools of near clones")
    parser.add_argument("--near-clones-one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--factory", default="IVF1024,PQ48", help="the faiss index (near clones)")
    parser.add_argument("--nprobe", default="16,64", help="IVF lists searched, one run each")
    parser.add_argument(
        "--no-exact-above",
        type=int,
        default=10**9,
        help="sizes above this skip exact ranking (near clones)",
    )
    parser.add_argument(
        "--query-spread",
        type=float,
        default=QUERY_SPREAD,
        help="a query's noise around its canonical (1.5: cosine ~0.55)",
    )
    parser.add_argument("--dir", help="where the pool's file is written (default: a temp dir)")
    args = parser.parse_args()
    if args.near_clones_one:
        n, nprobes = args.near_clones_one, [int(p) for p in args.nprobe.split(",")]
        exact = n <= args.no_exact_above
        print(
            json.dumps(
                near_clones(
                    n, args.queries, args.query_spread, args.factory, nprobes, exact, Path(args.dir)
                )
            )
        )
        return
    if args.near_clones:
        print_near_clones(args)
        return
    if args.one:
        print(json.dumps(one_size(args.one, args.queries)))
        return
    if args.precision_one:
        print(json.dumps(precision_paths(args.precision_one, args.queries, args.repeats)))
        return
    if args.precision:
        print_precision(list(map(int, args.sizes.split(","))), args.queries, args.repeats)
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
