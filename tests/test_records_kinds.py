"""Snippet kinds are typed once: ``records.Kind`` and its constants (``CANONICAL``,
``DISTRACTOR``, ``REAL_BUG``, ``BACKGROUND``, ``ALTERNATIVE``). No other module of the package
spells a kind as a string where it uses it as a kind: read with ``ast``, every string equal to a
kind's name is found in the places a kind value goes, and none may be there.

The places: a comparison (``x == "distractor"``, ``x != ...``, ``x in ("canonical", ...)``: an
element of a literal tuple, list or set on the right of ``in``), a ``kind=`` keyword argument, a
``kind`` parameter's default, the value of a dict's ``"kind"`` key or of ``.get("kind", ...)``'s
default, a value assigned to a name or attribute that says kind (``kind``, ``KIND``,
``DISTRACTOR_KINDS``), to a ``["kind"]`` subscript or to a name of records.py's constants (a
second ``REAL_BUG = "real_bug"``), and the kind argument of the records that take one
positionally (``Snippet``, ``make_snippet``, ``Hit``, ``Rank1``). A conditional expression's
branches and a literal tuple's or list's elements count as the value. A field name is no kind
value: ``row["canonical"]``, ``"real_bug" in data`` (a key of an item file), an item file's
labels (``("canonical", item.canonical)``) and a report's keys (``counts["background"]``) are
left alone. On the sources before the kinds were typed once it found 42 (40 uses, the two
``REAL_BUG`` definitions).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest_execretrieval
from pytest_execretrieval import records

PACKAGE = Path(pytest_execretrieval.__file__).parent
NAMES = frozenset(get_args(records.Kind))
# Records and builders that take a kind positionally: the argument's index.
POSITIONAL = {"Snippet": 2, "make_snippet": 1, "Hit": 2, "Rank1": 1}
SAYS_KIND = re.compile(r"(^|_)kinds?$", re.IGNORECASE)
# records.py's constants: one of them defined again elsewhere (``REAL_BUG = "real_bug"``).
CONSTANTS = frozenset(
    n for n, v in vars(records).items() if n.isupper() and isinstance(v, str) and v in NAMES
)


def _values(node: ast.expr | None) -> Iterator[ast.Constant]:
    """The kind-name strings ``node`` evaluates to: itself, a conditional's branches, a literal
    tuple's, list's or set's elements."""
    if isinstance(node, ast.Constant) and node.value in NAMES:
        yield node
    elif isinstance(node, ast.IfExp):
        yield from _values(node.body)
        yield from _values(node.orelse)
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _values(element)


def _says_kind(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return bool(SAYS_KIND.search(target.id)) or target.id in CONSTANTS
    if isinstance(target, ast.Attribute):
        return bool(SAYS_KIND.search(target.attr))
    if isinstance(target, ast.Subscript):
        return isinstance(target.slice, ast.Constant) and target.slice.value == "kind"
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_says_kind(t) for t in target.elts)
    return False


def _callee(call: ast.Call) -> str:
    func = call.func
    return (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else ""
    )


def kind_literals(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of every kind name ``source`` spells as a string where a kind goes."""
    found: list[ast.Constant] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, sides, sides[1:]):
                if isinstance(op, (ast.In, ast.NotIn)):  # a literal collection of kinds only
                    if isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                        found += _values(right)
                else:
                    found += _values(left)
                    found += _values(right)
        elif isinstance(node, ast.Call):
            found += (c for k in node.keywords if k.arg == "kind" for c in _values(k.value))
            at = POSITIONAL.get(_callee(node))
            if at is not None and len(node.args) > at:
                found += _values(node.args[at])
            if _callee(node) == "get" and len(node.args) == 2:
                key = node.args[0]
                if isinstance(key, ast.Constant) and key.value == "kind":
                    found += _values(node.args[1])
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "kind":
                    found += _values(value)
        elif isinstance(node, ast.Assign):
            if any(_says_kind(t) for t in node.targets):
                found += _values(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            if _says_kind(node.target):
                found += _values(node.value)
        elif isinstance(node, ast.arguments):
            params = [*node.posonlyargs, *node.args]
            pairs = [*zip(params[len(params) - len(node.defaults) :], node.defaults)]
            pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None]
            found += (c for a, d in pairs if a.arg == "kind" for c in _values(d))
    return sorted({(c.lineno, c.value) for c in found})


def package_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p != PACKAGE / "records.py"]


def test_kinds_are_the_kind_literal():
    assert records.KINDS == get_args(records.Kind)
    assert len(set(records.KINDS)) == len(records.KINDS) == 5
    constants = (
        records.CANONICAL,
        records.DISTRACTOR,
        records.REAL_BUG,
        records.BACKGROUND,
        records.ALTERNATIVE,
    )
    assert set(constants) == set(records.KINDS)


def test_no_module_spells_a_kind_as_a_string():
    spelled = {
        f"{path.relative_to(PACKAGE.parent)}:{line}: {name!r}": None
        for path in package_modules()
        for line, name in kind_literals(path.read_text(encoding="utf-8"))
    }
    assert not spelled, "use the constants of records.py: " + ", ".join(spelled)


def test_the_check_finds_kind_values_and_leaves_field_names():
    found = kind_literals(
        "a == 'distractor'\n"
        "x in ('canonical', 'real_bug')\n"
        "make_snippet(item, 'distractor', code)\n"
        "f(kind='background' if b else 'alternative')\n"
        "row = {'kind': 'real_bug'}\n"
        "row['kind'] = 'canonical'\n"
        "KIND = 'background'\n"
        "d.get('kind', 'distractor')\n"
        "def g(kind='canonical'): pass\n"
        "REAL_BUG = 'real_bug'\n"
    )
    assert [line for line, _ in found] == [1, 2, 2, 3, 4, 4, 5, 6, 7, 8, 9, 10]
    assert not kind_literals(
        "row['canonical']\n"
        "'real_bug' in data\n"
        "[('canonical', item.canonical)]\n"
        "counts['background'] += 1\n"
        "data.get('canonical')\n"
        "label == 'x'\n"
    )
