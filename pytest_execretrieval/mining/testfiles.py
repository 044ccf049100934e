"""Tests from the SOURCE's own test files, for the functions they import by name.

A test module (``tests/``, ``test_*.py``; :func:`.functions.is_test_file`) is parsed, never
imported. For each function it imports by its own name (``from pkg.mod import f``), its direct
``assert`` statements on ``f(...)``, ``self.assertEqual(f(...), LIT)`` and
``self.assertRaises(Exc, f, ARG...)`` calls become tests where the test grammar accepts the
statement (literal arguments and expected values, within the grammar's bounds).
"""

from __future__ import annotations

import ast
from collections import defaultdict

from ..corpus.items import grammar_problem
from ..execution import _grammar
from .functions import is_test_file, parse_module
from .sources import SourceTree

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
        if not imported:
            continue
        for node in ast.walk(module):
            if not isinstance(node, ast.Assert | ast.Call):
                continue
            statement = _statement(node, imported)
            if statement is not None:
                name, test = statement
                if grammar_problem(test, name) is None and test not in dict(found[name]):
                    found[name].append((test, f"test {path}:{node.lineno}"))
    return {name: sorted(tests, key=_line_order) for name, tests in found.items()}


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
