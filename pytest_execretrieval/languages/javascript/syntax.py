"""JavaScript source as tree-sitter parses it: the parser, what a parse tells the gate and the
mutation engine, and the early errors the grammar does not see.

The parser is tree-sitter with the ``tree-sitter-javascript`` grammar (the ``javascript``
extra: both wheels, pinned, since the grammar decides every JavaScript mutant). Both are
imported at the first parse, so the package (and its Python items) works without them; a
parse without them raises :class:`JavaScriptUnavailable`, naming the extra.

tree-sitter parses every input: what does not fit the grammar becomes ``ERROR`` nodes, and a
token it had to assume a ``MISSING`` node. :func:`syntax_problem` names the first of either;
code with one is not JavaScript. :func:`early_error` names what the grammar accepts but the
language rejects before running anything (ECMAScript's "early errors") for the constructs a
single edit can make: ``??`` mixed with ``||``/``&&`` without parentheses, and a unary
operand as the base of ``**``.

Every walk here is iterative (the depth of a tree is the input's to choose), and every offset
a tree-sitter node carries is a byte offset into the UTF-8 encoding of the source.
"""

from __future__ import annotations

import functools
from typing import Any

from ..trees import field, tree_depth, walk
from ..trees import grammar_versions as _grammar_versions
from ..trees import syntax_problem as _syntax_problem

__all__ = [
    "GRAMMAR_PACKAGES",
    "JavaScriptUnavailable",
    "early_error",
    "field",
    "grammar_versions",
    "parameter_names",
    "parse",
    "structure",
    "syntax_problem",
    "top_level_functions",
    "tree_depth",
    "walk",
]

# The distributions whose code parses JavaScript: a corpus records their versions.
GRAMMAR_PACKAGES = ("tree-sitter", "tree-sitter-javascript")
FUNCTION_DECLARATIONS = ("function_declaration", "generator_function_declaration")


class JavaScriptUnavailable(RuntimeError):
    """tree-sitter or its JavaScript grammar is not installed."""


@functools.cache
def _parser() -> Any:
    try:
        import tree_sitter
        import tree_sitter_javascript
    except ImportError as exc:
        raise JavaScriptUnavailable(
            f"JavaScript code needs the tree-sitter parser ({exc}): install "
            "pytest-execretrieval[javascript]"
        ) from None
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_javascript.language()))


def grammar_versions() -> dict[str, str]:
    """The installed version of each of :data:`GRAMMAR_PACKAGES` (``"missing"`` if absent)."""
    return _grammar_versions(GRAMMAR_PACKAGES)


def syntax_problem(tree: Any) -> str | None:
    """Where ``tree`` holds its first ``ERROR`` or ``MISSING`` node, or None."""
    return _syntax_problem(tree, "JavaScript")


def parse(source: str) -> Any:
    """The tree-sitter tree of ``source`` (``ERROR``/``MISSING`` nodes where it is not
    JavaScript); :class:`JavaScriptUnavailable` without the parser."""
    return _parser().parse(source.encode("utf-8"))


_LOGICAL = ("||", "&&")


def _operator(node: Any) -> str | None:
    if node.type != "binary_expression":
        return None
    token = node.child_by_field_name("operator")
    return token.type if token is not None else None


def early_error(tree: Any) -> str | None:
    """The first early error a single edit can make that tree-sitter accepts, or None."""
    for node in walk(tree.root_node):
        op = _operator(node)
        if op is None:
            continue
        line = node.start_point[0] + 1
        operands = [node.child_by_field_name("left"), node.child_by_field_name("right")]
        inner = {_operator(child) for child in operands if child is not None}
        if (op == "??" and inner & set(_LOGICAL)) or (op in _LOGICAL and "??" in inner):
            return f"`??` mixed with `||`/`&&` without parentheses (line {line})"
        left = operands[0]
        if (
            op == "**"
            and left is not None
            and left.type in ("unary_expression", "await_expression")
        ):
            return f"a unary expression as the base of `**` (line {line})"
    return None


def top_level_functions(tree: Any) -> frozenset[str]:
    """The names of the function declarations (plain, ``async``, generator) at top level."""
    names = set()
    for node in tree.root_node.named_children:
        if node.type in FUNCTION_DECLARATIONS:
            name = node.child_by_field_name("name")
            if name is not None:
                names.add(name.text.decode("utf-8"))
    return frozenset(names)


def parameter_names(tree: Any, name: str) -> tuple[str, ...] | None:
    """The parameter names of the top-level function declaration ``name``, in order (a
    default value allowed: ``strict = false``); None without that declaration, or when a
    parameter is a rest or destructuring pattern."""
    for node in tree.root_node.named_children:
        found = node.child_by_field_name("name") if node.type in FUNCTION_DECLARATIONS else None
        if found is None or found.text.decode("utf-8") != name:
            continue
        names = []
        for param in node.child_by_field_name("parameters").named_children:
            if param.type == "assignment_pattern":
                param = param.child_by_field_name("left")
            if param.type == "comment":
                continue
            if param.type != "identifier":
                return None
            names.append(param.text.decode("utf-8"))
        return tuple(names)
    return None


def structure(tree: Any) -> tuple[str, ...]:
    """The tree as a token sequence that ignores layout and comments: each node's type, its
    leaves' text, and a closing mark per node (so nesting counts). Two sources with the same
    structure are the same program (the JavaScript counterpart of ``ast.dump``)."""
    out: list[str] = []
    stack: list[Any] = [tree.root_node]
    while stack:
        node = stack.pop()
        if node is None:
            out.append(")")
            continue
        if node.type == "comment":
            continue
        if node.child_count == 0:
            out.append(node.type + ":" + node.text.decode("utf-8"))
            continue
        out.append(node.type)
        stack.append(None)
        stack.extend(reversed(node.children))
    return tuple(out)
