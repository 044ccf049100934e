"""Verification speed, measured side by side in one run.

3. `execretrieval verify -n 0` on the Python pool (empty outcome cache; verification never
   reads it) against the paper's runner: every (snippet, own suite) pair in a fresh `python -I`
   subprocess with a 5 s timeout, one after another. Target: >= 6x faster (issue 30, with every
   kernel layer on).
4. `execretrieval verify -n 2` against `-n 0` on 2 cores; its target is relative to xdist's own
   ceiling, measured by `benchmarks/xdist_ceiling.py` (>= 0.95 of it).

For target 4 it also measures two ceilings: the sandbox's own (the same pairs through one
Sandbox, then split over two processes with a Sandbox each, no pytest at all) and pytest-xdist's
own (as many plain pytest items as verification has, each doing in-process the CPU work one
suite costs the sandbox, run with -n 0 and -n 2: what xdist's per-item cost leaves of 2 cores),
and the same for items of 1 ms and 10 ms, to show how that ratio grows with the work per item.

Usage: python benchmarks/verify_speed.py [ITEMS_DIR] [--sample N] [--serial-only] [--before DIR]
[--repeats R]
(default: the bundled items/; --sample N: N of its items, every k-th by id, with their corpus;
--serial-only: target 3 only, the paper runner and `verify -n 0`; --before DIR: also
`verify -n 0` with the checkout in DIR, e.g. `git worktree add DIR main`, right after this
one's, for a before/after in the same run; --repeats R: R turns of the paper runner and
`verify -n 0`, each turn's ratio and their median, since a shared machine's speed changes
between minutes). Each `verify -n 0` is printed with the CPU of its
whole process tree per pair (pytest and the sandbox processes, start-up included), and the load
average of the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from pytest_execretrieval.cli import VERIFY_FLAGS

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
            subprocess.run(
                [sys.executable, "-I", "-c", PAPER_RUNNER],
                input=json.dumps(req),
                capture_output=True,
                text=True,
                timeout=5,
            )
        except subprocess.TimeoutExpired:
            pass
    return time.perf_counter() - start


SANDBOX_ONLY = """
import json, sys
from pytest_execretrieval.execution.sandbox import Sandbox
work = json.loads(open(sys.argv[1]).read())[int(sys.argv[2])::int(sys.argv[3])]
with Sandbox() as sandbox:
    for req in work:
        sandbox.run(req["code"], req["setup"], req["tests"])
"""


def sandbox_only(work: list[dict], processes: int) -> float:
    """The pairs in item order (as verification runs them) split over `processes` Sandboxes."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(sorted(work, key=lambda req: (req["setup"], req["tests"])), f)
        f.flush()
        start = time.perf_counter()
        argv = [sys.executable, "-c", SANDBOX_ONLY, f.name]
        procs = [
            subprocess.Popen([*argv, str(i), str(processes)], cwd=ROOT) for i in range(processes)
        ]
        if any(proc.wait() for proc in procs):
            sys.exit("a sandbox-only run failed")
        return time.perf_counter() - start


BUSY_TESTS = """
import pytest

@pytest.mark.parametrize("i", range({n}))
def test_work(i):
    sum(range({loops}))
"""


def loops_for(seconds: float) -> int:
    """How many iterations of ``sum(range(n))`` cost ``seconds`` of CPU here."""
    n, cpu = 100_000, 0.0
    while cpu < 0.2:
        n *= 2
        start = time.process_time()
        sum(range(n))
        cpu = time.process_time() - start
    return round(n * seconds / cpu)


def xdist_ceiling(n_items: int, work_s: float) -> tuple[float, float]:
    """Wall seconds of `pytest -n 0` and `-n 2` over `n_items` items of `work_s` CPU each."""
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "test_work.py").write_text(BUSY_TESTS.format(n=n_items, loops=loops_for(work_s)))
        walls = []
        for n in ("0", "2"):
            start = time.perf_counter()
            argv = [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-n",
                n,
                "--rootdir",
                tmp,
                "-c",
                os.devnull,
                *VERIFY_FLAGS,
                "test_work.py",
            ]
            if subprocess.run(argv, cwd=tmp, capture_output=True).returncode != 0:
                sys.exit(f"the xdist ceiling run -n {n} failed")
            walls.append(time.perf_counter() - start)
        return walls[0], walls[1]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# The Python pool only: the pairs the fresh-interpreter runner runs. A JavaScript pool beside it
# (items/javascript/) has a runner of its own, measured by benchmarks/js_speed.py.
PYTHON_POOL = ("-m", "not javascript")


def verify(items: Path, n: str, root: Path = ROOT) -> tuple[float, float, int]:
    """Wall seconds and CPU seconds of the whole process tree (pytest, workers, sandboxes), and
    the number of pytest items, for the Python pool of ``items``; ``root``: the checkout whose
    package runs."""
    cpu, start = children_cpu(), time.perf_counter()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest_execretrieval.cli", "verify", str(items)),
            *("-n", n, "-q", *PYTHON_POOL),
        ],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    if done.returncode != 0:
        sys.exit(f"verify -n {n} failed:\n{done.stdout[-3000:]}")
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    passed = re.search(r"(\d+) passed", done.stdout)
    if passed is None:
        sys.exit(f"verify -n {n} printed no pass count:\n{done.stdout[-3000:]}")
    return wall, cpu, int(passed.group(1))


def sampled(args: argparse.Namespace, tmp: str) -> Path:
    """The items directory of the command line (``--sample N``: a sample of it, in ``tmp``;
    with ``--before``, a copy in ``tmp``: verification refuses an items directory below another
    checkout's conftest.py)."""
    from _sample import sample_items

    if args.sample is not None:
        return sample_items(Path(args.items), args.sample, Path(tmp) / "items").resolve()
    if args.before is not None:
        return Path(shutil.copytree(args.items, Path(tmp) / "items", symlinks=True)).resolve()
    return Path(args.items).resolve()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("items", nargs="?", default=str(ROOT / "items"))
    ap.add_argument("--sample", type=int, metavar="N")
    ap.add_argument("--serial-only", action="store_true", help="target 3 only")
    ap.add_argument("--before", type=Path, metavar="DIR", help="an earlier checkout")
    ap.add_argument(
        "--repeats", type=int, default=1, metavar="R", help="target 3: R paper/verify turns"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        measure(sampled(args, tmp), args.serial_only, args.before, args.repeats)


def load() -> str:
    return "load average " + ", ".join(f"{x:.1f}" for x in os.getloadavg())


def serial(
    items: Path, work: list[dict], before: Path | None, repeats: int = 1
) -> tuple[float, float, int]:
    """Target 3: the paper runner, then `verify -n 0` (then with ``before``'s checkout too),
    ``repeats`` times in turn; prints each repeat's ratios and, with repeats, their medians.
    Returns the median repeat's `verify -n 0` wall and CPU seconds and its number of items."""
    print(f"{len(work)} (snippet, own suite) pairs; {load()}")
    runs = [("", ROOT)] + ([(f" ({before})", before.resolve())] if before else [])
    ratios: dict[str, list[float]] = {what: [] for what, _ in runs}
    ours = []
    for _ in range(repeats):
        paper = paper_runner(work)
        print(f"paper runner (fresh python -I each, sequential): {paper:6.1f} s; {load()}")
        for what, root in runs:
            wall, cpu, n_items = verify(items, "0", root)
            ratios[what].append(paper / wall)
            if not what:
                ours.append((wall, cpu, n_items))
            print(
                f"execretrieval verify -n 0{what}: {wall:6.1f} s ({cpu:.1f} CPU-s, "
                f"{cpu / len(work) * 1e3:.2f} ms CPU a pair); {load()}"
            )
        for what, found in ratios.items():
            print(f"3. paper / verify -n 0{what} = {found[-1]:5.1f}x   target >= 6x")
    if repeats > 1:
        for what, found in ratios.items():
            each = ", ".join(f"{r:.1f}x" for r in found)
            print(f"3. median of {repeats} repeats{what}: {statistics.median(found):.1f}x ({each})")
    return sorted(ours)[len(ours) // 2]


def measure(
    items: Path, serial_only: bool = False, before: Path | None = None, repeats: int = 1
) -> None:
    work = pairs(items)
    serial_wall, serial_cpu, n_items = serial(items, work, before, repeats)
    if serial_only:
        return
    parallel, parallel_cpu, _ = verify(items, "2")
    one, two = sandbox_only(work, 1), sandbox_only(work, 2)
    suite_s = one / len(work)
    # xdist's own ratio for items of a suite's cost, and how it grows with the work per item.
    plain = {
        (n, w): xdist_ceiling(n, w)
        for n, w in ((n_items, suite_s), (n_items, 0.001), (n_items // 4, 0.010))
    }
    print(f"execretrieval verify -n 2: {parallel:6.1f} s ({parallel_cpu:.1f} CPU-s)")
    print(
        f"4. -n 0 / -n 2         = {serial_wall / parallel:5.2f}x   (target: >= 0.95 of xdist's "
        "ceiling, benchmarks/xdist_ceiling.py)"
    )
    print(
        f"   the sandbox alone (no pytest): 1 process {one:.1f} s, 2 processes {two:.1f} s, "
        f"{one / two:.2f}x"
    )
    for (n, work_s), (plain_serial, plain_parallel) in plain.items():
        what = " (what a suite costs the sandbox)" if work_s == suite_s else ""
        print(
            f"   xdist alone: {n} plain pytest items of {work_s * 1e3:.1f} ms CPU each{what}: "
            f"-n 0 {plain_serial:.1f} s, -n 2 {plain_parallel:.1f} s, "
            f"{plain_serial / plain_parallel:.2f}x"
        )


if __name__ == "__main__":
    main()
