"""The item gate for Go code: what a canonical or an alternative must be before the build
mutates it or a runner executes it.

A Go item's code is one file of ``package main`` without its ``package`` clause (the runner
writes it, then compiles the code with its driver, ``_driver.go``): it parses (tree-sitter, no
``ERROR`` or ``MISSING`` node), nests no deeper than :data:`.bounds.MAX_GO_TREE_DEPTH` (its
size is bounded before, with every code field's: :data:`.bounds.MAX_CODE_CHARS`), is imports
followed by declarations (functions, methods, types, constants: no statement at top level and
no package-level ``var``, whose state would outlive one call of the suite's binary), imports
only :data:`ALLOWED_IMPORTS` (pure computation: no cgo, ``unsafe``, ``os``, ``syscall``,
``reflect``, ``runtime``, ``net``, each refused by name with :data:`FORBIDDEN_IMPORTS`' reason),
starts no goroutine (``go``), declares no ``init`` or ``main`` function (the first would run
before the driver, the second is the driver's) and no identifier of the driver's
``execretrieval_`` prefix, holds no comment (a ``//go:`` directive is the compiler's, a
``/* */`` in a cgo preamble is C) and declares the entry point as a top-level function without
type parameters (the driver calls it with values). The gate is a statement of what items may
do, not the confinement: the runner holds whatever slips by. A Go item has no ``setup``: the
snippet brings everything it uses.
"""

from __future__ import annotations

from typing import Any

from ...bounds import MAX_GO_TREE_DEPTH
from .syntax import GoUnavailable, field, parse, syntax_problem, tree_depth, walk

__all__ = ["ALLOWED_IMPORTS", "FORBIDDEN_IMPORTS", "code_problems", "setup_problems"]

# The standard-library packages an item may import: computation on values, nothing more.
ALLOWED_IMPORTS = frozenset(
    {
        "sort",
        "strings",
        "strconv",
        "math",
        "math/bits",
        "math/big",
        "unicode",
        "unicode/utf8",
        "container/heap",
        "container/list",
        "bytes",
        "errors",
        "fmt",
        "regexp",
        "time",
    }
)
# A package an item may not import, and why (its subpackages are refused for the same reason).
FORBIDDEN_IMPORTS: dict[str, str] = {
    "C": "is cgo: it compiles and links C code",
    "unsafe": "steps around Go's type and memory safety",
    "os": "reaches the host's files, processes and environment",
    "syscall": "makes system calls",
    "reflect": "reads and writes values past the type system",
    "runtime": "controls the Go runtime (scheduler, memory, stacks)",
    "net": "opens network connections",
    "plugin": "loads compiled code",
    "debug": "reads binaries and the running program",
    "embed": "embeds the host's files",
}
DRIVER_PREFIX = "execretrieval_"
_DECLARATIONS = frozenset(
    {"function_declaration", "method_declaration", "type_declaration", "const_declaration"}
)
_NAMES = frozenset(
    {"identifier", "type_identifier", "field_identifier", "package_identifier", "label_name"}
)


def _import_problem(path: str) -> str | None:
    """Why ``path`` (an import path as written, quotes stripped) may not be imported."""
    if path in ALLOWED_IMPORTS:
        return None
    root = path.split("/", 1)[0]
    if root in FORBIDDEN_IMPORTS:
        return f"imports {path!r}, which {FORBIDDEN_IMPORTS[root]}"
    return f"imports {path!r}: a Go item imports only {', '.join(sorted(ALLOWED_IMPORTS))}"


def code_problems(code: str, entry_point: str | None) -> list[str]:
    """Why ``code`` is not an acceptable Go snippet (none: it is); ``entry_point``, when given,
    must be declared as a top-level function without type parameters."""
    try:
        tree = parse(code)
    except GoUnavailable as exc:
        return [f"cannot be checked: {exc}"]
    problem = syntax_problem(tree)
    if problem:
        return [f"does not parse: {problem}"]
    if tree_depth(tree, MAX_GO_TREE_DEPTH) > MAX_GO_TREE_DEPTH:
        return [f"nests more than {MAX_GO_TREE_DEPTH} levels deep (the limit)"]
    reasons: dict[str, tuple[int, str]] = {}  # the first occurrence of each construct
    declared = False  # a declaration came before: an import now does not compile
    for node in tree.root_node.named_children:
        line = node.start_point[0] + 1
        if node.type == "package_clause":
            _note(
                reasons,
                node,
                "package",
                f"line {line}: a package clause: the runner writes `package main`",
            )
        elif node.type == "import_declaration":
            if declared:
                _note(reasons, node, "late import", f"line {line}: an import after a declaration")
        elif node.type == "var_declaration":
            _note(
                reasons,
                node,
                "var",
                f"line {line}: a package-level `var`: its state would outlive one call (keep "
                "state in the functions; `const` is allowed)",
            )
        elif node.type == "function_declaration" and _name(node) in ("init", "main"):
            special = "init" if _name(node) == "init" else "main"
            why = "would run before the driver" if special == "init" else "is the driver's"
            _note(
                reasons, node, special, f"line {line}: declares function {special!r}, which {why}"
            )
        elif node.type not in _DECLARATIONS and node.type != "comment":
            _note(
                reasons,
                node,
                "statement",
                f"line {line}: a statement outside a function: a Go item is imports, then "
                "functions, methods, types and constants",
            )
        declared = declared or node.type in _DECLARATIONS or node.type == "var_declaration"
    for node in walk(tree.root_node):
        line = node.start_point[0] + 1
        if node.type == "import_spec":
            path = field(node, "path")
            written = path.text.decode("utf-8")
            refused = _import_problem(written[1:-1])
            if refused:
                _note(reasons, node, f"import {written}", f"line {line}: {refused}")
        elif node.type == "go_statement":
            _note(
                reasons, node, "go", f"line {line}: a `go` statement: a Go item starts no goroutine"
            )
        elif node.type == "comment":
            _note(
                reasons,
                node,
                "comment",
                f"line {line}: a comment: a Go item has none (a `//go:` line is a compiler "
                "directive)",
            )
        elif node.type in _NAMES and node.text.decode("utf-8").startswith(DRIVER_PREFIX):
            name = node.text.decode("utf-8")
            _note(
                reasons,
                node,
                name,
                f"line {line}: names {name!r}: the prefix {DRIVER_PREFIX!r} is the driver's",
            )
    found = [why for _, why in sorted(reasons.values())]  # in source order
    if entry_point is not None:
        entry = _entry_problem(tree, entry_point)
        if entry:
            found.append(entry)
    return found


def _note(reasons: dict[str, tuple[int, str]], node: Any, key: str, why: str) -> None:
    """Record ``why`` for the construct ``key`` unless an earlier one of it is recorded."""
    reasons.setdefault(key, (node.start_byte, why))


def _name(node: Any) -> str | None:
    name = field(node, "name")
    return None if name is None else name.text.decode("utf-8")


def _entry_problem(tree: Any, entry_point: str) -> str | None:
    """Why ``entry_point`` is not a top-level, non-generic function of ``tree``, or None."""
    for node in tree.root_node.named_children:
        if node.type == "function_declaration" and _name(node) == entry_point:
            if field(node, "type_parameters") is not None:
                return (
                    f"function {entry_point!r} has type parameters: the driver calls it with "
                    "values, so it must not be generic"
                )
            return None
    return (
        f"does not declare function {entry_point!r} at top level "
        f"(`func {entry_point}(...) ... {{ ... }}`, no receiver)"
    )


def setup_problems(setup: str) -> list[str]:
    """A Go item's ``setup`` must be empty."""
    if setup:
        return ["must be empty for a Go item: the snippet brings everything it uses"]
    return []
