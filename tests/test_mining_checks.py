"""Mined tests from the package's test files, and the two sandbox runs that keep only items
whose tests pass both times."""

from __future__ import annotations

from mining_fixtures import write_package

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.items import load_item
from pytest_execretrieval.execution.sandbox import SuiteResult
from pytest_execretrieval.mining.functions import MinedFunction, mined_functions
from pytest_execretrieval.mining.mine import (
    FAILS_OWN_DOCTESTS,
    FAILS_OWN_TESTS,
    NONDETERMINISTIC,
    confirm_in_sandbox,
)
from pytest_execretrieval.mining.record import derived_calls
from pytest_execretrieval.mining.sources import load_source
from pytest_execretrieval.mining.writer import MinedItem

HALVE = '''

def halve(n):
    """Halve an even number; an odd one is a ValueError."""
    if n % 2:
        raise ValueError(n)
    return n // 2


def wrong(n):
    """Add one, says its doctest; it does not.

    >>> wrong(1)
    2
    """
    return n
'''
TEST_FILE = """import unittest
from tinypkg.core import halve, clamp_sum
from tinypkg import core as aliased


def test_halve():
    assert halve(4) == 2
    x = 8
    assert halve(x) == 4
    assert clamp_sum([1, 2]) == 3


class HalveTest(unittest.TestCase):
    def test_it(self):
        self.assertEqual(halve(6), 3)
        self.assertRaises(ValueError, halve, 3)
        self.assertEqual(aliased.halve(2), 1)
"""


def test_test_files_give_tests_with_their_lines(tmp_path):
    root = write_package(tmp_path / "src")
    core = root / "tinypkg" / "core.py"
    core.write_text(core.read_text() + HALVE)
    (root / "tests").mkdir()
    (root / "tests" / "test_core.py").write_text(TEST_FILE)
    out = tmp_path / "out"
    assert cli.main(["mine", str(root), "--out", str(out)]) == 0
    halve = load_item(out / "tinypkg" / "halve.toml")
    assert halve.tests == (
        "assert halve(4) == 2",
        "assert halve(8) == 4",  # `x = 8` above it, assigned once: read as its value
        "assert halve(6) == 3",
        "assert raises(ValueError, halve, 3)",
    )
    assert halve.source is not None
    assert halve.source.tests == (
        "test tests/test_core.py:7",
        "test tests/test_core.py:9",
        "test tests/test_core.py:15",
        "test tests/test_core.py:16",
    )
    clamp = load_item(out / "tinypkg" / "clamp_sum.toml")
    assert clamp.tests[-1] == "assert clamp_sum([1, 2]) == 3"
    assert clamp.source is not None and clamp.source.tests[-1] == "test tests/test_core.py:10"
    assert not (out / "tinypkg" / "wrong.toml").exists()
    assert f"| {FAILS_OWN_DOCTESTS} | 1 |" in (out / "MINED.md").read_text()


class ScriptedRunner:
    """Answers each run_many call with the next scripted outcomes per suite."""

    def __init__(self, *runs: list[tuple[str, ...]]):
        self.runs = list(runs)

    def run_many(self, suites):
        outcomes = self.runs.pop(0)
        return [SuiteResult(o, all(x == "pass" for x in o)) for o in outcomes]


def _item(stem: str, provenance: tuple[str, ...]) -> MinedItem:
    fn = MinedFunction("m", "m.py", 1, stem, f"def {stem}(x):\n    return x\n", "", "")
    return MinedItem(
        stem, fn, "q", tuple(f"assert {stem}({i}) == {i}" for i in range(2)), provenance
    )


def test_items_whose_tests_do_not_pass_twice_are_told_apart():
    items = [
        _item("steady", ("doctest m.py:2", "doctest m.py:3")),
        _item("flaky", ("doctest m.py:2", "doctest m.py:3")),
        _item("broken", ("doctest m.py:2", "doctest m.py:3")),
        _item("broken_test", ("doctest m.py:2", "test t.py:3")),
    ]
    first = [("pass", "pass"), ("pass", "pass"), ("pass", "fail"), ("fail", "pass")]
    second = [("pass", "pass"), ("pass", "fail"), ("pass", "fail"), ("fail", "pass")]
    assert confirm_in_sandbox(items, ScriptedRunner(first, second)) == {  # type: ignore[arg-type]
        "flaky": NONDETERMINISTIC,
        "broken": FAILS_OWN_DOCTESTS,
        "broken_test": FAILS_OWN_TESTS,
    }


def test_derived_calls_are_near_the_mined_ones():
    tests = ("assert f(3, 'ab') == 1", "assert f(2, 'ab') == 0", "assert raises(KeyError, f, [1])")
    assert derived_calls(tests) == [  # f(2, 'ab') and f(3, 'ab') are mined calls already
        "f(4, 'ab')",
        "f(3, 'a')",
        "f(3, 'ba')",
        "f(1, 'ab')",
        "f(2, 'a')",
        "f(2, 'ba')",
        "f([])",
    ]


def test_record_adds_the_canonicals_own_outputs_as_tests(tmp_path):
    root = write_package(tmp_path / "src")
    out = tmp_path / "out"
    assert cli.main(["mine", str(root), "--out", str(out), "--record", "2"]) == 0
    item = load_item(out / "tinypkg" / "safe_sqrt.toml")
    assert item.tests[3:] == (
        "assert raises(ValueError, safe_sqrt, -2)",
        "assert safe_sqrt(0) == 0.0",
    )
    assert item.source is not None and item.source.tests[3:] == ("recorded", "recorded")
    assert cli.main(["mine", str(root), "--out", str(out), "--record", "-1"]) == 4


def test_a_name_two_modules_define_gets_module_qualified_stems(tmp_path):
    root = write_package(tmp_path / "src")
    for module, factor in (("a", 2), ("b", 3)):
        (root / "tinypkg" / f"{module}.py").write_text(
            f'def scale(n):\n    """Scale by {factor}.\n\n    >>> scale(1)\n    {factor}\n    """\n'
            f"    return n * {factor}\n"
        )
    out = tmp_path / "out"
    assert cli.main(["mine", str(root), "--out", str(out)]) == 0
    stems = sorted(p.stem for p in (out / "tinypkg").glob("*.toml"))
    assert stems == ["clamp_sum", "safe_sqrt", "tinypkg_a_scale", "tinypkg_b_scale", "window"]
    assert load_item(out / "tinypkg" / "tinypkg_b_scale.toml").tests == ("assert scale(1) == 3",)


def test_a_helper_imported_from_another_module_of_the_source_travels(tmp_path):
    root = write_package(tmp_path / "src")
    package = root / "tinypkg"
    (package / "util.py").write_text("import math\n\nBASE = 10\n\n\ndef _digits(n):\n"
                                     "    return len(str(abs(n)))\n")  # fmt: skip
    (package / "api.py").write_text(
        "from .util import _digits, BASE\nfrom .missing import gone\n\n\n"
        'def width(n):\n    """Digits of n.\n\n    >>> width(-120)\n    3\n    """\n'
        "    return _digits(n)\n\n\n"
        'def far(n):\n    """Uses a module the source lacks.\n\n    >>> far(1)\n    1\n    """\n'
        "    return gone(n)\n"
    )
    reasons = {f.name: f.skip for f in mined_functions(load_source(str(root)))}
    assert reasons["far"] == "relative import" and reasons["width"] is None
    out = tmp_path / "out"
    assert cli.main(["mine", str(root), "--out", str(out)]) == 0
    width = load_item(out / "tinypkg" / "width.toml")
    assert width.canonical == (
        "def _digits(n):\n    return len(str(abs(n)))\n\n\ndef width(n):\n    return _digits(n)\n"
    )
