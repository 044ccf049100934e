"""Issue 53 B-E: what one hostile file, value, licence or name can do to ``mine``.

B: one module of 1,500 near-identical functions mines in seconds (its segments are sliced from
lines split once; near-clone density compares each function with a bounded number of others).
C: a recorded value Python cannot write as a literal is not recorded, never a traceback.
D: a licence file names a licence only when it is that licence's whole text.
E: nothing of the SOURCE reaches MINED.md, NOTICE or an item file with its control
characters: the mined directory loads, and those files hold no byte under 0x20 but \\n."""

from __future__ import annotations

import ast
import time
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mining_fixtures import BSD3_TEXT, CORE, INIT, MIT_TEXT

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.items import load_item, load_items
from pytest_execretrieval.mining import density
from pytest_execretrieval.mining.density import near_clone_density
from pytest_execretrieval.mining.functions import MinedFunction
from pytest_execretrieval.mining.record import _recorded_test
from pytest_execretrieval.mining.sources import load_source

# --- B: quadratic host CPU from one file ----------------------------------------------------


def near_identical_module(n: int) -> str:
    """``n`` functions that differ in a name and a constant: every pair is a near clone."""
    return "\n\n".join(
        f'def scale_{i}(values, factor):\n    """Scale the values by factor and {i}."""\n'
        f"    total = [v * factor for v in values]\n    offset = {i}\n"
        "    return [t + offset for t in total if t is not None]\n"
        for i in range(n)
    )


def test_a_module_of_1500_near_identical_functions_mines_in_seconds(tmp_path):
    root = tmp_path / "src"
    (root / "clones").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "clones"\nlicense = "MIT"\n')
    module = near_identical_module(1500)
    assert len(module) > 255_000
    (root / "clones" / "many.py").write_text(module)
    started = time.monotonic()
    assert cli.main(["mine", str(root), "--out", str(tmp_path / "out")]) == 0
    assert time.monotonic() - started < 20  # minutes before: each segment re-split the file
    text = (tmp_path / "out" / "MINED.md").read_text()
    assert "| `clones.many` | 0 | 1500 |" in text
    assert "| 2 edits | 1500 | 100.0% |" in text  # each one's nearest found, within the bound


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["x = 1", "y = 'é€'", "\f", "z = (1,\n  2)", "if x:\n    pass"]),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["\n", "\r\n", "\r"]),
)
def test_a_segment_is_what_ast_get_source_segment_gives(statements, newline):
    from pytest_execretrieval.mining.functions import source_lines, source_segment

    text = newline.join(s.replace("\n", newline) for s in statements) + newline
    try:
        module = ast.parse(text)
    except SyntaxError:
        return
    lines = source_lines(text)
    for node in ast.walk(module):
        if isinstance(node, ast.stmt | ast.expr):
            assert source_segment(lines, node) == ast.get_source_segment(text, node)


def test_density_compares_each_function_with_a_bounded_number_of_others(monkeypatch):
    calls = []
    real = density.bounded_edits

    def counted(a, b, bound):
        calls.append(1)
        return real(a, b, bound)

    monkeypatch.setattr(density, "bounded_edits", counted)
    functions = [
        MinedFunction("m", "m.py", i, f"f{i}", f"def f{i}(x):\n    return x + {i}\n", "", "")
        for i in range(300)
    ]
    records = near_clone_density(functions)
    assert len(calls) <= 300 * density.MAX_COMPARED
    assert all(r.edits == 2 for r in records)  # each still finds a neighbour that near


# --- C: a value Python cannot write ---------------------------------------------------------


def test_a_recorded_int_past_pythons_digit_limit_is_not_recorded():
    assert _recorded_test("big(2)", ("value", 10**5000), "big") is None
    assert _recorded_test("big(2)", ("value", [1, 10**5000]), "big") is None
    assert _recorded_test("big(2)", ("value", 7), "big") == "assert big(2) == 7"


def test_record_skips_a_5000_digit_answer_and_mines_the_rest(tmp_path, capsys):
    root = tmp_path / "src"
    (root / "bigpkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "bigpkg"\nlicense = "MIT"\n')
    (root / "bigpkg" / "__init__.py").write_text(
        'def big(n):\n    """A big number for n over 1.\n\n    >>> big(1)\n    1\n    """\n'
        "    return 1 if n == 1 else 10 ** 5000 + n\n"
    )
    out = tmp_path / "out"
    assert cli.main(["mine", str(root), "--out", str(out), "--record", "2"]) == 0
    assert load_item(out / "bigpkg" / "big.toml").tests == ("assert big(1) == 1",)


# --- D: licences on the whole text ----------------------------------------------------------

COMMONS_CLAUSE = """
"Commons Clause" License Condition v1.0

The Software is provided to you by the Licensor under the License, as defined below, subject
to the following condition.

Without limiting other conditions in the License, the grant of rights under the License will
not include, and the License does not grant to you, the right to Sell the Software.
"""
JSON_LICENCE = MIT_TEXT.replace(
    "copies or substantial portions of the Software.\n",
    "copies or substantial portions of the Software.\n\n"
    "The Software shall be used for Good, not Evil.\n",
)
BOLTONS_BSD = """Copyright (c) 2013, Mahmoud Hashemi

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are
met:

    * Redistributions of source code must retain the above copyright
      notice, this list of conditions and the following disclaimer.

    * Redistributions in binary form must reproduce the above
      copyright notice, this list of conditions and the following
      disclaimer in the documentation and/or other materials provided
      with the distribution.

    * The names of the contributors may not be used to endorse or
      promote products derived from this software without specific
      prior written permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS
"AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT
LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR
A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT
OWNER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL,
SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT
LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE,
DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY
THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT
(INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""
ISC_TEXT = """ISC License

Copyright (c) 2024, Someone <someone@example.org>

Permission to use, copy, modify, and/or distribute this software for any
purpose with or without fee is hereby granted, provided that the above
copyright notice and this permission notice appear in all copies.

THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL WARRANTIES
WITH REGARD TO THIS SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF
MERCHANTABILITY AND FITNESS. IN NO EVENT SHALL THE AUTHOR BE LIABLE FOR
ANY SPECIAL, DIRECT, INDIRECT, OR CONSEQUENTIAL DAMAGES OR ANY DAMAGES
WHATSOEVER RESULTING FROM LOSS OF USE, DATA OR PROFITS, WHETHER IN AN
ACTION OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS ACTION, ARISING OUT OF
OR IN CONNECTION WITH THE USE OR PERFORMANCE OF THIS SOFTWARE.
"""


def licence_of(tmp_path: Path, text: str) -> str:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\n')
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    (tmp_path / "LICENSE").write_text(text)
    return load_source(str(tmp_path)).license_expression


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MIT_TEXT, "MIT"),  # TheAlgorithms' LICENSE.md: a title, a copyright line, the text
        (MIT_TEXT.replace("MIT License\n\n", "").replace("\n", "\r\n"), "MIT"),  # inflection's
        (BSD3_TEXT, "BSD-3-Clause"),  # toolz's: lettered clauses, "All rights reserved."
        (BOLTONS_BSD, "BSD-3-Clause"),
        (ISC_TEXT, "ISC"),
        (MIT_TEXT + COMMONS_CLAUSE, ""),  # MIT plus the Commons Clause is not MIT
        (JSON_LICENCE, ""),  # the JSON licence is not MIT
        ("Evil preamble: not for military use.\n\n" + MIT_TEXT, ""),
        (BSD3_TEXT.replace("without specific prior written permission.", "without fee."), ""),
    ],
)
def test_a_licence_file_names_a_licence_only_as_its_whole_text(tmp_path, text, expected):
    assert licence_of(tmp_path, text) == expected


def test_the_apache_licence_is_known_by_its_whole_text(tmp_path):
    try:  # the Apache License 2.0 as a package installed here carries it
        text = metadata.distribution("packaging").read_text("licenses/LICENSE.APACHE")
    except metadata.PackageNotFoundError:
        text = None
    if not text:
        pytest.skip("no Apache License 2.0 text installed")
    assert licence_of(tmp_path, text) == "Apache-2.0"
    assert licence_of(tmp_path, text + "\nThe Software shall be used for Good, not Evil.\n") == ""


def test_a_licence_with_more_than_its_text_is_refused_with_the_reason(tmp_path, capsys):
    root = tmp_path / "src"
    (root / "tinypkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "tinypkg"\nversion = "0.1"\n')
    (root / "LICENSE").write_text(MIT_TEXT + COMMONS_CLAUSE)
    (root / "tinypkg" / "core.py").write_text(CORE)
    assert cli.main(["mine", str(root), "--out", str(tmp_path / "no")]) == 4
    err = capsys.readouterr().err
    assert "licence none" in err and "LICENSE holds the MIT licence's words but is not" in err
    assert not (tmp_path / "no").exists()


# --- E: control characters and injected lines in what mining writes -------------------------

OSC = "\x1b]52;c;ZXZpbA==\x07"  # writes the clipboard
HOSTILE_METADATA = (
    "Metadata-Version: 2.4\n"
    f"Name: tiny{OSC}pkg\n"
    "Version: 0.1\x1b[2J\n"
    "License-Expression: MIT\n"
    f"Project-URL: Homepage, https://example.org/\x1b[31mred{OSC}\n"
    " # Injected heading\n"
)
HOSTILE_LICENCE = (
    f"Copyright (c) 2024 Evil{OSC} Corp\x1b[2J\x07\n\nPermission is hereby granted...\n"
)
DOCUMENTED = (
    'def twice(x):\n    """Twice x.\n\n    >>> twice(2)\n    4\n    """\n    return 2 * x\n'
)


def test_a_hostile_package_s_fields_are_escaped_and_its_items_load(tmp_path):
    wheel = tmp_path / "tinypkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tinypkg/__init__.py", INIT)
        archive.writestr("tinypkg/core.py", CORE)
        archive.writestr("tinypkg/ev\x1b[2Jil.py", DOCUMENTED)  # a doctest: would be an item
        archive.writestr("tinypkg/new\n# line.py", DOCUMENTED.replace("twice", "thrice"))
        archive.writestr("tinypkg-0.1.dist-info/METADATA", HOSTILE_METADATA)
        archive.writestr("tinypkg-0.1.dist-info/licenses/LICENSE", HOSTILE_LICENCE)
        archive.writestr("tinypkg-0.1.dist-info/licenses/LICENSE\x1b[2J", HOSTILE_LICENCE)
    out = tmp_path / "out"
    assert cli.main(["mine", str(wheel), "--out", str(out)]) == 0
    items, problems = load_items(out)
    assert problems == []
    assert sorted(i.entry_point for i in items) == ["clamp_sum", "safe_sqrt", "window"]
    for name in ("MINED.md", "NOTICE"):
        data = (out / name).read_bytes()
        assert not [b for b in data if b < 0x20 and b not in (0x0A, 0x09)], name
        assert b"\n # Injected" not in data and b"\n# line" not in data
    mined = (out / "MINED.md").read_text()
    assert "| a name with control characters (line breaks, escapes, bidirectional marks) | 3 |" in (
        mined
    )
    assert "- project URL: https://example.org/\\x1b[31mred\\x1b]52;c;ZXZpbA==\\x07\\x0a" in mined
    notice = (out / "NOTICE").read_text()
    assert "Copyright (c) 2024 Evil\\x1b]52;c;ZXZpbA==\\x07 Corp\\x1b[2J\\x07" in notice
    for item in items:
        assert item.source is not None
        assert all(ord(c) >= 0x20 for c in item.source.distribution + item.source.url)
