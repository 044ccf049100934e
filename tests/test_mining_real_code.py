"""Issue 55 (4, 5, 6): mining real packages. Overload stubs are no functions; identical
canonicals from two modules, or two functions of one name that pass each other's tests, are one
item; licences from trove classifiers; ``--private``'s
NOTICE; mined items' distractors prefer a wrong value to a crash."""

from __future__ import annotations

import tomllib
import zipfile
from pathlib import Path

import pytest

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.build import build, yield_report
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.execution.sandbox import Limits
from pytest_execretrieval.mining.functions import mined_functions
from pytest_execretrieval.mining.sources import check_licence, load_source

PYPROJECT = '[project]\nname = "realpkg"\nversion = "1.0"\nlicense = "MIT"\n'
TRUNCATE = '''

def smart_truncate(text, n):
    """Keep only the leading characters of a string, up to a maximum length.

    >>> smart_truncate("abcdef", 3)
    'abc'
    """
    return text[:n]
'''
STUBS = '''import typing
from typing import overload


@overload
def pick(x: int) -> int: ...


@typing.overload
def pick(x: str) -> str: ...


def pick(x):
    """The identity: hand back whatever value it was given, unchanged, of any type.

    >>> pick(2)
    2
    """
    return x
'''


def write_real_package(root: Path, pyproject: str = PYPROJECT) -> Path:
    """``realpkg``: overload stubs and their implementation, and one function defined
    identically in two modules (python-slugify's ``smart_truncate``)."""
    package = root / "realpkg"
    package.mkdir(parents=True)
    (root / "pyproject.toml").write_text(pyproject)
    (package / "__init__.py").write_text("")
    (package / "core.py").write_text(STUBS + TRUNCATE)
    (package / "legacy.py").write_text('"""The old module."""\n' + TRUNCATE)
    return root


@pytest.fixture(scope="module")
def mined(tmp_path_factory) -> Path:
    root = write_real_package(tmp_path_factory.mktemp("src"))
    out = tmp_path_factory.mktemp("out") / "items"
    assert cli.main(["mine", str(root), "--out", str(out)]) == 0
    return out


def test_overload_stubs_are_neither_functions_nor_decorated_skips(tmp_path):
    functions = mined_functions(load_source(str(write_real_package(tmp_path))))
    picks = [f for f in functions if f.name == "pick"]
    implementation = STUBS.splitlines().index("def pick(x):") + 1
    assert [(f.line, f.skip) for f in picks] == [(implementation, None)]  # no stub
    assert not any(f.skip == "decorated" for f in functions)


def test_identical_canonicals_from_two_modules_are_one_item_with_both_locations(mined):
    items, problems = load_items(mined)
    assert problems == []
    assert sorted(i.id for i in items) == ["realpkg/pick", "realpkg/smart_truncate"]
    (truncate,) = [i for i in items if i.entry_point == "smart_truncate"]
    assert truncate.source is not None
    line = (STUBS + TRUNCATE).splitlines().index("def smart_truncate(text, n):") + 1
    assert (truncate.source.file, truncate.source.line) == ("realpkg/core.py", line)
    assert truncate.source.locations == (f"realpkg/core.py:{line}", "realpkg/legacy.py:4")
    (pick,) = [i for i in items if i.entry_point == "pick"]
    assert pick.source is not None and pick.source.locations == ()  # written only for copies
    text = (mined / "MINED.md").read_text()
    assert "- public functions: 3; items written: 2;" in text  # the stubs are not counted
    assert "| the same code as an earlier module's function (one item: its locations) | 1 |" in (
        text
    )
    assert "| decorated |" not in text


CLIP_DOC = '''
    """Keep only the leading characters of a string, up to a maximum length.

    >>> clip("abcdef", 3)
    'abc'
    >>> clip("abc", 0)
    ''
    """
'''
CLIPS = {
    # the same behaviour, written differently (a vendored or reference copy)
    "first.py": "def clip(text, n):" + CLIP_DOC + "    if n <= 0:\n        return ''\n"
    "    elif len(text) > n:\n        return text[:n]\n    return text\n",
    "second.py": "def clip(text, n):" + CLIP_DOC + "    return text[:n] if n > 0 else ''\n",
    # the same name, another behaviour: its own item
    "third.py": "def clip(text, n):"
    + CLIP_DOC.replace("3)\n    'abc'", "3)\n    'abcd'")
    + "    return text[: n + 1] if n > 0 else ''\n",
}


def test_functions_of_one_name_that_pass_each_other_s_tests_are_one_item(tmp_path):
    package = tmp_path / "src" / "clips"
    package.mkdir(parents=True)
    (tmp_path / "src" / "pyproject.toml").write_text(PYPROJECT.replace("realpkg", "clips"))
    for name, code in CLIPS.items():
        (package / name).write_text(code)
    out = tmp_path / "out"
    assert cli.main(["mine", str(tmp_path / "src"), "--out", str(out)]) == 0
    items, problems = load_items(out)
    assert problems == []
    by_id = {i.id: i for i in items}
    assert sorted(by_id) == ["clips/clips_first_clip", "clips/clips_third_clip"]
    first = by_id["clips/clips_first_clip"].source
    assert first is not None and first.locations == ("clips/first.py:1", "clips/second.py:1")
    assert by_id["clips/clips_third_clip"].source.locations == ()  # type: ignore[union-attr]
    assert (
        "| passes the tests of an earlier function of its name, and it its (one item) | 1 |"
        in (out / "MINED.md").read_text()
    )


def _wheel(path: Path, metadata: str) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("p/__init__.py", "def f():\n    return 1\n")
        archive.writestr("p-1.0.dist-info/METADATA", metadata)
    return str(path)


BSD = "Classifier: License :: OSI Approved :: BSD License\n"
MIT = "Classifier: License :: OSI Approved :: MIT License\n"
APACHE = "Classifier: License :: OSI Approved :: Apache Software License\n"
GPL = "Classifier: License :: OSI Approved :: GNU General Public License v3 (GPLv3)\n"
OSI = "Classifier: License :: OSI Approved\n"
LICENCE_CASES = [
    ("License: UNKNOWN\n" + BSD, "BSD"),  # glom 25.12.0's metadata
    (BSD, "BSD"),
    ("License: UNKNOWN\n" + OSI + MIT, "MIT"),  # the bare category names no licence
    ("License: UNKNOWN\n" + APACHE, "Apache-2.0"),
    ("License: UNKNOWN\n" + MIT + GPL, ""),  # ambiguous: unknown
    ("License: UNKNOWN\n" + MIT + BSD, ""),  # two licences: the classifiers cannot say which
    ("License: UNKNOWN\n" + "Classifier: License :: Other/Proprietary License\n", ""),
    ("License: UNKNOWN\n" + OSI, ""),
    ("License-Expression: Apache-2.0 OR MIT\nLicense: UNKNOWN\n" + BSD, "Apache-2.0 OR MIT"),
    ("License-Expression: BSD-3-Clause\n" + GPL, "BSD-3-Clause"),  # PEP 639 decides
    ("License: ISC license\n" + MIT, "ISC"),  # a named licence field decides
]


def test_a_licence_is_read_from_the_classifiers_when_the_field_names_none(tmp_path):
    found = []
    for n, (headers, _) in enumerate(LICENCE_CASES):
        metadata = f"Metadata-Version: 2.4\nName: p\nVersion: 1.0\n{headers}"
        found.append(load_source(_wheel(tmp_path / f"p{n}.whl", metadata)).license_expression)
    assert found == [expected for _, expected in LICENCE_CASES]
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "pyproject.toml").write_text(
        '[project]\nname = "d"\nlicense = "UNKNOWN"\n'
        'classifiers = ["License :: OSI Approved :: BSD License"]\n'
    )
    (tmp_path / "d" / "m.py").write_text("def f():\n    return 1\n")
    tree = load_source(str(tmp_path / "d"))
    assert tree.license_expression == "BSD"
    check_licence(tree, None)  # mined by default, as glom now is


def test_private_code_is_named_private_and_not_redistributed(tmp_path):
    root = write_real_package(tmp_path / "src", '[project]\nname = "ours"\nversion = "2"\n')
    out = tmp_path / "out"
    assert cli.main(["mine", str(root), "--out", str(out)]) == 4  # no licence: refused
    assert cli.main(["mine", str(root), "--out", str(out), "--private"]) == 0
    notice = (out / "NOTICE").read_text()
    assert "private code from ours 2" in notice
    assert "not redistributed" in notice and "unknown licence" not in notice
    markdown = (out / "MINED.md").read_text()
    assert "- licence: none: private code (mined with --private), not redistributed" in markdown


ROUNDED = "def f(x):\n    return round(x * 3, 1)\n"  # round(1, x * 3): a TypeError
ROUNDED_TESTS = ["assert f(0.25) == 0.8", "assert f(1.0) == 3.0", "assert f(0.123) == 0.4"]


def _rounded_item(folder: Path, distractors: str) -> None:
    (folder / "strings").mkdir(parents=True)
    tests = "".join(f'  "{t}",\n' for t in ROUNDED_TESTS)
    (folder / "strings" / "f.toml").write_text(
        f'domain = "strings"\nquery = "Triple x, rounded to one decimal."\nentry_point = "f"\n'
        f"canonical = '''\n{ROUNDED}'''\ntests = [\n{tests}]\n\n[source]\n"
        'distribution = "p"\nversion = "1"\nfile = "p/m.py"\nline = 1\nsha256 = ""\n'
        f'license = "MIT"\nurl = ""\n{distractors}'
    )


def test_a_mined_item_prefers_wrong_value_kills_to_a_swapped_argument_crash(tmp_path, mined):
    # Newly mined items ask for it; items without the key (the bundled ones, the committed
    # mined corpora) keep the selection they were built with.
    source = tomllib.loads((mined / "realpkg" / "pick.toml").read_text())["source"]
    assert source["distractors"] == "wrong-value-first"
    chosen = {}
    with (
        SuiteRunner(cache_dir=tmp_path / "cache") as runner,
        SuiteRunner(Limits(timeout_s=1.0), cache_dir=tmp_path / "cache") as mutant_runner,
    ):
        for key in ("", 'distractors = "wrong-value-first"\n'):
            folder = tmp_path / f"items{len(chosen)}"
            _rounded_item(folder, key)
            items, problems = load_items(folder)
            assert problems == []
            result = build(items, runner, mutant_runner)
            pool = [s for s in result.corpus.snippets if s.kind == "distractor"]
            chosen[key] = sorted((s.operator, s.kill) for s in pool)
            report = yield_report(result.yields)
            crashes = sum(1 for s in pool if s.kill == "exception")
            assert (
                f"distractors killed only by a crash (no test saw a wrong value): {crashes}/4"
                in report
            )
    old, new = chosen.values()
    assert ("swap_arguments", "exception") in old  # a distinct class before a wrong value
    assert len(new) == 4 and all(kill == "assertion" for _, kill in new)
