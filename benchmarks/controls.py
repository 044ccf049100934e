"""The query-blind controls of committed corpora: how often each pool names its canonical with
no query read (:mod:`pytest_execretrieval.scoring.controls`: the family medoid, the pair
classifier of token edits and the single-snippet classifier, both held out by domain), with a
blind guess's rate and the 95% bootstrap CI, and the seconds the table took (wall, and the
process's CPU time, which a busy machine does not inflate). Each DIR holds a ``corpus.jsonl``
(an items directory, one of its corpus folders, a mined corpus); the table is markdown.

    python benchmarks/controls.py items items/javascript items/families items/stack-2 \\
        items/mutmut mined/*
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pytest_execretrieval.corpus.store import CORPUS, read_snippets
from pytest_execretrieval.scoring.controls import CONTROLS, controls_table


def cell(figures: dict | None) -> str:
    if figures is None:
        return "n/a"
    low, high = figures["ci95"]
    return f"{figures['rate']:.3f} [{low:.3f}, {high:.3f}] vs {figures['chance']:.3f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", type=Path, help="folders holding a corpus.jsonl")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    print(
        "| corpus | families | held out by | "
        + " | ".join(f"{name} [95% CI] vs chance" for name in CONTROLS)
        + " | seconds (CPU) |"
    )
    print("|---|---|---|" + "---|" * len(CONTROLS) + "---|")
    for where in args.dirs:
        pool = read_snippets(where / CORPUS)
        started, cpu = time.perf_counter(), time.process_time()
        table = controls_table(pool, seed=args.seed)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        found = table["controls"]
        folds = next((c["folds"] for c in found.values() if "folds" in c), "n/a")
        cells = " | ".join(cell(found.get(name)) for name in CONTROLS)
        print(
            f"| {where} | {table['n_families']} | {folds} | {cells} | {seconds:.1f} ({cpu:.1f}) |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
