"""Host-side bounds on an item file, checked before anything parses it.

An items directory arrives in pull requests, so an item file is attacker-controlled input to the
host's own parsers (``tomllib``, ``ast``) and to the mutation engine. Every bound
here is cheap and is checked before the expensive or recursive step it protects; a file over
any of them is an item problem naming the file, never a crash, a hang or a read of something
that is not an item file. The limits (each far above what the bundled items need; their
largest figure in brackets):

=====================  ==========  =============================================================
``MAX_ITEM_BYTES``      256 KiB     size of one item file [3.2 KiB]; read through ``O_NOFOLLOW``
                                    after ``lstat`` shows a regular file (no symlink, device,
                                    FIFO or directory; the domain folder not a symlink either)
``MAX_TOML_DEPTH``      32          nesting of arrays and inline tables, counted by a scan before
                                    ``tomllib`` parses (it recurses) [1]
``MAX_CODE_CHARS``      64 KiB      one code field: canonical, an alternative, setup, a test
                                    [1,376 characters]; checked before ``ast.parse``, whose
                                    ``RecursionError``/``MemoryError`` on deep nesting is an item
                                    problem too
``MAX_AST_DEPTH``       100         depth of the parsed tree, measured iteratively, before any
                                    recursive walk (``ast.dump``, the mutation engine, the test
                                    grammar) [16]
``MAX_JS_TREE_DEPTH``   200         depth of a JavaScript tree-sitter parse (JavaScript's gate):
                                    its trees spend a level on each block, statement and
                                    parenthesis, about twice Python's for the same code [24]
``MAX_GO_TREE_DEPTH``   200         depth of a Go tree-sitter parse (Go's gate), for the same
                                    reason
=====================  ==========  =============================================================

Names: a domain folder and an item stem match ``[a-z0-9_]+`` (:data:`NAME`): an escape
sequence, a dot, a space or a capital in a name is an item problem, the name shown escaped.
``mutation.operators.MAX_CANDIDATES`` caps the candidates per item.
"""

from __future__ import annotations

import ast
import os
import re
import stat
from pathlib import Path

from .sanitize import has_unsafe, one_line

MAX_ITEM_BYTES = 256 * 1024
MAX_TOML_DEPTH = 32
MAX_CODE_CHARS = 64 * 1024
MAX_AST_DEPTH = 100
MAX_JS_TREE_DEPTH = 200
MAX_GO_TREE_DEPTH = 200
NAME = re.compile(r"[a-z0-9_]+\Z")


class BoundError(ValueError):
    """An item file is outside a bound; the message is the reason (the caller names the file)."""


def read_item_text(path: Path) -> str:
    """The text of an item file, refusing anything but a regular file of at most
    :data:`MAX_ITEM_BYTES` in a folder that is not a symlink; raises :class:`BoundError`."""
    path = Path(path)
    for what, candidate in (("its domain folder", path.parent), ("the item file", path)):
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            raise BoundError(f"{what} does not exist") from None
        if stat.S_ISLNK(info.st_mode):
            raise BoundError(
                f"{what} is a symlink: item files must be regular files in the "
                "items directory itself"
            )
    if not stat.S_ISREG(info.st_mode):
        raise BoundError("is not a regular file (a device, FIFO, socket or directory)")
    # O_NOFOLLOW: a symlink swapped in after the lstat is refused; O_NONBLOCK: so is a FIFO.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise BoundError("is not a regular file")
        data = fh.read(MAX_ITEM_BYTES + 1)
    if len(data) > MAX_ITEM_BYTES:
        raise BoundError(
            f"is larger than the limit of {MAX_ITEM_BYTES // 1024} KiB for an item file"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BoundError(f"is not UTF-8 text: {exc}") from None
    depth = toml_depth(text)
    if depth > MAX_TOML_DEPTH:
        raise BoundError(f"nests arrays or tables {depth} deep, over the limit of {MAX_TOML_DEPTH}")
    return text


def name_problems(path: Path) -> list[tuple[str, str]]:
    """``(field, reason)`` for a domain folder or item stem that does not match :data:`NAME`."""
    path = Path(path)
    found = []
    for field, name in (("<folder>", path.parent.name), ("<file name>", path.stem)):
        if not NAME.match(name):
            found.append(
                (
                    field,
                    f"{one_line(repr(name))} is not a valid name: item and domain "
                    "names are made of a-z, 0-9 and _ only",
                )
            )
    return found


def field_problems(data: dict) -> list[tuple[str, str]]:
    """``(field, reason)`` for the text fields of a parsed item: control characters in the
    query, a test or the names (shown to people: see :mod:`..sanitize`), code fields over
    :data:`MAX_CODE_CHARS`, and tests too deep to parse (:func:`parse_problem`; the code
    fields get that check in their AST gate). Fields of the wrong type are skipped (the schema
    gate names them)."""
    found = []
    for field in ("query", "entry_point", "domain"):
        if isinstance(data.get(field), str) and has_unsafe(data[field]):
            found.append(
                (
                    field,
                    "holds a control character (shown escaped: "
                    f"{one_line(repr(data[field]))[:200]})",
                )
            )
    codes = [(key, data.get(key)) for key in ("canonical", "setup", "real_bug")]
    for key in ("alternatives", "tests"):
        values = data.get(key)
        codes += (
            [(f"{key}[{i}]", v) for i, v in enumerate(values)] if isinstance(values, list) else []
        )
    for field, code in codes:
        if not isinstance(code, str):
            continue
        reason = code_size_problem(code)
        if field.startswith("tests[") and reason is None:
            if has_unsafe(code):
                reason = f"holds a control character (shown escaped: {one_line(repr(code))[:200]})"
            else:  # the code fields get the same check where their AST gate parses them
                reason = parse_problem(code)
        if reason:
            found.append((field, reason))
    return found


def code_size_problem(code: str) -> str | None:
    """Why ``code`` is too large to parse, or None: over :data:`MAX_CODE_CHARS`."""
    if len(code) > MAX_CODE_CHARS:
        return f"is {len(code)} characters, over the limit of {MAX_CODE_CHARS}"
    return None


def parse_problem(code: str) -> str | None:
    """Why ``code`` cannot be parsed safely, or None: too deep for ``ast.parse`` (which raises
    ``RecursionError`` or ``MemoryError`` on deep nesting) or for the recursive walks after it
    (:func:`ast_depth_problem`). A syntax error is left to the caller's own parse."""
    if len(code) <= MAX_AST_DEPTH:  # every level of a tree takes a character at least
        return None
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    except (RecursionError, MemoryError):
        return "nests too deeply to parse"
    return ast_depth_problem(tree)


# Fields that only ever hold an operator or a load/store marker: leaves, skipped by the walk.
_LEAF_FIELDS = frozenset({"ctx", "op", "ops"})


def ast_depth_problem(tree: ast.AST) -> str | None:
    """Why a parsed tree is too deep for the recursive walks after it, or None; iterative
    (one level of the tree at a time)."""
    level, depth = [tree], 1
    while level:
        if depth > MAX_AST_DEPTH:
            return f"nests more than {MAX_AST_DEPTH} levels deep (the limit)"
        below: list[ast.AST] = []
        for node in level:  # ast.iter_child_nodes, inlined: this runs on every item load
            for name in node._fields:
                if name in _LEAF_FIELDS:
                    continue
                value = getattr(node, name, None)
                if isinstance(value, list):
                    below += [v for v in value if isinstance(v, ast.AST)]
                elif isinstance(value, ast.AST):
                    below.append(value)
        level, depth = below, depth + 1
    return None


# What a TOML scan must step over as a whole (comments and the four kinds of strings), and the
# brackets it counts; an unterminated string is skipped a character at a time (tomllib then
# names the error).
_TOML_TOKEN = re.compile(
    r"#[^\n]*"
    r'|"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''[\s\S]*?'''"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'[^'\n]*'"
    r"|[\[\]{}]"
)


def toml_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside strings and comments in TOML text: one
    regular-expression scan, an upper bound of what ``tomllib`` will recurse through (table
    headers count one)."""
    depth = deepest = 0
    for match in _TOML_TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in ("]", "}"):
            depth = max(depth - 1, 0)
    return deepest


# Files pytest or Python would import or read as configuration from a directory it collects:
# an items directory holds item files and generated corpus files only.
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyd", ".so", ".pth")
CONFIG_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "__init__.py",
    }
)


def foreign_files(items_dir: Path) -> list[Path]:
    """Files in ``items_dir`` (at any depth; symlinked folders are not followed) that pytest or
    Python could import or read as configuration: code (:data:`CODE_SUFFIXES`) and pytest/tox
    configuration (:data:`CONFIG_NAMES`). Sorted."""
    found = []
    for folder, dirs, files in os.walk(items_dir):
        dirs.sort()
        found += [
            Path(folder) / name
            for name in files
            if name in CONFIG_NAMES or name.endswith(CODE_SUFFIXES)
        ]
    return sorted(found)


def conftests_above(items_dir: Path, stops: list[Path]) -> list[Path]:
    """``conftest.py`` and ``__init__.py`` files in the folders between ``items_dir`` and the
    first of ``stops`` (the rootdir, the ini file's folder, a ``--confcutdir``: folders the user
    configured) above it: pytest imports them while it collects the items. A folder that is an
    ancestor of a stop is the user's too; the walk ends there."""
    items_dir = Path(items_dir).resolve()
    stops = [Path(s).resolve() for s in stops]
    found = []
    for folder in items_dir.parents:
        if any(folder == s or folder in s.parents for s in stops):
            break
        found += [
            folder / name
            for name in ("conftest.py", "__init__.py")
            if os.path.lexists(folder / name)
        ]
    return found
