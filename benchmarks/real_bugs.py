"""The real-bug corpus and its table (README "Real bugs from history").

Mines each git repository's single-statement fixes (``execretrieval mine REPO --history``) into
a temporary directory, assembles them into one items directory (default ``mined/history``: one
domain per repository, their ``MINED.md`` and ``NOTICE`` joined), builds it, and runs the
benchmark on it per embedder (``pytest --embedder NAME --execretrieval-items DIR``, the user's
command, in a subprocess). Prints per embedder the real-bug deception rate beside the mutant
deception of the same queries with the paired difference, its CI and p (the report's
``analyses.real_bugs``), and the fixes found / kept / surviving per repository.

The repositories are local clones (CI never fetches; the committed corpus is what it tests).

With ``--context`` each repository is mined in repository context (``mine --history --context``:
its context archives join the items directory's ``contexts/``), and each embedder's analysis is
also split by what admitted the fix (its subject, a test it added or changed) and by whether it
changed one statement or more (the items' ``[source] admitted`` and ``statements``).
``--repos FILE`` reads the repositories from a file of ``NAME<TAB>REPO<TAB>URL[<TAB>REV]`` lines
(a fetched snapshot has no remote: URL names it; REV: only the commits after it, ``--since``).

Usage: python benchmarks/real_bugs.py [--out DIR] [--embedders bm25,minilm,e5-small]
       [--context] [-n N] [--repos FILE] [REPO[=DOMAIN] ...]
(DOMAIN: where the repository declares no distribution name its directory's would be used)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from mined_table import report

from pytest_execretrieval.scoring.analyses import real_bugs

ROOT = Path(__file__).resolve().parents[1]


def execretrieval(*args: str) -> str:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("execretrieval")), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"execretrieval {' '.join(args)}: {done.stdout}{done.stderr}")
    return done.stdout


def assemble(repos: list[list[str]], out: Path, extra: list[str]) -> list[str]:
    """Mine every repository (``[REPO, option, ...]``) into ``out``, one domain each, their
    context archives in one ``contexts/``; the summary line of each."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    mined, notices, summaries = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (repo, *options) in enumerate(repos):
            where = Path(tmp) / str(n)
            mine = ["mine", repo, "--history", "--out", str(where), *options, *extra]
            summaries.append(execretrieval(*mine))
            for domain in sorted(p for p in where.iterdir() if p.is_dir()):
                shutil.copytree(domain, out / domain.name, dirs_exist_ok=True)
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


def split(data: dict, out: Path) -> dict[str, dict]:
    """The real-bug analysis of the report ``data`` over the queries of each admission and
    statement class (their items' ``[source]`` under ``out``)."""
    groups: dict[str, list[dict]] = {}
    for query in data["per_query"]:
        path = out / f"{query['query_id']}.toml"
        source = tomllib.loads(path.read_text()).get("source", {}) if path.is_file() else {}
        if "statements" not in source:
            continue
        size = "one statement" if source["statements"] == 1 else "more statements"
        for name in ("admitted: " + " and ".join(source.get("admitted", [])), size):
            groups.setdefault(name, []).append(query)
    sections = {name: real_bugs({**data, "per_query": rows}) for name, rows in groups.items()}
    return {name: section for name, section in sorted(sections.items()) if section}


def repositories(args: argparse.Namespace) -> list[list[str]]:
    repos = [
        [spec.partition("=")[0], *(["--domain", d] if (d := spec.partition("=")[2]) else [])]
        for spec in args.repos
    ]
    for line_ in args.repos_file.read_text().splitlines() if args.repos_file else []:
        if line_.strip():
            _, repo, url, *since = line_.split("\t")
            repos.append([repo, "--repo-url", url, *(["--since", since[0]] if since else [])])
    return repos


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repos", nargs="*", metavar="REPO[=DOMAIN]")
    parser.add_argument("--repos", dest="repos_file", type=Path, metavar="FILE")
    parser.add_argument("--out", type=Path, default=ROOT / "mined" / "history")
    parser.add_argument("--embedders", default="bm25,minilm,e5-small")
    parser.add_argument("--cache", type=Path, default=ROOT / ".execretrieval_cache")
    parser.add_argument("--context", action="store_true", help="mine in repository context")
    parser.add_argument("-n", type=int, default=2, help="with --context: sandboxes at once")
    args = parser.parse_args()
    extra = ["--context", "-n", str(args.n)] if args.context else []
    for summary in assemble(repositories(args), args.out, extra):
        print(summary.strip(), flush=True)
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
        for group, section in split(data, args.out).items():
            print(line(f"{name}: {group}", section))
    counts = json.loads((args.out / "manifest.json").read_text())["counts"]
    print(
        f"\nreal bugs in the pool: {counts.get('real_bugs', 0)}; "
        f"patterns: {counts.get('per_pattern', {})}"
    )


if __name__ == "__main__":
    main()
