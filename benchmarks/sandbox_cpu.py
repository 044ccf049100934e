"""CPU time a suite costs each sandbox process, from /proc (less noisy than wall time).

Runs the bundled items' canonicals and distractors of the first N/5 queries, in item order, through
one Sandbox, and prints per suite: the checker's own CPU, the zygote's (the PID namespace's
init) and that of the children it reaped, plus the wall time, and their minor page faults
(a count, not a time: it does not move with the machine's load, while what one fault costs
does). The checker is the server process
or, once it has a PID namespace of its own, the server's one child (the server is then only its
namespace's idle anchor). Works with older sandboxes too (one server process): then only the
first line is printed.

Usage: python benchmarks/sandbox_cpu.py [N]   (default N=500)
"""

from __future__ import annotations

import json
import os
import sys
import time
import tomllib
from pathlib import Path

from pytest_execretrieval.execution.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def cpu(pid: int) -> list[float]:
    """utime, stime, cutime, cstime of ``pid`` in seconds, then its minor page faults and
    those of the children it reaped."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return [int(x) / TICK for x in fields[11:15]] + [int(fields[7]), int(fields[8])]


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, ValueError):
                continue
    return out


def nspids(pid: int) -> list[str]:
    """``pid`` in each PID namespace it is in, outermost first."""
    with open(f"/proc/{pid}/status") as fh:
        return next(ln for ln in fh if ln.startswith("NSpid:")).split()[1:]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    items = ROOT / "items"
    suites = {}
    for path in items.glob("*/*.toml"):
        data = tomllib.loads(path.read_text())
        suites[f"{path.parent.name}/{path.stem}"] = (data.get("setup", ""), data["tests"])
    records = [json.loads(line) for line in (items / "corpus.jsonl").read_text().splitlines()]
    queries = set(sorted({r["query_id"] for r in records})[: max(n // 5, 1)])
    records = sorted((r for r in records if r["query_id"] in queries), key=lambda r: r["query_id"])
    with Sandbox() as sandbox:
        sandbox.run("", "", ["assert 1"])
        procs = {"checker": sandbox.server_pid}
        below = children(sandbox.server_pid)
        if below and len(nspids(below[0])) > 1:  # the server is its PID namespace's anchor
            procs["checker"] = below[0]
        anchor = children(procs["checker"])
        init = children(anchor[0]) if anchor else []
        if init:
            procs["zygote"] = min(init)  # the init; a spare child is its child, not ours
        before = {name: cpu(pid) for name, pid in procs.items()}
        start = time.perf_counter()
        for rec in records:
            setup, tests = suites[rec["query_id"]]
            sandbox.run(rec["code"], setup, tests)
        wall = time.perf_counter() - start
        after = {name: cpu(pid) for name, pid in procs.items()}
    k = 1e3 / len(records)
    print(f"{len(records)} suites, wall {wall * k:.2f} ms/suite; CPU ms/suite:")
    for name in procs:
        u, s, cu, cs = ((a - b) * k for a, b in zip(after[name][:4], before[name][:4], strict=True))
        f, cf = ((a - b) / len(records) for a, b in zip(after[name][4:], before[name][4:]))
        print(
            f"  {name:<8} own {u + s:.2f} (user {u:.2f}, sys {s:.2f}, {f:.0f} faults); "
            f"children it reaped {cu + cs:.2f} (user {cu:.2f}, sys {cs:.2f}, {cf:.0f} faults)"
        )
    total = sum(sum(after[p][:4]) - sum(before[p][:4]) for p in procs) * k
    print(f"  total {total:.2f}")


if __name__ == "__main__":
    main()
