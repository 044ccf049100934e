"""What a language parsed by tree-sitter reads of its trees, the same in every grammar.

A language's ``syntax.py`` (``javascript/``, ``go/``) holds its parser and what only its grammar
knows; these helpers walk any tree. Every walk is iterative (the depth of a tree is the
input's to choose).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from importlib import metadata
from typing import Any

__all__ = ["field", "grammar_versions", "syntax_problem", "tree_depth", "walk"]


def grammar_versions(packages: Sequence[str]) -> dict[str, str]:
    """The installed version of each of ``packages`` (``"missing"`` if absent): what a corpus
    records of the code that parses its language."""
    versions = {}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "missing"
    return versions


def field(node: Any, name: str) -> Any:
    """``node``'s child in the grammar's field ``name``, or None."""
    return node.child_by_field_name(name)


def walk(node: Any) -> Iterator[Any]:
    """Every node below and including ``node``, pre-order, without recursion."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def syntax_problem(tree: Any, language: str) -> str | None:
    """Where ``tree`` holds its first ``ERROR`` or ``MISSING`` node, or None; ``language`` names
    it in the message (``"is not Go syntax (line 3)"``)."""
    if not tree.root_node.has_error:
        return None
    for node in walk(tree.root_node):
        if node.is_missing:
            return f"a {node.type!r} is missing (line {node.start_point[0] + 1})"
        if node.is_error:
            return f"is not {language} syntax (line {node.start_point[0] + 1})"
    return f"is not {language} syntax"


def tree_depth(tree: Any, limit: int) -> int:
    """The depth of ``tree`` (the root is 1), counting no further than ``limit + 1``."""
    level, depth = [tree.root_node], 0
    while level and depth <= limit:
        depth += 1
        level = [child for node in level for child in node.children]
    return depth
