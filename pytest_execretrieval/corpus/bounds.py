"""Host-side bounds on an item file, checked before anything parses it.

An items directory arrives in pull requests, so an item file is attacker-controlled input to the
host's own parsers (``tomllib``, ``ast``, ``tokenize``) and to the mutation engine. Every bound
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
                                    [1,376 characters]
``MAX_LINE_TOKENS``     2,000       tokens in one logical line of a code field, counted by
                                    ``tokenize`` before ``ast.parse`` (an expression cannot nest
                                    deeper than its tokens; ``ast.parse`` recurses) [151]
``MAX_AST_DEPTH``       100         depth of the parsed tree, measured iteratively, before any
                                    recursive walk (``ast.dump``, the mutation engine) [16]
=====================  ==========  =============================================================

Names: a domain folder and an item stem match ``[a-z0-9_]+`` (:data:`NAME`): an escape
sequence, a dot, a space or a capital in a name is an item problem, the name shown escaped.
``mutation.operators.MAX_CANDIDATES`` caps the candidates per item.
"""

from __future__ import annotations

import ast
import io
import os
import re
import stat
import tokenize
from pathlib import Path

from ..sanitize import has_unsafe, one_line

MAX_ITEM_BYTES = 256 * 1024
MAX_TOML_DEPTH = 32
MAX_CODE_CHARS = 64 * 1024
MAX_LINE_TOKENS = 2000
MAX_AST_DEPTH = 100
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
            raise BoundError(f"{what} is a symlink: item files must be regular files in the "
                             "items directory itself")  # fmt: skip
    if not stat.S_ISREG(info.st_mode):
        raise BoundError("is not a regular file (a device, FIFO, socket or directory)")
    # O_NOFOLLOW: a symlink swapped in after the lstat is refused; O_NONBLOCK: so is a FIFO.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise BoundError("is not a regular file")
        data = fh.read(MAX_ITEM_BYTES + 1)
    if len(data) > MAX_ITEM_BYTES:
        raise BoundError(f"is larger than the limit of {MAX_ITEM_BYTES // 1024} KiB for an item "
                         "file")  # fmt: skip
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BoundError(f"is not UTF-8 text: {exc}") from None
    depth = toml_depth(text)
    if depth > MAX_TOML_DEPTH:
        raise BoundError(f"nests arrays or tables {depth} deep, over the limit of "
                         f"{MAX_TOML_DEPTH}")  # fmt: skip
    return text


def name_problems(path: Path) -> list[tuple[str, str]]:
    """``(field, reason)`` for a domain folder or item stem that does not match :data:`NAME`."""
    path = Path(path)
    found = []
    for field, name in (("<folder>", path.parent.name), ("<file name>", path.stem)):
        if not NAME.match(name):
            found.append((field, f"{one_line(repr(name))} is not a valid name: item and domain "
                                 "names are made of a-z, 0-9 and _ only"))  # fmt: skip
    return found


def field_problems(data: dict) -> list[tuple[str, str]]:
    """``(field, reason)`` for the text fields of a parsed item: control characters in the
    query, a test or the names (shown to people: see :mod:`..sanitize`), and code fields over
    :data:`MAX_CODE_CHARS` or :data:`MAX_LINE_TOKENS`. Fields of the wrong type are skipped
    (the schema gate names them)."""
    found = []
    for field in ("query", "entry_point", "domain"):
        if isinstance(data.get(field), str) and has_unsafe(data[field]):
            found.append((field, "holds a control character (shown escaped: "
                                 f"{one_line(repr(data[field]))[:200]})"))  # fmt: skip
    codes = [("canonical", data.get("canonical")), ("setup", data.get("setup"))]
    for key in ("alternatives", "tests"):
        values = data.get(key)
        codes += [(f"{key}[{i}]", v) for i, v in enumerate(values)] if isinstance(values, list) \
            else []  # fmt: skip
    for field, code in codes:
        if not isinstance(code, str):
            continue
        if field.startswith("tests[") and has_unsafe(code):
            found.append((field, "holds a control character (shown escaped: "
                                 f"{one_line(repr(code))[:200]})"))  # fmt: skip
        reason = code_size_problem(code)
        if reason:
            found.append((field, reason))
    return found


def code_size_problem(code: str) -> str | None:
    """Why ``code`` is too large to parse safely, or None: over :data:`MAX_CODE_CHARS`, or a
    logical line of more than :data:`MAX_LINE_TOKENS` tokens. Code that does not tokenize is
    left to ``ast.parse`` to report."""
    if len(code) > MAX_CODE_CHARS:
        return f"is {len(code)} characters, over the limit of {MAX_CODE_CHARS}"
    tokens = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                tokens = 0
            elif token.type not in (tokenize.NL, tokenize.COMMENT):
                tokens += 1
                if tokens > MAX_LINE_TOKENS:
                    return (f"line {token.start[0]}: a statement of more than "
                            f"{MAX_LINE_TOKENS} tokens (the limit)")  # fmt: skip
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


def ast_depth_problem(tree: ast.AST) -> str | None:
    """Why a parsed tree is too deep for the recursive walks after it, or None; iterative."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_AST_DEPTH:
            return f"nests more than {MAX_AST_DEPTH} levels deep (the limit)"
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return None


def toml_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside strings and comments in TOML text: a linear
    scan, an upper bound of what ``tomllib`` will recurse through (table headers count one)."""
    depth = deepest = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif ch in "\"'":
            i = _string_end(text, i)
            continue
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(depth - 1, 0)
        i += 1
    return deepest


def _string_end(text: str, start: int) -> int:
    """The index just after the TOML string opening at ``start`` (basic or literal, one-line or
    multi-line); the end of the text when it does not close."""
    quote = text[start]
    delimiter = quote * 3 if text.startswith(quote * 3, start) else quote
    i, n = start + len(delimiter), len(text)
    while i < n:
        if quote == '"' and text[i] == "\\":
            i += 2
            continue
        if text.startswith(delimiter, i):
            end = i + len(delimiter)
            while len(delimiter) == 3 and end < n and text[end] == quote and end - i < 5:
                end += 1  # up to two quotes of the content may precede the closing three
            return end
        if len(delimiter) == 1 and text[i] == "\n":
            return i
        i += 1
    return n


# Files pytest or Python would import or read as configuration from a directory it collects:
# an items directory holds item files and generated corpus files only.
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyd", ".so", ".pth")
CONFIG_NAMES = frozenset({"conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg",
                          "pyproject.toml", "__init__.py"})  # fmt: skip


def foreign_files(items_dir: Path) -> list[Path]:
    """Files in ``items_dir`` (at any depth; symlinked folders are not followed) that pytest or
    Python could import or read as configuration: code (:data:`CODE_SUFFIXES`) and pytest/tox
    configuration (:data:`CONFIG_NAMES`). Sorted."""
    found = []
    for folder, dirs, files in os.walk(items_dir):
        dirs.sort()
        found += [Path(folder) / name for name in files
                  if name in CONFIG_NAMES or name.endswith(CODE_SUFFIXES)]  # fmt: skip
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
        found += [folder / name for name in ("conftest.py", "__init__.py")
                  if os.path.lexists(folder / name)]  # fmt: skip
    return found
