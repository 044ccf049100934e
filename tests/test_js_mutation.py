"""JavaScript mutants from the tree-sitter parse (languages/javascript/mutation.py): each
class's edit, one hunk each, every mutant valid JavaScript (tree-sitter's verdict, and V8's
where Node is installed), the same mutants on every run, and the JavaScript language behind
the seam."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pytest_execretrieval.languages import LANGUAGES, language
from pytest_execretrieval.languages.javascript import JAVASCRIPT
from pytest_execretrieval.languages.javascript import syntax as js_syntax
from pytest_execretrieval.languages.javascript.mutation import (
    JS_CLASSES,
    JS_CORE_CLASSES,
    JS_MUTATION_FINGERPRINT,
    JS_MUTATION_VERSION,
    JS_OPERATORS,
    generate_js_edits,
    generate_js_mutants,
    js_fingerprint,
    js_mutation_version,
    valid_structure,
)
from pytest_execretrieval.mutation.fingerprint import code_fingerprint
from pytest_execretrieval.mutation.operators import (
    CORE_CLASSES,
    MUTATION_FINGERPRINT,
    OPERATORS,
    apply_edits,
    diff_blocks,
)

ROOT = Path(__file__).resolve().parents[1]


def fn(*lines: str, params: str = "a, b") -> str:
    """A function ``f(params)`` whose body is ``lines``, indented."""
    return f"function f({params}) {{\n" + "".join(f"  {line}\n" for line in lines) + "}\n"


# (class, source, every mutant of that class in order): each expected mutant is one edit.
# fmt: off
CASES = [
    ("off_by_one", fn("return a * 3;"), [fn("return a * 2;"), fn("return a * 4;")]),
    ("off_by_one", fn("return a + 1;"), [fn("return a;"), fn("return a + 2;")]),
    ("off_by_one", fn("return a * -1;"), [fn("return a * -2;"), fn("return a * 0;")]),
    ("wrong_operator", fn("return a * b;"), [fn("return a / b;")]),
    ("wrong_operator", fn("a += b;", "return a;"), [fn("a -= b;", "return a;")]),
    ("wrong_operator", fn("return a && b;"), [fn("return a || b;")]),
    ("wrong_operator", fn("return -a;"), [fn("return a;")]),
    ("wrong_operator", fn("return a+-b;"), [fn("return a- -b;"), fn("return a+b;")]),
    ("swap_arguments", fn("return g(a, b);"), [fn("return g(b, a);")]),
    ("swap_arguments", fn("return a - b - c;"), [fn("return b - a - c;"),
                                                 fn("return c - (a - b);")]),
    ("swap_arguments", fn("return a ** b;"), [fn("return b ** a;")]),
    ("remove_edge_case_check",
     fn("if (a === null) {", "  return 0;", "}", "return a.length;"), [fn("return a.length;")]),
    ("remove_edge_case_check",
     fn("for (const x of a) {", "  if (x < 0) continue; // skip", "  b += x;", "}", "return b;"),
     [fn("for (const x of a) {", "  b += x;", "}", "return b;")]),
    ("wrong_comparison", fn("return a === b;"), [fn("return a !== b;")]),
    ("wrong_comparison", fn("return a <= b;"), [fn("return a >= b;")]),
    ("off_by_one_boundary", fn("return a < b;"), [fn("return a <= b;")]),
    ("off_by_one_boundary", fn("return a[b + 1];"), [fn("return a[b];"), fn("return a[b + 2];")]),
    ("off_by_one_boundary", fn("return a.slice(1, b);"),
     [fn("return a.slice(0, b);"), fn("return a.slice(2, b);"),
      fn("return a.slice(1, b + 1);"), fn("return a.slice(1, b - 1);")]),
    ("negate_condition", fn("return a ? 1 : 2;"), [fn("return !a ? 1 : 2;")]),
    ("negate_condition", fn("while (a < b) a++;", "return a;"),
     [fn("while (!(a < b)) a++;", "return a;")]),
    ("negate_condition", fn("if (!a) b = 1;", "return b;"), [fn("if (a) b = 1;", "return b;")]),
    ("swap_min_max", fn("return Math.min(a, b);"), [fn("return Math.max(a, b);")]),
    ("complement_comparison", fn("return a > b;"), [fn("return a <= b;")]),
    ("strict_equality", fn("return a === b;"), [fn("return a == b;")]),
    ("strict_equality", fn("return a != b;"), [fn("return a !== b;")]),
    ("let_scoping",
     fn("const fs = [];", "for (let i = 0; i < a; i++) fs.push(() => i);",
        "return fs.map((g) => g());", params="a"),
     [fn("const fs = [];", "for (var i = 0; i < a; i++) fs.push(() => i);",
         "return fs.map((g) => g());", params="a")]),
    ("let_scoping", fn("if (b) {", "  let a = 0;", "}", "return a;"),
     [fn("if (b) {", "  var a = 0;", "}", "return a;")]),
    ("let_scoping", fn("for (const x of a) {", "  let seen;", "  if (x > 0) seen = x;",
                       "  b += seen ?? 0;", "}", "return b;"),
     [fn("for (const x of a) {", "  var seen;", "  if (x > 0) seen = x;",
         "  b += seen ?? 0;", "}", "return b;")]),
    ("string_concatenation", fn("return String(a) + b;"), [fn("return a + b;")]),
    ("string_concatenation", fn("return a + Number(b);"), [fn("return a + b;")]),
    ("string_concatenation", fn("return a.toString() + b;"), [fn("return a + b;")]),
    ("string_concatenation", fn('return "n=" + (a + b);'), [fn('return "n=" + a + b;')]),
    ("optional_chaining", fn("return a?.b;"), [fn("return a.b;")]),
    ("optional_chaining", fn("return a?.[0];"), [fn("return a[0];")]),
    ("optional_chaining", fn("return a?.(b);"), [fn("return a(b);")]),
    ("nullish_coalescing", fn("return a ?? b;"), [fn("return a || b;")]),
    ("update_operator", fn("a++;", "return a;"), [fn("a--;", "return a;")]),
    ("update_operator", fn("return --a;"), [fn("return ++a;")]),
    ("boolean_literal", fn("return a === true;"), [fn("return a === false;")]),
]
# fmt: on


@pytest.mark.parametrize("cls, source, expected", CASES)
def test_each_class_makes_its_edit_and_only_it(cls, source, expected):
    mutants = [m for m in generate_js_mutants(source, "f") if m.operator == cls]
    assert [m.code for m in mutants] == expected
    for mutant in mutants:
        assert len(mutant.edits) == 1 and apply_edits(source, mutant.edits) == mutant.code
        assert diff_blocks(source, mutant.code)[0] == 1
        assert valid_structure(mutant.code, "f") is not None


def test_every_class_has_a_case_and_the_core_classes_are_pythons():
    assert {cls for cls, _, _ in CASES} == set(JS_CLASSES)
    assert JS_CORE_CLASSES == CORE_CLASSES
    assert list(JS_CLASSES)[: len(OPERATORS)] == list(OPERATORS)
    for name, entry in JS_OPERATORS.items():  # each JavaScript-only class names its model
        assert entry.functions and (name in OPERATORS or "Stryker" in _class_doc(name))


def _class_doc(name: str) -> str:
    from pytest_execretrieval.languages.javascript import mutation

    doc = mutation.__doc__ or ""
    return doc[doc.index(f"``{name}``") :].split("\n", 1)[0]


# fmt: off
@pytest.mark.parametrize(
    "cls, source",
    [
        # `let` at the top of a function body scopes as `var` would: no edit.
        ("let_scoping", fn("let x = a;", "return x;")),
        # a `var x` hoisted over another lexical `x` of the function is a redeclaration error
        ("let_scoping", fn("let x = 0;", "{", "  let x = 1;", "  b = x;", "}", "return x + b;")),
        ("let_scoping", fn("for (let i = 0; i < a; i++) b++;", "const i = 2;", "return b + i;")),
        # no closure, no use outside the loop, an initializer: `var i` computes the same
        ("let_scoping", fn("for (let i = 0; i < a; i++) b += i;", "return b;")),
        # ... nor where the other uses of the name are a sibling loop's own binding
        ("let_scoping", fn("for (let i of a) b += i;", "for (let i of a) b *= i;", "return b;")),
        ("let_scoping", fn("switch (a) {", "  case 1:", "    let x = 1;",
                           "    { let x = 2; b = x; }", "    return x + b;", "}")),
        ("let_scoping", fn("try { b(); } catch (e) {", "  { let e = 1; a = e; }", "}",
                           "return a;")),
        # `a || b ?? c` is an early error: neither `??` may become `||`
        ("nullish_coalescing", fn("return a ?? b ?? c;")),
        # a loop that never ends is no near miss
        ("boolean_literal", fn("while (true) b++;")),
        ("boolean_literal", fn("for (; true; ) b++;")),
        # a constant condition is not negated
        ("negate_condition", fn("while (true) b++;")),
        ("negate_condition", fn("if (null) b++;")),
        # strings, templates, regular expressions and parameter defaults are never touched
        ("off_by_one", fn('return "1" + `2${3}` + /4/.source;', params="a = 5")),
        ("remove_edge_case_check", fn("if (a) return 1; else return 2;")),
        ("remove_edge_case_check", fn("if (a) { b++; }", "return b;")),
        ("string_concatenation", fn("return a + (b + 1);")),
    ],
)
# fmt: on
def test_where_a_class_makes_no_edit(cls, source):
    assert [m.code for m in generate_js_mutants(source, "f") if m.operator == cls] == []


def test_an_edit_after_non_ascii_text_splices_at_the_right_place():
    source = fn('const s = "héllo 😀";', "return s.length < a;", params="a")
    codes = {m.operator: m.code for m in generate_js_mutants(source, "f")}
    assert codes["off_by_one_boundary"] == source.replace("< a", "<= a")


def test_a_source_that_is_not_javascript_is_refused():
    with pytest.raises(ValueError, match="is not JavaScript"):
        generate_js_mutants("function f( {", "f")
    with pytest.raises(ValueError, match="'g'"):
        generate_js_mutants(fn("return a;"), "g")


@pytest.mark.parametrize(
    "code, reason, parenthesised",
    [
        ("x = a ?? b || c;", "`??` mixed with `||`/`&&`", "x = (a ?? b) || c;"),
        ("x = a && b ?? c;", "`??` mixed with `||`/`&&`", "x = (a && b) ?? c;"),
        ("x = -a ** 2;", "a unary expression as the base of `**`", "x = (-a) ** 2;"),
    ],
)
def test_early_errors_tree_sitter_accepts_are_known(code, reason, parenthesised):
    tree = js_syntax.parse(code)
    assert js_syntax.syntax_problem(tree) is None
    assert reason in (js_syntax.early_error(tree) or "")
    assert js_syntax.early_error(js_syntax.parse(parenthesised)) is None


# Realistic canonicals: closures, switch, try/catch, classes, destructuring, spread,
# templates, regular expressions, generators, labels, non-ASCII text.
SAMPLES = [
    fn("const out = [];", "for (let i = 0; i < a.length; i += b) {",
       "  out.push(a.slice(i, i + b));", "}", "return out;"),
    fn("switch (a % 3) {", "  case 0:", "    return 'fizz';", "  case 1: {", "    if (b) break;",
       "    return `x${a - 1}`;", "  }", "  default:", "    return String(a) + '!';", "}",
       "return null;"),
    fn("try {", "  return JSON.parse(a)?.value ?? b;", "} catch (e) {",
       "  if (e instanceof SyntaxError) return -1;", "  throw new RangeError('bad');", "}"),
    fn("const { x = 1, y } = a;", "const [p, ...rest] = b;",
       "return Math.max(x, y ?? 0, p, ...rest) >= 2 ** rest.length;"),
    fn("let n = a >>> 0, count = 0;", "while (n) {", "  n &= n - 1;", "  count++;", "}",
       "return count === b ? true : !b;", params="a, b = 0"),
    fn("const re = /^[a-z]+$/i;", "return a.split(/\\s+/).filter((w) => re.test(w))",
       "  .map((w) => w[0].toUpperCase() + w.slice(1).toLowerCase()).join('·');", params="a"),
    fn("const seen = new Map();", "outer: for (const [k, v] of Object.entries(a)) {",
       "  for (let j = 0; j < v.length; j++) {", "    if (v[j] < 0) continue outer;",
       "    seen.set(k, (seen.get(k) || 0) + v[j]);", "  }", "}",
       "return [...seen.keys()].sort((p, q) => seen.get(q) - seen.get(p) || (p < q ? -1 : 1));"),
    fn("let out = 0;", "for (let i = 0; i < a; i++) { out += i; }",
       "for (let i = 0; i < b; i++) { out -= i; }",
       "switch (a) {", "  case 1:", "    let x = 1;", "    { let x = 2; out += x; }",
       "    out += x;", "}", "for (const k of [a, b]) { let k2 = k; out += k2; }",
       "try { out += b.c; } catch (e) { { let e = 1; out += e; } }", "return out;"),
    "function helper(x) {\n  return x * x;\n}\nconst LIMIT = 10;\n"
    + fn("let total = 0;", "for (let i = 1; i <= Math.min(a, LIMIT); i++) {",
         "  let sq = helper(i);", "  total += sq % 2 === 0 ? sq : -sq;", "}",
         "return total / (b || 1);"),
]


@pytest.mark.parametrize("source", SAMPLES)
def test_every_mutant_of_a_sample_is_one_valid_edit(source):
    assert_mutants_sound(source)


def assert_mutants_sound(source: str) -> list:
    mutants = generate_js_mutants(source, "f")
    shapes = {valid_structure(source, "f")}
    for m in mutants:
        shape = valid_structure(m.code, "f")
        assert shape is not None and shape not in shapes, m.description
        shapes.add(shape)
        assert m.code != source and m.operator in JS_CLASSES
        assert len(m.edits) == 1 and apply_edits(source, m.edits) == m.code
        assert diff_blocks(source, m.code)[0] == 1
        assert m.line == source.count("\n", 0, m.edits[0].start) + 1
    return mutants


_ATOMS = ["a", "b", "x", "0", "1", "2", "a.length", "a[0]", "a?.y", "b ?? 1", "Math.min(a, b)",
          "String(x)", '"s"', "true", "!b", "-a", "x++"]  # fmt: skip
_BINARY = ["+", "-", "*", "/", "%", "**", "&&", "||", "??", "===", "!==", "==", "<", "<=", ">",
           ">=", "&", "|", "<<", ">>"]  # fmt: skip


def _expressions():
    def combine(children):
        binary = st.tuples(children, st.sampled_from(_BINARY), children, st.booleans()).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})" if t[3] else f"{t[0]} {t[1]} {t[2]}"
        )
        ternary = st.tuples(children, children, children).map(
            lambda t: f"({t[0]} ? {t[1]} : {t[2]})"
        )
        call = st.tuples(children, children).map(lambda t: f"g({t[0]}, {t[1]})")
        return binary | ternary | call

    return st.recursive(st.sampled_from(_ATOMS), combine, max_leaves=6)


@st.composite
def functions(draw):
    e = _expressions()
    return fn(
        f"let x = {draw(e)};",
        f"if ({draw(e)}) {{",
        f"  return {draw(e)};",
        "}",
        f"for (let i = 0; i < {draw(e)}; i++) {{",
        f"  x += {draw(e)};",
        "}",
        f"return {draw(e)};",
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(functions())
def test_every_mutant_of_a_generated_function_parses_and_differs(source):
    assume(valid_structure(source, "f") is not None)  # drawn precedence may mix ?? and ||
    assert_mutants_sound(source)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js (V8's own parser)")
def test_v8_compiles_every_mutant():
    """tree-sitter plus the early errors js_syntax knows accept nothing V8 refuses."""
    codes = [m.code for source in SAMPLES for m in generate_js_mutants(source, "f")]
    script = (
        "const vm = require('vm'); const codes = JSON.parse(require('fs').readFileSync(0));"
        "const bad = []; for (const c of codes) { try { new vm.Script(c); } catch (e) {"
        " bad.push([String(e), c]); } } process.stdout.write(JSON.stringify(bad));"
    )
    done = subprocess.run(
        ["node", "-e", script], input=json.dumps(codes), capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == [] and len(codes) > 100


_DUMP = """
import json, sys
from pytest_execretrieval.languages.javascript.mutation import generate_js_mutants
from tests.test_js_mutation import SAMPLES
print(json.dumps([[m.operator, m.line, m.code, m.description, m.lines_changed, m.chars_changed]
                  for s in SAMPLES for m in generate_js_mutants(s, "f")]))
"""


def test_mutants_are_the_same_on_every_run():
    outputs = [
        subprocess.run(
            [sys.executable, "-c", _DUMP],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    ]
    assert outputs[0] == outputs[1] and len(json.loads(outputs[0])) > 100


def test_edits_come_in_position_order_with_one_class_each():
    edits = generate_js_edits(SAMPLES[1])
    assert [e.start for e in edits] == sorted(e.start for e in edits)
    assert len({(e.start, e.end, e.replacement) for e in edits}) == len(edits)


def test_javascript_is_a_registered_language():
    assert LANGUAGES["javascript"] is JAVASCRIPT is language("javascript")
    assert JAVASCRIPT.missing_entry_point == "error:ReferenceError"
    code = "function helper() {}\nconst c = () => 1;\nasync function f(a, b) {\n  return a;\n}\n"
    assert JAVASCRIPT.defined_names(code) == {"helper", "f"}
    assert JAVASCRIPT.defines(code, "f") and not JAVASCRIPT.defines(code, "c")
    assert JAVASCRIPT.defined_names("function f( {") == frozenset()
    assert [m.code for m in JAVASCRIPT.mutants(SAMPLES[0], "f")] == [
        m.code for m in generate_js_mutants(SAMPLES[0], "f")
    ]


def test_js_mutation_fingerprint_is_recorded() -> None:
    fingerprint = js_fingerprint()
    assert fingerprint == JS_MUTATION_FINGERPRINT, (
        "the JavaScript mutation code (mutation.py, syntax.py, scope.py, the shared operators.py, "
        "select.py, stacking.py), its table or the tree-sitter versions changed: if the mutants "
        "changed, bump JS_MUTATION_VERSION in languages/javascript/mutation.py; either way set "
        f'JS_MUTATION_FINGERPRINT = "{fingerprint}" there'
    )
    assert js_mutation_version() == JS_MUTATION_VERSION
    assert code_fingerprint() == MUTATION_FINGERPRINT  # Python's version does not move
