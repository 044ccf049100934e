"""Draw a held-out audit sample of the items a commit range edited, and print each drawn item's
dossier for a reader: query, canonical, tests and every distractor of its committed corpus.

The edited set is the item files (items/DOMAIN/NAME.toml, items/javascript/DOMAIN/NAME.toml)
that `git diff --name-only BASE HEAD -- items/` names and that still exist at HEAD; derived
directories (families, stack-*, mutmut) are not items. The draw is uniform without replacement,
from the sorted edited ids with random.Random(SEED), so the sample is repeatable.

Usage: python benchmarks/audit_sample.py BASE HEAD --seed S [--python 30] [--javascript 20] [--show]
Nothing of an item is executed: the dossier is text read from the checkout's files (item and
committed corpus), so HEAD should be the checked-out commit.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tomllib
from pathlib import Path

from pytest_execretrieval.corpus.items import item_id
from pytest_execretrieval.corpus.store import Snippet, read_corpus

ROOT = Path(__file__).resolve().parents[1]
ITEMS = ROOT / "items"
DERIVED = {"families", "mutmut"}


def edited_items(base: str, head: str) -> dict[str, list[Path]]:
    """The edited item files per language ("python", "javascript"), sorted by path."""
    names = subprocess.run(
        ["git", "-C", str(ROOT), "diff", "--name-only", base, head, "--", "items/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    edited: dict[str, list[Path]] = {"python": [], "javascript": []}
    for name in sorted(names):
        parts = Path(name).parts
        lang = "javascript" if parts[1] == "javascript" else "python"
        inner = parts[2:] if lang == "javascript" else parts[1:]
        is_item = len(inner) == 2 and inner[1].endswith(".toml")
        if is_item and inner[0] not in DERIVED and not inner[0].startswith("stack-"):
            if (ROOT / name).is_file():
                edited[lang].append(ROOT / name)
    return edited


def draw(paths: list[Path], k: int, rng: random.Random) -> list[Path]:
    return sorted(rng.sample(paths, min(k, len(paths))))


def item_dir(path: Path) -> Path:
    return path.parent.parent


def dossier(path: Path, snippets: list[Snippet]) -> str:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    lines = [
        f"=== {path.relative_to(ROOT)}",
        f"QUERY: {data['query']}",
        "CANONICAL:",
        data["canonical"].strip("\n"),
        "TESTS:",
    ]
    lines += [f"  [{i}] {t}" for i, t in enumerate(data["tests"])]
    for n, alt in enumerate(data.get("alternatives", [])):
        lines += [f"ALTERNATIVE {n}:", alt.strip("\n")]
    distractors = [s for s in snippets if s.kind == "distractor"]
    lines.append(f"DISTRACTORS: {len(distractors)}")
    for s in distractors:
        lines += [
            f"--- {s.operator} line {s.line} failing {list(s.failing_tests)}"
            f" equivalence {s.equivalence}",
            s.diff.rstrip("\n"),
        ]
    return "\n".join(lines)


def show(sample: list[Path]) -> None:
    corpora = {d: read_corpus(d) for d in {item_dir(p) for p in sample}}
    for path in sample:
        own = [s for s in corpora[item_dir(path)].snippets if s.query_id == item_id(path)]
        print(dossier(path, own), end="\n\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("head")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--python", type=int, default=30)
    parser.add_argument("--javascript", type=int, default=20)
    parser.add_argument("--show", action="store_true", help="print each drawn item's dossier")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    edited = edited_items(args.base, args.head)
    sizes = {"python": args.python, "javascript": args.javascript}
    sample = {lang: draw(edited[lang], sizes[lang], rng) for lang in ("python", "javascript")}
    for lang, paths in sample.items():
        print(f"# {lang}: {len(paths)} of {len(edited[lang])} edited items, seed {args.seed}")
        print("\n".join(str(p.relative_to(ROOT)) for p in paths))
    if args.show:
        show(sample["python"] + sample["javascript"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
