"""The history reader (mining/git_reader.py, mining/history.py) on repositories built to attack
the host (issue 53): a partial clone whose lazy fetch would run a shell command, a hung git, an
object store borrowing another repository's objects, an object over the size limit, a large
module, an author date past ``datetime``'s range, an expression nested deeper than Python's
recursion limit. Each is refused, skipped with a reason or read within its bounds; none runs a
program, reads another repository, hangs, or ends in a traceback."""

from __future__ import annotations

import difflib
import os
import shutil
import time
from pathlib import Path

import pytest
from git_repos import commit, drop_object, git, partial_clone, with_author_line

from pytest_execretrieval import cli
from pytest_execretrieval.mining import git_reader, history
from pytest_execretrieval.mining.git_reader import GitError, GitReader
from pytest_execretrieval.mining.history import Skip, scan_history

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="no git on this machine")

FIXED = '''"""Tools."""


def clamp(x, lo, hi):
    """Limit x to the closed range [lo, hi]."""
    if x <= lo:
        return lo
    if x > hi:
        return hi
    return x
'''
BUG = FIXED.replace("x <= lo", "x < lo")


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, "Start", {"pkg/tools.py": BUG, "pkg/data.py": "TABLE = 1\n"})
    return root


def _script(path: Path, text: str) -> str:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return str(path)


def test_a_partial_clone_fetches_nothing_and_runs_no_upload_pack(repo, tmp_path):
    """A missing object of a partial clone would be fetched lazily, running the remote's
    upload-pack command (here: leave a marker, then hang) although the override says
    ``protocol.allow=never``: the repository's ``protocol.file.allow=always`` beats it. The
    reader allows no transport: the object reads as missing, the scan counts the fix as
    unreadable, at once."""
    marker = tmp_path / "ran"
    commit(repo, "Fix clamp", {"pkg/tools.py": FIXED})
    bug_blob = git(repo, "rev-parse", "HEAD~1:pkg/tools.py")
    data_blob = git(repo, "rev-parse", "HEAD:pkg/data.py")
    for sha in (bug_blob, data_blob):
        drop_object(repo, sha)
    partial_clone(repo, str(tmp_path / "elsewhere"), f"touch {marker}; sleep 30")
    started = time.monotonic()
    scan = scan_history(repo)
    with GitReader(repo) as reader:
        sizes = {entry.path: entry.size for entry in reader.tree("HEAD")}  # ls-tree -l
        assert reader.read(data_blob) is None
    assert time.monotonic() - started < 10
    assert not marker.exists(), "a lazy fetch ran the repository's upload-pack command"
    assert scan.skipped["file too large or missing"] == 1 and not scan.pairs
    assert sizes["pkg/data.py"] == -1 and sizes["pkg/tools.py"] == len(FIXED)


def test_a_git_that_hangs_is_killed_at_the_deadline(repo, tmp_path, monkeypatch):
    """Every read of a cat-file pipe has a deadline: past it, git is killed and the error
    names the command (a lazy fetch, or any other wait, cannot hang the miner)."""
    monkeypatch.setattr(git_reader, "TIMEOUT_S", 1.0)
    hung = _script(
        tmp_path / "hung-git",
        'for arg in "$@"; do [ "$arg" = cat-file ] && exec sleep 30; done\nexec git "$@"\n',
    )
    blob = git(repo, "rev-parse", "HEAD:pkg/tools.py")
    started = time.monotonic()
    with GitReader(repo, git=hung) as reader, pytest.raises(GitError, match="cat-file"):
        reader.read(blob)
    assert time.monotonic() - started < 8


@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_a_repository_borrowing_another_ones_objects_is_refused(tmp_path, capsys, kind):
    """``objects/info/alternates`` would let a repository's trees name blobs of any
    repository on the host, read into mined output: such a repository is refused, by name,
    before git reads the file (a FIFO there would block it)."""
    secret = tmp_path / "secret"
    secret.mkdir()
    git(secret, "init", "-q", "-b", "main")
    commit(secret, "Fix the key", {"key.py": "TOKEN = 'hunter2'\n"})
    borrower = tmp_path / "borrower"
    git(tmp_path, "clone", "-q", "--shared", str(secret), str(borrower))
    alternates = borrower / ".git" / "objects" / "info" / "alternates"
    assert alternates.read_text().strip()  # the clone borrows every object of `secret`
    if kind == "fifo":
        alternates.unlink()
        os.mkfifo(alternates)
    with pytest.raises(GitError, match="alternates"):
        scan_history(borrower)
    out = tmp_path / "mined"
    assert cli.main(["mine", str(borrower), "--history", "--out", str(out)]) == cli.EXIT_USAGE
    assert "objects/info/alternates" in capsys.readouterr().err
    assert not any(p.read_bytes().count(b"hunter2") for p in out.rglob("*") if p.is_file())


def test_comments_in_an_alternates_file_borrow_nothing_and_are_read(repo):
    commit(repo, "Fix clamp", {"pkg/tools.py": FIXED})
    (repo / ".git" / "objects" / "info" / "alternates").write_text("# nothing\n\n")
    assert len(scan_history(repo).pairs) == 1


def test_an_object_over_the_limit_is_never_streamed(repo, tmp_path):
    """Its size is asked first: git never sends (nor inflates) the body of an object over the
    limit. A wrapper counts every byte git's cat-file writes: the header lines and the small
    blob, not the 8 MiB one (a 8 KiB object in the repository)."""
    big = b"x = 1\n" * ((8 << 20) // 6)
    commit(repo, "Add data", {"pkg/big.py": big})
    log = tmp_path / "cat-file-output"
    counting = _script(
        tmp_path / "counting-git",
        'for arg in "$@"; do\n'
        f'  [ "$arg" = cat-file ] && {{ git "$@" | tee -a {log}; exit; }}\n'
        'done\nexec git "$@"\n',
    )
    big_blob = git(repo, "rev-parse", "HEAD:pkg/big.py")
    small_blob = git(repo, "rev-parse", "HEAD:pkg/tools.py")
    with GitReader(repo, git=counting) as reader:
        assert reader.read(big_blob) is None  # over MAX_BLOB (1 MiB)
        assert reader.read(big_blob, limit=100) is None
        assert reader.read(small_blob) == BUG.encode()
        assert reader.read(small_blob, limit=10) is None
    assert len(big) > 4 * git_reader.MAX_BLOB
    assert log.stat().st_size < len(BUG) + 1000


def test_a_small_fix_in_a_module_of_thousands_of_lines_is_found_at_once(repo):
    """difflib's matcher is quadratic in repeated lines (here 12,000 blank ones): over its
    budget, the diff is taken on the changed region only, and the fix is found."""
    filler = "".join(f"\n\ndef f{i}(x):\n    return x\n" for i in range(6000))
    commit(repo, "Grow", {"pkg/tools.py": BUG + filler})
    sha = commit(repo, "Fix clamp", {"pkg/tools.py": FIXED + filler})
    started = time.monotonic()
    scan = scan_history(repo)
    assert time.monotonic() - started < 10
    assert [(p.commit, p.name) for p in scan.pairs] == [(sha, "clamp")]


def test_the_diff_is_difflibs_on_whole_versions_within_its_budget(monkeypatch):
    """Within the budget the hunks are difflib's on the whole versions (so results do not
    change); over it, the changed region's; a region over the budget is a named skip."""
    before = ["import a", "", "X = 1", "Y = 2", "", "", "def f():", "    pass", "", "def g():"]
    after = before[:2] + [""] + before[2:8] + [""] + before[8:]
    whole = difflib.SequenceMatcher(None, before, after, autojunk=False)
    assert history._hunks("\n".join(before), "\n".join(after)) == 2
    assert len(list(whole.get_grouped_opcodes(3))) == 2
    monkeypatch.setattr(history, "MAX_DIFF_WORK", 30)  # the whole versions cost more
    assert history._hunks("\n".join(before), "\n".join(after)) == 1  # blank lines align apart
    costly = "\n".join(["x"] * 1000), "\n".join(["x", "y"] * 500)
    monkeypatch.setattr(history, "MAX_DIFF_WORK", 100_000)
    started = time.monotonic()
    with pytest.raises(Skip, match="too costly"):
        history._hunks(*costly)
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(
    "author",
    [
        "100000000000000000 +0000",  # datetime: OSError (EOVERFLOW)
        "99999999999999999999 +0000",  # OverflowError
        "99999999999999 +0000",  # ValueError: year out of range
        "1700000000 +9999",  # an offset of 99 hours
    ],
)
def test_an_author_date_past_datetime_is_unknown_not_a_traceback(repo, author):
    commit(repo, "Fix clamp", {"pkg/tools.py": FIXED})
    sha = with_author_line(repo, author)
    (pair,) = scan_history(repo).pairs
    assert (pair.commit, pair.author_date) == (sha, "")


def test_an_expression_nested_past_the_recursion_limit_is_a_named_skip(repo):
    deep = "LIMIT = " + " + ".join(["1"] * 1500) + "\n"
    commit(repo, "Deepen", {"pkg/tools.py": BUG + deep})
    commit(repo, "Fix clamp", {"pkg/tools.py": FIXED + deep})
    scan = scan_history(repo)
    assert not scan.pairs
    assert scan.skipped["a version nests too deeply to compare"] == 1
