"""``execretrieval build``: items -> executed, verified corpus.

Every canonical and alternative must pass its own tests; every mutant candidate is executed and the
killed ones (failing at least one test) compete for the item's distractor slots (see
:mod:`.mutation.select`). The result is independent of file order, thread count and machine.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .corpus import Corpus, Snippet, make_snippet
from .execution import SuiteRunner
from .items import Item
from .mutation.operators import OPERATOR_CLASSES, Mutant, generate_mutants
from .mutation.select import MAX_DISTRACTORS, Killed, kill_kind, select_distractors
from .sandbox import RUNNER_VERSION, SuiteResult

MUTATION_VERSION = "1"


MUTANT_TIMEOUT_S = 1.0


def engine(stack: int = 1) -> dict:
    """What generated a corpus; a change here makes committed corpora stale."""
    return {
        "runner": RUNNER_VERSION,
        "mutation": MUTATION_VERSION,
        "mutant_timeout_s": MUTANT_TIMEOUT_S,
        "distractors_per_item": MAX_DISTRACTORS,
        "stack": stack,
    }


class BuildError(Exception):
    """A canonical or alternative fails its own tests: the item itself is broken."""


@dataclass(frozen=True)
class ItemYield:
    item_id: str
    candidates: int
    killed: dict[str, int]  # per operator class, classes with zero omitted
    selected: dict[str, int]

    @property
    def total_killed(self) -> int:
        return sum(self.killed.values())


@dataclass(frozen=True)
class BuildResult:
    corpus: Corpus
    yields: tuple[ItemYield, ...]


def failure_summary(item: Item, result: SuiteResult) -> str:
    bad = [f"{item.tests[i]!r} -> {o}" for i, o in enumerate(result.outcomes) if o != "pass"]
    return "; ".join(bad) or result.detail


def build(items: Sequence[Item], runner: SuiteRunner, mutant_runner: SuiteRunner) -> BuildResult:
    """``runner`` runs canonicals and alternatives under the full limits; ``mutant_runner`` runs
    candidates, usually with a shorter timeout (a mutant that loops is killed either way, and
    verification re-runs every chosen distractor under the full limits)."""
    items = sorted(items, key=lambda item: item.id)
    mutants = {item.id: generate_mutants(item.canonical, item.entry_point) for item in items}
    originals = [(code, item.setup, item.tests)
                 for item in items for code in (item.canonical, *item.alternatives)]  # fmt: skip
    candidates = [(m.code, item.setup, item.tests) for item in items for m in mutants[item.id]]
    original_results = iter(runner.run_many(originals))
    mutant_results = iter(mutant_runner.run_many(candidates))

    problems: list[str] = []
    pool: list[Snippet] = []
    alternatives: list[Snippet] = []
    yields: list[ItemYield] = []
    class_totals: Counter = Counter()
    for item in items:
        for label, code in [("canonical", item.canonical)] + [
            (f"alternatives[{i}]", code) for i, code in enumerate(item.alternatives)
        ]:
            result = next(original_results)
            if not result.passed:
                problems.append(f"{item.path}: {label}: fails its tests: "
                                + failure_summary(item, result))  # fmt: skip
            kind = "canonical" if label == "canonical" else "alternative"
            snippet = make_snippet(item, kind, code, result.outcomes)
            (pool if kind == "canonical" else alternatives).append(snippet)
        killed = []
        for position, mutant in enumerate(mutants[item.id]):
            result = next(mutant_results)
            kind = kill_kind(result)
            if kind:
                killed.append(Killed(position, mutant, result, kind))
        chosen = select_distractors(killed, class_totals)
        pool += [distractor(item, k) for k in chosen]
        yields.append(ItemYield(
            item.id, len(mutants[item.id]), count_classes(k.mutant for k in killed),
            count_classes(k.mutant for k in chosen),
        ))  # fmt: skip
    if problems:
        raise BuildError("\n".join(problems))
    ids = Counter(s.snippet_id for s in pool)
    duplicates = sorted(i for i, n in ids.items() if n > 1)
    if duplicates:
        raise BuildError(f"identical code in several items: snippet ids {duplicates}")
    return BuildResult(Corpus(tuple(pool), tuple(alternatives), engine()), tuple(yields))


def distractor(item: Item, killed: Killed) -> Snippet:
    m: Mutant = killed.mutant
    return make_snippet(
        item, "distractor", m.code, killed.result.outcomes, operator=m.operator, line=m.line,
        kill=killed.kill, edit_lines=m.lines_changed, edit_chars=m.chars_changed,
    )  # fmt: skip


def count_classes(mutants) -> dict[str, int]:
    counts = Counter(m.operator for m in mutants)
    return {op: counts[op] for op in OPERATOR_CLASSES if counts[op]}


def yield_report(yields: Sequence[ItemYield], minimum: int = MAX_DISTRACTORS) -> str:
    """Per item: killed mutants per class; then the items below ``minimum`` and class shares."""
    lines = []
    for y in yields:
        per_class = " ".join(f"{op}={n}" for op, n in y.killed.items()) or "-"
        lines.append(f"{y.item_id}: {y.total_killed}/{y.candidates} killed  {per_class}")
    weak = [y.item_id for y in yields if y.total_killed < minimum]
    lines.append(f"{len(yields) - len(weak)}/{len(yields)} items have >= {minimum} killed mutants")
    if weak:
        lines.append(f"items with fewer than {minimum} killed mutants ({len(weak)}):")
        lines += [f"  {iid}" for iid in weak]
    shares = Counter()
    for y in yields:
        shares.update(y.selected)
    total = sum(shares.values())
    if total:
        lines.append(f"distractors: {total}; share per operator class:")
        lines += [f"  {op:<24} {shares[op]:>5}  {shares[op] / total:6.1%}"
                  for op in OPERATOR_CLASSES if shares[op]]  # fmt: skip
    return "\n".join(lines)
