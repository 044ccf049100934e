"""Real-bug families: operator classes shaped after the TSSB-3M single-statement bug patterns.

TSSB-3M (Richter & Wehrheim, "TSSB-3M: Mining single statement bugs at massive scale",
MSR 2022) mined 3M single-statement bug fixes from Python projects and labelled each with one of
20 SStuB patterns. Each class below is named after the pattern whose *bug* it writes (the fix
undoes the edit) and records the pattern's TSSB-3M count, as the dataset's README ("SStuB
statistic", github.com/cedricrupb/TSSB3M) rounds it. Two classes come from the limitations the
ExecRetrieval paper names instead (``exception_path``, ``type_confusion``); TSSB-3M has no pattern
of its own for them (:data:`TSSB_PATTERNS` says what each is counted as).

Every class is a single attributable edit, made like the core classes' (:mod:`.operators`): a
span of the original source replaced, validated by :func:`.operators.generate_mutants` (it
compiles, defines the entry point, differs from the canonical's and every earlier candidate's
syntax tree, one diff hunk). The protected subtrees of :mod:`.operators` stay untouched (string
literals, f-strings, annotations, parameter defaults, decorators). "The function" of a node is
its innermost enclosing ``def``/``async def`` (``lambda`` and comprehensions do not count; a node
outside every function is left alone by the classes that need one).

Classes (:data:`FAMILY_OPERATORS`, in table order)
--------------------------------------------------
``change_identifier_used`` (237K)
    A read of a parameter replaced by another parameter of the same function, or a read of a
    local (a name the function assigns, not a parameter, not declared ``global``/``nonlocal``)
    by another local of it: each other name of the same kind, in order of first appearance.
``change_binary_operand``  (174K)
    An operand of a binary operation or comparison that is an atom (name, attribute, subscript,
    call, non-string constant) replaced by another such operand text of the same function, the
    first three in order of appearance (not itself, not the operation's other operand).
``same_function_more_args`` (150K)
    A documented optional argument added: ``x.sort()`` -> ``x.sort(reverse=True)``;
    ``s.split(sep)``/``s.rsplit(sep)`` -> ``..., 1)`` (``.split()`` -> ``.split(maxsplit=1)``);
    ``round(x)`` -> ``round(x, 1)``; ``enumerate(x)`` -> ``enumerate(x, 1)``; ``range(a, b)`` ->
    ``range(a, b, 2)``; ``s.replace(a, b)`` -> ``s.replace(a, b, 1)``;
    ``s.find(x)``/``rfind``/``index``/``count`` -> ``..., 1)``; ``x.pop()`` -> ``x.pop(0)``;
    ``int(s)`` -> ``int(s, 16)``; ``s.strip()``/``lstrip``/``rstrip`` -> ``... (" ")``.
    (``sorted(x)`` -> ``sorted(x, reverse=True)`` is ``swap_min_max``'s.)
``wrong_function_name`` (134K)
    A called name or method replaced by its sibling: ``any``/``all``, ``append``/``extend``,
    ``startswith``/``endswith``, ``lstrip``/``rstrip``, ``find``/``rfind``, ``index``/
    ``rindex``, ``floor``/``ceil``, ``upper``/``lower``, ``isupper``/``islower``, ``split``/
    ``rsplit``, ``ljust``/``rjust``, ``keys``/``values``, ``remove``/``discard``,
    ``bisect_left``/``bisect_right``, ``insort_left``/``insort_right``, ``appendleft``/
    ``append`` (on ``appendleft``), ``popleft``/``pop`` (on ``popleft``), ``isdigit``/``isalnum``,
    ``isalpha``/``isalnum`` (on ``isalpha``), ``sum``/``len``. (``min``/``max`` is
    ``swap_min_max``'s.)
``change_attribute_used`` (104K)
    An attribute that is not called (``node.left``, ``self.head``, ``math.pi``) renamed to another
    such attribute name of the same function (for module level: of the module), the first three
    in order of appearance.
``change_numeric_literal`` (97K)
    A number changed by more than one: an ``int`` ``k`` (``-k`` is one literal) becomes
    ``k + 2``, ``k - 2`` and ``2 * k`` (when that differs from ``k`` by more than 1), a
    ``float`` ``x`` becomes ``2 * x`` and ``x / 2`` (``0.0`` becomes ``1.0``); a negative result
    is parenthesised as an operand of an operator.
``more_specific_if`` (68K)
    ``if c:`` / ``elif c:`` -> ``if c and X:``, ``X`` each of the first two comparisons of the same
    function (outside lambdas and comprehensions) that are not part of ``c``.
``same_function_less_args`` (50K)
    An argument dropped: any keyword argument (not ``**``), or the last positional argument of
    ``round``/``int``/``range`` (of three)/``enumerate``/``pow`` (of three)/``sum``/``next``/
    ``getattr`` (of three) and of the methods ``split``/``rsplit``/``strip``/``lstrip``/
    ``rstrip``/``pop``/``get``/``setdefault``/``replace`` (of three)/``find``/``rfind``/
    ``index``/``count``/``startswith``/``endswith`` (of two or more).
``change_boolean_literal`` (37K)
    ``True`` <-> ``False`` (not the test of a ``while``: a loop that never ends is no near miss).
``less_specific_if`` (22K)
    One conjunct of an ``and`` test of ``if``/``elif``/``while``/ternary dropped.
``change_keyword_argument_used`` (20K)
    A keyword argument bound to another parameter the call does not bind: of a function the
    source defines, or of a library callable called by that name: ``print`` (``sep``/``end``),
    ``min``/``max`` (``key``/``default``), ``sorted``/``sort`` (``key``/``reverse``),
    ``split``/``rsplit`` (``sep``/``maxsplit``), ``replace``/``datetime`` (``year`` ...
    ``microsecond``), ``date`` (``year``/``month``/``day``), ``timedelta`` (``days`` ...
    ``weeks``).
``exception_path`` (no TSSB-3M pattern: the paper's "exception paths")
    ``raise E`` / ``raise E(...)`` with another built-in type (``ValueError`` <-> ``TypeError``,
    ``KeyError`` <-> ``IndexError``, ``ZeroDivisionError``/``OverflowError``/``RuntimeError`` ->
    ``ValueError``); a ``raise`` dropped (``pass`` when it is the only statement of its block)
    unless it ends an ``if`` without ``else`` (``remove_edge_case_check`` removes that guard);
    a handler widened: ``except E`` -> ``except Exception`` (``E`` not already ``Exception`` or
    ``BaseException``).
``type_confusion`` (the paper's "type confusion")
    ``/`` <-> ``//`` (and ``/=`` <-> ``//=``); a conversion dropped: ``int(e)``, ``float(e)``,
    ``str(e)``, ``list(e)``, ``tuple(e)``, ``set(e)`` with one positional argument -> ``(e)``
    (parentheses only when ``e`` is not an atom).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import cast

from .operators import (
    OPERATORS,
    Edit,
    OperatorClass,
    SourceContext,
    _edit,
    _int_literal,
    _prec,
    _remove_guard,
    _short,
    split_lines,
)

# TSSB-3M pattern each class writes, and the pattern's count in TSSB-3M (the dataset README's
# "SStuB statistic", rounded to thousands there). The core classes write patterns too; a pattern
# several classes write is shared between them by the realistic-mix weights
# (scoring/analyses.py, `tssb_weights`).
# None: no SStuB pattern describes the class's edit.
TSSB_COUNTS: dict[str, int] = {
    "Change Identifier Used": 237_000,
    "Change Binary Operand": 174_000,
    "Same Function More Args": 150_000,
    "Wrong Function Name": 134_000,
    "Add Function Around Expression": 117_000,
    "Change Attribute Used": 104_000,
    "Change Numeric Literal": 97_000,
    "More Specific If": 68_000,
    "Add Method Call": 60_000,
    "Add Elements To Iterable": 57_000,
    "Same Function Less Args": 50_000,
    "Change Boolean Literal": 37_000,
    "Add Attribute Access": 32_000,
    "Change Binary Operator": 29_000,
    "Same Function Wrong Caller": 25_000,
    "Less Specific If": 22_000,
    "Change Keyword Argument Used": 20_000,
    "Change Unary Operator": 15_000,
    "Same Function Swap Args": 8_000,
    "Change Constant Type": 6_000,
}
TSSB_SOURCE = (
    "Richter & Wehrheim, TSSB-3M: Mining single statement bugs at massive scale, MSR 2022; "
    "counts from the dataset's README, SStuB statistic (github.com/cedricrupb/TSSB3M)"
)
TSSB_PATTERNS: dict[str, str | None] = {
    # the core classes and polarity fillers of mutation/operators.py
    "off_by_one": "Change Numeric Literal",
    "wrong_operator": "Change Binary Operator",
    "swap_arguments": "Same Function Swap Args",
    "remove_edge_case_check": None,  # deletes a whole `if` statement: no single-statement fix
    "wrong_comparison": "Change Binary Operator",
    "off_by_one_boundary": "Change Binary Operator",
    "negate_condition": "Change Unary Operator",
    "swap_min_max": "Wrong Function Name",
    "complement_comparison": "Change Binary Operator",
    # the families below
    "change_identifier_used": "Change Identifier Used",
    "change_binary_operand": "Change Binary Operand",
    "same_function_more_args": "Same Function More Args",
    "wrong_function_name": "Wrong Function Name",
    "change_attribute_used": "Change Attribute Used",
    "change_numeric_literal": "Change Numeric Literal",
    "more_specific_if": "More Specific If",
    "same_function_less_args": "Same Function Less Args",
    "change_boolean_literal": "Change Boolean Literal",
    "less_specific_if": "Less Specific If",
    "change_keyword_argument_used": "Change Keyword Argument Used",
    "exception_path": None,  # the paper's limitation; TSSB-3M has no exception pattern
    # A dropped conversion is the bug "Add Function Around Expression" fixes; `/` vs `//` is
    # counted there too (TSSB-3M files it under "Change Binary Operator", shared above).
    "type_confusion": "Add Function Around Expression",
}

_REPLACE_LIMIT = 3  # replacement texts per site for the classes that draw them from the function


# --- the function of a node, and what it binds ---------------------------------------------

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (
    *_FUNCTIONS,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _enclosing(node: ast.AST, ctx: SourceContext, kinds: tuple) -> ast.AST | None:
    parent = ctx.parent(node)
    while parent is not None and not isinstance(parent, kinds):
        parent = ctx.parent(parent)
    return parent


def _function(node: ast.AST, ctx: SourceContext) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost ``def`` holding ``node``, when no lambda, class or comprehension is nearer."""
    scope = _enclosing(node, ctx, _SCOPES)
    return scope if isinstance(scope, _FUNCTIONS) else None


def _own_nodes(func: ast.FunctionDef | ast.AsyncFunctionDef, ctx: SourceContext) -> list[ast.AST]:
    """The unprotected nodes of ``func``'s body in source order, nested scopes left out."""
    key = ("own-nodes", id(func))
    if key not in ctx.memo:
        out: list[ast.AST] = []
        stack: list[ast.AST] = list(reversed(func.body))
        while stack:
            node = stack.pop()
            out.append(node)
            if not isinstance(node, _SCOPES):
                stack += reversed(list(ast.iter_child_nodes(node)))
        mutable = {id(n) for n in ctx.nodes}  # the context's unprotected nodes
        ctx.memo[key] = [n for n in out if id(n) in mutable]
    return ctx.memo[key]  # type: ignore[return-value]


def _bindings(
    func: ast.FunctionDef | ast.AsyncFunctionDef, ctx: SourceContext
) -> tuple[list[str], list[str]]:
    """``(parameters, locals)`` of a function, each in order of first appearance."""
    key = ("bindings", id(func))
    if key not in ctx.memo:
        a = func.args
        params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        params += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
        declared = {
            n
            for s in _own_nodes(func, ctx)
            if isinstance(s, (ast.Global, ast.Nonlocal))
            for n in s.names
        }
        local: list[str] = []
        for node in _own_nodes(func, ctx):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                if node.id not in params and node.id not in declared and node.id not in local:
                    local.append(node.id)
        ctx.memo[key] = (params, local)
    return ctx.memo[key]  # type: ignore[return-value]


def _atom(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return not isinstance(node.value, (str, bytes)) and node.value is not Ellipsis
    return isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call))


def _called_name(node: ast.AST) -> str | None:
    """The name a call calls: ``f(...)`` -> ``f``, ``x.m(...)`` -> ``m``."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name):
        return node.func.id
    return node.func.attr if isinstance(node.func, ast.Attribute) else None


def _name_span(node: ast.Call, ctx: SourceContext) -> tuple[int, int]:
    """Span of the called name's token (the attribute after the dot for a method)."""
    end = ctx.end(node.func)
    # only for calls `_called_name` names: `node.func` is a Name or an Attribute
    name = node.func.id if isinstance(node.func, ast.Name) else cast(ast.Attribute, node.func).attr
    return end - len(name), end


def _is_method(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Attribute)


def _arguments(node: ast.Call, ctx: SourceContext) -> list[ast.AST]:
    return sorted([*node.args, *node.keywords], key=ctx.start)


def _bare_generator(node: ast.Call, ctx: SourceContext) -> bool:
    """A sole generator argument sharing the call's parentheses: no argument can be added."""
    items = _arguments(node, ctx)
    return bool(items) and ctx.end(items[-1]) == ctx.end(node)


def _append_argument(node: ast.Call, ctx: SourceContext, text: str) -> Edit | None:
    """``f(a)`` -> ``f(a, text)``; ``f()`` -> ``f(text)``."""
    if _bare_generator(node, ctx):
        return None
    items = _arguments(node, ctx)
    if items:
        at = ctx.end(items[-1])
        return _edit(ctx, at, at, ", " + text, node)
    at = ctx.end(node) - 1
    if ctx.source[at] != ")":
        return None
    return _edit(ctx, at, at, text, node)


def _drop_argument(node: ast.Call, arg: ast.AST, ctx: SourceContext) -> Edit | None:
    """The argument ``arg`` and its comma deleted."""
    items = _arguments(node, ctx)
    i = items.index(arg)
    if len(items) == 1:
        if _bare_generator(node, ctx):
            return None
        start, end = ctx.start(arg), ctx.end(arg)
    elif i == 0:
        start, end = ctx.start(arg), ctx.start(items[1])
    else:
        start, end = ctx.end(items[i - 1]), ctx.end(arg)
    return _edit(ctx, start, end, "", node)


# --- operators -----------------------------------------------------------------------------


def _change_identifier(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
        return
    func = _function(node, ctx)
    if func is None:
        return
    params, local = _bindings(func, ctx)
    kind = params if node.id in params else local if node.id in local else None
    for other in kind or ():
        if other != node.id:
            yield _edit(ctx, ctx.start(node), ctx.end(node), other)


def _operands(func: ast.FunctionDef | ast.AsyncFunctionDef, ctx: SourceContext) -> list[str]:
    key = ("operands", id(func))
    if key not in ctx.memo:
        texts: list[str] = []
        for n in _own_nodes(func, ctx):
            for operand in _binary_operands(n):
                text = ctx.text(operand)
                if _atom(operand) and text not in texts:
                    texts.append(text)
        ctx.memo[key] = texts
    return ctx.memo[key]  # type: ignore[return-value]


def _binary_operands(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    return []


def _change_operand(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    operands = _binary_operands(node)
    func = _function(node, ctx) if operands else None
    if func is None:
        return
    texts = [ctx.text(o) for o in operands]
    for operand in operands:
        if not _atom(operand):
            continue
        others = [t for t in _operands(func, ctx) if t not in texts]
        for new in others[:_REPLACE_LIMIT]:
            yield _edit(ctx, ctx.start(operand), ctx.end(operand), new, node)


# name -> (positional arguments the call must have, argument added); methods and functions apart
_MORE_METHOD_ARGS: dict[str, tuple[int, str]] = {
    "sort": (0, "reverse=True"),
    "split": (1, "1"),
    "rsplit": (1, "1"),
    "replace": (2, "1"),
    "find": (1, "1"),
    "rfind": (1, "1"),
    "index": (1, "1"),
    "count": (1, "1"),
    "pop": (0, "0"),
    "strip": (0, '" "'),
    "lstrip": (0, '" "'),
    "rstrip": (0, '" "'),
}
_MORE_FUNCTION_ARGS: dict[str, tuple[int, str]] = {
    "round": (1, "1"),
    "enumerate": (1, "1"),
    "range": (2, "2"),
    "int": (1, "16"),
}
_SPLITS = ("split", "rsplit")


def _more_args(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    name = _called_name(node)
    if name is None or not isinstance(node, ast.Call):
        return
    if any(isinstance(a, ast.Starred) for a in node.args):
        return
    if any(k.arg is None for k in node.keywords):
        return
    table = _MORE_METHOD_ARGS if _is_method(node) else _MORE_FUNCTION_ARGS
    if name not in table:
        return
    wanted, text = table[name]
    if name in _SPLITS and not node.args and not node.keywords:
        wanted, text = 0, "maxsplit=1"
    if len(node.args) != wanted or node.keywords:
        return
    edit = _append_argument(node, ctx, text)
    if edit is not None:
        yield edit


_WRONG_NAMES: dict[str, str] = {
    "any": "all",
    "all": "any",
    "append": "extend",
    "extend": "append",
    "startswith": "endswith",
    "endswith": "startswith",
    "lstrip": "rstrip",
    "rstrip": "lstrip",
    "find": "rfind",
    "rfind": "find",
    "index": "rindex",
    "rindex": "index",
    "floor": "ceil",
    "ceil": "floor",
    "upper": "lower",
    "lower": "upper",
    "isupper": "islower",
    "islower": "isupper",
    "split": "rsplit",
    "rsplit": "split",
    "ljust": "rjust",
    "rjust": "ljust",
    "keys": "values",
    "values": "keys",
    "remove": "discard",
    "discard": "remove",
    "bisect_left": "bisect_right",
    "bisect_right": "bisect_left",
    "insort_left": "insort_right",
    "insort_right": "insort_left",
    "appendleft": "append",
    "popleft": "pop",
    "isdigit": "isalnum",
    "isalpha": "isalnum",
    "sum": "len",
    "len": "sum",
}


def _wrong_name(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    name = _called_name(node)
    if isinstance(node, ast.Call) and name in _WRONG_NAMES:
        start, end = _name_span(node, ctx)
        yield _edit(ctx, start, end, _WRONG_NAMES[name], node)


def _attribute_names(
    scope: ast.FunctionDef | ast.AsyncFunctionDef | None, ctx: SourceContext
) -> list[str]:
    key = ("attributes", id(scope))
    if key not in ctx.memo:
        nodes = ctx.nodes if scope is None else _own_nodes(scope, ctx)
        names: list[str] = []
        for n in nodes:
            if isinstance(n, ast.Attribute) and not _is_called(n, ctx) and n.attr not in names:
                names.append(n.attr)
        ctx.memo[key] = names
    return ctx.memo[key]  # type: ignore[return-value]


def _is_called(node: ast.AST, ctx: SourceContext) -> bool:
    parent = ctx.parent(node)
    return isinstance(parent, ast.Call) and parent.func is node


def _change_attribute(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if not isinstance(node, ast.Attribute) or isinstance(node.ctx, ast.Del):
        return
    if _is_called(node, ctx):
        return
    others = [a for a in _attribute_names(_function(node, ctx), ctx) if a != node.attr]
    end = ctx.end(node)
    for new in others[:_REPLACE_LIMIT]:
        yield _edit(ctx, end - len(node.attr), end, new, node)


def _literal_text(value: int | float, node: ast.AST, ctx: SourceContext) -> str:
    text = repr(value)
    operand = isinstance(ctx.parent(node), (ast.BinOp, ast.UnaryOp, ast.Attribute))
    return f"({text})" if value < 0 and operand else text


def _change_number(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    parent = ctx.parent(node)
    if isinstance(node, ast.Constant) and _int_literal(parent) is not None:
        return  # the `k` of `-k`: handled as the literal `-k`
    value = _int_literal(node)
    if value is not None:
        new: list[int | float] = [value + 2, value - 2, *([2 * value] if abs(value) > 1 else [])]
    elif isinstance(node, ast.Constant) and type(node.value) is float:
        x = node.value
        new = [2 * x, x / 2] if x else [1.0]
    else:
        return
    for v in dict.fromkeys(new):
        yield _edit(ctx, ctx.start(node), ctx.end(node), _literal_text(v, node, ctx))


def _comparisons(
    func: ast.FunctionDef | ast.AsyncFunctionDef, ctx: SourceContext
) -> list[ast.Compare]:
    return [n for n in _own_nodes(func, ctx) if isinstance(n, ast.Compare)]


def _conjunct(text: str, node: ast.AST, ctx: SourceContext) -> str:
    """``text`` as an operand of ``and`` (parenthesised below ``not``/comparison strength)."""
    return text if _prec(node, ctx) > 4 else f"({text})"


def _more_specific(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if not isinstance(node, ast.If) or isinstance(node.test, ast.Constant):
        return
    func = _function(node, ctx)
    if func is None:
        return
    test = node.test
    inside = {id(n) for n in ast.walk(test)}
    texts = {ctx.text(n) for n in ast.walk(test) if isinstance(n, ast.expr)}
    added = [c for c in _comparisons(func, ctx) if id(c) not in inside and ctx.text(c) not in texts]
    for extra in list({ctx.text(c): c for c in added}.values())[:2]:
        new = f"{_conjunct(ctx.text(test), test, ctx)} and {_conjunct(ctx.text(extra), extra, ctx)}"
        yield _edit(ctx, ctx.start(test), ctx.end(test), new)


_LESS_FUNCTION_ARGS: dict[str, int] = {
    "round": 2,
    "int": 2,
    "range": 3,
    "enumerate": 2,
    "pow": 3,
    "sum": 2,
    "next": 2,
    "getattr": 3,
}
_LESS_METHOD_ARGS: dict[str, int] = {
    "split": 1,
    "rsplit": 1,
    "strip": 1,
    "lstrip": 1,
    "rstrip": 1,
    "pop": 1,
    "get": 2,
    "setdefault": 2,
    "replace": 3,
    "find": 2,
    "rfind": 2,
    "index": 2,
    "count": 2,
    "startswith": 2,
    "endswith": 2,
}


def _less_args(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    name = _called_name(node)
    if name is None or not isinstance(node, ast.Call):
        return
    drop: list[ast.AST] = [k for k in node.keywords if k.arg is not None]
    table = _LESS_METHOD_ARGS if _is_method(node) else _LESS_FUNCTION_ARGS
    args = node.args
    if name in table and len(args) == table[name] and not isinstance(args[-1], ast.Starred):
        drop.append(args[-1])
    for arg in sorted(drop, key=ctx.start):
        edit = _drop_argument(node, arg, ctx)
        if edit is not None:
            yield edit


def _change_boolean(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if not (isinstance(node, ast.Constant) and type(node.value) is bool):
        return
    parent = ctx.parent(node)
    if isinstance(parent, ast.While) and parent.test is node:
        return
    yield _edit(ctx, ctx.start(node), ctx.end(node), str(not node.value))


def _less_specific(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if not isinstance(node, (ast.If, ast.While, ast.IfExp)):
        return
    test = node.test
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
        return
    values = test.values
    for i, value in enumerate(values):
        if i == 0:
            start, end = ctx.start(value), ctx.start(values[1])
        else:
            start, end = ctx.end(values[i - 1]), ctx.end(value)
        yield _edit(ctx, start, end, "", test)


_DATETIME_FIELDS = ("year", "month", "day", "hour", "minute", "second", "microsecond")
_TIMEDELTA_FIELDS = ("days", "seconds", "microseconds", "milliseconds", "minutes", "hours", "weeks")
# Keyword parameters of library callables, by the name called (`f(...)` or `x.f(...)`).
_LIBRARY_KEYWORDS: dict[str, tuple[str, ...]] = {
    "print": ("sep", "end"),
    "min": ("key", "default"),
    "max": ("key", "default"),
    "sorted": ("key", "reverse"),
    "sort": ("key", "reverse"),
    "split": ("sep", "maxsplit"),
    "rsplit": ("sep", "maxsplit"),
    "replace": _DATETIME_FIELDS,
    "date": _DATETIME_FIELDS[:3],
    "datetime": _DATETIME_FIELDS,
    "timedelta": _TIMEDELTA_FIELDS,
}


def _defined_parameters(ctx: SourceContext) -> dict[str, list[str]]:
    """Parameter names (positional-or-keyword and keyword-only) of every ``def`` in the source,
    the first definition of a name winning."""
    key = ("parameters",)
    if key not in ctx.memo:
        out: dict[str, list[str]] = {}
        for n in ast.walk(ctx.tree):
            if isinstance(n, _FUNCTIONS) and n.name not in out:
                out[n.name] = [p.arg for p in (*n.args.args, *n.args.kwonlyargs)]
        ctx.memo[key] = out
    return ctx.memo[key]  # type: ignore[return-value]


def _change_keyword(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    name = _called_name(node)
    if name is None or not isinstance(node, ast.Call) or not node.keywords:
        return
    if isinstance(node.func, ast.Name) and name in _defined_parameters(ctx):
        names = _defined_parameters(ctx)[name]
        bound = {k.arg for k in node.keywords} | set(names[: len(node.args)])
    elif name in _LIBRARY_KEYWORDS:
        names = list(_LIBRARY_KEYWORDS[name])
        bound = {k.arg for k in node.keywords}
    else:
        return
    for k in node.keywords:
        if k.arg is None:
            continue
        start = ctx.start(k)
        for new in names:
            if new not in bound:
                yield _edit(ctx, start, start + len(k.arg), new, node)


_OTHER_EXCEPTION: dict[str, str] = {
    "ValueError": "TypeError",
    "TypeError": "ValueError",
    "KeyError": "IndexError",
    "IndexError": "KeyError",
    "ZeroDivisionError": "ValueError",
    "OverflowError": "ValueError",
    "RuntimeError": "ValueError",
}
_WIDEST = ("Exception", "BaseException")


def _exception_path(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if isinstance(node, ast.Raise) and node.exc is not None:
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(raised, ast.Name) and raised.id in _OTHER_EXCEPTION:
            yield _edit(ctx, ctx.start(raised), ctx.end(raised), _OTHER_EXCEPTION[raised.id], node)
    if isinstance(node, ast.Raise):
        yield from _drop_raise(node, ctx)
    if isinstance(node, ast.ExceptHandler) and node.type is not None:
        caught = node.type
        if not (isinstance(caught, ast.Name) and caught.id in _WIDEST):
            yield _edit(ctx, ctx.start(caught), ctx.end(caught), "Exception", node.type)


def _drop_raise(node: ast.Raise, ctx: SourceContext) -> Iterator[Edit]:
    parent = ctx.parent(node)
    if isinstance(parent, ast.If) and any(True for _ in _remove_guard(parent, ctx)):
        return  # the guard it ends is remove_edge_case_check's
    if parent is None or node.end_lineno is None:
        return  # never so for a parsed `raise`: it has a parent and an end line
    block = next((v for _, v in ast.iter_fields(parent) if isinstance(v, list) and node in v), None)
    src = ctx.source
    first, last = ctx.line_start(node.lineno), ctx.line_start(node.end_lineno + 1)
    indent, tail = src[first : ctx.start(node)], src[ctx.end(node) : last]
    if block is None or indent.strip() or (tail.strip() and not tail.strip().startswith("#")):
        return
    last_line = split_lines(src[first:last])[-1]
    ending = last_line[len(last_line.rstrip("\r\n")) :]
    replacement = indent + "pass" + ending if len(block) == 1 else ""
    yield Edit(first, last, replacement, f"remove `{_short(ctx.text(node))}`")


_CONVERSIONS = ("int", "float", "str", "list", "tuple", "set")
_DIVISIONS = {ast.Div: "//", ast.FloorDiv: "/"}


def _type_confusion(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if isinstance(node, ast.BinOp) and type(node.op) in _DIVISIONS:
        start, end = ctx.between(node.left, node.right)
        yield _edit(ctx, start, end, _DIVISIONS[type(node.op)])
    elif isinstance(node, ast.AugAssign) and type(node.op) in _DIVISIONS:
        start, end = ctx.between(node.target, node.value)
        yield _edit(ctx, start, end, _DIVISIONS[type(node.op)] + "=")
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _CONVERSIONS
        and len(node.args) == 1
        and not node.keywords
        and not isinstance(node.args[0], ast.Starred)
    ):
        arg = node.args[0]
        text = ctx.text(arg)
        if _prec(arg, ctx) < 16 or isinstance(arg, ast.GeneratorExp):
            text = f"({text})"
        yield _edit(ctx, ctx.start(node), ctx.end(node), text)


# The families' table. It follows the core table in ALL_OPERATORS, so an edit a core class
# also makes stays the core class's. Changing what it generates means bumping FAMILIES_VERSION
# (the families corpus records it; the default corpus does not depend on this module).
FAMILY_OPERATORS: dict[str, OperatorClass] = {
    "change_identifier_used": OperatorClass((_change_identifier,), core=False),
    "change_binary_operand": OperatorClass((_change_operand,), core=False),
    "same_function_more_args": OperatorClass((_more_args,), core=False),
    "wrong_function_name": OperatorClass((_wrong_name,), core=False),
    "change_attribute_used": OperatorClass((_change_attribute,), core=False),
    "change_numeric_literal": OperatorClass((_change_number,), core=False),
    "more_specific_if": OperatorClass((_more_specific,), core=False),
    "same_function_less_args": OperatorClass((_less_args,), core=False),
    "change_boolean_literal": OperatorClass((_change_boolean,), core=False),
    "less_specific_if": OperatorClass((_less_specific,), core=False),
    "change_keyword_argument_used": OperatorClass((_change_keyword,), core=False),
    "exception_path": OperatorClass((_exception_path,), core=False),
    "type_confusion": OperatorClass((_type_confusion,), core=False),
}
ALL_OPERATORS: dict[str, OperatorClass] = {**OPERATORS, **FAMILY_OPERATORS}
FAMILY_CLASSES: tuple[str, ...] = tuple(FAMILY_OPERATORS)
ALL_CLASSES: tuple[str, ...] = tuple(ALL_OPERATORS)

# Mutants tried per class and item in the families corpus (the earliest valid ones): bounds the
# suites a build runs, ~22 classes against the default corpus's 9.
FAMILY_CANDIDATES_PER_CLASS = 3

# What generated the families corpus's candidates besides the core table (which the mutation
# version covers): the families corpus records it. Bump it when this module's mutants change;
# record `fingerprint.families_fingerprint()` in FAMILIES_FINGERPRINT either way.
FAMILIES_VERSION = "1"
FAMILIES_FINGERPRINT = "7abf3fd31f12d5d1185b8f5184b6c8256a52591b612fb4ce9ba88823bdc2952f"
