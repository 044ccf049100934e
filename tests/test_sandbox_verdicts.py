"""Verdicts decided outside the snippet's process: test planning, the value codec, and the
test shapes of the bundled set evaluated the way Python would."""

from __future__ import annotations

import ast
import builtins
import datetime as dt
import json
import math
import tomllib
from collections import Counter, OrderedDict, defaultdict, deque
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.execution._sandbox_child import (
    UnsupportedValue,
    decode,
    encode,
    plan_test,
)
from pytest_execretrieval.execution.sandbox import Limits, Sandbox

ITEMS = Path(__file__).resolve().parents[1] / "items"
HOLE_NAMES = {"__hole__", "__capture__", "__raises__"}


def trusted_for(setup: str) -> frozenset[str]:
    ns: dict = {}
    exec(setup, ns)  # noqa: S102 - bundled setups are import statements
    return frozenset(vars(builtins)) | frozenset(ns) | {"raises"}


def bundled_tests() -> list[tuple[str, str, str]]:
    out = []
    for path in sorted(ITEMS.glob("*/*.toml")):
        data = tomllib.loads(path.read_text())
        out += [(data["entry_point"], data.get("setup", ""), t) for t in data["tests"]]
    return out


def test_every_bundled_test_plans_with_the_snippet_only_in_holes():
    tests = bundled_tests()
    assert len(tests) > 1000
    lazy = 0
    for entry_point, setup, source in tests:
        trusted = trusted_for(setup)
        check, holes = plan_test(source, trusted)
        assert not isinstance(check, str), (source, check)
        assert holes, source  # every bundled test calls into the snippet
        names: set[str] = set()
        for code in [check, *(c for c in check.co_consts if hasattr(c, "co_names"))]:
            names |= set(code.co_names) | set(code.co_varnames)
        assert entry_point not in names, source  # the checker never looks the snippet up
        lazy += sum(not eager for *_, eager in holes)
        # No expected value reaches the child: each hole is one of the test's own call chains
        # rooted at the entry point (its arguments are the test's inputs), or, for raises(),
        # the (function, arguments) of that call.
        chains = set()
        for node in ast.walk(ast.parse(source)):
            root = node
            while isinstance(root, ast.Call | ast.Attribute | ast.Subscript):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and root.id == entry_point:
                chains.add(ast.unparse(node))
        for kind, hole_source, _, _ in holes:
            if kind == "value":
                assert hole_source in chains, (source, hole_source)
            else:
                assert hole_source.startswith(f"({entry_point}, ["), (source, hole_source)
    assert lazy < len(tests) // 100  # nearly every hole is sent in one frame per test


@pytest.mark.parametrize(
    "source, holes",
    [
        ("assert f(1) == [1, 2]", [("value", "f(1)", [], True)]),
        ("assert sorted(f(x=1)) == [1]", [("value", "f(x=1)", [], True)]),
        ("assert math.isclose(f(2.0), 1.5)", [("value", "f(2.0)", [], True)]),
        (
            "assert f(1)[0] == 2 < f(3)",
            [("value", "f(1)[0]", [], True), ("value", "f(3)", [], False)],
        ),  # fmt: skip
        ("assert raises(ValueError, f, 'x')", [("call", "(f, ['x'], {})", [], True)]),
        ("assert [n for n in range(3) if f(n)] == [1]", [("value", "f(n)", ["n"], False)]),
        ("assert (lambda a, b: a < b)(*f(2))", [("value", "f(2)", [], True)]),
        ("assert not f(1) and f(2)", [("value", "f(1)", [], True), ("value", "f(2)", [], False)]),
        ("assert f(date(2024, 1, 1)) is None", [("value", "f(date(2024, 1, 1))", [], True)]),
    ],
)
def test_plan_shapes(source, holes):
    trusted = trusted_for("import math\nfrom datetime import date")
    check, planned = plan_test(source, trusted)
    assert not isinstance(check, str)
    assert [tuple(h) for h in planned] == [tuple(h) for h in holes]


def test_plan_keeps_compile_errors_as_outcomes():
    assert plan_test("assert f(1) ==", frozenset())[0] == "error:SyntaxError"


# --- codec -------------------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.binary(max_size=20),
    st.complex_numbers(allow_nan=False),
    st.fractions(),
    st.decimals(allow_nan=False),
    st.dates(),
    st.datetimes(
        timezones=st.sampled_from(
            [None, dt.UTC, dt.timezone(dt.timedelta(hours=5, minutes=30), "IST")]
        )
    ),
    st.times(),
    st.timedeltas(),
)
hashables = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(hashables, inner, max_size=4),
        st.sets(hashables, max_size=4),
        st.frozensets(hashables, max_size=4),
        st.lists(inner, max_size=4).map(deque),
        st.dictionaries(hashables, st.integers(), max_size=4).map(Counter),
        st.dictionaries(hashables, inner, max_size=4).map(OrderedDict),
    ),
    max_leaves=12,
)


def same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, complex):
        return same(a.real, b.real) and same(a.imag, b.imag)
    if isinstance(a, list | tuple | deque):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=300, deadline=None)
@given(values)
def test_codec_round_trip_keeps_exact_types(value):
    wire = json.loads(json.dumps(encode(value)))
    assert same(decode(wire), value)


def test_codec_special_values():
    for value in [float("nan"), float("inf"), -0.0, 10**5000, range(1, 9, 2), bytearray(b"ab"),
                  defaultdict(list, {"a": [1]}), deque([1], maxlen=3)]:  # fmt: skip
        back = decode(json.loads(json.dumps(encode(value))))
        assert type(back) is type(value)
        assert same(back, value) or value != value or type(value) is defaultdict
    assert decode(encode(deque([1], maxlen=3))).maxlen == 3
    assert decode(encode(defaultdict(list))).default_factory is list


def test_subclasses_travel_as_their_builtin_base():
    class Always(int):
        def __eq__(self, other):
            return True

        __hash__ = int.__hash__

    class Lying(list):
        def __iter__(self):
            return iter([1, 2, 3])

    from collections import namedtuple

    point = namedtuple("point", "x y")
    assert type(decode(encode(Always(5)))) is int and decode(encode(Always(5))) == 5
    assert decode(encode(Lying([9]))) == [9]
    assert decode(encode(point(1, 2))) == (1, 2) and type(decode(encode(point(1, 2)))) is tuple


@pytest.mark.parametrize(
    "value", [object(), iter([]), (x for x in []), print, type, {1: object()}, [[[]]] * 0 + [set]]
)
def test_other_types_are_unsupported(value):
    with pytest.raises(UnsupportedValue):
        encode(value)


def test_deeply_nested_values_are_unsupported():
    value: list = []
    for _ in range(300):
        value = [value]
    with pytest.raises(UnsupportedValue):
        encode(value)


@pytest.mark.parametrize(
    "garbage",
    [[], ["?"], ["i", 5], ["f", 1.0], ["l", ["x"]], ["d", 1], ["s", ["l"]], ["date", 2024, 13, 1],
     ["defaultdict", "print"], ["timezone", 0, 0, 0, 5], {"a": 1}, 1.5, ["r", 1, 2, 0]],
)  # fmt: skip
def test_decode_rejects_garbage_with_value_error(garbage):
    with pytest.raises(ValueError):
        decode(garbage)


# --- shapes in the sandbox, against plain Python -----------------------------------------------

SNIPPETS = {
    "right": "def f(x=0):\n    if x == 'x':\n        raise ValueError(x)\n    return [x, x]\n",
    "wrong": "def f(x=0):\n    return (x,)\n",
    "raises": "def f(x=0):\n    raise KeyError(x)\n",
}
SHAPES = [
    "assert f(1) == [1, 1]",
    "assert f(1) != [1, 2]",
    "assert sorted(f(2)) == [2, 2]",
    "assert len(f(3)) == 2",
    "assert f(1) is not None",
    "assert not f(0)[0]",
    "assert math.isclose(f(0.5)[1], 0.5)",
    "assert raises(ValueError, f, 'x')",
    "assert not raises(ValueError, f, 1)",
    "assert [n for n in range(3) if f(n)[0]] == [1, 2]",
    "assert (lambda a, b: a == b)(*f(4))",
    "assert 0 < f(1)[0] <= 1",
    "assert f(date(2024, 1, 1))[0].year == 2024",
    "assert f(1) == [1, 1] and f(2) == [2, 2]",
]


def python_outcomes(code: str, tests: list[str]) -> list[str]:
    """What the tests give when run the old way, in this process (our own trusted snippets)."""
    from pytest_execretrieval.execution._sandbox_child import raises

    ns = {"raises": raises}
    exec("import math\nfrom datetime import date", ns)  # noqa: S102
    exec(code, ns)  # noqa: S102
    out = []
    for test in tests:
        try:
            exec(test, dict(ns))  # noqa: S102
            out.append("pass")
        except AssertionError:
            out.append("fail")
        except Exception as exc:  # noqa: BLE001
            out.append("error:" + type(exc).__name__)
    return out


@pytest.fixture(scope="module")
def sb():
    with Sandbox(Limits(timeout_s=2)) as sandbox:
        yield sandbox


@pytest.mark.parametrize("which", sorted(SNIPPETS))
def test_shapes_give_what_python_gives(sb, which):
    code = SNIPPETS[which]
    r = sb.run(code, "import math\nfrom datetime import date", SHAPES)
    assert list(r.outcomes) == python_outcomes(code, SHAPES), r


def test_setup_state_does_not_leak_from_one_suite_to_the_next():
    """The checker reuses a suite's plan; setup's objects are made afresh for every suite."""
    setup = "seen = []\ndef note(x):\n    seen.append(x)\n    return len(seen)\n"
    tests = ["assert note(f(1)) == 1", "assert note(f(2)) == 2"]  # shared within a suite
    with Sandbox(Limits()) as sandbox:
        for _ in range(3):
            result = sandbox.run("def f(x):\n    return x\n", setup, tests)
            assert result.outcomes == ("pass", "pass")


# --- what the snippet returned, for failure messages -------------------------------------------

RETURNS = (
    "def f(x=0):\n    if x == 'x':\n        raise ValueError(x)\n    return x + 1 if x != 9 else "
    "'y' * 500\n\nclass Box:\n    pass\n"
)
RETURNED = [
    ("assert f(3) == 4", "pass", ""),
    ("assert f(3) == 5", "fail", "returned 4"),
    ("assert f('x') == 1", "error:ValueError", "raised ValueError"),
    ("assert f(None) == 1", "error:TypeError", "raised TypeError"),
    ("assert raises(ValueError, f, 1)", "fail", "raised nothing"),
    ("assert not raises(ValueError, f, 'x')", "fail", "raised ValueError"),
    ("assert f(1) == 2 and f(2) == 4", "fail", "f(1) returned 2; f(2) returned 3"),
    ("assert len([f(1)]) == 1 and f(1) == 3", "fail", "f(1) returned 2"),  # the same text once
    ("assert [f(x) for x in range(3)] == [0, 1, 2]", "fail", "f(x) returned 3 (x=2)"),
    ("assert all(f(i) == i for i in range(4))", "fail", "f(i) returned 1 (i=0)"),
    ("x = 5\nassert f(x) == 7", "fail", "f(x) returned 6 (x=5)"),
    ("assert f(9) == 'y'", "fail", "returned '" + "y" * 17 + "..." + "y" * 18 + "'"),
    ("assert Box() == 1", "error:UnsupportedValue", "returned a value of unsupported type "
                                                   "__candidate__.Box"),
]  # fmt: skip


def test_failing_tests_carry_what_the_snippet_returned(sb):
    tests = [t for t, _, _ in RETURNED]
    r = sb.run(RETURNS, "", tests)
    assert list(r.outcomes) == [o for _, o, _ in RETURNED], r
    assert list(r.returned) == [text for _, _, text in RETURNED]


def test_returned_values_are_truncated_and_absent_when_every_test_passes(sb):
    code = "def f(n):\n    return list(range(n))\n"
    r = sb.run(code, "", ["assert f(1000) == []", "assert f(2) == [0, 1]"])
    assert r.outcomes == ("fail", "pass")
    assert r.returned[0].startswith("returned [0, 1, 2, 3, 4, 5, ...]"), r.returned
    assert r.returned[1] == ""
    chain = " and ".join(f"f({n}) == list(range({n}))" for n in range(20))
    long = sb.run(code, "", [f"assert {chain} and f(1) == []"])
    assert long.outcomes == ("fail",) and len(long.returned[0]) <= 200
    assert long.returned[0].startswith("f(0) returned []") and long.returned[0].endswith("...")
    assert sb.run(code, "", ["assert f(2) == [0, 1]"]).returned == ()


def test_a_crashed_or_looping_suite_has_no_value_for_the_tests_it_never_reached(sb):
    code = "def f(x):\n    while x:\n        pass\n    return x\n"
    r = sb.run(code, "", ["assert f(0) == 1", "assert f(1) == 1"])
    assert r.outcomes == ("fail", "timeout")
    assert r.returned == ("returned 0", "")
