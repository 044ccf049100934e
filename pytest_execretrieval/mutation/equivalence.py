"""Differential evidence against the canonical (recorded, not a gate).

For an entry point whose parameters are all annotated with types of the grammar below,
hypothesis draws inputs (derandomized: the same inputs on every machine), and the sandbox calls
the canonical and each candidate on them, each in a suite of its own (so no candidate shares a
process, a module or a name with the reference), returning the decoded plain values (probe
tests, :attr:`..execution.sandbox.SuiteResult.values`); they are compared here, on the host
(floats with ``math.isclose``, recursively inside containers, exact types otherwise), or the
exception types raised. A distractor or
surviving mutant that differs on some input is *shown* not equivalent by more than its tests; an
alternative that agrees on every input gains evidence of equivalence beyond its tests.

Domain rule: an input on which the canonical raises an exception whose type name the query does
not name (as a word: "raises ValueError when ...") is outside the function's domain. It is
skipped, never counted as agreement or difference, and counted in ``out_of_domain``. An
exception the query names is behaviour, so a candidate must raise the same type there. A value
of a type the sandbox's codec does not carry counts as raising ``UnsupportedValue``; an input on
which the canonical gave nothing (its suite timed out there, or it raised an exception that is
not an ``Exception``) counts as differing for every candidate, as does a candidate that gave
nothing.

Annotation grammar (parsed with :mod:`ast`, never evaluated; a string annotation such as
``"date"`` is parsed the same way as the bare one)::

    T := int | float | bool | str | bytes | None | Fraction | date | datetime | time | timedelta
       | list[T] | set[T] | frozenset[T] | dict[T, T] | tuple[T, ...] | tuple[T, T, ...]
       | T | T                     (a union, e.g. ``int | None``)
       | BinaryTree | NaryTree | SearchTree | Callable[[int], bool] | Callable[[int], int]

``date`` and friends may also be written ``datetime.date`` etc. The last line names shapes
Python's typing cannot write inline (they are written as string annotations, e.g.
``tree: "BinaryTree | None"``): ``BinaryTree`` is a nested tuple ``(value, left, right)`` with
``left``/``right`` a ``BinaryTree`` or None; ``NaryTree`` is ``(value, [children])``;
``SearchTree`` is a ``BinaryTree`` ordered as a binary search tree (distinct values, built by
inserting them in drawn order); ``Callable[[int], bool]`` draws monotone predicates
``x >= t`` (:class:`AtLeast`) and ``Callable[[int], int]`` unimodal functions
``-(x - c) ** 2`` (:class:`Peak`).

Drawn values stay small so a suite stays fast: ints in ``INT_RANGE`` (also tree values, ``t``
and ``c``), floats in ``FLOAT_RANGE`` rounded to 2 places (no NaN or infinity), fractions in
``INT_RANGE`` with denominators up to ``MAX_DENOMINATOR``, strings of at most ``MAX_TEXT``
characters from ``ALPHABET``, bytes of at most ``MAX_TEXT`` bytes, containers and trees of at
most ``MAX_SIZE`` elements or leaves, dates in ``DATE_RANGE``, times on whole seconds,
timedeltas of whole seconds within ``TIMEDELTA_DAYS`` days.
"""

# No `from __future__ import annotations`: the function `annotations` below would shadow the
# future feature's name for a type checker.
import ast
import contextlib
import datetime as dt
import functools
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..execution.runner import SuiteRunner

# Bump when the grammar, the draws or the comparison change: recorded evidence then goes stale.
EVIDENCE_VERSION = "3"
N_INPUTS = 50
INT_RANGE = (-10, 10)
FLOAT_RANGE = (-10.0, 10.0)
MAX_TEXT = 6
ALPHABET = "abcAB019 -_.,:/()"
MAX_SIZE = 6
MAX_DENOMINATOR = 12
DATE_RANGE = (dt.date(1990, 1, 1), dt.date(2040, 12, 31))
TIMEDELTA_DAYS = 40

SCALARS = (
    "int",
    "float",
    "bool",
    "str",
    "bytes",
    "None",
    "Fraction",
    "date",
    "datetime",
    "time",
    "timedelta",
    "BinaryTree",
    "NaryTree",
    "SearchTree",
)
CONTAINERS = ("list", "set", "frozenset", "dict", "tuple")
CALLABLES = {"Callable[[int], bool]": "AtLeast", "Callable[[int], int]": "Peak"}

# Drawn callables (the repr of a drawn argument tuple, the witness, names them); in a probe they
# are written as the equivalent lambda (:func:`argument_source`).
CALLABLES_SOURCE = """
class AtLeast:
    def __init__(self, t):
        self.t = t
    def __call__(self, x):
        return x >= self.t
    def __repr__(self):
        return f"AtLeast({self.t!r})"
    def __eq__(self, other):
        return repr(self) == repr(other)
    def __hash__(self):
        return hash(repr(self))
class Peak(AtLeast):
    def __call__(self, x):
        return -((x - self.t) ** 2)
    def __repr__(self):
        return f"Peak({self.t!r})"
"""
_drawn_callables: dict = {}
exec(CALLABLES_SOURCE, _drawn_callables)
AtLeast, Peak = _drawn_callables["AtLeast"], _drawn_callables["Peak"]


class UnsupportedAnnotation(ValueError):
    """An annotation outside the grammar of the module docstring."""


@dataclass(frozen=True)
class Evidence:
    inputs: int  # drawn inputs inside the domain (see the module docstring)
    differing: int  # of those, inputs on which the snippet and the canonical disagree
    out_of_domain: int = 0  # drawn inputs skipped: the canonical raises an unnamed exception
    witness: str | None = None  # repr of the first differing argument tuple

    def to_json(self) -> dict:
        row = {
            "inputs": self.inputs,
            "differing": self.differing,
            "out_of_domain": self.out_of_domain,
        }
        return row | ({"witness": self.witness} if self.witness is not None else {})


def parse_annotation(text: str) -> ast.expr:
    """The annotation's syntax tree, with string annotations unquoted; raises
    :class:`UnsupportedAnnotation` when ``text`` is not in the grammar."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise UnsupportedAnnotation(f"annotation {text!r} does not parse") from None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return parse_annotation(node.value)
    _check(node, text)
    return node


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    if isinstance(node, ast.Name):
        return node.id
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "datetime"
    ):
        return node.attr
    return None


def _check(node: ast.expr, text: str) -> None:
    def bad(why: str) -> UnsupportedAnnotation:
        return UnsupportedAnnotation(
            f"annotation {text!r}: {why}; supported: {', '.join(SCALARS)}"
            ", list/set/frozenset[T], dict[K, V], tuple[T, ...], "
            "tuple[A, B, ...], A | B"
        )

    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        _check(node.left, text)
        _check(node.right, text)
        return
    if isinstance(node, ast.Subscript) and _name(node.value) == "Callable":
        if ast.unparse(node) not in CALLABLES:
            raise bad(f"{ast.unparse(node)} is not one of {', '.join(CALLABLES)}")
        return
    if isinstance(node, ast.Subscript):
        outer = _name(node.value)
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if outer not in CONTAINERS:
            raise bad(f"{ast.unparse(node.value)}[...] is not a supported container")
        if outer == "tuple" and len(args) == 2 and _is_ellipsis(args[1]):
            args = args[:1]
        expected = {"list": 1, "set": 1, "frozenset": 1, "dict": 2}.get(outer)
        if expected is not None and len(args) != expected:
            raise bad(f"{outer}[...] takes {expected} type argument(s)")
        for arg in args:
            _check(arg, text)
        return
    if _name(node) not in SCALARS:
        raise bad(f"{ast.unparse(node)} is not a supported type")


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def supported(text: str) -> bool:
    """Whether the annotation ``text`` is in the grammar."""
    try:
        parse_annotation(text)
    except UnsupportedAnnotation:
        return False
    return True


def entry_point_def(code: str, entry_point: str) -> ast.FunctionDef | None:
    """The module-level ``def`` of ``entry_point`` in ``code`` (None if there is none)."""
    for node in ast.parse(code).body:
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return node
    return None


def annotations(code: str, entry_point: str) -> list[str] | None:
    """The parameter annotations of ``entry_point`` when all are in the grammar, else None
    (also for ``*args``, ``**kwargs``, keyword-only or positional-only parameters)."""
    node = entry_point_def(code, entry_point)
    if node is None:
        return None
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        return None
    found = [ast.unparse(a.annotation) if a.annotation else "" for a in args.args]
    return found if found and all(a and supported(a) for a in found) else None


def strategy(text: str):
    """The hypothesis strategy drawing values of the annotation ``text`` (see the module
    docstring for the grammar and the size bounds)."""
    return _strategy(parse_annotation(text))


def _strategy(node: ast.expr):
    from hypothesis import strategies as st

    if isinstance(node, ast.BinOp):
        return st.one_of(_strategy(node.left), _strategy(node.right))
    if isinstance(node, ast.Subscript) and _name(node.value) == "Callable":
        maker = _drawn_callables[CALLABLES[ast.unparse(node)]]
        return st.integers(*INT_RANGE).map(maker)
    if isinstance(node, ast.Subscript):
        outer = _name(node.value)
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if outer == "tuple":
            if len(args) == 2 and _is_ellipsis(args[1]):
                return st.lists(_strategy(args[0]), max_size=MAX_SIZE).map(tuple)
            return st.tuples(*(_strategy(a) for a in args))
        if outer == "dict":
            return st.dictionaries(_strategy(args[0]), _strategy(args[1]), max_size=MAX_SIZE)
        makers: dict[str | None, Callable[..., Any]] = {
            "list": st.lists,
            "set": st.sets,
            "frozenset": st.frozensets,
        }
        return makers[outer](_strategy(args[0]), max_size=MAX_SIZE)
    low, high = DATE_RANGE
    days = dt.timedelta(days=TIMEDELTA_DAYS)
    ints = st.integers(*INT_RANGE)
    draws: dict[str | None, Callable[[], Any]] = {
        "int": lambda: st.integers(*INT_RANGE),
        "float": lambda: st.floats(*FLOAT_RANGE, allow_nan=False).map(lambda x: round(x, 2)),
        "bool": st.booleans,
        "str": lambda: st.text(ALPHABET, max_size=MAX_TEXT),
        "bytes": lambda: st.binary(max_size=MAX_TEXT),
        "None": st.none,
        "Fraction": lambda: st.fractions(*INT_RANGE, max_denominator=MAX_DENOMINATOR),
        "date": lambda: st.dates(low, high),
        "datetime": lambda: st.datetimes(
            dt.datetime.combine(low, dt.time()), dt.datetime.combine(high, dt.time())
        ).map(lambda d: d.replace(microsecond=0)),
        "BinaryTree": lambda: st.recursive(
            st.tuples(ints, st.none(), st.none()),
            lambda kids: st.tuples(ints, st.none() | kids, st.none() | kids),
            max_leaves=MAX_SIZE,
        ),
        "NaryTree": lambda: st.recursive(
            st.tuples(ints, st.just([])),
            lambda kids: st.tuples(ints, st.lists(kids, min_size=1, max_size=3)),
            max_leaves=MAX_SIZE,
        ),
        "SearchTree": lambda: st.lists(ints, min_size=1, max_size=MAX_SIZE, unique=True).map(
            search_tree
        ),
        "time": lambda: st.times().map(lambda t: t.replace(microsecond=0)),
        "timedelta": lambda: st.timedeltas(-days, days).map(
            lambda d: dt.timedelta(seconds=round(d.total_seconds()))
        ),
    }
    return draws[_name(node)]()


def search_tree(values: Sequence[int]) -> tuple | None:
    """The binary search tree ``(value, left, right)`` made by inserting ``values`` in order."""

    def insert(tree: tuple | None, v: int) -> tuple:
        if tree is None:
            return (v, None, None)
        value, left, right = tree
        if v < value:
            return (value, insert(left, v), right)
        return (value, left, insert(right, v))

    tree = None
    for v in values:
        tree = insert(tree, v)
    return tree


@functools.lru_cache(maxsize=512)
def draw_inputs(types: tuple[str, ...], n: int = N_INPUTS) -> tuple[tuple, ...]:
    """``n`` distinct argument tuples for ``types``, identical on every run (derandomized
    hypothesis); fewer when the types allow fewer distinct values."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    drawn: list[tuple] = []

    @settings(
        max_examples=n * 3,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.tuples(*(strategy(t) for t in types)))
    def collect(args):
        if args not in drawn and len(drawn) < n:
            drawn.append(args)

    with _global_constants_only():
        collect()
    return tuple(drawn)


@contextlib.contextmanager
def _global_constants_only() -> Iterator[None]:
    """Hypothesis (6.13x and later) mixes into its draws the literals of every *local* module
    imported so far (``providers._get_local_constants``: files outside site-packages), so the
    same types drew other inputs in a checkout than in an installed wheel, and whenever a module
    of ours gained a constant or a test module was imported. The evidence must be a function of
    the item alone: for the draw, the local pool is empty (the global constants stay). The one
    place that adapts to a hypothesis internal; ``tests/test_equivalence.py`` pins it."""
    from hypothesis.internal.conjecture import providers

    local = getattr(providers, "_get_local_constants", None)
    if local is None:  # a hypothesis without local constants
        yield
        return
    empty = providers.Constants()
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = local
        providers.CONSTANTS_CACHE.cache.clear()


def stable_repr(value: object) -> str:
    """``repr`` with set elements sorted, so the text is the same in every process (string
    hashing, hence set order, is salted per process); evaluable given the ``datetime`` module
    and ``Fraction``."""
    if isinstance(value, (set, frozenset)):
        return f"{type(value).__name__}({stable_repr(tuple(sorted(value, key=stable_repr)))})"
    if isinstance(value, list):
        return "[" + ", ".join(stable_repr(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = [stable_repr(v) for v in value]
        return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{stable_repr(k)}: {stable_repr(v)}" for k, v in value.items()) + "}"
        )
    return repr(value)


def named_exceptions(query: str) -> frozenset[str]:
    """The words of ``query`` that can name an exception type (``ValueError``, ...)."""
    return frozenset(re.findall(r"\b[A-Z]\w*(?:Error|Exception|Exit|Iteration)\b", query))


def argument_source(value: object) -> str:
    """``value`` as a literal of the test grammar (:mod:`..execution._grammar`): its
    :func:`stable_repr`, with a drawn callable written as the lambda it stands for."""
    if isinstance(value, Peak):
        return f"lambda x: -((x - {value.t!r}) ** 2)"
    if isinstance(value, AtLeast):
        return f"lambda x: x >= {value.t!r}"
    return stable_repr(value)


def probes(entry_point: str, inputs: Sequence[tuple]) -> list[str]:
    """The probe tests calling ``entry_point`` on each argument tuple of ``inputs``."""
    return [f"{entry_point}({', '.join(map(argument_source, args))})" for args in inputs]


@dataclass(frozen=True)
class Inputs:
    """What an item's drawn inputs are typed by: its entry point's parameter annotations in
    order, or None with the reason there is no evidence."""

    types: tuple[str, ...] | None
    why: str = ""


def annotated_inputs(code: str, entry_point: str) -> Inputs:
    """Python's :class:`Inputs`: the entry point's own annotations (:func:`annotations`)."""
    found = annotations(code, entry_point)
    if found is None:
        return Inputs(None, "its entry point is not fully annotated in the grammar")
    return Inputs(tuple(found))


@dataclass(frozen=True)
class Realm:
    """How one language's probes are written, run and compared: ``probes(entry_point,
    inputs)`` the probe tests, ``outcome(value)`` a probe's value as ``("value", v)`` or
    ``("raises", name)`` (None: it gave none), ``close(a, b)`` whether two values agree;
    ``language`` the suites' language, ``grouped`` whether one item's suites share a process."""

    probes: Callable[[str, Sequence[tuple]], list[str]]
    outcome: Callable[[object], tuple | None]
    close: Callable[[object, object], bool]
    language: str = "python"
    grouped: bool = False


def evidence(
    canonical: str,
    entry_point: str,
    setup: str,
    codes: Sequence[str],
    runner: SuiteRunner,
    query: str = "",
    types: Sequence[str] | None = None,
    realm: Realm | None = None,
    group: str | None = None,
) -> list[Evidence | None]:
    """Per code in ``codes``: on how many drawn in-domain inputs it differs from the canonical
    (None for every code when there are no ``types``, by default the canonical's annotations,
    and for a code whose harness suite is unusable: a lost sandbox or a broken protocol is no
    evidence, least of all of a difference). ``realm``: the language's (default Python's);
    ``group``: the item, for a realm whose suites of one item share a process."""
    realm = realm or PYTHON_REALM
    types = annotations(canonical, entry_point) if types is None else types
    if not types or not codes:
        return [None] * len(codes)
    inputs = draw_inputs(tuple(types))
    tests = realm.probes(entry_point, inputs)
    shared = group if realm.grouped else None
    suites = [(code, setup, tests, realm.language, shared) for code in (canonical, *codes)]
    reference, *results = runner.run_many(suites)
    named = named_exceptions(query)
    if reference.unusable:
        return [None] * len(codes)
    return [
        None if r.unusable else compare(reference.values, r.values, inputs, named, realm)
        for r in results
    ]


def _outcome(value: object) -> tuple | None:
    """A probe's value as ``("value", v)`` or ``("raises", name)``, None when it gave none."""
    if not isinstance(value, tuple):
        return None
    if value[0] == "unsupported":
        return ("raises", "UnsupportedValue")
    return value if value[0] in ("value", "raises") else None


def near(a: float, b: float) -> bool:
    """Whether two floats agree: equal, or within ``math.isclose`` of each other."""
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return near(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):  # b: the same type as a
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return a == b


def compare(
    reference: Sequence[object],
    candidate: Sequence[object],
    inputs: Sequence[tuple],
    named: frozenset[str],
    realm: Realm | None = None,
) -> Evidence:
    """Evidence from the probe values of the canonical's and a candidate's suites, per input
    (the module docstring's rules, with ``realm``'s outcomes and comparison, default Python's;
    the values are plain decoded data)."""
    realm = realm or PYTHON_REALM
    differing, skipped = [], 0
    for i in range(len(inputs)):
        expected = realm.outcome(reference[i] if i < len(reference) else None)
        if expected is not None and expected[0] == "raises" and expected[1] not in named:
            skipped += 1
            continue
        got = realm.outcome(candidate[i] if i < len(candidate) else None)
        if (
            expected is None
            or got is None
            or got[0] != expected[0]
            or not realm.close(got[1], expected[1])
        ):
            differing.append(i)
    witness = stable_repr(inputs[differing[0]]) if differing else None
    return Evidence(len(inputs) - skipped, len(differing), skipped, witness)


PYTHON_REALM = Realm(probes, _outcome, _close)
