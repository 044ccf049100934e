"""The item gate for JavaScript code: what a canonical or an alternative must be before the
build mutates it or a runner executes it.

A JavaScript item's code is an ES2020 script: it parses (tree-sitter, no ``ERROR`` or
``MISSING`` node, none of the early errors :func:`.syntax.early_error` knows),
nests no deeper than :data:`.bounds.MAX_JS_TREE_DEPTH` (its size is bounded before, with every
code field's: :data:`.bounds.MAX_CODE_CHARS`), declares the entry point as a top-level
``function`` and reaches nothing beyond the language's built-ins. So no modules (``import``
and ``export`` statements, dynamic ``import()``, ``import.meta``, ``require``), no code from
strings (``eval``, ``Function`` and ``new Function``) and no reference to the host
(``process``, ``globalThis``, ``module``, ``exports``): each is refused wherever it occurs as a
name the code reads or binds (a property name such as ``x.module`` is no reference). The gate
is a statement of what items may do, not the confinement: the runner holds whatever slips by.
A JavaScript item has no ``setup``: the snippet brings everything it uses.
"""

from __future__ import annotations

from ...bounds import MAX_JS_TREE_DEPTH
from .syntax import (
    JavaScriptUnavailable,
    early_error,
    parse,
    syntax_problem,
    top_level_functions,
    tree_depth,
    walk,
)

__all__ = ["FORBIDDEN_NAMES", "code_problems", "setup_problems"]

# A name an item's code may not use, and why.
FORBIDDEN_NAMES: dict[str, str] = {
    "require": "loads a module",
    "eval": "runs a string as code",
    "Function": "runs a string as code",
    "process": "reaches the host process",
    "globalThis": "reaches the global object",
    "module": "is the module system's",
    "exports": "is the module system's",
}
_NAMES = ("identifier", "shorthand_property_identifier", "shorthand_property_identifier_pattern")
_MODULE_STATEMENTS = {
    "import_statement": "an import statement",
    "export_statement": "an export statement",
}


def code_problems(code: str, entry_point: str | None) -> list[str]:
    """Why ``code`` is not an acceptable JavaScript snippet (none: it is); ``entry_point``,
    when given, must be declared as a top-level function."""
    try:
        tree = parse(code)
    except JavaScriptUnavailable as exc:
        return [f"cannot be checked: {exc}"]
    problem = syntax_problem(tree)
    if problem:
        return [f"does not parse: {problem}"]
    if tree_depth(tree, MAX_JS_TREE_DEPTH) > MAX_JS_TREE_DEPTH:
        return [f"nests more than {MAX_JS_TREE_DEPTH} levels deep (the limit)"]
    early = early_error(tree)
    if early:
        return [f"does not parse: {early}"]
    reasons: dict[str, str] = {}  # the first occurrence of each construct, in source order
    for node in walk(tree.root_node):
        line = node.start_point[0] + 1
        if node.type in _MODULE_STATEMENTS:
            what = _MODULE_STATEMENTS[node.type]
            reasons.setdefault(what, f"line {line}: {what}: a JavaScript item is a script")
        elif node.type == "import" or (node.type == "meta_property" and node.text[:6] == b"import"):
            what = "dynamic import()" if node.type == "import" else "import.meta"
            reasons.setdefault(what, f"line {line}: {what}: a JavaScript item is a script")
        elif node.type in _NAMES and node.text.decode("utf-8") in FORBIDDEN_NAMES:
            name = node.text.decode("utf-8")
            reasons.setdefault(
                name,
                f"line {line}: uses {name!r}, which {FORBIDDEN_NAMES[name]}: a JavaScript item "
                "uses the language's built-ins only",
            )
    found = list(reasons.values())
    if entry_point is not None and entry_point not in top_level_functions(tree):
        found.append(
            f"does not declare function {entry_point!r} at top level "
            f"(`function {entry_point}(...) {{ ... }}`)"
        )
    return found


def setup_problems(setup: str) -> list[str]:
    """A JavaScript item's ``setup`` must be empty."""
    if setup:
        return ["must be empty for a JavaScript item: the snippet brings everything it uses"]
    return []
