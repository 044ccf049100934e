"""Verification gates that need execution: every snippet behaves as its kind claims, and no two
items are the same function under one name.

Gate 3 (execution): canonicals and alternatives pass every test of their item; every distractor
fails at least one. Gate 5 (name collision): items sharing an entry-point name run each other's
canonical against their own tests; a canonical passing another item's suite is reported.
Outcomes recorded in the corpus are never trusted here: everything is executed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ..execution.runner import SuiteRunner
from ..execution.sandbox import SuiteResult
from .items import BenchmarkItem
from .store import DISTRACTOR_KINDS, Corpus, Snippet


@dataclass(frozen=True)
class Case:
    name: str  # e.g. "canonical", "alternative[0]", "distractor[off_by_one@L4]"
    item: BenchmarkItem
    code: str
    must_pass: bool
    snippet: Snippet | None = None

    @property
    def suite(self) -> tuple[str, str, tuple[str, ...], str, str]:
        """What a :class:`~..execution.runner.SuiteRunner` runs for it: code, setup, tests,
        language, and the item the code belongs to."""
        item = self.item
        return self.code, item.setup, item.tests, item.language, item.id


def distractors_by_query(corpus: Corpus | None) -> dict[str, list[Snippet]]:
    """Each item's distractors in the corpus, in source-line order."""
    out: dict[str, list[Snippet]] = defaultdict(list)
    for snippet in corpus.snippets if corpus else ():
        if snippet.kind in DISTRACTOR_KINDS:
            out[snippet.query_id].append(snippet)
    for snippets in out.values():
        snippets.sort(key=lambda s: (s.line or 0, s.snippet_id))
    return dict(out)


def item_cases(item: BenchmarkItem, distractors: Sequence[Snippet] = ()) -> list[Case]:
    """The per-snippet checks of one item: canonical, alternatives, then its distractors."""
    out = [Case("canonical", item, item.canonical, True)]
    out += [Case(f"alternative[{i}]", item, code, True) for i, code in enumerate(item.alternatives)]
    out += [
        Case(f"{s.kind}[{s.operator}@L{s.line}:{s.snippet_id[:8]}]", item, s.code, False, s)
        for s in distractors
    ]
    return out


def check(case: Case, result: SuiteResult) -> str | None:
    """``None`` when the case holds, else a readable explanation (a failing test of a snippet
    that must pass shows what the snippet returned there: ``-> fail: returned 5``). An
    unusable suite (:attr:`SuiteResult.unusable`) holds for no kind: it proves nothing."""
    if result.unusable:
        return (
            f"{case.item.id}: {case.name} is unusable: its suite proved nothing, twice "
            f"({result.detail})"
        )
    if case.must_pass and not result.passed:
        returned = result.returned or ("",) * len(result.outcomes)
        failing = [
            f"  {case.item.tests[i]}\n      -> {o}" + (f": {returned[i]}" if returned[i] else "")
            for i, o in enumerate(result.outcomes)
            if o != "pass"
        ]
        why = f" ({result.detail})" if result.detail else ""
        return f"{case.item.id}: {case.name} must pass every test but does not{why}:\n" + "\n".join(
            failing
        )
    if not case.must_pass and result.passed:
        diff = case.snippet.diff if case.snippet else ""
        return (
            f"{case.item.id}: {case.name} passes every test, so it is not a distractor "
            f"(an equivalent mutant or weak tests):\n{diff}"
        )
    return None


def name_collisions(items: Sequence[BenchmarkItem], runner: SuiteRunner) -> list[str]:
    """Gate 5: reports for each canonical that passes the suite of another item of the same name."""
    by_name: dict[str, list[BenchmarkItem]] = defaultdict(list)
    for item in items:
        by_name[item.entry_point].append(item)
    pairs = [
        (a, b)
        for group in by_name.values()
        if len(group) > 1
        for a in group
        for b in group
        if a is not b
    ]
    pairs.sort(key=lambda p: (p[0].id, p[1].id))
    results = runner.run_many([(a.canonical, b.setup, b.tests, b.language, a.id) for a, b in pairs])
    return [
        f"{a.id}'s canonical passes every test of {b.id} (both define {a.entry_point!r}): "
        "the two items are the same function"
        if r.passed
        else f"{a.id}'s canonical against the tests of {b.id} is unusable: the suite proved "
        f"nothing, twice ({r.detail})"
        for (a, b), r in zip(pairs, results)
        if r.passed or r.unusable
    ]


def shared_names(items: Sequence[BenchmarkItem]) -> dict[str, list[str]]:
    by_name: dict[str, list[str]] = defaultdict(list)
    for item in items:
        by_name[item.entry_point].append(item.id)
    return {name: sorted(ids) for name, ids in sorted(by_name.items()) if len(ids) > 1}
