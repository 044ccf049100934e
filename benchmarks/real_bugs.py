"""The real-bug corpus and its table (README "Real bugs from history").

Mines each git repository's single-statement fixes (``execretrieval mine REPO --history``) into
a temporary directory, assembles them into one items directory (default ``mined/history``: one
domain per repository, their ``MINED.md`` and ``NOTICE`` joined), builds it, and runs the
benchmark on it per embedder (``pytest --embedder NAME --execretrieval-items DIR``, the user's
command, in a subprocess). Prints per embedder the real-bug deception rate beside the mutant
deception of the same queries with the paired difference, its CI and p (the report's
``analyses.real_bugs``), and the fixes found / kept / surviving per repository.

The repositories are local clones (CI never fetches; the committed corpus is what it tests).

Usage: python benchmarks/real_bugs.py [--out DIR] [--embedders bm25,minilm,e5-small]
       REPO[=DOMAIN] ...
(DOMAIN: where the repository declares no distribution name its directory's would be used)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mined_table import report

ROOT = Path(__file__).resolve().parents[1]


def execretrieval(*args: str) -> str:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("execretrieval")), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def assemble(repos: list[str], out: Path) -> list[str]:
    """Mine every repository into ``out``, one domain each; the summary line of each."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    mined, notices, summaries = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n, spec in enumerate(repos):
            repo, _, domain = str(spec).partition("=")
            named = ["--domain", domain] if domain else []
            where = Path(tmp) / str(n)
            summaries.append(execretrieval("mine", repo, "--history", "--out", str(where), *named))
            for domain in sorted(p for p in where.iterdir() if p.is_dir()):
                shutil.copytree(domain, out / domain.name)
            mined.append((where / "MINED.md").read_text())
            notices.append((where / "NOTICE").read_text())
    (out / "MINED.md").write_text("\n".join(mined))
    (out / "NOTICE").write_text("\n".join(notices))
    return summaries


def line(name: str, section: dict | None) -> str:
    if not section:
        return f"| {name} | no real bug in the pool | | | |"
    low, high = section.get("difference_ci95") or (None, None)
    ci = f"{section['difference']:+.3f} [{low:+.2f}, {high:+.2f}]" if low is not None else "n/a"
    exec1 = section.get("exec@1")  # over all pairs only, not per pattern
    mutants = section["mutant_deception"]
    return (
        f"| {name} | {section['real_bug_deception']:.3f} ({section['n_pairs']}) | "
        f"{'n/a' if mutants is None else f'{mutants:.3f}'} | "
        f"{ci}, p {section.get('p_value', 1):.3g} | "
        + (f"{exec1['with_real_bugs']:.3f} / {exec1['mutants_only']} |" if exec1 else " |")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repos", nargs="+", metavar="REPO[=DOMAIN]")
    parser.add_argument("--out", type=Path, default=ROOT / "mined" / "history")
    parser.add_argument("--embedders", default="bm25,minilm,e5-small")
    parser.add_argument("--cache", type=Path, default=ROOT / ".execretrieval_cache")
    args = parser.parse_args()
    for summary in assemble(args.repos, args.out):
        print(summary.strip())
    print(execretrieval("build", str(args.out), "-j", "1").strip().splitlines()[-1])
    print()
    print(
        "| embedder | real-bug deception (pairs) | mutant deception, same queries | "
        "difference [95% CI], sign-flip p | exec@1 with / without the real bugs |"
    )
    print("|---|---:|---:|---|---|")
    for name in args.embedders.split(","):
        data = report(args.out, name, args.cache, [])
        print(line(name, data["analyses"].get("real_bugs")))
        patterns = (data["analyses"].get("real_bugs") or {}).get("by_pattern", {})
        for pattern, section in patterns.items():
            print(line(f"{name}: {pattern}", section))
    counts = json.loads((args.out / "manifest.json").read_text())["counts"]
    print(
        f"\nreal bugs in the pool: {counts.get('real_bugs', 0)}; "
        f"patterns: {counts.get('per_pattern', {})}"
    )


if __name__ == "__main__":
    main()
