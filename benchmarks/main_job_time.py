"""The main job's wall time with and without the Go pool, alternating in one process.

Each turn runs README's main job, `pytest --embedder=minilm`, cold (an empty cache directory:
no vectors, no outcomes), on two copies of the bundled items made here: all three pools, and
the same without `go/` (the job as it was before Go). The two alternate, the first of a turn
switching each time (AB BA AB ...), so a load that drifts weighs on both alike. Printed per run:
the wall time and each pool's "embedding and ranking took" line; at the end the medians and the
ratio with / without Go, the job alone and with a set-up time added (``--setup SECONDS``, the
fresh clone's `scripts/bootstrap`, measured apart: it is the same for both but for Go's toolchain,
``--go-setup SECONDS``).

Usage: python benchmarks/main_job_time.py [--repeats N] [--setup S] [--go-setup S]
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POOL_TIME = re.compile(r"^(?:(\w+) pool:\n.*?)?\(tie-aware .*?took ([\d.]+) s\)", re.M | re.S)


def run_job(items: Path, cache: Path) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "pytest", "--embedder=minilm", f"--execretrieval-items={items}"]
    cmd += ["-q", "-p", "no:cacheprovider", f"--execretrieval-cache-dir={cache}"]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: benchmark items failed at rank 1, as they do
        sys.exit(f"{cmd} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return elapsed, done.stdout


def pool_times(output: str) -> str:
    """``python 162.4 s, go 171.0 s, ...`` from the terminal summary's per-pool lines."""
    return ", ".join(
        f"{name or 'python'} {float(took):.1f} s" for name, took in POOL_TIME.findall(output)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--setup", type=float, default=0.0, help="seconds of scripts/bootstrap")
    ap.add_argument("--go-setup", type=float, default=0.0, help="seconds of Go's install")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with_go = Path(tmp) / "with-go"
        shutil.copytree(ROOT / "items", with_go)
        without_go = Path(tmp) / "without-go"
        shutil.copytree(with_go, without_go, ignore=shutil.ignore_patterns("go"))
        variants = {"with Go": with_go, "without Go": without_go}
        times: dict[str, list[float]] = {name: [] for name in variants}
        for turn in range(args.repeats):
            order = list(variants) if turn % 2 == 0 else list(reversed(variants))
            for name in order:
                cache = Path(tmp) / f"cache-{turn}-{name.replace(' ', '-')}"
                elapsed, output = run_job(variants[name], cache)
                shutil.rmtree(cache)
                times[name].append(elapsed)
                print(f"turn {turn + 1} {name:10}: {elapsed:6.1f} s ({pool_times(output)})")
                sys.stdout.flush()
    go, base = (statistics.median(times[name]) for name in variants)
    print(f"median with Go {go:.1f} s, without {base:.1f} s: job {go / base:.3f}x")
    if args.setup:
        total = (args.setup + args.go_setup + go) / (args.setup + base)
        print(f"with set-up ({args.setup:.0f} s, Go's {args.go_setup:.0f} s): {total:.3f}x")


if __name__ == "__main__":
    main()
