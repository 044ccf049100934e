"""The real-bug family classes (mutation/families.py): table-driven cases per class, and
properties of every class over the bundled canonicals (pure; no code is executed)."""

from __future__ import annotations

import ast
import difflib
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_execretrieval.corpus.items import bundled_items_dir, load_items
from pytest_execretrieval.mutation import families
from pytest_execretrieval.mutation.families import (
    ALL_OPERATORS,
    FAMILY_CLASSES,
    FAMILY_OPERATORS,
    TSSB_COUNTS,
    TSSB_PATTERNS,
)
from pytest_execretrieval.mutation.fingerprint import families_fingerprint, families_version
from pytest_execretrieval.mutation.operators import (
    OPERATOR_CLASSES,
    OPERATORS,
    apply_edits,
    diff_blocks,
    generate_edits,
    generate_mutants,
)


def _changed(source: str, code: str) -> list[str]:
    diff = difflib.unified_diff(source.splitlines(), code.splitlines(), n=0, lineterm="")
    return [ln[1:].strip() for ln in diff if ln.startswith("+") and not ln.startswith("+++")]


def _class_lines(source: str, operator: str) -> set[str]:
    """The changed line of each mutant of one class (a deleted line reads as "<deleted>")."""
    found = set()
    for m in generate_mutants(source, "f", ALL_OPERATORS):
        if m.operator == operator:
            lines = _changed(source, m.code)
            found.add(lines[0] if lines else "<deleted>")
    return found


CASES = [
    # (class, source, changed lines expected among its mutants, lines it must not produce)
    (
        "change_identifier_used",
        "def f(a, b):\n    t = a + 1\n    u = b\n    return t * u\n",
        {"t = b + 1", "u = a", "return u * u", "return t * t"},
        {"t = t + 1", "u = u"},
    ),
    (
        "change_binary_operand",
        "def f(a, b):\n    if a < b:\n        return a % 3\n    return b\n",
        {"if 3 < b:", "if a < 3:", "return a % b"},
        {"if a < a:"},
    ),
    (
        "same_function_more_args",
        "def f(s, xs):\n    xs.sort()\n    return s.split(',') + s.split() + [round(1.5)]\n",
        {
            "xs.sort(reverse=True)",
            "return s.split(',', 1) + s.split() + [round(1.5)]",
            "return s.split(',') + s.split(maxsplit=1) + [round(1.5)]",
            "return s.split(',') + s.split() + [round(1.5, 1)]",
        },
        set(),
    ),
    (
        "wrong_function_name",
        "import math\ndef f(xs, s):\n    xs.append(s.lstrip())\n"
        "    return any(xs) or math.floor(2.5)\n",
        {
            "xs.extend(s.lstrip())",
            "xs.append(s.rstrip())",
            "return all(xs) or math.floor(2.5)",
            "return any(xs) or math.ceil(2.5)",
        },
        set(),
    ),
    (
        "change_attribute_used",
        "def f(node):\n    return node.left.value + node.right.value\n",
        {"return node.right.value + node.right.value", "return node.left.left + node.right.value"},
        set(),
    ),
    (
        "change_numeric_literal",
        "def f(a):\n    return a * 10 + 0.5\n",
        {
            "return a * 12 + 0.5",
            "return a * 8 + 0.5",
            "return a * 20 + 0.5",
            "return a * 10 + 1.0",
            "return a * 10 + 0.25",
        },
        {"return a * 11 + 0.5", "return a * 9 + 0.5"},
    ),
    (
        "more_specific_if",
        "def f(a, b):\n    if a > 0:\n        return 1\n    return b == 2\n",
        {"if a > 0 and b == 2:"},
        {"if a > 0 and a > 0:"},
    ),
    (
        "same_function_less_args",
        "def f(d, s):\n    return d.get(s, 0) + round(2.5, 1) + len(sorted(s, key=len))\n",
        {
            "return d.get(s) + round(2.5, 1) + len(sorted(s, key=len))",
            "return d.get(s, 0) + round(2.5) + len(sorted(s, key=len))",
            "return d.get(s, 0) + round(2.5, 1) + len(sorted(s))",
        },
        set(),
    ),
    (
        "change_boolean_literal",
        "def f(a):\n    while True:\n        return a is True\n",
        {"return a is False"},
        {"while False:"},
    ),
    (
        "less_specific_if",
        "def f(a, b):\n    if a > 0 and b > 0:\n        return 1\n    return 0\n",
        {"if b > 0:", "if a > 0:"},
        set(),
    ),
    (
        "change_keyword_argument_used",
        "def g(x, lo=0, hi=9):\n    return x\ndef f(a):\n    return g(a, lo=1)\n",
        {"return g(a, hi=1)"},
        {"return g(a, x=1)"},
    ),
    (
        "exception_path",
        "def f(a):\n    try:\n        return int(a)\n"
        "    except ValueError:\n        raise KeyError(a)\n",
        {"raise IndexError(a)", "except Exception:", "pass"},
        set(),
    ),
    (
        "type_confusion",
        "def f(a, b):\n    a //= 2\n    return int(a / b) + float(a + b)\n",
        {
            "a /= 2",
            "return int(a // b) + float(a + b)",
            "return (a / b) + float(a + b)",
            "return int(a / b) + (a + b)",
        },
        set(),
    ),
]


@pytest.mark.parametrize(
    ("operator", "source", "expected", "absent"), CASES, ids=[c[0] for c in CASES]
)
def test_family_class_writes_its_pattern(operator, source, expected, absent) -> None:
    found = _class_lines(source, operator)
    assert expected <= found, f"missing {expected - found}; found {found}"
    assert not absent & found


def test_every_family_class_has_a_case_and_a_pattern() -> None:
    assert {c[0] for c in CASES} == set(FAMILY_CLASSES)
    assert set(TSSB_PATTERNS) == set(OPERATOR_CLASSES) | set(FAMILY_CLASSES)
    assert {p for p in TSSB_PATTERNS.values() if p} <= set(TSSB_COUNTS)
    assert not set(FAMILY_CLASSES) & set(OPERATOR_CLASSES)


def test_a_raise_ending_a_guard_stays_remove_edge_case_checks() -> None:
    source = "def f(a):\n    if a < 0:\n        raise ValueError(a)\n    return a\n"
    dropped = [
        m
        for m in generate_mutants(source, "f", ALL_OPERATORS)
        if "pass" in m.code or "raise" not in m.code
    ]
    assert {m.operator for m in dropped} == {"remove_edge_case_check"}


def test_the_default_table_generates_no_family_mutant() -> None:
    source = CASES[0][1] + "".join(
        c[1].replace("def f(", f"def f{i}(") for i, c in enumerate(CASES)
    )
    default = generate_mutants(source, "f")
    assert {m.operator for m in default} <= set(OPERATORS)
    everything = generate_mutants(source, "f", ALL_OPERATORS)
    assert {m.operator for m in everything} >= set(FAMILY_CLASSES)
    # The default table's mutants are exactly the core table's, whatever the families add.
    assert [m.code for m in default] == [m.code for m in generate_mutants(source, "f", OPERATORS)]


def test_per_class_keeps_the_earliest_mutants_of_each_class() -> None:
    source = CASES[0][1]
    every = generate_mutants(source, "f", ALL_OPERATORS)
    capped = generate_mutants(source, "f", ALL_OPERATORS, per_class=1)
    firsts = {}
    for m in every:
        firsts.setdefault(m.operator, m)
    assert capped == sorted(firsts.values(), key=every.index)


def test_families_fingerprint_is_recorded() -> None:
    fingerprint = families_fingerprint()
    assert fingerprint == families.FAMILIES_FINGERPRINT, (
        "mutation/families.py or its table changed: if the mutants changed, bump "
        "FAMILIES_VERSION and rebuild the families corpus (`execretrieval build --families`); "
        f'either way set FAMILIES_FINGERPRINT = "{fingerprint}" there'
    )
    assert families_version() == families.FAMILIES_VERSION


# --- properties over the bundled canonicals ------------------------------------------------


@cache
def _canonicals() -> list[tuple[str, str]]:
    items, _ = load_items(bundled_items_dir())
    return [(item.canonical, item.entry_point) for item in items]


@cache
def _mutants(index: int) -> tuple:
    source, entry = _canonicals()[index]
    return tuple(generate_mutants(source, entry, ALL_OPERATORS))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, 999), operator=st.sampled_from(FAMILY_CLASSES))
def test_family_mutants_are_single_attributable_edits(index: int, operator: str) -> None:
    source, entry = _canonicals()[index % len(_canonicals())]
    canonical = ast.dump(ast.parse(source))
    for m in _mutants(index % len(_canonicals())):
        if m.operator != operator:
            continue
        tree = ast.parse(m.code)  # parses
        assert ast.dump(tree) != canonical  # never the canonical again (syntactically equal)
        (edit,) = m.edits  # one edit, of the class recorded
        assert edit.operator == operator
        assert apply_edits(source, [edit]) == m.code  # the recorded edit is the whole change
        assert diff_blocks(source, m.code)[0] == 1  # one hunk


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, 999))
def test_family_generation_is_deterministic(index: int) -> None:
    source, entry = _canonicals()[index % len(_canonicals())]
    first = generate_mutants(source, entry, ALL_OPERATORS, per_class=3)
    assert first == generate_mutants(source, entry, ALL_OPERATORS, per_class=3)
    assert generate_edits(source, FAMILY_OPERATORS) == generate_edits(source, FAMILY_OPERATORS)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([c[1] for c in CASES]), st.sampled_from(FAMILY_CLASSES))
def test_every_family_edit_lies_inside_the_source(source: str, operator: str) -> None:
    for edit in generate_edits(source, {operator: FAMILY_OPERATORS[operator]}):
        assert 0 <= edit.start <= edit.end <= len(source)
        assert edit.operator == operator and edit.description
