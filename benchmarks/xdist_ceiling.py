"""Two cores used fully: `verify -n 2` against pytest-xdist's own ceiling, in one run.

xdist's ceiling is its own speed-up (-n 0 wall / -n 2 wall) for as many plain pytest items as
verification has, each doing in-process the CPU work one suite costs the sandbox (measured here:
the CPU of the sandbox processes per suite, every pair run through one Sandbox, no pytest). What
xdist spends per item (execnet messages, reports, the second worker's start-up and collection)
it spends on both; what verification adds on top (its controller work, per-item start-up, the
sandbox's spare child, the gates) shows as a ratio below 1:

    ratio = (verify -n 0 / verify -n 2) / (plain -n 0 / plain -n 2)     target >= 0.95

The four runs alternate (verify -n 0, verify -n 2, plain -n 0, plain -n 2) ``--repeats`` times
so that a change of machine load hits both sides; each repeat's ratio is printed, then the median.
One untimed `verify -n 0` first fills the item cache (item files validated once,
``corpus/item_cache.py``), so every timed run starts as any run after the first does.
It also prints how many cores each verify run kept busy (CPU seconds of the process tree over
wall seconds): `-n 0` is above 1 because the sandbox's zygote forks the next suite's child on
the second core while the first handles the reply, which leaves `-n 2` less to gain than xdist's
plain items, which are single-core at `-n 0`.

Usage: python benchmarks/xdist_ceiling.py [ITEMS_DIR] [--sample N] [--repeats R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from _sample import sample_items
from verify_speed import ROOT, children_cpu, pairs, sandbox_only, verify, xdist_ceiling


def suite_cpu_s(work: list[dict]) -> float:
    """CPU seconds of the sandbox processes per suite (one Sandbox, every pair in item order)."""
    before = children_cpu()
    sandbox_only(work, 1)
    return (children_cpu() - before) / len(work)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("items", nargs="?", default=str(ROOT / "items"))
    ap.add_argument("--sample", type=int, metavar="N", help="N of the items, every k-th by id")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        items = Path(args.items).resolve()
        if args.sample is not None:
            items = sample_items(items, args.sample, Path(tmp) / "items").resolve()
        work = pairs(items)
        cpu = suite_cpu_s(work)
        print(
            f"{len(work)} (snippet, own suite) pairs; the sandbox spends {cpu * 1e3:.2f} ms "
            "CPU a suite"
        )
        verify(items, "0")  # untimed: the item cache is warm in every timed run, as it is
        ratios = []  # in every run after the first on the same items
        for repeat in range(1, args.repeats + 1):
            v0, c0, n_items = verify(items, "0")
            v2, c2, _ = verify(items, "2")
            p0, p2 = xdist_ceiling(n_items, cpu)
            speedup, ceiling = v0 / v2, p0 / p2
            ratios.append(speedup / ceiling)
            print(
                f"repeat {repeat}: verify -n 0 {v0:.1f} s, -n 2 {v2:.1f} s: {speedup:.2f}x; "
                f"{n_items} plain items of {cpu * 1e3:.2f} ms: -n 0 {p0:.1f} s, -n 2 {p2:.1f} s:"
                f" {ceiling:.2f}x; ratio {speedup / ceiling:.2f}"
            )
            # -n 0 is not one core: the zygote forks the next child ahead on the second one
            print(f"  cores busy (CPU-s / wall): verify -n 0 {c0 / v0:.2f}, -n 2 {c2 / v2:.2f}")
        print(
            f"verify speed-up / xdist ceiling = {statistics.median(ratios):.2f} (median of "
            f"{len(ratios)})   target >= 0.95"
        )


if __name__ == "__main__":
    sys.exit(main())
