"""Time and CPU per suite: the Python sandbox and the Node runner on the same suites, in one run.

A handful of bundled Python items with hand-written JavaScript twins (below; the same tests,
``ValueError`` read as ``RangeError``). Each item is run as an item is in a build or a
verification: its canonical, then mutants of it (the same single-token edits applied to both
languages' canonicals, where the token occurs, else a comment-only variant), so the Node
runner's process per item serves several suites. Every suite is run ROUNDS times per language;
CPU is the sandbox's processes' own (``RUSAGE_CHILDREN`` across the sandbox's life, start-up
included: the checker, the zygote and the children or node processes they reaped).

Usage: python benchmarks/js_speed.py [ROUNDS] [MUTANTS]   (default 5 rounds, 7 mutants an item)
"""

from __future__ import annotations

import resource
import sys
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_execretrieval.execution.sandbox import Limits, Sandbox
from pytest_execretrieval.languages.javascript.runner import NodeSandbox, find_node

ROOT = Path(__file__).resolve().parents[1]

TWINS = {
    "arrays_lists/add_digit_lists": """
function add_digit_lists(a, b) {
  let i = a.length - 1, j = b.length - 1, carry = 0;
  const out = [];
  while (i >= 0 || j >= 0 || carry) {
    let total = carry;
    if (i >= 0) { total += a[i]; i -= 1; }
    if (j >= 0) { total += b[j]; j -= 1; }
    out.push(total % 10);
    carry = Math.floor(total / 10);
  }
  out.reverse();
  return out.length ? out : [0];
}
""",
    "strings/are_anagrams": """
function are_anagrams(a, b) {
  const counts = new Map();
  for (const ch of a.toLowerCase()) {
    if (ch !== " ") counts.set(ch, (counts.get(ch) || 0) + 1);
  }
  for (const ch of b.toLowerCase()) {
    if (ch === " ") continue;
    if ((counts.get(ch) || 0) === 0) return false;
    counts.set(ch, counts.get(ch) - 1);
  }
  for (const v of counts.values()) if (v !== 0) return false;
  return true;
}
""",
    "dynamic_programming/coin_change_combinations": """
function coin_change_combinations(coins, amount) {
  const ways = [1].concat(new Array(amount).fill(0));
  for (const coin of coins) {
    for (let value = coin; value < amount + 1; value++) ways[value] += ways[value - coin];
  }
  return ways[amount];
}
""",
    "bit_manipulation/binary_gap": """
function binary_gap(n) {
  if (n < 0) throw new RangeError("negative input");
  let best = 0, last = -1, i = 0;
  while (n) {
    if (n & 1) {
      if (last >= 0) best = Math.max(best, i - last - 1);
      last = i;
    }
    n >>= 1;
    i += 1;
  }
  return best;
}
""",
    "strings/atbash_cipher": """
function atbash_cipher(text) {
  const out = [];
  for (const ch of text) {
    const c = ch.charCodeAt(0);
    if (c >= 97 && c <= 122) out.push(String.fromCharCode(122 - (c - 97)));
    else if (c >= 65 && c <= 90) out.push(String.fromCharCode(90 - (c - 65)));
    else out.push(ch);
  }
  return out.join("");
}
""",
    "sorting_searching/argsort_indices": """
function argsort_indices(values, descending = false) {
  const indices = values.map((_, i) => i);
  for (let i = 1; i < indices.length; i++) {
    let j = i;
    while (j > 0) {
      const a = values[indices[j - 1]], b = values[indices[j]];
      if (descending ? b > a : b < a) {
        [indices[j - 1], indices[j]] = [indices[j], indices[j - 1]];
        j -= 1;
      } else break;
    }
  }
  return indices;
}
""",
    "math_number_theory/abundant_numbers_up_to": """
function abundant_numbers_up_to(n) {
  if (n < 1) return [];
  const sums = new Array(n + 1).fill(0);
  for (let d = 1; d < Math.floor(n / 2) + 1; d++) {
    for (let m = 2 * d; m < n + 1; m += d) sums[m] += d;
  }
  const out = [];
  for (let k = 1; k < n + 1; k++) if (sums[k] > k) out.push(k);
  return out;
}
""",
}
# Single-token edits tried in order on both canonicals (the first occurrence).
EDITS = [(" < ", " <= "), (" + 1", " - 1"), (" - 1", " + 1"), (" > ", " >= "), (" >= ", " > ")]
EDITS += [("0", "1"), (" * ", " + "), (" == ", " != ")]


def mutants(code: str, count: int, comment: str) -> list[str]:
    out = []
    for old, new in EDITS:
        if old in code and len(out) < count:
            out.append(code.replace(old, new, 1))
    while len(out) < count:
        out.append(code + f"\n{comment} variant {len(out)}\n")
    return out


Suite = tuple[str, str, list[str], str]  # code, setup, tests, the item (Sandbox.run's group)


def suites(n_mutants: int) -> dict[str, list[Suite]]:
    per_language: dict[str, list[Suite]] = {"python": [], "javascript": []}
    for item_id, js in TWINS.items():
        data = tomllib.loads((ROOT / "items" / f"{item_id}.toml").read_text())
        tests = list(data["tests"])
        js_tests = [t.replace("raises(ValueError,", "raises(RangeError,") for t in tests]
        setup = data.get("setup", "")
        for code in [data["canonical"], *mutants(data["canonical"], n_mutants, "#")]:
            per_language["python"].append((code, setup, tests, item_id))
        for code in [js, *mutants(js, n_mutants, "//")]:
            per_language["javascript"].append((code, "", js_tests, item_id))
    return per_language


def measure(make, batch: list[Suite], rounds: int) -> dict[str, float]:
    """Wall and CPU seconds per suite (the sandbox's processes, start-up and close included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    passed = 0
    with make() as sandbox:
        for _ in range(rounds):
            for code, setup, tests, item in batch:
                passed += sandbox.run(code, setup, tests, group=item).passed
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    n = rounds * len(batch)
    return {"suites": n, "passed": passed, "wall_ms": wall / n * 1000, "cpu_ms": cpu / n * 1000}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    n_mutants = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    node, where = find_node()
    batch = suites(n_mutants)
    limits = Limits()
    canonicals = {"python": 0, "javascript": 0}
    with Sandbox(limits) as py, NodeSandbox(limits) as js:  # the canonicals must pass in both
        for language, box in (("python", py), ("javascript", js)):
            for code, setup, tests, item in batch[language][:: n_mutants + 1]:
                result = box.run(code, setup, tests, group=item)
                assert result.passed, (language, code[:60], result)
                canonicals[language] += 1
    print(f"node: {node} ({where}); {len(TWINS)} items, {n_mutants} mutants each, {rounds} rounds")
    results = {
        "python": measure(lambda: Sandbox(limits), batch["python"], rounds),
        "javascript": measure(lambda: NodeSandbox(limits), batch["javascript"], rounds),
    }
    for language, r in results.items():
        print(
            f"{language:10s} {r['suites']:5d} suites ({r['passed']} passed): "
            f"{r['wall_ms']:6.2f} ms wall, {r['cpu_ms']:6.2f} ms CPU per suite"
        )
    py, js = results["python"], results["javascript"]
    print(
        f"JavaScript / Python per suite: {js['wall_ms'] / py['wall_ms']:.2f}x wall, "
        f"{js['cpu_ms'] / py['cpu_ms']:.2f}x CPU (target <= 2x)"
    )


if __name__ == "__main__":
    main()
