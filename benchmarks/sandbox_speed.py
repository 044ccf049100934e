"""Speedup of the fork-server Sandbox over a fresh ``python -I`` per suite.

Usage: python benchmarks/sandbox_speed.py [N]   (default N=200)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_execretrieval.execution.sandbox import Limits, Sandbox

CODE = """
def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
"""
SETUP = "import math"
TESTS = ["assert fib(0) == 0", "assert fib(10) == 55", "assert fib(20) == 6765"]

# The naive baseline: same semantics, minus the guards, in a fresh interpreter per suite.
NAIVE_RUNNER = """
import json, sys
req = json.loads(sys.stdin.read())
ns = {"__name__": "__candidate__"}
exec(req["setup"], ns)
exec(req["code"], ns)
out = []
for t in req["tests"]:
    try:
        exec(t, dict(ns))
        out.append("pass")
    except AssertionError:
        out.append("fail")
    except BaseException as e:
        out.append("error:" + type(e).__name__)
print(json.dumps(out))
"""


def naive(n: int) -> float:
    payload = json.dumps({"code": CODE, "setup": SETUP, "tests": TESTS})
    start = time.perf_counter()
    for _ in range(n):
        proc = subprocess.run(
            [sys.executable, "-I", "-c", NAIVE_RUNNER],
            input=payload,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        assert json.loads(proc.stdout) == ["pass"] * len(TESTS)
    return time.perf_counter() - start


def forked(n: int) -> float:
    with Sandbox(Limits()) as sandbox:
        sandbox.run(CODE, SETUP, TESTS)  # warm-up, excluded like interpreter caches above
        start = time.perf_counter()
        for _ in range(n):
            assert sandbox.run(CODE, SETUP, TESTS).passed
        return time.perf_counter() - start


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    base, fast = naive(n), forked(n)
    print(f"fresh python -I per suite: {base / n * 1000:7.2f} ms/suite ({n} suites)")
    print(f"fork-server Sandbox:       {fast / n * 1000:7.2f} ms/suite ({n} suites)")
    print(f"speedup: {base / fast:.1f}x")


if __name__ == "__main__":
    main()
