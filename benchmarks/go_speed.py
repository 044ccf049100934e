"""What a Go item costs: one binary per item (the runner's batch) against one binary per suite.

A sample of the bundled Go items (every Nth), each run as a build runs it: its canonical and
every mutant the Go operators make, against its tests, under the mutant limits (1 s). Two ways,
alternating item by item in one process so that the machine's load falls on both alike:

* ``batch``: the sandbox is told the item's codes first (``Sandbox.expect``, what
  ``SuiteRunner`` does): one compile per candidate, one link, one process for the suites;
* ``single``: no hint: each suite compiles its candidate alone with the driver and links a
  binary of its own.

Wall time per item and per suite, with the first suite of a batch (its build) apart; the
outcomes of the two ways must agree (a difference is printed).

Usage: python benchmarks/go_speed.py [EVERY] [ROUNDS]   (default every 50th item, 1 round)
"""

from __future__ import annotations

import statistics
import sys
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_execretrieval.execution.sandbox import Limits
from pytest_execretrieval.languages import language
from pytest_execretrieval.languages.go.runner import GoSandbox

ROOT = Path(__file__).resolve().parents[1]
LIMITS = Limits(timeout_s=1.0)  # the build's mutant limits


def items(every: int) -> list[dict]:
    paths = sorted((ROOT / "items" / "go").glob("*/*.toml"))[::every]
    return [tomllib.loads(p.read_text()) | {"id": p.stem} for p in paths]


def run_item(
    box: GoSandbox, item: dict, codes: list[str], batch: bool
) -> tuple[float, float, list]:
    """(seconds for the first suite, seconds for the rest, the outcomes)."""
    group = f"{item['id']}-{time.monotonic_ns()}" if batch else None
    if batch:
        box.expect(group, codes)
    start = time.perf_counter()
    outcomes = [box.run(codes[0], "", item["tests"], group=group).outcomes]
    first = time.perf_counter() - start
    outcomes += [box.run(code, "", item["tests"], group=group).outcomes for code in codes[1:]]
    return first, time.perf_counter() - start - first, outcomes


def main() -> None:
    every = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    go = language("go")
    sample = items(every)
    times: dict[str, list[tuple[float, float, int]]] = {"batch": [], "single": []}
    differ = 0
    with GoSandbox(LIMITS) as box:
        box.run("func f() int { return 1 }", "", ["assert f() == 1"])  # start-up apart
        for r in range(rounds):
            for i, item in enumerate(sample):
                codes = [item["canonical"]]
                codes += [m.code for m in go.mutants(item["canonical"], item["entry_point"])]
                order = ("batch", "single") if (i + r) % 2 == 0 else ("single", "batch")
                seen = {}
                for way in order:
                    first, rest, outcomes = run_item(box, item, codes, way == "batch")
                    times[way].append((first, rest, len(codes)))
                    seen[way] = outcomes
                if seen["batch"] != seen["single"]:
                    differ += 1
                    print(f"outcomes differ: {item['id']}", file=sys.stderr)
    suites = sum(n for _, _, n in times["batch"])
    print(f"{len(sample)} items x {rounds} round(s), {suites // rounds} suites a round")
    print("| way | per item (median s) | first suite (median s) | per later suite (ms) |")
    print("|---|---|---|---|")
    for way, rows in times.items():
        per_item = statistics.median(f + r for f, r, _ in rows)
        first = statistics.median(f for f, _, _ in rows)
        later = 1000 * sum(r for _, r, _ in rows) / sum(n - 1 for _, _, n in rows)
        print(f"| {way} | {per_item:.2f} | {first:.3f} | {later:.1f} |")
    ratio = sum(f + r for f, r, _ in times["single"]) / sum(f + r for f, r, _ in times["batch"])
    print(f"single / batch, whole sample: {ratio:.2f}x; outcomes differ for {differ} item(s)")


if __name__ == "__main__":
    main()
