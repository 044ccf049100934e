"""The item linter: the bundled items' checks, for any items directory (``execretrieval lint``).

Each check reads an item (or the pool's committed corpus) and says what is wrong with it as
:class:`Finding` records: the item id, the check's name, a severity and a message. An
``error`` is an item the benchmark cannot trust or cannot run (a malformed file, a float
compared with ``==``, a ``raises`` test of an exception its query does not name, a stale
corpus); a ``warning`` is an item below the guide's bar (too few tests or distractors, a query
that leaks its entry point or recites its algorithm, a convention a test pins that the query
does not state). The lexical proxies among them (conventions, promised conditions, recitals)
misread a query now and then: ``tests/test_bundled_items.py`` lists the bundled items whose
finding was reviewed and found wrong, with the reason.

An items directory is untrusted input: nothing here executes item code. Item files are loaded
through :func:`.items.load_items` (the host-side bounds first), code is parsed (``ast``,
tree-sitter for JavaScript), tests are read through the test grammar's parser and literal
interpreter, and the corpus is read as recorded by the build. The checks that run a canonical
(in the sandbox) stay in the test suite and in ``execretrieval verify``.

The checks of :data:`ITEM_CHECKS` are plain functions ``item -> [message, ...]``, so the test
suite calls the same functions on the bundled items.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..bounds import foreign_files
from ..execution import _grammar
from ..mutation.equivalence import annotations as entry_annotations
from ..mutation.equivalence import entry_point_def, named_exceptions, supported
from ..mutation.select import MAX_DISTRACTORS
from ..sanitize import one_line
from .items import BenchmarkItem, item_id, load_items
from .pools import language_pools
from .store import (
    ALTERNATIVES,
    DISTRACTOR_KINDS,
    MANIFEST,
    Corpus,
    CorpusError,
    build_command,
    read_corpus,
    sha256,
    stale_reasons,
)
from .variants import DEFAULT_VARIANT

__all__ = [
    "CHECKS",
    "ERROR",
    "ITEM_CHECKS",
    "MAX_TESTS",
    "MIN_DISTRACTORS",
    "MIN_TESTS",
    "WARNING",
    "Check",
    "Finding",
    "LintResult",
    "lint",
    "lint_items",
    "render",
]

ERROR, WARNING = "error", "warning"
MIN_TESTS, MAX_TESTS = 7, 10  # the guide's "7-10 single statements"
MIN_DISTRACTORS = MAX_DISTRACTORS  # an item needs its full set (`build --strict` refuses less)


@dataclass(frozen=True)
class Finding:
    """One thing wrong with an item (``item_id``, prefixed with its pool: ``javascript/...``)
    or, for what concerns a whole pool (its corpus, a foreign file), with the directory
    (``item_id`` is then the directory's path)."""

    item_id: str
    check: str
    severity: str  # ERROR or WARNING
    message: str

    def line(self) -> str:
        """The finding on one line, every character of item text escaped (control characters,
        bidirectional overrides, tabs and newlines shown as ``\\x1b``, ``\\n``)."""
        return one_line(f"{self.severity}: {self.item_id}: {self.check}: {self.message}")


def render(findings: Iterable[Finding]) -> str:
    """The findings, one line each (:meth:`Finding.line`)."""
    return "".join(f.line() + "\n" for f in findings)


# --- the tests -----------------------------------------------------------------------------------


def tests_per_item(item: BenchmarkItem) -> list[str]:
    """7 to 10 tests: fewer pin too little to kill mutants, more make one item weigh more."""
    n = len(item.tests)
    if n < MIN_TESTS:
        return [f"{n} test(s); an item needs at least {MIN_TESTS} (the guide's 7-10)"]
    if n > MAX_TESTS:
        return [f"{n} tests; the guide's range is {MIN_TESTS}-{MAX_TESTS}"]
    return []


# Several checks read each test; parsing is most of a lint's time, so a test (a string) is
# parsed once. The trees and tests are only read.
@functools.lru_cache(maxsize=1024)
def _tree(source: str) -> ast.Module:
    return ast.parse(source)


@functools.lru_cache(maxsize=1024)
def _test(source: str, exceptions: frozenset[str]) -> _grammar.Test:
    return _grammar.parse_test(source, exceptions=exceptions)


def _parsed(item: BenchmarkItem) -> list[_grammar.Test]:
    return [_test(t, item.lang.exceptions) for t in item.tests]


def float_literal(node: ast.AST) -> bool:
    """A float literal, a negated one, or a list/tuple/set/dict literal holding one."""
    if isinstance(node, ast.Constant):
        return type(node.value) is float
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return float_literal(node.operand)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return any(float_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(float_literal(e) for e in (*node.keys, *node.values) if e is not None)
    return False


def rounded(node: ast.AST) -> bool:
    """Whether ``node`` rounds to stated digits somewhere (``round(x, n)``)."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id == "round"
        and len(n.args) == 2
        for n in ast.walk(node)
    )


def equality_operands(test: str) -> list[tuple[ast.expr, ast.expr]]:
    """The operand pairs of every ``==``/``!=`` in ``test`` that is not rounded."""
    pairs = []
    for node in ast.walk(_tree(test)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, (a, b) in zip(node.ops, zip(operands, operands[1:])):
                if isinstance(op, (ast.Eq, ast.NotEq)) and not (rounded(a) or rounded(b)):
                    pairs.append((a, b))
    return pairs


def float_equality(item: BenchmarkItem) -> list[str]:
    """No float literal compared with ``==``/``!=`` (an equally correct ``x * 0.01`` fails)."""
    return [
        f"tests[{i}] compares a float literal with ==/!=: {test}"
        for i, test in enumerate(item.tests)
        if any(float_literal(a) or float_literal(b) for a, b in equality_operands(test))
    ]


def call_arguments(source: str, exceptions: frozenset[str] = _grammar.EXCEPTIONS) -> list[object]:
    """The literal values a test passes to the entry point (a lambda or a name left out),
    computed by the test grammar's literal interpreter (no item code runs)."""
    call = ast.parse(_test(source, exceptions).call.source, mode="eval")
    if not isinstance(call.body, ast.Call):
        return []
    nodes = (*call.body.args, *(k.value for k in call.body.keywords))
    return [_grammar.literal_value(n) for n in nodes if not isinstance(n, ast.Lambda | ast.Name)]


# --- the query against the tests -------------------------------------------------------------


def query_names_entry_point(item: BenchmarkItem) -> list[str]:
    """A query is a search, not a spec: the entry point's name in it gives the answer away."""
    if item.entry_point in item.query:
        return [f"the query contains the entry point's name {item.entry_point!r}"]
    return []


def unnamed_exceptions(item: BenchmarkItem) -> list[str]:
    """Every exception a ``raises`` test expects is named in the query (a class name, or a
    word of the language's own: Go's "panics" names ``panic``)."""
    own = {n for n in item.lang.exceptions if re.search(rf"\b{re.escape(n)}", item.query)}
    named = named_exceptions(item.query) | own
    failures = []
    for i, test in enumerate(item.tests):
        for node in ast.walk(_tree(test)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "raises"
                and node.args
            ):
                kinds = node.args[0].elts if isinstance(node.args[0], ast.Tuple) else [node.args[0]]
                for kind in kinds:
                    name = ast.unparse(kind).rpartition(".")[2]
                    if name not in named:
                        failures.append(f"tests[{i}] expects {name}, which the query does not name")
    return failures


# Words that open another statement in a clause ("k = 0 gives 0 and k below 1 raises ..."):
# the conditions of an exception are the clause's parts after the last of them.
_STATEMENT = re.compile(
    r"\b(gives?|returns?|is|are|has|have|counts?|match(es)?|may|stays?|yields?|means?|go(es)?|"
    r"adds?|ignored|needs?|costs?|encodes?|becomes?|rounds?|raises?|uses?|works?|pass(es)?|"
    r"evaluates?|takes?|makes?|keeps?)\b"
)


def _outside_parentheses(text: str) -> str:
    """``text`` with every parenthesised part blanked (an aside never adds a condition)."""
    depth, out = 0, []
    for ch in text:
        depth += ch == "("
        out.append(" " if depth else ch)
        depth -= ch == ")" and depth > 0
    return "".join(out)


def promised_conditions(query: str, exception: str) -> int:
    """How many conditions ``query`` attaches to ``exception``: in each clause (split at ``;``,
    ``?`` and a sentence's full stop) that names it, the condition phrase is what follows the
    name ("raises ValueError for a negative n or an empty list": 2) or, when nothing does, the
    parts before it back to another statement ("k = 0 gives 0 and a negative k or an empty
    list raise ValueError": 2); its conditions are its parts separated by ``,`` and ``or``
    outside parentheses, an aside ", non-ASCII digits included," not counted. The most any
    clause attaches."""
    most = 0
    for clause in re.split(r";|\?|\.(?:\s|$)", query):
        named = re.search(rf"\b{re.escape(exception)}\b", clause)
        if not named:
            continue
        after = clause[named.end() :]
        if len(after.split()) >= 2:
            phrase = re.split(r", and ", after)[0]
        else:
            before = re.sub(r"\b(raises?|raising)\s*$", "", clause[: named.start()].rstrip())
            parts = re.split(r", and |, | and ", _outside_parentheses(before))
            kept = [parts[-1]]  # the condition itself may say "is"
            for part in reversed(parts[:-1]):
                if _STATEMENT.search(part):
                    break
                kept.append(part)
            phrase = ", ".join(reversed(kept))
        phrase = re.sub(r", [^,]* included,?", " ", _outside_parentheses(phrase))
        most = max(most, 1 + len(re.findall(r",? or |, ", phrase)))
    return most


def promised_exception_gaps(item: BenchmarkItem) -> list[tuple[str, int, int]]:
    """``(exception, conditions the query attaches, raises tests of it)`` for every exception
    the query names."""
    tests = _parsed(item)
    gaps = []
    for name in sorted(named_exceptions(item.query)):
        tested = sum(
            t.form == _grammar.RAISES and t.op != "not" and name in t.exceptions for t in tests
        )
        gaps.append((name, promised_conditions(item.query, name), tested))
    return gaps


def untested_exceptions(item: BenchmarkItem) -> list[str]:
    """Every exception the query promises has ``raises`` tests, at least one per condition
    (:func:`promised_conditions`, a lexical reading)."""
    return [
        f"the query promises {name} under {needed} condition(s), {tested} raises test(s) "
        "exercise it"
        for name, needed, tested in promised_exception_gaps(item)
        if tested < needed
    ]


def says_ascii(query: str) -> bool:
    return "ASCII" in query


def feeds_non_ascii_digits(test: str) -> bool:
    """Whether a string literal of ``test`` holds a non-ASCII digit (Arabic-Indic, ``²``)."""
    return any(
        isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and any(ch.isnumeric() and not ch.isascii() for ch in n.value)
        for n in ast.walk(_tree(test))
    )


WHITESPACE_WORDS = re.compile(
    r"whitespace|space|blank|strip|trim|tab|newline|padding|indent", re.IGNORECASE
)


def spaced_tests(item: BenchmarkItem) -> list[int]:
    """The tests passing text with leading or trailing whitespace, a run of spaces, a tab or
    a newline."""
    return [
        i
        for i, source in enumerate(item.tests)
        if any(
            isinstance(v, str) and (v != v.strip() or "  " in v or "\t" in v or "\n" in v)
            for v in call_arguments(source, item.lang.exceptions)
        )
    ]


def ascii_conventions(item: BenchmarkItem) -> list[str]:
    """A test feeding non-ASCII digits pins how they are treated: the query says ASCII."""
    return [
        f"tests[{i}] feeds non-ASCII digits and the query does not say ASCII"
        for i, source in enumerate(item.tests)
        if feeds_non_ascii_digits(source) and not says_ascii(item.query)
    ]


def whitespace_conventions(item: BenchmarkItem) -> list[str]:
    """A test passing text with surrounding or repeated whitespace pins how whitespace is
    treated: the query speaks of it (:data:`WHITESPACE_WORDS`), unless whitespace is an
    ordinary character of the input by the query's words (a reviewer's call)."""
    spaced = spaced_tests(item)
    if spaced and not WHITESPACE_WORDS.search(item.query):
        return [
            f"tests[{spaced[0]}] passes text with surrounding or repeated whitespace and the "
            "query says nothing of it"
        ]
    return []


def unstated_conventions(item: BenchmarkItem) -> list[str]:
    """Conventions a test pins and the query must state (:func:`ascii_conventions`,
    :func:`whitespace_conventions`)."""
    return ascii_conventions(item) + whitespace_conventions(item)


# What a query must not say: a complexity or speed promise, or the algorithm's steps in order.
RECITALS = {
    "complexity": re.compile(r"\bO\("),
    "efficiency": re.compile(r"\befficient(ly)?\b", re.IGNORECASE),
    "speed": re.compile(r"\b(fast|faster|quickly)\b", re.IGNORECASE),
    "first ..., then ...": re.compile(r"\bfirst\b[^.;]*,\s*then\b", re.IGNORECASE),
    "numbered steps": re.compile(
        r"(?:^|[:;,.]\s*)(?:\(1\)|1[.)])\s+\w.*?(?:\(2\)|\b2[.)])\s+\w|\bstep [1-9]\b",
        re.IGNORECASE,
    ),
}


def recital_kinds(query: str) -> list[str]:
    """The kinds of :data:`RECITALS` in ``query``."""
    return [kind for kind, pattern in RECITALS.items() if pattern.search(query)]


def recitals(item: BenchmarkItem) -> list[str]:
    """No promise of performance and no algorithm step by step: no test observes either (a
    speed promise a test observes within the suite's time limit is a reviewer's call)."""
    return [f"the query has {kind}" for kind in recital_kinds(item.query)]


# --- the code ---------------------------------------------------------------------------------


def codes(item: BenchmarkItem) -> list[tuple[str, str]]:
    """``(label, code)`` of the canonical and each alternative."""
    return [("canonical", item.canonical)] + [
        (f"alternatives[{i}]", c) for i, c in enumerate(item.alternatives)
    ]


def plain_code(item: BenchmarkItem) -> list[str]:
    """No docstring, comment or ``assert`` in the canonical or an alternative: a docstring
    leaks the query into the snippet and into every mutant alike (what counts is the item's
    language's :meth:`~..languages.Language.leaks`)."""
    return [f"{label}: {leak}" for label, code in codes(item) for leak in item.lang.leaks(code)]


def typed_entry_point(item: BenchmarkItem) -> list[str]:
    """The entry point's parameters and return are annotated in the equivalence grammar (what
    the differential evidence draws inputs from), the same in every alternative."""
    failures = []
    expected = None
    for label, code in codes(item):
        node = entry_point_def(code, item.entry_point)
        params = entry_annotations(code, item.entry_point)
        returns = ast.unparse(node.returns) if node is not None and node.returns else ""
        if params is None or not supported(returns):
            failures.append(
                f"{label}: entry point not fully annotated (parameters and return) with types "
                "of the equivalence grammar"
            )
            continue
        if expected is None:
            expected = (params, returns)
        elif (params[: len(expected[0])], returns) != expected:
            failures.append(f"{label}: annotations differ from the canonical's")
    return failures


UNICODE_DIGIT_METHODS = {"isdigit", "isdecimal", "isnumeric"}
ASCII_GUARDS = ("isascii", "re.ASCII", "re.A", "(?a")
# An ASCII guard before int()/float(): the above, a regex class or membership of the digits.
TEXT_ASCII_GUARDS = (*ASCII_GUARDS, "[0-9", "0123456789", "string.digits", "[01]")


def uses_unicode_digits(code: str) -> bool:
    """``str.isdigit``/``isdecimal``/``isnumeric`` or a regex ``\\d`` anywhere in ``code``."""
    for node in ast.walk(_tree(code)):
        if isinstance(node, ast.Attribute) and node.attr in UNICODE_DIGIT_METHODS:
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\\d" in node.value:
            return True
    return False


def ascii_digits(item: BenchmarkItem) -> list[str]:
    """Code using ``isdigit``/``isdecimal``/``isnumeric``/``\\d`` (which accept non-ASCII
    digits) has an ASCII guard, and a test feeds non-ASCII digits."""
    users = [(label, code) for label, code in codes(item) if uses_unicode_digits(code)]
    if not users:
        return []
    failures = []
    if not any(feeds_non_ascii_digits(t) for t in item.tests):
        failures.append("uses isdigit/isdecimal/isnumeric/\\d but no test feeds non-ASCII digits")
    for label, code in users:
        if not any(guard in code for guard in ASCII_GUARDS):
            failures.append(
                f"{label}: isdigit/isdecimal/isnumeric/\\d without an ASCII guard (isascii(), "
                "re.ASCII or (?a))"
            )
    return failures


def text_parses(code: str, entry_point: str) -> list[str]:
    """The ``int()``/``float()`` calls that parse text in ``code``: a call whose first argument
    is not a constant, in code whose entry point takes a ``str`` parameter (``int(n / 2)`` there
    counts too: the rule errs towards asking for a guard)."""
    params = entry_annotations(code, entry_point) or []
    if not any(re.search(r"\bstr\b", p) for p in params):
        return []
    return [
        ast.unparse(n)
        for n in ast.walk(_tree(code))
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id in ("int", "float")
        and n.args
        and not isinstance(n.args[0], ast.Constant)
    ]


def text_parse(item: BenchmarkItem) -> list[str]:
    """``int()`` and ``float()`` accept every Unicode decimal digit (``int("١٢") == 12``): a
    canonical parsing text with them (:func:`text_parses`) has a query that says ASCII, and an
    ASCII guard (:data:`TEXT_ASCII_GUARDS`) or a test that feeds non-ASCII digits."""
    parses = text_parses(item.canonical, item.entry_point)
    if not parses:
        return []
    failures = []
    if not says_ascii(item.query):
        failures.append(f"the canonical parses text ({parses[0]}) and the query does not say ASCII")
    guarded = any(guard in item.canonical for guard in TEXT_ASCII_GUARDS)
    if not guarded and not any(feeds_non_ascii_digits(t) for t in item.tests):
        failures.append(
            f"the canonical parses text ({parses[0]}) with no ASCII guard and no test feeds "
            "non-ASCII digits"
        )
    return failures


# --- the table ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One per-item check: ``run(item)`` gives its messages; ``python_only``: it reads Python
    code (a JavaScript item's types and parses are its Python twin's)."""

    name: str
    severity: str
    run: Callable[[BenchmarkItem], list[str]]
    python_only: bool = False


ITEM_CHECKS: tuple[Check, ...] = (
    Check("test-count", WARNING, tests_per_item),
    Check("float-equality", ERROR, float_equality),
    Check("unnamed-exception", ERROR, unnamed_exceptions),
    Check("untested-exception", WARNING, untested_exceptions),
    Check("query-names-entry-point", WARNING, query_names_entry_point),
    Check("unstated-convention", WARNING, unstated_conventions),
    Check("recital", WARNING, recitals),
    Check("plain-code", WARNING, plain_code),
    Check("typed-entry-point", WARNING, typed_entry_point, python_only=True),
    Check("ascii-digits", WARNING, ascii_digits, python_only=True),
    Check("text-parse", WARNING, text_parse, python_only=True),
)
# The checks of a pool as a whole (its files, its corpus), and the order of one item's findings.
POOL_CHECKS = (
    "foreign-file",
    "duplicate-entry-point",
    "corpus",
    "distractors",
    "alternative-evidence",
)
CHECKS = ("malformed", *(c.name for c in ITEM_CHECKS), *POOL_CHECKS)
CHECK_ORDER = {name: i for i, name in enumerate(CHECKS)}


def lint_items(items: Sequence[BenchmarkItem], prefix: str = "") -> list[Finding]:
    """The findings of :data:`ITEM_CHECKS` on ``items`` (ids prefixed with ``prefix``), and of
    entry-point names shared within them. A check that fails on an item (it never should: the
    item was loaded through its gates) is that item's error, not a crash."""
    findings = []
    for item in items:
        for check in ITEM_CHECKS:
            if check.python_only and not item.lang.python_syntax:
                continue
            try:
                messages = check.run(item)
            except Exception as exc:  # untrusted input: report it, never crash
                findings.append(
                    Finding(
                        prefix + item.id,
                        check.name,
                        ERROR,
                        f"the check failed: {type(exc).__name__}: {exc}",
                    )
                )
                continue
            findings += [Finding(prefix + item.id, check.name, check.severity, m) for m in messages]
    owners: dict[str, list[str]] = {}
    for item in items:
        owners.setdefault(item.entry_point, []).append(item.id)
    for ids in owners.values():
        for iid in ids if len(ids) > 1 else ():
            others = ", ".join(prefix + other for other in ids if other != iid)
            findings.append(
                Finding(
                    prefix + iid,
                    "duplicate-entry-point",
                    WARNING,
                    f"shares its entry point's name with {others}: the verification's "
                    "name-collision gate runs each on the other's tests",
                )
            )
    return findings


# --- the corpus ---------------------------------------------------------------------------------


def distractor_counts(corpus: Corpus) -> Counter[str]:
    """Per item id, the distractors (mutants and real bugs) the pool holds for it."""
    return Counter(s.query_id for s in corpus.snippets if s.kind in DISTRACTOR_KINDS)


def short_of_distractors(
    item_ids: Iterable[str], counts: Counter[str], minimum: int = MIN_DISTRACTORS
) -> dict[str, int]:
    """The items of ``item_ids`` with fewer than ``minimum`` distractors, and their count."""
    return {iid: counts[iid] for iid in item_ids if counts[iid] < minimum}


def missing_evidence(item: BenchmarkItem, alternatives: Corpus) -> list[str]:
    """The alternatives of ``item`` without differential evidence in ``alternatives.jsonl``."""
    rows = {s.snippet_id: s for s in alternatives.alternatives}
    return [
        f"alternatives[{i}]: no differential evidence recorded in {ALTERNATIVES} (run "
        "`execretrieval build`)"
        for i, code in enumerate(item.alternatives)
        if sha256(code) not in rows or not rows[sha256(code)].equivalence
    ]


def corpus_findings(
    items_dir: Path, items: Sequence[BenchmarkItem], bad: set[str], prefix: str = ""
) -> list[Finding]:
    """The pool's committed corpus against its items: missing (a warning: nothing else can be
    read of it), stale or unreadable (an error: a benchmark refuses it); fresh, each item's
    distractors (:data:`MIN_DISTRACTORS`) and each typed alternative's recorded evidence.
    ``bad``: the ids of malformed item files (their own error, not the corpus's)."""
    from .build import BuildError, engine  # what generated a corpus: versions, no execution

    where = str(items_dir)
    if not (items_dir / MANIFEST).exists():
        return [
            Finding(
                where,
                "corpus",
                WARNING,
                f"no corpus built: run `{build_command(items_dir, DEFAULT_VARIANT)}` "
                "(distractors and evidence not checked)",
            )
        ]
    try:
        now = engine(DEFAULT_VARIANT, {item.language for item in items})
    except BuildError as exc:
        return [Finding(where, "corpus", ERROR, str(exc))]
    stale = [r for r in stale_reasons(items_dir, now) if r.item_id not in bad]
    if stale:
        return [
            Finding(
                prefix + r.item_id if r.item_id else where,
                "corpus",
                ERROR,
                f"stale: {r.message}; run `{build_command(items_dir, DEFAULT_VARIANT)}`",
            )
            for r in stale
        ]
    try:
        corpus = read_corpus(items_dir)
    except (CorpusError, OSError, ValueError) as exc:
        return [Finding(where, "corpus", ERROR, f"unreadable: {exc}")]
    findings = [
        Finding(
            prefix + iid,
            "distractors",
            WARNING,
            f"{n} distractor(s) in the corpus, fewer than the {MIN_DISTRACTORS} an item "
            "needs: strengthen its tests so more mutants are killed",
        )
        for iid, n in short_of_distractors([i.id for i in items], distractor_counts(corpus)).items()
    ]
    for item in items:
        if item.alternatives and item.lang.python_syntax and not typed_entry_point(item):
            findings += [
                Finding(prefix + item.id, "alternative-evidence", WARNING, m)
                for m in missing_evidence(item, corpus)
            ]
    return findings


# --- a directory ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LintResult:
    """What :func:`lint` found, and how many item files it read."""

    findings: tuple[Finding, ...]
    items: int

    @property
    def errors(self) -> int:
        return sum(f.severity == ERROR for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.severity == WARNING for f in self.findings)

    def status(self, strict: bool = False) -> int:
        """0 without errors (warnings too under ``strict``), else 1."""
        return int(bool(self.errors or (strict and self.warnings)))

    def summary(self, strict: bool = False) -> str:
        verdict = "fails" if self.status(strict) else "passes"
        mode = " (--strict: warnings fail too)" if strict else ""
        return (
            f"lint {verdict}{mode}: {self.errors} error(s), {self.warnings} warning(s) in "
            f"{self.items} item file(s)"
        )


def lint_pool(items_dir: Path, prefix: str = "") -> tuple[list[Finding], int]:
    """The findings of one language pool (its item files, then its corpus as a whole) and the
    number of its item files."""
    items, problems = load_items(items_dir)
    bad = {item_id(p.path) for p in problems}
    findings = [
        Finding(prefix + item_id(p.path), "malformed", ERROR, f"{p.field}: {p.reason}")
        for p in problems
    ]
    findings += lint_items(items, prefix)
    if items or bad:  # a directory holding only another language's pool has no corpus of its own
        findings += corpus_findings(items_dir, items, bad, prefix)
    where = str(items_dir)
    findings.sort(
        key=lambda f: (f.item_id == where, f.item_id, CHECK_ORDER.get(f.check, len(CHECKS)))
    )
    return findings, len(items) + len(bad)


def lint(items_dir: Path) -> LintResult:
    """Every finding of an items directory: any file in it pytest or Python would import,
    then each language pool's (its own, then a ``javascript/`` pool beside it), each item's
    sorted by item id and check."""
    items_dir = Path(items_dir)
    findings = [
        Finding(
            str(path),
            "foreign-file",
            ERROR,
            "an items directory holds item files and the generated corpus only: pytest or "
            "Python could import or read this file",
        )
        for path in foreign_files(items_dir)
    ]
    total = 0
    for pool in language_pools(items_dir):
        found, n = lint_pool(pool.items_dir, pool.prefix)
        findings += found
        total += n
    return LintResult(tuple(findings), total)
