"""The mutation version a corpus records, tied to the code that makes its distractors.

``build.engine()`` records :func:`mutation_version` in every manifest. While
:func:`code_fingerprint` equals ``operators.MUTATION_FINGERPRINT`` it is the hand-kept
``operators.MUTATION_VERSION``; once the code differs it is ``"<version>+unrecorded-<12 hex>"``.
So changing an operator or a selection rule makes every committed corpus stale even when nobody
bumps the version, and ``tests/test_mutation_operators.py`` fails until someone decides: bump
the version (the mutants or their selection changed: rebuild and commit the corpus) or only
record the new fingerprint (they did not, e.g. a refactoring).

What the fingerprint covers:

- the code of :data:`MODULES` as syntax trees: comments, docstrings, formatting, module-level
  import statements and the annotations of parameters and return values do not count (moving
  a module or renaming a type in a signature leaves it alone), nor the assignments of
  ``MUTATION_VERSION`` and ``MUTATION_FINGERPRINT``; an f-string counts by its source text,
  because its tree differs between Python versions. Trees are written without positions, as
  node names and fields sorted by name, empty fields left out (fields that newer Pythons add
  are empty in this code), so the same source gives the same fingerprint on every supported
  Python.
- the live operator table (:func:`table_description`): each class name in table order, its
  ``core`` flag and the qualified names of its functions, so a class added, removed,
  reordered or given another function at run time counts too.

Code these modules import (the sandbox, ``ast`` itself) is not covered: what a verdict means
has its own version (``RUNNER_VERSION``).

Another language's mutants have a version of their own, derived the same way in its folder
(``languages/javascript/mutation.py``, ``languages/go/mutation.py``: this layer imports no
language) with :func:`language_fingerprint` and :func:`recorded_version`: from Python's
modules (whose helpers and selection they share) and its own, its live operator table and the
installed versions of its parser and grammar (the grammar decides every parse), against its
recorded fingerprint; Python's version never depends on them.

The real-bug families (:mod:`.families`) generate only the ``families`` corpus, so the mutation
version leaves them out (the default corpus stays fresh when a family changes); the families
corpus records :func:`families_version` besides it, derived the same way from ``families.py``
and the live families table against ``families.FAMILIES_FINGERPRINT``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import json
from types import ModuleType

from . import families, operators, select, stacking

MODULES: tuple[ModuleType, ...] = (operators, select, stacking)
RECORDING_NAMES = frozenset(
    {
        "MUTATION_VERSION",
        "MUTATION_FINGERPRINT",
        "FAMILIES_VERSION",
        "FAMILIES_FINGERPRINT",
        "JS_MUTATION_VERSION",
        "JS_MUTATION_FINGERPRINT",
        "GO_MUTATION_VERSION",
        "GO_MUTATION_FINGERPRINT",
    }
)
_DOCUMENTED = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def source_fingerprint(source: str) -> str:
    """sha256 of one module's code as fingerprinted (see the module docstring)."""
    tree = ast.parse(source)
    tree.body = [stmt for stmt in tree.body if not _excluded(stmt)]
    text = json.dumps(_canonical(tree, source), separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _excluded(stmt: ast.stmt) -> bool:
    """A module-level import, or the assignment that records the version or fingerprint."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return True
    targets = stmt.targets if isinstance(stmt, ast.Assign) else []
    targets = [stmt.target] if isinstance(stmt, ast.AnnAssign) else targets
    return any(isinstance(t, ast.Name) and t.id in RECORDING_NAMES for t in targets)


def _canonical(node: object, source: str) -> object:
    """A JSON-able, position-free form of a syntax (sub)tree."""
    if isinstance(node, list):
        return [_canonical(value, source) for value in node]
    if not isinstance(node, ast.AST):
        return repr(node)  # str, bytes, int, float, complex, bool, Ellipsis
    if isinstance(node, ast.JoinedStr):
        return ["JoinedStr", ast.get_source_segment(source, node)]
    fields = []
    for name, value in sorted(ast.iter_fields(node)):
        if name == "body" and isinstance(node, _DOCUMENTED) and _docstring(value):
            value = value[1:]
        if _signature_annotation(node, name):
            continue
        if value is None or value == []:
            continue
        fields.append([name, _canonical(value, source)])
    return [type(node).__name__, fields]


def _signature_annotation(node: ast.AST, field: str) -> bool:
    """A parameter's or a function's return annotation (never evaluated here: the modules use
    ``from __future__ import annotations``); variable annotations still count (a dataclass
    reads them)."""
    if isinstance(node, ast.arg):
        return field == "annotation"
    return field == "returns" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))


def _docstring(body: list[ast.stmt]) -> bool:
    first = body[0] if body else None
    return (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )


@functools.cache
def _module_fingerprint(module: ModuleType) -> str:
    try:
        source = inspect.getsource(module)
    except OSError as exc:
        raise RuntimeError(
            f"cannot read the source of {module.__name__} ({exc}): the mutation version is "
            "derived from it; install pytest-execretrieval with its .py files"
        ) from None
    return source_fingerprint(source)


def table_description(table: dict | None = None, home: ModuleType = operators) -> list[list]:
    """The live operator table (default ``operators.OPERATORS``) as fingerprinted: ``[name,
    core, [function names]]`` per class; a function's name is its qualified name, prefixed by
    its module's unless it is defined in ``home`` (so moving the package does not change the
    fingerprint)."""
    table = operators.OPERATORS if table is None else table
    return [
        [name, entry.core, [_function_name(f, home) for f in entry.functions]]
        for name, entry in table.items()
    ]


def _function_name(function: object, home: ModuleType) -> str:
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", repr(type(function)))
    return qualname if module == home.__name__ else f"{module}.{qualname}"


def code_fingerprint() -> str:
    """sha256 over the fingerprints of :data:`MODULES` and the live operator table."""
    parts = {
        "modules": [[m.__name__.rpartition(".")[2], _module_fingerprint(m)] for m in MODULES],
        "table": table_description(),
    }
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()


def mutation_version() -> str:
    """The version a corpus records: ``MUTATION_VERSION`` while the code matches its recorded
    fingerprint, else ``"<MUTATION_VERSION>+unrecorded-<first 12 hex of the fingerprint>"``."""
    fingerprint = code_fingerprint()
    if fingerprint == operators.MUTATION_FINGERPRINT:
        return operators.MUTATION_VERSION
    return f"{operators.MUTATION_VERSION}+unrecorded-{fingerprint[:12]}"


def families_fingerprint() -> str:
    """sha256 over the fingerprint of ``families.py`` and the live families table."""
    parts = {
        "modules": [["families", _module_fingerprint(families)]],
        "table": table_description(families.FAMILY_OPERATORS, families),
    }
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()


def families_version() -> str:
    """What a families corpus records besides :func:`mutation_version`: ``FAMILIES_VERSION``
    while ``families.py`` matches ``FAMILIES_FINGERPRINT``, else
    ``"<FAMILIES_VERSION>+unrecorded-<first 12 hex>"``."""
    fingerprint = families_fingerprint()
    if fingerprint == families.FAMILIES_FINGERPRINT:
        return families.FAMILIES_VERSION
    return f"{families.FAMILIES_VERSION}+unrecorded-{fingerprint[:12]}"


def language_fingerprint(
    modules: tuple[ModuleType, ...], table: dict, home: ModuleType, grammar: dict[str, str]
) -> str:
    """sha256 over the fingerprints of ``modules``, the live operator ``table`` (as
    :func:`table_description` writes it, relative to ``home``, the module defining it) and the
    parser's and grammar's versions ``grammar``: a tree-sitter language's mutation code."""
    parts = {
        "modules": [[m.__name__.rpartition(".")[2], _module_fingerprint(m)] for m in modules],
        "table": table_description(table, home),
        "grammar": grammar,
    }
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()


def recorded_version(version: str, recorded: str, fingerprint: str) -> str:
    """``version`` while ``fingerprint`` is the ``recorded`` one, else
    ``"<version>+unrecorded-<first 12 hex of the fingerprint>"``."""
    return version if fingerprint == recorded else f"{version}+unrecorded-{fingerprint[:12]}"
