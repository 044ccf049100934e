"""The closed test grammar: an item's tests are data, interpreted by the checker.

Standard library only. Imported as ``pytest_execretrieval.execution._grammar`` on the host (the
load-time gate in ``corpus/items.py``) and as the top-level module ``_grammar`` in the sandbox's
checker, zygote and child (``python -I`` with this directory on ``sys.path``). Nothing here runs
test text: a test is parsed with :mod:`ast`, checked against the grammar below, and its literal
parts are computed by :func:`evaluate`, an interpreter of a handful of node types that looks up
no name outside its tables. The only code ever compiled from a test is a ``lambda`` argument,
and only in the sandbox's child (:func:`build_arguments`).

A test is one statement::

    test     := "assert" HOLE OP EXPECTED          OP: == != < <= > >= in, not in
              | "assert" ["not"] HOLE                 (its truth value)
              | "assert" HOLE "is" ["not"] (True | False | None)
              | "assert" "math.isclose(" HOLE "," EXPECTED [", rel_tol=" LIT] [", abs_tol=" LIT] ")"
              | "assert" ["not"] "raises(" EXC "," NAME ["," ARG]... ")"   EXC: a builtin exception
                                                                   class or a tuple of them
    HOLE     := CALL | HOLE "[" LIT "]" | HOLE "[" LIT? ":" LIT? "]" | WRAP "(" HOLE ")"
    CALL     := NAME "(" [ARG ["," ARG]...] ")"         NAME: the entry point
    WRAP     := len | sorted | sum | abs | min | max | list | tuple
    ARG      := LIT | NAME "=" LIT | LAMBDA
    EXPECTED := LIT

``LIT`` is a literal expression: constants (numbers, strings, bytes, True/False/None), lists,
tuples, sets, dicts, unary ``- + ~ not`` and binary ``+ - * / // % ** << >> & | ^`` on them, and
calls of :data:`CALLABLES` (the value codec's types and a few pure builtins: ``date(2024, 1,
1)``, ``Fraction(1, 3)``, ``float("nan")``, ``list(range(5))``, ``bytes([1, 2])``) and the
constants in :data:`CONSTANTS` (``math.inf``, ``timezone.utc``). Every intermediate value is
bounded (:data:`MAX_INT_BITS`, :data:`MAX_ELEMENTS`, :data:`MAX_SIZE`), so no literal makes the
checker or the host compute for long. A ``LAMBDA`` argument (``lambda x: x >= 3``) has
positional parameters and a body made of those parameters, literals, comparisons, ``and``/
``or``/``not``, ``x if c else y``, subscripts and calls of :data:`LAMBDA_CALLABLES`; it is the one
part a child runs as code, in its own namespace with no builtins.

The checker never calls into the snippet: the child calls ``NAME(ARG...)`` and returns the value
in the codec's encoding (or the raised exception's class names); the checker applies the
subscripts and wrappers to the decoded plain value (:func:`returned_value`) and decides
(:func:`judge`, :func:`raised_matches`). Only where a consuming wrapper (:data:`CONSUMERS`:
``list``, ``tuple``, ``sorted``, ``sum``, ``min``, ``max``) takes the call's value directly
does the child read an iterator the call returns into a list first (:func:`call_kind`), as
Python's wrapper would. A bare ``NAME(ARG...)`` expression statement is a
*probe* (:data:`PROBE`): no verdict, the library asks for the value (the differential harness);
item files never hold one.
"""

from __future__ import annotations

import ast
import builtins
import collections
import datetime as _dt
import fractions
import math
import operator
from collections.abc import Callable

TYPE_CHECKING = False  # type checkers take it as True; typing is not imported in the sandbox
if TYPE_CHECKING:
    from typing import Any

MAX_SOURCE = 10_000  # characters of one test
MAX_DEPTH = 40  # nesting of its syntax tree
MAX_NODES = 4_000  # nodes of its syntax tree
MAX_INT_BITS = 1 << 16  # bits of any int (numerator, denominator) a literal computes
MAX_ELEMENTS = 1 << 16  # length of any str, bytes or container a literal computes
MAX_SIZE = 1 << 18  # elements of one literal value, nested ones counted (aliases too)

COMPARE, TRUTH, ISCLOSE, RAISES, PROBE = "compare", "truth", "isclose", "raises", "probe"
OPERATORS: dict[type, tuple[str, Callable[[Any, Any], Any]]] = {
    ast.Eq: ("==", operator.eq),
    ast.NotEq: ("!=", operator.ne),
    ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le),
    ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge),
    ast.In: ("in", lambda a, b: a in b),
    ast.NotIn: ("not in", lambda a, b: a not in b),
    ast.Is: ("is", operator.is_),
    ast.IsNot: ("is not", operator.is_not),
}
_BY_SPELLING = {spelling: fn for spelling, fn in OPERATORS.values()}
WRAPPERS: dict[str, Callable[[Any], Any]] = {
    "len": len,
    "sorted": sorted,
    "sum": sum,
    "abs": abs,
    "min": min,
    "max": max,
    "list": list,
    "tuple": tuple,
}
# The wrappers that consume an iterable as Python's would: a call inside one of them (the
# innermost step) may return an iterator or a generator, which the child reads into a list
# (at most ``_wire._MAX_ELEMENTS`` items) before encoding it, since no iterator crosses the
# codec: ``list(chunked(x, 2))`` gives what Python gives. len and abs take no iterator.
CONSUMERS = frozenset({"sorted", "sum", "min", "max", "list", "tuple"})
# In the outcome cache's key: outcomes cached before the child read iterators are not reused.
CALL_KINDS_VERSION = "2"
ISCLOSE_OPTIONS = ("rel_tol", "abs_tol")


def _decimal(*args: Any) -> Any:
    import decimal  # lazily: the zygote's children need not carry it

    return decimal.Decimal(*args)


_datetime_types = {
    "date": _dt.date,
    "datetime": _dt.datetime,
    "time": _dt.time,
    "timedelta": _dt.timedelta,
    "timezone": _dt.timezone,
}
_containers = {
    "list": list,
    "tuple": tuple,
    "set": set,
    "frozenset": frozenset,
    "dict": dict,
    "range": range,
    "deque": collections.deque,
    "Counter": collections.Counter,
    "OrderedDict": collections.OrderedDict,
}
_pure: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "len": len,
    "min": min,
    "max": max,
    "sum": sum,
    "sorted": sorted,
}
CALLABLES: dict[str, Callable[..., Any]] = {
    **_datetime_types,
    **{f"datetime.{k}": v for k, v in _datetime_types.items()},
    "Fraction": fractions.Fraction,
    "fractions.Fraction": fractions.Fraction,
    "Decimal": _decimal,
    "decimal.Decimal": _decimal,
    "float": float,
    "int": int,
    "complex": complex,
    "bool": bool,
    "str": str,
    "bytes": bytes,
    "bytearray": bytearray,
    **_containers,
    **{f"collections.{k}": _containers[k] for k in ("deque", "Counter", "OrderedDict")},
    **_pure,
}
CONSTANTS: dict[str, Any] = {
    "math.inf": math.inf,
    "math.nan": math.nan,
    "math.pi": math.pi,
    "math.e": math.e,
    "math.tau": math.tau,
    "timezone.utc": _dt.UTC,
    "datetime.timezone.utc": _dt.UTC,
    "datetime.UTC": _dt.UTC,
}
LAMBDA_CALLABLES = ("abs", "len", "min", "max", "sum", "round", "sorted")
EXCEPTIONS = frozenset(
    name
    for name, v in vars(builtins).items()
    if isinstance(v, type) and issubclass(v, BaseException)
)
# The error classes a JavaScript item's ``raises`` names (the Node runner reports what a call threw
# by its class chain, ``Error`` last: ``raises(Error, ...)`` holds for any Error subclass).
JS_EXCEPTIONS = frozenset(
    {
        "Error",
        "TypeError",
        "RangeError",
        "ReferenceError",
        "SyntaxError",
        "EvalError",
        "URIError",
        "AggregateError",
    }
)
MAX_SAFE_INTEGER = (1 << 53) - 1  # JavaScript's Number.MAX_SAFE_INTEGER
# Names the grammar gives a meaning of its own: an entry point cannot be called so in a test.
RESERVED = frozenset({*CALLABLES, *WRAPPERS, "raises"}) | frozenset(
    n.partition(".")[0] for n in [*CALLABLES, *CONSTANTS]
)


class GrammarError(ValueError):
    """A test (or a literal) outside the grammar; the message names the construct."""


# Plain classes, not dataclasses or NamedTuples: ``dataclasses`` imports ``inspect`` (with
# ``dis``, ``tokenize``, ...) and ``typing`` is large too; imported into the sandbox's zygote,
# whose size every fork and every child's exit pays for, they made it about 2 MB larger.
class Call:
    """The call of the entry point a test makes: the child evaluates ``source`` with
    :func:`parse_call` and :func:`build_arguments`; ``function`` is the name it calls."""

    __slots__ = ("function", "source")

    def __init__(self, function: str, source: str) -> None:
        self.function = function
        self.source = source


class Test:
    """One parsed test. ``steps``: applied to the call's decoded value in order, each
    ``("index", node)`` (a subscript) or ``("apply", wrapper name)``; ``expected``: the literal
    compared with (``compare``, ``isclose``); ``options``: isclose's keyword literals;
    ``exceptions``: the builtin exception class names ``raises`` accepts."""

    __slots__ = ("form", "call", "steps", "op", "expected", "options", "exceptions")

    def __init__(
        self,
        form: str,
        call: Call,
        steps: tuple[tuple[str, Any], ...] = (),
        op: str = "",
        expected: ast.expr | None = None,
        options: tuple[tuple[str, ast.expr], ...] = (),
        exceptions: tuple[str, ...] = (),
    ) -> None:
        self.form, self.call, self.steps, self.op = form, call, steps, op
        self.expected, self.options, self.exceptions = expected, options, exceptions


# --- parsing -----------------------------------------------------------------------------------


def parse_tree(source: str, mode: str = "exec") -> ast.AST:
    """``ast.parse`` of ``source`` after the size checks, then the depth and node-count checks
    (iterative: a deep tree is refused before anything recurses into it). SyntaxError as
    Python gives it; GrammarError for the bounds."""
    if not isinstance(source, str):
        raise GrammarError(f"a test must be a str, got {type(source).__name__}")
    if len(source) > MAX_SOURCE:
        raise GrammarError(f"a test of {len(source)} characters is longer than {MAX_SOURCE}")
    if source.count("(") + source.count("[") + source.count("{") > MAX_NODES:
        raise GrammarError("a test with too many brackets")
    try:
        tree = ast.parse(source, "<test>", mode)
    except SyntaxError:
        raise
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, parser limits
        raise GrammarError(f"a test the parser refuses ({type(exc).__name__})") from None
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    nodes = 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH or nodes > MAX_NODES:
            what = f"nested deeper than {MAX_DEPTH}" if depth > MAX_DEPTH else "too large"
            raise GrammarError(f"a test {what} is not in the test grammar")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return tree


def parse_test(source: str, probe: bool = False, exceptions: frozenset[str] = EXCEPTIONS) -> Test:
    """The :class:`Test` of one test statement; GrammarError naming what is outside the
    grammar (SyntaxError when it does not parse). ``probe``: accept a bare call too.
    ``exceptions``: the class names ``raises`` may name (:data:`JS_EXCEPTIONS` for a
    JavaScript item's tests)."""
    body = parse_tree(source).body  # type: ignore[attr-defined]
    if len(body) != 1:
        raise GrammarError(f"a test is exactly one statement, found {len(body)}")
    stmt = body[0]
    if probe and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return Test(PROBE, _call(stmt.value))
    if not isinstance(stmt, ast.Assert):
        raise GrammarError(
            f"{_describe(stmt)} is not in the test grammar; a test is an assert "
            "statement" + _ALLOWED
        )
    if stmt.msg is not None:
        raise GrammarError("an assert message is not in the test grammar")
    test, negated = stmt.test, False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, True
    if isinstance(test, ast.Compare) and not negated:
        return _comparison(test)
    if isinstance(test, ast.Call) and _dotted(test.func) == "math.isclose" and not negated:
        return _isclose(test)
    if isinstance(test, ast.Call) and _dotted(test.func) == "raises":
        raised = _raises(test, exceptions)
        raised.op = "not" if negated else ""
        return raised
    if isinstance(test, ast.Call | ast.Subscript):
        call, steps = _hole(test)
        return Test(TRUTH, call, steps, "not" if negated else "")
    raise GrammarError(f"{_describe(stmt.test)} is not in the test grammar" + _ALLOWED)


_ALLOWED = (
    " (allowed: assert CALL OP LITERAL, assert CALL is True/False/None, assert [not] "
    "CALL, assert math.isclose(CALL, LITERAL, ...), assert [not] raises(Exception, f, "
    "...); CALL is a call of the entry point, maybe subscripted or inside "
    + "/".join(WRAPPERS)
    + ")"
)


def _comparison(node: ast.Compare) -> Test:
    if len(node.ops) != 1:
        raise GrammarError("a chained comparison is not in the test grammar" + _ALLOWED)
    spelling = OPERATORS[type(node.ops[0])][0]
    call, steps = _hole(node.left)
    expected = node.comparators[0]
    if spelling in ("is", "is not"):
        if not (
            isinstance(expected, ast.Constant)
            and expected.value in (True, False, None)
            and type(expected.value) in (bool, type(None))
        ):
            raise GrammarError(f"'{spelling}' compares with True, False or None only")
    else:
        check_literal(expected)
    return Test(COMPARE, call, steps, spelling, expected)


def _isclose(node: ast.Call) -> Test:
    if len(node.args) != 2 or any(isinstance(a, ast.Starred) for a in node.args):
        raise GrammarError("math.isclose takes the call and the expected value")
    call, steps = _hole(node.args[0])
    check_literal(node.args[1])
    options = []
    for kw in node.keywords:
        if kw.arg not in ISCLOSE_OPTIONS:
            raise GrammarError(
                f"math.isclose's keyword {kw.arg!r} is not in the test grammar "
                f"(allowed: {', '.join(ISCLOSE_OPTIONS)})"
            )
        check_literal(kw.value)
        options.append((kw.arg, kw.value))
    return Test(ISCLOSE, call, steps, expected=node.args[1], options=tuple(options))


def _raises(node: ast.Call, exceptions: frozenset[str]) -> Test:
    if node.keywords and len(node.args) < 2:
        raise GrammarError("raises takes the exception, the function, then its arguments")
    if len(node.args) < 2 or any(isinstance(a, ast.Starred) for a in node.args):
        raise GrammarError("raises takes the exception, the function, then its arguments")
    exc = node.args[0]
    names = exc.elts if isinstance(exc, ast.Tuple) else [exc]
    if not names or not all(isinstance(n, ast.Name) and n.id in exceptions for n in names):
        kind = (
            "a builtin exception class"
            if exceptions is EXCEPTIONS
            else "one of the item language's error classes (" + ", ".join(sorted(exceptions)) + ")"
        )
        raise GrammarError(
            f"raises' first argument {_clip(ast.unparse(exc), 60)!r} is not {kind} (or a tuple of "
            "them)"
        )
    fn = node.args[1]
    if not isinstance(fn, ast.Name) or fn.id in RESERVED:
        raise GrammarError(
            f"raises' second argument {_clip(ast.unparse(fn), 60)!r} is not the entry point's name"
        )
    call = _call(ast.Call(fn, node.args[2:], node.keywords))
    return Test(RAISES, call, exceptions=tuple(n.id for n in names))  # type: ignore[attr-defined]


def _hole(node: ast.expr) -> tuple[Call, tuple[tuple[str, Any], ...]]:
    """The call and, innermost first, the steps around it."""
    steps: list[tuple[str, Any]] = []
    while True:
        if isinstance(node, ast.Subscript):
            check_literal(node.slice, slices=True)
            steps.append(("index", node.slice))
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in WRAPPERS
        ):
            if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
                raise GrammarError(f"{node.func.id}() around the call takes just the call")
            steps.append(("apply", node.func.id))
            node = node.args[0]
        elif isinstance(node, ast.Call):
            return _call(node), tuple(reversed(steps))
        else:
            raise GrammarError(
                f"{_describe(node)} is not in the test grammar where the call of "
                "the entry point belongs" + _ALLOWED
            )


def _call(node: ast.Call) -> Call:
    fn = node.func
    if not isinstance(fn, ast.Name):
        raise GrammarError(
            f"calling {_describe(fn)} is not in the test grammar; a test calls "
            "the entry point by its name"
        )
    if fn.id in RESERVED:
        raise GrammarError(f"{fn.id}() is not a call of the entry point" + _ALLOWED)
    inner = _wrapped_call(fn.id, node)
    if inner is not None:  # isinstance(f(3), int): the builtin is what the grammar refuses
        raise GrammarError(
            f"{fn.id}() around the call {_clip(ast.unparse(inner), 40)} is not in the test "
            f"grammar: only {'/'.join(WRAPPERS)} may take the call of the entry point" + _ALLOWED
        )
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            raise GrammarError("a starred argument is not in the test grammar")
        _argument(arg)
    for kw in node.keywords:
        if kw.arg is None:
            raise GrammarError("a ** argument is not in the test grammar")
        _argument(kw.value)
    call = ast.Call(ast.Name(fn.id, ast.Load()), node.args, node.keywords)
    return Call(fn.id, ast.unparse(call))


def _wrapped_call(name: str, node: ast.Call) -> ast.Call | None:
    """The call ``node`` passes to the builtin ``name`` (``isinstance(f(3), int)``: ``f(3)``),
    when ``name`` is a builtin the grammar does not give a meaning and an argument is a call
    of a plain name that is no literal's constructor: then ``name()`` is the call refused, not
    the entry point's call inside it."""
    if not hasattr(builtins, name):
        return None
    for arg in [*node.args, *(kw.value for kw in node.keywords)]:
        if (
            isinstance(arg, ast.Call)
            and isinstance(arg.func, ast.Name)
            and arg.func.id not in CALLABLES
            and arg.func.id not in WRAPPERS
        ):
            return arg
    return None


def _clip(text: str, limit: int) -> str:
    """``text`` cut at a word boundary near ``limit`` characters, ``…`` marking the cut: a
    name or number is never cut in two (one that starts early is kept whole)."""
    if len(text) <= limit:
        return text

    def inside(i: int) -> bool:  # position i splits a word
        word = lambda c: c.isalnum() or c == "_"  # noqa: E731
        return 0 < i < len(text) and word(text[i - 1]) and word(text[i])

    cut = limit
    while cut > limit // 2 and inside(cut):
        cut -= 1
    if inside(cut):  # a long word: up to its end
        cut = limit
        while inside(cut):
            cut += 1
    return text if cut >= len(text) else text[:cut].rstrip() + "…"


def _argument(node: ast.expr) -> None:
    if isinstance(node, ast.Lambda):
        check_lambda(node)
    elif not (isinstance(node, ast.Name) and node.id in LAMBDA_CALLABLES):
        check_literal(node)


def parse_call(source: str) -> tuple[str, list[ast.expr], list[tuple[str, ast.expr]]]:
    """A :attr:`Call.source` back into (name, argument nodes, keyword nodes), checked again:
    the child gets its call as text and trusts none of it."""
    node = parse_tree(source, "eval").body  # type: ignore[attr-defined]
    if not isinstance(node, ast.Call):
        raise GrammarError("not a call")
    call = _call(node)
    return call.function, list(node.args), [(k.arg, k.value) for k in node.keywords]  # type: ignore[misc]


def json_arguments(call: Call) -> str:
    """A call's arguments as the JSON text of an array, for a runner in another language (the
    Node runner parses it inside the snippet's context). Only JSON-representable literals:
    None, booleans, ints within +-:data:`MAX_SAFE_INTEGER`, finite floats, strings, lists and
    dicts with string keys; GrammarError naming anything else (a keyword or ``lambda``
    argument, a tuple, a set, ...)."""
    _, args, kwargs = parse_call(call.source)
    if kwargs:
        raise GrammarError("a keyword argument is not in the JavaScript test grammar")
    values = []
    for node in args:
        if isinstance(node, ast.Lambda | ast.Name):
            raise GrammarError(f"{_describe(node)} is not a JSON-representable argument")
        values.append(evaluate(node))
    todo = list(values)
    while todo:
        value = todo.pop()
        t = type(value)
        if t is list:
            todo.extend(value)
        elif t is dict:
            if not all(type(k) is str for k in value):
                raise GrammarError("a dict argument with a key that is not a str is not JSON")
            todo.extend(value.values())
        elif t is int and abs(value) > MAX_SAFE_INTEGER:
            raise GrammarError(f"the int argument {value} is beyond JavaScript's safe integers")
        elif t is float and not math.isfinite(value):
            raise GrammarError(f"the float argument {value} is not JSON-representable")
        elif not (value is None or t in (bool, int, float, str)):
            raise GrammarError(f"an argument of type {t.__name__} is not JSON-representable")
    import json  # lazily: the zygote's children need not carry it

    return json.dumps(values, ensure_ascii=False, allow_nan=False)


def _describe(node: ast.AST) -> str:
    names = {
        ast.Lambda: "a lambda",
        ast.ListComp: "a list comprehension",
        ast.GeneratorExp: "a generator expression",
        ast.SetComp: "a set comprehension",
        ast.DictComp: "a dict comprehension",
        ast.BoolOp: "'and'/'or'",
        ast.IfExp: "a conditional expression",
        ast.NamedExpr: "an assignment expression",
        ast.Starred: "a starred expression",
        ast.Attribute: "an attribute",
        ast.Name: "a name",
        ast.Await: "await",
        ast.Yield: "yield",
        ast.JoinedStr: "an f-string",
        ast.Assign: "an assignment",
        ast.Expr: "an expression statement",
        ast.Import: "an import",
        ast.ImportFrom: "an import",
        ast.UnaryOp: "a unary operator",
        ast.BinOp: "arithmetic",
        ast.Call: "a call",
        ast.Subscript: "a subscript",
        ast.Constant: "a constant",
    }
    what = names.get(type(node), f"a {type(node).__name__} node")
    if isinstance(node, ast.Name | ast.Attribute | ast.Constant):
        what += f" ({_dotted(node) or _clip(ast.unparse(node), 40)})"
    elif isinstance(node, ast.Call):
        what += f" of {_clip(ast.unparse(node.func), 40)}"
    return what


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


# --- literals ----------------------------------------------------------------------------------


def check_literal(node: ast.expr, slices: bool = False) -> None:
    """GrammarError unless ``node`` is a literal expression (see the module docstring)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Constant):
            if n.value is Ellipsis:
                raise GrammarError("'...' is not in the test grammar")
        elif isinstance(n, ast.List | ast.Tuple | ast.Set):
            stack.extend(n.elts)
        elif isinstance(n, ast.Dict):
            if any(k is None for k in n.keys):
                raise GrammarError("a ** in a dict is not in the test grammar")
            stack.extend([*n.keys, *n.values])  # type: ignore[list-item]
        elif isinstance(n, ast.UnaryOp | ast.BinOp):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
                raise GrammarError("'@' is not in the test grammar")
            stack.extend([n.operand] if isinstance(n, ast.UnaryOp) else [n.left, n.right])
        elif isinstance(n, ast.Slice) and slices and n is node:
            stack.extend(x for x in (n.lower, n.upper, n.step) if x is not None)
        elif isinstance(n, ast.Call) and _dotted(n.func) in CALLABLES:
            for a in n.args:
                if isinstance(a, ast.Starred):
                    raise GrammarError("a starred argument is not in the test grammar")
            if any(k.arg is None for k in n.keywords):
                raise GrammarError("a ** argument is not in the test grammar")
            stack.extend([*n.args, *(k.value for k in n.keywords)])
        elif isinstance(n, ast.Attribute | ast.Name) and _dotted(n) in CONSTANTS:
            pass
        else:
            raise GrammarError(
                f"{_describe(n)} is not in the test grammar's literals (allowed: "
                "constants, lists, tuples, sets, dicts, arithmetic, "
                + ", ".join(sorted({k.rpartition(".")[2] for k in CALLABLES}))
                + ", "
                + ", ".join(CONSTANTS)
                + ")"
            )


def check_lambda(node: ast.Lambda) -> None:
    """GrammarError unless ``node`` is a lambda argument of the grammar."""
    a = node.args
    if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults or not a.args:
        raise GrammarError("a lambda argument takes plain positional parameters only")
    params = {p.arg for p in a.args}
    stack: list[ast.AST] = [node.body]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Name):
            if n.id not in params:
                raise GrammarError(f"name {n.id!r} in a lambda argument is not its parameter")
        elif isinstance(n, ast.Call):
            if not (isinstance(n.func, ast.Name) and n.func.id in LAMBDA_CALLABLES):
                raise GrammarError(
                    f"{_describe(n)} in a lambda argument is not in the grammar "
                    f"(allowed: {', '.join(LAMBDA_CALLABLES)})"
                )
            if n.keywords or any(isinstance(x, ast.Starred) for x in n.args):
                raise GrammarError("keyword or starred arguments in a lambda argument")
            stack.extend(n.args)
        elif isinstance(n, ast.Compare | ast.BoolOp | ast.IfExp | ast.Subscript | ast.Slice):
            stack.extend(ast.iter_child_nodes(n))
        elif isinstance(n, ast.expr_context | ast.cmpop | ast.boolop | ast.operator):
            pass
        elif isinstance(n, ast.Constant | ast.List | ast.Tuple | ast.UnaryOp | ast.BinOp):
            stack.extend(ast.iter_child_nodes(n))
        elif isinstance(n, ast.unaryop):
            pass
        else:
            raise GrammarError(f"{_describe(n)} in a lambda argument is not in the test grammar")


# fmt: off
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
    ast.Not: operator.not_,
}
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
# fmt: on


def evaluate(node: ast.expr) -> Any:
    """The value of a literal expression, as Python would compute it; GrammarError for a node
    outside the grammar or a value past the bounds, and whatever Python raises
    (ZeroDivisionError, ValueError, ...) for a literal that fails. Every operation's cost is
    checked before it runs (:class:`_Evaluation`), and one literal's total work is at most
    :data:`MAX_STEPS`. Recursion is bounded by :func:`parse_tree`'s depth check."""
    return _Evaluation().value(node)


# Work units: one element visited, one character, one 64-bit word of a product.
MAX_STEPS = 1 << 22  # per literal: about 50 ms of CPU at the slowest operation per unit
_SEQUENCES = (str, bytes, bytearray, list, tuple, collections.deque)
_CONTAINERS = (list, tuple, set, frozenset, dict, collections.deque)
# Callables whose cost is a walk over their arguments' elements (hash, compare, copy, print).
_WALKING = frozenset(
    {"list", "tuple", "set", "frozenset", "dict", "deque", "Counter", "OrderedDict", "str"}
)
_PRINTING = 4  # str() formats each element: measured about 4 times a hash or a copy
_WORD = 1 << 64
_WORD_SIZED = frozenset({int, bool, float, complex, type(None)})  # printed in a few characters
# Digits a Decimal may carry into int/round/Fraction/float: those of MAX_INT_BITS bits.
MAX_DECIMAL_DIGITS = int(MAX_INT_BITS * math.log10(2)) + 1


class _Evaluation:
    """One literal's evaluation: its remaining work (:data:`MAX_STEPS`) and the expanded
    sizes of the containers it built, kept by identity (with the object, so an id is never
    reused), so that a list held many times is counted each time without walking it again."""

    __slots__ = ("steps", "sizes")

    def __init__(self) -> None:
        self.steps = MAX_STEPS
        self.sizes: dict[int, tuple[Any, int]] = {}

    def charge(self, work: int, what: str) -> None:
        self.steps -= work
        if self.steps < 0:
            raise GrammarError(
                f"{what} is past the literal's budget of {MAX_STEPS} steps; not in the test grammar"
            )

    def size(self, value: Any, depth: int = 0) -> int:
        """Elements, characters and decimal digits of ``value``, nested ones counted (aliases
        each time they appear): what printing, hashing or comparing it visits."""
        if isinstance(value, str | bytes | bytearray):
            return len(value)
        if not isinstance(value, _CONTAINERS):
            return _digits(value)
        known = self.sizes.get(id(value))
        if known is not None:
            return known[1]
        if depth > MAX_DEPTH:
            raise GrammarError(f"a value nested deeper than {MAX_DEPTH} is not in the test grammar")
        self.charge(len(value), "walking a value")
        elements = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        total = len(value)
        for element in elements:
            kind = type(element)
            if kind in _WORD_SIZED and (kind is not int or -_WORD < element < _WORD):
                continue  # the common leaf, without a call: this loop is most of the walk
            total += self.size(element, depth + 1)
            if total > MAX_SIZE:
                raise GrammarError(f"a literal of more than {MAX_SIZE} elements")
        self.sizes[id(value)] = (value, total)
        return total

    def value(self, node: ast.expr) -> Any:
        self.charge(1, "a literal")
        if isinstance(node, ast.Constant):
            if node.value is Ellipsis:
                raise GrammarError("'...' is not in the test grammar")
            return self.bounded(node.value)
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = [self.value(e) for e in node.elts]
            if isinstance(node, ast.Set):
                self.charge(sum(self.size(i) for i in items), "a set's hashing")
            kind = {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)]
            return self.bounded(kind(items))
        if isinstance(node, ast.Dict):
            pairs = []
            for k, v in zip(node.keys, node.values):
                if k is None:
                    raise GrammarError("a ** in a dict is not in the test grammar")
                pairs.append((self.value(k), self.value(v)))
            self.charge(sum(self.size(k) for k, _ in pairs), "a dict's hashing")
            return self.bounded(dict(pairs))
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            self.charge(_digits(operand), "a unary operation")
            return self.bounded(_UNARY[type(node.op)](operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = self.value(node.left), self.value(node.right)
            self.precheck(type(node.op), left, right)
            return self.bounded(_BINARY[type(node.op)](left, right))
        if isinstance(node, ast.Call) and _dotted(node.func) in CALLABLES:
            name = _dotted(node.func)
            args = []
            for a in node.args:
                if isinstance(a, ast.Starred):
                    raise GrammarError("a starred argument is not in the test grammar")
                args.append(self.value(a))
            kwargs = {}
            for keyword in node.keywords:
                if keyword.arg is None:
                    raise GrammarError("a ** argument is not in the test grammar")
                kwargs[keyword.arg] = self.value(keyword.value)
            self.check_call(name, args, kwargs)  # type: ignore[arg-type]
            return self.bounded(CALLABLES[name](*args, **kwargs))  # type: ignore[index]
        if isinstance(node, ast.Attribute | ast.Name) and _dotted(node) in CONSTANTS:
            return CONSTANTS[_dotted(node)]  # type: ignore[index]
        if isinstance(node, ast.Slice):
            parts = [
                None if x is None else self.value(x) for x in (node.lower, node.upper, node.step)
            ]
            return slice(*parts)
        raise GrammarError(f"{_describe(node)} is not in the test grammar's literals")

    def precheck(self, op: type, left: Any, right: Any) -> None:
        """Refuse an operation whose result would be past the bounds before computing it, and
        charge its work: a product's words, a repetition's or concatenation's elements."""
        _precheck(op, left, right)
        if op is ast.Mod and isinstance(left, str | bytes | bytearray):
            # '%0999999999d' % 1 pads to a width the format names: printf formatting is out.
            raise GrammarError("'%' formatting of a str or bytes is not in the test grammar")
        if op is ast.Mult:
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, _SEQUENCES) and isinstance(n, int) and n > 0:
                    if self.size(seq) * n > MAX_SIZE:
                        raise GrammarError(f"a literal of more than {MAX_SIZE} elements")
                    self.charge(len(seq) * n, "a repetition")
        if op in (ast.Add, ast.Sub, ast.BitOr, ast.BitAnd, ast.BitXor):
            self.charge(_length(left) + _length(right), "a concatenation")
        words = (_bits(left) // 64 + 1) * (_bits(right) // 64 + 1)
        if op is ast.Pow and isinstance(right, int) and _bits(left) > 1:
            words = (abs(right) * _bits(left) // 64 + 1) ** 2 // 8  # the last squarings
        self.charge(words, "arithmetic")

    def check_call(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        """:func:`_check_call`'s bounds, then the call's work charged before it runs."""
        _check_call(name, args, kwargs)
        base = name.rpartition(".")[2]
        values = [*args, *kwargs.values()]
        if base in ("int", "round", "Fraction", "float", "complex"):
            for v in values:
                _check_decimal(base, v)
        if base in _WALKING:
            weight = _PRINTING if base == "str" else 1
            self.charge(weight * sum(self.size(v) for v in values), f"{base}()")
        elif base == "sum":
            self.charge(_sum_work(args), "sum()")
        elif base in ("sorted", "min", "max"):
            items = args[0] if len(args) == 1 else args
            n = _length(items) if not isinstance(items, range) else len(items)
            self.charge(sum(self.size(v) for v in args) * (n.bit_length() + 1), f"{base}()")

    def bounded(self, value: Any) -> Any:
        _bounded(value)
        self.size(value)
        return value


def _digits(value: Any) -> int:
    """The decimal digits printing a number writes, past a word's 20 (up to those, printing a
    number costs what an element does); 0 for what is not an int, Fraction or Decimal: a list
    of many aliases of one big number prints each of them."""
    bits = _bits(value)
    digits = bits // 3 + 1 if bits else 0
    if type(value).__name__ == "Decimal" and value.is_finite():
        digits = len(value.as_tuple().digits)
    return digits if digits > 20 else 0


def _check_decimal(base: str, value: Any) -> None:
    """int/round/Fraction/float of a Decimal computes its exact integer or ratio: refuse one
    whose exponent makes that past :data:`MAX_INT_BITS` (``int(Decimal('1e999999999'))``)."""
    if type(value).__name__ != "Decimal" or not value.is_finite():
        return
    exponent = value.as_tuple().exponent
    if abs(exponent) + len(value.as_tuple().digits) > MAX_DECIMAL_DIGITS:
        raise GrammarError(
            f"{base}() of a Decimal with exponent {exponent} is past {MAX_DECIMAL_DIGITS} digits; "
            "not in the test grammar"
        )


def _sum_work(args: list[Any]) -> int:
    """sum's work: adding sequences copies the running total each time, so n lists of total
    length L cost up to n * L; numbers cost one step (and their words) each."""
    if not args or isinstance(args[0], range):
        return len(args[0]) if args else 0
    items = args[0]
    n = (
        _length(items)
        if isinstance(items, _SEQUENCES)
        else len(items)
        if isinstance(items, set | frozenset | dict)
        else 0
    )
    elements = list(items.keys() if isinstance(items, dict) else items) if n else []
    start = args[1] if len(args) > 1 else 0
    total = _length(start) + sum(_length(e) for e in elements)
    words = sum(_bits(e) // 64 + 1 for e in elements)
    return n + n * total + words


def _bits(value: Any) -> int:
    if isinstance(value, int):
        return value.bit_length()
    if isinstance(value, fractions.Fraction):
        return max(value.numerator.bit_length(), value.denominator.bit_length())
    return 0


def _length(value: Any) -> int:
    if isinstance(value, range):
        return 0  # lazy: its consumers are checked (_check_call)
    try:
        return len(value) if isinstance(value, _SEQUENCES) else 0
    except (TypeError, OverflowError):
        return 0


def _precheck(op: type, left: Any, right: Any) -> None:
    """Refuse an operation whose result would be past the bounds before computing it."""
    if op is ast.Pow and isinstance(right, int) and _bits(left) > 1:
        if abs(right) * _bits(left) > MAX_INT_BITS:
            raise GrammarError(f"a power past {MAX_INT_BITS} bits is not in the test grammar")
    elif op is ast.Pow and isinstance(right, int) and abs(right) > MAX_INT_BITS:
        if not isinstance(left, float | complex):
            raise GrammarError("an exponent that large is not in the test grammar")
    elif op is ast.LShift and isinstance(right, int) and right > 0:
        if _bits(left) + right > MAX_INT_BITS:
            raise GrammarError(f"a shift past {MAX_INT_BITS} bits is not in the test grammar")
    elif op is ast.Mult:
        for seq, n in ((left, right), (right, left)):
            if isinstance(n, int) and _length(seq) * max(n, 0) > MAX_ELEMENTS:
                raise GrammarError(
                    f"a sequence longer than {MAX_ELEMENTS} is not in the test grammar"
                )
        if _bits(left) + _bits(right) > MAX_INT_BITS:
            raise GrammarError(f"a product past {MAX_INT_BITS} bits is not in the test grammar")


def _check_call(name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    base = name.rpartition(".")[2]
    values = [*args, *kwargs.values()]
    for v in values:
        if isinstance(v, range) and base not in ("range", "len", "bool", "str"):
            if len(v) > MAX_ELEMENTS:
                raise GrammarError(f"{base}() of a range longer than {MAX_ELEMENTS}")
    if base in ("bytes", "bytearray") and any(
        isinstance(v, int) and v > MAX_ELEMENTS for v in values
    ):
        raise GrammarError(f"{base}() longer than {MAX_ELEMENTS}")
    if base == "round" and len(args) > 1 and isinstance(args[1], int) and abs(args[1]) > 1000:
        raise GrammarError("round() to more than 1000 digits")
    if base in ("Fraction", "int", "Decimal", "float", "complex"):
        for v in values:
            # Fraction("1e999999") computes the power: no exponents there.
            if isinstance(v, str) and (len(v) > 1000 or base == "Fraction" and set(v) & {"e", "E"}):
                raise GrammarError(
                    f"{base}() of the text {_clip(v, 40)!r} is not in the test grammar"
                )


def _bounded(value: Any) -> Any:
    if _bits(value) > MAX_INT_BITS:
        raise GrammarError(f"a number past {MAX_INT_BITS} bits is not in the test grammar")
    if isinstance(value, (*_SEQUENCES, *_CONTAINERS)):
        if len(value) > MAX_ELEMENTS:
            raise GrammarError(f"a value longer than {MAX_ELEMENTS} is not in the test grammar")
    return value


def literal_value(node: ast.expr) -> Any:
    """:func:`evaluate`: every value it computes, the whole one too, is at most
    :data:`MAX_SIZE` elements (nested ones counted, aliases each time they appear): the checker
    compares it with what a child returned, and a list holding one big list many times would
    make that slow."""
    return evaluate(node)


def check_test(test: Test) -> None:
    """Evaluate a test's literals once (arguments without building lambdas), so that a literal
    that fails or is past the bounds is found at load time; raises what :func:`evaluate` does."""
    for node in [test.expected, *(v for _, v in test.options)]:
        if node is not None and test.op not in ("is", "is not"):
            literal_value(node)
    for _, step in test.steps:
        if isinstance(step, ast.expr):
            evaluate(step)
    _, args, kwargs = parse_call(test.call.source)
    for node in [*args, *(v for _, v in kwargs)]:
        _argument(node)
        if not isinstance(node, ast.Lambda | ast.Name):
            literal_value(node)


# --- the checker's side ------------------------------------------------------------------------


def expected_value(test: Test) -> Any:
    """What ``test`` compares with, computed once per plan: the literal, or for ``is`` its
    constant; isclose's options are a dict."""
    if test.form == COMPARE:
        if test.op in ("is", "is not"):
            return test.expected.value  # type: ignore[union-attr]
        return literal_value(test.expected)  # type: ignore[arg-type]
    if test.form == ISCLOSE:
        options = {name: literal_value(node) for name, node in test.options}
        return literal_value(test.expected), options  # type: ignore[arg-type]
    return None


def call_kind(test: Test) -> str:
    """What the child makes of the test's call (:func:`._child._make_call`): ``"call"`` for
    ``raises`` (whether it raised), ``"items"`` when a consuming wrapper takes the call's
    value directly (an iterator is read into a list), ``"value"`` otherwise."""
    if test.form == RAISES:
        return "call"
    if test.steps and test.steps[0][0] == "apply" and test.steps[0][1] in CONSUMERS:
        return "items"
    return "value"


def returned_value(test: Test, value: Any) -> Any:
    """The decoded value the call returned, with the test's subscripts and wrappers applied
    (what Python would have compared); raises what they raise (IndexError, TypeError, ...)."""
    for kind, step in test.steps:
        if kind == "index":
            value = value[evaluate(step)]
        else:
            value = WRAPPERS[step](value)
    return value


def judge(test: Test, expected: Any, value: Any) -> bool:
    """Whether a ``compare``, ``truth`` or ``isclose`` test holds for the call's decoded
    ``value``."""
    got = returned_value(test, value)
    if test.form == TRUTH:
        return not got if test.op == "not" else bool(got)
    if test.form == ISCLOSE:
        target, options = expected
        return math.isclose(got, target, **options)
    return bool(_BY_SPELLING[test.op](got, expected))


def raised_matches(test: Test, mro: list[str] | None) -> bool:
    """Whether a ``raises`` test holds: ``mro`` is the class names (``module.qualname``, the
    child's report) of what the call raised, None when it returned. ``raises`` holds when one
    of them is one of the test's builtin exception classes; ``not raises`` when none is."""
    names = set(mro or ())
    raised = any(f"builtins.{name}" in names for name in test.exceptions)
    return not raised if test.op == "not" else raised


# --- the child's side --------------------------------------------------------------------------


def build_arguments(
    parsed: tuple[str, list[ast.expr], list[tuple[str, ast.expr]]],
) -> tuple[str, list[Any], dict[str, Any]]:
    """In the child: the entry point's name and freshly built arguments of a call that
    :func:`parse_call` read. A lambda argument becomes a function compiled from its checked
    syntax tree, evaluated with no builtins: only its parameters and :data:`LAMBDA_CALLABLES`
    are names there; a bare name of those is the builtin itself (``key=len``)."""
    name, args, kwargs = parsed
    scope = {"__builtins__": {}, **{n: CALLABLES[n] for n in LAMBDA_CALLABLES}}

    def value(node: ast.expr) -> Any:
        if isinstance(node, ast.Lambda):
            tree = ast.fix_missing_locations(ast.Expression(node))
            code = compile(tree, "<test argument>", "eval", dont_inherit=True)
            return eval(code, scope)  # noqa: S307 - the checked lambda, in the child only
        if isinstance(node, ast.Name):
            return scope[node.id]
        return evaluate(node)

    return name, [value(a) for a in args], {k: value(v) for k, v in kwargs}
