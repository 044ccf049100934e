"""Mining in repository context, before and after (issue 55): per package, each SOURCE mined
without and with ``--context`` (carving its test suite) and built, then the table of
docs/mining.md: public functions and methods, items before and after, median tests per item
and the share carved, distractors per item and the share killed only by a crash, the queries
the quality check dropped, and the time to mine and to build.

The packages' sdists come from PyPI (``pip download --no-deps --no-binary :all: NAME==VERSION
-d SDISTS``); ``--wheels DIR`` holds a folder per sdist (``DIR/<sdist name without .tar.gz>``)
of the pure-Python wheels its context takes (its dependencies, its test suite's).

Then the packages' ``MINED.md`` tables summed: why functions were skipped, and why those with a
docstring got no test, by what carving saw (``--sum DIR...`` prints these two for items
directories already mined).

Usage: python benchmarks/mining_context.py SDISTS [--wheels DIR] [--out DIR] [-n 2]
       [--allow-licence EXPR]
       python benchmarks/mining_context.py --sum DIR [DIR ...]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

EXECRETRIEVAL = str(Path(sys.executable).with_name("execretrieval"))


def run(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 2):
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout}{done.stderr}")
    return time.perf_counter() - start, done.stdout + done.stderr


def facts(out: Path) -> dict:
    """What a mined and built items directory holds."""
    text = (out / "MINED.md").read_text()
    found = re.search(r"public functions: (\d+); items written: (\d+)", text)
    assert found, out
    tests, carved = [], 0
    for path in sorted(out.glob("*/*.toml")):
        item = tomllib.loads(path.read_text())
        provenance = item.get("source", {}).get("tests", [])
        tests.append(len(item["tests"]))
        carved += sum(1 for p in provenance if p.startswith("carved"))
    distractors = crashes = 0
    corpus = out / "corpus.jsonl"
    for line in corpus.read_text().splitlines() if corpus.is_file() else []:
        snippet = json.loads(line)
        if snippet["kind"] == "distractor":
            distractors += 1
            crashes += snippet.get("kill") != "assertion"
    drops = sum(int(n) for n in re.findall(r"\| query: [^|]+ \| (\d+) \|", text))
    return {
        "functions": int(found.group(1)),
        "items": int(found.group(2)),
        "median_tests": statistics.median(tests) if tests else 0,
        "carved": carved / max(1, sum(tests)),
        "distractors": distractors,
        "crash_only": crashes,
        "query_drops": drops,
    }


def table_rows(text: str, heading: str) -> dict[str, int]:
    """The first two columns of the table under ``heading`` in a ``MINED.md``."""
    rows: dict[str, int] = {}
    section = text.partition(f"{heading}\n")[2]
    for line in section.splitlines()[3:]:  # a blank line, the header, its rule
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if cells[1].isdigit():
            rows[cells[0]] = int(cells[1])
    return rows


def print_sums(outs: list[Path]) -> None:
    """Why the functions of the items directories ``outs`` became no item, summed."""
    for heading, label in (
        ("## Functions skipped, by reason", "reason"),
        ("### Functions with no test, by what carving saw", "no test, by what carving saw"),
    ):
        total: dict[str, int] = {}
        for out in outs:
            for key, n in table_rows((out / "MINED.md").read_text(), heading).items():
                total[key] = total.get(key, 0) + n
        print(f"\n| {label} | functions |\n|---|---:|")
        for key, n in sorted(total.items(), key=lambda r: (-r[1], r[0])):
            print(f"| {key} | {n} |")


def mined(source: Path, out: Path, extra: list[str], jobs: int) -> tuple[dict, float, float]:
    shutil.rmtree(out, ignore_errors=True)
    mine_s, _ = run([EXECRETRIEVAL, "mine", str(source), "--out", str(out), *extra])
    build_s = 0.0
    if list(out.glob("*/*.toml")):
        build_s, _ = run([EXECRETRIEVAL, "build", str(out), "-j", str(jobs)])
    return facts(out), mine_s, build_s


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sdists", type=Path, nargs="?")
    parser.add_argument("--sum", type=Path, nargs="+", help="items directories already mined")
    parser.add_argument("--wheels", type=Path)
    parser.add_argument("--out", type=Path, default=Path("/tmp/mining-context"))
    parser.add_argument("-n", type=int, default=2)
    parser.add_argument("--allow-licence", default=None)
    args = parser.parse_args()
    if args.sum:
        print_sums(args.sum)
        return
    if args.sdists is None:
        parser.error("SDISTS or --sum DIR... is needed")
    licence = ["--allow-licence", args.allow_licence] if args.allow_licence else []
    print(
        "| package | functions and methods | items before | items after | share | median tests"
        " | carved | distractors per item | crash-only | query drops | mine | build |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for sdist in sorted(args.sdists.glob("*.tar.gz")):
        name = sdist.name.removesuffix(".tar.gz")
        wheels = args.wheels / name if args.wheels else None
        context = ["--context", "-n", str(args.n)]
        if wheels is not None and wheels.is_dir():
            context += ["--wheels", str(wheels)]
        before, _, _ = mined(sdist, args.out / "before" / name, licence, args.n)
        after, mine_s, build_s = mined(sdist, args.out / "after" / name, licence + context, args.n)
        per_item = after["distractors"] / max(1, after["items"])
        print(
            f"| {name} | {after['functions']} | {before['items']} | {after['items']} "
            f"| {after['items'] / max(1, after['functions']):.0%} | {after['median_tests']:g} "
            f"| {after['carved']:.0%} | {per_item:.1f} "
            f"| {after['crash_only']}/{after['distractors']} | {after['query_drops']} "
            f"| {mine_s:.0f} s | {build_s:.0f} s |",
            flush=True,
        )
    print_sums(sorted((args.out / "after").iterdir()))


if __name__ == "__main__":
    main()
