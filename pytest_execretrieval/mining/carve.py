"""Test carving: tests for a package's functions and methods from the package's own test suite.

Each test file runs in the sandbox, in the package's context, with the functions and methods to
mine wrapped by a recorder (:mod:`._carve_harness`): one suite per file, its own time bound, the
test files spread over the runner's jobs. Every recorded call whose arguments and result the
value codec carries becomes a test-grammar statement (:func:`carved_test`), provenance
``carved TESTFILE::TESTNAME``; the grammar is not loosened, a call it cannot state is dropped.
Per function at most ``per_function`` tests, chosen deterministically to cover distinct
outcomes first (:func:`chosen`). A file whose suite times out, is stopped by the sandbox or
breaks the wire records nothing and is counted by its outcome (:class:`Carved`). Why a
function got no carved test is kept too (:meth:`Carved.cause`): ``MINED.md`` counts them.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from ..corpus.items import grammar_problem
from ..execution import _grammar
from ..execution.contexts import context_setup
from ..execution.runner import SuiteRunner
from ..execution.sandbox import SuiteResult
from ..sanitize import one_line
from .context import runner_context
from .functions import MinedFunction, is_test_file
from .record import literal_text

HARNESS = (Path(__file__).parent / "_carve_harness.py").read_text()
CARVED = "carved"  # a carved test's provenance: "carved TESTFILE::TESTNAME"
MAX_LAMBDA = 300  # characters of a recorded lambda argument
TEST_SECONDS = 10  # each test's alarm in the harness
PYTEST_STATUS = {
    0: "every test passed",
    1: "some tests failed",
    2: "interrupted: a collection error (an import the context lacks, ...)",
    3: "pytest's internal error",
    4: "pytest usage error",
    5: "no tests collected",
}
# (module, class or "", name): a function's or method's key in the recorder's answers
Key = tuple[str, str, str]
# Why calls of a function were not stated as tests: the recorder's causes
# (``_carve_harness.MISSED_CAUSES``; one naming a type adds ": TYPE"), then the host's.
MISSED = {
    "subclass": "called on instances of a subclass only",
    "instance": "its instance holds values the codec does not carry",
    "argument": "an argument the test grammar cannot state",
    "result": "a result the value codec does not carry",
    "uncopyable": "arguments that cannot be copied before the call",
    "unread": "an iterator the test did not read to its end",
    "machine": "a path of this machine in the call",
}
NEVER_CALLED = "never called by the test suite"
NO_LITERAL = "a value with no literal of the test grammar"
UNNAMED_EXCEPTION = "raises an exception the test grammar does not name"
UNSTATED = "a statement the test grammar refuses"
NOT_REPEATED = "a different answer in the second run"
PROCEDURE = "returns None only (a procedure)"
FAILS_ALONE = "its carved calls give other answers run on their own"


@dataclass
class Carved:
    """What carving found: candidate tests (statement, provenance) per function key, in the
    order the suite made the calls; how many test files ran, how pytest ended in those that
    answered, and the sandbox's outcome of those that did not (``timeout``, ``error:...``)."""

    tests: dict[Key, list[tuple[str, str]]] = field(default_factory=dict)
    files: int = 0
    stopped: Counter[str] = field(default_factory=Counter)  # outcome -> test files
    status: Counter[str] = field(default_factory=Counter)  # how pytest ended -> test files
    missed: dict[Key, Counter[str]] = field(default_factory=dict)  # calls not stated, by cause

    def cause(self, key: Key) -> str:
        """Why the function ``key`` got no carved test: its carved tests were all dropped
        (returning None only, or failing run on their own), or the cause of most of its calls
        that were not stated (ties by name), or it was never called."""
        if self.tests.get(key):
            return PROCEDURE if not chosen(self.tests[key], 1) else FAILS_ALONE
        missed = self.missed.get(key)
        if not missed:
            return NEVER_CALLED
        return min(missed.items(), key=lambda cause: (-cause[1], cause[0]))[0]


def test_files(names: Sequence[str]) -> list[str]:
    """The test modules of a context's files: ``test_*.py`` and ``*_test.py`` where tests live."""
    return sorted(
        name
        for name in names
        if is_test_file(name)
        and (PurePosixPath(name).name.startswith("test_") or name.endswith("_test.py"))
    )


def carve(
    functions: list[MinedFunction],
    sha256: str,
    files: list[str],
    runner: SuiteRunner,
    test_seconds: int = TEST_SECONDS,
) -> Carved:
    """Run each test file of ``files`` in the context ``sha256`` with ``functions`` recorded,
    each test under ``test_seconds`` (the file under ``runner``'s timeout), twice: a call is a
    test only where both runs made it with the same answer (a test that draws a random uuid
    or reads the clock records nothing that would change the item at every mining)."""
    targets = sorted({(fn.module, fn.owner, fn.name) for fn in functions})
    carved = Carved(files=len(files))
    if not targets or not files:
        return carved
    code = (
        f"{HARNESS}\nTARGETS = {[list(t) for t in targets]!r}\nTEST_SECONDS = {int(test_seconds)}\n"
    )
    setup = context_setup(sha256, also=runner_context())
    suites = [(code, setup, [f"carve({name!r})"], "python", f"carve:{name}") for name in files]
    owners = {(fn.module, fn.owner, fn.name): fn for fn in functions}
    first, second = runner.run_many(suites), runner.run_many(suites)
    for name, one, two in zip(files, first, second, strict=True):
        ran = _answer(one)
        if ran is None:
            carved.stopped[one.outcomes[0] if one.outcomes else "no outcome"] += 1
            continue
        carved.status[PYTEST_STATUS.get(ran[0], f"pytest exit status {ran[0]!r:.20}")] += 1
        for key, cause, calls in _missed(ran[2], owners):
            carved.missed.setdefault(key, Counter())[cause] += calls
        repeated = _answer(two)
        again = {(key, test) for key, test, _, _ in _keyed(repeated or [0, [], []], owners, name)}
        for key, statement, where, why in _keyed(ran, owners, name):
            if statement is not None and (key, statement) in again:
                carved.tests.setdefault(key, []).append((statement, where))
            else:  # a test only where both runs made the same call with the same answer
                carved.missed.setdefault(key, Counter())[why or NOT_REPEATED] += 1
    return carved


def _answer(result: SuiteResult) -> list | None:
    """The harness's ``[status, records, missed]`` from a carving suite, or None (it gave
    none)."""
    answer = result.values[0] if result.values else None
    ran = answer[1] if isinstance(answer, tuple) and answer[0] == "value" else None
    ok = isinstance(ran, list) and len(ran) == 3 and all(isinstance(r, list) for r in ran[1:])
    return ran if ok else None


def _missed(causes: list, owners: dict[Key, MinedFunction]) -> Iterator[tuple[Key, str, int]]:
    """The recorder's ``[module, class, name, cause, calls]`` rows, the cause in words (a
    type it names kept, on one line), for the functions of ``owners``; rows of another shape
    (the child's answer is untrusted data) are left out."""
    for row in causes:
        if not (isinstance(row, list) and len(row) == 5 and isinstance(row[4], int)):
            continue
        key = (str(row[0]), str(row[1]), str(row[2]))
        cause, _, named = str(row[3]).partition(": ")
        if key in owners and cause in MISSED and row[4] > 0:
            yield key, MISSED[cause] + (f": {one_line(named)[:60]}" if named else ""), row[4]


def _keyed(
    ran: list, owners: dict[Key, MinedFunction], name: str
) -> Iterator[tuple[Key, str | None, str, str | None]]:
    """Each record of a carving answer stated as a test: its function's key, the statement
    and its provenance, or None and why the grammar cannot state it."""
    for record in ran[1]:
        parsed = _record(record)
        if parsed is None or parsed[0] not in owners:
            continue
        statement = carved_test(owners[parsed[0]], *parsed[2:])
        why = None if statement is not None else _unstated(*parsed[2:])
        yield parsed[0], statement, f"{CARVED} {parsed[1] or name}", why


def _unstated(args: list, kwargs: dict, kind: str, value: object) -> str:
    """Why :func:`carved_test` could not state a recorded call."""
    if kind == "raises":
        return UNSTATED if value in _grammar.EXCEPTIONS else UNNAMED_EXCEPTION
    shown = [*args, *kwargs.values()]
    if any(_argument(a) is None for a in shown) or literal_text(value) is None:
        return NO_LITERAL
    return UNSTATED


def _record(record: object) -> tuple[Key, str, list, dict, str, object] | None:
    """A recorder answer's parts, or None for one of another shape (the child's answer is
    untrusted data)."""
    if not (isinstance(record, list) and len(record) == 8):
        return None
    module, owner, name, test, args, kwargs, kind, value = record
    if not all(isinstance(x, str) for x in (module, owner, name, test, kind)):
        return None
    if not (isinstance(args, list) and isinstance(kwargs, dict)):
        return None
    if not all(isinstance(k, str) and k.isidentifier() for k in kwargs):
        return None
    return (module, owner, name), test, args, kwargs, kind, value


def carved_test(
    fn: MinedFunction, args: list, kwargs: dict, kind: str, value: object
) -> str | None:
    """The test-grammar statement of one recorded call of ``fn``, or None where the grammar
    cannot state it (a value with no literal, an exception the grammar does not name)."""
    parts = [_argument(a) for a in args]
    parts += [None if (text := _argument(v)) is None else f"{k}={text}" for k, v in kwargs.items()]
    if any(p is None for p in parts):
        return None
    call = f"{fn.name}({', '.join(str(p) for p in parts)})"
    if kind == "value":
        expected = literal_text(value)
        test = None if expected is None else f"assert {call} == {expected}"
    elif kind == "items":
        expected = literal_text(value)
        test = None if expected is None else f"assert list({call}) == {expected}"
    elif kind == "raises" and value in _grammar.EXCEPTIONS:
        test = f"assert raises({', '.join([str(value), fn.name, *map(str, parts)])})"
    else:
        test = None
    if test is None or len(test) > _grammar.MAX_SOURCE:
        return None
    return test if grammar_problem(test, fn.name) is None else None


def _argument(shown: object) -> str | None:
    """A recorded argument as test text: a literal, a builtin the grammar's lambdas call, or a
    lambda's text (the grammar checks it with the whole statement)."""
    if not (isinstance(shown, list) and len(shown) == 2 and shown[0] in ("v", "f", "l")):
        return None
    tag, value = shown
    if tag == "v":
        return literal_text(value)
    if tag == "f":
        return value if value in _grammar.LAMBDA_CALLABLES else None
    return value if isinstance(value, str) and len(value) <= MAX_LAMBDA else None


def chosen(tests: list[tuple[str, str]], k: int) -> list[tuple[str, str]]:
    """Up to ``k`` of a function's carved tests, deterministically: first one per distinct
    outcome (:func:`expectation`), in the order the suite made the calls, then the rest in that
    order; each statement once. None where every call returned None (a procedure: its tests
    would check nothing it does)."""
    unique = list({statement: (statement, where) for statement, where in reversed(tests)}.values())
    unique.reverse()  # each statement once, where the suite first made it
    if all(expectation(test) == _RETURNS_NONE for test, _ in unique):
        return []  # a procedure: what it does is not what it returns
    first: dict[str, tuple[str, str]] = {}
    for test in unique:
        first.setdefault(repr(expectation(test[0]) or test[0]), test)
    picked = list(first.values())[:k]
    picked += [t for t in unique if t not in picked][: k - len(picked)]
    order = {t: n for n, t in enumerate(unique)}
    return sorted(picked, key=order.__getitem__)


def constant_passes(tests: Sequence[str]) -> bool:
    """Whether one fixed answer passes every test of ``tests``: every test raises the same
    exceptions, or every one expects the same wrapped call to equal the same value, bare truth
    tests agreeing with it (``assert f(x)`` and ``== True`` are one outcome, ``assert not
    f(x)`` and ``assert f(y)`` two). A test of another form (``!=``, ``isclose``) or two
    different wrappers count as telling answers apart."""
    expected = [expectation(test) for test in tests]
    if any(e is None for e in expected):
        return False
    known = [e for e in expected if e is not None]
    kinds = {e.kind for e in known}
    if "raises" in kinds:
        return kinds == {"raises"} and len({e.value for e in known}) == 1
    equals = {(e.wrappers, repr(e.value)) for e in known if e.kind == "equals"}
    truths = {bool(e.value) for e in known if not e.wrappers}
    return len(equals) <= 1 and len(truths) <= 1


class Expected(NamedTuple):
    """What a test expects of its call: ``raises`` (``value``: the exception names),
    ``truth`` (``assert f(x)``: True, ``assert not f(x)``: False) or ``equals`` (``==`` and
    ``is``, so ``is None`` is ``== None``: the value, after the ``wrappers`` around the call)."""

    kind: str
    value: object
    wrappers: tuple = ()


def expectation(statement: str) -> Expected | None:
    """:class:`Expected` of a test; None for another form or a statement the grammar refuses."""
    try:
        test = _grammar.parse_test(statement)
        if test.form == _grammar.RAISES:
            return Expected("raises", tuple(test.exceptions))
        if test.form == _grammar.TRUTH:
            return Expected("truth", test.op != "not")
        if test.form == _grammar.COMPARE and test.op in ("==", "is"):
            wrappers = tuple(
                (kind, ast.dump(what) if isinstance(what, ast.AST) else what)
                for kind, what in test.steps
            )
            return Expected("equals", _grammar.expected_value(test), wrappers)
    except (_grammar.GrammarError, ValueError, RecursionError, MemoryError):
        pass
    return None


_RETURNS_NONE = Expected("equals", None)
