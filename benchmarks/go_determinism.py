"""Which Go snippets' outcomes change from run to run (Go randomises map iteration order).

Every snippet of the committed Go corpus (canonicals and distractors of every Nth item) is run
against its item's tests ROUNDS times under the build's limits, all rounds of an item in one
binary (the runner's batch, as the build runs it); each round starts its map iterations at
fresh random points. Printed: each snippet whose outcomes differ between rounds or from those
the corpus recorded, and how often its verdict (every test passes) came out each way. A suite
that takes over half a second is run once (a mutant that loops gains nothing from a rerun).

Usage: python benchmarks/go_determinism.py [EVERY] [ROUNDS] [PART/PARTS]
       (default every item, 5 rounds; PART/PARTS: the PART-th of PARTS slices, for parallel runs)
"""

from __future__ import annotations

import sys
import time
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_execretrieval.corpus.store import read_corpus
from pytest_execretrieval.execution.sandbox import Limits
from pytest_execretrieval.languages.go.runner import GoSandbox

ROOT = Path(__file__).resolve().parents[1]
LIMITS = Limits(timeout_s=1.0)  # the build's mutant limits
RERUN_UNDER_S = 0.5


def main() -> None:
    every = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    part, parts = (int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "1/1").split("/"))
    items_dir = ROOT / "items" / "go"
    by_item = defaultdict(list)
    for snippet in read_corpus(items_dir).snippets:
        by_item[snippet.query_id].append(snippet)
    ids = sorted(by_item)[::every][part - 1 :: parts]
    unstable = runs = 0
    with GoSandbox(LIMITS) as box:
        for item_id in ids:
            tests = tomllib.loads((items_dir / f"{item_id}.toml").read_text())["tests"]
            snippets = by_item[item_id]
            group = f"{item_id}-{time.monotonic_ns()}"
            box.expect(group, [s.code for s in snippets])
            seen: dict[str, Counter] = {s.snippet_id: Counter() for s in snippets}
            slow: set[str] = set()
            for _ in range(rounds):
                for s in snippets:
                    if s.snippet_id in slow:
                        continue
                    start = time.perf_counter()
                    outcomes = tuple(box.run(s.code, "", tests, group=group).outcomes)
                    if time.perf_counter() - start > RERUN_UNDER_S:
                        slow.add(s.snippet_id)
                    seen[s.snippet_id][outcomes] += 1
                    runs += 1
            for s in snippets:
                counts = seen[s.snippet_id]
                if len(counts) > 1 or tuple(s.outcomes) not in counts:
                    unstable += 1
                    passed = sum(n for o, n in counts.items() if all(x == "pass" for x in o))
                    print(
                        f"{item_id} {s.kind} {s.snippet_id}: verdict pass in {passed} of "
                        f"{sum(counts.values())} runs, recorded "
                        f"{'pass' if all(x == 'pass' for x in s.outcomes) else 'killed'}; "
                        f"{len(counts)} distinct outcome lists"
                    )
                    sys.stdout.flush()
    print(f"{len(ids)} items, {runs} suite runs: {unstable} snippet(s) not reproducible")


if __name__ == "__main__":
    main()
