"""Repository contexts (issue 55): a context archive prepared for the sandbox, a suite run with
its module imported and one function or method replaced, and the ``[context]`` item table."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from pytest_execretrieval.cli import main
from pytest_execretrieval.corpus.items import ItemError, load_item, load_items
from pytest_execretrieval.execution.contexts import (
    ContextError,
    archive_sha256,
    context_setup,
    contexts_dir,
    prepare,
)
from pytest_execretrieval.execution.sandbox import Sandbox
from pytest_execretrieval.signed_files import user_key_dir

CORE = """SCALE = 2


class Box:
    def __init__(self, v):
        self.v = v

    def grow(self, n):
        return self.v + n * SCALE

    def __hidden(self):
        return 1

    def peek(self):
        return self.__hidden()

    @staticmethod
    def twice(x):
        return 2 * x


class Loud(Box):
    def grow(self, n):
        return super().grow(n) * 10


def helper(x):
    return x * SCALE


def double(x):
    return helper(x)
"""


def write_archive(path: Path, files: dict[str, str]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def context(tmp_path):
    path = tmp_path / "ctx.zip"
    sha = write_archive(path, {"pkg/__init__.py": "from .core import *\n", "pkg/core.py": CORE})
    return path, sha


@pytest.fixture(scope="module")
def sandbox():
    contexts_dir().mkdir(parents=True, exist_ok=True)  # before the sandbox starts: it exposes it
    with Sandbox() as box:
        yield box


def test_prepare_writes_the_python_files_by_content_and_once(context):
    path, sha = context
    target = prepare(path, sha)
    assert target == contexts_dir() / sha
    assert (target / "pkg" / "core.py").read_text() == CORE
    assert list((target / "pkg" / "__pycache__").glob("core.*.pyc"))  # compiled, not run
    assert prepare(path, sha) == target  # prepared: nothing read again
    assert not list(contexts_dir().glob(".preparing-*"))


def test_a_context_whose_bytes_are_not_the_pinned_ones_is_refused(context):
    path, _ = context
    with pytest.raises(ContextError, match="not the pinned"):
        prepare(path, "0" * 64)


@pytest.mark.parametrize("name", ["../evil.py", "/abs.py", "pkg/../../x.py", "a b/c.py"])
def test_a_member_name_outside_the_context_is_refused(tmp_path, name):
    path = tmp_path / "bad.zip"
    sha = write_archive(path, {name: "x = 1\n"})
    with pytest.raises(ContextError, match="not a plain relative path"):
        prepare(path, sha)
    assert not (contexts_dir() / sha).exists()


def test_a_symlinked_archive_is_refused(context, tmp_path):
    path, sha = context
    link = tmp_path / "link.zip"
    link.symlink_to(path)
    with pytest.raises(ContextError, match="not a regular file"):
        prepare(link, hashlib.sha256(path.read_bytes()).hexdigest()[::-1])


def test_a_function_is_replaced_in_its_module_and_calls_its_neighbours(context, sandbox):
    path, sha = context
    prepare(path, sha)
    setup = context_setup(sha, "pkg.core")
    right = "def double(x):\n    return helper(x)\n"
    wrong = "def double(x):\n    return helper(x) + 1\n"
    tests = ["assert double(2) == 4", "assert double(0) == 0"]
    assert sandbox.run(right, setup, tests).passed
    assert sandbox.run(wrong, setup, tests).outcomes == ("fail", "fail")
    # A snippet that does not define the entry point again is not the module's function.
    assert sandbox.run("def other(x):\n    return 1\n", setup, tests).outcomes == (
        "error:NameError",
        "error:NameError",
    )


def test_methods_run_on_an_instance_of_their_class_built_from_its_attributes(context, sandbox):
    path, sha = context
    prepare(path, sha)
    box = context_setup(sha, "pkg.core", "Box")
    grow = "def grow(self, n):\n    return self.v + n * SCALE\n"
    assert sandbox.run(grow, box, ["assert grow({'v': 1}, 2) == 5"]).passed
    mangled = "def peek(self):\n    return self.__hidden() + 1\n"  # Box's private name
    assert sandbox.run(mangled, box, ["assert peek({'v': 0}) == 2"]).passed
    static = "@staticmethod\ndef twice(x):\n    return 3 * x\n"
    assert sandbox.run(static, box, ["assert twice(2) == 6"]).passed
    loud = "def grow(self, n):\n    return super().grow(n) * 10\n"  # zero-argument super()
    assert sandbox.run(
        loud, context_setup(sha, "pkg.core", "Loud"), ["assert grow({'v': 1}, 1) == 30"]
    ).passed


def test_the_context_is_read_only_and_the_key_beside_it_unreadable(context, sandbox):
    path, sha = context
    target = prepare(path, sha)
    user_key_dir().mkdir(parents=True, exist_ok=True)
    key = user_key_dir() / "outcome-hmac-key"
    if not key.exists():
        key.write_bytes(b"k" * 32)
    write = f"def f():\n    open({str(target / 'pkg' / 'x.py')!r}, 'w')\n"
    read = f"def f():\n    return open({str(key)!r}, 'rb').read()\n"
    assert not sandbox.run(write, context_setup(sha), ["assert f() == None"]).passed
    assert not (target / "pkg" / "x.py").exists()
    assert not sandbox.run(read, context_setup(sha), ["assert f() == None"]).passed


def item_text(sha: str, extra: str = "", setup: str = "") -> str:
    return f"""domain = "pkg"
query = "Double a number with the package's scale"
entry_point = "double"
canonical = '''
def double(x):
    if x < 0:
        return -helper(-x)
    return helper(x)
'''
{setup}tests = ["assert double(2) == 4", "assert double(0) == 0", "assert double(-3) == -6"]

[context]
package = "contexts/pkg-1.0.zip"
sha256 = "{sha}"
module = "pkg.core"
{extra}"""


def test_a_context_item_loads_builds_and_its_mutants_run_in_the_module(tmp_path):
    items = tmp_path / "items"
    sha = write_archive(
        items / "contexts" / "pkg-1.0.zip", {"pkg/__init__.py": "", "pkg/core.py": CORE}
    )
    (items / "pkg").mkdir()
    (items / "pkg" / "double.toml").write_text(item_text(sha))
    item = load_item(items / "pkg" / "double.toml")
    assert item.context is not None and item.context.module == "pkg.core"
    assert item.setup == context_setup(sha, "pkg.core")
    assert main(["build", str(items)]) == 0
    records = [json.loads(line) for line in (items / "corpus.jsonl").read_text().splitlines()]
    kinds = [record["kind"] for record in records]
    assert kinds.count("canonical") == 1 and kinds.count("distractor") >= 1
    assert main(["build", str(items), "--check"]) == 0


@pytest.mark.parametrize(
    ("extra", "setup", "field"),
    [
        ('class = "not a class"\n', "", "context.class"),
        ('colour = "red"\n', "", "context.colour"),
        ("", 'setup = "import math"\n', "setup"),
    ],
)
def test_a_malformed_context_table_is_named(tmp_path, extra, setup, field):
    items = tmp_path / "items"
    sha = write_archive(items / "contexts" / "pkg-1.0.zip", {"pkg/core.py": CORE})
    (items / "pkg").mkdir()
    (items / "pkg" / "double.toml").write_text(item_text(sha, extra, setup))
    with pytest.raises(ItemError) as caught:
        load_item(items / "pkg" / "double.toml")
    assert field in {p.field for p in caught.value.problems}


def test_a_stale_context_is_an_item_problem_and_the_others_load(tmp_path):
    items = tmp_path / "items"
    write_archive(items / "contexts" / "pkg-1.0.zip", {"pkg/core.py": CORE})
    (items / "pkg").mkdir()
    (items / "pkg" / "double.toml").write_text(item_text("1" * 64))
    loaded, problems = load_items(items)
    assert not loaded
    assert [p.field for p in problems] == ["context.package"]
    assert "not the pinned" in problems[0].reason


def test_a_setup_may_not_write_the_context_directive(tmp_path):
    (tmp_path / "d").mkdir()
    item = tmp_path / "d" / "f.toml"
    item.write_text(
        'domain = "d"\nquery = "q q"\nentry_point = "f"\ncanonical = "def f():\\n    return 1\\n"\n'
        f'setup = "{context_setup("a" * 64, "os")}"\ntests = ["assert f() == 1"]\n'
    )
    with pytest.raises(ItemError, match="context directive"):
        load_item(item)


def test_archive_sha256_is_the_bytes_digest(context):
    path, sha = context
    assert archive_sha256(path) == sha


def test_package_data_travels_with_the_context_and_a_wheel_s_metadata_does_not(tmp_path, sandbox):
    reader = (
        "import json, os\n\n\ndef table():\n"
        "    with open(os.path.join(os.path.dirname(__file__), 'table.json')) as f:\n"
        "        return json.load(f)\n"
    )
    path = tmp_path / "data.zip"
    sha = write_archive(
        path,
        {
            "pkg/__init__.py": "",
            "pkg/reader.py": reader,
            "pkg/table.json": '{"a": 1}',
            "pkg-1.0.dist-info/METADATA": "Name: pkg\n",
            "pkg/native.so": "not a module",
        },
    )
    target = prepare(path, sha)
    assert (target / "pkg" / "table.json").is_file()
    assert (
        not (target / "pkg-1.0.dist-info").exists() and not (target / "pkg" / "native.so").exists()
    )
    snippet = reader.partition("\n\n\n")[2]  # the function alone, in its module
    result = sandbox.run(snippet, context_setup(sha, "pkg.reader"), ["assert table() == {'a': 1}"])
    assert result.passed, result
