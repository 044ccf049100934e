"""Differential evidence for JavaScript items: inputs typed by the Python twin's annotations,
JSON-encoded as the JavaScript tests write them, run in the real Node runner and compared as
JavaScript values (``languages/javascript/evidence.py``, ``mutation/twin_evidence.py``)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.items import load_item
from pytest_execretrieval.corpus.store import stale_reasons
from pytest_execretrieval.corpus.twins import input_types
from pytest_execretrieval.execution import _grammar
from pytest_execretrieval.languages.javascript import evidence as js_evidence
from pytest_execretrieval.languages.javascript import syntax as js_syntax
from pytest_execretrieval.languages.javascript.evidence import close, outcome, twin_inputs
from pytest_execretrieval.mutation import equivalence
from pytest_execretrieval.mutation.twin_evidence import probes, to_json

CLAMP_PY = """
def clamp(x: int, lo: int, hi: int) -> int:
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
"""
# The tests never give lo > hi: `x <= lo` survives them and differs there (x == lo > hi);
# `x >= hi` survives and is equivalent (it returns hi == x).
CLAMP_JS = """
function clamp(x, lo, hi) {
  if (x < lo) {
    return lo;
  }
  if (x > hi) {
    return hi;
  }
  return x;
}
"""
CLAMP_TESTS = [
    "assert clamp(5, 0, 10) == 5",
    "assert clamp(-3, 0, 10) == 0",
    "assert clamp(12, 0, 10) == 10",
    "assert clamp(0, 0, 10) == 0",
    "assert clamp(10, 0, 10) == 10",
    "assert clamp(1, 0, 10) == 1",
    "assert clamp(9, 0, 10) == 9",
]


def item_file(path: Path, entry: str, code: str, tests: list[str], language: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        f'domain = "{path.parent.name}"',
        f'query = "The {entry} of the inputs, as its tests show."',
        f'entry_point = "{entry}"',
        *([f'language = "{language}"'] if language else []),
        f"canonical = '''{code}'''",
        "tests = " + json.dumps(tests),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def twins(tmp_path) -> Path:
    """An items directory with three Python items and their JavaScript twins: one whose twin
    is annotated, one whose twin is not, one whose parameters are not the twin's."""
    js = tmp_path / "javascript"
    item_file(tmp_path / "math" / "clamp.toml", "clamp", CLAMP_PY, CLAMP_TESTS)
    item_file(js / "math" / "clamp.toml", "clamp", CLAMP_JS, CLAMP_TESTS, "javascript")
    twice = ["assert twice(1) == 2", "assert twice(0) == 0", "assert twice(-2) == -4"]
    py_twice = "\ndef twice(n):\n    return 2 * n\n"
    item_file(tmp_path / "math" / "twice.toml", "twice", py_twice, twice)
    js_twice = "\nfunction twice(n) {\n  return 2 * n;\n}\n"
    item_file(js / "math" / "twice.toml", "twice", js_twice, twice, "javascript")
    head = ["assert head([1, 2, 3], 2) == [1, 2]", "assert head([], 1) == []"]
    py_head = "\ndef head(values: list[int], n: int) -> list[int]:\n    return values[:n]\n"
    item_file(tmp_path / "lists" / "head.toml", "head", py_head, head)
    js_head = "\nfunction head(items, n) {\n  return items.slice(0, n);\n}\n"
    item_file(js / "lists" / "head.toml", "head", js_head, head, "javascript")
    return js


def test_the_twin_gives_the_types_or_the_reason_there_are_none(twins):
    def inputs(stem: str) -> equivalence.Inputs:
        return input_types(load_item(next(twins.glob(f"*/{stem}.toml"))))

    assert inputs("clamp") == equivalence.Inputs(("int", "int", "int"))
    assert inputs("twice").types is None and "not fully annotated" in inputs("twice").why
    assert inputs("head").why == "its parameters (items, n) are not its Python twin's (values, n)"
    (twins.parent / "math" / "clamp.toml").unlink()
    assert "no Python twin" in str(inputs("clamp").why)
    assert "entry point is g" in twin_inputs(CLAMP_JS, "clamp", (CLAMP_PY, "g")).why
    assert "does not parse" in twin_inputs(CLAMP_JS, "clamp", ("def (", "clamp")).why


@pytest.mark.parametrize(
    ("annotation", "problem"),
    [
        ("Fraction", "a Fraction"),
        ("Callable[[int], bool] | None", "a callable"),
        ("dict[int | str, int]", "dict keys int | str"),
        ("list[dict[tuple[int, int], int]]", "dict keys tuple[int, int]"),
    ],
)
def test_an_annotation_without_a_json_form_gives_no_evidence(tmp_path, annotation, problem):
    py = f"\ndef f(x: {annotation}):\n    return x\n"
    item_file(tmp_path / "d" / "f.toml", "f", py, ["assert f(1) == 1"])
    js = item_file(
        tmp_path / "javascript" / "d" / "f.toml",
        "f",
        "\nfunction f(x) {\n  return x;\n}\n",
        ["assert f(1) == 1"],
        "javascript",
    )
    found = input_types(load_item(js))
    assert found.types is None and problem in found.why


def test_drawn_values_are_written_as_the_javascript_tests_write_them():
    tree = (1, (2, None, None), None)
    assert to_json(tree) == [1, [2, None, None], None]
    assert to_json({3: (1, 2), 10: []}) == {"3": [1, 2], "10": []}
    assert to_json(frozenset({3, -1, 2})) == [-1, 2, 3]
    assert to_json({None, 2}) == [2, None]  # mixed elements: a stable order
    assert to_json(b"\x00\xff") == [0, 255]
    assert to_json(dt.date(2024, 1, 5)) == "2024-01-05"
    assert to_json(dt.datetime(2024, 1, 5, 9, 3, 1)) == "2024-01-05T09:03:01"
    assert to_json(dt.time(9, 0)) == "09:00:00"
    assert to_json(dt.timedelta(days=1, seconds=5)) == 86405
    (probe,) = probes("f", [((1, 2), {0: "a"}, dt.date(2000, 2, 29), None, True)])
    call = _grammar.parse_test(probe, probe=True).call
    encoded = [[1, 2], {"0": "a"}, "2000-02-29", None, True]
    assert json.loads(_grammar.json_arguments(call)) == encoded


def test_results_compare_as_javascript_values():
    assert close(2, 2.0) and close(0, -0.0) and close(0.1 + 0.2, 0.3)
    assert close(float("nan"), float("nan"))
    assert not close(True, 1) and not close(1, True) and not close(None, 0)
    assert not close(2**60, 2**60 + 1)  # BigInts: exact
    assert close([1, {"a": 2.0}], [1.0, {"a": 2}]) and not close([1], [1, 2])
    assert not close({1, 2}, [1, 2]) and close({1, 2}, {2, 1})
    assert outcome(("error", "Throw")) == ("raises", "Throw")
    assert outcome(("raises", "RangeError")) == ("raises", "RangeError")
    assert outcome(None) is None


def test_parameter_names_read_defaults_and_refuse_patterns():
    def names(code: str) -> tuple[str, ...] | None:
        return js_syntax.parameter_names(js_syntax.parse(code), "f")

    assert names("function f(a, /* c */ strict = false) { return a; }") == ("a", "strict")
    assert names("function f(...rest) { return rest; }") is None
    assert names("function f({a}) { return a; }") is None
    assert names("function g(a) { return a; }") is None


@pytest.fixture(scope="module")
def node():
    from pytest_execretrieval.execution.sandbox import SandboxError
    from pytest_execretrieval.languages.javascript.runner import find_node

    try:
        find_node()
    except SandboxError as exc:  # pragma: no cover - only on a machine without node
        pytest.skip(str(exc))


def _added_line(diff: str) -> str:
    return next(ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and ln[1:2] != "+")


@pytest.mark.usefixtures("node")
def test_a_build_shows_a_differing_survivor_and_names_the_items_without_evidence(
    twins, tmp_path, capsys
):
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert cli.main(["build", str(twins), "-j", "1", *cache]) == 0
    out = capsys.readouterr().out
    rows = [json.loads(line) for line in (twins / "yields.jsonl").read_text().splitlines()]
    survivors = {r["item_id"]: r["survivors"] for r in rows}
    clamp = {_added_line(s["diff"]): s for s in survivors["math/clamp"]}
    shown, equivalent = clamp["if (x <= lo) {"], clamp["if (x >= hi) {"]
    assert shown["equivalence"]["differing"] > 0
    assert shown["equivalence"]["witness"] is not None
    assert equivalent["equivalence"]["differing"] == 0
    assert equivalent["equivalence"]["inputs"] == equivalence.N_INPUTS
    assert all(s["equivalence"] is None for s in survivors["math/twice"] + survivors["lists/head"])
    assert "no evidence for 1 item(s), its parameters (items, n)" in out and "lists/head" in out
    assert "not fully annotated in the grammar: math/twice" in out
    corpus = [json.loads(line) for line in (twins / "corpus.jsonl").read_text().splitlines()]
    assert any(r["equivalence"] for r in corpus if r["query_id"] == "math/clamp")
    manifest = json.loads((twins / "manifest.json").read_text())
    assert manifest["inputs"]["math/clamp"] == "x: int, lo: int, hi: int"
    assert manifest["engine"]["languages"]["javascript"]["evidence"] == "1"


@pytest.mark.usefixtures("node")
def test_a_changed_twin_signature_makes_the_javascript_item_stale(twins, tmp_path):
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert cli.main(["build", str(twins), "-j", "1", *cache]) == 0
    engine = json.loads((twins / "manifest.json").read_text())["engine"]
    assert stale_reasons(twins, engine) == []
    twin = twins.parent / "math" / "clamp.toml"
    twin.write_text(twin.read_text().replace("hi: int)", "hi: float)"))
    reasons = stale_reasons(twins, engine)
    assert [(r.kind, r.item_id) for r in reasons] == [("item-changed", "math/clamp")]
    assert cli.main(["build", "--check", str(twins), *cache]) == 1


@pytest.mark.usefixtures("node")
def test_the_evidence_is_the_same_on_every_run(tmp_path):
    from pytest_execretrieval.execution.runner import SuiteRunner

    mutant = CLAMP_JS.replace("x < lo", "x <= lo")
    found = []
    for _ in range(2):
        equivalence.draw_inputs.cache_clear()
        with SuiteRunner() as runner:
            work = (CLAMP_JS, "clamp", "", [mutant], runner, "", ("int",) * 3)
            found.append(equivalence.evidence(*work, js_evidence.JS_REALM, "math/clamp"))
    assert found[0] == found[1] and found[0][0] is not None and found[0][0].differing > 0
