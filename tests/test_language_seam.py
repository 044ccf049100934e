"""A language is one folder: no module outside ``languages/`` branches on a language's name.

The source is read, not run: every comparison (``==``, ``!=``, ``in``, ``match`` cases) whose
operand is a registered language's name, the default language (``languages.DEFAULT``) or a
language object's ``.name`` is a branch that belongs behind the ``Language`` protocol."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pytest_execretrieval
from pytest_execretrieval.languages import LANGUAGES

PACKAGE = Path(pytest_execretrieval.__file__).parent


def names_a_language(node: ast.expr) -> bool:
    """Whether ``node`` is a language's name as code spells one."""
    if isinstance(node, ast.Constant):
        return node.value in LANGUAGES
    if isinstance(node, ast.Name):
        return node.id == "DEFAULT"
    if isinstance(node, ast.Attribute):  # PYTHON.name, JAVASCRIPT.name
        return node.attr == "name" and isinstance(node.value, ast.Name) and node.value.id.isupper()
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(names_a_language(e) for e in node.elts)
    return False


def language_branches(source: str) -> list[str]:
    """``line: code`` of every comparison or ``case`` on a language's name in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(
            names_a_language(p) for p in (node.left, *node.comparators)
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.match_case) and isinstance(node.pattern, ast.MatchValue):
            if names_a_language(node.pattern.value):
                found.append(f"{node.pattern.lineno}: case {ast.unparse(node.pattern)}")
    return found


@pytest.mark.parametrize(
    "source",
    [
        "if language == 'javascript':\n    pass",
        "x = item.language != DEFAULT",
        "ok = lang in ('python', 'go')",
        "y = name == JAVASCRIPT.name",
        "match lang:\n    case 'python':\n        pass",
    ],
)
def test_the_check_finds_a_branch_on_a_language_name(source):
    assert language_branches(source)


@pytest.mark.parametrize(
    "source",
    [
        "same = a.language == b.language",
        "x = language(name).packages",
        "default = language == Sandbox.language",
        "y = 'python' + suffix",
    ],
)
def test_the_check_leaves_other_code_alone(source):
    assert language_branches(source) == []


def test_no_module_outside_languages_branches_on_a_language_name():
    found = [
        f"{path.relative_to(PACKAGE)}:{branch}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "languages" not in path.relative_to(PACKAGE).parts[:1]
        for branch in language_branches(path.read_text())
    ]
    assert found == []
