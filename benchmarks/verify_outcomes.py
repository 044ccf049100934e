"""Re-run every recorded snippet through the current sandbox and compare per-test outcomes.

The corpus records, for every canonical, distractor (``items/corpus.jsonl``) and alternative
(``items/alternatives.jsonl``), the outcome of each of its own query's tests. A change to the
runner must not change them (unless a test's shape changed on purpose): this script runs them
all again, with the limits the build used (distractors: the mutant timeout), and prints every
mismatch and a count, and a census of the types the snippets' calls returned. Exit status 1 when
any outcome differs.

Usage: python benchmarks/verify_outcomes.py [ITEMS_DIR] [-j JOBS]   (default: the bundled items/)
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

from pytest_execretrieval.corpus.build import MUTANT_TIMEOUT_S
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.execution.sandbox import Limits

ROOT = Path(__file__).resolve().parents[1]


def records(items_dir: Path) -> list[dict]:
    out = []
    for name in ("corpus.jsonl", "alternatives.jsonl"):
        with open(items_dir / name) as fh:
            out += [json.loads(line) for line in fh if line.strip()]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("items_dir", nargs="?", default=str(ROOT / "items"))
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    items_dir = Path(args.items_dir)
    items, problems = load_items(items_dir)
    if problems:
        print(f"{len(problems)} problem(s) in item files", file=sys.stderr)
        return 2
    by_id = {item.id: item for item in items}
    recs = records(items_dir)
    groups: dict[str, list[dict]] = collections.defaultdict(list)
    for rec in recs:
        groups["distractor" if rec["kind"] == "distractor" else "other"].append(rec)
    limits = {"distractor": Limits(timeout_s=MUTANT_TIMEOUT_S), "other": Limits()}
    mismatches: list[tuple[dict, tuple[str, ...], str]] = []
    kinds: collections.Counter[str] = collections.Counter()
    census: collections.Counter[str] = collections.Counter()
    start = time.perf_counter()
    for group, recs_in_group in groups.items():
        # Sorted by query: consecutive suites share a plan in the checker and the zygote.
        recs_in_group.sort(key=lambda r: (r["query_id"], r["snippet_id"]))
        suites = []
        for rec in recs_in_group:
            item = by_id[rec["query_id"]]
            suites.append((rec["code"], item.setup, list(item.tests)))
        with SuiteRunner(limits[group], cache_dir=None, jobs=args.jobs) as runner:
            results = runner.run_many(suites)
            census.update(runner.value_types())
        for rec, result in zip(recs_in_group, results, strict=True):
            kinds[rec["kind"]] += 1
            if list(result.outcomes) != rec["outcomes"]:
                mismatches.append((rec, result.outcomes, result.detail))
    elapsed = time.perf_counter() - start
    for rec, got, detail in mismatches:
        print(f"MISMATCH {rec['kind']} {rec['query_id']} {rec['snippet_id'][:12]}")
        print(f"  recorded {rec['outcomes']}")
        print(f"  now      {list(got)}  {detail}")
    print("types of the values the snippets' calls returned (nested values included):")
    for name, n in census.most_common():
        print(f"  {name:<14} {n}")
    counts = ", ".join(f"{n} {k}s" for k, n in sorted(kinds.items()))
    print(
        f"{sum(kinds.values())} snippets ({counts}) in {elapsed:.1f} s: "
        f"{len(mismatches)} with different outcomes"
    )
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
