"""JSON read from a user, bounded: size, nesting depth and the top-level type.

Every JSON text the package reads that a user (or another process) could have written goes
through :func:`read_json` or :func:`parse_json`: a baseline or compared report, a model card, an
npz file's invocation, the xdist handoff, the caches. Without the bounds a deeply nested file
ends in a ``RecursionError`` (an INTERNALERROR traceback under pytest) and a huge one exhausts
memory; with them each is a :class:`JSONBoundError` naming the source and the bound, which the
caller turns into its own usage error. No report the package writes comes near the bounds: its
deepest nesting is a handful of levels, its size grows with the queries.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["MAX_BYTES", "MAX_DEPTH", "JSONBoundError", "parse_json", "read_json"]

MAX_DEPTH = 64
MAX_BYTES = 512 * 1024 * 1024


class JSONBoundError(ValueError):
    """A JSON text that is unreadable, too large, too deep or of the wrong top-level type."""


def read_json(
    path: str | Path,
    expect: type = dict,
    max_bytes: int | None = None,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """The JSON value of the file ``path`` (UTF-8), checked as :func:`parse_json` does; the
    size is checked before the file is read."""
    path = Path(path)
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    try:
        with path.open("rb") as handle:
            body = handle.read(max_bytes + 1)
    except OSError as exc:
        raise JSONBoundError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return parse_json(body, str(path), expect, max_bytes, max_depth)


def parse_json(
    text: str | bytes,
    source: str,
    expect: type = dict,
    max_bytes: int | None = None,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """The JSON value of ``text``, or :class:`JSONBoundError` naming ``source`` when the text
    is over ``max_bytes`` (as UTF-8), is not JSON, nests deeper than ``max_depth`` arrays and
    objects, or its value is not an instance of ``expect``."""
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes  # read now: tests lower it
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise JSONBoundError(f"{source}: larger than the {max_bytes:,} bytes allowed")
    try:
        value = json.loads(text)
    except RecursionError:  # nested past the interpreter's stack: deeper than any bound
        raise JSONBoundError(_too_deep(source, max_depth)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise JSONBoundError(f"{source}: not JSON ({exc})") from None
    if _depth(value) > max_depth:
        raise JSONBoundError(_too_deep(source, max_depth))
    if not isinstance(value, expect):
        raise JSONBoundError(
            f"{source}: a JSON {_kind(value)} where a JSON {_kind(expect())} is expected"
        )
    return value


def _too_deep(source: str, max_depth: int) -> str:
    return f"{source}: JSON nested deeper than the {max_depth} levels allowed"


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value`` (a scalar is 0), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, level)
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, level + 1) for child in children)
    return deepest


def _kind(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")
