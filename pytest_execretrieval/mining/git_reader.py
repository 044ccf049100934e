"""Reading an untrusted repository's history with git, running nothing the repository names.

A repository's ``.git/config`` and ``.gitattributes`` can make git run programs: hooks, an
fsmonitor, a pager, an external diff, textconv and clean/smudge filters, a gpg program for
``log.showSignature``, credential helpers, and (through a partial clone's lazy fetch of a
missing object) a transport with its ``remote.<name>.uploadpack`` command. Its object store can
borrow objects from another repository on the host. This reader is git itself (its pack and
object formats are not ours to reimplement, and a pure-Python reader would be a dependency for
one command), restricted in layers, each closing its own attacks:

* only plumbing that reads objects: ``rev-list``, ``diff-tree --raw`` (blob ids, never a
  content diff: no external diff, no textconv), ``ls-tree`` and ``cat-file --batch-check`` /
  ``--batch`` (raw objects, no filters); no porcelain, no work tree, no index (so no fsmonitor,
  no checkout filters, no hooks);
* every configuration key that names a program, overridden on the command line (``-c`` wins
  over the repository's config, :data:`OVERRIDES`); the system and global configs not read
  (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``), an empty ``HOME``, no terminal
  prompt, replace refs off;
* no transport at all, so no fetch: a partial clone's lazy fetch of a missing object (which
  ``cat-file`` and ``ls-tree -l`` start, and which would run the remote's ``uploadpack`` through
  a shell) fails before it connects, and the object reads as missing. ``GIT_ALLOW_PROTOCOL``
  is set empty (an allow-list of no protocol: it overrides every ``protocol.*.allow`` of any
  config, and a remote helper is refused by the same check), ``GIT_NO_LAZY_FETCH=1`` (git 2.44
  and later skip the fetch outright), ``GIT_PROTOCOL_FROM_USER=0`` and ``protocol.*.allow=never``
  as further layers. A partial clone's ``extensions.partialClone`` cannot be overridden with
  ``-c`` (it is a repository-format key) and the remote may have any name, hence the
  environment rather than per-remote keys;
* a repository whose object store has alternates (``objects/info/alternates``: objects
  borrowed from another repository, which could pull files of any repository on the host into
  mined output) is refused with a :class:`GitError` that names the file: setting
  ``GIT_ALTERNATE_OBJECT_DIRECTORIES`` only adds alternates, it does not remove the file's
  (``http-alternates`` only serves a dumb-HTTP fetch, which the transport layer refuses);
* what comes back is bounded in size and time: an object's type and size are asked first
  (``--batch-check``, which never inflates the body) and an object over the limit
  (:data:`MAX_BLOB`) is never streamed; every batch of reads from a ``cat-file`` pipe, like
  every other call, has a deadline (:data:`TIMEOUT_S`), past which git and its process group
  (a fetch or a shell it started) are killed and a :class:`GitError` names the command; text
  that is not UTF-8 is reported as such; an author date git can store but :mod:`datetime`
  cannot hold reads as unknown (an empty date), like any malformed one.

Content diffs are computed in Python (:mod:`.history`), from the blobs.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_BLOB = 1 << 20  # bytes of one file version read; larger ones are skipped and counted
MAX_COMMIT = 1 << 20  # bytes of one commit object (its message included)
TIMEOUT_S = 120.0  # one git call; one batch of objects read from a cat-file pipe
MAX_NAME = 100  # characters of one object name asked of cat-file
BATCH = 32  # object names asked at once: 3,300 bytes at most, within any pipe's buffer
MAX_ANSWER = 512  # bytes of one cat-file answer line ("<sha> <type> <size>")

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
    # A repository's protocol.<name>.allow beats protocol.allow; GIT_ALLOW_PROTOCOL (set
    # empty in the environment) beats them all, these are a further layer.
    "protocol.file.allow=never",
    "protocol.ext.allow=never",
    "protocol.ssh.allow=never",
    "protocol.git.allow=never",
    "protocol.http.allow=never",
    "protocol.https.allow=never",
)


class GitError(Exception):
    """git refused or failed; the message says which command and why."""


@dataclass(frozen=True)
class Commit:
    sha: str
    parents: tuple[str, ...]
    author_date: str  # ISO 8601 with the author's offset; "" when unreadable or out of range
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
    size: int  # bytes; -1 for a submodule (or an object git cannot size)


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
            # No transport, hence no (lazy) fetch: an empty allow-list of protocols.
            "GIT_ALLOW_PROTOCOL": "",
            "GIT_PROTOCOL_FROM_USER": "0",
            "GIT_NO_LAZY_FETCH": "1",
            "LC_ALL": "C",
        }
        self._pipes: dict[str, _Pipe] = {}
        try:
            self._git_dir = self._locate()
        except BaseException:
            shutil.rmtree(self._home, ignore_errors=True)
            raise

    def _locate(self) -> str:
        """The repository's git directory, once its object store is known to be its own."""
        out = self._run(
            ["rev-parse", "--absolute-git-dir", "--git-path", "objects/info/alternates"],
            cwd=self.repo,
        )
        lines = os.fsdecode(out).splitlines()
        if len(lines) != 2:
            raise GitError(f"git rev-parse: no git directory found in {self.repo}")
        _refuse_alternates(self.repo / lines[1])  # relative to the repository, or absolute
        return lines[0]

    def _argv(self, args: Sequence[str]) -> list[str]:
        config = [part for pair in OVERRIDES for part in ("-c", pair)]
        return [self.git, "--no-pager", *config, *args]

    def _run(self, args: Sequence[str], cwd: Path | None = None) -> bytes:
        where = ["--git-dir", self._git_dir] if cwd is None else []
        try:
            proc = subprocess.Popen(
                self._argv([*where, *args]),
                cwd=cwd or self._home,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                process_group=0,  # its own process group, killed whole on a timeout (not
                # start_new_session: a session costs milliseconds where autogroups are on)
            )
        except OSError as exc:
            raise GitError(f"git {args[0]}: {exc}") from None
        try:
            out, err = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise GitError(f"git {args[0]}: no answer in {TIMEOUT_S:g} s in {self.repo}") from None
        except BaseException:  # an interrupt: git goes too
            _kill(proc)
            raise
        if proc.returncode:
            said = err.decode("utf-8", "replace").strip()[:300]
            raise GitError(f"git {args[0]} failed in {self.repo}: {said}")
        return out

    def commits(self, since: str | None = None) -> list[Commit]:
        """Every commit reachable from HEAD (not from ``since``), oldest first."""
        spec = [f"{since}..HEAD"] if since else ["HEAD"]
        listing = self._run(["rev-list", "--reverse", "--topo-order", "--parents", *spec])
        ids = [line.split() for line in listing.decode("ascii", "replace").splitlines()]
        raws = self.read_many([sha for sha, *_ in ids], "commit", MAX_COMMIT)
        return [_commit(sha, tuple(parents), raw) for (sha, *parents), raw in zip(ids, raws)]

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

    def remote_url(self) -> str:
        """The public address of the remote ``origin`` its config names (no include read):
        :func:`public_url`; "" for none."""
        try:
            out = self._run(["config", "--no-includes", "--get", "remote.origin.url"])
        except GitError:  # no such key: git config exits 1
            return ""
        return public_url(out.decode("utf-8", "replace"))

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
        return self.read_many([sha], kind, limit)[0]

    def read_many(
        self, shas: Sequence[str], kind: str = "blob", limit: int | None = None
    ) -> list[bytes | None]:
        """:meth:`read` of each object, asked :data:`BATCH` at a time. Their types and sizes
        are asked first (``--batch-check``), so an object over the limit is never streamed
        (nor inflated) by git; the answers to each batch are due by one deadline."""
        limit = MAX_BLOB if limit is None else limit
        for sha in shas:
            if not sha or not sha.isprintable() or len(sha) > MAX_NAME:
                raise GitError(f"not an object name: {sha[:MAX_NAME]!r}")
        out: list[bytes | None] = []
        for start in range(0, len(shas), BATCH):
            names = shas[start : start + BATCH]
            deadline = time.monotonic() + TIMEOUT_S
            infos = self._pipe("--batch-check").ask(names, deadline)
            wanted = {
                i: info
                for i, info in enumerate(infos)
                if len(info) == 3  # not "<sha> missing" nor "<sha> ambiguous"
                and info[1] == kind.encode()
                and info[2].isdigit()
                and int(info[2]) <= limit
            }
            bodies: list[bytes | None] = [None] * len(names)
            if wanted:
                pipe = self._pipe("--batch")
                pipe.send([names[i] for i in wanted])
                for i, info in wanted.items():
                    if pipe.answer(deadline) != info:  # not the object just sized: not read on
                        self._pipes.pop("--batch").close(kill=True)
                        raise GitError(
                            f"git cat-file --batch in {self.repo}: {names[i]} changed under "
                            "the reader"
                        )
                    bodies[i] = pipe.body(int(info[2]), deadline)
            out += bodies
        return out

    def _pipe(self, mode: str) -> _Pipe:
        pipe = self._pipes.get(mode)
        if pipe is None or pipe.proc.poll() is not None:
            argv = self._argv(["--git-dir", self._git_dir, "cat-file", mode])
            what = f"cat-file {mode} in {self.repo}"
            pipe = self._pipes[mode] = _Pipe(argv, self.env, self._home, what)
        return pipe

    def close(self) -> None:
        while self._pipes:
            self._pipes.popitem()[1].close()
        shutil.rmtree(self._home, ignore_errors=True)

    def __enter__(self) -> GitReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Pipe:
    """One ``git cat-file`` process, asked a batch of object names at a time; every read of its
    answers has a deadline, past which the process (its group) is killed and a
    :class:`GitError` names the command. Its output is read only as far as it is asked for."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, what: str):
        self.what = what
        try:
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                bufsize=0,
                process_group=0,
            )
        except OSError as exc:
            raise GitError(f"git {what}: {exc}") from None
        assert self.proc.stdout is not None
        self._fd = self.proc.stdout.fileno()
        os.set_blocking(self._fd, False)
        self._ready = selectors.DefaultSelector()
        self._ready.register(self._fd, selectors.EVENT_READ)
        self._buffer = bytearray()

    def send(self, names: Sequence[str]) -> None:
        """Ask for ``names`` (at most :data:`BATCH` of them, so that the request fits in a pipe's
        buffer however slowly git reads it)."""
        assert self.proc.stdin is not None
        request = b"".join(name.encode("utf-8", "surrogateescape") + b"\n" for name in names)
        try:
            while request:
                request = request[self.proc.stdin.write(request) or 0 :]
        except OSError as exc:
            self.close(kill=True)
            raise GitError(f"git {self.what}: {exc}") from None

    def ask(self, names: Sequence[str], deadline: float) -> list[list[bytes]]:
        """The answer lines to ``names`` (see :meth:`answer`)."""
        self.send(names)
        return [self.answer(deadline) for _ in names]

    def answer(self, deadline: float) -> list[bytes]:
        """The next answer line, split: ``<sha> <type> <size>`` or ``<name> missing``."""
        while (end := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > MAX_ANSWER:
                self.close(kill=True)
                raise GitError(f"git {self.what}: an answer line over {MAX_ANSWER} bytes")
            self._fill(deadline, MAX_ANSWER)
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line.split()

    def body(self, size: int, deadline: float) -> bytes:
        """The ``size`` bytes of the object just announced (and the newline after them)."""
        while len(self._buffer) <= size:
            self._fill(deadline, size + 1 - len(self._buffer))
        data = bytes(self._buffer[:size])
        del self._buffer[: size + 1]
        return data

    def _fill(self, deadline: float, most: int) -> None:
        while True:
            try:
                chunk = os.read(self._fd, most)
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.close(kill=True)
                    raise GitError(f"git {self.what}: no answer in {TIMEOUT_S:g} s") from None
                self._ready.select(left)
                continue
            if not chunk:
                self.close()
                raise GitError(f"git {self.what}: ended before its answer")
            self._buffer += chunk
            return

    def close(self, kill: bool = False) -> None:
        """End the process: at the end of its input, or (``kill``, or when it does not end in
        a few seconds) killed with its process group."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        if not kill:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                kill = True
        if kill:
            _kill(self.proc)
        self._ready.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill ``proc`` and its process group (a fetch, a shell it started), and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass  # the group is gone already
    proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _refuse_alternates(path: Path) -> None:
    """Refuse an object store that borrows objects from another (``objects/info/alternates``
    names another repository's objects, which would be read as this one's)."""
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise GitError(f"{path}: {exc.strerror}") from None
    if stat.S_ISREG(info.st_mode):
        with path.open("rb") as file:
            lines = [line.strip() for line in file.read(1 << 16).splitlines()]
        if not any(line and not line.startswith(b"#") for line in lines):
            return  # empty, or comments only: git borrows nothing
    raise GitError(
        f"{path}: the repository's object store borrows objects from another repository "
        "(alternates); it is not read (clone it without --shared or --reference)"
    )


def _commit(sha: str, parents: tuple[str, ...], raw: bytes | None) -> Commit:
    if raw is None:
        raise GitError(f"commit {sha} is unreadable (missing, or over {MAX_COMMIT} bytes)")
    head, _, message = raw.partition(b"\n\n")
    date = ""
    for line in head.split(b"\n"):
        if line.startswith(b"author "):
            date = _author_date(line)
    subject = message.decode("utf-8", "replace").split("\n", 1)[0].strip()
    return Commit(sha, parents, date, subject[:300])


def _author_date(line: bytes) -> str:
    """``author NAME <EMAIL> EPOCH +HHMM`` -> ISO 8601 in the author's offset; "" for a date
    that does not parse or that :mod:`datetime` cannot hold (git stores 64-bit epochs)."""
    parts = line.rsplit(b" ", 2)
    try:
        epoch, offset = int(parts[1]), parts[2].decode("ascii")
        sign = -1 if offset.startswith("-") else 1
        delta = dt.timedelta(hours=int(offset[1:3]), minutes=int(offset[3:5])) * sign
        return dt.datetime.fromtimestamp(epoch, dt.timezone(delta)).isoformat()
    except (IndexError, ValueError, OverflowError, OSError):
        return ""


_SCP_LIKE = re.compile(r"(?:[\w.-]+@)?([\w-]+(?:\.[\w-]+)+):(?!//)([\w./~-]+)")


def public_url(url: str) -> str:
    """A git remote's URL as a public https address: host and path only (no user, password,
    port or query: a token in a remote URL is never written out), ``.git`` dropped; an
    ``scp``-like ``git@host:owner/repo`` as ``https://host/owner/repo``; "" for a local path or
    any other form."""
    url = url.strip()
    found = _SCP_LIKE.fullmatch(url)
    if found:
        host, path = found.group(1), "/" + found.group(2)
    else:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("https", "http", "git", "ssh") or not parts.hostname:
            return ""
        host, path = parts.hostname, parts.path
    path = path.rstrip("/").removesuffix(".git")
    if not re.fullmatch(r"(/[\w.~-]+)+", path) or ".." in path.split("/"):
        return ""
    return f"https://{host}{path}"


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
