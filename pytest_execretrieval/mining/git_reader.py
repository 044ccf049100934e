"""Reading an untrusted repository's history with git, running nothing the repository names.

A repository's ``.git/config`` and ``.gitattributes`` can make git run programs: hooks, an
fsmonitor, a pager, an external diff, textconv and clean/smudge filters, a gpg program for
``log.showSignature``, credential helpers. This reader is git itself (its pack and object
formats are not ours to reimplement, and a pure-Python reader would be a dependency for one
command), restricted so that none of those can fire:

* only plumbing that reads objects: ``rev-list``, ``diff-tree --raw`` (blob ids, never a
  content diff: no external diff, no textconv), ``ls-tree`` and ``cat-file --batch`` (raw
  objects, no filters); no porcelain, no work tree, no index (so no fsmonitor, no checkout filters);
* every such configuration key overridden on the command line (``-c`` wins over the
  repository's config), the system and global configs not read (``GIT_CONFIG_NOSYSTEM``,
  ``GIT_CONFIG_GLOBAL=/dev/null``), an empty ``HOME``, no terminal prompt, replace refs off;
* what comes back is bounded: a blob over :data:`MAX_BLOB` bytes is not read (the caller names
  it), text that is not UTF-8 is reported as such, and every call has a timeout.

Content diffs are computed in Python (:mod:`.history`), from the blobs.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_BLOB = 1 << 20  # bytes of one file version read; larger ones are skipped and counted
MAX_COMMIT = 1 << 20  # bytes of one commit object (its message included)
TIMEOUT_S = 120.0  # one git call

# Configuration keys that make git run a program or read a file the repository names, each
# set to a harmless value for every call (git's -c beats the repository's own config).
OVERRIDES = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.editor=false",
    "core.sshCommand=false",
    "core.askPass=false",
    "core.attributesFile=/dev/null",
    "core.alternateRefsCommand=false",
    "diff.external=",
    "log.showSignature=false",
    "gpg.program=false",
    "credential.helper=",
    "mailmap.file=/dev/null",
    "safe.directory=*",
    "protocol.allow=never",
)


class GitError(Exception):
    """git refused or failed; the message says which command and why."""


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    author_date: str  # ISO 8601 with the author's offset
    subject: str


@dataclass(frozen=True)
class Change:
    """One path changed by a commit against its first parent (``diff-tree --raw``)."""

    path: str
    status: str  # A, D, M, T (no renames: a moved file is a D and an A)
    old: str  # blob ids; the null id where there is none
    new: str


@dataclass(frozen=True)
class TreeEntry:
    """One path of a commit's tree."""

    path: str
    mode: str  # 100644, 100755, 120000 (a link), 160000 (a submodule)
    kind: str  # blob, commit
    sha: str
    size: int  # bytes; -1 for a submodule


NULL = "0" * 40


class GitReader:
    """git's view of one repository (a work tree's ``.git`` or a bare repository)."""

    def __init__(self, repo: Path, git: str = "git"):
        self.repo = Path(repo)
        self.git = git
        self._home = tempfile.mkdtemp(prefix="execretrieval-git-home-")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self._home,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
        }
        self._batch: subprocess.Popen[bytes] | None = None
        self._git_dir = self._locate()

    def _locate(self) -> str:
        out = self._run(["rev-parse", "--absolute-git-dir"], cwd=self.repo)
        return out.decode("utf-8", "replace").strip()

    def _argv(self, args: Sequence[str]) -> list[str]:
        config = [part for pair in OVERRIDES for part in ("-c", pair)]
        return [self.git, "--no-pager", *config, *args]

    def _run(self, args: Sequence[str], cwd: Path | None = None) -> bytes:
        where = ["--git-dir", self._git_dir] if cwd is None else []
        try:
            done = subprocess.run(
                self._argv([*where, *args]),
                cwd=cwd or self._home,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise GitError(f"git {args[0]}: {exc}") from None
        if done.returncode:
            said = done.stderr.decode("utf-8", "replace").strip()[:300]
            raise GitError(f"git {args[0]} failed in {self.repo}: {said}")
        return done.stdout

    def commits(self, since: str | None = None) -> list[Commit]:
        """Every commit reachable from HEAD (not from ``since``), oldest first."""
        spec = [f"{since}..HEAD"] if since else ["HEAD"]
        listing = self._run(["rev-list", "--reverse", "--topo-order", "--parents", *spec])
        out = []
        for line in listing.decode("ascii", "replace").splitlines():
            sha, *parents = line.split()
            out.append(self._commit(sha, tuple(parents)))
        return out

    def _commit(self, sha: str, parents: tuple[str, ...]) -> Commit:
        raw = self.read(sha, "commit", MAX_COMMIT)
        if raw is None:
            raise GitError(f"commit {sha} is unreadable")
        head, _, message = raw.partition(b"\n\n")
        date = ""
        for line in head.split(b"\n"):
            if line.startswith(b"author "):
                date = _author_date(line)
        subject = message.decode("utf-8", "replace").split("\n", 1)[0].strip()
        return Commit(sha, parents, date, subject[:300])

    def changes(self, commit: Commit) -> list[Change]:
        """The paths ``commit`` changes against its first parent (none for a root commit)."""
        if not commit.parents:
            return []
        raw = self._run(
            ["diff-tree", "-r", "-z", "--raw", "--no-renames", commit.parents[0], commit.sha]
        )
        fields = raw.split(b"\0")
        out = []
        for meta, path in zip(fields[0::2], fields[1::2]):
            if not meta.startswith(b":"):
                break
            _, _, old, new, status = meta[1:].decode("ascii", "replace").split(" ")
            out.append(Change(path.decode("utf-8", "surrogateescape"), status[:1], old, new))
        return out

    def tree(self, commit: str) -> list[TreeEntry]:
        """Every path of ``commit``'s tree (``ls-tree -r -l``: mode, type, blob id, size)."""
        raw = self._run(["ls-tree", "-r", "-z", "-l", "--full-tree", commit])
        out = []
        for entry in raw.split(b"\0"):
            meta, tab, path = entry.partition(b"\t")
            if not tab:
                continue
            mode, kind, sha, size = meta.decode("ascii", "replace").split()
            name = path.decode("utf-8", "surrogateescape")
            out.append(TreeEntry(name, mode, kind, sha, int(size) if size.isdigit() else -1))
        return out

    def read(self, sha: str, kind: str = "blob", limit: int | None = None) -> bytes | None:
        """The raw object ``sha`` of type ``kind``; None when it is of another type, missing, or
        larger than ``limit`` bytes (default :data:`MAX_BLOB`)."""
        limit = MAX_BLOB if limit is None else limit
        proc = self._batch_process()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(sha.encode("ascii") + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline().split()
        if len(header) != 3:
            return None  # "<sha> missing"
        size = int(header[2])
        body = proc.stdout.read(size + 1)[:size]
        if header[1].decode() != kind or size > limit:
            return None
        return body

    def _batch_process(self) -> subprocess.Popen[bytes]:
        if self._batch is None or self._batch.poll() is not None:
            self._batch = subprocess.Popen(
                self._argv(["--git-dir", self._git_dir, "cat-file", "--batch"]),
                cwd=self._home,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        return self._batch

    def close(self) -> None:
        if self._batch is not None:
            if self._batch.stdin is not None:
                self._batch.stdin.close()
            self._batch.wait(timeout=10)
            self._batch = None
        Path(self._home).rmdir()

    def __enter__(self) -> GitReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _author_date(line: bytes) -> str:
    """``author NAME <EMAIL> EPOCH +HHMM`` -> ISO 8601 in the author's offset."""
    parts = line.rsplit(b" ", 2)
    try:
        epoch, offset = int(parts[1]), parts[2].decode("ascii")
        sign = -1 if offset.startswith("-") else 1
        delta = dt.timedelta(hours=int(offset[1:3]), minutes=int(offset[3:5])) * sign
        return dt.datetime.fromtimestamp(epoch, dt.timezone(delta)).isoformat()
    except (IndexError, ValueError):
        return ""


def blob_text(reader: GitReader, blob: str) -> str | None:
    """The blob as UTF-8 text; None for the null id. :class:`Unreadable` names why a blob
    that exists cannot be read (too large, not UTF-8)."""
    if blob == NULL:
        return None
    data = reader.read(blob)
    if data is None:
        raise Unreadable("file too large or missing")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("file not UTF-8") from None


class Unreadable(Exception):
    """A file version that is not read; the message is the skip reason."""
