"""Verdicts decided outside the snippet's process: the value codec, and the test grammar's
forms decided in the checker the way Python would decide them."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import Counter, OrderedDict, defaultdict, deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.execution._wire import UnsupportedValue, decode, encode
from pytest_execretrieval.execution.sandbox import Limits, Sandbox

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
    for value in [
        float("nan"),
        float("inf"),
        -0.0,
        10**5000,
        range(1, 9, 2),
        bytearray(b"ab"),
        defaultdict(list, {"a": [1]}),
        deque([1], maxlen=3),
    ]:
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


# fmt: off
@pytest.mark.parametrize(
    "garbage",
    [[], ["?"], ["i", 5], ["f", 1.0], ["l", ["x"]], ["d", 1], ["s", ["l"]], ["date", 2024, 13, 1],
     ["defaultdict", "print"], ["timezone", 0, 0, 0, 5], {"a": 1}, 1.5, ["r", 1, 2, 0]],
)
# fmt: on
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
    "assert f(1)",
    "assert math.isclose(f(0.5)[1], 0.5)",
    "assert raises(ValueError, f, 'x')",
    "assert not raises(ValueError, f, 1)",
    "assert f(1)[0] < 2",
    "assert f(1)[1:] == [1]",
    "assert sum(f(2)) >= 4",
    "assert f(date(2024, 1, 1))[0] == date(2024, 1, 1)",
    "assert f(1)[0] in (1, 2)",
    "assert f(3)[0] not in [1, 2]",
    "assert tuple(f(-2)) == (-2, -2)",
    "assert f([1, 2])[0][1] == 2",
]


def python_outcomes(code: str, tests: list[str]) -> list[str]:
    """What the tests give when run the old way, in this process (our own trusted snippets)."""
    from pytest_execretrieval.execution._child import raises

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


def test_setup_names_never_stand_in_for_the_snippet():
    """A setup that imports a function under the entry point's name makes no snippet pass:
    the name must be (re)defined by the snippet's own code."""
    setup = "from math import floor as f"
    tests = ["assert f(1.5) == 1", "assert raises(TypeError, f, 'x')"]
    with Sandbox(Limits()) as sandbox:
        assert sandbox.run("", setup, tests).outcomes == ("error:NameError",) * 2
        assert sandbox.run("x = f", setup, tests).outcomes == ("error:NameError",) * 2
        assert sandbox.run("def f(x):\n    return 1\n", setup, tests).outcomes == ("pass", "fail")


# --- what the snippet returned, for failure messages -------------------------------------------

RETURNS = (
    "def f(x=0):\n    if x == 'x':\n        raise ValueError(x)\n    return x + 1 if x != 9 else "
    "'y' * 500\n\nclass Box:\n    pass\n\ndef box():\n    return Box()\n"
)
RETURNED = [
    ("assert f(3) == 4", "pass", ""),
    ("assert f(3) == 5", "fail", "returned 4"),
    ("assert f('x') == 1", "error:ValueError", "raised ValueError"),
    ("assert f(None) == 1", "error:TypeError", "raised TypeError"),
    ("assert raises(ValueError, f, 1)", "fail", "raised nothing"),
    ("assert not raises(ValueError, f, 'x')", "fail", "raised ValueError"),
    ("assert len(f(1)) == 1", "error:TypeError", "returned 2"),  # the call's own value
    ("assert f(9) == 'y'", "fail", "returned '" + "y" * 17 + "..." + "y" * 18 + "'"),
    (
        "assert box() == 1",
        "error:UnsupportedValue",
        "returned a value of unsupported type __candidate__.Box",
    ),
    ("assert g(1) == 1", "error:NameError", "raised NameError"),
]


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
    assert sb.run(code, "", ["assert f(2) == [0, 1]"]).returned == ()


def test_a_crashed_or_looping_suite_has_no_value_for_the_tests_it_never_reached(sb):
    code = "def f(x):\n    while x:\n        pass\n    return x\n"
    r = sb.run(code, "", ["assert f(0) == 1", "assert f(1) == 1"])
    assert r.outcomes == ("fail", "timeout")
    assert r.returned == ("returned 0", "")


# --- iterators under a consuming wrapper --------------------------------------------------------

GENERATORS = '''
def chunked(xs, n):
    for i in range(0, len(xs), n):
        yield xs[i:i + n]

def forever():
    while True:
        yield 1

def broken():
    yield 1
    raise ValueError("late")
'''


def test_an_iterator_inside_a_consuming_wrapper_is_read_as_python_reads_it():
    """``list(f(...))``, ``sorted(...)``, ``sum``/``min``/``max``/``tuple`` of a generator give
    what Python gives (the child reads it, bounded); ``len`` of one, or a bare generator,
    stays unsupported; an exception raised while reading is the call's."""
    tests = [
        "assert list(chunked([1, 2, 3], 2)) == [[1, 2], [3]]",
        "assert sorted(chunked([3, 1], 1)) == [[1], [3]]",
        "assert tuple(chunked([], 1)) == ()",
        "assert max(chunked([1, 2], 1)) == [2]",
        "assert len(chunked([1], 1)) == 1",
        "assert chunked([1], 1) == [[1]]",
        "assert list(broken()) == [1]",
        "assert list(forever()) == []",
        "assert list(chunked([1, 2, 3], 2))[1] == [3]",
    ]
    with Sandbox(Limits(timeout_s=30)) as box:
        result = box.run(GENERATORS, "", tests)
    assert result.outcomes == (
        "pass",
        "pass",
        "pass",
        "pass",
        "error:UnsupportedValue",
        "error:UnsupportedValue",
        "error:ValueError",
        "error:UnsupportedValue",
        "pass",
    )
