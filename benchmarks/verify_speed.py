"""Targets 3 and 4 of the performance issue, measured side by side in one run.

3. `execretrieval verify -n 0` (empty outcome cache; verification never reads it anyway) against
   the paper's runner: every (snippet, own suite) pair in a fresh `python -I` subprocess with a
   5 s timeout, one after another. Target: >= 5x faster.
4. `execretrieval verify -n 2` against `-n 0` on 2 cores. Target: >= 1.7x faster.

Usage: python benchmarks/verify_speed.py [ITEMS_DIR]   (default: the bundled items/)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PAPER_RUNNER = """
import json, sys
req = json.loads(sys.stdin.read())
def raises(exc, fn, *a, **k):
    try:
        fn(*a, **k)
    except exc:
        return True
    except Exception:
        return False
    return False
ns = {"raises": raises}
exec(req["setup"], ns)
exec(req["code"], ns)
for t in req["tests"]:
    try:
        exec(t, dict(ns))
        print("pass")
    except AssertionError:
        print("fail")
    except Exception as e:
        print("error:" + type(e).__name__)
"""


def pairs(items: Path) -> list[dict]:
    suites = {}
    for path in items.glob("*/*.toml"):
        data = tomllib.loads(path.read_text())
        suites[f"{path.parent.name}/{path.stem}"] = (data.get("setup", ""), data["tests"])
    out = []
    for name in ("corpus.jsonl", "alternatives.jsonl"):
        for line in (items / name).read_text().splitlines():
            row = json.loads(line)
            setup, tests = suites[row["query_id"]]
            out.append({"code": row["code"], "setup": setup, "tests": tests})
    return out


def paper_runner(work: list[dict]) -> float:
    start = time.perf_counter()
    for req in work:
        try:
            subprocess.run([sys.executable, "-I", "-c", PAPER_RUNNER], input=json.dumps(req),
                           capture_output=True, text=True, timeout=5)  # fmt: skip
        except subprocess.TimeoutExpired:
            pass
    return time.perf_counter() - start


def verify(items: Path, n: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest_execretrieval.cli", "verify", str(items), "-n", n, "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode != 0:
        sys.exit(f"verify -n {n} failed:\n{done.stdout[-3000:]}")
    return time.perf_counter() - start


def main() -> None:
    items = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "items").resolve()
    work = pairs(items)
    paper = paper_runner(work)
    serial = verify(items, "0")
    parallel = verify(items, "2")
    print(f"{len(work)} (snippet, own suite) pairs")
    print(f"paper runner (fresh python -I each, sequential): {paper:7.1f} s")
    print(f"execretrieval verify -n 0:                       {serial:7.1f} s")
    print(f"execretrieval verify -n 2:                       {parallel:7.1f} s")
    print(f"3. paper / verify -n 0 = {paper / serial:5.1f}x   target >= 5x")
    print(f"4. -n 0 / -n 2         = {serial / parallel:5.2f}x   target >= 1.7x")


if __name__ == "__main__":
    main()
