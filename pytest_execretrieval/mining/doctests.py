"""A docstring's examples as test-grammar statements, with where each came from.

:class:`doctest.DocTestParser` reads the examples (it only parses; nothing runs). Each
``>>> CALL`` with its printed ``WANT`` becomes ``assert CALL == WANT``, kept only where the test
grammar (:func:`..corpus.items.grammar_problem`) accepts it: CALL calls the entry point (a
``list(...)``/``sorted(...)`` form as written), WANT is a literal, every bound of the grammar
holds. A traceback becomes ``assert raises(Exc, f, args...)``. ``>>> name = literal`` lines
are inlined into later examples. Every other example is dropped and counted by reason
(:data:`DROPPED`); no text makes this raise or stall (its sizes are checked before parsing).
"""

from __future__ import annotations

import ast
import doctest
from collections import Counter
from dataclasses import dataclass, field

from ..bounds import parse_problem
from ..corpus.items import grammar_problem
from ..execution import _grammar
from ..sanitize import has_unsafe

NOT_A_CALL = "not a call of the function"
NO_OUTPUT = "prints nothing"
NOT_LITERAL = "output is not a literal of the test grammar"
TOO_LARGE = "too large or too deeply nested for the test grammar"
UNKNOWN_ERROR = "raises an exception that is not a builtin class"
CONTROL = "holds a control character"
UNPARSABLE = "does not parse as doctest examples"
SKIPPED = "marked +SKIP: doctest never runs it"
DROPPED = (
    NOT_A_CALL,
    NO_OUTPUT,
    NOT_LITERAL,
    TOO_LARGE,
    UNKNOWN_ERROR,
    CONTROL,
    UNPARSABLE,
    SKIPPED,
)


@dataclass
class Converted:
    """The tests taken from one docstring: each with its docstring line, and what was dropped."""

    tests: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)  # 0-based line of each test's example
    dropped: Counter[str] = field(default_factory=Counter)


def doctest_tests(docstring: str, entry_point: str) -> Converted:
    """The examples of ``docstring`` that become tests of ``entry_point``."""
    result = Converted()
    try:
        examples = doctest.DocTestParser().get_examples(docstring)
    except ValueError:  # inconsistent indentation or a missing blank after >>>
        result.dropped[UNPARSABLE] += 1
        return result
    bindings: dict[str, str] = {}
    for example in examples:
        test = _convert(example, entry_point, bindings)
        if test in DROPPED:
            result.dropped[test] += 1
        elif test:
            result.tests.append(test)
            result.lines.append(example.lineno)
    return result


def _convert(example: doctest.Example, entry_point: str, bindings: dict[str, str]) -> str:
    """The test of one example, a reason in :data:`DROPPED`, or "" for a binding line."""
    source, want = example.source.strip(), example.want.strip()
    if example.options.get(doctest.SKIP):
        return SKIPPED
    if max(len(source), len(want)) > _grammar.MAX_SOURCE:
        return TOO_LARGE
    if has_unsafe(source) or has_unsafe(" ".join(want.split())):
        return CONTROL
    if parse_problem(source):
        return TOO_LARGE
    try:
        statement = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return NOT_A_CALL
    if len(statement) != 1:
        return NOT_A_CALL
    node = statement[0]
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    ):
        name, value = node.targets[0].id, _inlined(node.value, bindings)
        bindings.pop(name, None)
        if value is None:
            return TOO_LARGE
        bindings[name] = ast.unparse(value)
        return ""
    if not isinstance(node, ast.Expr):
        return NOT_A_CALL
    expression = _inlined(node.value, bindings)
    if expression is None:
        return TOO_LARGE
    if example.exc_msg is not None:
        return _raises_test(expression, example.exc_msg, entry_point)
    if not want:
        return NO_OUTPUT
    # The example's own text where it is the call alone; a comment after it (a doctest
    # directive) would swallow the comparison.
    call = ast.unparse(expression) if bindings or "#" in source else source
    return _accepted(f"assert {call} == {_one_line(want)}", entry_point)


def _one_line(want: str) -> str:
    """A printed value over several lines (a pretty-printed list) as one line, when it parses."""
    if "\n" not in want:
        return want
    try:
        return ast.unparse(ast.parse(want, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return want  # the grammar refuses it


def _raises_test(expression: ast.expr, exc_msg: str, entry_point: str) -> str:
    error = exc_msg.partition(":")[0].strip().rsplit(".", 1)[-1]
    if error not in _grammar.EXCEPTIONS:
        return UNKNOWN_ERROR
    if not (isinstance(expression, ast.Call) and isinstance(expression.func, ast.Name)):
        return NOT_A_CALL
    arguments = [ast.unparse(a) for a in expression.args]
    arguments += [f"{k.arg}={ast.unparse(k.value)}" for k in expression.keywords if k.arg]
    if len(arguments) != len(expression.args) + len(expression.keywords):
        return NOT_A_CALL  # a **mapping argument
    return _accepted(
        f"assert raises({', '.join([error, expression.func.id, *arguments])})", entry_point
    )


def _accepted(test: str, entry_point: str) -> str:
    if len(test) > _grammar.MAX_SOURCE or parse_problem(test):
        return TOO_LARGE
    problem = grammar_problem(test, entry_point)
    if problem is None:
        return test
    if "not the entry point" in problem or "call" in problem.split(":")[0]:
        return NOT_A_CALL
    if "limit" in problem or "deep" in problem or "large" in problem:
        return TOO_LARGE
    return NOT_LITERAL


class _Inline(ast.NodeTransformer):
    def __init__(self, bindings: dict[str, str]):
        self.bindings = bindings

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if isinstance(node.ctx, ast.Load) and node.id in self.bindings:
            return ast.parse(self.bindings[node.id], mode="eval").body
        return node


def _inlined(expression: ast.expr, bindings: dict[str, str]) -> ast.expr | None:
    """``expression`` with the earlier examples' bindings put in, or None when that would be
    larger than a test may be (counted before anything is built: bindings of bindings grow)."""
    uses = [
        n.id
        for n in ast.walk(expression)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in bindings
    ]
    if not uses:
        return expression
    if len(ast.unparse(expression)) + sum(len(bindings[u]) for u in uses) > _grammar.MAX_SOURCE:
        return None
    return _Inline(bindings).visit(ast.parse(ast.unparse(expression), mode="eval").body)
