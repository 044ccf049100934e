"""Single-edit mutation operators for Go, over the tree-sitter parse (:mod:`.syntax`).

The Go counterpart of :mod:`..javascript.mutation`, built the same way: an operator maps one
tree-sitter node to its mutated alternatives, each an :class:`~...mutation.operators.Edit`
replacing a span of the ORIGINAL source (character offsets, computed from the nodes' byte
spans); a mutant is that splice, re-parsed. The records are Python's
(:class:`~...mutation.operators.Mutant`), so the build's selection, stacking and corpus take
them unchanged; what Go shares with JavaScript of this machinery is :mod:`..tree_mutation`.
:data:`GO_OPERATORS` maps each class name to its :class:`..tree_mutation.TreeOperatorClass`;
the six core classes and the three polarity fillers carry Python's names, so a class means the
same bug in every language, and the Go-specific classes follow the JavaScript module's (each
names its model).

A mutant is valid Go syntax, not necessarily well-typed Go (``-`` between two string variables,
an index past a fixed-size array, arguments of two types swapped): the runner reports a compile
error and the build drops it (about 3% of the bundled items' mutants). Cheap rules avoid the
obvious ones: no ``+`` -> ``-`` where an operand is a string (a string literal,
``string(...)``, a string-returning call of ``strconv``/``fmt``/``strings``, ``.String()``, a
``+`` holding one), no constant divisor made ``0``, no negative constant index, slice bound,
shift count or ``make`` size, no argument swap with a type or the first argument of
``make``/``new``/``append``, no duplicate constant ``case``, no guard removed whose variable is
then unread.

Core classes
------------
``off_by_one`` (JavaScript's, Python's class)
    A decimal integer literal (``-k`` is one literal; no ``0x``, ``1e3``, ``1.5``, ``07``,
    ``1_000``) becomes ``k + 1`` and ``k - 1``, written as a literal. As the right operand of
    ``+``/``-`` the signed term is shifted and a zero term dropped: ``n - 1`` -> ``n - 2`` /
    ``n``. Skips the literals ``off_by_one_boundary`` owns: a bound that is the literal itself
    or the ``c`` of ``e ± c``.
``wrong_operator`` (JavaScript's)
    One operator token replaced, binary or compound assignment (``+=`` ...): ``+ -> -``,
    ``- -> +``, ``* -> /``, ``/ -> *``, ``% -> *``, ``& -> |``, ``| -> &``, ``^ -> |``,
    ``&^ -> &``, ``<< -> >>``, ``>> -> <<``; ``&& <-> ||``; unary minus dropped, ``-x`` ->
    ``x`` (integer literals excluded: they are ``off_by_one``'s).
``swap_arguments`` (JavaScript's)
    Two adjacent arguments of a call exchanged (neither ``xs...`` nor a type, texts differ);
    the operands of a non-commutative ``- / % << >> &^`` exchanged, parenthesised by
    precedence (``a - b - c`` -> ``c - (a - b)``); two adjacent values of a ``return`` or of
    the right side of a multiple assignment exchanged (``a, b = b, a + b`` ->
    ``a, b = a + b, b``; not ``nil``).
``remove_edge_case_check`` (JavaScript's)
    An ``if`` without ``else``, not itself an ``else if``, whose block's last statement is
    ``return``/``break``/``continue``/``goto`` or a ``panic(...)`` call, alone on its lines:
    its lines are deleted, unless a local variable it reads is read nowhere else (Go refuses
    an unused variable). Works at any nesting (blocks and ``case`` clauses).
``wrong_comparison`` (JavaScript's)
    ``== <-> !=``, ``< <-> >``, ``<= <-> >=``.
``off_by_one_boundary`` (JavaScript's)
    ``< <-> <=``, ``> <-> >=``; an index ±1 when it is an integer literal or ``e ± c``; each
    bound of a slice expression ``s[lo:hi]`` ±1. A bound is shifted like ``off_by_one`` for
    literals and ``e ± c``, else `` + 1``/`` - 1`` is appended (parenthesising the bound when
    precedence requires).

Polarity fillers
----------------
``negate_condition`` (JavaScript's)
    The condition of an ``if`` (after its initializer) or a ``for``: ``x`` -> ``!x``
    (``!(x)`` unless ``x`` binds as tightly as a unary operator), ``!x`` -> ``x``. Constant
    conditions (``true``, ``false``) are skipped.
``swap_min_max`` (JavaScript's)
    ``math.Min(...) <-> math.Max(...)``; the built-ins ``min(...) <-> max(...)`` where the code
    declares no top-level function of either name.
``complement_comparison`` (JavaScript's)
    Logical complement of an order comparison: ``< <-> >=``, ``> <-> <=``.

Go's own classes
----------------
``shadowing`` (JavaScript's ``let_scoping``: a scope bug; the one ``go vet``'s shadow analyzer
looks for)
    ``=`` -> ``:=`` where that declares new variables in an inner scope instead of assigning
    the outer ones: an assignment of plain names (``_`` aside) directly in a nested block or a
    ``case`` (not the function's own body, where the names are its parameters' or its own),
    none of them declared earlier in that block, each read later in it (else Go refuses the
    unused variable); or the initializer of a ``for`` clause (``for i = 0; ...`` -> ``for i :=
    0; ...``: the loop no longer moves the outer ``i``), each name read by the loop. Only where
    the change can show: each outer variable is read after the block (or loop), or elsewhere
    in a loop around it.
``update_operator`` (JavaScript's)
    ``x++ <-> x--``.
``boolean_literal`` (JavaScript's)
    ``true <-> false``, except as the condition of a ``for`` (a loop that never ends is no near
    miss).

JavaScript's classes that Go lacks the construct for: ``strict_equality`` (no ``===``),
``let_scoping`` (no ``var`` hoisting; ``shadowing`` is its Go bug), ``string_concatenation``
(no implicit conversion), ``optional_chaining`` and ``nullish_coalescing`` (no ``?.``, ``??``).

Never touched: string, raw-string and rune literals, comments, imports, types (a type
declaration, an array length, a conversion's type, a composite literal's type), parameter and
result lists.

Candidate validity (:func:`generate_go_mutants`): the mutant parses with no ``ERROR`` or
``MISSING`` node, declares ``entry_point`` as a top-level function, its :func:`.syntax.structure`
differs from the canonical's and every earlier candidate's, and its line diff against the
canonical is one hunk (:func:`...mutation.operators.diff_blocks`); at most
:data:`...mutation.operators.MAX_CANDIDATES` edits are tried. An operator token or a negative
literal is written with a blank on a side where it would otherwise run into a neighbouring
operator character (``a+-b`` -> ``a- -b``, ``a<0`` -> ``a< -1``).
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
from .syntax import field as _field
from .syntax import grammar_versions, parse, structure, syntax_problem, top_level_functions, walk

__all__ = [
    "GO_CLASSES",
    "GO_CORE_CLASSES",
    "GO_MUTATION_FINGERPRINT",
    "GO_MUTATION_VERSION",
    "GO_OPERATORS",
    "GoContext",
    "generate_go_edits",
    "generate_go_mutants",
    "go_fingerprint",
    "go_modules",
    "go_mutation_version",
    "valid_structure",
]

# Subtrees no operator touches: literals of text, comments, imports, types, signatures.
_PROTECTED = frozenset(
    {
        "interpreted_string_literal",
        "raw_string_literal",
        "rune_literal",
        "comment",
        "import_declaration",
        "package_clause",
        "parameter_list",
        "type_parameter_list",
        "type_arguments",
        "type_declaration",
        "array_type",
        "implicit_length_array_type",
        "slice_type",
        "map_type",
        "pointer_type",
        "channel_type",
        "function_type",
        "struct_type",
        "interface_type",
        "generic_type",
        "qualified_type",
        "parenthesized_type",
        "negated_type",
    }
)
_TYPES = _PROTECTED - {"comment", "import_declaration", "package_clause", "parameter_list"}
_OPERATOR_CHARS = frozenset(b"+-*/%&|^<>=!:~")


# --- helpers the operators share ----------------------------------------------------------


_OPERATED = frozenset({"binary_expression", "unary_expression", "assignment_statement"})
_UPDATES = {"inc_statement": "++", "dec_statement": "--"}


def _op(node: Node) -> str | None:
    """The operator of a binary or unary expression or an assignment (``=``, ``+=`` ...)."""
    if node is None or node.type not in _OPERATED:
        return None
    token = _field(node, "operator")
    return token.type if token is not None else None


# fmt: off
_BINARY_PREC = {
    "||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
    "+": 4, "-": 4, "|": 4, "^": 4, "*": 5, "/": 5, "%": 5, "<<": 5, ">>": 5, "&": 5, "&^": 5,
}
# fmt: on
_ADD_PREC, _UNARY_PREC, _ATOM_PREC = 4, 6, 7


def _prec(node: Node) -> int:
    """Binding strength of an expression as written (higher binds tighter)."""
    if node.type == "binary_expression":
        return _BINARY_PREC.get(_op(node) or "", 0)
    return _UNARY_PREC if node.type == "unary_expression" else _ATOM_PREC


def _values(node: Node) -> list[Node]:
    """The named children of a list node (arguments, expression list), comments left out."""
    return [] if node is None else [c for c in node.named_children if c.type != "comment"]


def _called(call: Node) -> str | None:
    """``name`` of a call ``name(...)`` or ``pkg.name(...)`` (as ``"pkg.name"``), else None."""
    function = _field(call, "function") if call.type == "call_expression" else None
    if function is None:
        return None
    if function.type == "identifier":
        return function.text.decode("utf-8")
    if function.type == "selector_expression":
        operand, name = _field(function, "operand"), _field(function, "field")
        if operand.type == "identifier":
            return f"{operand.text.decode('utf-8')}.{name.text.decode('utf-8')}"
    return None


def _method(call: Node) -> str | None:
    """``name`` of a call ``x.name(...)``, else None."""
    function = _field(call, "function") if call.type == "call_expression" else None
    if function is None or function.type != "selector_expression":
        return None
    return _field(function, "field").text.decode("utf-8")


def _bound_exprs(node: Node) -> list[Node]:
    """Boundary expressions of a node: an index expression's index, a slice's bounds."""
    if node.type == "index_expression":
        index = _field(node, "index")
        return [index] if index is not None else []
    if node.type == "slice_expression":
        return [b for b in (_field(node, "start"), _field(node, "end")) if b is not None]
    return []


def _nonnegative(node: Node) -> bool:
    """Whether ``node`` is where Go refuses a negative constant: an index or slice bound, a
    shift count, a ``make`` size."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type in ("index_expression", "slice_expression"):
        return node in _bound_exprs(parent)
    if parent.type == "binary_expression" and _op(parent) in ("<<", ">>"):
        return _field(parent, "right") == node
    if parent.type == "argument_list":
        return _called(parent.parent) == "make"
    return False


def _divisor(node: Node) -> bool:
    """Whether ``node`` is the right operand of ``/`` or ``%`` (or ``/=``, ``%=``)."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "expression_list" and _op(parent.parent) in ("/=", "%="):
        return _field(parent.parent, "right") == parent
    return _op(parent) in ("/", "%") and _field(parent, "right") == node


def _case_values(ctx: GoContext, node: Node) -> set[int]:
    """The integer literals of the ``case`` lists of the switch whose case ``node`` is a value
    of (a duplicate constant case does not compile), else none."""
    case = node.parent.parent if node.parent is not None else None
    if case is None or case.type != "expression_case" or node.parent != _field(case, "value"):
        return set()
    values: set[int] = set()
    for other in case.parent.named_children:
        if other.type == "expression_case":
            found = (ctx.int_literal(v) for v in _values(_field(other, "value")))
            values.update(v for v in found if v is not None)
    return values


_ASSIGNMENT = frozenset({"assignment_statement"})

# Calls whose result is a string: a `+` beside one concatenates.
_STRING_CALLS = frozenset(
    {"string", "strconv.Itoa", "strconv.FormatInt", "strconv.Quote"}
    | {f"fmt.{name}" for name in ("Sprint", "Sprintf", "Sprintln")}
    | {
        f"strings.{name}"
        for name in (
            "Join", "Repeat", "Replace", "ReplaceAll", "ToLower", "ToUpper", "Title", "Trim",
            "TrimLeft", "TrimRight", "TrimPrefix", "TrimSuffix", "TrimSpace", "Map",
        )
    }
)  # fmt: skip


def _string_typed(node: Node) -> bool:
    """A string literal, a call in :data:`_STRING_CALLS`, ``.String()``, or a ``+`` holding
    one."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("interpreted_string_literal", "raw_string_literal"):
            return True
        if _called(current) in _STRING_CALLS or _method(current) == "String":
            return True
        if current.type == "binary_expression" and _op(current) == "+":
            stack += [_field(current, "left"), _field(current, "right")]
        elif current.type == "parenthesized_expression":
            stack += _values(current)
    return False


def _numeric_plus(node: Node) -> bool:
    """Not a ``+`` (or ``+=``) on strings, as far as the operands show."""
    if node.type == "binary_expression":
        return _op(node) != "+" or not (
            _string_typed(_field(node, "left")) or _string_typed(_field(node, "right"))
        )
    return _op(node) != "+=" or not any(_string_typed(v) for v in _values(_field(node, "right")))


class GoContext(TreeContext):
    """A parsed Go source (:class:`..tree_mutation.TreeContext`) with Go's grammar, and the
    names of its top-level functions."""

    protected = _PROTECTED
    operator_chars = _OPERATOR_CHARS
    spaced_negatives = True
    integer_type = "int_literal"
    prefix_operand = "operand"
    unswappable = frozenset({"variadic_argument", "nil", *_TYPES})  # `xs...`, nil, a type
    non_commutative = frozenset({"-", "/", "%", "<<", ">>", "&^"})
    add_prec, unary_prec = _ADD_PREC, _UNARY_PREC
    parse = staticmethod(parse)
    syntax_problem = staticmethod(syntax_problem)
    bound_exprs = staticmethod(_bound_exprs)
    op = staticmethod(_op)
    prec = staticmethod(_prec)

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.functions = top_level_functions(self.tree)

    def operand(self, node: Node, op: str, side: str) -> str:
        """Source of ``node`` as the ``side`` operand of the binary ``op`` (every Go binary
        operator is left-associative), parenthesised if needed."""
        p, q = _prec(node), _BINARY_PREC[op]
        needs = p < q if side == "left" else p <= q
        return f"({self.text(node)})" if needs else self.text(node)

    def literal_shifts(self, node: Node, context: Node) -> Iterator[Edit]:
        """An integer literal made one more and one less (not a negative constant where Go
        refuses one, a constant divisor ``0`` or a duplicate constant ``case``)."""
        value = self.int_literal(node)
        assert value is not None
        cases = _case_values(self, node)
        for new in (value + 1, value - 1):
            if (new < 0 and _nonnegative(node)) or (new == 0 and _divisor(node)) or new in cases:
                continue
            yield self.edit(node.start_byte, node.end_byte, str(new), context)

    def loop_condition(self, node: Node) -> Node:
        return _condition(node) if node.type in ("for_statement", "for_clause") else None


# --- operators ----------------------------------------------------------------------------


# fmt: off
_WRONG_BINARY = {
    "+": "-", "-": "+", "*": "/", "/": "*", "%": "*", "&": "|", "|": "&", "^": "|", "&^": "&",
    "<<": ">>", ">>": "<<", "&&": "||", "||": "&&",
}
# fmt: on
_wrong_binary = token_table(BINARY, _WRONG_BINARY, _numeric_plus)
_wrong_compound = token_table(
    _ASSIGNMENT,
    {f"{old}=": f"{new}=" for old, new in _WRONG_BINARY.items() if old not in ("&&", "||")},
    _numeric_plus,
)


# The first argument of these built-ins is special (a type, the slice appended to).
_FIRST_SPECIAL = frozenset({"make", "new", "append"})


def _swap_call_args(node: Node, ctx: GoContext) -> Iterator[Edit]:
    if node.type != "call_expression":
        return
    arguments = _values(_field(node, "arguments"))
    if _called(node) in _FIRST_SPECIAL:
        arguments = arguments[1:]
    for a, b in zip(arguments, arguments[1:]):
        yield from swap_pair(ctx, a, b)


def _swap_values(node: Node, ctx: GoContext) -> Iterator[Edit]:
    if node.type == "return_statement":
        lists = [c for c in node.named_children if c.type == "expression_list"]
        values = _values(lists[0]) if lists else []
    elif node.type in ("assignment_statement", "short_var_declaration"):
        if node.type == "assignment_statement" and _op(node) != "=":
            return
        values = _values(_field(node, "right"))
        if len(values) != len(_values(_field(node, "left"))):
            return
    else:
        return
    for a, b in zip(values, values[1:]):
        yield from swap_pair(ctx, a, b)


_EARLY_EXITS = frozenset(
    {"return_statement", "break_statement", "continue_statement", "goto_statement"}
)


def _exits(statement: Node) -> bool:
    """``return``, ``break``, ``continue``, ``goto`` or a ``panic(...)`` call."""
    if statement.type in _EARLY_EXITS:
        return True
    calls = _values(statement) if statement.type == "expression_statement" else []
    return len(calls) == 1 and _called(calls[0]) == "panic"


def _statements(block: Node) -> list[Node]:
    """The statements of a block, in order."""
    lists = [c for c in block.named_children if c.type == "statement_list"]
    return _values(lists[0]) if lists else []


def _leaves_unused(statement: Node) -> bool:
    """Whether deleting ``statement`` leaves a local variable of its function unread (which
    Go refuses): one it reads, declared by ``:=``, ``var`` or ``range`` outside it."""
    function = statement.parent
    while function is not None and function.type not in _FUNCTIONS:
        function = function.parent
    if function is None:
        return False
    local: set[str] = set()
    for node in walk(function):
        if node.type == "range_clause":
            local.update(_names(_field(node, "left")) or ())
        elif node.id != statement.id:
            local.update(_declared(node))
    read = {
        node.text.decode("utf-8")
        for node in walk(statement)
        if node.type == "identifier" and _read([node], node.text.decode("utf-8"))
    }
    return any(not _read([function], name, statement) for name in read & local)


def _remove_guard(node: Node, ctx: GoContext) -> Iterator[Edit]:
    if node.type != "if_statement" or _field(node, "alternative") is not None:
        return
    if node.parent is None or node.parent.type != "statement_list":
        return  # an `else if`
    statements = _statements(_field(node, "consequence"))
    if statements and _exits(statements[-1]) and not _leaves_unused(node):
        yield from delete_lines(ctx, node)


# fmt: off
_WRONG_COMPARISON = {"==": "!=", "!=": "==", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
# fmt: on
_BOUNDARY_COMPARISON = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
_COMPLEMENT_COMPARISON = {"<": ">=", ">=": "<", ">": "<=", "<=": ">"}


def _shift_bounds(node: Node, ctx: GoContext) -> Iterator[Edit]:
    if node.type == "index_expression":
        index = _field(node, "index")
        if ctx.int_literal(index) is not None or ctx.is_term(index):
            yield from bound_shifts(ctx, index, node)
    elif node.type == "slice_expression":
        for bound in _bound_exprs(node):
            yield from bound_shifts(ctx, bound, node)


_CONSTANTS = frozenset({"true", "false"})
_LOOP_HEADS = frozenset({"for_clause", "range_clause", "block", "comment"})


def _condition(node: Node) -> Node:
    """The condition of an ``if`` or a ``for`` (a ``for`` clause's, or the bare one of
    ``for cond { ... }``), else None."""
    if node.type in ("if_statement", "for_clause"):
        return _field(node, "condition")
    if node.type == "for_statement":
        bare = [c for c in node.named_children if c.type not in _LOOP_HEADS]
        return bare[0] if len(bare) == 1 else None
    return None


def _negate_condition(node: Node, ctx: GoContext) -> Iterator[Edit]:
    condition = _condition(node)
    if condition is not None and condition.type not in _CONSTANTS:
        yield negate(ctx, condition)


_MIN_MAX = {"min": "max", "max": "min", "Min": "Max", "Max": "Min"}


def _swap_min_max(node: Node, ctx: GoContext) -> Iterator[Edit]:
    name = _called(node)
    if name in ("math.Min", "math.Max"):
        target = _field(_field(node, "function"), "field")
    elif name in ("min", "max") and not ctx.functions & {"min", "max"}:
        target = _field(node, "function")
    else:
        return
    yield ctx.edit(target.start_byte, target.end_byte, _MIN_MAX[target.text.decode("utf-8")])


def _names(node: Node) -> list[str] | None:
    """The names an expression list holds (``_`` left out), or None unless all are plain
    identifiers."""
    values = _values(node)
    if any(v.type != "identifier" for v in values):
        return None
    return [t for v in values if (t := v.text.decode("utf-8")) != "_"]


def _declared(statement: Node) -> set[str]:
    """The names a statement declares in its own block (``:=``, ``var``, ``const``)."""
    if statement.type == "short_var_declaration":
        return set(_names(_field(statement, "left")) or ())
    if statement.type in ("var_declaration", "const_declaration"):
        return {
            n.text.decode("utf-8")
            for spec in walk(statement)
            if spec.type in ("var_spec", "const_spec")
            for n in spec.children_by_field_name("name")
        }
    return set()


_BINDINGS = frozenset({"assignment_statement", "short_var_declaration", "range_clause"})


def _read(nodes: list[Node], name: str, skip: Node = None) -> bool:
    """Whether ``nodes`` (but not the subtree ``skip``) read ``name``: an identifier of that
    text that is neither declared there nor a target of an assignment or ``++``/``--`` (which
    Go does not count as a use), or a bare ``return`` (which reads the named results)."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        if skip is not None and node.id == skip.id:
            continue
        stack.extend(reversed(node.children))
        if node.type == "return_statement" and not node.named_children:
            return True
        if node.type != "identifier" or node.text.decode("utf-8") != name:
            continue
        parent = node.parent
        if parent.type in _UPDATES:
            continue
        if parent.type in ("var_spec", "const_spec") and node in parent.children_by_field_name(
            "name"
        ):
            continue
        if parent.type == "expression_list" and parent.parent.type in _BINDINGS:
            if _field(parent.parent, "left") == parent:
                continue
        return True
    return False


def _read_after(scope: Node, name: str) -> bool:
    """Whether the function holding the scope ``scope`` reads ``name`` outside it and after
    it: in a later statement of a block around it, or in a loop around it (the next
    iteration)."""
    node = scope
    while node.parent is not None and node.type not in _FUNCTIONS:
        parent = node.parent
        if parent.type == "statement_list":
            siblings = _values(parent)
            if _read(siblings[siblings.index(node) + 1 :], name):
                return True
        elif parent.type == "for_statement" and _read([parent], name, scope):
            return True
        node = parent
    return False


_CASES = frozenset({"expression_case", "default_case", "type_case", "communication_case"})
_FUNCTIONS = frozenset({"function_declaration", "method_declaration", "func_literal"})


def _shadowing(node: Node, ctx: GoContext) -> Iterator[Edit]:
    if node.type != "assignment_statement" or _op(node) != "=":
        return
    names = _names(_field(node, "left"))
    if not names:
        return
    parent = node.parent
    if parent.type == "for_clause" and _field(parent, "initializer") == node:
        loop = [c for c in (_field(parent, "condition"), _field(parent, "update")) if c]
        later = [*loop, _field(parent.parent, "body")]
        scope = parent.parent  # the outer names are read after the loop, or not at all
    elif parent.type == "statement_list":
        scope = parent.parent
        if scope.type not in _CASES and (scope.type != "block" or scope.parent.type in _FUNCTIONS):
            return  # the function's own body: its names are its parameters' or its own
        siblings = _values(parent)
        at = siblings.index(node)
        if any(set(names) & _declared(s) for s in siblings[:at]):
            return  # `:=` would redeclare a name of this block
        later = siblings[at + 1 :]
    else:
        return
    if all(_read(later, name) and _read_after(scope, name) for name in names):
        yield ctx.replace_token(_field(node, "operator"), ":=")


def _update_operator(node: Node, ctx: GoContext) -> Iterator[Edit]:
    if node.type in _UPDATES:
        token = node.children[-1]
        yield ctx.replace_token(token, "--" if token.type == "++" else "++", node)


# The operator table. Its order decides which class keeps an edit two classes produce alike
# (the earlier one) and the order classes are listed in reports. Changing what it generates
# means bumping GO_MUTATION_VERSION below (see `go_mutation_version`).
GO_OPERATORS: dict[str, TreeOperatorClass[GoContext]] = {
    "off_by_one": TreeOperatorClass((off_by_one,), core=True),
    "wrong_operator": TreeOperatorClass(
        (_wrong_binary, _wrong_compound, drop_unary_minus), core=True
    ),
    "swap_arguments": TreeOperatorClass((_swap_call_args, swap_operands, _swap_values), core=True),
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
    "shadowing": TreeOperatorClass((_shadowing,), core=False),
    "update_operator": TreeOperatorClass((_update_operator,), core=False),
    "boolean_literal": TreeOperatorClass((boolean_literal,), core=False),
}
GO_CLASSES: tuple[str, ...] = tuple(GO_OPERATORS)
GO_CORE_CLASSES: tuple[str, ...] = tuple(n for n, c in GO_OPERATORS.items() if c.core)

# What generated the Go mutants: a Go corpus records it (`go_mutation_version`). Bump it when a
# change to this module, syntax.py, languages/trees.py, languages/tree_mutation.py, the shared
# helpers of operators.py, select.py, stacking.py or the grammar's versions changes the mutants
# or their selection; either way record the new `go_fingerprint()` in GO_MUTATION_FINGERPRINT
# (tests/test_go_language.py prints it).
GO_MUTATION_VERSION = "1"
GO_MUTATION_FINGERPRINT = "6173c320cf812a2b7512b9bab86dcf9a10eb5b42f657dfb77a54f0bbafe77b1e"


def go_modules() -> tuple[ModuleType, ...]:
    """The modules Go mutants come from: :func:`..tree_mutation.tree_modules`'s (Python's,
    ``languages/trees.py``, ``languages/tree_mutation.py``), ``syntax.py`` and this one."""
    return tree_modules(parse, GoContext)  # syntax.py's, this one's


def go_fingerprint() -> str:
    """sha256 over the fingerprints of :func:`go_modules`, the live :data:`GO_OPERATORS` table
    and the parser's and grammar's versions (``fingerprint.language_fingerprint``)."""
    module = sys.modules[__name__]
    return fingerprint.language_fingerprint(go_modules(), GO_OPERATORS, module, grammar_versions())


def go_mutation_version() -> str:
    """What a Go corpus records: :data:`GO_MUTATION_VERSION` while the code and grammar match
    :data:`GO_MUTATION_FINGERPRINT`, else ``"<GO_MUTATION_VERSION>+unrecorded-<12 hex>"``."""
    return fingerprint.recorded_version(
        GO_MUTATION_VERSION, GO_MUTATION_FINGERPRINT, go_fingerprint()
    )


# --- candidates ---------------------------------------------------------------------------


def generate_go_edits(
    source: str, table: dict[str, TreeOperatorClass[GoContext]] | None = None
) -> list[Edit]:
    """Every raw single-edit candidate (not yet validated) of the classes of ``table`` (default
    :data:`GO_OPERATORS`), ordered by position, class (table order), text; an edit two classes
    make alike is the earlier class's. ``ValueError`` if ``source`` does not parse."""
    return ordered_edits(GoContext(source), GO_OPERATORS if table is None else table)


def valid_structure(code: str, entry_point: str) -> tuple[str, ...] | None:
    """:func:`.syntax.structure` of code that parses (no ``ERROR``/``MISSING``) and declares
    ``entry_point`` as a top-level function, else None."""
    tree = parse(code)
    if syntax_problem(tree) or entry_point not in top_level_functions(tree):
        return None
    return structure(tree)


def generate_go_mutants(
    source: str,
    entry_point: str,
    table: dict[str, TreeOperatorClass[GoContext]] | None = None,
    per_class: int | None = None,
) -> list[Mutant]:
    """Every valid single-edit mutant of ``source`` among its first :data:`MAX_CANDIDATES`
    tried edits, in :func:`generate_go_edits` order (``per_class``: as
    :func:`...mutation.operators.generate_mutants`). ``ValueError`` if ``source`` is not valid
    or does not declare ``entry_point``."""
    edits = partial(generate_go_edits, table=table)
    return generate_mutants(source, entry_point, valid_structure, edits, "Go", per_class)
