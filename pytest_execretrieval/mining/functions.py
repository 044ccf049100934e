"""The candidate functions of a :class:`.sources.SourceTree`: public module-level functions
that are self-contained, each with the helpers, constants and imports it needs.

Every module is parsed with :mod:`ast` within the item bounds (``bounds.py``); nothing is
imported or run. A function is a candidate when it is a public (no leading ``_``), undecorated,
non-async module-level ``def`` (a ``@typing.overload`` stub is no function at all: only its
implementation counts) and every name it loads resolves to a builtin, a parameter or
local, a standard-library import of its module, or a module-level helper function or literal
constant that is itself self-contained (transitively). The canonical is the needed imports, then
the helpers and constants in source order, then the entry point, whose docstring (the query's
source) is left out. Everything else is kept with its ``skip`` reason.

Refused as I/O, process, clock or randomness access (:data:`UNSAFE_MODULES`,
:data:`UNSAFE_BUILTINS`, :data:`CLOCK_ATTRIBUTES`): the sandbox would refuse most of them anyway,
but an item must mean the same on every machine and every run.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from ..bounds import MAX_CODE_CHARS, ast_depth_problem, code_size_problem
from ..execution import _grammar
from ..execution.contexts import context_setup
from .sources import SourceTree

UNSAFE_MODULES = frozenset(
    {
        "asyncio", "ctypes", "concurrent", "fcntl", "ftplib", "gc", "glob",
        "http", "importlib", "inspect", "io", "logging", "mmap", "multiprocessing", "os",
        "pathlib", "pickle", "platform", "pty", "random", "resource", "secrets", "select",
        "selectors", "shelve", "shutil", "signal", "socket", "socketserver", "sqlite3", "ssl",
        "subprocess", "sys", "sysconfig", "tempfile", "threading", "time", "tkinter",
        "urllib", "uuid", "warnings", "weakref", "webbrowser", "zipfile", "tarfile",
    }
)  # fmt: skip
UNSAFE_BUILTINS = frozenset(
    {
        "open", "input", "exec", "eval", "compile", "__import__", "breakpoint", "globals",
        "locals", "vars", "help", "exit", "quit", "memoryview", "id", "hash",
    }
)  # fmt: skip
CLOCK_ATTRIBUTES = frozenset({"now", "today", "utcnow", "fromtimestamp", "utcfromtimestamp"})
_BUILTINS = frozenset(dir(builtins))
_TEST_PARTS = frozenset({"tests", "test", "testing", "docs", "doc", "examples", "benchmarks"})


@dataclass(frozen=True)
class MinedFunction:
    module: str
    file: str
    line: int
    name: str
    code: str  # self-contained source: imports, helpers, the entry point ("" when skipped)
    docstring: str
    sha256: str  # of ``code``
    skip: str | None = None
    docstring_line: int = 0  # where the docstring starts (its examples' lines count from it)
    owner: str = ""  # a method's class (in a repository context), "" for a function
    setup: str = ""  # what its suites run first: its context's directive, or nothing


class NotSelfContained(Exception):
    """A name a function loads does not resolve to something that travels with it."""


def is_test_file(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or bool(_TEST_PARTS & set(parts[:-1]))
    )


def importable_path(path: str) -> str:
    """A SOURCE file's path as it lies on ``sys.path``: an sdist's ``NAME-VERSION/`` folder
    and a leading ``src/`` or ``lib/`` left out."""
    parts = list(PurePosixPath(path).parts)
    if len(parts) > 1 and "-" in parts[0]:  # an sdist's NAME-VERSION/ folder
        parts = parts[1:]
    if len(parts) > 1 and parts[0] in ("src", "lib"):
        parts = parts[1:]
    return "/".join(parts)


def module_name(path: str) -> str:
    """The dotted module of a posix path (:func:`importable_path`'s)."""
    parts = list(PurePosixPath(importable_path(path)).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "__init__"


def source_modules(tree: SourceTree) -> list[str]:
    """The files functions are mined from: ``.py`` files that are not tests, setup or docs."""
    return [
        path
        for path in tree.files
        if path.endswith(".py")
        and not is_test_file(path)
        and PurePosixPath(path).name != "setup.py"
    ]


def parse_module(text: str) -> ast.Module | str:
    """The parsed module, or why it cannot be parsed within the bounds."""
    try:
        module = ast.parse(text)
    except SyntaxError as exc:
        return f"module does not parse: {exc.msg}"
    except (RecursionError, MemoryError, ValueError):
        return "module nests too deeply to parse"
    deep = ast_depth_problem(module)
    return f"module {deep}" if deep else module


def parsed_sources(tree: SourceTree) -> Iterator[tuple[str, str, str, ast.Module | str]]:
    """Each module mined from (:func:`source_modules`): its path, dotted name, text, and its
    syntax tree or why it has none."""
    for path in source_modules(tree):
        text = tree.files[path].decode("utf-8", "replace")
        yield path, module_name(path), text, parse_module(text)


def mined_functions(tree: SourceTree) -> list[MinedFunction]:
    """Every public module-level function of the SOURCE's modules, in file and line order,
    each self-contained or with its skip reason; a module that cannot be parsed is one
    record named ``<module>`` with the reason."""
    found: list[MinedFunction] = []
    scopes: dict[str, ModuleScope] = {}  # by module: where a relative import's names resolve
    parsed_modules: list[tuple[str, str, ast.Module]] = []
    for path, module, text, parsed in parsed_sources(tree):
        if isinstance(parsed, str):
            found.append(MinedFunction(module, path, 1, "<module>", "", "", "", parsed))
            continue
        package = PurePosixPath(path).name == "__init__.py"
        scopes.setdefault(module, ModuleScope(parsed, text, module, package, scopes))
        parsed_modules.append((path, module, parsed))
    for path, module, parsed in parsed_modules:
        for node in parsed.body:
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and not node.name.startswith("_")
                and not is_overload_stub(node)
            ):
                found.append(_candidate(scopes[module], node, module, path))
    return sorted(found, key=lambda f: (f.file, f.line))


def is_overload_stub(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``node`` is a ``@typing.overload`` signature (``@overload``, ``@typing.overload``,
    ``@t.overload``): a type checker's stub, not a function; its implementation, the
    undecorated ``def`` of the same name, is the one that counts."""
    return any(
        (isinstance(d, ast.Name) and d.id == "overload")
        or (isinstance(d, ast.Attribute) and d.attr == "overload")
        for d in node.decorator_list
    )


def _candidate(scope: ModuleScope, node: ast.stmt, module: str, path: str) -> MinedFunction:
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    docstring = ast.get_docstring(node) or ""
    record = MinedFunction(
        module, path, node.lineno, node.name, "", docstring, "", None, node.body[0].lineno
    )
    reason = _entry_problem(node)
    code = ""
    if reason is None and isinstance(node, ast.FunctionDef):  # _entry_problem refuses async
        try:
            code = scope.canonical(node)
        except NotSelfContained as exc:
            reason = str(exc)
    if reason is None:
        reason = code_size_problem(code) and f"too large: {MAX_CODE_CHARS:,} characters at most"
    if reason is not None:
        return MinedFunction(**{**record.__dict__, "skip": reason})
    digest = hashlib.sha256(code.encode()).hexdigest()
    return MinedFunction(**{**record.__dict__, "code": code, "sha256": digest})


def _entry_problem(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    if isinstance(node, ast.AsyncFunctionDef):
        return "async"
    if node.decorator_list:
        return "decorated"
    return _name_or_body_problem(node)


def _name_or_body_problem(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    if not node.name.isascii():
        return "name is not ASCII"
    if node.name in _grammar.RESERVED:
        return "name is one the test grammar reserves"
    if len(node.body) == 1 and ast.get_docstring(node) is not None:
        return "no body besides its docstring"
    return None


@dataclass
class _Needed:
    """What a canonical needs, gathered across the SOURCE's modules."""

    imports: dict[str, tuple[str, int]]  # import statement -> (module, line): its order
    helpers: dict[tuple[str, int], str]  # (module, line) -> the helper's or constant's source
    bound: dict[str, tuple[str, ...]]  # each top-level name of the canonical -> what binds it
    seen: set[tuple[str, str]]  # (module, name) resolved already


class ModuleScope:
    """A module's top-level bindings, and how a function's free names resolve in it (a
    relative import in the module of ``siblings``, the SOURCE's other modules by name)."""

    def __init__(
        self,
        module: ast.Module,
        text: str,
        name: str = "",
        package: bool = False,
        siblings: dict[str, ModuleScope] | None = None,
    ):
        self.text, self.name, self.package = text, name, package
        self.lines = source_lines(text)  # once: a segment is sliced from them, never re-split
        self.siblings = siblings if siblings is not None else {}
        self.imports: dict[str, tuple[ast.stmt, str]] = {}  # bound name -> (statement, source)
        self.definitions: dict[str, ast.stmt] = {}  # helpers and constants
        self.other: set[str] = set()  # bound some other way (classes, computed values)
        for node in module.body:
            self._bind(node)

    def _bind(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.partition(".")[0]
                spelled = f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
                self.imports[bound] = (node, spelled)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                bound = alias.asname or alias.name
                spelled = f"from {'.' * node.level}{node.module or ''} import {alias.name}" + (
                    f" as {alias.asname}" if alias.asname else ""
                )
                self.imports[bound] = (node, spelled)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.definitions[node.name] = node
        elif isinstance(node, ast.Assign) and _literal(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.definitions[target.id] = node
        elif isinstance(node, ast.ClassDef):
            self.other.add(node.name)
        else:
            self.other |= _stored_names(node)

    def canonical(self, entry: ast.FunctionDef) -> str:
        """The entry point with what it needs; raises :class:`NotSelfContained`."""
        needed = _Needed({}, {}, {entry.name: (self.name, str(entry.lineno))}, set())
        needed.seen.add((self.name, entry.name))
        self._collect(entry, needed)
        imports = sorted(needed.imports, key=lambda spelled: (*needed.imports[spelled], spelled))
        parts = ["\n".join(imports)] if imports else []
        parts += [needed.helpers[key] for key in sorted(needed.helpers)]
        parts.append(_without_docstring(self._segment(entry), entry))
        return "\n\n\n".join(parts) + "\n"

    def _segment(self, node: ast.stmt) -> str:
        return source_segment(self.lines, node) or ast.unparse(node)

    def _collect(self, node: ast.stmt, needed: _Needed) -> None:
        _refuse_unsafe_statements(node)
        for name in sorted(free_names(node)):
            self._resolve(name, needed)

    def _resolve(self, name: str, needed: _Needed) -> None:
        if (self.name, name) in needed.seen:
            return
        needed.seen.add((self.name, name))
        if name in self.imports:
            node, spelled = self.imports[name]
            if isinstance(node, ast.ImportFrom) and node.level:
                self._resolve_relative(name, node, needed)
                return
            _claim(name, ("import", spelled), needed)
            needed.imports.setdefault(
                _checked_module(_top_module(node, name), spelled), (self.name, node.lineno)
            )
        elif name in self.definitions:
            helper = self.definitions[name]
            if isinstance(helper, ast.AsyncFunctionDef):
                raise NotSelfContained(f"uses async helper {name!r}")
            if isinstance(helper, ast.FunctionDef) and helper.decorator_list:
                raise NotSelfContained(f"uses decorated helper {name!r}")
            _claim(name, (self.name, str(helper.lineno)), needed)
            needed.helpers[(self.name, helper.lineno)] = self._segment(helper)
            self._collect(helper, needed)
        elif name in self.other:
            raise NotSelfContained("uses a module-level class or computed value")
        elif name in UNSAFE_BUILTINS:
            raise NotSelfContained(f"I/O, process or introspection: {name}")
        elif name not in _BUILTINS:
            raise NotSelfContained("uses a name defined nowhere in its module")

    def _resolve_relative(self, name: str, node: ast.ImportFrom, needed: _Needed) -> None:
        """A name imported from another module of the SOURCE (``from .recipes import take``)
        resolves there, under its own name; anything else relative is refused."""
        parts = self.name.split(".") if self.package else self.name.split(".")[:-1]
        parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
        target = ".".join([*parts, *([node.module] if node.module else [])])
        scope = self.siblings.get(target)
        renamed = any(
            a.asname not in (None, a.name) for a in node.names if (a.asname or a.name) == name
        )
        if scope is None or scope is self or renamed:
            raise NotSelfContained("relative import")
        scope._resolve(name, needed)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text: str) -> list[str]:
    """``text``'s lines as the parser counts them (``\\r\\n``, ``\\r`` or ``\\n`` ends one; a form
    feed does not), each with its line break: :func:`ast.get_source_segment`'s split, done once
    per module (it splits the whole text again for every node)."""
    return _LINE.findall(text)


def source_segment(lines: list[str], node: ast.AST) -> str | None:
    """:func:`ast.get_source_segment` of ``node`` over ``lines`` (:func:`source_lines`)."""
    end_lineno = getattr(node, "end_lineno", None)
    end_col_offset = getattr(node, "end_col_offset", None)
    if end_lineno is None or end_col_offset is None:
        return None
    first, last = node.lineno - 1, end_lineno - 1  # type: ignore[attr-defined]
    col_offset = node.col_offset  # type: ignore[attr-defined]
    if first == last:
        return lines[first].encode()[col_offset:end_col_offset].decode()
    head = lines[first].encode()[col_offset:].decode()
    tail = lines[last].encode()[:end_col_offset].decode()
    return "".join([head, *lines[first + 1 : last], tail])


def _claim(name: str, binding: tuple[str, ...], needed: _Needed) -> None:
    if needed.bound.setdefault(name, binding) != binding:
        raise NotSelfContained(f"name {name!r} means different things in two modules")


def _checked_module(top: str, spelled: str) -> str:
    if top not in sys.stdlib_module_names:
        raise NotSelfContained("third-party import")
    if top in UNSAFE_MODULES:
        raise NotSelfContained(f"I/O, process, clock or randomness: {top}")
    return spelled


def _top_module(node: ast.stmt, bound: str) -> str:
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").partition(".")[0]
    assert isinstance(node, ast.Import)
    for alias in node.names:
        if (alias.asname or alias.name.partition(".")[0]) == bound:
            return alias.name.partition(".")[0]
    return bound


def _refuse_unsafe_statements(node: ast.stmt) -> None:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Global | ast.Nonlocal):
            raise NotSelfContained("global or nonlocal")
        if isinstance(inner, ast.Attribute) and inner.attr in CLOCK_ATTRIBUTES:
            raise NotSelfContained(f"clock: .{inner.attr}")
        if isinstance(inner, ast.Import | ast.ImportFrom):
            if isinstance(inner, ast.ImportFrom) and inner.level:
                raise NotSelfContained("relative import")
            modules = (
                [a.name for a in inner.names]
                if isinstance(inner, ast.Import)
                else [inner.module or ""]
            )
            for module in modules:
                _checked_module(module.partition(".")[0], module)


def free_names(node: ast.stmt) -> set[str]:
    """Names ``node`` loads that nothing inside it binds (parameters, assignments, nested
    definitions and imports anywhere inside count as bound: a name that is in fact unbound
    where it is loaded fails in the sandbox, and execution decides)."""
    loaded = {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    bound: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.arg):
            bound.add(inner.arg)
        elif inner is not node and isinstance(
            inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        ):
            bound.add(inner.name)
        elif isinstance(inner, ast.ExceptHandler) and inner.name:
            bound.add(inner.name)
        elif isinstance(inner, ast.alias):
            bound.add(inner.asname or inner.name.partition(".")[0])
        elif isinstance(inner, ast.MatchAs | ast.MatchStar) and inner.name:
            bound.add(inner.name)
    bound |= _stored_names(node)
    return loaded - bound


def _stored_names(node: ast.AST) -> set[str]:
    return {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del)
    }


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _without_docstring(source: str, node: ast.FunctionDef, top: int | None = None) -> str:
    """The function's source (from line ``top``, its ``def`` line by default) without its
    docstring's lines (when it has one on lines of its own)."""
    first = node.body[0]
    if ast.get_docstring(node) is None:
        return source
    lines = source.splitlines()
    start = first.lineno - (top or node.lineno)
    end = (first.end_lineno or first.lineno) - (top or node.lineno)
    if (
        start == 0
        or lines[start][: first.col_offset].strip()
        or lines[end][first.end_col_offset or 0 :].strip()
    ):
        return source  # the docstring shares a line with other code: keep it
    return "\n".join(lines[:start] + lines[end + 1 :])


def context_functions(tree: SourceTree, sha256: str) -> list[MinedFunction]:
    """Every public function and method of the SOURCE's modules in its repository context
    (the prepared package ``sha256``): module-level functions, decorated ones included, and
    the methods of public top-level classes (plain, static or class methods); each one's code
    its own source as a search index holds it (decorators kept, docstring left out; a method
    dedented), in file and line order. Overload stubs, async functions, properties and names
    the test grammar reserves are skipped with their reason."""
    found: list[MinedFunction] = []
    for path, module, text, parsed in parsed_sources(tree):
        if isinstance(parsed, str):
            found.append(MinedFunction(module, path, 1, "<module>", "", "", "", parsed))
            continue
        lines = source_lines(text)
        for node, owner in _public_definitions(parsed):
            found.append(_in_context(node, owner, module, path, lines, sha256))
    return sorted(found, key=lambda f: (f.file, f.line))


def _public_definitions(
    module: ast.Module,
) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]]:
    for node in module.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if not node.name.startswith("_") and not is_overload_stub(node):
                yield node, ""
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for member in node.body:
                if (
                    isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef)
                    and not member.name.startswith("_")
                    and not is_overload_stub(member)
                ):
                    yield member, node.name


_METHOD_DECORATORS = frozenset({"staticmethod", "classmethod"})


def _in_context(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    owner: str,
    module: str,
    path: str,
    lines: list[str],
    sha256: str,
) -> MinedFunction:
    docstring = ast.get_docstring(node) or ""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    record = MinedFunction(
        module, path, node.lineno, node.name, "", docstring, "", None, node.body[0].lineno, owner
    )
    reason = _context_problem(node, owner)
    code = ""
    if reason is None:
        assert isinstance(node, ast.FunctionDef)
        segment = "".join(lines[first - 1 : node.end_lineno or node.lineno])
        margin = " " * node.col_offset  # a method's: its lines dedented by it, where they have it
        code = "".join(
            (line[len(margin) :] if line.startswith(margin) else line) + "\n"
            for line in _without_docstring(segment, node, first).splitlines()
        )
        reason = code_size_problem(code) and f"too large: {MAX_CODE_CHARS:,} characters at most"
    if reason is not None:
        return replace(record, skip=reason)
    digest = hashlib.sha256(code.encode()).hexdigest()
    setup = context_setup(sha256, module, owner)
    return replace(record, code=code, sha256=digest, setup=setup)


def _context_problem(node: ast.FunctionDef | ast.AsyncFunctionDef, owner: str) -> str | None:
    if isinstance(node, ast.AsyncFunctionDef):
        return "async"
    if owner and any(
        not (isinstance(d, ast.Name) and d.id in _METHOD_DECORATORS) for d in node.decorator_list
    ):
        return "a method decorated otherwise than staticmethod or classmethod (a property, ...)"
    return _name_or_body_problem(node)
