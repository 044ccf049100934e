"""The mined corpora's table (README "Benchmark your own code"): per corpus and embedder, exec@1,
exec@5 and nDCG@10 with their 95% CIs, without and with the package's own functions as a
background pool, on all tests and on the authors' tests alone; and how often a real function
of the package outranks the canonical.

Each cell is one ``pytest --embedder NAME --execretrieval-items DIR`` run in a subprocess (the
user's command), its report JSON read back. The background SOURCE is the corpus's own wheel
(``pip download --no-deps NAME==VERSION``; ``--wheels DIR`` says where they are).

Usage: python benchmarks/mined_table.py [--wheels DIR] [--embedders bm25,minilm,e5-small]
       [--tests all,authors] [CORPUS_DIR ...]   (default: every directory under mined/)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METRICS = ("exec@1", "exec@5", "ndcg@10")


def report(items: Path, embedder: str, cache: Path, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
                f"--embedder={embedder}",
                f"--execretrieval-items={items}",
                f"--execretrieval-cache-dir={cache}",
                f"--execretrieval-report-dir={out}",
                *extra,
            ],
            cwd=out,
            capture_output=True,
            check=False,
        )
        path = Path(out) / f"{embedder}.json"
        if not path.is_file():
            raise SystemExit(f"no report for {embedder} on {items} {extra}")
        return json.loads(path.read_text())


def cell(data: dict, metric: str) -> str:
    low, high = data["ci95"][metric]
    return f"{data['metrics'][metric]:.3f} [{low:.2f}, {high:.2f}]"


def wheel_of(items: Path, wheels: Path) -> Path | None:
    name = items.name.replace("_", "-")
    found = sorted(wheels.glob(f"{items.name}-*.whl")) + sorted(wheels.glob(f"{name}-*.whl"))
    return found[0] if found else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpora", nargs="*", type=Path)
    parser.add_argument("--wheels", type=Path, default=Path("/tmp/wheels"))
    parser.add_argument("--embedders", default="bm25,minilm,e5-small")
    parser.add_argument("--tests", default="all,authors", help="which tests decide, per run")
    args = parser.parse_args()
    corpora = [p.resolve() for p in args.corpora] or sorted(
        p for p in (ROOT / "mined").iterdir() if p.is_dir()
    )
    embedders = args.embedders.split(",")
    cache = Path(tempfile.mkdtemp(prefix="mined-table-cache-"))
    print(
        "| corpus | embedder | tests | background | queries | pool | "
        + " | ".join(METRICS)
        + " | real neighbour above canonical |"
    )
    print("|---|---|---|---|---:|---:|" + "---|" * len(METRICS) + "---:|")
    for items in corpora:
        wheel = wheel_of(items, args.wheels)
        backgrounds = [[]] + ([[f"--execretrieval-background={wheel}"]] if wheel else [])
        for embedder in embedders:
            for tests in args.tests.split(","):
                for background in backgrounds:
                    data = report(
                        items, embedder, cache, [f"--execretrieval-tests={tests}", *background]
                    )
                    share = data.get("analyses", {}).get("background_neighbours")
                    above = f"{share['share_above']:.2f}" if share else "-"
                    print(
                        f"| {items.name} | {embedder} | {tests} | "
                        f"{'yes' if background else 'no'} | "
                        f"{data['corpus']['n_queries']} | {data['corpus']['n_snippets']} | "
                        + " | ".join(cell(data, m) for m in METRICS)
                        + f" | {above} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
