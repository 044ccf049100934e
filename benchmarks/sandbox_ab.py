"""Two checkouts' sandboxes side by side: paired rounds of suites back to back.

On a shared machine a run's speed can change by 1.5x within minutes, so one run of each
checkout says little about a change of a few percent. This runs both in the same process, one
Sandbox each, in alternating rounds: each round takes a window of N consecutive (snippet, own
suite) pairs of the Python pool, each item's together, and runs it through both sandboxes as
verification does (the next suite submitted before the current reply is read), this checkout
first in even rounds, the other first in odd ones. It prints each round's ratio and their
median: a ratio below 1 means the other checkout is faster.

Usage: python benchmarks/sandbox_ab.py --before DIR [ITEMS_DIR] [--suites N] [--rounds R]
(DIR: another checkout, e.g. `git worktree add DIR main`; default 300 suites, 12 rounds).
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from verify_speed import ROOT, pairs


def load_sandbox(checkout: Path, where: Path, name: str) -> Any:
    """The ``sandbox`` module of ``checkout``'s execution package, imported as ``name`` (the
    package uses relative imports only, so a copy under another name is independent)."""
    shutil.copytree(checkout / "pytest_execretrieval" / "execution", where / name)
    return importlib.import_module(f"{name}.sandbox")


def one_window(sandbox: Any, window: list[dict]) -> float:
    """Milliseconds a suite, back to back, the next one submitted ahead (as
    ``SuiteRunner.imap`` runs them; a copied package cannot import the runner, whose outcome
    cache imports from outside ``execution``)."""
    for req in window[:10]:  # warm: the plans and the zygote's compile cache
        sandbox.run(req["code"], req["setup"], req["tests"])
    start = time.perf_counter()
    sandbox.submit(window[0]["code"], window[0]["setup"], window[0]["tests"])
    for i, req in enumerate(window):
        sandbox.run(req["code"], req["setup"], req["tests"])
        if i + 1 < len(window):
            ahead = window[i + 1]
            sandbox.submit(ahead["code"], ahead["setup"], ahead["tests"])
    return (time.perf_counter() - start) / len(window) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("items", nargs="?", default=str(ROOT / "items"))
    ap.add_argument("--before", type=Path, required=True, metavar="DIR")
    ap.add_argument("--suites", type=int, default=300, metavar="N")
    ap.add_argument("--rounds", type=int, default=12, metavar="R")
    args = ap.parse_args()
    # Each item's snippets together, as verification runs them (and sandbox_only in verify_speed).
    work = sorted(pairs(Path(args.items)), key=lambda req: (req["setup"], req["tests"]))
    if len(work) < args.suites:
        sys.exit(f"only {len(work)} pairs in {args.items}")
    checkouts = {"this checkout": ROOT, str(args.before): args.before.resolve()}
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, tmp)
        modules = [
            load_sandbox(path, Path(tmp), f"variant_{i}")
            for i, path in enumerate(checkouts.values())
        ]
        sandboxes = [module.Sandbox() for module in modules]
        ms: list[list[float]] = [[], []]
        try:
            for r in range(args.rounds):
                start = r * (len(work) - args.suites) // max(args.rounds - 1, 1)
                window = work[start : start + args.suites]
                for i in (0, 1) if r % 2 == 0 else (1, 0):
                    ms[i].append(one_window(sandboxes[i], window))
        finally:
            for sandbox in sandboxes:
                sandbox.close()
    for (name, _), times in zip(checkouts.items(), ms, strict=True):
        print(f"{name}: median {statistics.median(times):.3f} ms a suite ({len(times)} rounds)")
    ratios = [b / a for a, b in zip(*ms, strict=True)]
    print(f"{args.before} / this checkout, per round: " + " ".join(f"{x:.2f}" for x in ratios))
    print(f"median paired ratio: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
