"""Benchmark item files: loading, the schema gate, the AST gate and the test grammar.

One TOML file per item, ``<items dir>/<domain>/<stem>.toml``; the item id is ``<domain>/<stem>``.
Every problem is an :class:`ItemProblem` naming the file, the field and the reason; loading a
directory reports all bad files in one pass instead of stopping at the first. Each test must be
a statement of the closed test grammar (:mod:`pytest_execretrieval.execution._grammar`) calling
the entry point; ``setup`` may only import standard-library modules, and never the entry point's
name: only the snippet may define that. The code gates dispatch on the item's ``language``:
each language's (:meth:`..languages.Language.code_problems`; JavaScript allows no ``setup``).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..bounds import BoundError, field_problems, name_problems, read_item_text
from ..execution import _grammar
from ..execution.contexts import ContextError, context_setup, prepare
from ..languages import DEFAULT, Language, UnknownLanguage, language
from ..sanitize import escape, has_unsafe, one_line

REQUIRED = {"domain": str, "query": str, "entry_point": str, "canonical": str, "tests": list}
OPTIONAL = {
    "setup": str,
    "alternatives": list,
    "language": str,
    "source": dict,
    "real_bug": str,  # a mined item's pre-fix version (docs/real-bugs.md); needs source.commit
    "context": dict,  # the package the function lives in (docs/mining.md#repository-context)
}
CONTEXT_REQUIRED = {"package": str, "sha256": str, "module": str}
CONTEXT_OPTIONAL = {"class": str}
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_PACKAGE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*(/[A-Za-z0-9_][A-Za-z0-9_.+-]*)*")
# The optional ``[source]`` table of a mined item (docs/mining.md): where its code came from.
# Required of a mined function (and of a real bug from history); a real bug from a dataset
# needs only the dataset's name and version (``distribution``, ``version``), a hand-written one
# nothing but its origin (:data:`SOURCE_REQUIRED_BY_ORIGIN`).
SOURCE_REQUIRED = {
    "distribution": str,
    "version": str,
    "file": str,
    "line": int,
    "sha256": str,
    "license": str,
    "url": str,
}
SOURCE_OPTIONAL = {
    "tests": list,
    # A real bug's fix (``execretrieval mine REPO --history``): the fixing commit, its parent, the
    # author date and subject line, the files it changed, the test functions it added, and the
    # TSSB-3M pattern of the bug.
    "commit": str,
    "parent": str,
    "subject": str,
    "author_date": str,
    "files": list,
    "fixing_tests": list,
    "pattern": str,
    # Where a ``real_bug`` came from (:data:`ORIGINS`); history's bugs also name the repository
    # they were mined from (the name it is mined as; ``url`` is its address).
    "origin": str,
    "repository": str,
    # What made history's commit a fix (:data:`ADMISSIONS`: its subject names one, a test it
    # added or changed fails on the pre-fix version) and how many statements it changed.
    "admitted": list,
    "statements": int,
    # Every place the same code was mined from, ``FILE:LINE`` (the first is ``file``/``line``),
    # where two modules define it identically: one item (docs/mining.md).
    "locations": list,
    # How the build chooses the item's distractors: ``wrong-value-first`` (written by the
    # miner since issue 55) takes mutants a test saw return a wrong value before mutants that
    # only crashed; ``wrong-value-only`` (``mine --context``) never takes one that only
    # crashed; without it, the selection of :mod:`..mutation.select` as it is.
    "distractors": str,
}
WRONG_VALUE_FIRST = "wrong-value-first"
WRONG_VALUE_ONLY = "wrong-value-only"  # mined in a repository context: no crash-only distractor
SOURCE_TYPES = {**SOURCE_REQUIRED, **SOURCE_OPTIONAL}
HISTORY, DATASET, HAND = "history", "dataset", "hand"
SUBJECT, TEST = "subject", "test"
ADMISSIONS = (SUBJECT, TEST)
ORIGINS = (HISTORY, DATASET, HAND)
SOURCE_CHOICES = {"distractors": (WRONG_VALUE_FIRST, WRONG_VALUE_ONLY), "origin": ORIGINS}
SOURCE_REQUIRED_BY_ORIGIN: dict[str, tuple[str, ...]] = {
    HISTORY: tuple(SOURCE_REQUIRED),  # and the fix's commit and parent: real_bug_problems
    DATASET: ("distribution", "version"),
    HAND: (),
}
_SOURCE_LISTS = ("tests", "files", "fixing_tests", "locations", "admitted")
DOMAINS = (
    "strings",
    "parsing_validation",
    "date_time",
    "bit_manipulation",
    "arrays_lists",
    "sorting_searching",
    "data_structures",
    "math_number_theory",
    "graphs_trees",
    "dynamic_programming",
)


@dataclass(frozen=True)
class ItemSource:
    """An item's provenance (its ``[source]`` table); ``tests`` names where each test came
    from (``doctest FILE:LINE``, ``test FILE:LINE``, ``recorded``), in the item's test order."""

    distribution: str = ""
    version: str = ""
    file: str = ""
    line: int = 0
    sha256: str = ""
    license: str = ""
    url: str = ""
    tests: tuple[str, ...] = ()
    commit: str = ""
    parent: str = ""
    subject: str = ""
    author_date: str = ""
    files: tuple[str, ...] = ()
    fixing_tests: tuple[str, ...] = ()
    pattern: str = ""
    origin: str = ""
    repository: str = ""
    admitted: tuple[str, ...] = ()
    statements: int = 0
    locations: tuple[str, ...] = ()
    distractors: str = ""

    @classmethod
    def from_table(cls, table: dict | None) -> ItemSource | None:
        """The record of a checked ``[source]`` table (or its JSON form), None without one."""
        if table is None:
            return None
        lists = {key: tuple(table.get(key, ())) for key in _SOURCE_LISTS}
        return cls(**{**table, **lists})


@dataclass(frozen=True)
class ItemContext:
    """Where an item's function lives (its ``[context]`` table): a zip archive (a wheel, or the
    context archive ``mine --context`` writes) at ``package``, relative to the items directory
    that holds the item's domain folder, pinned by its ``sha256``; the ``module`` the function
    is defined in and, for a method, its ``class`` (dotted, in the module)."""

    package: str
    sha256: str
    module: str
    owner: str = ""  # the ``class`` key

    @classmethod
    def from_table(cls, table: dict | None) -> ItemContext | None:
        if table is None:
            return None
        return cls(table["package"], table["sha256"], table["module"], table.get("class", ""))

    def to_table(self) -> dict[str, str]:
        table = {"package": self.package, "sha256": self.sha256, "module": self.module}
        return {**table, "class": self.owner} if self.owner else table

    @property
    def setup(self) -> str:
        """The setup of the item's suites: the context directive the sandbox's child reads."""
        return context_setup(self.sha256, self.module, self.owner)


@dataclass(frozen=True)
class BenchmarkItem:
    id: str
    path: Path
    domain: str
    query: str
    entry_point: str
    canonical: str
    tests: tuple[str, ...]
    setup: str = ""
    alternatives: tuple[str, ...] = ()
    language: str = DEFAULT  # a name in languages.LANGUAGES: its parser, operators and runner
    source: ItemSource | None = None  # where a mined item's code and tests came from
    real_bug: str = ""  # the pre-fix version of a fix mined from history ("" for none)
    context: ItemContext | None = None  # the package the function lives in; ``setup`` names it

    @property
    def lang(self) -> Language:
        """The implementation of the item's language (checked when the item was loaded)."""
        return language(self.language)


@dataclass(frozen=True)
class ItemProblem:
    path: Path
    field: str
    reason: str

    def __str__(self) -> str:  # a file name and a reason may quote control characters
        return f"{one_line(str(self.path))}: {self.field}: {escape(self.reason)}"


class ItemError(Exception):
    """One or more problems in item files; ``str()`` lists them all, one per line."""

    def __init__(self, problems: list[ItemProblem]):
        self.problems = problems
        super().__init__("\n".join(map(str, problems)))


def bundled_items_dir() -> Path:
    """The bundled benchmark: the repository's items/ in a checkout, the wheel's copy otherwise."""
    package = Path(__file__).resolve().parents[1]
    checkout = package.parent / "items"
    return checkout if checkout.is_dir() else package / "bundled_items"


def item_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def item_paths(root: Path) -> list[Path]:
    """Every item file under ``root``, sorted by item id."""
    return sorted(Path(root).glob("*/*.toml"), key=item_id)


def load_item(path: Path) -> BenchmarkItem:
    """Parse and check one item file; raises :class:`ItemError` with every problem found."""
    path = Path(path)
    problems: list[ItemProblem] = []

    def problem(field: str, reason: str) -> None:
        problems.append(ItemProblem(path, field, reason))

    for field, reason in name_problems(path):
        problem(field, reason)
    try:  # bounded first (bounds.py): tomllib recurses
        data = tomllib.loads(read_item_text(path))
    except BoundError as exc:
        raise ItemError([*problems, ItemProblem(path, "<file>", str(exc))]) from None
    except (OSError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ItemError(
            [*problems, ItemProblem(path, "<file>", f"not valid TOML: {exc}")]
        ) from None

    for key in sorted(set(data) - set(REQUIRED) - set(OPTIONAL)):
        problem(key, "unknown key (allowed: " + ", ".join([*REQUIRED, *OPTIONAL]) + ")")
    for key, kind in {**REQUIRED, **OPTIONAL}.items():
        if key not in data:
            if key in REQUIRED:
                problem(key, "missing required field")
        elif not isinstance(data[key], kind):
            problem(key, f"must be a {kind.__name__}, got {type(data[key]).__name__}")
    for key in ("tests", "alternatives"):
        values = data.get(key)
        if isinstance(values, list):
            for i, value in enumerate(values):
                if not isinstance(value, str):
                    problem(f"{key}[{i}]", f"must be a string, got {type(value).__name__}")
    for field, reason in field_problems(data):  # sizes and control characters, before parsing
        problem(field, reason)
    if isinstance(data.get("source"), dict):
        for field, reason in source_problems(data["source"], data.get("tests")):
            problem(field, reason)
    for field, reason in real_bug_problems(data):
        problem(field, reason)
    if isinstance(data.get("context"), dict):
        for field, reason in context_problems(data["context"], data):
            problem(field, reason)
    if problems:
        raise ItemError(problems)

    lang = data.get("language", DEFAULT)
    problems += language_problems(path, lang)
    if data["domain"] != path.parent.name:
        problem("domain", f"is {data['domain']!r} but the file lies in folder {path.parent.name!r}")
    entry_point = data["entry_point"]
    if not entry_point.isidentifier():
        problem("entry_point", f"{entry_point!r} is not a Python identifier")
    elif entry_point in _grammar.RESERVED:
        problem(
            "entry_point",
            f"{entry_point!r} is a name the test grammar gives a meaning of its "
            "own (" + ", ".join(sorted(_grammar.RESERVED)) + ")",
        )
    if not data["query"].strip():
        problem("query", "is empty")
    if not data["tests"]:
        problem("tests", "needs at least one test")

    real_bug = [("real_bug", data["real_bug"])] if "real_bug" in data else []
    for field, code in [("canonical", data["canonical"]), *real_bug] + [
        (f"alternatives[{i}]", code) for i, code in enumerate(data.get("alternatives", []))
    ]:
        for reason in code_problems(code, entry_point, lang, "context" not in data):
            problem(field, reason)
    for reason in setup_problems(data.get("setup", ""), entry_point, lang):
        problem("setup", reason)
    context = ItemContext.from_table(data.get("context"))
    if context is not None:
        try:
            prepared(path, context)
        except ContextError as exc:
            problem("context.package", str(exc))
    for i, test in enumerate(data["tests"]):
        bad = grammar_problem(test, entry_point, lang)
        if bad:
            problem(f"tests[{i}]", bad)
    if problems:
        raise ItemError(problems)

    return BenchmarkItem(
        id=item_id(path),
        path=path,
        domain=data["domain"],
        query=data["query"].strip(),
        entry_point=entry_point,
        canonical=data["canonical"],
        tests=tuple(data["tests"]),
        setup=context.setup if context else data.get("setup", ""),
        alternatives=tuple(data.get("alternatives", ())),
        language=data.get("language", DEFAULT),
        source=ItemSource.from_table(data.get("source")),
        real_bug=data.get("real_bug", ""),
        context=context,
    )


def prepared(path: Path, context: ItemContext) -> Path:
    """The context of the item file at ``path`` prepared for the sandbox
    (:func:`..execution.contexts.prepare`); raises ContextError."""
    return prepare(path.parent.parent / context.package, context.sha256)


def load_items(root: Path, cache=None) -> tuple[list[BenchmarkItem], list[ItemProblem]]:
    """Load every item under ``root``: the good items and the problems of the bad files.
    ``cache`` (an :class:`.item_cache.ItemCache`) answers for files it validated before."""
    items: list[BenchmarkItem] = []
    problems: list[ItemProblem] = []
    for path in item_paths(root):
        known = cache.get(path) if cache is not None else None
        if known is not None:
            items.append(known)
            continue
        try:
            items.append(load_item(path))
            if cache is not None:
                cache.put(path, items[-1])
        except ItemError as exc:
            problems.extend(exc.problems)
        except Exception as exc:  # any failure on one file is that file's problem, no more
            problems.append(
                ItemProblem(path, "<file>", f"cannot be loaded: {type(exc).__name__}: {exc}")
            )
    return items, problems


def table_problems(
    name: str, table: dict, required: Mapping[str, type], optional: Mapping[str, type]
) -> list[tuple[str, str]]:
    """``(field, reason)`` for the keys of the ``[name]`` table: unknown keys, missing required
    ones, a value of the wrong type (a bool is no int)."""
    found = []
    allowed = {**required, **optional}
    for key in sorted(set(table) - set(allowed)):
        found.append((f"{name}.{key}", "unknown key (allowed: " + ", ".join(allowed) + ")"))
    for key, kind in allowed.items():
        if key not in table:
            if key in required:
                found.append((f"{name}.{key}", "missing required field"))
        elif not isinstance(table[key], kind) or isinstance(table[key], bool):
            found.append(
                (f"{name}.{key}", f"must be a {kind.__name__}, got {type(table[key]).__name__}")
            )
    return found


def source_problems(table: dict, tests: object) -> list[tuple[str, str]]:
    """``(field, reason)`` for a ``[source]`` table: unknown or missing keys, a wrong type,
    a ``tests`` list that is not one string per test of the item."""
    origin = table.get("origin")
    required = (
        {k: SOURCE_TYPES[k] for k in SOURCE_REQUIRED_BY_ORIGIN[origin]}
        if origin in SOURCE_REQUIRED_BY_ORIGIN
        else SOURCE_REQUIRED
    )
    optional = {k: v for k, v in SOURCE_TYPES.items() if k not in required}
    found = table_problems("source", table, required, optional)
    for key, choices in SOURCE_CHOICES.items():
        if isinstance(table.get(key), str) and table[key] not in choices:
            found.append((f"source.{key}", "must be one of " + ", ".join(choices)))
    for key in _SOURCE_LISTS:
        values = table.get(key)
        if isinstance(values, list) and any(
            not isinstance(v, str) or has_unsafe(v) for v in values
        ):
            found.append((f"source.{key}", "must hold strings without control characters"))
    admitted = table.get("admitted")
    if isinstance(admitted, list) and not set(map(str, admitted)) <= set(ADMISSIONS):
        found.append(("source.admitted", "must hold only " + ", ".join(ADMISSIONS)))
    provenance = table.get("tests")
    if isinstance(provenance, list) and all(isinstance(p, str) for p in provenance):
        if isinstance(tests, list) and len(provenance) != len(tests):
            found.append(
                (
                    "source.tests",
                    f"names {len(provenance)} provenances for {len(tests)} tests: one per test",
                )
            )
    return found


def context_problems(table: dict, data: dict) -> list[tuple[str, str]]:
    """``(field, reason)`` for a ``[context]`` table: its keys and their forms (a relative
    ``package`` path without ``..``, a sha256, dotted names); a context item has no
    ``setup`` and is Python."""
    found = table_problems("context", table, CONTEXT_REQUIRED, CONTEXT_OPTIONAL)
    forms = {
        "package": (_PACKAGE, "a relative path in the items directory (no '..')"),
        "sha256": (re.compile("[0-9a-f]{64}"), "64 lower-case hex digits"),
        "module": (_DOTTED, "a dotted module name"),
        "class": (_DOTTED, "a dotted class name"),
    }
    for key, (form, what) in forms.items():
        value = table.get(key)
        if isinstance(value, str) and (not form.fullmatch(value) or ".." in value.split("/")):
            found.append((f"context.{key}", f"must be {what}"))
    if data.get("setup"):
        found.append(("setup", "a context item has no setup (its module is imported)"))
    gates = _known(data.get("language", DEFAULT))
    if gates and not gates.packages:
        found.append(("context", "a context is a Python package: Python items only"))
    return found


def real_bug_problems(data: dict) -> list[tuple[str, str]]:
    """A ``real_bug`` needs its origin (``source.origin``; a table with the fix's commit and
    parent and no origin is from history, as mined before origins) and must differ from the
    canonical; ``source.origin`` describes a real bug, so an item without one has none."""
    source = data.get("source")
    source = source if isinstance(source, dict) else {}
    origin = source.get("origin")
    if "real_bug" not in data:
        unused = [("source.origin", "says where a real_bug came from: the item has none")]
        return unused if origin else []
    if origin is None and source.get("commit"):
        origin = HISTORY
    if origin is None:
        return [("real_bug", "needs [source] origin = " + " | ".join(map(repr, ORIGINS)))]
    if origin == HISTORY and not (source.get("commit") and source.get("parent")):
        return [("real_bug", "from history needs the fix's source.commit and source.parent")]
    if data["real_bug"] == data.get("canonical"):
        return [("real_bug", "is the canonical itself")]
    return []


def language_problems(path: Path, name: str) -> list[ItemProblem]:
    """Gate for ``language``: a name in :data:`..languages.LANGUAGES`."""
    try:
        language(name)
    except UnknownLanguage as exc:
        return [ItemProblem(path, "language", str(exc))]
    return []


def code_problems(
    code: str, entry_point: str | None, lang: str = DEFAULT, stdlib_only: bool = True
) -> list[str]:
    """Gate for code in the language ``lang`` (:meth:`..languages.Language.code_problems`;
    none for an unknown language, a problem of its own)."""
    gates = _known(lang)
    return gates.code_problems(code, entry_point, stdlib_only) if gates else []


def setup_problems(setup: str, entry_point: str, lang: str = DEFAULT) -> list[str]:
    """Gate for ``setup`` in the language ``lang`` (its ``setup_problems``)."""
    gates = _known(lang)
    return gates.setup_problems(setup, entry_point) if gates else []


def _known(lang: object) -> Language | None:
    """The language ``lang`` names; None for an unknown one (its own item problem)."""
    try:
        return language(str(lang))
    except UnknownLanguage:
        return None


def grammar_problem(test: str, entry_point: str, lang: str = DEFAULT) -> str | None:
    """Gate for one test: a statement of the test grammar that calls ``entry_point``, whose
    literals compute (within the grammar's bounds); ``raises`` names an error class of the
    item's language ``lang``."""
    try:
        parsed = _grammar.parse_test(test, exceptions=_exceptions(lang))
        _grammar.check_test(parsed)
    except SyntaxError as exc:
        return f"does not parse: {exc.msg}"
    except _grammar.GrammarError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - a literal that fails as Python would fail it
        return f"a literal of the test raises {type(exc).__name__}: {exc}"[:300]
    if parsed.call.function != entry_point:
        return (
            f"calls {parsed.call.function!r}, not the entry point {entry_point!r}: a test "
            "calls the entry point"
        )
    return None


def _exceptions(lang: str) -> frozenset[str]:
    gates = _known(lang)  # an unknown language is already an item problem of its own
    return gates.exceptions if gates else _grammar.EXCEPTIONS
