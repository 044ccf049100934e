"""Single-edit mutation operators for JavaScript (ES2020), over the tree-sitter parse.

The JavaScript counterpart of :mod:`.operators`: an operator maps one tree-sitter node to its
mutated alternatives, each an :class:`~.operators.Edit` replacing a span of the ORIGINAL
source, computed from the nodes' byte spans (and stored, like Python's, as character offsets of
the source text); a mutant is that splice (never an unparse), re-parsed. The records are
Python's (:class:`~.operators.Mutant`, built by :func:`~.operators.build_mutant`), so the
build's selection, stacking and corpus take them unchanged; what JavaScript shares with Go of
this machinery is :mod:`..tree_mutation`. :data:`JS_OPERATORS` maps each class name to its
:class:`..tree_mutation.TreeOperatorClass`; the six core classes and the three polarity fillers
carry Python's names, so a class means the same bug in both languages, and the
JavaScript-specific classes follow StrykerJS's mutators (each class names the one it follows).

Core classes
------------
``off_by_one`` (Stryker: none; Python's class)
    A decimal integer literal (``-k`` is one literal; no ``0x``, ``1e3``, ``1.5``, ``07``,
    ``1n``, ``1_000``, nor an object key) becomes ``k + 1`` and ``k - 1``, written as a literal
    (parenthesised when negative as the base of ``**``). As the right operand of ``+``/``-``
    the signed term is shifted and a zero term dropped: ``n - 1`` -> ``n - 2`` / ``n``. Skips
    the literals ``off_by_one_boundary`` owns: a bound that is the literal itself or the ``c``
    of ``e ± c``.
``wrong_operator`` (Stryker: ArithmeticOperator, AssignmentOperator, LogicalOperator)
    One operator token replaced, binary or compound assignment (``+=`` ...): ``+ -> -``,
    ``- -> +``, ``* -> /``, ``/ -> *``, ``% -> *``, ``** -> *``, ``& -> |``, ``| -> &``,
    ``^ -> |``, ``<< -> >>``, ``>> -> <<``, ``>>> -> >>``; ``&& <-> ||``; unary minus dropped,
    ``-x`` -> ``x`` (integer literals excluded: they are ``off_by_one``'s).
``swap_arguments`` (Stryker: none; Python's class)
    Two adjacent arguments of a call exchanged (neither a spread, texts differ); or the
    operands of a non-commutative ``- / % ** << >> >>>`` exchanged, parenthesised by
    precedence (``a - b - c`` -> ``c - (a - b)``).
``remove_edge_case_check`` (Stryker: ConditionalExpression's ``if (false)``, as a deletion)
    An ``if`` without ``else``, not itself an ``else if``, directly in a block, a ``case`` or
    the program, whose body (or the block's last statement) is ``return``/``throw``/
    ``continue``/``break``, alone on its lines (a trailing ``//`` comment allowed): its lines
    are deleted. Works at any nesting.
``wrong_comparison`` (Stryker: EqualityOperator)
    ``== <-> !=``, ``=== <-> !==``, ``< <-> >``, ``<= <-> >=``.
``off_by_one_boundary`` (Stryker: EqualityOperator's ``<`` -> ``<=``)
    ``< <-> <=``, ``> <-> >=``; a subscript index ±1 when it is an integer literal or
    ``e ± c``; each of the first two arguments of ``.slice(...)``/``.substring(...)`` ±1. A
    bound is shifted like ``off_by_one`` for literals and ``e ± c``, else `` + 1``/`` - 1`` is
    appended (parenthesising the bound when precedence requires).

Polarity fillers
----------------
``negate_condition`` (Stryker: BooleanLiteral's ``!x`` -> ``x``, ConditionalExpression)
    The condition of ``if``/``while``/``do ... while``/ternary: ``x`` -> ``!x`` (``!(x)``
    unless ``x`` binds as tightly as a unary operator), ``!x`` -> ``x``. Constant conditions
    (``true``, ``false``, numbers, ``null``) are skipped.
``swap_min_max`` (Stryker: MethodExpression)
    ``Math.min(...) <-> Math.max(...)``.
``complement_comparison`` (Stryker: EqualityOperator)
    Logical complement of an order comparison: ``< <-> >=``, ``> <-> <=``.

JavaScript's own classes
------------------------
``strict_equality`` (Stryker: EqualityOperator, strictness instead of polarity)
    ``=== <-> ==``, ``!== <-> !=``: the coercing comparison where the strict one was meant,
    and back.
``let_scoping`` (Stryker: none; ``let`` written as the ``var`` of pre-ES2015 code)
    ``let`` -> ``var`` for a declaration inside a block (a nested block, a ``for`` head, a
    ``case``, a ``for ... of`` head; not a declaration at the top of a function body or the
    program, where both scope alike), whose names are plain identifiers none of which another
    lexical binding (``let``, ``const``, ``class``, a block-level ``function``, a ``catch``
    parameter) of the same function binds in a scope enclosing the declaration, so the hoisted
    ``var`` is no redeclaration error; and only where the change can show
    (:mod:`.js_scope`): a closure in a loop captures the name (one binding for all
    iterations), the name is used in the function outside the declaration's scope (a
    parameter or ``var`` it now overwrites, a read that now sees it), or a declaration without
    initializer sits in a loop (the ``var`` keeps the last iteration's value). Elsewhere the
    edit is equivalent and is not made.
``string_concatenation`` (Stryker: none; the operand of ArithmeticOperator's ``+``)
    ``+`` concatenating where it should add, or adding where it should concatenate: a
    conversion that is an operand of a binary ``+`` dropped (``String(e)``, ``e.toString()``,
    ``Number(e)``, ``parseInt(e)``/``parseInt(e, r)``, ``parseFloat(e)``, unary ``+e`` ->
    ``e``, parenthesised by precedence); the parentheses dropped from ``(x + y)`` as the right
    operand of a ``+`` whose left operand is a string (a string or template literal,
    ``String(...)``, ``.toString()``, or a ``+`` holding one): ``"n=" + (a + b)`` ->
    ``"n=" + a + b``.
``optional_chaining`` (Stryker: OptionalChaining)
    ``a?.b`` -> ``a.b``, ``a?.[i]`` -> ``a[i]``, ``f?.(x)`` -> ``f(x)``.
``nullish_coalescing`` (Stryker: LogicalOperator's ``??`` replacement, with ``||``)
    ``??`` -> ``||``: the falsy default where only ``null``/``undefined`` should be replaced
    (``0``, ``""`` and ``false`` now are too).
``update_operator`` (Stryker: UpdateOperator)
    ``x++ <-> x--``, ``++x <-> --x``.
``boolean_literal`` (Stryker: BooleanLiteral)
    ``true <-> false``, except as the condition of a ``while``/``do``/``for`` (a loop that
    never ends is no near miss).

Never touched: string, template and regular-expression literals (nothing inside a template
either), comments, parameter lists (defaults included), decorators.

Candidate validity (:func:`generate_js_mutants`): the mutant parses with no ``ERROR`` or
``MISSING`` node and no early error :func:`.early_error` knows, declares
``entry_point`` as a top-level function, its :func:`.structure` differs from the
canonical's and every earlier candidate's, and its line diff against the canonical is one hunk
(:func:`.operators.diff_blocks`); at most :data:`.operators.MAX_CANDIDATES` edits are tried.
Sizes as Python's (:func:`.operators.build_mutant`). An operator token is written with a blank
on a side where it would otherwise run into a neighbouring operator character (``a+-b`` ->
``a- -b``, not ``a--b``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from functools import partial
from types import ModuleType

from ...mutation import fingerprint
from ...mutation.operators import Edit, Mutant, ordered_edits
from ..tree_mutation import (
    BINARY,
    Node,
    TreeContext,
    TreeOperatorClass,
    boolean_literal,
    bound_shifts,
    delete_lines,
    drop_unary_minus,
    generate_mutants,
    negate,
    off_by_one,
    swap_operands,
    swap_pair,
    token_table,
    tree_modules,
)
from .scope import let_scoping
from .syntax import (
    early_error,
    field,
    grammar_versions,
    parse,
    structure,
    syntax_problem,
    top_level_functions,
)

__all__ = [
    "JS_CLASSES",
    "JS_CORE_CLASSES",
    "JS_MUTATION_FINGERPRINT",
    "JS_MUTATION_VERSION",
    "JS_OPERATORS",
    "JsContext",
    "generate_js_edits",
    "generate_js_mutants",
]

# Subtrees no operator touches.
_PROTECTED = frozenset(
    {"string", "template_string", "regex", "comment", "formal_parameters", "decorator"}
)
_OPERATOR_CHARS = frozenset(b"+-*/%&|^<>=!?~")


# --- helpers the operators share ----------------------------------------------------------

_field = field


def _op(node: Node) -> str | None:
    """The operator of a binary, compound-assignment, unary or update expression."""
    if node is None or node.type not in _OPERATED:
        return None
    token = _field(node, "operator")
    return token.type if token is not None else None


_OPERATED = frozenset(
    {
        "binary_expression",
        "augmented_assignment_expression",
        "unary_expression",
        "update_expression",
    }
)

# fmt: off
_BINARY_PREC = {
    "??": 3, "||": 3, "&&": 4, "|": 5, "^": 6, "&": 7,
    "==": 8, "!=": 8, "===": 8, "!==": 8,
    "<": 9, ">": 9, "<=": 9, ">=": 9, "instanceof": 9, "in": 9,
    "<<": 10, ">>": 10, ">>>": 10, "+": 11, "-": 11, "*": 12, "/": 12, "%": 12, "**": 13,
}
_LOW_PREC = {
    "sequence_expression": 0, "assignment_expression": 1, "augmented_assignment_expression": 1,
    "arrow_function": 1, "yield_expression": 1, "spread_element": 1, "ternary_expression": 2,
    "unary_expression": 14, "await_expression": 14, "update_expression": 15,
}
# fmt: on
_ADD_PREC, _UNARY_PREC, _ATOM_PREC = 11, 14, 17


def _prec(node: Node) -> int:
    """Binding strength of an expression as written (higher binds tighter)."""
    if node.type == "binary_expression":
        return _BINARY_PREC.get(_op(node) or "", 0)
    return _LOW_PREC.get(node.type, _ATOM_PREC)


def _arguments(call: Node) -> list[Node]:
    """The arguments of a call (none for a tagged template)."""
    arguments = _field(call, "arguments")
    if arguments is None or arguments.type != "arguments":
        return []
    return [a for a in arguments.named_children if a.type != "comment"]


def _method(call: Node) -> str | None:
    """``name`` of a call ``x.name(...)``, else None."""
    function = _field(call, "function") if call.type == "call_expression" else None
    if function is None or function.type != "member_expression":
        return None
    prop = _field(function, "property")
    return prop.text.decode("utf-8") if prop is not None else None


def _called_name(call: Node) -> str | None:
    """``name`` of a call ``name(...)``, else None."""
    function = _field(call, "function") if call.type == "call_expression" else None
    if function is None or function.type != "identifier":
        return None
    return function.text.decode("utf-8")


_SLICES = ("slice", "substring")


def _bound_exprs(node: Node) -> list[Node]:
    """Boundary expressions of a node: a subscript's index, a slice's first two arguments."""
    if node.type == "subscript_expression":
        index = _field(node, "index")
        return [index] if index is not None else []
    if _method(node) in _SLICES:
        return [a for a in _arguments(node)[:2] if a.type != "spread_element"]
    return []


_LOOPS = frozenset({"while_statement", "do_statement", "for_statement"})


class JsContext(TreeContext):
    """A parsed JavaScript source (:class:`..tree_mutation.TreeContext`) with JavaScript's
    grammar, and a memo the operators' analyses share (:mod:`.scope`)."""

    protected = _PROTECTED
    operator_chars = _OPERATOR_CHARS
    integer_type = "number"
    prefix_operand = "argument"
    unswappable = frozenset({"spread_element"})
    non_commutative = frozenset({"-", "/", "%", "**", "<<", ">>", ">>>"})
    add_prec, unary_prec = _ADD_PREC, _UNARY_PREC
    parse = staticmethod(parse)
    syntax_problem = staticmethod(syntax_problem)
    bound_exprs = staticmethod(_bound_exprs)
    op = staticmethod(_op)
    prec = staticmethod(_prec)

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.memo: dict[object, object] = {}

    def operand(self, node: Node, op: str, side: str) -> str:
        """Source of ``node`` as the ``side`` operand of the binary ``op``, parenthesised if
        needed (``**`` is right-associative and refuses a unary base)."""
        p, q = _prec(node), _BINARY_PREC[op]
        if op == "**":
            needs = p <= _UNARY_PREC if side == "left" else p < _UNARY_PREC
        else:
            needs = p < q if side == "left" else p <= q
        return f"({self.text(node)})" if needs else self.text(node)

    def literal_shifts(self, node: Node, context: Node) -> Iterator[Edit]:
        """An integer literal made one more and one less (parenthesised when negative as the
        base of ``**``)."""
        value = self.int_literal(node)
        assert value is not None
        parent = node.parent
        pow_base = _op(parent) == "**" and _field(parent, "left") == node
        for new in (value + 1, value - 1):
            text = f"({new})" if new < 0 and pow_base else str(new)
            yield self.edit(node.start_byte, node.end_byte, text, context)

    def loop_condition(self, node: Node) -> Node:
        return _field(node, "condition") if node.type in _LOOPS else None


# --- operators ----------------------------------------------------------------------------


def _off_by_one(node: Node, ctx: JsContext) -> Iterator[Edit]:
    parent = node.parent
    if parent is not None and parent.type == "pair" and _field(parent, "key") == node:
        return  # an object key
    yield from off_by_one(node, ctx)


# fmt: off
_WRONG_BINARY = {
    "+": "-", "-": "+", "*": "/", "/": "*", "%": "*", "**": "*", "&": "|", "|": "&", "^": "|",
    "<<": ">>", ">>": "<<", ">>>": ">>", "&&": "||", "||": "&&",
}
# fmt: on
_wrong_binary = token_table(BINARY, _WRONG_BINARY)
_wrong_compound = token_table(
    frozenset({"augmented_assignment_expression"}),
    {f"{old}=": f"{new}=" for old, new in _WRONG_BINARY.items() if old not in ("&&", "||")},
)


def _swap_call_args(node: Node, ctx: JsContext) -> Iterator[Edit]:
    if node.type not in ("call_expression", "new_expression"):
        return
    arguments = _arguments(node)
    for a, b in zip(arguments, arguments[1:]):
        yield from swap_pair(ctx, a, b)


_EARLY_EXITS = frozenset(
    {"return_statement", "throw_statement", "continue_statement", "break_statement"}
)
_BLOCKS = frozenset({"statement_block", "program", "switch_case", "switch_default"})


def _remove_guard(node: Node, ctx: JsContext) -> Iterator[Edit]:
    if node.type != "if_statement" or _field(node, "alternative") is not None:
        return
    if node.parent is None or node.parent.type not in _BLOCKS:
        return  # an `else if`, or the unbraced body of a loop or another `if`
    body = _field(node, "consequence")
    if body is not None and body.type == "statement_block":
        statements = [s for s in body.named_children if s.type != "comment"]
        body = statements[-1] if statements else None
    if body is not None and body.type in _EARLY_EXITS:
        yield from delete_lines(ctx, node)


# fmt: off
_WRONG_COMPARISON = {
    "==": "!=", "!=": "==", "===": "!==", "!==": "===", "<": ">", ">": "<", "<=": ">=", ">=": "<=",
}
# fmt: on
_BOUNDARY_COMPARISON = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
_COMPLEMENT_COMPARISON = {"<": ">=", ">=": "<", ">": "<=", "<=": ">"}
_STRICT_EQUALITY = {"===": "==", "==": "===", "!==": "!=", "!=": "!=="}


def _shift_bounds(node: Node, ctx: JsContext) -> Iterator[Edit]:
    if node.type == "subscript_expression":
        index = _field(node, "index")
        if ctx.int_literal(index) is not None or ctx.is_term(index):
            yield from bound_shifts(ctx, index, node)
    elif _method(node) in _SLICES:
        for bound in _bound_exprs(node):
            yield from bound_shifts(ctx, bound, node)


_CONSTANTS = frozenset({"true", "false", "number", "null", "undefined"})
_CONDITIONED = frozenset({"if_statement", "while_statement", "do_statement", "ternary_expression"})


def _condition(node: Node) -> Node:
    """The condition expression of an ``if``/``while``/``do``/ternary (inside its parentheses)."""
    if node.type not in _CONDITIONED:
        return None
    condition = _field(node, "condition")
    if condition is not None and condition.type == "parenthesized_expression":
        inner = [c for c in condition.named_children if c.type != "comment"]
        condition = inner[0] if len(inner) == 1 else None
    return condition


def _negate_condition(node: Node, ctx: JsContext) -> Iterator[Edit]:
    condition = _condition(node)
    if condition is not None and condition.type not in _CONSTANTS:
        yield negate(ctx, condition)


def _swap_min_max(node: Node, ctx: JsContext) -> Iterator[Edit]:
    name = _method(node)
    if name not in ("min", "max"):
        return
    function = _field(node, "function")
    receiver = _field(function, "object")
    if receiver.type == "identifier" and receiver.text == b"Math":
        prop = _field(function, "property")
        yield ctx.edit(prop.start_byte, prop.end_byte, "max" if name == "min" else "min")


_STRING_CONVERSIONS = ("String",)
_NUMBER_CONVERSIONS = ("Number", "parseFloat")


def _converted(node: Node) -> Node:
    """``e`` of a conversion ``String(e)``, ``e.toString()``, ``Number(e)``, ``parseInt(e)``
    (or ``parseInt(e, r)``), ``parseFloat(e)``, ``+e``; else None."""
    if node.type == "unary_expression" and _op(node) == "+":
        return _field(node, "argument")
    if node.type != "call_expression":
        return None
    arguments = _arguments(node)
    if any(a.type == "spread_element" for a in arguments):
        return None
    name = _called_name(node)
    if (name in (*_STRING_CONVERSIONS, *_NUMBER_CONVERSIONS) and len(arguments) == 1) or (
        name == "parseInt" and len(arguments) in (1, 2)
    ):
        return arguments[0]
    if _method(node) == "toString" and not arguments and _field(node, "optional_chain") is None:
        return _field(_field(node, "function"), "object")
    return None


def _string_typed(node: Node) -> bool:
    """A string or template literal, ``String(...)``, ``.toString()``, or a ``+`` holding one."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("string", "template_string"):
            return True
        if _called_name(current) in _STRING_CONVERSIONS or _method(current) == "toString":
            return True
        if current.type == "binary_expression" and _op(current) == "+":
            stack += [_field(current, "left"), _field(current, "right")]
        elif current.type == "parenthesized_expression":
            stack += [c for c in current.named_children if c.type != "comment"]
    return False


def _string_concatenation(node: Node, ctx: JsContext) -> Iterator[Edit]:
    parent = node.parent
    if parent is None or parent.type != "binary_expression" or _op(parent) != "+":
        return
    side = "left" if _field(parent, "left") == node else "right"
    inner = _converted(node)
    if inner is not None:
        yield ctx.edit(node.start_byte, node.end_byte, ctx.operand(inner, "+", side), node)
        return
    if side == "right" and node.type == "parenthesized_expression":
        contents = [c for c in node.named_children if c.type != "comment"]
        if (
            len(contents) == 1
            and _op(contents[0]) == "+"
            and contents[0].type == ("binary_expression")
        ):
            if _string_typed(_field(parent, "left")):
                yield ctx.edit(node.start_byte, node.end_byte, ctx.text(contents[0]), parent)


def _optional_chaining(node: Node, ctx: JsContext) -> Iterator[Edit]:
    chain = _field(node, "optional_chain")
    if chain is None:
        return
    new = "." if node.type == "member_expression" else ""
    yield ctx.edit(chain.start_byte, chain.end_byte, new, node)


_nullish_coalescing = token_table(BINARY, {"??": "||"})
_update_operator = token_table(frozenset({"update_expression"}), {"++": "--", "--": "++"})


# The operator table. Its order decides which class keeps an edit two classes produce alike
# (the earlier one) and the order classes are listed in reports. Changing what it generates
# means bumping JS_MUTATION_VERSION below (see `js_mutation_version`).
JS_OPERATORS: dict[str, TreeOperatorClass[JsContext]] = {
    "off_by_one": TreeOperatorClass((_off_by_one,), core=True),
    "wrong_operator": TreeOperatorClass(
        (_wrong_binary, _wrong_compound, drop_unary_minus), core=True
    ),
    "swap_arguments": TreeOperatorClass((_swap_call_args, swap_operands), core=True),
    "remove_edge_case_check": TreeOperatorClass((_remove_guard,), core=True),
    "wrong_comparison": TreeOperatorClass((token_table(BINARY, _WRONG_COMPARISON),), core=True),
    "off_by_one_boundary": TreeOperatorClass(
        (token_table(BINARY, _BOUNDARY_COMPARISON), _shift_bounds), core=True
    ),
    "negate_condition": TreeOperatorClass((_negate_condition,), core=False),
    "swap_min_max": TreeOperatorClass((_swap_min_max,), core=False),
    "complement_comparison": TreeOperatorClass(
        (token_table(BINARY, _COMPLEMENT_COMPARISON),), core=False
    ),
    "strict_equality": TreeOperatorClass((token_table(BINARY, _STRICT_EQUALITY),), core=False),
    "let_scoping": TreeOperatorClass((let_scoping,), core=False),
    "string_concatenation": TreeOperatorClass((_string_concatenation,), core=False),
    "optional_chaining": TreeOperatorClass((_optional_chaining,), core=False),
    "nullish_coalescing": TreeOperatorClass((_nullish_coalescing,), core=False),
    "update_operator": TreeOperatorClass((_update_operator,), core=False),
    "boolean_literal": TreeOperatorClass((boolean_literal,), core=False),
}
JS_CLASSES: tuple[str, ...] = tuple(JS_OPERATORS)
JS_CORE_CLASSES: tuple[str, ...] = tuple(n for n, c in JS_OPERATORS.items() if c.core)

# What generated the JavaScript mutants: a JavaScript corpus records it. Bump it when a change
# to this module, syntax.py, scope.py, languages/trees.py, languages/tree_mutation.py, the shared
# helpers of operators.py, select.py, stacking.py or the grammar's versions changes the mutants
# or their selection; either way record the new `js_fingerprint()` in JS_MUTATION_FINGERPRINT
# (tests/test_js_mutation.py prints it).
JS_MUTATION_VERSION = "1"
JS_MUTATION_FINGERPRINT = "c3251a88d787dbdfc916ab24cd4db1345eb17c2bd0e9adda5c987c0200be1b15"


# --- candidates ---------------------------------------------------------------------------


def generate_js_edits(
    source: str, table: dict[str, TreeOperatorClass[JsContext]] | None = None
) -> list[Edit]:
    """Every raw single-edit candidate (not yet validated) of the classes of ``table`` (default
    :data:`JS_OPERATORS`), ordered by position, class (table order), text; an edit two classes
    make alike is the earlier class's. ``ValueError`` if ``source`` does not parse."""
    return ordered_edits(JsContext(source), JS_OPERATORS if table is None else table)


def valid_structure(code: str, entry_point: str) -> tuple[str, ...] | None:
    """:func:`.structure` of code that parses (no ``ERROR``/``MISSING``, no known
    early error) and declares ``entry_point`` as a top-level function, else None."""
    tree = parse(code)
    if syntax_problem(tree) or early_error(tree):
        return None
    if entry_point not in top_level_functions(tree):
        return None
    return structure(tree)


def generate_js_mutants(
    source: str,
    entry_point: str,
    table: dict[str, TreeOperatorClass[JsContext]] | None = None,
    per_class: int | None = None,
) -> list[Mutant]:
    """Every valid single-edit mutant of ``source`` among its first :data:`MAX_CANDIDATES`
    tried edits, in :func:`generate_js_edits` order (``per_class``: as
    :func:`.operators.generate_mutants`). ``ValueError`` if ``source`` is not valid or does
    not declare ``entry_point``."""
    edits = partial(generate_js_edits, table=table)
    return generate_mutants(source, entry_point, valid_structure, edits, "JavaScript", per_class)


def js_modules() -> tuple[ModuleType, ...]:
    """The modules JavaScript mutants come from: :func:`..tree_mutation.tree_modules`'s (Python's,
    ``languages/trees.py``, ``languages/tree_mutation.py``), ``syntax.py``, ``scope.py`` and
    this one."""
    return tree_modules(parse, let_scoping, JsContext)  # syntax.py's, scope.py's, this one's


def js_fingerprint() -> str:
    """sha256 over the fingerprints of :func:`js_modules`, the live :data:`JS_OPERATORS` table
    and the parser's and grammar's versions (``fingerprint.language_fingerprint``)."""
    module = sys.modules[__name__]
    return fingerprint.language_fingerprint(js_modules(), JS_OPERATORS, module, grammar_versions())


def js_mutation_version() -> str:
    """What a JavaScript corpus records: :data:`JS_MUTATION_VERSION` while the code and grammar
    match :data:`JS_MUTATION_FINGERPRINT`, else ``"<JS_MUTATION_VERSION>+unrecorded-<12 hex>"``."""
    return fingerprint.recorded_version(
        JS_MUTATION_VERSION, JS_MUTATION_FINGERPRINT, js_fingerprint()
    )
