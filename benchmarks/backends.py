"""Issue 59: cold encode time of the bundled Python pool per runtime backend, in one process.

For each model, torch and every backend of ``embedders/backends.py`` encode the same texts (the
pool's snippets as documents, the items' queries as queries) from an empty embedding cache, in
alternating turns (torch, onnx, onnx-int8, openvino, torch, ...; ``--repeats`` turns each), and
the median of each backend's turns is compared with torch's: a ratio taken in one process, the
backends side by side, so a shared machine's changing load falls on all of them. Every encoder
is loaded (model, export, runtime session) and has encoded one text before the first turn: a
turn times encoding alone; the load is printed apart. Batch size is the embedder's (64 for
MiniLM) for every backend; torch uses its default intra-op threads, the runtimes one per core
this process may use (both printed).

A reference row, ``torch-tokens``: the torch model batched by tokens as the backends batch
(:mod:`pytest_execretrieval.embedders.backends`), one sentence-transformers call per batch, so
the table separates what the runtime gains from what batching by tokens gains.

Beside the time: the cosine of each backend's vectors to torch's (median and minimum), and
rank-1 agreement: for each query, whether the backend ranks the same document first as torch
among the sample's documents.

``--sample K`` takes every K-th item (by id) with its query and all its snippets, for a shared
machine where the whole pool (5,997 texts) takes too long per turn.

Usage: python benchmarks/backends.py [--embedder minilm ...] [--sample K] [--repeats R]
       [--items DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from pytest_execretrieval.corpus.items import bundled_items_dir, load_items
from pytest_execretrieval.corpus.store import read_corpus
from pytest_execretrieval.embedders import DenseEncoder, EmbedderOptions, get_embedder
from pytest_execretrieval.embedders.backends import BACKENDS, served, threads


def pool_texts(items_dir: Path, every: int) -> tuple[list[str], list[str]]:
    """The queries of every ``every``-th item (by id) and the snippets of their pools."""
    items = sorted(load_items(items_dir)[0], key=lambda i: i.id)[::every]
    chosen = {i.id for i in items}
    snippets = sorted(read_corpus(items_dir).snippets, key=lambda s: s.snippet_id)
    return [i.query for i in items], [s.code for s in snippets if s.query_id in chosen]


class TokenBatchedTorch:
    """``base`` (the torch embedder) called once per batch of texts of about equal tokens."""

    def __init__(self, base) -> None:
        self.base = base

    def invocation(self) -> dict:
        return self.base.invocation()

    def encode(self, texts: list[str], role: str, ids: list[str]) -> np.ndarray:
        tokenizer = self.base._load().tokenizer
        lengths = [len(row) for row in tokenizer(texts, truncation=True)["input_ids"]]
        order = np.argsort([-n for n in lengths], kind="stable")
        out = np.empty((len(texts), 0), dtype=np.float32)
        size = self.base.batch_size
        for start in range(0, len(texts), size):
            rows = order[start : start + size]
            vectors = self.base.encode([texts[i] for i in rows], role, [])
            if out.shape[1] == 0:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[rows] = vectors
        return out


def encode_all(encoder: DenseEncoder, queries: list[str], docs: list[str]):
    started, cpu = time.perf_counter(), time.process_time()
    vectors = encoder.encode(docs, "document", []), encoder.encode(queries, "query", [])
    return time.perf_counter() - started, time.process_time() - cpu, vectors


def measure(name: str, queries: list[str], docs: list[str], repeats: int, cache: str) -> dict:
    import torch

    base = get_embedder(name, EmbedderOptions(cache_dir=cache))
    encoders: dict[str, DenseEncoder] = {"torch": base}  # type: ignore[dict-item]
    loads = {}
    for backend in ("torch", "torch-tokens", *BACKENDS):
        started = time.perf_counter()
        encoder = encoders.get(backend) or (
            TokenBatchedTorch(base) if backend == "torch-tokens" else served(base, backend)
        )
        encoder.invocation()  # the export, when the cache has none
        encoder.encode(["def f(): pass"], "document", [])  # the model or session loaded
        encoders[backend], loads[backend] = encoder, round(time.perf_counter() - started, 2)
    walls: dict[str, list[float]] = {b: [] for b in encoders}
    cpus: dict[str, list[float]] = {b: [] for b in encoders}
    vectors = {}
    for turn in range(repeats):
        for backend, encoder in encoders.items():
            wall, cpu, vectors[backend] = encode_all(encoder, queries, docs)
            walls[backend].append(wall)
            cpus[backend].append(cpu)
            print(f"{name} turn {turn + 1} {backend}: {wall:.2f} s", flush=True)
    torch_docs, torch_queries = vectors["torch"]
    torch_first = np.argmax(torch_queries @ torch_docs.T, axis=1)
    rows = {}
    for backend in encoders:
        doc_vectors, query_vectors = vectors[backend]
        cosines = np.concatenate(
            [(doc_vectors * torch_docs).sum(1), (query_vectors * torch_queries).sum(1)]
        )
        first = np.argmax(query_vectors @ doc_vectors.T, axis=1)
        median = statistics.median(walls[backend])
        rows[backend] = {
            "median_s": round(median, 2),
            "turns_s": [round(t, 2) for t in walls[backend]],
            "speedup_vs_torch": round(statistics.median(walls["torch"]) / median, 2),
            "median_cpu_s": round(statistics.median(cpus[backend]), 2),
            "load_s": loads[backend],
            "cosine_median": round(float(np.median(cosines)), 5),
            "cosine_min": round(float(cosines.min()), 5),
            "rank1_agreement": round(float(np.mean(first == torch_first)), 4),
        }
    return {
        "embedder": name,
        "texts": len(queries) + len(docs),
        "queries": len(queries),
        "documents": len(docs),
        "batch_size": base.batch_size,  # type: ignore[union-attr]
        "torch_threads": torch.get_num_threads(),
        "runtime_threads": threads(),
        "backends": rows,
    }


def markdown(result: dict) -> str:
    lines = [
        f"{result['embedder']}: {result['texts']} texts ({result['documents']} snippets, "
        f"{result['queries']} queries), batch {result['batch_size']}, torch threads "
        f"{result['torch_threads']}, runtime threads {result['runtime_threads']}",
        "",
        "| backend | median encode (s) | vs torch | CPU (s) | load (s) | cosine to torch "
        "(median / min) | rank-1 agreement |",
        "|---|---|---|---|---|---|---|",
    ]
    for backend, row in result["backends"].items():
        lines.append(
            f"| {backend} | {row['median_s']} | {row['speedup_vs_torch']}x | "
            f"{row['median_cpu_s']} | {row['load_s']} | {row['cosine_median']} / "
            f"{row['cosine_min']} | {row['rank1_agreement']:.1%} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--embedder", action="append", default=None)
    parser.add_argument("--items", type=Path, default=bundled_items_dir())
    parser.add_argument("--sample", type=int, default=1, help="every K-th item (1: all)")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    queries, docs = pool_texts(args.items, args.sample)
    results = []
    with tempfile.TemporaryDirectory() as cache:
        for name in args.embedder or ["minilm"]:
            results.append(measure(name, queries, docs, args.repeats, cache))
            print(markdown(results[-1]), "\n", flush=True)
    print(f"load average: {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
