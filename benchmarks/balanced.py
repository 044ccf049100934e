"""The balanced corpus's shape beside the star corpus's: does a family's shape name the
canonical without the query? Nothing is executed; the corpora are read as committed.

Per corpus, the query-blind controls of :mod:`pytest_execretrieval.scoring.controls` (the
family medoid; the pair and the single-snippet classifiers, each scored on held-out domains,
leave one domain out): the share of families (pairs) whose canonical each names, its 95% CI and
chance. Then per corpus the families' shapes (the canonical the unique medoid, a wrong member
the unique medoid, tied), the medoid's range over domains, and the direction balance of the
edges at the canonical per operator class (:func:`.corpus.balanced.canonical_sides`: on the
``+`` side the canonical has tokens the member lacks, as a guard its mutant lacks).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/balanced.py [--balanced DIR]... [--out FILE]

Needs numpy only. A few minutes of CPU on the 1,000 bundled families.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Collection, Iterable
from pathlib import Path

from pytest_execretrieval.corpus.balanced import MINUS, PLUS, canonical_sides
from pytest_execretrieval.corpus.store import Corpus, CorpusVariant, corpus_dir, read_corpus
from pytest_execretrieval.scoring.controls import CONTROLS, controls_table, families, medoid_values

BALANCED = CorpusVariant(balanced=True)


def control_row(name: str, corpus) -> str:
    """One corpus's line of the controls table (:func:`.scoring.controls.controls_table`)."""
    table = controls_table(corpus.snippets)
    cells = []
    for control in CONTROLS:
        c = table["controls"][control]
        low, high = c["ci95"]
        cells.append(f"{c['rate']:.3f} [{low:.3f}, {high:.3f}] / {c['chance']:.3f}")
    return f"| {name} | {table['n_families']} | " + " | ".join(cells) + " |"


def shape_lines(name: str, corpus, found) -> list[str]:
    """The shapes, the medoid per domain and the direction balance at the canonical."""
    values = medoid_values(found)
    shapes = Counter(
        "canonical centre" if v == 1 else "wrong centre" if v == 0 else "tied" for v in values
    )
    per_domain: dict[str, list[float]] = {}
    for family, value in zip(found, values):
        per_domain.setdefault(family.domain, []).append(value)
    rates = {d: sum(v) / len(v) for d, v in sorted(per_domain.items())}
    operators = {s.snippet_id: s.operator for s in corpus.snippets}
    by_code = {(s.query_id, s.code): s.snippet_id for s in corpus.snippets}
    sides: Counter = Counter()
    for family in found:
        classes = [str(operators[by_code[family.query_id, c]]) for c in family.codes[1:]]
        sides += canonical_sides(family.codes, classes)
    classes = sorted({cls for cls, _ in sides})
    return [
        "",
        f"### {name}",
        "",
        "Medoid (1 = the canonical the unique medoid, 0 = a wrong member, else tied): "
        + ", ".join(f"{k} {n}" for k, n in sorted(shapes.items())),
        "",
        "Medoid rate per domain: " + ", ".join(f"{d} {r:.3f}" for d, r in rates.items()),
        "",
        "Edges at the canonical per class: the canonical on the `+` side (it has tokens the "
        "member lacks) / on the `-` side.",
        "",
        "| class | C `+` | C `-` |",
        "|---|---|---|",
        *(f"| {c} | {sides[c, PLUS]} | {sides[c, MINUS]} |" for c in classes),
        f"| all | {sum(n for (_, s), n in sides.items() if s == PLUS)} "
        f"| {sum(n for (_, s), n in sides.items() if s == MINUS)} |",
    ]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=Path, default=Path("items"), help="the star corpus's items")
    p.add_argument(
        "--balanced",
        type=Path,
        action="append",
        help="an items directory whose balanced corpus to read (repeatable: their families "
        "pooled; default --items); the star families are those of the same queries",
    )
    p.add_argument("--out", type=Path, help="also write the tables here (markdown)")
    args = p.parse_args(argv)
    balanced = args.balanced or [args.items]
    missing = [d for d in balanced if not (corpus_dir(d, BALANCED) / "manifest.json").exists()]
    if missing:
        p.error(f"no balanced corpus in {', '.join(map(str, missing))}: build it with --balanced")
    pools = {
        "balanced": pooled(read_corpus(d, where=corpus_dir(d, BALANCED)) for d in balanced),
    }
    queries = {s.query_id for s in pools["balanced"].snippets}
    star = read_corpus(args.items)
    pools = {"star (default)": pooled([star], queries), **pools}
    lines = [
        "## Query-blind controls: the canonical named without the query",
        "",
        "Cells: rate [95% CI] / chance; the classifiers on held-out domains.",
        "",
        "| corpus | families | " + " | ".join(CONTROLS) + " |",
        "|---|---|" + "---|" * len(CONTROLS),
    ]
    detail: list[str] = []
    for name, corpus in pools.items():
        lines.append(control_row(name, corpus))
        detail += shape_lines(name, corpus, families(corpus.snippets))
    text = "\n".join(lines + detail) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


def pooled(corpora: Iterable[Corpus], queries: Collection[str] | None = None) -> Corpus:
    """The pool snippets of ``corpora`` together (of ``queries`` only, when given)."""
    snippets = tuple(
        s for c in corpora for s in c.snippets if queries is None or s.query_id in queries
    )
    return Corpus(snippets, (), {})


if __name__ == "__main__":
    sys.exit(main())
