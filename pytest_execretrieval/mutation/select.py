"""Choosing each item's distractors among its killed mutants.

Rule (deterministic; items are processed in item-id order): repeatedly take the candidate with the
smallest key
    (class already chosen for this item, extra class rather than core, kill kind rank,
     distractors of that class chosen so far in the corpus, candidate position)
until ``limit`` are chosen or none is left. So an item first gets as many distinct operator classes
as it can, core classes before the polarity extras, wrong-output kills before crashes, the class
that is rarest in the corpus so far, and finally the earliest candidate in source order.

With ``same`` (a corpus whose rule is that behaviourally duplicate distractors count as one,
:mod:`..corpus.behaviours`), choosing a candidate drops every candidate of the same behaviour:
one per behaviour is taken, by the same key, and the next one fills the slot a duplicate
would have taken.

Mutants killed only by a timeout count in the yields but are never chosen: each would cost the full
timeout in every verification run, and a hang is not the near-miss behaviour the benchmark probes.
A mutant whose suite proved nothing (a lost sandbox or a broken protocol, twice: the suite is
*unusable*) is not killed at all: it is neither chosen nor counted, nor a survivor.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ..execution.sandbox import SuiteResult
from .operators import CORE_CLASSES, Mutant

KILL_RANK = {"assertion": 0, "exception": 1, "timeout": 2}
UNUSABLE = "unusable"  # kill_kind of a suite that proved nothing: not a kill
MAX_DISTRACTORS = 4


def kill_kind(result: SuiteResult) -> str | None:
    """How a suite killed a mutant: ``None`` if it survived; :data:`UNUSABLE` if the suite
    proved nothing (:attr:`SuiteResult.unusable`: the mutant is neither killed nor a survivor);
    "timeout" if the suite ran out of time (even after earlier tests failed: verifying it would
    cost the whole timeout again); else "assertion" when some test saw a wrong output,
    "exception" when tests only crashed."""
    if result.unusable:
        return UNUSABLE
    if result.passed:
        return None
    if "timeout" in result.outcomes:
        return "timeout"
    if "fail" in result.outcomes:
        return "assertion"
    return "exception"


@dataclass(frozen=True)
class Killed:
    position: int  # index in the item's candidate order
    mutant: Mutant
    result: SuiteResult
    kill: str


def preference(
    k: Killed, used: Counter, class_totals: Counter, core: Collection[str] = CORE_CLASSES
) -> tuple:
    """Sort key of a candidate: smaller is chosen first (see the module docstring); ``core``:
    the classes preferred to the others."""
    op = k.mutant.operator
    is_core = all(part in core for part in op.split("+"))  # stacked: "a+b"
    return (used[op], not is_core, KILL_RANK[k.kill], class_totals[op], k.position)


def select_distractors(
    killed: Sequence[Killed],
    class_totals: Counter,
    limit: int = MAX_DISTRACTORS,
    core: Collection[str] = CORE_CLASSES,
    same: Mapping[int, int] | None = None,
) -> list[Killed]:
    """Pick up to ``limit`` of ``killed``; updates ``class_totals`` with the choice. ``core``:
    the classes preferred after distinct classes (the families corpus passes every class, so
    no class is preferred to another). ``same``: per position of a candidate that behaves like
    an earlier one, that one's position (:func:`..corpus.behaviours.same_behaviour`); a chosen
    candidate's behaviour is never chosen again."""
    same = same or {}
    chosen: list[Killed] = []
    left = [k for k in killed if k.kill not in ("timeout", UNUSABLE)]
    while left and len(chosen) < limit:
        used = Counter(k.mutant.operator for k in chosen)
        best = min(left, key=lambda k: preference(k, used, class_totals, core))
        behaviour = same.get(best.position, best.position)
        left = [k for k in left if same.get(k.position, k.position) != behaviour]
        chosen.append(best)
        class_totals[best.mutant.operator] += 1
    return chosen
