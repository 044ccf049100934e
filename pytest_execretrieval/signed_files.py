"""Files the tool reads back, signed with the user's key: what a checkout cannot forge.

Every cache the tool reads (sandbox outcomes, validated items, embedding vectors, built
indexes) may sit in a checkout: the default ``.execretrieval_cache`` does, and a pull request
can commit files there. A cached entry says "this is what running, validating or encoding
that input gave", so an entry anyone can write would let a pull request choose a verdict, a
ranking or a gate's outcome. Each entry is therefore one header line
``<magic> <key> <tag>`` followed by its body, where ``tag`` is the HMAC-SHA256 of key and body
under the user's secret, and a reader uses the body only when the tag verifies.

The secret: 32 random bytes in ``$XDG_CACHE_HOME/pytest-execretrieval/outcome-hmac-key``
(``~/.cache/...`` without ``XDG_CACHE_HOME``; the directory mode 0700, the file 0600, created
once with ``O_EXCL``); or, for CI runners that share a cache but no home directory, the value
of ``EXECRETRIEVAL_CACHE_KEY`` (a CI secret) or the file ``EXECRETRIEVAL_CACHE_KEY_FILE`` names
(a regular file of at most :data:`MAX_KEY_FILE` bytes, either hashed to the key). The key never
comes from the cache root: a key file found there (``<root>/.hmac-key``, where earlier
versions kept it) is ignored and named in a warning, once.

Entries are written atomically (:mod:`.safe_write`: a symlink in the cache is refused, never
followed); an entry that fails the header, size or tag check (torn copy, garbage, a forgery,
another key's, another key's entry copied under this name, a symlink, a FIFO) is deleted and
read as a miss. A well-formed entry whose tag fails is counted (:attr:`SignedFiles.foreign`),
so a restored cache signed with another key can be named instead of recomputed in silence.

Imports nothing of the package but :mod:`.safe_write`: any layer may use it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import tempfile
import threading
import warnings
from pathlib import Path

from .safe_write import write_atomic

__all__ = [
    "KEY_ENV",
    "KEY_FILE_ENV",
    "SignedFiles",
    "check_key_source",
    "discard",
    "read_regular",
    "user_key_dir",
]

KEY_ENV = "EXECRETRIEVAL_CACHE_KEY"  # the secret itself (a CI secret)
KEY_FILE_ENV = "EXECRETRIEVAL_CACHE_KEY_FILE"  # a file holding it
MAX_KEY_FILE = 64 * 1024  # bytes of EXECRETRIEVAL_CACHE_KEY_FILE read; a longer file is refused
_KEY_FILE = "outcome-hmac-key"  # in user_key_dir()
_CHECKOUT_KEY = ".hmac-key"  # where a key in the cache root would be: never read
_named: set[Path] = set()  # checkout key files already warned about


def user_key_dir() -> Path:
    """Where the user's key lives: ``$XDG_CACHE_HOME/pytest-execretrieval`` (an absolute
    ``XDG_CACHE_HOME`` only, as the XDG spec says), else ``~/.cache/pytest-execretrieval``:
    the user's directory, outside any working tree."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "pytest-execretrieval"


class SignedFiles:
    """Signed entries under one cache directory, each file ``<magic> <key> <tag>\\n<body>``."""

    def __init__(self, root: Path, within: Path | None = None, magic: bytes = b"") -> None:
        """``root`` holds the entries; ``within`` is the directory the user named (``root`` or
        an ancestor of it): no folder below it may be a symlink when an entry is written;
        ``magic`` names the kind of entry (one kind's entry is never read as another's)."""
        self.root = Path(root)
        self.within = Path(within) if within is not None else self.root
        self.magic = magic
        self._secret: bytes | None = None
        self.foreign = 0  # well-formed entries signed with another key: ignored, recomputed
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

    def read_body(self, path: Path, key: str, limit: int) -> bytes | None:
        """The body of the entry at ``path`` when its header names ``key`` and its tag verifies
        under the user's key, else ``None`` (and the entry, whatever it is, is deleted)."""
        try:
            data, inode = read_regular(path, limit + len(self.magic) + len(key) + 68)
        except FileNotFoundError:
            return None
        except OSError:  # ELOOP (a symlink: the link itself goes), too large, not a file
            discard(path, None)
            return None
        body = self._verified(data, key) if data is not None else None
        if body is None:
            discard(path, inode)
        return body

    def write_body(self, path: Path, key: str, body: bytes, fsync: bool = False) -> None:
        """Write ``body`` at ``path`` as the signed entry of ``key`` (atomically, mode 0600);
        ``key`` is one word of the header line (no space, no line break)."""
        if not key or any(c.isspace() for c in key):
            raise ValueError(f"a signed entry's key is one word, not {key!r}")
        data = b" ".join([self.magic, key.encode(), self.tag(key, body).encode()]) + b"\n" + body
        write_atomic(path, data, fsync=fsync, root=self.within, mode=0o600)

    def _verified(self, data: bytes, key: str) -> bytes | None:
        header, sep, body = data.partition(b"\n")
        fields = header.split(b" ")
        if not sep or len(fields) != 3 or fields[0] != self.magic or fields[1] != key.encode():
            return None
        if not hmac.compare_digest(fields[2], self.tag(key, body).encode()):
            with self._lock:
                self.foreign += 1
            return None
        return body


def check_key_source() -> None:
    """Raise ``ValueError`` naming the problem when the environment names a key that cannot be
    used (``EXECRETRIEVAL_CACHE_KEY_FILE`` a FIFO, a device, empty, too long): called before any
    work, so a run does not fail at its first cached entry."""
    _secret_from_env()


def read_regular(path: Path, limit: int) -> tuple[bytes | None, int]:
    """The bytes of the regular file at ``path`` (``None`` when it holds more than ``limit``)
    and its inode. A symlink raises (``ELOOP``); a FIFO, device or directory raises
    ``OSError`` without blocking; a file is never read past ``limit + 1`` bytes."""
    data, info = _read_open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | _OPEN_FLAGS), limit)
    if data is None:
        raise OSError(f"{path} is not a regular file")
    return (data if len(data) <= limit else None), info.st_ino


_OPEN_FLAGS = os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO opens without waiting for a writer


def _read_open(fd: int, limit: int) -> tuple[bytes | None, os.stat_result]:
    """Up to ``limit + 1`` bytes of the open file ``fd`` (closed here), ``None`` when it is not a
    regular file, and its status."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, info
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), info
    finally:
        os.close(fd)


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _secret_from_env() -> bytes | None:
    """The key ``EXECRETRIEVAL_CACHE_KEY`` or the file ``EXECRETRIEVAL_CACHE_KEY_FILE`` gives
    (hashed: any secret string will do), or None when neither is set. The file must be a
    regular file of at most :data:`MAX_KEY_FILE` bytes (a FIFO would block, ``/dev/zero``
    never end): anything else is a ``ValueError`` naming it."""
    value = os.environ.get(KEY_ENV, "")
    if value:
        return hashlib.sha256(_encode(value)).digest()
    name = os.environ.get(KEY_FILE_ENV, "")
    if not name:
        return None
    try:
        secret, _ = _read_open(os.open(name, os.O_RDONLY | _OPEN_FLAGS), MAX_KEY_FILE)
    except OSError as exc:
        raise ValueError(f"{KEY_FILE_ENV}={name} cannot be read: {exc.strerror}") from None
    if secret is None:
        raise ValueError(f"{KEY_FILE_ENV}={name} is not a regular file: it must hold the key")
    if len(secret) > MAX_KEY_FILE:
        raise ValueError(f"{KEY_FILE_ENV}={name} is over {MAX_KEY_FILE} bytes: not a key file")
    if not secret.strip():
        raise ValueError(f"{KEY_FILE_ENV}={name} is empty: it must hold the cache's secret")
    return hashlib.sha256(secret).digest()


def _name_checkout_key(path: Path) -> None:
    """Warn, once per file, that a key file in the cache root is ignored."""
    if path in _named or not os.path.lexists(path):
        return
    _named.add(path)
    warnings.warn(
        f"ignoring {path}: the cache's key is never read from the cache directory (it "
        f"may be committed to the checkout); the key lives in {user_key_dir()}, and entries "
        "signed with another key are discarded",
        UserWarning,
        stacklevel=4,
    )


def _load_or_create_key(path: Path) -> bytes:
    """Read the 32-byte key at ``path``, creating it atomically (write, then link) if absent;
    its directory is made mode 0700 and must not be a symlink or writable by others."""
    for _ in range(3):
        try:
            secret, _ = read_regular(path, 32)
            if secret is not None and len(secret) == 32:
                return secret
            raise ValueError(
                f"{path} is not a 32-byte key; delete it (the cached entries "
                "signed with it become misses)"
            )
        except FileNotFoundError:
            pass
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(path.parent)
        if stat.S_ISLNK(info.st_mode) or info.st_mode & 0o022:
            raise OSError(
                f"{path.parent} is a symlink or writable by others: the cache's "
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
    raise OSError(f"could not create or read the cache's key {path}")


def discard(path: Path, inode: int | None) -> None:
    """Delete a bad entry unless a writer has meanwhile replaced it with a new file (``None``:
    the entry is not a file, whatever it is now)."""
    try:
        if inode is None or os.lstat(path).st_ino == inode:
            os.unlink(path)
    except OSError:  # gone already, or a directory: a miss either way
        pass
