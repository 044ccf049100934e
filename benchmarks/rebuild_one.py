"""Target of the incremental build: edit one query of the bundled set and rebuild, <= 30 s wall on
the 2-core machine, byte-identical to a full build.

Copies the items (with their committed corpus and build records) to a temporary directory, edits
the query of the first item, and times `execretrieval build COPY` with an empty outcome cache (as
on a fresh clone). With --full-check it also runs `execretrieval build --full` on a second copy
with the same edit and compares the written files byte for byte (that is a full build: about 22
CPU-minutes on the bundled set).

Usage: python benchmarks/rebuild_one.py [ITEMS_DIR] [--sample N] [--full-check]
  --sample N: N of the items (every k-th by id) instead of all; if the corpus has no build
  records yet (built before incremental builds), the sample is first built in full, untimed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _sample import sample_items

from pytest_execretrieval.corpus.incremental import read_records
from pytest_execretrieval.corpus.items import item_paths

ROOT = Path(__file__).resolve().parents[1]


def execretrieval(*args: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest_execretrieval.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode != 0:
        sys.exit(
            f"execretrieval {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return time.perf_counter() - start, done.stdout


def edit_one_query(items: Path) -> str:
    path = item_paths(items)[0]
    text = path.read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("query = "))
    if line[-1] not in "\"'":
        sys.exit(f"{path}: the query is not a one-line string; edit another item")
    path.write_text(text.replace(line, line[:-1] + " (edited)" + line[-1], 1))
    return f"{path.parent.name}/{path.stem}"


def written(items: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(items.glob("*.json*"))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("items", nargs="?", default=str(ROOT / "items"))
    ap.add_argument("--sample", type=int, metavar="N")
    ap.add_argument("--full-check", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        copy = sample_items(Path(args.items), args.sample, Path(tmp) / "items")
        if not read_records(copy):
            if args.sample is None:
                sys.exit(
                    f"{args.items} has no build records (run `execretrieval build --full` "
                    "once), so an incremental build would rebuild every item"
                )
            seconds, _ = execretrieval("build", str(copy), "--full", "--cache-dir", f"{tmp}/c0")
            print(
                f"(no build records in {args.items}: the sample was first built in full, "
                f"{seconds:.1f} s, untimed)"
            )
        other = Path(tmp) / "other"
        if args.full_check:
            sample_items(copy, None, other)
        edited = edit_one_query(copy)
        seconds, out = execretrieval("build", str(copy), "--cache-dir", f"{tmp}/c1")
        n = len(item_paths(copy))
        print(
            f"edited the query of {edited}; `execretrieval build` of {n} items: {seconds:.1f} s "
            "(target <= 30 s on the bundled set)"
        )
        print("  " + out.strip().splitlines()[-1])
        if args.full_check:
            edit_one_query(other)
            full, _ = execretrieval("build", str(other), "--full", "--cache-dir", f"{tmp}/c2")
            same = written(copy) == written(other)
            print(f"  full build: {full:.1f} s; written files byte-identical: {same}")
            if not same:
                sys.exit(1)


if __name__ == "__main__":
    main()
