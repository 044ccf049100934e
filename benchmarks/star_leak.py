"""How much of the canonical's identity does a corpus give away without the query? Two
query-blind measurements per corpus, neither executing anything:

* **The star's centre.** Each family (the canonical and its chosen distractors, single-edit
  mutants of it) is ranked by :func:`medoid.centrality` (minus the mean token edits to the near
  clones): how often is the canonical first (tie-aware), against a random order's 1/|family|?
  A reranker that sees the candidates together (the ``diff`` view, ``clones:``, a listwise
  model) can find the canonical from this shape alone. Beside it: how often the canonical has
  the fewest marked runs in the ``diff`` view (does that view hand the centre over by count?).
* **The operators' fingerprint.** One (canonical, mutant) pair shown alone has no centre. A
  logistic regression over that pair's token edits (each differing run as ``this|that``, the
  tokens on each side, the length difference; trained antisymmetrically, no query) is trained
  on the other domains' pairs (the five domain folds of ``finetune.py``) and asked which of a
  held-out pair is the canonical: per operator class, the share it gets right (0.5: no
  fingerprint). On the other corpora the classifier is trained on every bundled pair: does the
  fingerprint of the six training operators carry over to other bug classes and to code
  nobody here wrote?

    python benchmarks/star_leak.py --out benchmarks/results/star_leak.md

Needs scikit-learn (installed with sentence-transformers, the ``local`` extra). About a minute
of CPU.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher
from pathlib import Path

from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import Corpus, CorpusVariant, corpus_dir, read_corpus
from pytest_execretrieval.mutation.tokens import tokens
from pytest_execretrieval.ranking.rerank.medoid import centrality
from pytest_execretrieval.ranking.rerank.views import OPEN, render
from pytest_execretrieval.training.split import domain_folds

Family = tuple[str, list[str], list[str]]  # query id, [canonical, *distractors], their classes


def families_of(corpus: Corpus) -> list[Family]:
    """Each query's canonical and chosen distractors (snippet-id order) with their classes."""
    found = []
    for qid, own in sorted(corpus.by_query().items()):
        own = sorted(own, key=lambda s: s.snippet_id)
        canonical = [s for s in own if s.kind == "canonical"]
        bad = [s for s in own if s.kind in ("distractor", "real_bug")]
        if canonical and bad:
            codes = [canonical[0].code, *(s.code for s in bad)]
            found.append((qid, codes, [s.operator for s in bad]))
    return found


def first(scores: Sequence[float]) -> float:
    """Tie-aware: 1 / |top group| when the canonical (position 0) is in it, else 0."""
    top = [j for j, s in enumerate(scores) if s == max(scores)]
    return (0 in top) / len(top)


def centre_first(found: Sequence[Family]) -> tuple[float, float, float, int]:
    """Shares of families whose canonical the medoid puts first, that have the fewest marked
    runs in the ``diff`` view, and that a random order puts first."""
    medoid = marks = chance = 0.0
    for _, codes, _ in found:
        medoid += first([s if s is not None else float("-inf") for s in centrality(codes)])
        marks += first([-shown.count(OPEN) for shown in render("diff", codes)])
        chance += 1 / len(codes)
    n = len(found)
    return medoid / n, marks / n, chance / n, n


def edits(a: str, b: str) -> Counter:
    """The features of ``a`` beside ``b``: each differing token run, each side, the length."""
    wa, wb = [m.group() for m in tokens(a)], [m.group() for m in tokens(b)]
    found: Counter = Counter()
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        if tag != "equal":
            mine, theirs = " ".join(wa[i1:i2]), " ".join(wb[j1:j2])
            found[f"edit:{mine}|{theirs}"] += 1
            found[f"mine:{mine}"] += 1
            found[f"theirs:{theirs}"] += 1
            found["longer_by"] += (i2 - i1) - (j2 - j1)
    return found


def pairs(found: Iterable[Family]) -> list[tuple[str, str, str, str]]:
    """(query id, canonical, mutant, class) of every family member."""
    return [(q, codes[0], m, c) for q, codes, classes in found for m, c in zip(codes[1:], classes)]


class Fingerprint:
    """A query-blind pair classifier: is ``a`` the canonical and ``b`` the mutant?"""

    def __init__(self, training: Sequence[tuple[str, str, str, str]]):
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.linear_model import LogisticRegression

        rows, labels = [], []
        for _, canonical, mutant, _ in training:  # both orders: the model is antisymmetric
            rows += [edits(canonical, mutant), edits(mutant, canonical)]
            labels += [1, 0]
        self.vectors = DictVectorizer()
        self.model = LogisticRegression(max_iter=5000, fit_intercept=False)
        self.model.fit(self.vectors.fit_transform(rows), labels)

    def right(self, canonical: str, mutant: str) -> float:
        """1 when the canonical is called the canonical, 0.5 on a tie, else 0."""
        margin = self.model.decision_function(self.vectors.transform([edits(canonical, mutant)]))
        return 1.0 if margin[0] > 0 else 0.5 if margin[0] == 0 else 0.0


def scored(model: Fingerprint, held: Iterable[tuple[str, str, str, str]], into: dict) -> None:
    for _, canonical, mutant, cls in held:
        into.setdefault(cls, []).append(model.right(canonical, mutant))


def fingerprint_rows(into: dict) -> list[str]:
    everything = [x for xs in into.values() for x in xs]
    rows = [f"| all | {len(everything)} | {sum(everything) / len(everything):.3f} |"]
    for cls, xs in sorted(into.items(), key=lambda kv: -len(kv[1])):
        rows.append(f"| {cls} | {len(xs)} | {sum(xs) / len(xs):.3f} |")
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=Path, default=Path("items"))
    p.add_argument("--humaneval", type=Path, default=Path("mined/humaneval"))
    p.add_argument("--out", type=Path, help="also write the tables here (markdown)")
    args = p.parse_args(argv)
    items, _ = load_items(args.items)
    bundled = families_of(read_corpus(args.items))
    others = {
        "families (TSSB-shaped classes)": families_of(
            read_corpus(args.items, where=corpus_dir(args.items, CorpusVariant(families=True)))
        ),
        "stack-2 (two edits)": families_of(
            read_corpus(args.items, where=corpus_dir(args.items, CorpusVariant(stack=2)))
        ),
        "HumanEval (held out)": families_of(read_corpus(args.humaneval)),
        "JavaScript twins": families_of(read_corpus(args.items / "javascript")),
    }
    lines = [
        "## The star's centre: the canonical found from the family's shape alone",
        "",
        "| corpus | families | medoid puts the canonical first | fewest diff-view marks "
        "| a random order |",
        "|---|---|---|---|---|",
    ]
    for name, found in {"bundled (Python)": bundled, **others}.items():
        medoid, marks, chance, n = centre_first(found)
        lines.append(f"| {name} | {n} | {medoid:.3f} | {marks:.3f} | {chance:.3f} |")
    by_id = {f[0]: f for f in bundled}
    held_out: dict = {}
    for fold in domain_folds(items, 5):
        model = Fingerprint(pairs(by_id[q] for q in fold.train if q in by_id))
        scored(model, pairs(by_id[q] for q in fold.held_out if q in by_id), held_out)
    lines += [
        "",
        "## The operators' fingerprint: one pair alone, no query",
        "",
        "Bundled corpus, held-out domains (five domain folds, pooled): the share of "
        "(canonical, mutant) pairs whose canonical a classifier of the pair's token edits "
        "names (0.5: no fingerprint).",
        "",
        "| class | pairs | canonical named |",
        "|---|---|---|",
        *fingerprint_rows(held_out),
    ]
    everything = Fingerprint(pairs(bundled))
    for name, found in others.items():
        into: dict = {}
        scored(everything, pairs(found), into)
        lines += [
            "",
            f"{name}, the classifier trained on every bundled pair:",
            "",
            "| class | pairs | canonical named |",
            "|---|---|---|",
            *fingerprint_rows(into),
        ]
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
