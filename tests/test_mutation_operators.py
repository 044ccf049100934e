"""Mutation operators, candidate generation and stacking (pure; no code is executed)."""

from __future__ import annotations

import ast
import difflib
import inspect
import itertools
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_execretrieval.mutation import operators
from pytest_execretrieval.mutation.fingerprint import (
    code_fingerprint,
    mutation_version,
    source_fingerprint,
)
from pytest_execretrieval.mutation.operators import (
    CORE_CLASSES,
    MUTATION_FINGERPRINT,
    MUTATION_VERSION,
    OPERATOR_CLASSES,
    OPERATORS,
    Edit,
    OperatorClass,
    apply_edits,
    diff_blocks,
    edit_lines,
    generate_edits,
    generate_mutants,
)
from pytest_execretrieval.mutation.stacking import stack_mutants

EXPR_TEMPLATE = "def f(a, b):\n    return {}\n"


def _changed_lines(source: str, code: str) -> list[str]:
    diff = difflib.unified_diff(source.splitlines(), code.splitlines(), n=0, lineterm="")
    return [line[1:] for line in diff if line.startswith("+") and not line.startswith("+++")]


def _expr_mutants(expr: str, operator: str) -> set[str]:
    """Mutated return expressions of ``def f(a, b): return <expr>`` for one class."""
    source = EXPR_TEMPLATE.format(expr)
    found = set()
    for m in generate_mutants(source, "f"):
        if m.operator == operator:
            (line,) = _changed_lines(source, m.code)
            found.add(line.removeprefix("    return "))
    return found


def test_class_tables() -> None:
    assert CORE_CLASSES == (
        "off_by_one",
        "wrong_operator",
        "swap_arguments",
        "remove_edge_case_check",
        "wrong_comparison",
        "off_by_one_boundary",
    )
    assert OPERATOR_CLASSES == (
        *CORE_CLASSES,
        "negate_condition",
        "swap_min_max",
        "complement_comparison",
    )


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("a * 2 - 1", {"a * 3 - 1", "a * 1 - 1", "a * 2 - 2", "a * 2"}),
        ("a + 1", {"a + 2", "a"}),
        ("a - 0", {"a + 1", "a - 1"}),
        ("1 - a", {"2 - a", "0 - a"}),
        ("-1", {"-2", "0"}),
        ("0 ** a", {"1 ** a", "(-1) ** a"}),
        ("a[::2]", {"a[::3]", "a[::1]"}),
        ("range(0, a, 2)", {"range(0, a, 3)", "range(0, a, 1)"}),
        # bounds belong to off_by_one_boundary
        ("a[1:-1]", set()),
        ("a[b - 1]", set()),
        ("range(a - 1)", set()),
        ("a + 1.5", set()),
        ("a is True", set()),
    ],
)
def test_off_by_one(expr: str, expected: set[str]) -> None:
    assert _expr_mutants(expr, "off_by_one") == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("a + b", {"a - b"}),
        ("a - b", {"a + b"}),
        ("a * b", {"a // b"}),
        ("a // b", {"a * b"}),
        ("a / b", {"a * b"}),
        ("a % b", {"a // b"}),
        ("a ** b", {"a * b"}),
        ("a & b", {"a | b"}),
        ("a | b", {"a & b"}),
        ("a ^ b", {"a | b"}),
        ("a << b", {"a >> b"}),
        ("a >> b", {"a << b"}),
        ("a and b or a", {"a or b or a", "a and b and a"}),
        ("-(a + b)", {"(a + b)", "-(a - b)"}),
        ("-1", set()),
        ("a @ b", set()),
    ],
)
def test_wrong_operator(expr: str, expected: set[str]) -> None:
    assert _expr_mutants(expr, "wrong_operator") == expected


def test_wrong_operator_augmented_keeps_formatting() -> None:
    source = "def f(a, b):\n    a  +=b  # add\n    a*=2\n    return a\n"
    codes = [m.code for m in generate_mutants(source, "f") if m.operator == "wrong_operator"]
    assert codes == [
        "def f(a, b):\n    a  -=b  # add\n    a*=2\n    return a\n",
        "def f(a, b):\n    a  +=b  # add\n    a//=2\n    return a\n",
    ]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("pow(a, b, 3)", {"pow(b, a, 3)", "pow(a, 3, b)"}),
        ("g(a, a)", set()),
        ("g(*a, b)", set()),
        ("g(a, key=b)", set()),
        ("a - b - 1", {"1 - (a - b)", "b - a - 1"}),
        ("a ** -b", {"(-b) ** a"}),
        ("(a + b) // b", {"b // (a + b)"}),
        ("a << b", {"b << a"}),
        ("a + b", set()),
        ("a - a", set()),
    ],
)
def test_swap_arguments(expr: str, expected: set[str]) -> None:
    assert _expr_mutants(expr, "swap_arguments") == expected


GUARDS = """def f(xs):
    total = 0
    for x in xs:
        if x < 0:
            continue
        if x > 10:
            break  # stop
        total += x
    if not xs:
        raise ValueError("empty")
    return total
"""


def test_remove_edge_case_check() -> None:
    codes = [
        m.code for m in generate_mutants(GUARDS, "f") if m.operator == "remove_edge_case_check"
    ]
    lines = GUARDS.splitlines(keepends=True)
    assert codes == [
        "".join(lines[:3] + lines[5:]),
        "".join(lines[:5] + lines[7:]),
        "".join(lines[:8] + lines[10:]),
    ]
    only = "def g(x):\n    if x:\n        return 1\n"
    (mutant,) = [m for m in generate_mutants(only, "g") if m.operator == "remove_edge_case_check"]
    assert mutant.code == "def g(x):\n    pass\n"
    assert (mutant.line, mutant.description) == (2, "remove `if x:`")
    assert (mutant.lines_changed, mutant.chars_changed) == (
        2,
        len("if x:\n        return 1") + len("pass"),
    )


def test_remove_edge_case_check_skips_else_elif_and_non_exits() -> None:
    source = """def h(x):
    if x > 1:
        return 1
    elif x < 0:
        return 2
    if x == 0:
        x = 1
    if x == 5:
        return 3
    else:
        return 4
    return x
"""
    assert not [m for m in generate_mutants(source, "h") if m.operator == "remove_edge_case_check"]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("a == b", {"a != b"}),
        ("a != b", {"a == b"}),
        ("a < b", {"a > b"}),
        ("a > b", {"a < b"}),
        ("a <= b", {"a >= b"}),
        ("a >= b", {"a <= b"}),
        ("a in b", {"a not in b"}),
        ("a not  in b", {"a in b"}),
        ("a is b", {"a is not b"}),
        ("a is not b", {"a is b"}),
        ("a < b <= 3", {"a > b <= 3", "a < b >= 3"}),
    ],
)
def test_wrong_comparison(expr: str, expected: set[str]) -> None:
    assert _expr_mutants(expr, "wrong_comparison") == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("a < b", {"a <= b"}),
        ("a <= b", {"a < b"}),
        ("a > b", {"a >= b"}),
        ("a >= b", {"a > b"}),
        ("a == b", set()),
        ("sum(range(b))", {"sum(range(b + 1))", "sum(range(b - 1))", "sum(range(1, b))"}),
        (
            "sum(range(1, b + 1))",
            {
                "sum(range(2, b + 1))",
                "sum(range(0, b + 1))",
                "sum(range(1, b + 2))",
                "sum(range(1, b))",
            },
        ),
        (
            "range(0, b, 2)",
            {"range(1, b, 2)", "range(-1, b, 2)", "range(0, b + 1, 2)", "range(0, b - 1, 2)"},
        ),
        ("a[:b]", {"a[:b + 1]", "a[:b - 1]"}),
        ("a[b:]", {"a[b + 1:]", "a[b - 1:]"}),
        ("a[1:-1]", {"a[2:-1]", "a[0:-1]", "a[1:0]", "a[1:-2]"}),
        ("a[:a or b]", {"a[:(a or b) + 1]", "a[:(a or b) - 1]"}),
        ("a[0]", {"a[1]", "a[-1]"}),
        ("a[b - 1]", {"a[b]", "a[b - 2]"}),
        ("a[b]", set()),
        ("a[::2]", set()),
    ],
)
def test_off_by_one_boundary(expr: str, expected: set[str]) -> None:
    assert _expr_mutants(expr, "off_by_one_boundary") == expected


def test_negate_condition() -> None:
    source = """def f(a, b):
    if a:
        return 1
    while not b:
        b = a
    while True:
        break
    return a if a < b else b
"""
    changed = [
        _changed_lines(source, m.code)
        for m in generate_mutants(source, "f")
        if m.operator == "negate_condition"
    ]
    assert changed == [
        ["    if not a:"],
        ["    while b:"],
        ["    return a if not (a < b) else b"],
    ]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("min(a, b)", {"max(a, b)"}),
        ("max(a)", {"min(a)"}),
        ("sorted(a)", {"sorted(a, reverse=True)"}),
        ("sorted(a, key=b, reverse=True)", {"sorted(a, key=b)"}),
        ("sorted(a, reverse=True, key=b)", {"sorted(a, key=b)"}),
        ("sorted(a, reverse=False)", set()),
        ("sorted(a, **b)", set()),
        ("sorted(x for x in a)", set()),
    ],
)
def test_swap_min_max(expr: str, expected: set[str]) -> None:
    assert _expr_mutants(expr, "swap_min_max") == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("a < b", {"a >= b"}),
        ("a >= b", {"a < b"}),
        ("a > b", {"a <= b"}),
        ("a <= b", {"a > b"}),
        ("a == b", set()),
    ],
)
def test_complement_comparison(expr: str, expected: set[str]) -> None:
    assert _expr_mutants(expr, "complement_comparison") == expected


PROTECTED = '''import functools


@functools.lru_cache(maxsize=1 + 1)
def f(x: "int" = 1 + 2, y: tuple[int, 3] = (1 < 2)) -> tuple[int, 4]:
    """Docstring with 1 + 2 < 3 and not x."""
    z: list[int - 1] = [x]
    s = "a 1 + 2 < 3" 'b - 1'
    t = f"{x + 1} {y < 2} {min(x, y)} {x[1:2]}"
    flags = (True, False, None)
    g = lambda a=1, *, b=-1: a
    return s, t, z, flags, g, x - 1
'''


def test_protected_regions_untouched() -> None:
    mutants = generate_mutants(PROTECTED, "f")
    assert mutants
    last = len(PROTECTED.splitlines())
    assert {m.line for m in mutants} == {last}
    for m in mutants:
        (changed,) = _changed_lines(PROTECTED, m.code)
        assert changed.startswith("    return s, t, z, flags, g, ")


def test_mutant_metadata_and_order() -> None:
    source = "def f(a, b):\n    c = divmod(a, b)\n    return a < b + 1\n"
    mutants = generate_mutants(source, "f")
    assert [(m.line, m.operator, m.description) for m in mutants] == [
        (2, "swap_arguments", "swap `a` and `b`"),
        (3, "wrong_comparison", "`<` -> `>`"),
        (3, "off_by_one_boundary", "`<` -> `<=`"),
        (3, "complement_comparison", "`<` -> `>=`"),
        (3, "off_by_one", "`b + 1` -> `b`"),  # the dropped span starts before `+`
        (3, "wrong_operator", "`+` -> `-`"),
        (3, "off_by_one", "`b + 1` -> `b + 2`"),
    ]
    boundary = mutants[2]
    assert boundary.code == "def f(a, b):\n    c = divmod(a, b)\n    return a <= b + 1\n"
    assert (boundary.lines_changed, boundary.chars_changed) == (1, 1)
    assert boundary.edits == (Edit(47, 48, "<=", "`<` -> `<=`", "off_by_one_boundary"),)


def test_non_ascii_crlf_and_formatting_preserved() -> None:
    source = 'def f(n):\r\n    s = ("é", n+1)  # ünïcode\r\n    return s\r\n'
    codes = [m.code for m in generate_mutants(source, "f") if m.operator == "off_by_one"]
    assert codes == [
        'def f(n):\r\n    s = ("é", n)  # ünïcode\r\n    return s\r\n',
        'def f(n):\r\n    s = ("é", n+2)  # ünïcode\r\n    return s\r\n',
    ]


def test_entry_point_required() -> None:
    with pytest.raises(ValueError):
        generate_mutants("def g():\n    return 1\n", "f")
    # a mutant must keep defining the entry point at module level
    source = "import sys\nif sys:\n    raise SystemExit\ndef f():\n    return 1\n"
    assert all("def f" in m.code for m in generate_mutants(source, "f"))


def test_apply_edits_rejects_overlap() -> None:
    with pytest.raises(ValueError):
        apply_edits("abcdef", [Edit(0, 3, "x", ""), Edit(2, 4, "y", "")])
    assert apply_edits("abcdef", [Edit(4, 6, "Z", ""), Edit(0, 1, "", "")]) == "bcdZ"


# --- properties ---------------------------------------------------------------------------

TEMPLATES = (
    """def f(xs, n):
    total = {c0}
    for i in range({c1}, len(xs) {add} {c2}):
        if xs[i] {cmp} n:
            total {aug}= xs[i] {op} {c3}
    return total
""",
    '''def f(xs, n):
    """Doc {c0} < {c1}."""
    if n {cmp} {c0}:
        return "{c1} + {c2}"
    ys = sorted(xs)[{c1}:n {add} {c2}]
    return min(ys, default={c3}) if ys else max(n, {c2})
''',
    """def f(a, b):
    while a {cmp} b and not b:
        a = a {op} {c0}
        if a {cmp} {c1}:
            break
    return (a {op} b, -a, b ** {c1}, f"{{a {add} {c2}}}", a[{c3}])
""",
)
OPS = ("+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>")
CMPS = ("<", "<=", ">", ">=", "==", "!=", "in", "not in", "is", "is not")

sources = st.builds(
    lambda template, **kw: template.format(**kw),
    st.sampled_from(TEMPLATES),
    c0=st.integers(-3, 12),
    c1=st.integers(-3, 12),
    c2=st.integers(-3, 12),
    c3=st.integers(-3, 12),
    add=st.sampled_from(("+", "-")),
    op=st.sampled_from(OPS),
    aug=st.sampled_from(OPS),
    cmp=st.sampled_from(CMPS),
)
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _defines_f(tree: ast.Module) -> bool:
    return any(isinstance(s, ast.FunctionDef) and s.name == "f" for s in tree.body)


@FAST
@given(sources)
def test_every_mutant_is_a_valid_single_hunk_near_clone(source: str) -> None:
    original = ast.dump(ast.parse(source))
    mutants = generate_mutants(source, "f")
    assert mutants
    dumps = set()
    for m in mutants:
        tree = ast.parse(m.code)
        assert _defines_f(tree)
        dump = ast.dump(tree)
        assert dump != original and dump not in dumps
        dumps.add(dump)
        assert diff_blocks(source, m.code)[0] == 1
        assert m.operator in OPERATOR_CLASSES
        assert len(m.edits) == 1 and apply_edits(source, m.edits) == m.code
        assert m.lines_changed >= 1 and m.chars_changed >= 1
    assert generate_mutants(source, "f") == mutants
    edits = generate_edits(source)
    keys = [(e.start, OPERATOR_CLASSES.index(e.operator), e.end, e.replacement) for e in edits]
    assert keys == sorted(keys)


def test_independent_of_hash_seed() -> None:
    script = (
        "import sys; from pytest_execretrieval.mutation.operators import generate_mutants\n"
        "print(repr(generate_mutants(sys.stdin.read(), 'f')))\n"
    )
    source = TEMPLATES[0].format(c0=0, c1=1, c2=1, c3=2, add="-", op="+", aug="+", cmp="<")
    root = Path(__file__).resolve().parents[1]
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            input=source,
            capture_output=True,
            text=True,
            check=True,
            cwd=root,
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(root)},
        ).stdout
        for seed in ("0", "1", "12345")
    }
    assert len(outputs) == 1
    assert outputs.pop() == repr(generate_mutants(source, "f")) + "\n"


@FAST
@given(sources, st.integers(2, 4), st.integers(1, 6))
def test_stacking(source: str, k: int, limit: int) -> None:
    singles = generate_mutants(source, "f")
    stacked = stack_mutants(source, "f", k, singles, limit)
    assert stacked == stack_mutants(source, "f", k, singles, limit)
    assert len(stacked) <= limit
    dumps = {ast.dump(ast.parse(source))}
    for m in stacked:
        assert len(m.edits) == k
        spans = sorted(edit_lines(source, e) for e in m.edits)
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
        assert m.operator == "+".join(sorted(e.operator for e in m.edits))
        tree = ast.parse(m.code)
        assert _defines_f(tree) and ast.dump(tree) not in dumps
        dumps.add(ast.dump(tree))
        assert apply_edits(source, m.edits) == m.code


def test_stacking_prefers_distinct_classes() -> None:
    singles = generate_mutants(GUARDS, "f")
    stacked = stack_mutants(GUARDS, "f", 3, singles, 4)
    assert len(stacked) == 4
    assert all(len(set(m.operator.split("+"))) == 3 for m in stacked)
    first = stacked[0]
    assert first.description == "; ".join(e.description for e in first.edits)
    assert first.lines_changed == diff_blocks(GUARDS, first.code)[1]
    # a two-line function cannot hold three edits on disjoint lines
    assert (
        stack_mutants(
            "def f(n):\n    return n + 1\n",
            "f",
            3,
            generate_mutants("def f(n):\n    return n + 1\n", "f"),
            5,
        )
        == []
    )


# --- the table's core flags and the mutation version --------------------------------------


def test_core_classes_are_the_flagged_entries() -> None:
    assert CORE_CLASSES == tuple(name for name, c in OPERATORS.items() if c.core)
    assert all(not OPERATORS[name].core for name in OPERATOR_CLASSES[len(CORE_CLASSES) :])


def test_mutation_fingerprint_is_recorded() -> None:
    fingerprint = code_fingerprint()
    assert fingerprint == MUTATION_FINGERPRINT, (
        "the mutation code (operators.py, select.py, stacking.py or the operator table) changed: "
        "if the mutants or their selection changed, bump MUTATION_VERSION in "
        "mutation/operators.py and rebuild the corpus; either way set "
        f'MUTATION_FINGERPRINT = "{fingerprint}" there'
    )
    assert mutation_version() == MUTATION_VERSION


OPERATORS_SOURCE = inspect.getsource(operators)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('ast.Eq: "!=", ast.NotEq: "=="', 'ast.Eq: "!=", ast.NotEq: "is"'),  # a table entry
        ("for delta in (1, -1):", "for delta in (1, -2):"),  # a helper's logic
        ('    "negate_condition": OperatorClass((_negate_condition,), core=False),\n', ""),
        ("core=False", "core=True"),
        ("    functions: tuple[Operator, ...]\n", "    functions: tuple[Operator, ...] = ()\n"),
        ("    core: bool\n", "    core: ClassVar[bool]\n"),  # a dataclass reads annotations
        ('f"{new_op}{spacing}{abs(value)}"', 'f"{new_op} {abs(value)}"'),  # inside an f-string
    ],
)
def test_code_edits_change_the_fingerprint(old: str, new: str) -> None:
    assert old in OPERATORS_SOURCE
    edited = OPERATORS_SOURCE.replace(old, new, 1)
    assert source_fingerprint(edited) != source_fingerprint(OPERATORS_SOURCE)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Core classes\n", "The core classes\n"),  # the module docstring
        ('"""Replace ``source[start:end]``', '"""Replace ``text[start:end]``'),  # a docstring
        ("# fmt: off", "# formatting left alone"),  # a comment
        (
            "def _off_by_one(node: ast.AST, ctx: SourceContext)",
            "def _off_by_one(\n    node: ast.AST, ctx: SourceContext\n)",
        ),
        ("import bisect\n", "import bisect  # binary search\nimport os\n"),  # imports
        (
            "def _off_by_one(node: ast.AST, ctx: SourceContext) -> Iterator[Edit]:",
            "def _off_by_one(node: ast.expr, ctx: Context) -> Iterable[Edit]:",
        ),  # signature types
        ('MUTATION_VERSION = "', 'MUTATION_VERSION = "9'),  # the recording itself
        ("MUTATION_FINGERPRINT = ", "MUTATION_FINGERPRINT = 'x' + "),
    ],
)
def test_comments_docs_formatting_and_recording_leave_the_fingerprint(old: str, new: str) -> None:
    assert old in OPERATORS_SOURCE
    edited = OPERATORS_SOURCE.replace(old, new, 1)
    assert source_fingerprint(edited) == source_fingerprint(OPERATORS_SOURCE)


def test_an_operator_changed_at_run_time_changes_the_mutation_version(monkeypatch) -> None:
    def off_by_two(node: ast.AST, ctx) -> Iterator[Edit]:
        yield from ()

    recorded = mutation_version()
    monkeypatch.setitem(OPERATORS, "off_by_one", OperatorClass((off_by_two,), core=True))
    changed = mutation_version()
    assert changed.startswith(f"{MUTATION_VERSION}+unrecorded-") and changed != recorded
    monkeypatch.setitem(OPERATORS, "off_by_one", replace(OPERATORS["off_by_one"], core=False))
    assert mutation_version() not in (recorded, changed)


def test_fingerprint_is_independent_of_hash_seed() -> None:
    script = (
        "from pytest_execretrieval.mutation.fingerprint import code_fingerprint as f; print(f())"
    )
    root = Path(__file__).resolve().parents[1]
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(root)},
        ).stdout
        for seed in ("0", "1")
    }
    assert outputs == {code_fingerprint() + "\n"}
