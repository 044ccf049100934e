"""Real bugs from history (mining/history.py, mining/git_reader.py) on a repository the test
makes with git: a single-statement fix is found with its provenance and pattern; every other
kind of commit is counted by its reason; a hostile repository configuration runs nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from git_repos import commit, git

from pytest_execretrieval.mining.git_reader import OVERRIDES, GitReader
from pytest_execretrieval.mining.history import pattern, scan_history

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="no git on this machine")

FIXED = '''"""Tools."""


def clamp(x, lo, hi):
    """Limit x to the closed range [lo, hi]."""
    if x <= lo:
        return lo
    if x > hi:
        return hi
    return x


def total(values):
    """Add up the values."""
    return sum(values)
'''

BUG = FIXED.replace("x <= lo", "x < lo")


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, "Start", {"pkg/tools.py": BUG})
    return root


def test_a_single_statement_fix_is_a_real_bug_with_its_provenance(repo):
    test = "from pkg.tools import clamp\n\n\ndef test_low_edge():\n    assert clamp(1, 1, 3) == 1\n"
    sha = commit(
        repo, "Fix clamp at the low edge", {"pkg/tools.py": FIXED, "tests/test_t.py": test}
    )
    scan = scan_history(repo)
    (pair,) = scan.pairs
    assert (pair.commit, pair.file, pair.name, pair.line) == (sha, "pkg/tools.py", "clamp", 4)
    assert "x < lo" in pair.bug and "x <= lo" in pair.fix and pair.module == FIXED
    assert pair.author_date == "2026-01-02T03:04:05+01:00"
    assert pair.subject == "Fix clamp at the low edge"
    assert pair.tests == ("tests/test_t.py",)
    assert pair.added_tests == ("tests/test_t.py::test_low_edge",)
    assert pair.pattern == "off_by_one_boundary"  # `<=` -> `<`: the class that makes the bug
    assert scan.commits == 2 and scan.skipped == {"root commit": 1}


@pytest.mark.parametrize(
    ("subject", "files", "reason"),
    [
        ("Tidy clamp", {"pkg/tools.py": FIXED}, "subject names no fix"),
        (
            "Fix two things",
            {"pkg/tools.py": FIXED.replace("x > hi", "x >= hi").replace("x < lo", "x <= lo")},
            "more than one statement of the function changed",
        ),
        (
            "Fix far apart",
            {
                "pkg/tools.py": FIXED.replace("x < lo", "x <= lo").replace(
                    "return sum(values)", "return sum(values, 0)"
                )
            },
            "more than one diff hunk",
        ),
        (
            "Fix: move the module",
            {"pkg/tools.py": None, "pkg/moved.py": FIXED},
            "more than one Python file changed",
        ),
        (
            "Fix the docs",
            {"pkg/tools.py": BUG.replace("closed range", "range")},
            "docstring only",
        ),
        (
            "Fix tests only",
            {"tests/test_x.py": "def test_x():\n    pass\n"},
            "no change to non-test Python code",
        ),
        ("Fix encoding", {"pkg/tools.py": b"# \xff\n" + FIXED.encode()}, "file not UTF-8"),
        (
            "Fix: add a statement",
            {
                "pkg/tools.py": FIXED.replace("x < lo", "x <= lo").replace(
                    "    return x\n", "    x = x\n    return x\n"
                )
            },
            "more than one statement of the function changed",
        ),
    ],
)
def test_every_other_commit_is_counted_by_its_reason(repo, subject, files, reason):
    commit(repo, subject, files)
    scan = scan_history(repo)
    assert not scan.pairs
    assert scan.skipped[reason] == 1, scan.skipped


def test_a_rename_is_not_a_fix_and_since_and_limit_bound_the_walk(repo):
    start = git(repo, "rev-parse", "HEAD")
    commit(
        repo,
        "Fix: rename",
        {"pkg/tools.py": None, "pkg/renamed.py": FIXED.replace("x <= lo", "x < lo")},
    )
    commit(repo, "Fix clamp", {"pkg/renamed.py": FIXED})
    scan = scan_history(repo, since=start)
    assert scan.commits == 2 and len(scan.pairs) == 1
    assert scan.skipped == {"file added, deleted or moved": 1} or scan.skipped == {
        "more than one Python file changed": 1
    }
    assert scan_history(repo, limit=0).skipped["past --limit"] == 3


def test_a_hostile_repository_configuration_runs_nothing(repo, tmp_path):
    """Every program a repository can name for git to run, pointed at a script that leaves a
    marker: scanning the history (with a fix to diff and test files to read) runs none."""
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    script.chmod(0o755)
    for key in (
        "core.fsmonitor",
        "core.pager",
        "core.editor",
        "core.sshCommand",
        "diff.external",
        "gpg.program",
        "credential.helper",
        "filter.evil.smudge",
        "filter.evil.clean",
        "filter.evil.process",
        "diff.evil.textconv",
        "core.alternateRefsCommand",
    ):
        git(repo, "config", key, str(script))
    git(repo, "config", "log.showSignature", "true")
    git(repo, "config", "core.hooksPath", str(tmp_path / "hooks"))
    (tmp_path / "hooks").mkdir()
    for hook in ("post-checkout", "post-commit", "pre-commit", "reference-transaction"):
        (tmp_path / "hooks" / hook).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (tmp_path / "hooks" / hook).chmod(0o755)
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    git(
        repo,
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "filter.evil.clean=cat",
        "add",
        ".gitattributes",
    )
    git(repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "attributes")
    (repo / "pkg/tools.py").write_text(FIXED)
    git(repo, "-c", "filter.evil.clean=cat", "-c", "filter.evil.process=", "add", "-A")
    git(repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "Fix clamp")
    marker.unlink(missing_ok=True)
    scan = scan_history(repo)
    assert len(scan.pairs) == 1
    assert not marker.exists(), "git ran a program the repository named"


def test_every_override_is_a_key_value_pair():
    assert all("=" in pair and pair.split("=", 1)[0].count(".") >= 1 for pair in OVERRIDES)


def test_a_large_file_is_not_read(repo, monkeypatch):
    from pytest_execretrieval.mining import git_reader

    monkeypatch.setattr(git_reader, "MAX_BLOB", 100)
    commit(repo, "Fix clamp", {"pkg/tools.py": FIXED})
    with GitReader(repo) as reader:
        assert reader.read(git(repo, "rev-parse", "HEAD:pkg/tools.py"), limit=100) is None
    scan = scan_history(repo)
    assert scan.skipped["file too large or missing"] == 1


@pytest.mark.parametrize(
    ("fix", "bug", "expected"),
    [
        (
            "def f(a, b):\n    return a < b\n",
            "def f(a, b):\n    return a <= b\n",
            "off_by_one_boundary",
        ),
        ("def f(a, b):\n    return a - b\n", "def f(a, b):\n    return b - a\n", "swap_arguments"),
        (
            "def f(a):\n    return a.upper()\n",
            "def f(a):\n    return a.lower()\n",
            "wrong_function_name",
        ),
        ("def f(a):\n    return list(a)\n", "def f(a):\n    return tuple(a) + ()\n", "other"),
    ],
)
def test_the_pattern_is_the_class_whose_edit_makes_the_bug(fix, bug, expected):
    assert pattern(fix, bug) == expected
