"""On-disk cache of sandbox outcomes, safe for many concurrent processes.

Layout: ``<root>/<key[:2]>/<key[2:]>.json``. Each entry is one header line
``execretrieval-outcome2 <key> <tag>`` followed by the JSON body, where ``tag`` is the
HMAC-SHA256 of key and body under the user's secret: 32 random bytes in
``$XDG_CACHE_HOME/pytest-execretrieval/outcome-hmac-key`` (``~/.cache/...`` without
``XDG_CACHE_HOME``; the directory mode 0700, the file 0600, created once with ``O_EXCL``). The
key never comes from the cache root: that directory may sit in a checkout (the default
``.execretrieval_cache`` does), where a pull request can commit a key file together with entries
it signed, so a key file found there (``<root>/.hmac-key``, where earlier versions kept it) is
ignored and named in a warning, once. An entry written by anything that cannot read the user's
key (a snippet that escaped its sandbox, say; the sandbox's Landlock layer already keeps snippets
from reading the user's cache directory or writing the cache) does not verify. Entries are
written atomically (:mod:`..safe_write`: a fresh temporary file, fsynced, ``os.replace``d into
place; a symlink in the cache is refused, never followed), so readers see either nothing or a
complete entry; anything that fails the header/tag/schema checks (torn copy, garbage, a forgery,
an entry for another key) is deleted and treated as a miss. Temporary files of a killed writer
(``.*.tmp``) are never read.

CI shares a cache between runners that share no home directory: the secret may come instead from
``EXECRETRIEVAL_CACHE_KEY`` (a CI secret's value) or from the file ``EXECRETRIEVAL_CACHE_KEY_FILE``
names (either hashed to the 32-byte key), never from the cache. A well-formed entry whose tag
fails is counted (:attr:`OutcomeCache.foreign`), so a restored cache signed with another key is
named in one line (:func:`foreign_line`) instead of being re-executed in silence.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import tempfile
import threading
import warnings
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from ..bounded_json import parse_json
from ..safe_write import write_atomic
from . import _grammar
from .sandbox import RUNNER_VERSION, Limits, Sandbox, SuiteResult

__all__ = ["OutcomeCache", "cached_run", "foreign_line"]

_MAGIC = b"execretrieval-outcome2"
_KEY_FILE = "outcome-hmac-key"  # in user_key_dir()
_MAX_ENTRY = 4 * 1024 * 1024  # bytes; a suite's record is a few KiB
_CHECKOUT_KEY = ".hmac-key"  # where a key in the cache root would be: never read
_named: set[Path] = set()  # checkout key files already warned about
KEY_ENV = "EXECRETRIEVAL_CACHE_KEY"  # the secret itself (a CI secret)
KEY_FILE_ENV = "EXECRETRIEVAL_CACHE_KEY_FILE"  # a file holding it


def user_key_dir() -> Path:
    """Where the outcome cache's HMAC key lives: ``$XDG_CACHE_HOME/pytest-execretrieval``
    (an absolute ``XDG_CACHE_HOME`` only, as the XDG spec says), else
    ``~/.cache/pytest-execretrieval``: the user's directory, outside any working tree."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "pytest-execretrieval"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


class OutcomeCache:
    """Maps (code, setup, tests, limits, RUNNER_VERSION) to a :class:`SuiteResult`."""

    def __init__(self, root: Path, within: Path | None = None) -> None:
        """``root`` holds the entries; ``within`` is the directory the user named (``root`` or
        an ancestor of it): no folder below it may be a symlink when an entry is written."""
        self.root = Path(root)
        self.within = Path(within) if within is not None else self.root
        self._secret: bytes | None = None
        self.foreign = 0  # well-formed entries signed with another key: ignored, re-executed
        self._lock = threading.Lock()

    def secret(self) -> bytes:
        """The HMAC key: from the environment (see the module docstring), else the user's key
        file, created on first use (safe against concurrent creators); a key file in the cache
        root is ignored and named, once."""
        if self._secret is None:
            _name_checkout_key(self.root / _CHECKOUT_KEY)
            self._secret = _secret_from_env() or _load_or_create_key(user_key_dir() / _KEY_FILE)
        return self._secret

    def tag(self, key: str, body: bytes) -> str:
        return hmac.new(self.secret(), key.encode() + b"\n" + body, hashlib.sha256).hexdigest()

    @staticmethod
    def key(
        code: str,
        setup: str,
        tests: Sequence[str],
        limits: Limits | None = None,
        language: str = "python",
    ) -> str:
        """Content key. ``limits`` defaults to ``Limits()``: a timeout depends on them. Another
        language than Python adds its name and its runner's version; every key names what the
        child makes of a call (:data:`._grammar.CALL_KINDS_VERSION`)."""
        suite = json.dumps([setup, list(tests)]).encode("ascii")
        limits_token = json.dumps(asdict(limits or Limits()), sort_keys=True)
        parts = [_sha256(_encode(code)), _sha256(suite), RUNNER_VERSION, limits_token]
        parts.append(f"calls:{_grammar.CALL_KINDS_VERSION}")
        if language != "python":
            parts.append(f"{language}:{_runner_version(language)}")
        return _sha256("\n".join(parts).encode("utf-8"))

    def path_for(self, key: str) -> Path:
        return self.root / key[:2] / f"{key[2:]}.json"

    def get(
        self,
        code: str,
        setup: str,
        tests: Sequence[str],
        limits: Limits | None = None,
        language: str = "python",
    ) -> SuiteResult | None:
        key = self.key(code, setup, tests, limits, language)
        path = self.path_for(key)
        body = self.read_body(path, key)
        try:
            return None if body is None else SuiteResult.from_json(parse_json(body, str(path)))
        except (ValueError, TypeError):  # JSON/UTF-8 decoding errors, wrong shapes
            _discard(self.path_for(key), None)
            return None

    def put(
        self,
        code: str,
        setup: str,
        tests: Sequence[str],
        result: SuiteResult,
        limits: Limits | None = None,
        language: str = "python",
    ) -> None:
        key = self.key(code, setup, tests, limits, language)
        body = json.dumps(result.to_json(), sort_keys=True).encode("ascii")
        self.write_body(self.path_for(key), key, body, fsync=True)

    def read_body(self, path: Path, key: str, limit: int = _MAX_ENTRY) -> bytes | None:
        """The body of the entry at ``path`` when its header names ``key`` and its tag verifies
        under the user's key, else ``None`` (and the entry, whatever it is, is deleted)."""
        try:  # a committed symlink or FIFO in the cache is never followed or read from
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError:  # ELOOP: a symlink; the link itself goes
            _discard(path, None)
            return None
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            regular = stat.S_ISREG(info.st_mode)
            data = fh.read(limit + 1) if regular else b""
        body = self._verified(data, key) if len(data) <= limit else None
        if body is None:
            _discard(path, info.st_ino)
        return body

    def write_body(self, path: Path, key: str, body: bytes, fsync: bool = False) -> None:
        """Write ``body`` at ``path`` as the signed entry of ``key`` (atomically, mode 0600)."""
        data = b" ".join([_MAGIC, key.encode(), self.tag(key, body).encode()]) + b"\n" + body
        write_atomic(path, data, fsync=fsync, root=self.within, mode=0o600)

    def _verified(self, data: bytes, key: str) -> bytes | None:
        header, sep, body = data.partition(b"\n")
        fields = header.split(b" ")
        if not sep or len(fields) != 3 or fields[0] != _MAGIC or fields[1] != key.encode():
            return None
        if not hmac.compare_digest(fields[2], self.tag(key, body).encode()):
            with self._lock:
                self.foreign += 1
            return None
        return body


def foreign_line(count: int) -> str | None:
    """The one line naming the cached outcomes ignored for their signature, or None if none."""
    if not count:
        return None
    return (
        f"{count} cached outcome{'s' * (count != 1)} ignored: signed with another key (and "
        f"executed again); set {KEY_ENV} or {KEY_FILE_ENV} to the key that wrote them (a CI "
        "secret) to share a cache between machines"
    )


def _secret_from_env() -> bytes | None:
    """The key ``EXECRETRIEVAL_CACHE_KEY`` or the file ``EXECRETRIEVAL_CACHE_KEY_FILE`` gives
    (hashed: any secret string will do), or None when neither is set."""
    value = os.environ.get(KEY_ENV, "")
    if value:
        return hashlib.sha256(_encode(value)).digest()
    name = os.environ.get(KEY_FILE_ENV, "")
    if not name:
        return None
    secret = Path(name).read_bytes()
    if not secret.strip():
        raise ValueError(f"{KEY_FILE_ENV}={name} is empty: it must hold the cache's secret")
    return hashlib.sha256(secret).digest()


def _runner_version(language: str) -> str:
    if language == "javascript":
        from .node import NODE_RUNNER_VERSION

        return NODE_RUNNER_VERSION
    raise ValueError(f"no runner for language {language!r}")


def _name_checkout_key(path: Path) -> None:
    """Warn, once per file, that a key file in the cache root is ignored."""
    if path in _named or not os.path.lexists(path):
        return
    _named.add(path)
    warnings.warn(
        f"ignoring {path}: the outcome cache's key is never read from the cache directory (it "
        f"may be committed to the checkout); the key lives in {user_key_dir()}, and entries "
        "signed with another key are discarded",
        UserWarning,
        stacklevel=3,
    )


def _load_or_create_key(path: Path) -> bytes:
    """Read the 32-byte key at ``path``, creating it atomically (write, then link) if absent;
    its directory is made mode 0700 and must not be a symlink or writable by others."""
    for _ in range(3):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as fh:
                secret = fh.read(33)
            if len(secret) == 32:
                return secret
            raise ValueError(
                f"{path} is not a 32-byte key; delete it (the cached outcomes "
                "signed with it become misses)"
            )
        except FileNotFoundError:
            pass
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(path.parent)
        if stat.S_ISLNK(info.st_mode) or info.st_mode & 0o022:
            raise OSError(
                f"{path.parent} is a symlink or writable by others: the outcome cache "
                "key cannot be kept there; fix its permissions"
            )
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".key.", suffix=".tmp")
        try:
            os.write(fd, os.urandom(32))
            os.fsync(fd)
            os.close(fd)
            os.link(tmp, path)  # fails if another process made the key first: then read that
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    raise OSError(f"could not create or read the outcome cache key {path}")


def _discard(path: Path, inode: int | None) -> None:
    """Delete a bad entry unless a writer has meanwhile replaced it with a new file (``None``:
    the entry is not a file, whatever it is now)."""
    try:
        if inode is None or os.lstat(path).st_ino == inode:
            os.unlink(path)
    except OSError:  # gone already, or a directory: a miss either way
        pass


def cached_run(
    cache: OutcomeCache | None,
    sandbox: Sandbox,
    code: str,
    setup: str,
    tests: Sequence[str],
    group: str | None = None,
) -> SuiteResult:
    """``sandbox.run`` behind ``cache`` (keyed with the sandbox's limits and language); None
    disables it. ``group``: the item the code belongs to (:meth:`Sandbox.run`).

    An unusable result (a lost sandbox, a broken protocol: :attr:`SuiteResult.unusable`) is
    retried once; one that recurs is returned, unusable, and never cached (it says nothing
    about the snippet: the next run tries again)."""
    tests = tuple(tests)
    language = getattr(sandbox, "language", "python")  # a duck-typed sandbox runs Python
    hit = cache.get(code, setup, tests, sandbox.limits, language) if cache is not None else None
    if hit is not None:
        return hit
    result = sandbox.run(code, setup, tests, group=group)
    if result.unusable:
        result = sandbox.run(code, setup, tests, group=group)
    if cache is not None and not result.unusable:
        cache.put(code, setup, tests, result, sandbox.limits, language)
    return result
