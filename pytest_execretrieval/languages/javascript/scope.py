"""The ``let_scoping`` operator's scope analysis: where writing a ``let`` as ``var`` can change
what a JavaScript function computes.

A ``var`` binds in the enclosing function, a ``let`` in its block; the rewrite is an early error
inside the scope of another lexical binding of the name, and a change of behaviour only where
the name is read outside the declaration's block, a loop keeps the last iteration's value, or a
closure in a loop captures it (:func:`_rescoping_shows`). Everything here reads tree-sitter
nodes (:mod:`.syntax`); the edit itself is the operator's (:func:`let_scoping`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .syntax import field, walk

if TYPE_CHECKING:
    from ...mutation.operators import Edit
    from .mutation import JsContext

Node = Any  # a tree-sitter node (see ..tree_mutation)

# What starts a scope of its own for `var`.
_FUNCTIONS = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "function_expression",
        "generator_function",
        "arrow_function",
        "method_definition",
        "class_static_block",
        "program",
    }
)
_field = field


def _declared_identifiers(node: Node) -> list[Node] | None:
    """The names a ``let`` declaration (or ``for (let x of ...)`` head) binds, None unless all
    are plain identifiers."""
    if node.type == "for_in_statement":
        left = _field(node, "left")
        return [left] if left is not None and left.type == "identifier" else None
    names = [_field(d, "name") for d in node.named_children if d.type == "variable_declarator"]
    return names if names and all(n is not None and n.type == "identifier" for n in names) else None


def _enclosing_function(node: Node) -> Node:
    current = node.parent
    while current.type not in _FUNCTIONS:
        current = current.parent
    return current


def _scope(declaration: Node) -> Node:
    """The node whose extent a lexical declaration's binding covers: its block (a ``case``'s:
    the whole ``switch`` body), a ``for`` statement whose head it is, a ``for ... of``/``in``
    head itself, a ``catch`` clause for its parameter."""
    if declaration.type in ("for_in_statement", "catch_clause"):
        return declaration
    parent = declaration.parent
    return parent.parent if parent.type in ("switch_case", "switch_default") else parent


def _lexical_names(function: Node, ctx: JsContext) -> list[tuple[int, bytes, Node]]:
    """``(declaration id, name, scope)`` of every lexical binding of ``function``'s own
    scopes (nested functions left out): ``let``/``const`` declarations and heads, classes,
    block-level functions and ``catch`` parameters; a pattern counts all its identifiers."""
    key = ("lexical", function.id)
    if key in ctx.memo:
        return ctx.memo[key]  # type: ignore[return-value]
    found: list[tuple[int, bytes, Node]] = []
    body = _field(function, "body")
    stack = list(function.children)
    while stack:
        node = stack.pop()
        if node.type in _FUNCTIONS or node.type in ("class_declaration", "class"):
            declares = node.type in ("class_declaration", "function_declaration")
            block_level = node.parent != body and node.parent != function
            if node.type == "class_declaration" or (declares and block_level):
                name = _field(node, "name")
                found.append((node.id, name.text if name is not None else b"", _scope(node)))
            continue
        kind = _field(node, "kind")
        patterns: list[Node] = []
        if node.type == "lexical_declaration":
            patterns = [_field(d, "name") for d in node.named_children]
        elif node.type == "for_in_statement" and kind is not None and kind.type != "var":
            patterns = [_field(node, "left")]
        elif node.type == "catch_clause":
            patterns = [_field(node, "parameter")]
        for pattern in patterns:  # a default inside a pattern counts too: the cautious side
            for inner in walk(pattern) if pattern is not None else ():
                if inner.type in ("identifier", "shorthand_property_identifier_pattern"):
                    found.append((node.id, inner.text, _scope(node)))
        stack.extend(node.children)
    ctx.memo[key] = found
    return found


def let_scoping(node: Node, ctx: JsContext) -> Iterator[Edit]:
    kind = (
        _field(node, "kind") if node.type in ("lexical_declaration", "for_in_statement") else None
    )
    if kind is None or kind.type != "let":
        return
    function = _enclosing_function(node)
    if node.type == "lexical_declaration" and node.parent in (function, _field(function, "body")):
        return  # at the top of a function body or the program `let` and `var` scope alike
    names = _declared_identifiers(node)
    if names is None:
        return
    # A `var` is an early error inside the scope of a lexical binding of its name: the scopes
    # that enclose this declaration, up to the function.
    enclosing, current = set(), node.parent
    while current is not None and current != function.parent:
        enclosing.add(current.id)
        current = current.parent
    wanted = {n.text for n in names}
    others = [(n, scope) for owner, n, scope in _lexical_names(function, ctx) if owner != node.id]
    if any(name in wanted and scope.id in enclosing for name, scope in others):
        return
    if _rescoping_shows(node, function, wanted, [o for o in others if o[0] in wanted]):
        yield ctx.edit(kind.start_byte, kind.end_byte, "var", node)


_LOOPS_AND_HEADS = frozenset(
    {"for_statement", "for_in_statement", "while_statement", "do_statement"}
)


def _within(node: Node, top: Node, kinds: frozenset[str]) -> bool:
    """Whether a node of ``kinds`` lies between ``node`` (included) and ``top`` (excluded)."""
    current = node
    while current is not None and current != top:
        if current.type in kinds:
            return True
        current = current.parent
    return False


def _rescoping_shows(
    node: Node, function: Node, wanted: set[bytes], others: list[tuple[bytes, Node]]
) -> bool:
    """Whether a ``let`` declaration of ``wanted`` written as ``var`` can change what the
    function computes: a declaration without initializer in a loop (the ``var`` keeps the last
    iteration's value), the name used in the function outside the declaration's scope and
    outside the scopes of ``others`` (the other lexical bindings of the names: a sibling
    loop's own ``let i`` is unaffected), where the ``var`` is a parameter, another ``var`` or
    what a read now sees; or a closure in a loop capturing it (one binding for all iterations
    instead of one each)."""
    scope = _scope(node)
    looped = _within(scope, function, _LOOPS_AND_HEADS)
    if looped and node.type == "lexical_declaration":
        declarators = [d for d in node.named_children if d.type == "variable_declarator"]
        if any(_field(d, "value") is None for d in declarators):
            return True
    for ref in walk(function):
        if ref.type not in ("identifier", "shorthand_property_identifier"):
            continue
        if ref.text not in wanted:
            continue
        if scope.start_byte <= ref.start_byte < scope.end_byte:
            if looped and _within(ref.parent, scope, _FUNCTIONS):
                return True
        elif not any(
            name == ref.text and other.start_byte <= ref.start_byte < other.end_byte
            for name, other in others
        ):
            return True
    return False
