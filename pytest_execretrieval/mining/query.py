"""A mined item's query: what a person would type to find the function (issue 55).

:func:`summary_query` gives a ``mine`` item its query: the docstring's summary (its first
paragraph with content) with reST/Google/NumPy sections (``:param x:``, ``Args:``,
``Returns:``, ``Parameters`` over a ``---`` rule, ``Examples``), ``.. directive::`` blocks,
doctest lines and code-only lines removed, markup made text (Sphinx roles, backticks,
``*emphasis*``, a reference's ``_``), and a sentence cut at ``::``/``:`` completed (``items::``
becomes ``items.``) or, where it only introduces what follows (``For example:``, ``*sep* can
be:``, ``, where:``), dropped. A summary that is still no query is dropped with its reason
(:data:`QUALITY_REASONS`): too short, a code expression, the signature restated, or only a
reference to another function.

:func:`query_text` is the earlier cleaner, kept for HumanEval's whole-docstring queries.

:func:`read_queries` reads ``--queries FILE``: a team's logged search queries, one JSON object a
line (``{"query": "...", "function": "pkg.module.func"}``), untrusted and bounded.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from ..bounded_json import JSONBoundError, parse_json
from ..sanitize import has_unsafe, one_line
from .sources import SourceError

# :role:`text` and :domain:role:`text`; ``~a.b`` shows ``b``, ``title <target>`` shows ``title``.
_ROLE = re.compile(r":[A-Za-z][\w.-]*(?::[A-Za-z][\w.-]*)?:`([^`]*)`")
_DOCTEST_LINE = re.compile(r"\s*(>>>|\.\.\.)(\s|$)")

MIN_WORDS = 2  # a summary of fewer words is no query ("Double.", "Identity.")
TOO_SHORT = f"query: too short (under {MIN_WORDS} words)"
CODE_EXPRESSION = "query: a code expression"
SIGNATURE = "query: the signature restated"
REFERENCE = "query: only a reference to another function"
QUALITY_REASONS = (TOO_SHORT, CODE_EXPRESSION, SIGNATURE, REFERENCE)

# A section that ends the summary: Google's ``Args:``, NumPy's ``Parameters`` (over a rule).
_SECTION = re.compile(
    r"\s*(args|arguments|parameters|params|keyword args|keyword arguments|other parameters|"
    r"returns?|return type|yields?|raises|exceptions?|examples?|example usage|usage|notes?|"
    r"see also|references|attributes|warns?|warnings?|todo)\s*:{0,2}\s*\Z",
    re.IGNORECASE,
)
_RULE = re.compile(r"\s*(-{3,}|={3,}|~{3,})\s*\Z")
# A reST field list item: ``:param x:``, ``:returns:``, ``:raises ValueError:``, ``:rtype:``.
_FIELD = re.compile(
    r"\s*:(param|parameter|arg|argument|key|keyword|type|raises?|except|exception|returns?|"
    r"rtype|yields?|ytype|var|ivar|cvar|vartype|meta)\b[^:]*:",
    re.IGNORECASE,
)
_DIRECTIVE = re.compile(r"\s*\.\.\s+[\w:-]+::")
_EMPHASIS = re.compile(r"(?<![\w*])\*{1,2}([^\s*](?:[^*]{0,80}?[^\s*])?)\*{1,2}(?![\w*])")
_LINK = re.compile(r"(?<!`)`([^`]+)`_{1,2}(?!\w)")  # `text <url>`_ and `text`_
_REF_UNDERSCORE = re.compile(r"\b([A-Za-z]\w*[A-Za-z0-9])_(?=[\s.,;:!?)]|\Z)")
_WORD = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")  # letters and digits, no underscore
_ABBREVIATION = re.compile(r"[A-Za-z](?:\.[A-Za-z])+")  # e.g, i.e
_NUMBER = re.compile(r"[.,:%+-]*\d[\d.,:%+-]*")
_DASH = re.compile(r"[-\u2013\u2014]+")
_CODE_CHARS = re.compile(r"[()\[\]{}=<>|\\/+%&^~@#$;*_]|->|\w\.\w")
_SENTENCE_END = re.compile(r"[.!?]\s+(?=\S)")
# The last word of a sentence that only introduces what follows it ("... can be:").
_INTRODUCING = {
    "a", "an", "and", "are", "as", "below", "by", "e.g", "eg", "example", "examples",
    "following", "follows", "for", "here", "i.e", "ie", "include", "includes", "including",
    "instance", "is", "like", "namely", "note", "of", "or", "return", "returns", "so", "such",
    "that", "the", "these", "this", "thus", "to", "usage", "use", "was", "were", "where",
    "which", "with", "be", "yields",
}  # fmt: skip
_REFERENCE = re.compile(
    r"(?:see(?: also)?|(?:an? |deprecated )?alias(?:es)? (?:of|for|to)|same as|identical to|"
    r"equivalent to|shortcut (?:for|to)|shorthand (?:for|of)|synonym (?:of|for)|"
    r"(?:a )?(?:thin |simple )?wrapper (?:for|around|of)|deprecated[,:;.]? use|"
    r"delegates to|backport of)\s+(?P<rest>.+)",
    re.IGNORECASE,
)
_FILLER = {
    "the", "a", "an", "function", "method", "class", "builtin", "instead", "for", "more",
    "details", "info", "information", "and", "or", "in", "module", "its", "documentation",
}  # fmt: skip
# Words that add nothing to a name and its parameters ("Return x." restates ``identity(x)``).
_STOP = {
    "a", "an", "the", "of", "to", "in", "on", "for", "and", "or", "is", "are", "be", "by",
    "with", "as", "it", "its", "this", "that", "from", "into", "at", "given", "return",
    "returns", "returned", "yield", "yields", "get", "gets", "function", "func", "version",
    "s",
}  # fmt: skip


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
    its first paragraph, or with ``whole`` every paragraph; None when that is empty. Doctest
    lines are dropped, roles made text, backticks removed; nothing else changes (HumanEval)."""
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


def _link_text(text: str) -> str:
    """A link's text: ``title <target>`` shows ``title``."""
    if text.endswith(">") and "<" in text[:-1]:
        title = text[: text.rindex("<")].rstrip()
        return title or text[text.rindex("<") + 1 : -1]
    return text


def _markup_free(line: str) -> str:
    """One line with roles, links, backticks, emphasis and references' ``_`` made text."""
    line = _ROLE.sub(_role_text, line)
    line = _LINK.sub(lambda m: _link_text(m.group(1)), line)
    line = _EMPHASIS.sub(lambda m: m.group(1), line.replace("`", ""))
    return _REF_UNDERSCORE.sub(lambda m: m.group(1), line)


def _kind(token: str) -> str | None:
    """A whitespace token as ``"prose"`` (a word, an abbreviation), ``"code"`` (anything else:
    ``f(x)``, ``a.b``, ``->``, ``x_y``) or None (a number, a dash, ``...``)."""
    core = token.strip("\"'([").rstrip(".,;:!?)\"']")
    if _ABBREVIATION.fullmatch(core) or (_WORD.fullmatch(core) and not _NUMBER.fullmatch(core)):
        return "prose"
    if not core or _NUMBER.fullmatch(core) or _DASH.fullmatch(core):
        return None
    return "code"


def _is_code(text: str) -> bool:
    """Mostly code: no more than one prose word, or fewer prose words than code tokens."""
    kinds = [_kind(token) for token in text.split()]
    prose, code = kinds.count("prose"), kinds.count("code")
    return code > 0 and (prose <= 1 or prose < code)


def _summary_lines(docstring: str) -> list[str]:
    """The summary's lines: the first paragraph with content, sections, directive blocks and
    doctests (with their output) left out; stops at a section, a field list or a blank line."""
    lines = docstring.splitlines()
    summary: list[str] = []
    skip_indent: int | None = None  # inside a directive block: lines indented past this
    in_example = False
    for n, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if skip_indent is not None:
            if not line.strip() or indent > skip_indent:
                continue
            skip_indent = None
        if not line.strip():
            in_example = False
            if summary:
                break
            continue
        if in_example:
            continue
        if _DOCTEST_LINE.match(line):
            in_example = True
            continue
        if _DIRECTIVE.match(line):
            skip_indent = indent
            continue
        underlined = n + 1 < len(lines) and _RULE.match(lines[n + 1])
        if _SECTION.match(line) or _FIELD.match(line) or underlined or _RULE.match(line):
            break
        summary.append(line)
    return summary


def _completed(text: str) -> str:
    """``text`` whose last sentence ends in ``:`` or ``::`` completed with a ``.``, its
    introducing clause (``, where:``) or the whole sentence (``For example:``) dropped."""
    if not text.endswith(":"):
        return text
    body = text.rstrip(":").rstrip()
    ends = list(_SENTENCE_END.finditer(body))
    start = ends[-1].end() if ends else 0
    head, sentence = body[:start], body[start:]
    clause = re.search(r"[,;]\s*([^,;]*)\Z", sentence)
    if clause and clause.group(1) and _introduces(clause.group(1), 3):
        return (head + sentence[: clause.start()]).rstrip() + "."
    if _introduces(sentence, None):
        return head.rstrip()
    return body + "."


def _introduces(words: str, at_most: int | None) -> bool:
    split = [w.lower().strip(".,;:!?()\"'") for w in words.split()]
    if not split or (at_most is not None and len(split) > at_most):
        return False
    return split[-1] in _INTRODUCING or len(split) == 1


def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w]


def _restates_signature(text: str, name: str, params: tuple[str, ...]) -> bool:
    """Whether every word of ``text`` but :data:`_STOP`'s is the function's name, a part of it,
    or a parameter."""
    signature = {name.lower(), *_words(name), *(p.lower() for p in params)}
    signature |= {part for p in params for part in _words(p)}
    content = {w for w in _words(text) if w not in _STOP}
    return bool(content) and all(
        w in signature or (len(w) >= 3 and w in name.lower()) for w in content
    )


def _only_reference(text: str) -> bool:
    """Whether ``text`` only points elsewhere: "See foo.", "Alias of bar", "Same as baz"."""
    match = _REFERENCE.fullmatch(text.rstrip("."))
    if not match:
        return False
    rest = [t for t in match.group("rest").split() if t.lower().strip(".,;:") not in _FILLER]
    return 0 < len(rest) <= 3 and all(
        _CODE_CHARS.search(t) or re.fullmatch(r"[\w.]+[.,;:]?", t) for t in rest
    )


def summary_query(
    docstring: str, name: str = "", params: tuple[str, ...] = ()
) -> tuple[str | None, str | None]:
    """``(query, None)`` for a function ``name(params)`` documented by ``docstring`` (cleaned by
    ``ast.get_docstring``), or ``(None, reason)``: one of :data:`QUALITY_REASONS`."""
    lines = [_markup_free(line) for line in _summary_lines(docstring)]
    if _only_reference(" ".join(" ".join(lines).split())):
        return None, REFERENCE
    prose: list[str] = []  # a code-only line is dropped where it starts a sentence of its own
    for line in lines:
        if not (
            _is_code(line) and (not prose or prose[-1].rstrip().endswith((".", ":", "!", "?")))
        ):
            prose.append(line)
    if lines and not prose:
        return None, CODE_EXPRESSION
    text = _completed(" ".join(" ".join(prose).split()))
    if not text:
        return None, TOO_SHORT
    if _is_code(text):
        return None, CODE_EXPRESSION
    if name and _restates_signature(text, name, params):
        return None, SIGNATURE
    if len(text.split()) < MIN_WORDS:
        return None, TOO_SHORT
    return text, None


def entry_parameters(code: str, name: str) -> tuple[str, ...]:
    """The parameter names of the module-level ``def name`` in ``code`` (a mined canonical)."""
    try:
        module = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    for node in reversed(module.body):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            a = node.args
            every = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]
            return tuple(arg.arg for arg in every)
    return ()


# --queries FILE: a team's logged search queries (untrusted input, bounded).
MAX_QUERIES_BYTES = 16 * 1024 * 1024
MAX_QUERIES_LINES = 100_000
MAX_LINE_BYTES = 16 * 1024
MAX_QUERY_CHARS = 2_000
_FUNCTION_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z")


class QueriesFileError(SourceError):
    """A ``--queries`` file mining cannot use: a usage error naming the file and line."""


@dataclass(frozen=True)
class LoggedQuery:
    """One line of a ``--queries`` file."""

    line: int
    query: str  # whitespace joined
    function: str  # pkg.module.func or pkg.module.Class.method


def read_queries(path: Path) -> list[LoggedQuery]:
    """The lines of a ``--queries`` file (JSONL, UTF-8), each ``{"query": "...", "function":
    "pkg.module.func"}`` (other keys ignored, blank lines skipped); a :class:`QueriesFileError`
    for a file over :data:`MAX_QUERIES_BYTES` or :data:`MAX_QUERIES_LINES`, and for the first
    line that is not such an object (over :data:`MAX_LINE_BYTES`, not JSON, a key missing or
    not a string, a query over :data:`MAX_QUERY_CHARS` or holding a control character, a
    function that is no dotted name), naming its number."""
    where = one_line(str(path))
    try:
        with Path(path).open("rb") as handle:
            body = handle.read(MAX_QUERIES_BYTES + 1)
    except OSError as exc:
        raise QueriesFileError(f"--queries {where}: cannot read ({exc.strerror or exc})") from None
    if len(body) > MAX_QUERIES_BYTES:
        raise QueriesFileError(
            f"--queries {where}: larger than the {MAX_QUERIES_BYTES:,} bytes allowed"
        )
    raw = body.split(b"\n")
    if len(raw) > MAX_QUERIES_LINES + (1 if not raw[-1].strip() else 0):
        raise QueriesFileError(
            f"--queries {where}: more than the {MAX_QUERIES_LINES:,} lines allowed"
        )
    found = [
        _logged(line, number, where)
        for number, line in enumerate(raw, 1)
        if line.strip() and not (number == 1 and line.strip() == b"\xef\xbb\xbf")
    ]
    if not found:
        raise QueriesFileError(f"--queries {where}: holds no query")
    return found


def _logged(line: bytes, number: int, where: str) -> LoggedQuery:
    """One line as a :class:`LoggedQuery`, or the error naming it."""

    def refuse(why: str) -> QueriesFileError:
        return QueriesFileError(f"--queries {where}, line {number}: {why}")

    if number == 1 and line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]  # a UTF-8 byte order mark
    if len(line) > MAX_LINE_BYTES:
        raise refuse(f"longer than the {MAX_LINE_BYTES:,} bytes a line may hold")
    try:
        value = parse_json(line, "the line", dict, MAX_LINE_BYTES, max_depth=2)
    except JSONBoundError as exc:
        raise refuse(one_line(str(exc).removeprefix("the line: "))) from None
    query, function = value.get("query"), value.get("function")
    if not isinstance(query, str) or not isinstance(function, str):
        raise refuse('not {"query": "...", "function": "pkg.module.func"} (both strings)')
    if has_unsafe(query):
        raise refuse(f"the query holds a control character ({one_line(repr(query))[:200]})")
    query = " ".join(query.split())
    if not query:
        raise refuse("the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise refuse(f"the query is longer than the {MAX_QUERY_CHARS:,} characters allowed")
    if len(function) > 500 or not _FUNCTION_PATH.match(function):
        raise refuse(
            f"function {one_line(repr(function))[:200]} is not a dotted name (pkg.module.func)"
        )
    return LoggedQuery(number, query, function)
