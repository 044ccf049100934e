"""Go source as tree-sitter parses it: the parser, and what a parse tells the gate and the
mutation engine.

The parser is tree-sitter with the ``tree-sitter-go`` grammar (the ``go`` extra: both wheels,
pinned, since the grammar decides every Go mutant). Both are imported at the first parse, so
the package (and its other languages' items) works without them; a parse without them raises
:class:`GoUnavailable`, naming the extra.

A Go item's code is stored without its ``package`` clause (the runner writes ``package main``
before it). The grammar's ``source_file`` makes that clause optional, so the code parses as it
is stored and every offset is the code's own.

tree-sitter parses every input: what does not fit the grammar becomes ``ERROR`` nodes, and a
token it had to assume a ``MISSING`` node. :func:`syntax_problem` names the first of either;
code with one is not Go. What the grammar accepts but Go does not (a statement at top level,
an import after a declaration) the gate refuses (``gate.py``); what a type checker would refuse
the runner reports as a compile error.

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
    "GoUnavailable",
    "field",
    "grammar_versions",
    "parse",
    "structure",
    "syntax_problem",
    "top_level_functions",
    "tree_depth",
    "walk",
]

# The distributions whose code parses Go: a corpus records their versions.
GRAMMAR_PACKAGES = ("tree-sitter", "tree-sitter-go")


class GoUnavailable(RuntimeError):
    """tree-sitter or its Go grammar is not installed."""


@functools.cache
def _parser() -> Any:
    try:
        import tree_sitter
        import tree_sitter_go
    except ImportError as exc:
        raise GoUnavailable(
            f"Go code needs the tree-sitter parser ({exc}): install pytest-execretrieval[go]"
        ) from None
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_go.language()))


def grammar_versions() -> dict[str, str]:
    """The installed version of each of :data:`GRAMMAR_PACKAGES` (``"missing"`` if absent)."""
    return _grammar_versions(GRAMMAR_PACKAGES)


def syntax_problem(tree: Any) -> str | None:
    """Where ``tree`` holds its first ``ERROR`` or ``MISSING`` node, or None."""
    return _syntax_problem(tree, "Go")


def parse(code: str) -> Any:
    """The tree-sitter tree of ``code``, a Go file without its ``package`` clause (``ERROR``/
    ``MISSING`` nodes where it is not Go); :class:`GoUnavailable` without the parser."""
    return _parser().parse(code.encode("utf-8"))


def top_level_functions(tree: Any) -> frozenset[str]:
    """The names of the function declarations at top level (methods are not functions)."""
    names = set()
    for node in tree.root_node.named_children:
        if node.type == "function_declaration":
            name = node.child_by_field_name("name")
            if name is not None:
                names.add(name.text.decode("utf-8"))
    return frozenset(names)


def structure(tree: Any) -> tuple[str, ...]:
    """The tree as a token sequence that ignores layout and comments: each node's type, its
    leaves' text, and a closing mark per node (so nesting counts). Two sources with the same
    structure are the same program (the Go counterpart of ``ast.dump``)."""
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
