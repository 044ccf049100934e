"""Differential evidence: the annotation grammar, the bounded draws, the domain rule."""

from __future__ import annotations

import datetime as dt
from fractions import Fraction

import pytest

from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.execution.sandbox import Limits
from pytest_execretrieval.mutation.equivalence import (
    INT_RANGE,
    MAX_SIZE,
    MAX_TEXT,
    AtLeast,
    Peak,
    UnsupportedAnnotation,
    annotations,
    draw_inputs,
    evidence,
    named_exceptions,
    parse_annotation,
    search_tree,
    stable_repr,
    supported,
)


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    with SuiteRunner(Limits(timeout_s=2.0), cache_dir=tmp_path_factory.mktemp("c")) as r:
        yield r


# fmt: off
@pytest.mark.parametrize("text", [
    "int", "float", "bool", "str", "bytes", "None", "Fraction", "date", "datetime.date",
    "timedelta", "list[int]", "set[str]", "frozenset[int]", "dict[str, list[int]]",
    "tuple[int, ...]", "tuple[str, int, bool]", "tuple[()]", "int | None", "'date'",
    '"list[date] | set[date]"', "BinaryTree | None", "NaryTree", "SearchTree",
    "Callable[[int], bool]", "Callable[[int], int] | None",
])
# fmt: on
def test_grammar_accepts(text):
    assert supported(text)
    draw_inputs((text,), 5)


# fmt: off
@pytest.mark.parametrize("text, why", [
    ("list", "not a supported type"),
    ("list[int, int]", "takes 1 type argument"),
    ("dict[str]", "takes 2 type argument"),
    ("Any", "not a supported type"),
    ("os.PathLike", "not a supported type"),
    ("Callable[[str], int]", "is not one of"),
    ("deque[int]", "not a supported container"),
    ("__import__('os').system('true')", "not a supported type"),
    ("list[", "does not parse"),
])
# fmt: on
def test_grammar_rejects_with_the_reason(text, why):
    assert not supported(text)
    with pytest.raises(UnsupportedAnnotation, match=why):
        parse_annotation(text)


def test_draws_are_small_and_the_same_on_every_call():
    types = ("int", "list[int]", "str", "dict[str, int]")
    inputs = draw_inputs(types)
    assert len(inputs) == 50 and len(set(map(repr, inputs))) == 50
    for n, xs, s, d in inputs:
        assert INT_RANGE[0] <= n <= INT_RANGE[1]
        assert len(xs) <= MAX_SIZE and all(INT_RANGE[0] <= x <= INT_RANGE[1] for x in xs)
        assert len(s) <= MAX_TEXT and len(d) <= MAX_SIZE
    draw_inputs.cache_clear()
    assert draw_inputs(types) == inputs


def test_trees_and_callables_have_their_shapes():
    def binary(t):
        return t is None or (len(t) == 3 and binary(t[1]) and binary(t[2]))

    def inorder(t):
        return [] if t is None else inorder(t[1]) + [t[0]] + inorder(t[2])

    for (tree,) in draw_inputs(("BinaryTree",), 20):
        assert binary(tree) and tree is not None
    for (tree,) in draw_inputs(("SearchTree",), 20):
        assert inorder(tree) == sorted(inorder(tree))
    assert search_tree([2, 1, 3]) == (2, (1, None, None), (3, None, None))
    assert AtLeast(3)(3) and not AtLeast(3)(2) and Peak(2)(2) == 0 > Peak(2)(5)


def test_stable_repr_sorts_sets_and_evaluates_back():
    value = (
        {"b", "a"},
        frozenset({3}),
        [dt.date(2024, 2, 29)],
        (1,),
        {"k": Fraction(1, 3)},
        AtLeast(4),
    )
    text = stable_repr(value)
    assert text.startswith("(set(('a', 'b')), frozenset((3,)), [datetime.date(2024, 2, 29)]")
    space = {"datetime": dt, "Fraction": Fraction, "AtLeast": AtLeast}
    assert eval(text, space) == value  # noqa: S307 - our own literal


def test_annotations_need_every_parameter_in_the_grammar():
    assert annotations("def f(a: int, b: 'date') -> int: pass", "f") == ["int", "'date'"]
    assert annotations("def f(a: int, b: object): pass", "f") is None
    assert annotations("def f(a: int, *rest: int): pass", "f") is None
    assert annotations("def g(a: int): pass", "f") is None


def test_named_exceptions_are_the_exception_words_of_the_query():
    query = "Parse it; raises ValueError on junk and KeyError when missing (not a TypeError)."
    assert named_exceptions(query) == {"ValueError", "KeyError", "TypeError"}
    assert named_exceptions("Errors are returned as None") == frozenset()


def test_inputs_where_the_canonical_raises_an_unnamed_exception_are_skipped(runner):
    canonical = "def f(xs: list[int]) -> int:\n    return xs[0] * 2\n"
    doubled_sum = "def f(xs: list[int]) -> int:\n    return xs[0] + xs[0]\n"
    guarded = "def f(xs: list[int]) -> int:\n    return xs[0] * 2 if xs else 0\n"
    same, other = evidence(canonical, "f", "", [doubled_sum, guarded], runner, "Double it.")
    assert same.out_of_domain == other.out_of_domain == 1  # only [] raises IndexError
    assert same.inputs == other.inputs == 49
    assert same.differing == other.differing == 0  # guarded differs only outside the domain


def test_an_exception_the_query_names_is_behaviour(runner):
    canonical = "def f(n: int) -> int:\n    if n < 0:\n        raise ValueError(n)\n    return n\n"
    lenient = "def f(n: int) -> int:\n    return max(n, 0)\n"
    wrong_type = canonical.replace("ValueError", "TypeError")
    named = evidence(
        canonical,
        "f",
        "",
        [lenient, wrong_type],
        runner,
        "Identity; raises ValueError for negative n.",
    )
    assert all(e.out_of_domain == 0 and e.differing > 0 for e in named)
    assert named[0].witness is not None and int(named[0].witness.strip("(,)")) < 0
    unnamed = evidence(canonical, "f", "", [lenient], runner, "Identity for n >= 0.")[0]
    assert unnamed.differing == 0 and unnamed.out_of_domain > 0


def test_float_results_compare_with_a_tolerance(runner):
    canonical = "def f(x: float) -> float:\n    return x * 0.01\n"
    divided = "def f(x: float) -> float:\n    return x / 100\n"
    off = "def f(x: float) -> float:\n    return x / 99\n"
    close, far = evidence(canonical, "f", "", [divided, off], runner, "")
    assert close.differing == 0 and far.differing > 0


def test_many_small_batches_reuse_the_runners_sandboxes(tmp_path):
    """Evidence runs one batch per item: the runner must not start fork servers per batch."""
    with SuiteRunner(jobs=2) as runner:
        for i in range(30):
            code = f"def f():\n    return {i}\n"
            results = runner.run_many([(code, "", [f"assert f() == {i}"])] * 3)
            assert all(r.passed for r in results)
        assert len(runner._sandboxes) <= 2


def test_a_candidate_shadowing_the_harness_names_cannot_be_its_own_reference(runner):
    """The reference used to run inside the candidate's module (``exec(canonical, ns)``): a
    module-level ``exec`` there made the candidate its own reference, "agreeing" everywhere.
    Now each runs in a suite of its own and the values are compared on the host."""
    canonical = "def f(n: int) -> int:\n    return n\n"
    forger = (
        "def f(n: int) -> int:\n    return -n\n"
        "def exec(source, namespace=None):\n    namespace['f'] = f\n"
        "_xr_reference = f\n_same = _close = lambda *a: True\n"
    )
    (found,) = evidence(canonical, "f", "", [forger], runner, "")
    assert found.differing > 0 and found.witness is not None


def test_probe_arguments_read_back_as_the_drawn_values():
    import ast

    from pytest_execretrieval.execution import _grammar
    from pytest_execretrieval.mutation.equivalence import argument_source, probes

    types = (
        "list[int]",
        "'date'",
        "dict[str, float]",
        "set[str]",
        "Fraction",
        "bytes",
        "'timedelta'",
        "'datetime'",
        "'time'",
        "'BinaryTree | None'",
        "frozenset[int]",
    )
    for args in draw_inputs(types, 20):
        call = _grammar.parse_test(probes("f", [args])[0], probe=True).call
        name, values, kwargs = _grammar.build_arguments(_grammar.parse_call(call.source))
        assert (name, tuple(values), kwargs) == ("f", args, {})
    for maker in (AtLeast, Peak):
        node = ast.parse(argument_source(maker(-3)), mode="eval").body
        _grammar.check_lambda(node)
        fn = eval(ast.unparse(node))  # noqa: S307 - our own lambda
        assert [fn(x) for x in range(-6, 3)] == [maker(-3)(x) for x in range(-6, 3)]


def test_a_candidate_that_breaks_the_protocol_is_no_evidence(runner):
    canonical = "def ident(x: int) -> int:\n    return x\n"
    breaker = "import os\nos.write(4, b'\\xff\\xff\\xff\\xff')\n" + canonical
    broken, same = evidence(canonical, "ident", "", [breaker, canonical], runner, "")
    assert broken is None  # unusable: neither "differing" nor "agreeing"
    assert same is not None and same.differing == 0 and same.inputs > 0


_DRAW = """
import sys
from hypothesis.internal.conjecture import providers
if sys.argv[1] == "wheel":  # an installed package: none of its modules is local to hypothesis
    providers.is_local_module_file = lambda path: False
from pytest_execretrieval.mutation.equivalence import draw_inputs, stable_repr
for types in [("list[datetime]", "int"), ("float",), ("dict[str, int]",), ("set[str]",)]:
    print(stable_repr(draw_inputs(types)))
"""


def test_drawn_inputs_are_the_same_from_a_checkout_and_from_a_wheel():
    """Hypothesis mixes the literals of every *local* module imported so far into its draws, so
    the evidence drawn in a checkout (our modules are local) differed from an installed wheel's
    (they are not), and changed with every constant added to the package. The draw sees
    hypothesis's global constants only."""
    import subprocess
    import sys

    def draws(mode: str) -> str:
        run = subprocess.run(
            [sys.executable, "-c", _DRAW, mode], capture_output=True, text=True, check=True
        )
        return run.stdout

    assert draws("checkout") == draws("wheel")
