"""Text from an item or a snippet, made safe to show: terminal, junit XML, summaries.

Anything derived from an items directory or from what a snippet returned (a query, a file name,
an id, a returned value's repr or type name, a failure message) may carry control characters:
``\\r`` and ``ESC [`` sequences that redraw the terminal (a fake ``1000 passed`` banner), an OSC 52
sequence (``ESC ] 52 ; ... BEL``) that writes the user's clipboard, bidirectional overrides that
make shown code read differently from what runs, or characters XML 1.0 cannot hold (the junit file
becomes unparsable). The output boundaries (the failure text of a pytest item, the terminal
summary lines, the junit writer, the build's report) pass such text through :func:`escape` (or
:func:`xml_text` for XML), so the characters arrive as visible escapes (``\\x1b``), never raw.

Imports nothing of the package: any layer may use it.
"""

from __future__ import annotations

import re

__all__ = ["UNSAFE", "escape", "has_unsafe", "one_line", "xml_text"]

# C0 controls but tab and newline, DEL, C1 controls (U+009B is a one-character CSI), the
# bidirectional embeddings, overrides and isolates, line/paragraph separators, lone surrogates,
# and the XML 1.0 non-characters U+FFFE/U+FFFF.
UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
    "\ud800-\udfff\ufffe\uffff]"
)
_LINE_BREAKS = re.compile("[\t\n\x0b-\x0d]")


def _code(match: re.Match) -> str:
    n = ord(match.group())
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def escape(text: str) -> str:
    """``text`` with every unsafe character (see :data:`UNSAFE`) written as a visible escape
    (``\\x1b``, ``\\u202e``); tabs and newlines stay, so a multi-line message keeps its shape."""
    return UNSAFE.sub(_code, text)


def one_line(text: str) -> str:
    """:func:`escape`, with tabs and newlines escaped too: for names and ids shown on one line."""
    return _LINE_BREAKS.sub(_code, escape(text))


def xml_text(text: object) -> str:
    """``str(text)`` safe for an XML 1.0 attribute or text node: escaped as :func:`escape` does
    (which removes every character XML cannot hold), so an XML writer never sees one."""
    return escape(str(text))


def has_unsafe(text: str) -> bool:
    """Whether ``text`` holds a character :func:`escape` would rewrite (an item problem in a
    query, a test or a name)."""
    return UNSAFE.search(text) is not None
