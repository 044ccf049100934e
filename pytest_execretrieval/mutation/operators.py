"""Mutmut-style single-edit mutation operators over the standard ``ast``.

An operator maps one syntax node to its mutated alternatives, each an :class:`Edit`: a character
span of the ORIGINAL source plus replacement text. Mutants are made by splicing edits into the
original source (never ``ast.unparse``), so formatting survives outside the edited span.
``OPERATORS`` maps each class name to its :class:`OperatorClass`: its operator functions and
whether it is a core class.

Core classes
------------
``off_by_one``
    An ``int`` literal (not ``bool``; ``-k`` is one literal) becomes ``k + 1`` and ``k - 1``,
    written as a literal. As the right operand of ``+``/``-`` the signed term is shifted and a
    zero term dropped: ``n - 1`` -> ``n - 2`` / ``n``; ``n + 1`` -> ``n + 2`` / ``n``. Skips
    literals owned by ``off_by_one_boundary``: a bound (slice lower/upper, subscript index,
    ``range`` start/end) that is the literal itself or the ``c`` of ``e ± c``. ``range`` steps and
    slice steps are ordinary literals.
``wrong_operator``
    One operator token replaced, binary or augmented (``+=`` ...): ``+ -> -``, ``- -> +``,
    ``* -> //``, ``// -> *``, ``/ -> *``, ``% -> //``, ``** -> *``, ``& -> |``, ``| -> &``,
    ``^ -> |``, ``<< -> >>``, ``>> -> <<``; ``and <-> or`` (each token of a chain on its own);
    unary minus dropped, ``-x`` -> ``x`` (int literals excluded: they are ``off_by_one``'s).
``swap_arguments``
    Two adjacent positional arguments of a call exchanged (neither starred, texts differ); or
    the operands of a non-commutative ``-  /  //  %  **  <<  >>`` exchanged, parenthesised by
    precedence (``a - b - c`` -> ``c - (a - b)``).
``remove_edge_case_check``
    An ``if`` with no ``else``/``elif``, not itself an ``elif``, whose body's last statement is
    ``return``/``raise``/``continue``/``break``: its lines are deleted (``pass`` at the same
    indentation when it is the only statement of its block). Works at any nesting (loops too).
``wrong_comparison``
    Each operator of a (chained) comparison: ``== <-> !=``, ``< <-> >``, ``<= <-> >=``,
    ``in <-> not in``, ``is <-> is not``.
``off_by_one_boundary``
    ``< <-> <=``, ``> <-> >=``; ``range`` end and start ±1 (``range(b)`` -> ``range(b + 1)``,
    ``range(b - 1)``, ``range(1, b)``); each present slice bound ±1 (``x[:n]`` -> ``x[:n + 1]``,
    ``x[:n - 1]``); a subscript index ±1 when it is an int literal or ``e ± c``. A bound is
    shifted like ``off_by_one`` for literals and ``e ± c``, else `` + 1``/`` - 1`` is appended
    (parenthesising the bound when precedence requires).

Polarity fillers
----------------
``negate_condition``
    Test of ``if``/``elif``/``while``/ternary: ``x`` -> ``not x`` (``not (x)`` unless ``x`` is
    an atom, call, subscript or unary), ``not x`` -> ``x``. Constant tests are skipped.
``swap_min_max``
    ``min(...) <-> max(...)``; ``sorted(...)`` -> ``sorted(..., reverse=True)`` and
    ``sorted(..., reverse=True)`` -> ``sorted(...)`` (other ``reverse=`` values are left alone).
``complement_comparison``
    Logical complement of an order comparison: ``< <-> >=``, ``> <-> <=``.

Never touched: string/bytes literals and docstrings, anything inside an f-string, ``True``/
``False``/``None`` (bar ``reverse=True`` above), annotations, parameter defaults, decorators.

Candidate validity (:func:`generate_mutants`): the mutant compiles, defines ``entry_point`` at
module level (``def``/``async def``/``class`` or a plain name assignment), its ``ast.dump``
(no attributes) differs from the canonical's and every earlier candidate's, and
``difflib.SequenceMatcher(autojunk=False).get_grouped_opcodes(0)`` over the lines between the
texts' common first and last lines gives exactly one group (= one ``@@`` hunk of
``unified_diff(n=0)``); at most ``MAX_CANDIDATES`` edits per item are tried. Sizes:
``lines_changed`` sums ``max(removed, added)`` lines over the diff's change blocks;
``chars_changed`` sums, per edit, the removed plus inserted characters after trimming the
prefix and suffix common to the span's old text and its replacement (``<`` -> ``<=`` is 1).
"""

from __future__ import annotations

import ast
import bisect
import difflib
import itertools
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard


@dataclass(frozen=True)
class Edit:
    """Replace ``source[start:end]`` (character offsets) by ``replacement``."""

    start: int
    end: int
    replacement: str
    description: str
    operator: str = ""


@dataclass(frozen=True)
class Mutant:
    operator: str  # class name; "+"-joined sorted classes for stacked mutants
    line: int  # 1-based line of the (first) edit in the original source
    code: str  # full mutated source
    description: str  # e.g. "`<` -> `<=`"
    lines_changed: int  # sum of max(removed, added) lines over diff change blocks
    chars_changed: int  # removed + inserted chars per edit, common prefix/suffix trimmed
    edits: tuple[Edit, ...] = ()  # the spliced edits, sorted by start


_NEWLINE = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, splitting on ``\\r\\n``/``\\r``/``\\n`` only (as ``ast`` does)."""
    starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)]) if a < b]


class SourceContext:
    """A parsed source: char offsets of AST positions, parent links, protected subtrees."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.tree = ast.parse(source)
        self._line_starts = [0] + [m.end() for m in _NEWLINE.finditer(source)]
        self._parents: dict[int, ast.AST] = {}
        self.bounds: set[int] = set()  # ids of boundary expressions (see _bound_exprs)
        self.nodes: list[ast.AST] = []  # unprotected nodes, pre-order
        # Facts an operator derives once per source (a function's names, say), by its own key.
        self.memo: dict[object, object] = {}
        self._index(self.tree)

    def _index(self, tree: ast.AST) -> None:
        """Pre-order walk with an explicit stack: a long expression nests deeper than Python's
        recursion limit. A child's parent is recorded when the child is visited, as a recursive
        walk would (ast shares operator and context nodes, so the last visit's parent stands)."""
        stack: list[tuple[ast.AST, ast.AST | None, bool]] = [(tree, None, False)]
        while stack:
            node, parent, protected = stack.pop()
            if parent is not None:
                self._parents[id(node)] = parent
            if not protected:
                self.nodes.append(node)
                self.bounds.update(id(b) for b in _bound_exprs(node))
            shielded = {id(n) for n in _protected_children(node)}
            children = list(ast.iter_child_nodes(node))
            stack += [(c, node, protected or id(c) in shielded) for c in reversed(children)]

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self._parents.get(id(node))

    def offset(self, lineno: int, col: int) -> int:
        """Char offset of an AST (1-based line, UTF-8 byte column) position."""
        start = self._line_starts[lineno - 1]
        line = self.source[start : start + col]
        if line.isascii():
            return start + col
        end = self._line_starts[lineno] if lineno < len(self._line_starts) else len(self.source)
        prefix = self.source[start:end].encode("utf-8")[:col]
        return start + len(prefix.decode("utf-8", errors="replace"))

    # A parsed tree's nodes below the module all have positions; ``ast.AST`` declares none.
    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def text(self, node: ast.AST) -> str:
        return self.source[self.start(node) : self.end(node)]

    def line_start(self, lineno: int) -> int:
        starts = self._line_starts
        return starts[lineno - 1] if lineno <= len(starts) else len(self.source)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self._line_starts, offset)

    def op_span(self, lo: int, hi: int) -> tuple[int, int]:
        """Operator token(s) in ``source[lo:hi]``, skipping blanks, parens, ``\\`` and comments."""
        src, first, last, i = self.source, -1, -1, lo
        while i < hi:
            ch = src[i]
            if ch == "#":
                newline = src.find("\n", i, hi)
                i = hi if newline < 0 else newline
                continue
            if not (ch.isspace() or ch in "()\\"):
                first = i if first < 0 else first
                last = i + 1
            i += 1
        if first < 0:
            raise ValueError(f"no operator between offsets {lo} and {hi}")
        return first, last

    def between(self, left: ast.AST, right: ast.AST) -> tuple[int, int]:
        return self.op_span(self.end(left), self.start(right))


def _protected_children(node: ast.AST) -> list[ast.AST]:
    """Children whose subtree no operator may touch."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [*node.decorator_list, node.args, *([node.returns] if node.returns else [])]
    if isinstance(node, ast.ClassDef):
        return list(node.decorator_list)
    if isinstance(node, ast.Lambda):
        return [node.args]
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    if isinstance(node, ast.JoinedStr):
        return list(node.values)
    return []


# --- shared helpers -------------------------------------------------------------------------

Operator = Callable[[ast.AST, SourceContext], Iterator[Edit]]

# fmt: off
_BINOP_TEXT: dict[type[ast.operator], str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.MatMult: "@", ast.Div: "/",
    ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>",
    ast.BitOr: "|", ast.BitXor: "^", ast.BitAnd: "&",
}
_BINOP_PREC: dict[type[ast.operator], int] = {
    ast.BitOr: 7, ast.BitXor: 8, ast.BitAnd: 9, ast.LShift: 10, ast.RShift: 10, ast.Add: 11,
    ast.Sub: 11, ast.Mult: 12, ast.MatMult: 12, ast.Div: 12, ast.FloorDiv: 12, ast.Mod: 12,
    ast.Pow: 14,
}
# fmt: on
_UNARY_PREC, _ADD_PREC, _POW_PREC, _ATOM_PREC = 13, 11, 14, 16


def _prec(node: ast.AST, ctx: SourceContext) -> int:
    """Binding strength of an expression as written (higher binds tighter)."""
    if isinstance(node, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Starred)):
        return 0
    if isinstance(node, (ast.Tuple, ast.GeneratorExp)):  # bare tuples/genexps need parens
        return _ATOM_PREC if ctx.text(node).startswith("(") else 0
    if isinstance(node, ast.Lambda):
        return 1
    if isinstance(node, ast.IfExp):
        return 2
    if isinstance(node, ast.BoolOp):
        return 3 if isinstance(node.op, ast.Or) else 4
    if isinstance(node, ast.UnaryOp):
        return 5 if isinstance(node.op, ast.Not) else _UNARY_PREC
    if isinstance(node, ast.Compare):
        return 6
    if isinstance(node, ast.BinOp):
        return _BINOP_PREC[type(node.op)]
    if isinstance(node, ast.Await):
        return 15
    return _ATOM_PREC


def _operand(node: ast.AST, ctx: SourceContext, op: ast.operator, side: str) -> str:
    """Source of ``node`` as the ``side`` operand of ``op``, parenthesised if needed."""
    p, q = _prec(node, ctx), _BINOP_PREC[type(op)]
    if isinstance(op, ast.Pow):  # right-associative; `a ** -b` is fine
        needs = p <= q if side == "left" else p < _UNARY_PREC
    else:
        needs = p < q if side == "left" else p <= q
    return f"({ctx.text(node)})" if needs else ctx.text(node)


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _edit(
    ctx: SourceContext, start: int, end: int, new: str, context: ast.AST | None = None
) -> Edit:
    """An edit described as "`old` -> `new`", quoting the ``context`` node when given."""
    src = ctx.source
    if context is None:
        old, shown = src[start:end], new
    else:
        lo, hi = ctx.start(context), ctx.end(context)
        old, shown = src[lo:hi], src[lo:start] + new + src[end:hi]
    return Edit(start, end, new, f"`{_short(old)}` -> `{_short(shown)}`")


def _int_literal(node: ast.AST | None) -> int | None:
    """Value of an int literal ``k`` or ``-k`` (bools excluded), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_literal(node.operand)
        if isinstance(node.operand, ast.Constant) and inner is not None:
            return -inner
    return None


def _is_term(node: ast.AST | None) -> TypeGuard[ast.BinOp]:
    """``e + c`` or ``e - c`` with an int literal ``c``."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, (ast.Add, ast.Sub))
        and _int_literal(node.right) is not None
    )


def _is_range_call(node: ast.AST) -> TypeGuard[ast.Call]:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "range"
        and 1 <= len(node.args) <= 3
        and not node.keywords
        and not any(isinstance(a, ast.Starred) for a in node.args)
    )


def _bound_exprs(node: ast.AST) -> list[ast.expr]:
    """Boundary expressions of a node: range start/end, slice lower/upper, subscript index."""
    if _is_range_call(node):
        return list(node.args[:2])
    if isinstance(node, ast.Subscript):
        if isinstance(node.slice, ast.Slice):
            return [b for b in (node.slice.lower, node.slice.upper) if b is not None]
        return [node.slice]
    return []


def _term_shifts(ctx: SourceContext, term: ast.BinOp) -> Iterator[Edit]:
    """``e ± c`` shifted by +1 and -1 through ``c``; a zero term is dropped."""
    src, right = ctx.source, term.right
    sign = 1 if isinstance(term.op, ast.Add) else -1
    signed = sign * (_int_literal(right) or 0)
    op_start, op_end = ctx.between(term.left, right)
    for delta in (1, -1):
        value = signed + delta
        if value == 0:
            start = op_start
            while src[start - 1] in " \t":
                start -= 1
            yield _edit(ctx, start, ctx.end(term), "", term)
        elif (value > 0) == (sign > 0) and isinstance(right, ast.Constant):
            yield _edit(ctx, ctx.start(right), ctx.end(right), str(abs(value)), term)
        else:
            new_op = "+" if value > 0 else "-"
            spacing = src[op_end : ctx.start(right)]
            yield _edit(ctx, op_start, ctx.end(right), f"{new_op}{spacing}{abs(value)}", term)


def _literal_shifts(ctx: SourceContext, node: ast.AST, context: ast.AST) -> Iterator[Edit]:
    value = _int_literal(node)
    assert value is not None
    parent = ctx.parent(node)
    pow_base = (
        isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Pow) and parent.left is node
    )
    for new in (value + 1, value - 1):
        text = f"({new})" if new < 0 and pow_base else str(new)
        yield _edit(ctx, ctx.start(node), ctx.end(node), text, context)


def _bound_shifts(ctx: SourceContext, bound: ast.expr, context: ast.AST) -> Iterator[Edit]:
    """A boundary expression moved by +1 and -1."""
    if _int_literal(bound) is not None:
        yield from _literal_shifts(ctx, bound, context)
    elif _is_term(bound):
        yield from _term_shifts(ctx, bound)
    else:
        text = ctx.text(bound)
        text = f"({text})" if _prec(bound, ctx) < _ADD_PREC else text
        for suffix in (" + 1", " - 1"):
            yield _edit(ctx, ctx.start(bound), ctx.end(bound), text + suffix, context)


def _drop_prefix_op(ctx: SourceContext, node: ast.UnaryOp) -> Edit:
    """Delete a unary operator token (and blanks after it), keeping any parentheses."""
    op_start, op_end = ctx.op_span(ctx.start(node), ctx.start(node.operand))
    while ctx.source[op_end] in " \t":
        op_end += 1
    return _edit(ctx, op_start, op_end, "", node)


# --- operators ----------------------------------------------------------------------------


def _off_by_one(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if _int_literal(node) is None:
        return
    parent = ctx.parent(node)
    if isinstance(node, ast.Constant) and _int_literal(parent) is not None:
        return  # the `k` of `-k`: handled as the literal `-k`
    term = parent if _is_term(parent) and parent.right is node else None
    if id(node) in ctx.bounds or (term is not None and id(term) in ctx.bounds):
        return  # owned by off_by_one_boundary
    if term is not None:
        yield from _term_shifts(ctx, term)
    else:
        yield from _literal_shifts(ctx, node, node)


# fmt: off
_WRONG_BINOP: dict[type[ast.operator], str] = {
    ast.Add: "-", ast.Sub: "+", ast.Mult: "//", ast.FloorDiv: "*", ast.Div: "*",
    ast.Mod: "//", ast.Pow: "*", ast.BitAnd: "|", ast.BitOr: "&", ast.BitXor: "|",
    ast.LShift: ">>", ast.RShift: "<<",
}
# fmt: on


def _wrong_binop(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if isinstance(node, ast.BinOp) and type(node.op) in _WRONG_BINOP:
        start, end = ctx.between(node.left, node.right)
        yield _edit(ctx, start, end, _WRONG_BINOP[type(node.op)])
    elif isinstance(node, ast.AugAssign) and type(node.op) in _WRONG_BINOP:
        start, end = ctx.between(node.target, node.value)
        yield _edit(ctx, start, end, _WRONG_BINOP[type(node.op)] + "=")


def _wrong_boolop(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if isinstance(node, ast.BoolOp):
        new = "or" if isinstance(node.op, ast.And) else "and"
        for left, right in itertools.pairwise(node.values):
            start, end = ctx.between(left, right)
            yield _edit(ctx, start, end, new)


def _drop_unary_minus(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        if _int_literal(node) is None:
            yield _drop_prefix_op(ctx, node)


def _swap_call_args(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if not isinstance(node, ast.Call):
        return
    for a, b in itertools.pairwise(node.args):
        text_a, text_b = ctx.text(a), ctx.text(b)
        if isinstance(a, ast.Starred) or isinstance(b, ast.Starred) or text_a == text_b:
            continue
        gap = ctx.source[ctx.end(a) : ctx.start(b)]
        description = f"swap `{_short(text_a)}` and `{_short(text_b)}`"
        yield Edit(ctx.start(a), ctx.end(b), text_b + gap + text_a, description)


_NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift)


def _swap_operands(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, _NON_COMMUTATIVE)):
        return
    text_left, text_right = ctx.text(node.left), ctx.text(node.right)
    if text_left == text_right:
        return
    src = ctx.source
    op_start, op_end = ctx.between(node.left, node.right)
    before = op_start
    while before > ctx.end(node.left) and src[before - 1] in " \t":
        before -= 1
    after = op_end
    while after < ctx.start(node.right) and src[after] in " \t":
        after += 1
    new_left = _operand(node.right, ctx, node.op, "left")
    new_right = _operand(node.left, ctx, node.op, "right")
    swapped = new_left + src[before:after] + new_right
    description = f"swap `{_short(text_left)}` and `{_short(text_right)}`"
    yield Edit(ctx.start(node), ctx.end(node), swapped, description)


_EARLY_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def _remove_guard(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if not isinstance(node, ast.If) or node.orelse or not isinstance(node.body[-1], _EARLY_EXITS):
        return
    parent, src = ctx.parent(node), ctx.source
    if (
        isinstance(parent, ast.If)
        and parent.orelse == [node]
        and src.startswith("elif", ctx.start(node))
    ):
        return
    fields = ast.iter_fields(parent) if parent is not None else ()
    block = next((v for _, v in fields if isinstance(v, list) and node in v), None)
    end_line: int = node.end_lineno  # type: ignore[assignment]  # set: the tree is parsed
    first, last = ctx.line_start(node.lineno), ctx.line_start(end_line + 1)
    indent, tail = src[first : ctx.start(node)], src[ctx.end(node) : last]
    if block is None or indent.strip() or (tail.strip() and not tail.strip().startswith("#")):
        return
    newline = _NEWLINE.search(tail)
    replacement = indent + "pass" + (newline.group() if newline else "") if len(block) == 1 else ""
    header = split_lines(src[ctx.start(node) : last])[0]
    yield Edit(first, last, replacement, f"remove `{_short(header)}`")


# fmt: off
_CMP_TEXT: dict[type[ast.cmpop], str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}
# fmt: on


def _comparison_operator(table: dict[type[ast.cmpop], str]) -> Operator:
    """An operator replacing each comparison token found in ``table``."""

    def operator(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
        if not isinstance(node, ast.Compare):
            return
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands, operands[1:]):
            if type(op) in table:
                start, end = ctx.between(left, right)
                yield _edit(ctx, start, end, table[type(op)])

    return operator


# fmt: off
_WRONG_COMPARISON = {
    ast.Eq: "!=", ast.NotEq: "==", ast.Lt: ">", ast.Gt: "<", ast.LtE: ">=", ast.GtE: "<=",
    ast.In: "not in", ast.NotIn: "in", ast.Is: "is not", ast.IsNot: "is",
}
# fmt: on
_BOUNDARY_COMPARISON = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">"}
_COMPLEMENT_COMPARISON = {ast.Lt: ">=", ast.GtE: "<", ast.Gt: "<=", ast.LtE: ">"}


def _shift_bounds(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if _is_range_call(node):
        args = node.args
        for bound in args[:2]:
            yield from _bound_shifts(ctx, bound, node)
        if len(args) == 1:
            yield _edit(ctx, ctx.start(args[0]), ctx.start(args[0]), "1, ", node)
    elif isinstance(node, ast.Subscript):
        for bound in _bound_exprs(node):
            if bound is node.slice and _int_literal(bound) is None and not _is_term(bound):
                continue  # a plain index such as `d[key]`
            yield from _bound_shifts(ctx, bound, node)


def _negate_condition(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if not isinstance(node, (ast.If, ast.While, ast.IfExp)) or isinstance(node.test, ast.Constant):
        return
    test = node.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield _drop_prefix_op(ctx, test)
    else:
        text = ctx.text(test)
        new = f"not {text}" if _prec(test, ctx) >= _UNARY_PREC else f"not ({text})"
        yield _edit(ctx, ctx.start(test), ctx.end(test), new)


def _swap_min_max(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id in ("min", "max"):
            new = "max" if node.func.id == "min" else "min"
            yield _edit(ctx, ctx.start(node.func), ctx.end(node.func), new)


def _flip_sorted(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return
    if node.func.id != "sorted" or not node.args or any(k.arg is None for k in node.keywords):
        return
    items = sorted([*node.args, *node.keywords], key=ctx.start)
    if ctx.end(items[-1]) == ctx.end(node):
        return  # a bare generator argument shares the call's parentheses
    reverse = [k for k in node.keywords if k.arg == "reverse"]
    if not reverse:
        at = ctx.end(items[-1])
        yield _edit(ctx, at, at, ", reverse=True", node)
    elif isinstance(reverse[0].value, ast.Constant) and reverse[0].value.value is True:
        position = items.index(reverse[0])
        if position > 0:
            yield _edit(ctx, ctx.end(items[position - 1]), ctx.end(reverse[0]), "", node)


@dataclass(frozen=True)
class OperatorClass:
    """One class of the operator table: its operator functions, and whether it is one of the
    ExecRetrieval core classes (which :mod:`.select` prefers to the polarity fillers)."""

    functions: tuple[Operator, ...]
    core: bool


# The operator table. Its order decides which class keeps an edit two classes produce alike
# (the earlier one) and the order classes are listed in reports. Changing what it generates
# means bumping MUTATION_VERSION below (see `mutation/fingerprint.py` and docs/architecture.md).
OPERATORS: dict[str, OperatorClass] = {
    "off_by_one": OperatorClass((_off_by_one,), core=True),
    "wrong_operator": OperatorClass((_wrong_binop, _wrong_boolop, _drop_unary_minus), core=True),
    "swap_arguments": OperatorClass((_swap_call_args, _swap_operands), core=True),
    "remove_edge_case_check": OperatorClass((_remove_guard,), core=True),
    "wrong_comparison": OperatorClass((_comparison_operator(_WRONG_COMPARISON),), core=True),
    "off_by_one_boundary": OperatorClass(
        (_comparison_operator(_BOUNDARY_COMPARISON), _shift_bounds), core=True
    ),
    "negate_condition": OperatorClass((_negate_condition,), core=False),
    "swap_min_max": OperatorClass((_swap_min_max, _flip_sorted), core=False),
    "complement_comparison": OperatorClass(
        (_comparison_operator(_COMPLEMENT_COMPARISON),), core=False
    ),
}
OPERATOR_CLASSES: tuple[str, ...] = tuple(OPERATORS)
CORE_CLASSES: tuple[str, ...] = tuple(name for name, c in OPERATORS.items() if c.core)

# What generated mutants and distractors: a corpus records it (`build.engine()`), and a new
# value makes every committed corpus stale. Bump it when a change to this module, select.py or
# stacking.py changes the mutants or their selection; either way, record the new
# `fingerprint.code_fingerprint()` in MUTATION_FINGERPRINT (tests/test_mutation_operators.py
# prints it). Until it is recorded, corpora record "<version>+unrecorded-<fingerprint>".
MUTATION_VERSION = "4"
MUTATION_FINGERPRINT = "d9b1a862a8fa54173987a18145787f88a44820756994c43d115f212b6d0dcb42"


# --- candidates ---------------------------------------------------------------------------


def generate_edits(source: str, table: dict[str, OperatorClass] | None = None) -> list[Edit]:
    """Every raw single-edit candidate (not yet validated) of the classes of ``table`` (default
    :data:`OPERATORS`), ordered by position, class (table order), text."""
    return ordered_edits(SourceContext(source), OPERATORS if table is None else table)


def ordered_edits(ctx: Any, table: Mapping[str, Any]) -> list[Edit]:
    """The edits each class of ``table`` (its ``functions``, each ``(node, ctx) -> edits``)
    makes at each of ``ctx.nodes``, ordered by position, class (table order), text; the tree-sitter
    languages' candidates come from here too."""
    order = {name: i for i, name in enumerate(table)}
    found = [
        replace(edit, operator=name)
        for node in ctx.nodes
        for name, table_entry in table.items()
        for operator in table_entry.functions
        for edit in operator(node, ctx)
    ]
    found.sort(key=lambda e: (e.start, order[e.operator], e.end, e.replacement))
    unique: dict[tuple[int, int, str], Edit] = {}
    for edit in found:  # identical splices: the earliest class keeps it
        unique.setdefault((edit.start, edit.end, edit.replacement), edit)
    return list(unique.values())


def apply_edits(source: str, edits: Sequence[Edit]) -> str:
    """Splice non-overlapping edits into ``source``."""
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for a, b in itertools.pairwise(ordered):
        if b.start < a.end or b.start == a.start:
            raise ValueError(f"overlapping edits: {a} and {b}")
    for edit in reversed(ordered):
        source = source[: edit.start] + edit.replacement + source[edit.end :]
    return source


def edit_lines(source: str, edit: Edit) -> tuple[int, int]:
    """First and last 1-based original lines an edit touches."""
    return _line(source, edit.start), _line(source, max(edit.start, edit.end - 1))


def _line(source: str, offset: int) -> int:
    return len(_NEWLINE.findall(source, 0, offset)) + 1


def diff_blocks(source: str, code: str) -> tuple[int, int]:
    """(hunks, lines_changed) of the line diff with zero context.

    The lines both texts share at the start and at the end are set aside first (a linear
    scan), and ``difflib`` compares only what lies between: an edit's own lines. Comparing
    whole texts costs quadratic time on repeated lines (``SequenceMatcher`` without autojunk
    matches each line against every equal one), which hung the build on a canonical of 800
    equal lines."""
    old, new = split_lines(source), split_lines(code)
    shortest = min(len(old), len(new))
    head = 0
    while head < shortest and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < shortest - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old, new = old[head : len(old) - tail], new[head : len(new) - tail]
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    groups = list(matcher.get_grouped_opcodes(0))
    changed = sum(
        max(i2 - i1, j2 - j1) for group in groups for tag, i1, i2, j1, j2 in group if tag != "equal"
    )
    return len(groups), changed


def _chars_changed(source: str, edit: Edit) -> int:
    old, new = source[edit.start : edit.end], edit.replacement
    prefix = len(_common_prefix(old, new))
    old, new = old[prefix:], new[prefix:]
    suffix = len(_common_prefix(old[::-1], new[::-1]))
    return len(old) + len(new) - 2 * suffix


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def defines_name(tree: ast.Module, name: str) -> bool:
    """Whether a module defines ``name`` at top level (def, class or plain assignment)."""
    for stmt in tree.body:
        definition = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        if isinstance(stmt, definition) and stmt.name == name:
            return True
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        targets = [stmt.target] if isinstance(stmt, ast.AnnAssign) else targets
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def validated_dump(code: str, entry_point: str) -> str | None:
    """``ast.dump`` of code that compiles and defines ``entry_point``, else None."""
    try:
        with warnings.catch_warnings():  # e.g. SyntaxWarning for `x is 1`
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
            compile(tree, "<mutant>", "exec")
    except (SyntaxError, ValueError):
        return None
    return ast.dump(tree) if defines_name(tree, entry_point) else None


def build_mutant(source: str, edits: Sequence[Edit]) -> Mutant:
    """The (unvalidated) mutant that applies ``edits`` to ``source``."""
    ordered = tuple(sorted(edits, key=lambda e: (e.start, e.end)))
    code = apply_edits(source, ordered)
    return Mutant(
        operator="+".join(sorted(e.operator for e in ordered)),
        line=edit_lines(source, ordered[0])[0],
        code=code,
        description="; ".join(e.description for e in ordered),
        lines_changed=diff_blocks(source, code)[1],
        chars_changed=sum(_chars_changed(source, e) for e in ordered),
        edits=ordered,
    )


# Raw edits considered per item, in generate_edits order: each costs a parse, a compile and a
# sandbox run, and an item file may hold up to 64 KiB of code (the bundled items: 130 at most).
MAX_CANDIDATES = 1000


def generate_mutants(
    source: str,
    entry_point: str,
    table: dict[str, OperatorClass] | None = None,
    per_class: int | None = None,
) -> list[Mutant]:
    """Every valid single-edit mutant of ``source`` among its first :data:`MAX_CANDIDATES`
    tried edits, in :func:`generate_edits` order over ``table`` (default :data:`OPERATORS`).

    ``per_class``: at most that many mutants of each class, the earliest; once a class has them,
    its further edits are not tried (nor counted against :data:`MAX_CANDIDATES`)."""
    canonical = ast.parse(source)
    if not defines_name(canonical, entry_point):
        raise ValueError(f"source does not define {entry_point!r} at module level")
    return distinct_mutants(
        source,
        generate_edits(source, table),
        lambda code: validated_dump(code, entry_point),
        ast.dump(canonical),
        per_class,
    )


def distinct_mutants(
    source: str,
    edits: Iterable[Edit],
    shape: Callable[[str], object | None],
    original: object,
    per_class: int | None = None,
) -> list[Mutant]:
    """The mutants of ``source`` that ``edits`` make one at a time, in order, among the first
    :data:`MAX_CANDIDATES` tried (``per_class``: at most that many of each class, the earliest;
    a class's further edits are then neither tried nor counted). A mutant is kept when it is
    valid (``shape(code)`` is not None: it parses and still defines the entry point), is
    structurally new (its shape is neither ``original``'s nor an earlier mutant's) and differs
    from ``source`` in one hunk. Shared by every language's generator."""
    seen = {original}
    mutants: list[Mutant] = []
    per_operator: dict[str, int] = {}
    tried = 0
    for edit in edits:
        if per_class is not None and per_operator.get(edit.operator, 0) >= per_class:
            continue
        if tried == MAX_CANDIDATES:
            break
        tried += 1
        code = apply_edits(source, [edit])
        found = shape(code)
        if found is None or found in seen or diff_blocks(source, code)[0] != 1:
            continue
        seen.add(found)
        per_operator[edit.operator] = per_operator.get(edit.operator, 0) + 1
        mutants.append(build_mutant(source, [edit]))
    return mutants
