"""Issue 57: can the choice of a balanced family's members hide the canonical from the
query-blind classifiers?

The balanced corpus (``corpus/balanced.py``) centres most families on a killed wrong member W
with W's own killed single edits as leaves, which brings the family medoid to chance but not
the pair and single-snippet classifiers of ``scoring/controls.py``. This asks whether a better
*choice* among the same kind of members would. For every item that the balanced corpus does not
draw as a star, the options are up to ``--centres`` W's (C's killed single edits, one per
operator class first) and, for each, up to ``--leaves`` of W's killed leaves
(:func:`.corpus.balanced.leaf_candidates`, spread over operator classes), every one run against
the item's tests in the sandbox (outcome cache shared with the builds). Three choices of the
family (W and four leaves) from those options, stars left as they are:

* ``rule``: the committed rule (:func:`choose_centre`, :func:`choose_leaves`) among the options;
* ``herding``: items in a seeded order, each taking the option, leaves chosen greedily, that
  keeps its domain's running sum of features closest to zero: the pair features of C against
  each member, and C's single-snippet features (log counts) minus the member's, weighted
  ``--single-weight``; a linear model sees no mean difference left to learn where that sum is 0;
* ``adversarial``: from ``rule``, ``--rounds`` rounds of: train both classifiers on every family
  (no hold-out), then give each item the option whose members those classifiers find most like
  the canonical (the smallest summed pair margin for C plus C's single score over the member's).

Each choice is scored by the controls as every report scores them (held out by domain).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/balanced_selection.py [--centres 3]
        [--leaves 10] [--rounds 3] [--single-weight 1] [--sample K]

The suites take minutes with a warm outcome cache (about 25,000 leaves at the defaults), each
choice's controls a few minutes of CPU.
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Sequence
from itertools import zip_longest
from pathlib import Path

import numpy as np

from pytest_execretrieval import DEFAULT_CACHE_DIR
from pytest_execretrieval.corpus import balanced
from pytest_execretrieval.corpus import build as corpus_build
from pytest_execretrieval.corpus.items import bundled_items_dir, load_items
from pytest_execretrieval.corpus.variants import DEFAULT_VARIANT
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.execution.sandbox import Limits
from pytest_execretrieval.mutation.select import MAX_DISTRACTORS, UNUSABLE, Killed, kill_kind
from pytest_execretrieval.scoring.controls import (
    L2,
    Family,
    _Rows,
    fit_logistic,
    measure,
    pair_features,
    single_features,
)

SEED = 57
Option = tuple[str, list[str]]  # W's code, its killed leaves' codes


def _usable(killed: Sequence[Killed]) -> list[Killed]:
    return [k for k in killed if k.kill not in ("timeout", UNUSABLE)]


def _spread(mutants: list) -> list:
    """Mutants interleaved over their operator classes (the first of each class, then the
    second, ...)."""
    by: dict[str, list] = {}
    for m in mutants:
        by.setdefault(m.operator, []).append(m)
    return [m for turn in zip_longest(*by.values()) for m in turn if m is not None]


def gather(items, runner: SuiteRunner, centres: int, leaves: int):
    """Per item: its canonical's killed single edits (for stars and the rule), and per centre
    option W (a killed single edit, one per class first) W's killed leaves."""
    generate = corpus_build.candidate_generator(DEFAULT_VARIANT)
    singles = {i.id: corpus_build._not_the_real_bug(i, generate(i)) for i in items}
    phases = corpus_build._Phases(None, ())
    killed = corpus_build.run_killed(items, singles, runner, phases, "singles")
    work = []  # (item, W killed, leaf candidates)
    for item in items:
        if balanced.is_star(item.id):
            continue
        usable = _usable(killed[item.id])
        first_of_class: dict[str, Killed] = {}
        for k in usable:
            first_of_class.setdefault(k.mutant.operator, k)
        chosen = list(first_of_class.values())
        chosen += [k for k in usable if k not in chosen]
        for w in chosen[:centres]:
            own = item.lang.mutants(w.mutant.code, item.entry_point)
            found = balanced.leaf_candidates(own, item.canonical, w.mutant.code)
            work.append((item, w, _spread(found)[:leaves]))
    suites = [corpus_build._suite(item, m.code) for item, _, ms in work for m in ms]
    results = iter(runner.imap(suites))
    options: dict[str, list[tuple[Killed, list[Killed]]]] = {}
    for item, w, ms in work:
        kept = []
        for i, m in enumerate(ms):
            result = next(results)
            kind = kill_kind(result)
            if kind is not None and kind not in ("timeout", UNUSABLE):
                kept.append(Killed(i, m, result, kind))
        options.setdefault(item.id, []).append((w, kept))
    return killed, options


def star(killed: Sequence[Killed]) -> list[str]:
    """A star's distractors: a killed edit of each class first, then the others, in position
    order, :data:`MAX_DISTRACTORS` of them."""
    seen: set[str] = set()
    first: list[str] = []
    rest: list[str] = []
    for k in _usable(killed):
        (rest if k.mutant.operator in seen else first).append(k.mutant.code)
        seen.add(k.mutant.operator)
    return (first + rest)[:MAX_DISTRACTORS]


def _family(item, members: Sequence[str]) -> Family:
    return Family(item.id, item.id.partition("/")[0], (item.canonical, *members))


def rule(items, killed, options) -> dict[str, Family]:
    out = {}
    for item in items:
        members = None
        usable = [(w, ls) for w, ls in options.get(item.id, []) if len(ls) >= balanced.LEAVES]
        if usable:
            centre = balanced.choose_centre(item.id, item.canonical, [w for w, _ in usable])
            assert centre is not None  # every option is a usable killed edit
            leaves = dict((w.position, ls) for w, ls in usable)[centre.position]
            chosen = balanced.choose_leaves(item.id, centre.mutant.code, leaves)
            members = [centre.mutant.code, *(k.mutant.code for k in chosen)]
        out[item.id] = _family(item, members or star(killed[item.id]))
    return out


def _vector(canonical: str, member: str, weight: float) -> dict:
    """What herding keeps near zero: C's pair features against the member, and C's single
    features minus the member's (log counts, as the classifier takes them)."""
    out: dict = {("pair", k): v for k, v in pair_features(canonical, member).items()}
    mine, theirs = single_features(canonical), single_features(member)
    for k in mine.keys() | theirs.keys():
        d = np.log1p(mine.get(k, 0)) - np.log1p(theirs.get(k, 0))
        if d:
            out["single", k] = weight * d
    return out


def _grows(total: dict, x: dict) -> float:
    """How much adding ``x`` grows ``|total|^2``."""
    return 2 * sum(v * total.get(k, 0.0) for k, v in x.items()) + sum(v * v for v in x.values())


def _add(total: dict, x: dict) -> None:
    for k, v in x.items():
        total[k] = total.get(k, 0.0) + v


def herding(items, killed, options, weight: float) -> dict[str, Family]:
    sums: dict[str, dict] = {}
    order = sorted(items, key=lambda i: hashlib.sha256(f"{SEED}\0{i.id}".encode()).digest())
    out = {}
    for item in order:
        total = sums.setdefault(item.id.partition("/")[0], {})
        best = None
        for w, leaves in options.get(item.id, []):
            if len(leaves) < balanced.LEAVES:
                continue
            trial, grown = dict(total), 0.0
            x = _vector(item.canonical, w.mutant.code, weight)
            grown += _grows(trial, x)
            _add(trial, x)
            left = [(k.mutant.code, _vector(item.canonical, k.mutant.code, weight)) for k in leaves]
            members = [w.mutant.code]
            for _ in range(balanced.LEAVES):
                j = min(range(len(left)), key=lambda j: _grows(trial, left[j][1]))
                code, x = left.pop(j)
                grown += _grows(trial, x)
                _add(trial, x)
                members.append(code)
            if best is None or grown < best[0]:
                best = (grown, members, trial)
        if best is None:
            members = star(killed[item.id])
            for m in members:
                _add(total, _vector(item.canonical, m, weight))
        else:
            members = best[1]
            total.clear()
            total.update(best[2])
        out[item.id] = _family(item, members)
    return out


def _trained(found: Sequence[Family]) -> tuple[dict, dict]:
    """Both classifiers trained on every family, as feature -> weight."""
    pairs = [pair_features(f.codes[0], m) for f in found for m in f.codes[1:]]
    table = _Rows.of(pairs, False)
    vocabulary = table.vocabulary(range(len(pairs)))
    w = fit_logistic(table.matrix(range(len(pairs)), vocabulary), np.ones(len(pairs)), L2 / 2)
    pair_w = {table.names[v]: w[i] for i, v in enumerate(vocabulary)}
    singles = [single_features(c) for f in found for c in f.codes]
    labels = np.array([float(j == 0) for f in found for j in range(len(f.codes))])
    table = _Rows.of(singles, True)
    vocabulary = table.vocabulary(range(len(singles)))
    x = table.matrix(range(len(singles)), vocabulary)
    w = fit_logistic(np.c_[x, np.ones(len(x))], labels)
    return pair_w, {table.names[v]: w[i] for i, v in enumerate(vocabulary)}


def _score(weights: dict, features: dict, log: bool = False) -> float:
    return sum(weights.get(k, 0.0) * (np.log1p(v) if log else v) for k, v in features.items())


def adversarial(items, options, start: dict[str, Family], rounds: int):
    """Each round's families (see the module docstring), from ``start``."""
    families = dict(start)
    for r in range(rounds):
        pair_w, single_w = _trained([families[i.id] for i in items])
        for item in items:
            c = _score(single_w, single_features(item.canonical), log=True)

            def like_canonical(member: str, canonical: str = item.canonical, c: float = c) -> float:
                """How canonical the trained classifiers find ``member`` beside C (lower: more)."""
                margin = _score(pair_w, pair_features(canonical, member))  # noqa: B023
                return margin + c - _score(single_w, single_features(member), log=True)  # noqa: B023

            best = None
            for w, leaves in options.get(item.id, []):
                if len(leaves) < balanced.LEAVES:
                    continue
                ranked = sorted((k.mutant.code for k in leaves), key=like_canonical)
                members = [w.mutant.code, *ranked[: balanced.LEAVES]]
                score = sum(map(like_canonical, members))
                if best is None or score < best[0]:
                    best = (score, members)
            if best is not None:
                families[item.id] = _family(item, best[1])
        yield r + 1, families


def row(name: str, found: dict[str, Family]) -> str:
    cells = [f"{c.rate:.3f} / {c.chance:.3f}" for c in measure([found[k] for k in sorted(found)])]
    return f"| {name} | {len(found)} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--centres", type=int, default=3)
    parser.add_argument("--leaves", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--single-weight", type=float, default=1.0)
    parser.add_argument("--sample", type=int, default=1, help="every K-th item (1: all)")
    args = parser.parse_args()
    items = sorted(load_items(bundled_items_dir())[0], key=lambda i: i.id)[:: args.sample]
    limits = Limits(timeout_s=corpus_build.MUTANT_TIMEOUT_S)
    with SuiteRunner(limits, cache_dir=Path(DEFAULT_CACHE_DIR), jobs=2) as runner:
        killed, options = gather(items, runner, args.centres, args.leaves)
    print(
        f"{len(items)} items, {sum(map(len, options.values()))} centre options, "
        f"{sum(len(ls) for o in options.values() for _, ls in o)} killed leaves",
        flush=True,
    )
    print(
        "| choice | families | family medoid / chance | pair classifier / chance | "
        "single classifier / chance |\n|---|---|---|---|---|"
    )
    start = rule(items, killed, options)
    print(row("rule", start), flush=True)
    print(row("herding", herding(items, killed, options, args.single_weight)), flush=True)
    for r, found in adversarial(items, options, start, args.rounds):
        print(row(f"adversarial, round {r}", found), flush=True)


if __name__ == "__main__":
    main()
