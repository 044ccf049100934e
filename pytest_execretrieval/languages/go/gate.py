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
type parameters (the driver calls it with values), and ranges over no map (:func:`_map_ranges`:
Go randomises the order, so a mutant, a broken comparator say, could be killed in one run and
pass the next) but to collect its keys into a slice it then sorts with ``sort.Ints``,
``sort.Strings`` or ``sort.Float64s``, which take no comparator a mutant could break. The gate
is a statement of what items may do, not the confinement: the runner holds whatever slips by. A
Go item has no ``setup``: the snippet brings everything it uses.
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
_KEY_SORTS = frozenset({b"sort.Ints", b"sort.Strings", b"sort.Float64s"})  # no comparator
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
    for node, name in _map_ranges(tree):
        _note(
            reasons,
            node,
            "map range",
            f"line {node.start_point[0] + 1}: ranges over the map {name}: Go randomises the "
            "order, so a mutant's outcome could change from run to run: collect its keys (`for k "
            ":= range m { keys = append(keys, k) }`) and sort them with sort.Ints, sort.Strings "
            "or sort.Float64s, or keep the keys in the order the input gave them",
        )
    found = [why for _, why in sorted(reasons.values())]  # in source order
    if entry_point is not None:
        entry = _entry_problem(tree, entry_point)
        if entry:
            found.append(entry)
    return found


def _map_ranges(tree: Any) -> list[tuple[Any, str]]:
    """Each ``range`` over a map that is not :func:`_collects_keys` into a slice the function
    sorts without a comparator, and the map as written. A map is read from the syntax alone: a
    name of the function that holds one (a parameter, ``var`` or ``:=`` of a map type, a map
    literal, ``make(map...)`` or a call of a function of the file that returns one), such a
    value itself, or a map of maps indexed (``m[k]``); a map reached otherwise (a struct's
    field) is not seen."""
    root = tree.root_node
    named = {  # `type Counts map[string]int`
        field(spec, "name").text: field(spec, "type")
        for spec in walk(root)
        if spec.type == "type_spec" and field(spec, "type").type == "map_type"
    }

    def map_type(node: Any) -> Any:
        """The ``map_type`` node ``node`` is or names, else None."""
        if node is not None and node.type == "type_identifier":
            node = named.get(node.text)
        return node if node is not None and node.type == "map_type" else None

    returning = {
        field(f, "name").text: map_type(field(f, "result"))
        for f in root.named_children
        if f.type in ("function_declaration", "method_declaration")
    }

    def value_type(node: Any) -> Any:
        """The map type of the value ``node``, else None."""
        if node.type == "composite_literal":
            return map_type(field(node, "type"))
        if node.type != "call_expression":
            return None
        function, arguments = field(node, "function"), field(node, "arguments").named_children
        if function.text == b"make":
            return map_type(arguments[0]) if arguments else None
        return returning.get(function.text) if function.type == "identifier" else None

    def ranged_map(node: Any, maps: dict[bytes, Any]) -> Any:
        """The map type of what ``range`` ranges over, the function's ``maps`` known."""
        if node.type == "identifier":
            return maps.get(node.text)
        if node.type == "index_expression":
            outer = ranged_map(field(node, "operand"), maps)
            return map_type(field(outer, "value")) if outer is not None else None
        return value_type(node)

    found = []
    for function in root.named_children:
        maps: dict[bytes, Any] = {}  # name -> its map type
        sorted_slices: set[bytes] = set()  # sort.Ints(keys): no comparator a mutant could break
        for node in walk(function):
            if node.type in ("parameter_declaration", "var_spec"):
                kind = map_type(field(node, "type"))
                if kind is not None:
                    maps.update((name.text, kind) for name in node.children_by_field_name("name"))
            if node.type in ("short_var_declaration", "var_spec", "assignment_statement"):
                left = field(node, "left")
                names = left.named_children if left else node.children_by_field_name("name")
                right = field(node, "right") or field(node, "value")
                for name, value in zip(names, right.named_children if right else []):
                    if (kind := value_type(value)) is not None:
                        maps[name.text] = kind
            elif node.type == "call_expression" and field(node, "function").text in _KEY_SORTS:
                arguments = field(node, "arguments").named_children
                sorted_slices.update(a.text for a in arguments[:1])
        for node in walk(function):
            ranged = field(node, "right") if node.type == "range_clause" else None
            if ranged is None or ranged_map(ranged, maps) is None:
                continue
            if _collects_keys(node) not in sorted_slices:
                found.append((node, f"`{ranged.text.decode('utf-8')[:40]}`"))
    return found


def _collects_keys(clause: Any) -> bytes | None:
    """``keys`` of the loop ``for k := range m { keys = append(keys, k) }`` whose
    ``range_clause`` is ``clause``, else None."""
    key, body = field(clause, "left"), field(clause.parent, "body")
    lists = [c for c in body.named_children if c.type == "statement_list"] if body else []
    statements = lists[0].named_children if lists else []
    if key is None or len(key.named_children) != 1 or len(statements) != 1:
        return None
    statement = statements[0]
    if statement.type != "assignment_statement" or field(statement, "operator").type != "=":
        return None
    keys, written = field(statement, "left").text, field(statement, "right").text
    collected = b"append(" + keys + b"," + key.named_children[0].text + b")"
    return keys if written.replace(b" ", b"") == collected else None


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
