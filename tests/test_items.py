"""Schema and AST gates of item files: each kind of malformed item gives a precise error."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.corpus.items import ItemError, load_item, load_items

GOOD = {
    "domain": "strings",
    "query": "Reverse the order of words in a sentence.",
    "entry_point": "reverse_words",
    "canonical": "def reverse_words(s):\n    return ' '.join(reversed(s.split()))\n",
    "tests": ["assert reverse_words('a b') == 'b a'", "assert reverse_words('') == ''"],
}


def write(tmp_path: Path, data: dict, domain: str = "strings", stem: str = "reverse") -> Path:
    path = tmp_path / domain / f"{stem}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomli_w.dumps(data))
    return path


def problems(tmp_path: Path, **changes) -> list[str]:
    data = {k: v for k, v in {**GOOD, **changes}.items() if v is not None}
    with pytest.raises(ItemError) as excinfo:
        load_item(write(tmp_path, data))
    return [f"{p.field}: {p.reason}" for p in excinfo.value.problems]


def test_good_item_loads(tmp_path):
    item = load_item(
        write(
            tmp_path,
            {
                **GOOD,
                "setup": "import math",
                "alternatives": ["def reverse_words(s):\n    return ' '.join(s.split()[::-1])\n"],
            },
        )
    )
    assert item.id == "strings/reverse"
    assert item.tests == tuple(GOOD["tests"])
    assert item.setup == "import math" and len(item.alternatives) == 1


# fmt: off
@pytest.mark.parametrize(
    "changes, expected",
    [
        ({"extra": 1}, "extra: unknown key"),
        ({"query": None}, "query: missing required field"),
        ({"tests": "assert True"}, "tests: must be a list, got str"),
        ({"tests": [1]}, "tests[0]: must be a string, got int"),
        ({"domain": "arrays_lists"}, "domain: is 'arrays_lists' but the file lies in folder"),
        ({"canonical": "def reverse_words(s:\n"}, "canonical: does not parse"),
        ({"canonical": "def other(s):\n    return s\n"}, "canonical: does not define function"),
        ({"canonical": "def f():\n    def reverse_words(s):\n        return s\n"},
         "canonical: does not define function 'reverse_words' at module level"),
        ({"canonical": "import numpy\ndef reverse_words(s):\n    return s\n"},
         "canonical: imports 'numpy', which is not in the standard library"),
        ({"alternatives": ["def nope(): pass"]}, "alternatives[0]: does not define function"),
        ({"tests": ["assert 1\nassert 2"]}, "tests[0]: a test is exactly one statement, found 2"),
        ({"tests": ["assert ("]}, "tests[0]: does not parse"),
        ({"tests": []}, "tests: needs at least one test"),
        ({"setup": "import requests"}, "setup: imports 'requests'"),
        ({"entry_point": "not valid"}, "entry_point: 'not valid' is not a Python identifier"),
        ({"entry_point": "sorted", "canonical": "def sorted(s):\n    return s\n"},
         "entry_point: 'sorted' is a name the test grammar gives a meaning of its own"),
        # Setup: standard-library imports only, and never the entry point's name.
        ({"setup": "def reverse_words(s):\n    return 'b a'"},
         "setup: line 1: only import statements are allowed in setup, found functiondef"),
        ({"setup": "import math\nx = 1"}, "setup: line 2: only import statements are allowed"),
        ({"setup": "from string import capwords as reverse_words"},
         "setup: line 1: binds the entry point 'reverse_words'; only the snippet may define it"),
        ({"setup": "from string import *"}, "setup: line 1: 'import *' is not allowed"),
        # Tests: statements of the closed grammar that call the entry point.
        ({"tests": ["assert (lambda r: r == 'b a')(reverse_words('a b'))"]},
         "tests[0]: calling a lambda is not in the test grammar"),
        ({"tests": ["assert [reverse_words(w) for w in ['a b']] == ['b a']"]},
         "tests[0]: a list comprehension is not in the test grammar where the call"),
        ({"tests": ["assert reverse_words('a b') == 'b a' and reverse_words('') == ''"]},
         "tests[0]: 'and'/'or' is not in the test grammar"),
        ({"tests": ["assert other('a b') == 'b a'"]},
         "tests[0]: calls 'other', not the entry point 'reverse_words'"),
        ({"tests": ["assert reverse_words(x) == 'b a'"]},
         "tests[0]: a name (x) is not in the test grammar's literals"),
        ({"tests": ["assert reverse_words('a') == 2 ** 10 ** 9"]},
         "tests[0]: a power past 65536 bits is not in the test grammar"),
        ({"tests": ["assert reverse_words('a') == 1 / 0"]},
         "tests[0]: a literal of the test raises ZeroDivisionError"),
        ({"tests": ["assert raises(MyError, reverse_words, 1)"]},
         "tests[0]: raises' first argument 'MyError' is not a builtin exception class"),
        # A test that would patch the checker, or write on its reply pipe, is not even parsed
        # as code: it is outside the grammar.
        ({"tests": ["assert setattr(__import__('sys').modules['_sandbox_child'], 'x', 1) is None"]},
         "tests[0]: a subscript is not in the test grammar's literals"),
        ({"tests": ["assert __import__('os').write(1, b'x')"]},
         "tests[0]: calling an attribute (__import__('os').write) is not in the test grammar"),
        ({"tests": ["import builtins\nbuiltins.isinstance = lambda *a: True"]},
         "tests[0]: a test is exactly one statement"),
    ],
)
# fmt: on
def test_each_malformation_is_named(tmp_path, changes, expected):
    found = problems(tmp_path, **changes)
    assert any(p.startswith(expected) for p in found), found


def test_invalid_toml_names_the_file(tmp_path):
    path = tmp_path / "strings" / "bad.toml"
    path.parent.mkdir()
    path.write_text("query = ")
    with pytest.raises(ItemError, match=r"bad\.toml: <file>: not valid TOML"):
        load_item(path)


def test_all_bad_files_reported_in_one_pass(tmp_path):
    write(tmp_path, GOOD, stem="good")
    write(tmp_path, {**GOOD, "extra": 1}, stem="bad1")
    write(tmp_path, {**GOOD, "domain": "x"}, stem="bad2")
    items, found = load_items(tmp_path)
    assert [i.id for i in items] == ["strings/good"]
    assert sorted(p.path.stem for p in found) == ["bad1", "bad2"]
    assert all(str(p).startswith(str(p.path)) for p in found)


names = st.text(string.ascii_lowercase, min_size=1, max_size=8).map(lambda s: f"f_{s}")
# Control and format characters in a query are item problems (see test_hostile_items.py).
texts = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Cf", "Zl", "Zp")), max_size=40)


@settings(max_examples=40, deadline=None)
@given(
    name=names,
    query=texts.filter(str.strip),
    value=st.integers(-(10**6), 10**6),
    with_alt=st.booleans(),
)
def test_any_generated_item_round_trips(tmp_path_factory, name, query, value, with_alt):
    code = f"def {name}(x):\n    return x + {value!r}\n"
    data = {
        "domain": "math_number_theory",
        "query": query,
        "entry_point": name,
        "canonical": code,
        "tests": [f"assert {name}(0) == {value!r}"],
    }
    if with_alt:
        data["alternatives"] = [f"def {name}(x):\n    return {value!r} + x\n"]
    root = tmp_path_factory.mktemp("items")
    item = load_item(write(root, data, "math_number_theory", name))
    assert (item.query, item.entry_point, item.canonical) == (query.strip(), name, code)
    assert item.tests == tuple(data["tests"])
    assert item.alternatives == tuple(data.get("alternatives", ()))


# --- JavaScript items: the gate of languages/javascript/gate.py ---------------------------

JS_GOOD = {
    "domain": "strings",
    "language": "javascript",
    "query": "Reverse the order of words in a sentence.",
    "entry_point": "reverse_words",
    "canonical": "function reverse_words(s) {\n  return s.split(' ').reverse().join(' ');\n}\n",
    "tests": ["assert reverse_words('a b') == 'b a'", "assert reverse_words('') == ''"],
}


def js_problems(tmp_path: Path, **changes) -> list[str]:
    data = {k: v for k, v in {**JS_GOOD, **changes}.items() if v is not None}
    with pytest.raises(ItemError) as excinfo:
        load_item(write(tmp_path, data))
    return [f"{p.field}: {p.reason}" for p in excinfo.value.problems]


def canonical(*lines: str) -> str:
    return "function reverse_words(s) {\n" + "".join(f"  {x}\n" for x in lines) + "}\n"


def test_a_javascript_item_loads(tmp_path):
    helper = "const SEP = ' ';\nfunction words(s) {\n  return s.split(SEP);\n}\n"
    alternative = helper + canonical("return words(s).reverse().join(SEP);")
    write(tmp_path, {**JS_GOOD, "alternatives": [alternative]})
    items, found = load_items(tmp_path)
    assert found == [] and [i.id for i in items] == ["strings/reverse"]
    item = items[0]
    assert item.language == "javascript" and item.lang.name == "javascript"
    assert item.canonical == JS_GOOD["canonical"] and item.alternatives == (alternative,)
    assert item.setup == "" and item.tests == tuple(JS_GOOD["tests"])


# fmt: off
@pytest.mark.parametrize(
    "code, expected",
    [
        ("import fs from 'fs';\n" + canonical("return s;"),
         "line 1: an import statement: a JavaScript item is a script"),
        ("export " + canonical("return s;"),
         "line 1: an export statement: a JavaScript item is a script"),
        (canonical("return import('fs');"),
         "line 2: dynamic import(): a JavaScript item is a script"),
        (canonical("return import.meta.url;"),
         "line 2: import.meta: a JavaScript item is a script"),
        (canonical("return require('fs');"),
         "line 2: uses 'require', which loads a module: a JavaScript item uses the language's "
         "built-ins only"),
        (canonical("return eval(s);"), "line 2: uses 'eval', which runs a string as code"),
        (canonical("return Function('return 1')();"),
         "line 2: uses 'Function', which runs a string as code"),
        (canonical("return new Function('x', 'return x')(s);"),
         "line 2: uses 'Function', which runs a string as code"),
        (canonical("return process.env.HOME;"),
         "line 2: uses 'process', which reaches the host process"),
        (canonical("const { process } = s;", "return process;"),
         "line 2: uses 'process', which reaches the host process"),
        (canonical("return `${globalThis.x}`;"),
         "line 2: uses 'globalThis', which reaches the global object"),
        (canonical("return { module };"), "line 2: uses 'module', which is the module system's"),
        (canonical("exports.x = 1;", "return s;"),
         "line 2: uses 'exports', which is the module system's"),
        ("function reverse_words(s) {\n  return s @ 1;\n}\n",
         "does not parse: is not JavaScript syntax (line 2)"),
        ("function reverse_words(s) {\n  return s\n", "does not parse: a '}' is missing"),
        (canonical("return s ?? 1 || 2;"), "does not parse: `??` mixed with `||`/`&&`"),
        ("const reverse_words = (s) => s;\n",
         "does not declare function 'reverse_words' at top level "
         "(`function reverse_words(...) { ... }`)"),
        ("function outer() {\n  function reverse_words(s) { return s; }\n}\n",
         "does not declare function 'reverse_words' at top level"),
        (canonical("return " + "[" * 300 + "]" * 300 + ";"),
         "nests more than 200 levels deep (the limit)"),
    ],
)
# fmt: on
def test_the_javascript_gate_names_each_refused_construct(tmp_path, code, expected):
    found = js_problems(tmp_path, canonical=code)
    assert any(p.startswith(f"canonical: {expected}") for p in found), found
    alternative = js_problems(tmp_path, alternatives=[code])
    assert any(p.startswith(f"alternatives[0]: {expected}") for p in alternative), alternative


def test_a_property_named_like_a_host_object_is_no_reference(tmp_path):
    code = canonical("const o = { module: 1, process: 2 };", "return o.module + s.exports;")
    assert load_item(write(tmp_path, {**JS_GOOD, "canonical": code})).canonical == code


def test_a_javascript_item_has_no_setup(tmp_path):
    assert js_problems(tmp_path, setup="const x = 1;") == [
        "setup: must be empty for a JavaScript item: the snippet brings everything it uses"
    ]


def test_python_code_in_a_javascript_item_is_refused(tmp_path):
    found = js_problems(tmp_path, canonical=GOOD["canonical"])
    assert found and all(p.startswith("canonical: does not parse") for p in found), found


def test_raises_names_the_error_classes_of_the_items_language(tmp_path):
    thrown = "assert raises(RangeError, reverse_words, 1)"
    item = load_item(write(tmp_path, {**JS_GOOD, "tests": [*JS_GOOD["tests"], thrown]}))
    assert item.tests[-1] == thrown
    assert js_problems(tmp_path, tests=["assert raises(ValueError, reverse_words, 1)"]) == [
        "tests[0]: raises' first argument 'ValueError' is not one of the item language's error "
        "classes (AggregateError, Error, EvalError, RangeError, ReferenceError, SyntaxError, "
        "TypeError, URIError) (or a tuple of them)"
    ]
