"""``execretrieval build``: items -> executed, verified corpus.

Every canonical and alternative must pass its own tests; every mutant candidate is executed and the
killed ones (failing at least one test) compete for the item's distractor slots (see
:mod:`.mutation.select`). The result is independent of file order, thread count and machine.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypeVar

from ..execution.runner import Suite, SuiteRunner
from ..execution.sandbox import RUNNER_VERSION, SuiteResult
from ..languages import DEFAULT, language
from ..mutation.equivalence import EVIDENCE_VERSION, evidence
from ..mutation.families import ALL_CLASSES
from ..mutation.fingerprint import mutation_version
from ..mutation.operators import Mutant
from ..mutation.select import MAX_DISTRACTORS, UNUSABLE, Killed, kill_kind, select_distractors
from ..mutation.stacking import stack_mutants
from ..records import ALTERNATIVE, CANONICAL, DISTRACTOR
from ..sanitize import escape
from . import balanced
from .behaviours import same_behaviour
from .incremental import ItemRecord, Reusable, choosable, recorded_killed, recorded_same
from .items import WRONG_VALUE_FIRST, WRONG_VALUE_ONLY, BenchmarkItem
from .real_bugs import QUICK_FIX_RUNS, SURVIVOR_OPERATOR, judged, quick_limits
from .store import Corpus, Snippet, make_snippet, unified_diff
from .twins import input_types
from .variants import DEFAULT_VARIANT, Candidates, CorpusVariant, VariantUnavailable

MUTANT_TIMEOUT_S = 1.0


def engine(variant: CorpusVariant = DEFAULT_VARIANT, languages: Iterable[str] = ()) -> dict:
    """What generated a corpus; a change here makes committed corpora stale. The mutation
    version follows the operator table and selection code (see :mod:`.mutation.fingerprint`);
    the variant's row adds what it records of its generator (mutmut's, libcst's and the
    adapter's versions; the families' version and candidates per class). ``languages``: those
    of the corpus's items; each but Python adds its runner's and mutants' versions
    (:meth:`.languages.Language.versions`), so a Python corpus records what it always did."""
    others = {name: language(name).versions() for name in sorted(set(languages) - {DEFAULT})}
    return (
        {
            "runner": RUNNER_VERSION,
            "mutation": mutation_version(),
            "mutant_timeout_s": MUTANT_TIMEOUT_S,
            "distractors_per_item": MAX_DISTRACTORS,
            "stack": variant.k,
            "evidence": EVIDENCE_VERSION,
        }
        | _available(variant.row.engine)
        | ({"languages": others} if others else {})
    )


def candidate_generator(variant: CorpusVariant) -> Candidates:
    """``item -> single-edit candidates`` of the ``variant`` corpus (its row's generator: an
    extra such as mutmut is imported only when asked for)."""
    return _available(variant.row.generator)


T = TypeVar("T")


def _available(load: Callable[[], T]) -> T:
    """``load()``, a missing extra a :class:`BuildError` saying how to install it."""
    try:
        return load()
    except VariantUnavailable as exc:
        raise BuildError(str(exc)) from None


class BuildError(Exception):
    """A canonical or alternative fails its own tests, or building an item failed in any other
    way (:func:`per_item`): the item itself is broken. The message names every such item's file,
    one per line."""


def per_item(item: BenchmarkItem, problems: list[str], step: str, work, *args):
    """``work(*args)``, or ``None`` after recording the failure as ``item``'s problem.

    Item files are untrusted: whatever one makes the host-side work raise (a recursion limit,
    a memory error, a bug it finds) is a problem of that item, naming its file and the build
    step, and the build goes on with the other items."""
    try:
        return work(*args)
    except Exception as exc:
        problems.append(f"{item.path}: {step}: {type(exc).__name__}: {exc}")
        return None


def attempt(item: BenchmarkItem, problems: list[str] | None, step: str, work, *args):
    """``work(*args)``: through :func:`per_item` into ``problems``, or raising when that is
    None."""
    return work(*args) if problems is None else per_item(item, problems, step, work, *args)


@dataclass(frozen=True)
class ItemYield:
    item_id: str
    candidates: int
    killed: dict[str, int]  # per operator class, classes with zero omitted
    selected: dict[str, int]
    crash_only: int = 0  # distractors chosen that no test saw return a wrong value

    @property
    def total_killed(self) -> int:
        return sum(self.killed.values())


@dataclass(frozen=True)
class Survivor:
    """A mutant candidate that passed all its item's tests, with its differential evidence
    (None when the entry point is not fully annotated)."""

    item_id: str
    operator: str
    line: int
    diff: str
    equivalence: dict | None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class BuildResult:
    corpus: Corpus
    yields: tuple[ItemYield, ...]
    survivors: tuple[Survivor, ...] = ()
    records: tuple[ItemRecord, ...] = ()  # yields.jsonl, per item in id order
    rebuilt: tuple[str, ...] = ()  # ids of the items built from scratch (the others reused)
    reselected: tuple[str, ...] = ()  # reused items rebuilt because their choice moved
    # Mutants whose suite proved nothing twice (SuiteResult.unusable), one line each naming
    # the item, the edit and why: neither distractors nor survivors.
    unusable: tuple[str, ...] = ()


def failure_summary(item: BenchmarkItem, result: SuiteResult) -> str:
    if result.unusable:
        return f"unusable: its suite proved nothing, twice ({result.detail})"
    returned = result.returned or ("",) * len(result.outcomes)
    bad = [
        f"{item.tests[i]!r} -> {o}" + (f": {returned[i]}" if returned[i] else "")
        for i, o in enumerate(result.outcomes)
        if o != "pass"
    ]
    return "; ".join(bad) or result.detail


STACK_CANDIDATES = 12  # stacked candidates tried per item


@dataclass(frozen=True)
class BuildProgress:
    """Where a build stands, for a progress line: ``done`` of ``total`` items through
    ``phase`` ("mutants": generating candidates; "running": their suites; "stacking": the single
    edits stacked mutants are drawn from; "evidence": differential evidence), ``executed`` suites
    run in a sandbox so far (cache misses, all phases), ``elapsed_s`` since the phase began."""

    phase: str
    done: int
    total: int
    executed: int
    elapsed_s: float


Progress = Callable[[BuildProgress], None]


@dataclass(frozen=True)
class ItemRun:
    """An item built from scratch: its candidates, its originals' and candidates' results."""

    mutants: list[Mutant]
    originals: list[SuiteResult]  # canonical, then alternatives in item order
    killed: list[Killed]
    survivors: list[Mutant]  # the real bug last, when it passes (real_bugs.judged)
    unusable: list[str]  # why each unusable candidate is neither a distractor nor a survivor
    real_bug: Snippet | None = None  # the item's real bug, when its tests kill it
    # Per killed candidate behaving like an earlier one, that one's position (.behaviours);
    # empty where the corpus's rule keeps duplicates.
    same: dict[int, int] = field(default_factory=dict)


class _Phases:
    """Reports :class:`BuildProgress` for one phase after another."""

    def __init__(self, progress: Progress | None, runners: Sequence[SuiteRunner]):
        self.progress, self.runners = progress, runners
        self.phase, self.total, self.started = "", 0, 0.0

    def start(self, phase: str, total: int) -> None:
        self.phase, self.total, self.started = phase, total, time.monotonic()
        self.tick(0)

    def tick(self, done: int) -> None:
        if self.progress is not None and self.total:
            executed = sum(r.executed for r in self.runners)
            self.progress(
                BuildProgress(
                    self.phase, done, self.total, executed, time.monotonic() - self.started
                )
            )


@dataclass(frozen=True)
class BuildPlan:
    """Which items a build runs and which it takes from their committed records."""

    items: tuple[BenchmarkItem, ...]  # every item, in id order
    reuse: Mapping[str, Reusable]  # the committed records of the items that run nothing

    @property
    def fresh(self) -> list[BenchmarkItem]:
        """The items built from scratch, in id order."""
        return [item for item in self.items if item.id not in self.reuse]

    def without(self, items: Sequence[BenchmarkItem]) -> BuildPlan:
        """This plan with ``items`` built from scratch instead of reused."""
        rebuilt = {item.id for item in items}
        reuse = {iid: r for iid, r in self.reuse.items() if iid not in rebuilt}
        return BuildPlan(self.items, reuse)


@dataclass(frozen=True)
class Selection:
    """The distractors chosen over the corpus."""

    chosen: Mapping[str, list[int]]  # per item id, the candidate positions chosen, in order
    moved: tuple[BenchmarkItem, ...]  # reused items whose choice differs from their record


@dataclass(frozen=True)
class Fresh:
    """The snippets of the items built from scratch."""

    pool: list[Snippet]  # canonicals and chosen distractors
    alternatives: list[Snippet]
    survivors: tuple[Survivor, ...] = ()


def build(
    items: Sequence[BenchmarkItem],
    runner: SuiteRunner,
    mutant_runner: SuiteRunner,
    variant: CorpusVariant = DEFAULT_VARIANT,
    reuse: Mapping[str, Reusable] | None = None,
    progress: Progress | None = None,
) -> BuildResult:
    """``runner`` runs canonicals and alternatives under the full limits; ``mutant_runner`` runs
    candidates, usually with a shorter timeout (a mutant that loops is killed either way, and
    verification re-runs every chosen distractor under the full limits).

    ``variant``: which corpus; its row (:data:`.variants.VARIANTS`) gives the single-edit
    candidates (:func:`candidate_generator`) and the classes the selection prefers. With
    ``variant.k`` K > 1 the candidates are stacked mutants: K single edits on disjoint lines
    (:func:`.mutation.stacking.stack_mutants`), drawn from the item's killed single-edit
    mutants in selection-preference order, so each edit is itself proven wrong.

    ``reuse``: committed records of unchanged items (:func:`.incremental.plan`); those items
    run nothing unless the corpus-wide class balance moves their choice of distractors. The
    result is the same as without ``reuse``.

    The steps: :func:`plan_build`, :func:`run_items` (:func:`mutate`, :func:`execute`),
    :func:`select` (and :func:`run_items` again for the items whose choice moved, then
    :func:`select` again, until every moved item has run),
    :func:`fresh_snippets`, :func:`attach_evidence`, :func:`assemble`. Every item's problems
    are reported together, after the step that found them."""
    phases = _Phases(progress, (runner, mutant_runner))
    problems: list[str] = []
    planned = plan_build(items, reuse)
    runs = run_items(planned.fresh, runner, mutant_runner, variant, phases, problems)
    selection = select(planned, runs, variant)
    while rerun := [item for item in selection.moved if item.id not in runs]:
        # A moved item's fresh run may kill other candidates than its record says (a mutant
        # that timed out under load): choose again from the runs, until every moved item ran.
        runs |= run_items(rerun, runner, mutant_runner, variant, phases, problems)
        selection = select(planned, runs, variant)
    planned = planned.without([item for item in planned.items if item.id in runs])
    fresh = fresh_snippets(planned.items, runs, selection.chosen, problems)
    _raise_problems(problems)
    fresh = attach_evidence(planned.items, runs, fresh, mutant_runner, phases, problems)
    _raise_problems(problems)
    return assemble(planned, runs, selection, fresh, variant)


def plan_build(items: Sequence[BenchmarkItem], reuse: Mapping[str, Reusable] | None) -> BuildPlan:
    """Every item in id order; those with a committed record in ``reuse`` run nothing."""
    return BuildPlan(tuple(sorted(items, key=lambda item: item.id)), dict(reuse or {}))


def select(planned: BuildPlan, runs: Mapping[str, ItemRun], variant: CorpusVariant) -> Selection:
    """Choose every item's distractors from its killed candidates (a fresh run's, else its
    record's), balancing operator classes over the corpus in item-id order, the ``variant``'s
    classes preferred after distinct classes (:func:`.mutation.select.select_distractors`).
    Items in neither (their build failed: a problem already) are skipped. A reused item whose
    choice differs from its record has ``moved``: it must be built again."""
    chosen: dict[str, list[int]] = {}
    moved = []
    class_totals: Counter = Counter()
    for item in planned.items:
        reused = planned.reuse.get(item.id)
        if item.id in runs:
            killed, same = runs[item.id].killed, runs[item.id].same
        elif reused is not None:
            killed, same = recorded_killed(reused.record), recorded_same(reused.record)
        else:
            continue  # its build failed: a problem already
        picked = choose(item, killed, class_totals, variant.row.preferred, same)
        chosen[item.id] = [k.position for k in picked]
        if reused is not None and tuple(chosen[item.id]) != reused.record.selected:
            moved.append(item)
    return Selection(chosen, tuple(moved))


def choose(
    item: BenchmarkItem,
    killed: Sequence[Killed],
    class_totals: Counter,
    core: Collection[str],
    same: Mapping[int, int] | None = None,
) -> list[Killed]:
    """``item``'s distractors among ``killed`` (:func:`.mutation.select.select_distractors`).
    An item whose ``[source]`` says ``distractors = "wrong-value-first"`` (mined since issue
    55) takes its mutants a test saw return a wrong value first, by the same rule, and fills
    the slots left with mutants that only crashed (a swapped argument's ``TypeError``): a
    crash is no near miss. Every other item (the bundled ones, and mined corpora committed
    before) chooses as it always did, distinct classes before wrong values. With
    ``distractors = "wrong-value-only"`` (written by ``mine --context``) a mutant that only
    crashed is never chosen: fewer distractors rather than ones no search would confuse.
    ``same``: the duplicate behaviours, one of each chosen (:mod:`.behaviours`)."""
    rule = item.source.distractors if item.source else ""
    if rule not in (WRONG_VALUE_FIRST, WRONG_VALUE_ONLY):
        return select_distractors(killed, class_totals, core=core, same=same)
    wrong = [k for k in killed if k.kill == "assertion"]
    picked = select_distractors(wrong, class_totals, core=core, same=same)
    crashed = [k for k in killed if k.kill != "assertion"]
    left = MAX_DISTRACTORS - len(picked) if rule == WRONG_VALUE_FIRST else 0
    return picked + (select_distractors(crashed, class_totals, left, core, same) if left else [])


def fresh_snippets(
    items: Sequence[BenchmarkItem],
    runs: Mapping[str, ItemRun],
    chosen: Mapping[str, list[int]],
    problems: list[str],
) -> Fresh:
    """The canonical, alternatives and chosen distractors of every item in ``runs``. A canonical
    or alternative failing its tests is a problem, as is a chosen position no fresh candidate
    has (a record that disagrees with the run)."""
    pool: list[Snippet] = []
    alternatives: list[Snippet] = []
    for item in items:
        if item.id not in runs:
            continue
        run = runs[item.id]
        canonical, *own_alternatives = originals(item, run, problems)
        pool.append(canonical)
        alternatives += own_alternatives
        by_position = {k.position: k for k in run.killed}
        if not set(chosen[item.id]) <= set(by_position):  # chosen from a record: it lied
            problems.append(
                f"{item.path}: its recorded candidates (yields.jsonl) differ from "
                "a fresh run; run `execretrieval build --full`"
            )
            continue
        pool += [distractor(item, by_position[p]) for p in chosen[item.id]]
        pool += [run.real_bug] if run.real_bug else []
    return Fresh(pool, alternatives)


def originals(item: BenchmarkItem, run: ItemRun, problems: list[str]) -> list[Snippet]:
    """The snippets of ``item``'s canonical, then its alternatives; each that fails its own
    tests is a problem naming it."""
    labels = ["canonical"] + [f"alternatives[{i}]" for i in range(len(item.alternatives))]
    kinds = [CANONICAL] + [ALTERNATIVE] * len(item.alternatives)
    codes = (item.canonical, *item.alternatives)
    snippets = []
    for label, kind, code, result in zip(labels, kinds, codes, run.originals):
        if not result.passed:
            problems.append(
                f"{item.path}: {label}: fails its tests: " + failure_summary(item, result)
            )
        snippets.append(make_snippet(item, kind, code, result.outcomes))
    return snippets


def attach_evidence(
    items: Sequence[BenchmarkItem],
    runs: Mapping[str, ItemRun],
    fresh: Fresh,
    runner: SuiteRunner,
    phases: _Phases,
    problems: list[str],
) -> Fresh:
    """``fresh`` with differential evidence: on its distractors and alternatives
    (:func:`with_evidence`) and on every surviving candidate (:func:`survivor_evidence`) of
    the items built from scratch."""
    built = [item for item in items if item.id in runs]
    pool, alternatives = with_evidence(
        built, fresh.pool, fresh.alternatives, runner, phases, problems
    )
    survivors = survivor_evidence(
        built, {i: r.survivors for i, r in runs.items()}, runner, phases, problems
    )
    return Fresh(pool, alternatives, survivors)


def assemble(
    planned: BuildPlan,
    runs: Mapping[str, ItemRun],
    selection: Selection,
    fresh: Fresh,
    variant: CorpusVariant,
) -> BuildResult:
    """The build's result: the corpus (:func:`corpus_of`), every item's yield, survivors and
    record, in id order (:func:`kept_records`), and the lines on unusable candidates."""
    kept = kept_records(planned, runs, selection.chosen, fresh.survivors)
    built = [item for item in planned.items if item.id in runs]
    return BuildResult(
        corpus_of(planned, fresh, variant),
        tuple(item_yield(item.id, record) for item, (record, _) in zip(planned.items, kept)),
        tuple(s for _, own in kept for s in own),
        tuple(record for record, _ in kept),
        tuple(i.id for i in built),
        tuple(i.id for i in selection.moved),
        tuple(line for item in built for line in runs[item.id].unusable),
    )


def corpus_of(planned: BuildPlan, fresh: Fresh, variant: CorpusVariant) -> Corpus:
    """The fresh and the reused snippets, each file sorted by snippet id, and the engine that
    made them; identical code in two items' pool snippets is a :class:`BuildError`."""
    reused = planned.reuse.values()
    pool = fresh.pool + [s for r in reused for s in (r.canonical, *r.distractors)]
    alternatives = fresh.alternatives + [s for r in reused for s in r.alternatives]
    _refuse_duplicates(pool)
    by_id = lambda s: s.snippet_id  # noqa: E731
    return Corpus(
        tuple(sorted(pool, key=by_id)),
        tuple(sorted(alternatives, key=by_id)),
        engine(variant, {item.language for item in planned.items}),
    )


def _refuse_duplicates(pool: Sequence[Snippet]) -> None:
    ids = Counter(s.snippet_id for s in pool)
    duplicates = sorted(i for i, n in ids.items() if n > 1)
    if duplicates:
        raise BuildError(f"identical code in several items: snippet ids {duplicates}")


def _raise_problems(problems: Sequence[str]) -> None:
    if problems:
        raise BuildError("\n".join(problems))


def kept_records(
    planned: BuildPlan,
    runs: Mapping[str, ItemRun],
    chosen: Mapping[str, list[int]],
    survivors: Sequence[Survivor],
) -> list[tuple[ItemRecord, list[Survivor]]]:
    """Per item in id order, its record and surviving candidates: a reused item's as committed,
    a fresh item's from its run, its chosen positions and its survivors' evidence."""
    survivors_of: dict[str, list[Survivor]] = {}
    for survivor in survivors:
        survivors_of.setdefault(survivor.item_id, []).append(survivor)
    kept = []
    for item in planned.items:
        if item.id in planned.reuse:
            record = planned.reuse[item.id].record
            own = [Survivor(item.id, **s) for s in record.survivors]
        else:
            own = survivors_of.get(item.id, [])
            record = item_record(item.id, runs[item.id], chosen[item.id], own)
        kept.append((record, own))
    return kept


def item_yield(item_id: str, record: ItemRecord) -> ItemYield:
    """What the item's record says it yielded: candidates, kills and choices per class."""
    operators = {c.position: c.operator for c in record.choosable}
    selected = in_class_order(Counter(operators[p] for p in record.selected))
    kills = {c.position: c.kill for c in record.choosable}
    crash_only = sum(1 for p in record.selected if kills[p] != "assertion")
    return ItemYield(item_id, record.candidates, record.killed, selected, crash_only)


def item_record(
    item_id: str, run: ItemRun, chosen: Sequence[int], survivors: Sequence[Survivor]
) -> ItemRecord:
    """The yields row of an item built from scratch."""
    rows = tuple({k: v for k, v in s.to_json().items() if k != "item_id"} for s in survivors)
    killed = count_classes(k.mutant for k in run.killed)
    chooses = choosable(run.killed, run.same)
    return ItemRecord(item_id, len(run.mutants), killed, chooses, tuple(chosen), rows)


def run_items(
    items: Sequence[BenchmarkItem],
    runner: SuiteRunner,
    mutant_runner: SuiteRunner,
    variant: CorpusVariant,
    phases: _Phases,
    problems: list[str],
) -> dict[str, ItemRun]:
    """Generate the ``variant`` corpus's candidates of ``items`` (:func:`mutate`) and run them
    and the items' canonicals and alternatives (:func:`execute`); an item whose mutants or
    stacking fail is left out, its failure in ``problems``."""
    if not items:
        return {}
    candidates = mutate(items, mutant_runner, variant, phases, problems)
    runs = execute(
        [i for i in items if i.id in candidates], candidates, runner, mutant_runner, phases
    )
    if not variant.row.distinct:
        return runs
    return with_behaviours(items, runs, mutant_runner, phases, problems)


def with_behaviours(
    items: Sequence[BenchmarkItem],
    runs: dict[str, ItemRun],
    runner: SuiteRunner,
    phases: _Phases,
    problems: list[str],
) -> dict[str, ItemRun]:
    """``runs`` with each item's duplicate behaviours among its killed candidates
    (:func:`.behaviours.same_behaviour`, which runs the drawn inputs with ``runner``); an item
    whose comparison fails is left out, its failure in ``problems`` (:func:`per_item`)."""
    built = [item for item in items if item.id in runs]
    phases.start("behaviours", len(built))
    out = {}
    for done, item in enumerate(built, 1):
        run = runs[item.id]
        same = per_item(item, problems, "behaviours", same_behaviour, item, run.killed, runner)
        if same is not None:
            out[item.id] = replace(run, same=same)
        phases.tick(done)
    return out


def mutate(
    items: Sequence[BenchmarkItem],
    mutant_runner: SuiteRunner,
    variant: CorpusVariant,
    phases: _Phases,
    problems: list[str],
) -> dict[str, list[Mutant]]:
    """Each item's candidates, in item order: its single edits from the ``variant``'s generator
    (:func:`candidate_generator`), stacked K at a time when ``variant.k`` K > 1
    (:func:`stacked_candidates`, which runs the single edits). An item whose generation or
    stacking fails is left out, its failure in ``problems`` (:func:`per_item`)."""
    phases.start("mutants", len(items))
    generate = candidate_generator(variant)
    singles: dict[str, Any] = {}  # None where the item's generation failed
    for done, item in enumerate(items, 1):
        mutants = per_item(item, problems, "mutants", generate, item)
        singles[item.id] = None if mutants is None else _not_the_real_bug(item, mutants)
        phases.tick(done)
    items = [item for item in items if singles[item.id] is not None]
    if variant.row.centred:
        return balanced_candidates(items, singles, mutant_runner, phases, problems)
    if variant.k == 1:
        return {item.id: singles[item.id] for item in items}
    stacked = stacked_candidates(items, singles, mutant_runner, variant.k, phases, problems)
    return {item.id: stacked[item.id] for item in items if stacked.get(item.id) is not None}


def _not_the_real_bug(item: BenchmarkItem, mutants: list[Mutant]) -> list[Mutant]:
    """The candidates but one whose code is the item's real bug: the pool holds that once, as
    the real bug (its pattern names the class whose edit writes it)."""
    return [m for m in mutants if not item.real_bug or m.code != item.real_bug]


def execute(
    items: Sequence[BenchmarkItem],
    candidates: Mapping[str, list[Mutant]],
    runner: SuiteRunner,
    mutant_runner: SuiteRunner,
    phases: _Phases,
) -> dict[str, ItemRun]:
    """Run every item's canonical and alternatives (``runner``, full limits) and candidates
    (``mutant_runner``); each candidate is killed (a distractor's candidate), survives or is
    unusable (its suite proved nothing twice)."""
    original_results = iter(
        runner.run_many([_suite(i, code) for i in items for code in _originals(i)])
    )
    mutant_results = mutant_runner.imap(
        [_suite(i, m.code) for i in items for m in candidates[i.id]]
    )
    phases.start("running", len(items))
    runs = {}
    for done, item in enumerate(items, 1):
        own = [next(original_results) for _ in _originals(item)]
        run = classify(item, candidates[item.id], own[: 1 + len(item.alternatives)], mutant_results)
        runs[item.id] = with_real_bug(item, run, own[-1], runner) if item.real_bug else run
        phases.tick(done)
    return runs


def _originals(item: BenchmarkItem) -> tuple[str, ...]:
    """The code an item brings, run under the full limits: canonical, alternatives, real bug."""
    return (item.canonical, *item.alternatives, *((item.real_bug,) if item.real_bug else ()))


def with_real_bug(
    item: BenchmarkItem, run: ItemRun, result: SuiteResult, runner: SuiteRunner
) -> ItemRun:
    """``run`` with the item's real bug judged by its ``result`` (:func:`.real_bugs.judged`);
    a real bug that ran out of time is judged beside :func:`quick_fix`."""
    quick = kill_kind(result) == "timeout" and quick_fix(item, runner)
    snippet, survivor, unusable = judged(item, result, quick)
    return replace(
        run,
        survivors=run.survivors + ([survivor] if survivor else []),
        unusable=run.unusable + ([unusable] if unusable else []),
        real_bug=snippet,
    )


def quick_fix(item: BenchmarkItem, runner: SuiteRunner) -> bool:
    """Whether the item's canonical (the fix) passes every test within
    :func:`.real_bugs.quick_limits` of ``runner``'s limits on each of
    :data:`.real_bugs.QUICK_FIX_RUNS` runs: uncached, so each run runs."""
    limits = quick_limits(runner.limits)
    with SuiteRunner(limits, jobs=1, isolation=runner.isolation) as quick:
        return all(
            quick.run_many([_suite(item, item.canonical)])[0].passed for _ in range(QUICK_FIX_RUNS)
        )


def classify(
    item: BenchmarkItem,
    mutants: list[Mutant],
    originals: list[SuiteResult],
    results: Iterator[SuiteResult],
) -> ItemRun:
    """``item``'s run: each of ``mutants``, in order, killed, surviving or unusable by its
    result, the next one from ``results``."""
    killed, survivors, unusable = [], [], []
    for position, mutant in enumerate(mutants):
        result = next(results)
        kind = kill_kind(result)
        if kind == UNUSABLE:
            unusable.append(
                f"{item.path}: {mutant.operator} mutant at line {mutant.line} "
                f"is unusable: {result.detail}"
            )
        elif kind:
            killed.append(Killed(position, mutant, result, kind))
        else:
            survivors.append(mutant)
    return ItemRun(mutants, originals, killed, survivors, unusable)


def _suite(item: BenchmarkItem, code: str) -> Suite:
    """The suite that runs ``code`` against ``item``'s tests."""
    return (code, item.setup, item.tests, item.language, item.id)


def survivor_evidence(
    items: Sequence[BenchmarkItem],
    survivors: dict[str, list[Mutant]],
    runner: SuiteRunner,
    phases: _Phases | None = None,
    problems: list[str] | None = None,
) -> tuple[Survivor, ...]:
    """Differential evidence for every surviving mutant: does hypothesis find an input where it
    differs from the canonical (a gap in the item's tests)? An item whose evidence fails is a
    problem in ``problems`` (raised when None), see :func:`per_item`."""
    phases = phases or _Phases(None, ())
    phases.start("survivor evidence", len(items))
    out = []
    for done, item in enumerate(items, 1):
        own = survivors.get(item.id, [])
        found = _evidence(item, [m.code for m in own], runner, problems)
        out += [
            Survivor(
                item.id,
                m.operator,
                m.line,
                unified_diff(item.canonical, m.code),
                e.to_json() if e else None,
            )
            for m, e in zip(own, found)
        ]
        phases.tick(done)
    return tuple(out)


def with_evidence(
    items: Sequence[BenchmarkItem],
    pool: list[Snippet],
    alternatives: list[Snippet],
    runner: SuiteRunner,
    phases: _Phases | None = None,
    problems: list[str] | None = None,
) -> tuple[list[Snippet], list[Snippet]]:
    """Attach equivalence evidence to distractors and alternatives of annotated items
    (``problems`` as in :func:`survivor_evidence`)."""
    by_id = {item.id: item for item in items}
    snippets: dict[str, list[Snippet]] = {}
    for s in (*pool, *alternatives):
        if s.kind != CANONICAL:
            snippets.setdefault(s.query_id, []).append(s)
    phases = phases or _Phases(None, ())
    phases.start("evidence", len(snippets))
    found: dict[str, dict] = {}
    for done, query_id in enumerate(sorted(snippets), 1):
        item, own = by_id[query_id], snippets[query_id]
        for s, e in zip(own, _evidence(item, [s.code for s in own], runner, problems)):
            if e is not None:
                found[s.snippet_id] = e.to_json()
        phases.tick(done)
    attach = lambda s: replace(s, equivalence=found.get(s.snippet_id))  # noqa: E731
    return [attach(s) for s in pool], [attach(s) for s in alternatives]


def _evidence(
    item: BenchmarkItem, codes: list[str], runner: SuiteRunner, problems: list[str] | None
) -> list:
    """The evidence of ``codes`` against ``item``'s canonical; ``[]`` after a problem; None
    for each where the language gives the entry point no parameter types to draw inputs of
    (:func:`.twins.input_types`)."""
    types = input_types(item).types
    if types is None:
        return [None] * len(codes)
    work = (item.canonical, item.entry_point, item.setup, codes, runner, item.query)
    typed = (*work, types, item.lang.realm, item.id)
    return attempt(item, problems, "equivalence evidence", evidence, *typed) or []


def evidence_report(corpus: Corpus, items: Sequence[BenchmarkItem] = ()) -> str:
    """The evidence's summary, each alternative it tells apart from its canonical, and the
    ``items`` without evidence, by reason (:func:`.twins.input_types`)."""
    without = _without_evidence(items)
    distractors = [s for s in corpus.snippets if s.equivalence]
    alternatives = [s for s in corpus.alternatives if s.equivalence]
    if not distractors and not alternatives:
        return "\n".join(
            [
                "equivalence evidence: none (no item's entry point is fully annotated, so no "
                "inputs can be drawn to compare distractors and alternatives with the "
                "canonical; see 'Typed' in docs/items-guide.md)",
                *without,
            ]
        )
    shown = sum(s.equivalence["differing"] > 0 for s in distractors if s.equivalence)
    agree = sum(s.equivalence["differing"] == 0 for s in alternatives if s.equivalence)
    differing = [s for s in alternatives if s.equivalence and s.equivalence["differing"] > 0]
    return "\n".join(
        [
            f"equivalence evidence (annotated items): {shown}/{len(distractors)} distractors "
            f"differ from the canonical on drawn inputs; {agree}/{len(alternatives)} "
            "alternatives agree on every drawn input",
            *(_differing_alternative(s) for s in sorted(differing, key=_alternative_order)),
            *without,
        ]
    )


SHOWN_IDS = 10  # item ids named per reason of :func:`_without_evidence`


def _without_evidence(items: Sequence[BenchmarkItem]) -> list[str]:
    """One line per reason some of ``items`` have no evidence, naming them (the first
    :data:`SHOWN_IDS`; item text is untrusted: escaped)."""
    by_reason: dict[str, list[str]] = {}
    for item in sorted(items, key=lambda item: item.id):
        found = input_types(item)
        if found.types is None:
            by_reason.setdefault(found.why, []).append(item.id)
    lines = []
    for why, ids in sorted(by_reason.items()):
        more = f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else ""
        named = ", ".join(ids[:SHOWN_IDS]) + more
        lines.append(f"  no evidence for {len(ids)} item(s), {escape(why)}: {escape(named)}")
    return lines


def _alternative_order(s: Snippet) -> tuple[str, str]:
    return (s.query_id, s.snippet_id)


def _differing_alternative(s: Snippet) -> str:
    """One alternative the drawn inputs tell apart from its canonical, with the first input
    that does (item text and drawn values are untrusted: escaped)."""
    e = s.equivalence or {}
    witness = e.get("witness")
    where = f", e.g. on the arguments {escape(str(witness))}" if witness is not None else ""
    return (
        f"  differs: {escape(s.query_id)} alternative {s.snippet_id[:12]} on "
        f"{e['differing']}/{e['inputs']} drawn inputs{where}"
    )


def mutation_score_report(yields: Sequence[ItemYield], survivors: Sequence[Survivor]) -> str:
    """The set's mutation score, overall, per domain and per operator class:
    killed / (killed + surviving mutants shown different from the canonical by differential
    evidence). Survivors without a difference found (possibly equivalent) and survivors of
    unannotated items are counted apart."""
    killed: dict[tuple[str, str], int] = Counter()
    for y in yields:
        for op, n in y.killed.items():
            killed[y.item_id.partition("/")[0], op] += n
    shown: dict[tuple[str, str], int] = Counter()
    unshown = unknown = 0
    for s in survivors:
        if s.operator == SURVIVOR_OPERATOR:  # a real bug: the real bugs have a report of their own
            continue
        if s.equivalence is None:
            unknown += 1
        elif s.equivalence["differing"] > 0:
            shown[s.item_id.partition("/")[0], s.operator] += 1
        else:
            unshown += 1

    def line(label: str, k: int, d: int) -> str:
        score = f"{k / (k + d):7.2%}" if k + d else "      -"
        return f"  {label:<24} {score}  killed {k:>5}  shown different {d:>4}"

    total_k, total_d = sum(killed.values()), sum(shown.values())
    lines = [
        "mutation score = killed / (killed + surviving mutants shown different):",
        line("all", total_k, total_d),
        f"  ({unshown} survivors agree with the canonical on every drawn input; "
        f"{unknown} survivors of items without a fully annotated entry point)",
        "per domain:",
    ]
    for domain in sorted({d for d, _ in killed} | {d for d, _ in shown}):
        lines.append(
            line(
                domain,
                sum(n for (d, _), n in killed.items() if d == domain),
                sum(n for (d, _), n in shown.items() if d == domain),
            )
        )
    lines.append("per operator class:")
    ops = in_class_order(Counter({op: 1 for _, op in (*killed, *shown)}))
    for op in ops:
        lines.append(
            line(
                op,
                sum(n for (_, o), n in killed.items() if o == op),
                sum(n for (_, o), n in shown.items() if o == op),
            )
        )
    return "\n".join(lines)


def review_report(items: Sequence[BenchmarkItem], corpus: Corpus) -> str:
    """For a reviewer: per item, each chosen distractor that exactly one test kills, with that
    test and the edited lines. The query must state the behaviour that test pins; otherwise the
    distractor is a legitimate reading of the query."""
    by_id = {item.id: item for item in items}
    single: dict[str, list[Snippet]] = {}
    for s in corpus.snippets:
        if s.kind == DISTRACTOR and len(s.failing_tests) == 1:
            single.setdefault(s.query_id, []).append(s)
    count = sum(map(len, single.values()))
    lines = [
        f"review: {count} distractors killed by a single test in {len(single)} items; "
        "check that each query states the behaviour its test pins"
    ]
    for query_id in sorted(single):
        item = by_id[query_id]
        lines += ["", f"{query_id} ({item.path})", f"  query: {item.query}"]
        for s in sorted(single[query_id], key=lambda s: (s.line or 0, s.snippet_id)):
            edited = [
                ln.rstrip("\n")
                for ln in s.diff.splitlines()
                if ln[:1] in "+-" and not ln.startswith(("+++", "---"))
            ]
            index = s.failing_tests[0]
            lines.append(f"  - {s.operator} at line {s.line} ({s.snippet_id[:12]}):")
            lines += [f"      {ln}" for ln in edited]
            lines.append(
                f"      killed only by tests[{index}] ({s.outcomes[index]}): {item.tests[index]}"
            )
    return "\n".join(lines)


def stacked_candidates(
    items: Sequence[BenchmarkItem],
    singles: dict[str, list[Mutant]],
    runner: SuiteRunner,
    k: int,
    phases: _Phases | None = None,
    problems: list[str] | None = None,
) -> dict[str, list[Mutant]]:
    """Each item's stacked candidates (``None`` for an item whose stacking failed, recorded in
    ``problems``; raised when that is None)."""
    killed_of = run_killed(items, singles, runner, phases or _Phases(None, ()), "stacking")
    out = {}
    for item in items:
        killed = killed_of[item.id]
        preferred = select_distractors(killed, Counter(), limit=len(killed))
        work = (
            item.canonical,
            item.entry_point,
            k,
            [c.mutant for c in preferred],
            STACK_CANDIDATES,
        )
        out[item.id] = attempt(item, problems, "stacked mutants", stack_mutants, *work)
    return out


def run_killed(
    items: Sequence[BenchmarkItem],
    mutants: Mapping[str, Sequence[Mutant]],
    runner: SuiteRunner,
    phases: _Phases,
    phase: str,
) -> dict[str, list[Killed]]:
    """Each item's ``mutants`` run against its tests: the killed ones (unusable suites left
    out), positions in the item's list; progress reported as ``phase``."""
    results = runner.imap([_suite(item, m.code) for item in items for m in mutants[item.id]])
    phases.start(phase, len(items))
    out = {}
    for done, item in enumerate(items, 1):
        out[item.id] = [
            Killed(i, m, r, kind)
            for i, m in enumerate(mutants[item.id])
            for r in [next(results)]
            for kind in [kill_kind(r)]
            if kind is not None and kind != UNUSABLE
        ]
        phases.tick(done)
    return out


def balanced_candidates(
    items: Sequence[BenchmarkItem],
    singles: Mapping[str, list[Mutant]],
    runner: SuiteRunner,
    phases: _Phases | None = None,
    problems: list[str] | None = None,
) -> dict[str, list[Mutant]]:
    """Each item's candidates in the balanced corpus (:mod:`.balanced`): a star's are its
    single edits, chosen from as usual; a family centred on W has W and its leaves, each run
    here and killed, so they are its distractors. W's single edits are generated as the item's
    are (:func:`per_item`: a failure is a problem in ``problems``, raised when that is None)."""
    phases = phases or _Phases(None, ())
    killed = run_killed(items, singles, runner, phases, "centres")
    centres: dict[str, Killed] = {}
    leaves: dict[str, list[Mutant]] = {}
    for item in items:
        centre = None
        if not balanced.is_star(item.id):
            centre = balanced.choose_centre(item.id, item.canonical, killed[item.id])
        if centre is None:
            continue
        work = (centre.mutant.code, item.entry_point)
        own = attempt(item, problems, "centre's mutants", item.lang.mutants, *work)
        if own is not None:
            centres[item.id] = centre
            leaves[item.id] = balanced.leaf_candidates(own, item.canonical, centre.mutant.code)
    shaped = [item for item in items if item.id in centres]
    leaf_kills = run_killed(shaped, leaves, runner, phases, "leaves")
    return {
        item.id: balanced.centred(
            item.id, centres.get(item.id), leaf_kills.get(item.id, [])
        ).candidates
        or singles[item.id]
        for item in items
    }


def distractor(item: BenchmarkItem, killed: Killed) -> Snippet:
    m: Mutant = killed.mutant
    return make_snippet(
        item,
        DISTRACTOR,
        m.code,
        killed.result.outcomes,
        operator=m.operator,
        line=m.line,
        kill=killed.kill,
        edit_lines=m.lines_changed,
        edit_chars=m.chars_changed,
    )


def count_classes(mutants) -> dict[str, int]:
    return in_class_order(Counter(m.operator for m in mutants))


def in_class_order(counts: Counter) -> dict[str, int]:
    """Counts keyed by operator class, in table order (the core table, then the families;
    stacked "a+b" classes last)."""
    order = {op: i for i, op in enumerate(ALL_CLASSES)}
    return dict(sorted(counts.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def short_items(yields: Sequence[ItemYield], minimum: int = MAX_DISTRACTORS) -> list[str]:
    """The items with fewer than ``minimum`` distractors chosen (the items guide's "must")."""
    return [y.item_id for y in yields if sum(y.selected.values()) < minimum]


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
    short = short_items(yields, minimum)
    if short:  # killed, but only by timeouts, which are never chosen
        lines.append(
            f"items with fewer than {minimum} distractors chosen ({len(short)}; "
            "timeout kills are not chosen):"
        )
        lines += [f"  {iid}" for iid in short]
    shares: Counter[str] = Counter()
    for y in yields:
        shares.update(y.selected)
    total = sum(shares.values())
    if total:
        lines.append(f"distractors: {total}; share per operator class:")
        lines += [
            f"  {op:<24} {n:>5}  {n / total:6.1%}" for op, n in in_class_order(shares).items()
        ]
        crashes = sum(y.crash_only for y in yields)
        lines.append(
            f"distractors killed only by a crash (no test saw a wrong value): {crashes}/{total} "
            f"({crashes / total:.1%})"
        )
    return "\n".join(lines)
