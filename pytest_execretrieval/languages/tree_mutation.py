"""The tree-sitter operator machinery JavaScript and Go share (``javascript/mutation.py``,
``go/mutation.py``), written once so both make an edit the same way.

Most of what an operator does is independent of the grammar: the parsed source and its offsets
(:class:`TreeContext`), an operator token replaced, a prefix dropped, a term or bound shifted by
one, operands or neighbours swapped, a statement's lines deleted, a condition negated, the
operators both languages have alike, and the ordering and validation of the edits. A language
subclasses :class:`TreeContext` with what only its grammar knows (protected subtrees,
precedence, the names of its literals and fields) and keeps its operator table, its own classes
and rules. Both grammars call their operator expressions ``binary_expression`` (fields
``left``, ``operator``, ``right``) and ``unary_expression``.
"""

from __future__ import annotations

import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar, Generic, TypeVar

from ..mutation import fingerprint
from ..mutation.operators import Edit, Mutant, _short, distinct_mutants
from .trees import field

__all__ = [
    "BINARY",
    "Node",
    "TreeContext",
    "TreeOperatorClass",
    "bound_shifts",
    "boolean_literal",
    "delete_lines",
    "drop_prefix",
    "drop_unary_minus",
    "generate_mutants",
    "negate",
    "off_by_one",
    "swap_operands",
    "swap_pair",
    "term_shifts",
    "token_table",
    "tree_modules",
]

# A tree-sitter node, or None where a field is absent: Any, since tree_sitter is imported only
# when a language is parsed (its syntax.py).
Node = Any

BINARY = frozenset({"binary_expression"})
_NEWLINE = re.compile(rb"\r\n|\r|\n")
_DECIMAL = re.compile(rb"(?:0|[1-9][0-9]*)\Z")


class TreeContext(ABC):
    """A parsed source: char offsets of byte positions, the nodes operators visit (pre-order,
    protected subtrees left out), the boundary expressions. A language's subclass names its
    grammar's nodes (the class attributes) and supplies the methods marked abstract."""

    protected: ClassVar[frozenset[str]]  # subtrees no operator touches
    operator_chars: ClassVar[frozenset[int]]  # bytes a written operator must not run into
    # A leading `-` written right after an operator character gets a blank (`a<0` -> `a< -1`).
    spaced_negatives: ClassVar[bool] = False
    integer_type: ClassVar[str]  # the node type of a number literal (an integer one or not)
    prefix_operand: ClassVar[str]  # the field of a unary expression's operand
    unswappable: ClassVar[frozenset[str]]  # nodes :func:`swap_pair` leaves in place
    non_commutative: ClassVar[frozenset[str]]  # binary operators whose operands are swapped
    add_prec: ClassVar[int]  # the precedence of binary `+`
    unary_prec: ClassVar[int]  # the precedence of a unary operator

    def __init__(self, source: str) -> None:
        self.source = source
        self.data = source.encode("utf-8")
        self.tree = self.parse(source)
        problem = self.syntax_problem(self.tree)
        if problem:
            raise ValueError(f"source {problem}")
        self._chars: list[int] | None = None
        if not source.isascii():  # byte offset -> char offset, for the non-ASCII case only
            chars = []
            for index, char in enumerate(source):
                chars += [index] * len(char.encode("utf-8"))
            self._chars = [*chars, len(source)]
        self.nodes: list[Node] = []
        self.bounds: set[int] = set()  # ids of boundary expressions (see bound_exprs)
        stack = [self.tree.root_node]
        while stack:
            node = stack.pop()
            if node.type in self.protected:
                continue
            self.nodes.append(node)
            self.bounds.update(b.id for b in self.bound_exprs(node))
            stack.extend(reversed(node.children))

    # --- what the language supplies -------------------------------------------------------

    @abstractmethod
    def parse(self, source: str, /) -> Any:
        """The tree-sitter tree of ``source``."""

    @abstractmethod
    def syntax_problem(self, tree: Any) -> str | None:
        """Where ``tree`` fails to parse, or None."""

    @abstractmethod
    def bound_exprs(self, node: Node) -> list[Node]:
        """The boundary expressions of ``node`` (an index, a slice's bounds)."""

    @abstractmethod
    def op(self, node: Node) -> str | None:
        """The operator of an operator expression (or assignment), else None."""

    @abstractmethod
    def prec(self, node: Node) -> int:
        """Binding strength of an expression as written (higher binds tighter)."""

    @abstractmethod
    def operand(self, node: Node, op: str, side: str) -> str:
        """Source of ``node`` as the ``side`` operand of the binary ``op``, parenthesised if
        needed."""

    @abstractmethod
    def literal_shifts(self, node: Node, context: Node) -> Iterator[Edit]:
        """The integer literal ``node`` made one more and one less, quoting ``context``."""

    @abstractmethod
    def loop_condition(self, node: Node) -> Node:
        """The condition of a loop statement (or loop clause), else None."""

    # --- integer literals -----------------------------------------------------------------

    def int_literal(self, node: Node) -> int | None:
        """Value of a decimal integer literal ``k`` or ``-k``, else None."""
        if node is None:
            return None
        if node.type == self.integer_type:
            return int(node.text) if _DECIMAL.match(node.text) else None
        if node.type == "unary_expression" and self.op(node) == "-":
            operand = field(node, self.prefix_operand)
            if operand is not None and operand.type == self.integer_type:
                inner = self.int_literal(operand)
                return None if inner is None else -inner
        return None

    def is_term(self, node: Node) -> bool:
        """``e + c`` or ``e - c`` with an integer literal ``c``."""
        return (
            node is not None
            and node.type == "binary_expression"
            and self.op(node) in ("+", "-")
            and self.int_literal(field(node, "right")) is not None
        )

    # --- offsets and edits ----------------------------------------------------------------

    def char(self, offset: int) -> int:
        """The char offset of a byte offset."""
        return offset if self._chars is None else self._chars[offset]

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8")

    def between(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8")

    def edit(self, start: int, end: int, new: str, context: Node = None) -> Edit:
        """Replace bytes ``start:end`` by ``new``, described as "`old` -> `new`", quoting the
        ``context`` node when given."""
        if (
            self.spaced_negatives
            and new.startswith("-")
            and start
            and self.data[start - 1] in self.operator_chars
        ):
            new = " " + new
        if context is None:
            old, shown = self.between(start, end), new
        else:
            lo, hi = context.start_byte, context.end_byte
            old = self.between(lo, hi)
            shown = self.between(lo, start) + new + self.between(end, hi)
        return Edit(self.char(start), self.char(end), new, f"`{_short(old)}` -> `{_short(shown)}`")

    def replace_token(self, token: Node, new: str, context: Node = None) -> Edit:
        """``token`` replaced by the operator ``new``, blank-separated from a neighbouring
        operator character it would otherwise merge with."""
        before = self.data[token.start_byte - 1] if token.start_byte else None
        after = self.data[token.end_byte] if token.end_byte < len(self.data) else None
        text = (" " if before in self.operator_chars else "") + new
        text += " " if after in self.operator_chars else ""
        return self.edit(token.start_byte, token.end_byte, text, context)


C = TypeVar("C", bound=TreeContext)
TreeOperator = Callable[[Node, C], Iterator[Edit]]


@dataclass(frozen=True)
class TreeOperatorClass(Generic[C]):
    """One class of a language's table, shaped as :class:`..mutation.operators.OperatorClass`
    (what the selection and the fingerprint read): its operator functions, and whether it is
    one of the core classes."""

    functions: tuple[TreeOperator[C], ...]
    core: bool


# --- edits both languages make alike ------------------------------------------------------


def delete_lines(ctx: TreeContext, node: Node) -> Iterator[Edit]:
    """The whole lines of ``node`` deleted (described by its first line), if nothing else (bar
    a trailing ``//`` comment) is on them."""
    first = node.start_byte - node.start_point[1]
    newline = _NEWLINE.search(ctx.data, node.end_byte)
    last = newline.end() if newline else len(ctx.data)
    indent = ctx.data[first : node.start_byte]
    tail = ctx.data[node.end_byte : newline.start() if newline else last].strip()
    if indent.strip() or (tail and not tail.startswith(b"//")):
        return
    header = ctx.text(node).splitlines()[0]
    yield Edit(ctx.char(first), ctx.char(last), "", f"remove `{_short(header)}`")


def term_shifts(ctx: TreeContext, term: Node) -> Iterator[Edit]:
    """``e ± c`` shifted by +1 and -1 through ``c``; a zero term is dropped."""
    left, token, right = field(term, "left"), field(term, "operator"), field(term, "right")
    sign = 1 if token.type == "+" else -1
    signed = sign * (ctx.int_literal(right) or 0)
    for delta in (1, -1):
        value = signed + delta
        if value == 0:
            start = token.start_byte
            while start > left.end_byte and ctx.data[start - 1] in b" \t":
                start -= 1
            yield ctx.edit(start, right.end_byte, "", term)
        else:
            new_op = "+" if value > 0 else "-"
            spacing = ctx.between(token.end_byte, right.start_byte)
            yield ctx.edit(token.start_byte, right.end_byte, f"{new_op}{spacing}{abs(value)}", term)


def bound_shifts(ctx: TreeContext, bound: Node, context: Node) -> Iterator[Edit]:
    """A boundary expression moved by +1 and -1: a literal or ``e ± c`` shifted, else `` + 1``
    and `` - 1`` appended (parenthesising the bound when precedence requires)."""
    if ctx.int_literal(bound) is not None:
        yield from ctx.literal_shifts(bound, context)
    elif ctx.is_term(bound):
        yield from term_shifts(ctx, bound)
    elif bound.type not in ctx.protected:
        text = ctx.text(bound)
        text = f"({text})" if ctx.prec(bound) < ctx.add_prec else text
        for suffix in (" + 1", " - 1"):
            yield ctx.edit(bound.start_byte, bound.end_byte, text + suffix, context)


def drop_prefix(ctx: TreeContext, node: Node) -> Edit:
    """Delete a prefix operator token (and blanks after it), keeping any parentheses."""
    token, operand = field(node, "operator"), field(node, ctx.prefix_operand)
    end = token.end_byte
    while end < operand.start_byte and ctx.data[end] in b" \t":
        end += 1
    return ctx.edit(token.start_byte, end, "", node)


def negate(ctx: TreeContext, condition: Node) -> Edit:
    """``condition`` negated: ``!x`` -> ``x``, else ``x`` -> ``!x`` (``!(x)`` unless ``x`` binds
    as tightly as a unary operator)."""
    if condition.type == "unary_expression" and ctx.op(condition) == "!":
        return drop_prefix(ctx, condition)
    text = ctx.text(condition)
    new = f"!{text}" if ctx.prec(condition) >= ctx.unary_prec else f"!({text})"
    return ctx.edit(condition.start_byte, condition.end_byte, new)


def swap_pair(ctx: TreeContext, a: Node, b: Node) -> Iterator[Edit]:
    """``a`` and ``b`` (neighbours in one list) exchanged, unless either is ``unswappable`` or
    their texts are the same."""
    text_a, text_b = ctx.text(a), ctx.text(b)
    if a.type in ctx.unswappable or b.type in ctx.unswappable or text_a == text_b:
        return
    gap = ctx.between(a.end_byte, b.start_byte)
    description = f"swap `{_short(text_a)}` and `{_short(text_b)}`"
    yield Edit(ctx.char(a.start_byte), ctx.char(b.end_byte), text_b + gap + text_a, description)


def token_table(
    types: frozenset[str], table: dict[str, str], keep: Callable[[Node], bool] | None = None
) -> TreeOperator[TreeContext]:
    """An operator replacing the operator token of each node of ``types`` found in ``table``
    (where ``keep(node)``, when given, allows it)."""

    def operator(node: Node, ctx: TreeContext) -> Iterator[Edit]:
        op = ctx.op(node) if node.type in types else None
        if op in table and (keep is None or keep(node)):
            yield ctx.replace_token(field(node, "operator"), table[op])

    return operator


# --- operators both languages have alike --------------------------------------------------


def off_by_one(node: Node, ctx: TreeContext) -> Iterator[Edit]:
    """An integer literal (or the ``c`` of ``e ± c``) shifted by one, unless it is a bound
    (``off_by_one_boundary`` owns those)."""
    if ctx.int_literal(node) is None:
        return
    parent = node.parent
    if node.type == ctx.integer_type and ctx.int_literal(parent) is not None:
        return  # the `k` of `-k`: handled as the literal `-k`
    term = parent if ctx.is_term(parent) and field(parent, "right") == node else None
    if node.id in ctx.bounds or (term is not None and term.id in ctx.bounds):
        return  # owned by off_by_one_boundary
    if term is not None:
        yield from term_shifts(ctx, term)
    else:
        yield from ctx.literal_shifts(node, node)


def drop_unary_minus(node: Node, ctx: TreeContext) -> Iterator[Edit]:
    """``-x`` -> ``x`` (not a negative integer literal: ``off_by_one``'s)."""
    if node.type == "unary_expression" and ctx.op(node) == "-" and ctx.int_literal(node) is None:
        yield drop_prefix(ctx, node)


def swap_operands(node: Node, ctx: TreeContext) -> Iterator[Edit]:
    """The operands of a non-commutative binary operator exchanged, parenthesised by
    precedence."""
    op = ctx.op(node) if node.type == "binary_expression" else None
    if op not in ctx.non_commutative:
        return
    left, token, right = field(node, "left"), field(node, "operator"), field(node, "right")
    text_left, text_right = ctx.text(left), ctx.text(right)
    if text_left == text_right:
        return
    before = token.start_byte
    while before > left.end_byte and ctx.data[before - 1] in b" \t":
        before -= 1
    after = token.end_byte
    while after < right.start_byte and ctx.data[after] in b" \t":
        after += 1
    swapped = (
        ctx.operand(right, op, "left") + ctx.between(before, after) + ctx.operand(left, op, "right")
    )
    description = f"swap `{_short(text_left)}` and `{_short(text_right)}`"
    yield Edit(ctx.char(node.start_byte), ctx.char(node.end_byte), swapped, description)


def boolean_literal(node: Node, ctx: TreeContext) -> Iterator[Edit]:
    """``true <-> false``, except as the condition of a loop (a loop that never ends is no near
    miss)."""
    if node.type not in ("true", "false") or not node.is_named:
        return
    parent = node.parent
    if parent.type == "parenthesized_expression":
        parent = parent.parent
    condition = ctx.loop_condition(parent) if parent is not None else None
    if condition is not None and condition in (node, node.parent):
        return
    yield ctx.edit(node.start_byte, node.end_byte, "false" if node.type == "true" else "true")


# --- candidates ---------------------------------------------------------------------------


def generate_mutants(
    source: str,
    entry_point: str,
    shape: Callable[[str, str], tuple[str, ...] | None],
    edits: Callable[[str], list[Edit]],
    language: str,
    per_class: int | None = None,
) -> list[Mutant]:
    """Every valid single-edit mutant of ``source`` among its first :data:`MAX_CANDIDATES`
    tried ``edits(source)`` (:func:`..mutation.operators.distinct_mutants`), where
    ``shape(code, entry_point)`` is the language's ``valid_structure``. ``ValueError`` if
    ``source`` is not valid ``language`` or does not declare ``entry_point``."""
    canonical = shape(source, entry_point)
    if canonical is None:
        raise ValueError(f"source is not {language} declaring function {entry_point!r}")
    return distinct_mutants(
        source, edits(source), lambda code: shape(code, entry_point), canonical, per_class
    )


def tree_modules(*defining: object) -> tuple[ModuleType, ...]:
    """The modules a language's tree-sitter mutants come from: Python's
    (``fingerprint.MODULES``, whose helpers and selection they share), ``languages/trees.py``,
    this one, and the modules defining each of ``defining`` (the language's own)."""
    shared = (field, TreeContext)
    return (*fingerprint.MODULES, *(sys.modules[o.__module__] for o in (*shared, *defining)))
