"""The item gate for Python code and setup: what a canonical, an alternative or a setup must be
before anything runs it (the item loader, ``corpus/items.py``, asks the item's language)."""

from __future__ import annotations

import ast
import sys

from ...bounds import ast_depth_problem
from ...execution.contexts import context_fields

__all__ = ["code_problems", "defined_functions", "imports", "setup_problems"]


def defined_functions(tree: ast.Module) -> set[str]:
    """The functions (plain or ``async``) a module defines at top level."""
    return {
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def code_problems(code: str, entry_point: str | None, stdlib_only: bool = True) -> list[str]:
    """It parses, imports only the standard library (but with ``stdlib_only`` False: a context
    item's function imports what its package does) and, when ``entry_point`` is given, defines
    that function at module level."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [f"does not parse: {exc.msg} (line {exc.lineno})"]
    except (RecursionError, MemoryError):  # nesting deeper than the parser's own stack
        return ["nests too deeply to parse"]
    deep = ast_depth_problem(tree)
    if deep:
        return [deep]
    imported = imports(tree) if stdlib_only and "import" in code else []  # none without it
    reasons = [
        f"imports {name!r}, which is not in the standard library"
        for name in imported
        if name not in sys.stdlib_module_names and name != "__future__"
    ]
    if entry_point is not None and entry_point not in defined_functions(tree):
        reasons.append(f"does not define function {entry_point!r} at module level")
    return reasons


def setup_problems(setup: str, entry_point: str) -> list[str]:
    """Import statements of standard-library modules only (no ``*``), none binding
    ``entry_point`` (a setup name never stands in for the snippet's definition)."""
    if context_fields(setup) is not None:
        return ["begins with the context directive, which only a [context] table writes"]
    try:
        tree = ast.parse(setup)
    except SyntaxError as exc:
        return [f"does not parse: {exc.msg} (line {exc.lineno})"]
    reasons = []
    for node in tree.body:
        if not isinstance(node, ast.Import | ast.ImportFrom):
            reasons.append(
                f"line {node.lineno}: only import statements are allowed in setup, "
                f"found {type(node).__name__.lower()}"
            )
            continue
        if isinstance(node, ast.ImportFrom) and (node.level or not node.module):
            reasons.append(f"line {node.lineno}: a relative import is not allowed in setup")
            continue
        bound = [(a.asname or a.name).partition(".")[0] for a in node.names]
        if "*" in bound:
            reasons.append(f"line {node.lineno}: 'import *' is not allowed in setup")
        if entry_point in bound:
            reasons.append(
                f"line {node.lineno}: binds the entry point {entry_point!r}; only the "
                "snippet may define it"
            )
    reasons += [
        f"imports {name!r}, which is not in the standard library"
        for name in imports(tree)
        if name not in sys.stdlib_module_names
    ]
    return reasons


def imports(tree: ast.AST) -> list[str]:
    """Top-level module names imported anywhere in ``tree``."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name.partition(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.partition(".")[0])
    return names
