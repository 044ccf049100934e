"""``execretrieval mine REPO --history`` end to end on a repository the test makes with git: a
killed real bug enters the built pool as a ``real_bug`` distractor named by its pattern, a
surviving one does not, every other commit is counted, a hostile configuration runs nothing, and
the benchmark reports the real-bug deception analysis."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from git_repos import commit, git
from plugin_runs import bench

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.build import engine
from pytest_execretrieval.corpus.items import load_item, load_items
from pytest_execretrieval.corpus.store import read_corpus, stale_reasons
from pytest_execretrieval.corpus.variants import DEFAULT_VARIANT
from pytest_execretrieval.mining.history_mine import (
    LATER_FIX,
    NOT_BY_TEST,
    SAME_ANSWERS,
    SAME_CODE,
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="no git on this machine")

PYPROJECT = '[project]\nname = "tinytools"\nversion = "1.0"\nlicense = "MIT"\n'
LICENCE = "Copyright (c) 2026 Tiny Tools Authors\n\nPermission is hereby granted...\n"
MODULE = '''"""Tools."""


def clamp(x, lo, hi):
    """Limit x to the closed range [lo, hi].

    >>> clamp(5, 0, 3)
    3
    >>> clamp(-1, 0, 3)
    0
    """
    if x <= lo:
        return lo
    if x > hi:
        return hi
    return x


def last_index(values):
    """The index of the last element of a non-empty list.

    >>> last_index([7, 8, 9])
    2
    """
    return len(values) - 1


def total(values):
    """Add up the values.

    >>> total([1, 2])
    3
    """
    return sum(values)
'''
# Before the fixes: clamp is wrong only at x == 10, which no test calls, so its real bug
# survives the fix's tests, but a call drawn near theirs (clamp(9, 0, 3)'s x + 1) shows it is a
# bug; last_index's is off by one, and the tests kill it.
BUGGY = MODULE.replace("if x <= lo:", "if x <= lo or x == 10:").replace(
    "len(values) - 1", "len(values)"
)
TESTS = """import tinytools.tools as t
from tinytools.tools import clamp


def test_edges():
    expected = 1
    assert clamp(1, 1, 3) == expected
    assert t.last_index([4]) == 0
    assert t.clamp(9, 0, 3) == 3
"""


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "remote", "add", "origin", "https://ci:s3cret@example.org/team/tinytools.git")
    files = {"pyproject.toml": PYPROJECT, "LICENSE": LICENCE, "tinytools/tools.py": BUGGY}
    commit(root, "Start", files | {"tinytools/__init__.py": ""})
    commit(
        root,
        "Fix last_index: off by one",
        {"tinytools/tools.py": BUGGY.replace("len(values)", "len(values) - 1")},
    )
    commit(
        root,
        "Fix clamp at the low edge",
        {"tinytools/tools.py": MODULE, "tests/test_tools.py": TESTS},
    )
    spread = MODULE.replace("x > hi", "x >= hi").replace("sum(values)", "sum(values, 0)")
    commit(root, "Fix two places at once", {"tinytools/tools.py": spread})
    commit(root, "Fix: move the module", {"tinytools/tools.py": None, "tinytools/moved.py": spread})
    return root


def _hostile(repo: Path, tmp_path: Path) -> Path:
    """Point every program a repository can name at a script that leaves a marker."""
    marker, script = tmp_path / "ran", tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    script.chmod(0o755)
    for key in ("core.fsmonitor", "core.pager", "diff.external", "filter.evil.smudge"):
        git(repo, "config", key, str(script))
    git(repo, "config", "core.hooksPath", str(tmp_path))
    included = tmp_path / "included"  # a config file of the host's, read by no include
    included.write_text('[remote "origin"]\n\turl = https://leak.example/host-file\n')
    git(repo, "config", "include.path", str(included))
    (repo / ".git" / "info" / "attributes").write_text("*.py filter=evil diff=evil\n")
    return marker


@pytest.fixture
def mined(repo, tmp_path) -> Path:
    marker = _hostile(repo, tmp_path)
    out = tmp_path / "mined"
    assert cli.main(["mine", str(repo), "--history", "--out", str(out)]) == 0
    assert not marker.exists(), "git ran a program the repository named"
    return out


def test_each_fix_becomes_an_item_with_its_real_bug_and_provenance(mined, repo):
    items = sorted((mined / "tinytools_history").glob("*.toml"))
    assert [p.name.rsplit("_", 1)[0] for p in items] == ["clamp", "last_index"]
    last = load_item(next(p for p in items if p.name.startswith("last_index")))
    assert "len(values) - 1" in last.canonical and "return len(values)\n" in last.real_bug
    source = last.source
    assert source is not None and source.subject == "Fix last_index: off by one"
    assert source.commit == git(repo, "rev-parse", "HEAD~3")
    assert source.parent == git(repo, "rev-parse", "HEAD~4")
    assert source.author_date == "2026-01-02T03:04:05+01:00"
    assert source.files == ("tinytools/tools.py",) and source.license == "MIT"
    # Where it came from: history, the repository by name and public address (no password).
    assert (source.origin, source.repository) == ("history", "tinytools")
    assert source.url == "https://example.org/team/tinytools"
    assert "s3cret" not in (mined / "tinytools_history" / items[1].name).read_text()
    clamp = load_item(next(p for p in items if p.name.startswith("clamp")))
    assert clamp.source is not None
    assert clamp.source.fixing_tests == ("tests/test_tools.py::test_edges",)
    assert clamp.source.pattern == "other"
    assert clamp.real_bug.startswith("def clamp(x, lo, hi):")
    # the test file's asserts at the fix commit: a name assigned once, a module alias
    assert {"assert clamp(1, 1, 3) == 1", "assert clamp(9, 0, 3) == 3"} <= set(clamp.tests)
    assert "test tests/test_tools.py:7" in clamp.source.tests
    text = (mined / "MINED.md").read_text()
    assert "| more than one diff hunk | 1 |" in text
    assert "| more than one Python file changed | 1 |" in text  # the move: a delete and an add
    assert "real bugs the fix's tests kill: 1; surviving: 1" in text
    assert "MIT" in (mined / "NOTICE").read_text()


def test_the_build_keeps_the_killed_real_bug_and_the_benchmark_reports_it(
    mined, tmp_path, pytester, capsys
):
    cache = str(tmp_path / "cache")
    assert cli.main(["build", str(mined), "-j", "1", "--cache-dir", cache]) == 0
    assert (
        "real bugs: 1/2 killed by the fix's tests (in the pool), 1 survive"
        in capsys.readouterr().out
    )
    corpus = read_corpus(mined)
    (real,) = [s for s in corpus.snippets if s.kind == "real_bug"]
    assert real.query_id.startswith("tinytools_history/last_index_") and real.kill == "assertion"
    manifest = json.loads((mined / "manifest.json").read_text())
    assert manifest["counts"]["real_bugs"] == 1
    assert cli.main(["build", str(mined), "--check", "--cache-dir", cache]) == 0
    result = bench(pytester, mined, "--execretrieval-report-dir", str(tmp_path / "r"))
    assert result.ret in (0, 1)
    report = json.loads((tmp_path / "r" / "bm25.json").read_text())
    section = report["analyses"]["real_bugs"]
    assert section["n_pairs"] == 1 and section["real_bug_deception"] in (0.0, 1.0)
    assert set(section["by_pattern"]) == {real.operator}
    row = next(q for q in report["per_query"] if q["query_id"] == real.query_id)
    assert [d["kind"] for d in row["own_distractors"] if "kind" in d] == ["real_bug"]
    assert "Real bugs from history" in (tmp_path / "r" / "summary.md").read_text()


HISTORY_SOURCE = (
    'distribution = "t"\nversion = "1"\nfile = "t.py"\nline = 1\nsha256 = "ab"\n'
    'license = "MIT"\nurl = ""\n'
)


@pytest.mark.parametrize(
    ("real_bug", "source", "problem"),
    [
        (True, None, "needs \\[source\\] origin = 'history' \\| 'dataset' \\| 'hand'"),
        (True, 'origin = "hand"', None),
        (True, 'origin = "dataset"', "source.distribution: missing required field"),
        (True, 'origin = "dataset"\ndistribution = "bugsinpy"\nversion = "1"', None),
        (True, 'origin = "history"\n' + HISTORY_SOURCE, "source.commit and source.parent"),
        (True, HISTORY_SOURCE, "needs \\[source\\] origin"),
        (True, HISTORY_SOURCE + 'commit = "c"\nparent = "p"', None),  # mined before origins
        (True, 'origin = "blog"', "source.origin: must be one of history, dataset, hand"),
        (False, 'origin = "hand"', "source.origin: says where a real_bug came from"),
    ],
)
def test_an_item_s_real_bug_says_where_it_came_from(tmp_path, real_bug, source, problem):
    folder = tmp_path / "d"
    folder.mkdir()
    path = folder / "f.toml"
    path.write_text(
        'domain = "d"\nquery = "q"\nentry_point = "f"\n'
        + 'canonical = "def f():\\n    return 1\\n"\n'
        + ('real_bug = "def f():\\n    return 2\\n"\n' if real_bug else "")
        + 'tests = ["assert f() == 1"]\n'
        + (f"\n[source]\n{source}\n" if source else "")
    )
    if problem is None:
        assert load_item(path).real_bug == ("def f():\n    return 2\n" if real_bug else "")
    else:
        with pytest.raises(Exception, match=problem):
            load_item(path)


MINED = Path(__file__).resolve().parents[1] / "mined"


@pytest.mark.parametrize("corpus", sorted(p.name for p in MINED.iterdir() if p.is_dir()))
def test_every_committed_mined_corpus_is_up_to_date(corpus):
    """What CI benchmarks is what the item files and the engine make (hashes only)."""
    items, problems = load_items(MINED / corpus)
    assert items and not problems
    assert stale_reasons(MINED / corpus, engine(DEFAULT_VARIANT, {"python"})) == []


def test_the_committed_real_bug_corpus_holds_its_fixes_provenance():
    items, _ = load_items(MINED / "history")
    assert all(i.real_bug and i.source and i.source.commit and i.source.parent for i in items)
    pool = read_corpus(MINED / "history").snippets
    real = [s for s in pool if s.kind == "real_bug"]
    assert real and all(s.kill in ("assertion", "exception") for s in real)
    notice = (MINED / "history" / "NOTICE").read_text()
    assert all(i.source and i.source.distribution in notice for i in items)


def test_a_fix_that_changes_no_behaviour_gives_no_real_bug(tmp_path):
    """A renamed local variable is the same syntax tree; an edge case that returns the same
    value either way gives the fix's answers on every call: neither is a real bug."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    renamed = MODULE.replace("return sum(values)", "return sum(v for v in values)")
    commit(repo, "Start", {"pyproject.toml": PYPROJECT, "LICENSE": LICENCE, "t/tools.py": renamed})
    commit(repo, "Fix total's name", {"t/tools.py": renamed.replace("v for v", "w for w")})
    equivalent = MODULE.replace("x <= lo", "x < lo")  # x == lo returns x, which is lo
    commit(repo, "Fix clamp", {"t/tools.py": equivalent})
    commit(repo, "Fix clamp at the edge", {"t/tools.py": MODULE})
    out = tmp_path / "mined"
    assert cli.main(["mine", str(repo), "--history", "--out", str(out)]) == 0
    assert list((out / "tinytools_history").glob("*.toml")) == []
    text = (out / "MINED.md").read_text()
    assert f"| {SAME_CODE} | 1 |" in text and f"| {SAME_ANSWERS} | 1 |" in text


def test_a_function_fixed_twice_is_one_item_at_its_latest_fix(repo, tmp_path):
    moved = (repo / "tinytools" / "moved.py").read_text()
    # An empty list's last index: None (the earlier version's -1 a call drawn near [4] shows).
    later = moved.replace("return len(values) - 1", "return len(values) - 1 if values else None")
    last = commit(repo, "Fix last_index of an empty list", {"tinytools/moved.py": later})
    out = tmp_path / "twice"
    assert cli.main(["mine", str(repo), "--history", "--out", str(out)]) == 0
    found = [load_item(p) for p in (out / "tinytools_history").glob("last_index_*.toml")]
    assert [c.source.commit for c in found if c.source] == [last]
    assert (
        "| the function is fixed again later (its latest fix is the item) | 1 |"
        in (out / "MINED.md").read_text()
    )


CONTEXT_CORE = '''RATE = 3


def _scale(x):
    return x * RATE


def scaled_total(values):
    """Sum the values, each scaled by the package's rate."""
    return sum(_scale(v) for v in values[1:])


class Account:
    """A bank account."""

    def __init__(self, balance):
        self.balance = balance

    def deposit(self, amount):
        """Add a positive amount to the balance and give the new balance."""
        if amount < 0:
            raise ValueError("amount")
        self.balance += amount
        return self.balance
'''
CONTEXT_TESTS = """import pytest

from ctx.core import Account, scaled_total


def test_scaled():
    assert scaled_total([1, 2]) == 9
    assert scaled_total([]) == 0


def test_deposit():
    assert Account(10).deposit(5) == 15
    with pytest.raises(ValueError):
        Account(10).deposit(0)
"""


def test_fixes_of_functions_using_their_module_and_of_methods_are_mined_in_context(tmp_path):
    """In its fix commit's context, a method is an item too (without, only the function whose
    helpers travel with it); the tests are carved from the test files at the fix commit, the
    real bug runs in the same context and the carved calls kill it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    pyproject = PYPROJECT.replace("tinytools", "ctx")
    files = {"pyproject.toml": pyproject, "LICENSE": LICENCE, "ctx/__init__.py": ""}
    commit(repo, "Start", files | {"ctx/core.py": CONTEXT_CORE})
    fixed = CONTEXT_CORE.replace("values[1:]", "values")
    first = commit(
        repo, "Fix scaled_total", {"ctx/core.py": fixed, "tests/test_core.py": CONTEXT_TESTS}
    )
    zero = fixed.replace("< 0", "<= 0")
    commit(repo, "Fix deposit of zero", {"ctx/core.py": zero})
    # Two commits whose subjects name no fix: one adds a test its pre-fix version fails (a
    # fix by its test, two statements added), one a test its pre-fix version passes (none).
    typed = zero.replace(
        "        if amount <= 0:",
        "        if not isinstance(amount, int):\n            raise TypeError(amount)\n"
        "        if amount <= 0:",
    )
    type_test = "\n\ndef test_type():\n    with pytest.raises(TypeError):\n"
    type_test += "        Account(1).deposit(1.5)\n"
    tests = CONTEXT_TESTS + type_test
    second = commit(
        repo, "Refuse amounts of other types", {"ctx/core.py": typed, "tests/test_core.py": tests}
    )
    faster = typed.replace("sum(_scale(v) for v in values)", "RATE * sum(values)")
    more = tests + "\n\ndef test_more():\n    assert scaled_total([3]) == 9\n"
    commit(repo, "Speed up scaled_total", {"ctx/core.py": faster, "tests/test_core.py": more})
    plain = tmp_path / "plain"
    assert cli.main(["mine", str(repo), "--history", "--out", str(plain)]) == 0
    assert [p.name[:12] for p in (plain / "ctx_history").glob("*.toml")] == ["scaled_total"]
    out = tmp_path / "mined"
    args = ["mine", str(repo), "--history", "--context", "--repo-url", "https://example.org/a/ctx"]
    assert cli.main([*args, "--out", str(out)]) == 0
    items = {p.stem.rsplit("_", 1)[0]: load_item(p) for p in (out / "ctx_history").glob("*.toml")}
    assert set(items) == {"scaled_total", "account_deposit"}
    total, deposit = items["scaled_total"], items["account_deposit"]
    assert "values[1:]" in total.real_bug and total.canonical.startswith("def scaled_total")
    assert "assert scaled_total([1, 2]) == 9" in total.tests
    assert "assert raises(TypeError, deposit, {'balance': 1}, 1.5)" in deposit.tests
    assert deposit.real_bug.startswith("def deposit(self, amount):\n    if amount <= 0:")
    assert deposit.source is not None and total.source is not None
    assert (deposit.source.admitted, deposit.source.statements) == (("test",), 2)  # if, raise
    assert (total.source.admitted, total.source.statements) == (("subject",), 1)
    for item, commit_id in ((total, first), (deposit, second)):
        assert item.context is not None and item.source is not None
        assert item.context.package == f"contexts/ctx-{commit_id[:12]}.zip"
        assert item.source.repository == "ctx" and item.source.commit == commit_id
    assert sorted(p.name for p in (out / "contexts").iterdir()) == sorted(
        f"ctx-{c[:12]}.zip" for c in (first, second)
    )
    text = (out / "MINED.md").read_text()
    assert "real bugs the fix's tests kill: 2; surviving: 0" in text
    assert f"| {NOT_BY_TEST} | 1 |" in text and f"| {LATER_FIX} | 1 |" in text
    cache = str(tmp_path / "cache")
    assert cli.main(["build", str(out), "-j", "1", "--cache-dir", cache]) == 0
    kinds = [s.kind for s in read_corpus(out).snippets]
    assert kinds.count("real_bug") == 2
