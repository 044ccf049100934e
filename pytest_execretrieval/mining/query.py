"""A mined item's query: the docstring's first paragraph (or all of it), as its authors wrote it.

Doctest lines (``>>>`` and ``...``) are dropped, Sphinx roles (``:func:`x```, ``:class:`~a.B```,
``:meth:`title <target>```) become their text, backticks are removed and whitespace is joined;
nothing else changes. No docstring, or an empty first paragraph, gives None.
"""

from __future__ import annotations

import re

# :role:`text` and :domain:role:`text`; ``~a.b`` shows ``b``, ``title <target>`` shows ``title``.
_ROLE = re.compile(r":[A-Za-z][\w.-]*(?::[A-Za-z][\w.-]*)?:`([^`]*)`")
_DOCTEST_LINE = re.compile(r"\s*(>>>|\.\.\.)(\s|$)")


def _role_text(match: re.Match[str]) -> str:
    text = match.group(1)
    titled = re.fullmatch(r"(.*?)\s*<[^<>]*>", text)
    if titled and titled.group(1):
        return titled.group(1)
    if text.startswith("~"):
        return text[1:].rsplit(".", 1)[-1]
    return text.lstrip("!")


def query_text(docstring: str, whole: bool = False) -> str | None:
    """The query of a function with ``docstring`` (already cleaned by ``ast.get_docstring``):
    its first paragraph, or with ``whole`` every paragraph; None when that is empty."""
    paragraph: list[str] = []
    in_example = False  # an example's output runs to the next blank line
    for line in docstring.splitlines():
        if _DOCTEST_LINE.match(line):
            in_example = True
        elif not line.strip():
            in_example = False
            if paragraph and not whole:
                break
        elif not in_example:
            paragraph.append(line)
    text = _ROLE.sub(_role_text, " ".join(paragraph))
    text = " ".join(text.replace("`", "").split())
    return text or None
