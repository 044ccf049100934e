"""Tests from the SOURCE's own test files, for the functions they import by name.

A test module (``tests/``, ``test_*.py``; :func:`.functions.is_test_file`) is parsed, never
imported. For each function it imports by its own name (``from pkg.mod import f``), its direct
``assert`` statements on ``f(...)``, ``self.assertEqual(f(...), LIT)`` and
``self.assertRaises(Exc, f, ARG...)`` calls become tests where the test grammar accepts the
statement (literal arguments and expected values, within the grammar's bounds).
"""

from __future__ import annotations

import ast
import copy
from collections import Counter, defaultdict
from typing import TypeVar

from ..corpus.items import grammar_problem
from ..execution import _grammar
from .functions import is_test_file, parse_module
from .sources import SourceTree

_Node = TypeVar("_Node", bound=ast.AST)
# name -> [(test statement, "test FILE:LINE")]
FileTests = dict[str, list[tuple[str, str]]]


def test_file_tests(tree: SourceTree, names: set[str]) -> FileTests:
    """The tests the SOURCE's test files hold for each of ``names``, in file and line order."""
    found: FileTests = defaultdict(list)
    for path, body in tree.files.items():
        if not (path.endswith(".py") and is_test_file(path)):
            continue
        module = parse_module(body.decode("utf-8", "replace"))
        if isinstance(module, str):
            continue
        imported = _imported_names(module) & names
        aliases = _module_aliases(module)
        if aliases:  # `import pkg as p` ... `p.f(x)`: the test reads `f(x)`
            unqualify = _Unqualify(aliases, names)
            module = unqualify.visit(module)
            imported |= unqualify.found
        if not imported:
            continue
        module = inline_assigned(module)
        for node in ast.walk(module):
            if not isinstance(node, ast.Assert | ast.Call):
                continue
            statement = _statement(node, imported)
            if statement is not None:
                name, test = statement
                if grammar_problem(test, name) is None and test not in dict(found[name]):
                    found[name].append((test, f"test {path}:{node.lineno}"))
    return {name: sorted(tests, key=_line_order) for name, tests in found.items()}


def inline_assigned(node: _Node) -> _Node:
    """``node`` with each test function's names assigned once read as their values
    (:class:`_Inline`, which edits in place and keeps the node's type)."""
    _Inline().visit(node)
    return node


def _line_order(entry: tuple[str, str]) -> tuple[str, int]:
    where = entry[1].removeprefix("test ")
    path, _, line = where.rpartition(":")
    return path, int(line)


def _imported_names(module: ast.Module) -> set[str]:
    return {
        alias.name
        for node in ast.walk(module)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname in (None, alias.name)
    }


def _module_aliases(module: ast.Module) -> set[str]:
    """The names ``import X`` / ``import X as Y`` bind in a test module (the top-level ones)."""
    return {
        alias.asname or alias.name.partition(".")[0]
        for node in module.body
        if isinstance(node, ast.Import)
        for alias in node.names
    }


class _Unqualify(ast.NodeTransformer):
    """``alias.f`` -> ``f`` for a module alias and a mined function's name ``f``."""

    def __init__(self, aliases: set[str], names: set[str]):
        self.aliases, self.names = aliases, names
        self.found: set[str] = set()  # the names it unqualified

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id in self.aliases:
            if node.attr in self.names:
                self.found.add(node.attr)
                return ast.copy_location(ast.Name(node.attr, ast.Load()), node)
        return self.generic_visit(node)


class _Inline(ast.NodeTransformer):
    """In each test function, a name assigned once at the top of its body (``actual =
    list(f(x))``, ``expected = [1, 2]``) is read as its value in the asserts that follow,
    the way a reader of ``self.assertEqual(actual, expected)`` reads it. A name assigned
    anywhere else in the function (a loop, an augmented assignment, twice) is left alone."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        stored = Counter(
            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        )
        values: dict[str, ast.expr] = {}
        body = []
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                name = stmt.targets[0].id if isinstance(stmt.targets[0], ast.Name) else ""
                if stored[name] == 1:
                    values[name] = _Substitute(values).visit(stmt.value)
            body.append(
                _Substitute(values).visit(stmt) if isinstance(stmt, ast.Expr | ast.Assert) else stmt
            )
        node.body = body
        return node


class _Substitute(ast.NodeTransformer):
    def __init__(self, values: dict[str, ast.expr]):
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return copy.deepcopy(self.values[node.id])
        return node


def _called(node: ast.expr, names: set[str]) -> str | None:
    """The imported name ``node`` calls at its core (``list(f(x))[0]`` calls ``f``)."""
    while isinstance(node, ast.Subscript | ast.Call):
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node.func, ast.Name) and node.func.id in names:
            return node.func.id
        elif len(node.args) == 1:
            node = node.args[0]
        else:
            return None
    return None


def _statement(node: ast.Assert | ast.Call, names: set[str]) -> tuple[str, str] | None:
    """(name, test) for an assert or an assertEqual/assertRaises call on one of ``names``."""
    if isinstance(node, ast.Assert) and node.msg is None:
        test = node.test
        core = test.left if isinstance(test, ast.Compare) else test
        name = _called(core, names)
        return (name, ast.unparse(ast.Assert(test=test))) if name else None
    if isinstance(node, ast.Assert) or not isinstance(node.func, ast.Attribute):
        return None
    method, args = node.func.attr, node.args
    if method == "assertEqual" and len(args) == 2 and not node.keywords:
        name = _called(args[0], names)
        if name:
            return name, f"assert {ast.unparse(args[0])} == {ast.unparse(args[1])}"
    if method == "assertRaises" and len(args) >= 2 and isinstance(args[1], ast.Name):
        error = ast.unparse(args[0])
        if args[1].id in names and error in _grammar.EXCEPTIONS:
            parts = [error, *(ast.unparse(a) for a in args[1:])]
            parts += [f"{k.arg}={ast.unparse(k.value)}" for k in node.keywords if k.arg]
            return args[1].id, f"assert raises({', '.join(parts)})"
    return None
