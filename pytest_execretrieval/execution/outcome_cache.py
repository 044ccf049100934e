"""On-disk cache of sandbox outcomes, safe for many concurrent processes.

Layout: ``<root>/<key[:2]>/<key[2:]>.json``. Each entry is one header line
``execretrieval-outcome2 <key> <tag>`` followed by the JSON body, where ``tag`` is the
HMAC-SHA256 of key and body under a secret made once per cache root (``<root>/.hmac-key``, mode
0600, 32 random bytes): an entry written by anything that cannot read that file (a snippet that
escaped its sandbox, say; the sandbox's Landlock layer already keeps snippets from reading or
writing the cache) does not verify. Entries are written to a temporary file in the same
directory, fsynced and ``os.replace``d into place, so readers see either nothing or a complete
entry; anything that fails the header/tag/schema checks (torn copy, garbage, a forgery, an entry
for another key) is deleted and treated as a miss. Temporary files of a killed writer
(``.*.tmp``) are never read.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from .sandbox import RUNNER_VERSION, Limits, Sandbox, SuiteResult

__all__ = ["OutcomeCache", "cached_run"]

_MAGIC = b"execretrieval-outcome2"
_KEY_FILE = ".hmac-key"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


class OutcomeCache:
    """Maps (code, setup, tests, limits, RUNNER_VERSION) to a :class:`SuiteResult`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._secret: bytes | None = None

    def secret(self) -> bytes:
        """The cache root's HMAC key, created on first use (safe against concurrent creators)."""
        if self._secret is None:
            self._secret = _load_or_create_key(self.root / _KEY_FILE)
        return self._secret

    def tag(self, key: str, body: bytes) -> str:
        return hmac.new(self.secret(), key.encode() + b"\n" + body, hashlib.sha256).hexdigest()

    @staticmethod
    def key(code: str, setup: str, tests: Sequence[str], limits: Limits | None = None) -> str:
        """Content key. ``limits`` defaults to ``Limits()``: a timeout depends on them."""
        suite = json.dumps([setup, list(tests)]).encode("ascii")
        limits_token = json.dumps(asdict(limits or Limits()), sort_keys=True)
        parts = [_sha256(_encode(code)), _sha256(suite), RUNNER_VERSION, limits_token]
        return _sha256("\n".join(parts).encode("utf-8"))

    def path_for(self, key: str) -> Path:
        return self.root / key[:2] / f"{key[2:]}.json"

    def get(
        self, code: str, setup: str, tests: Sequence[str], limits: Limits | None = None
    ) -> SuiteResult | None:
        key = self.key(code, setup, tests, limits)
        path = self.path_for(key)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
                inode = os.fstat(fh.fileno()).st_ino
        except FileNotFoundError:
            return None
        result = self._decode(data, key)
        if result is None:
            _discard(path, inode)
        return result

    def put(
        self,
        code: str,
        setup: str,
        tests: Sequence[str],
        result: SuiteResult,
        limits: Limits | None = None,
    ) -> None:
        key = self.key(code, setup, tests, limits)
        path = self.path_for(key)
        body = json.dumps(result.to_json(), sort_keys=True).encode("ascii")
        data = b" ".join([_MAGIC, key.encode(), self.tag(key, body).encode()]) + b"\n" + body
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise

    def _decode(self, data: bytes, key: str) -> SuiteResult | None:
        header, sep, body = data.partition(b"\n")
        fields = header.split(b" ")
        if not sep or len(fields) != 3 or fields[0] != _MAGIC or fields[1] != key.encode():
            return None
        if not hmac.compare_digest(fields[2], self.tag(key, body).encode()):
            return None
        try:
            return SuiteResult.from_json(json.loads(body))
        except (ValueError, TypeError):  # JSON/UTF-8 decoding errors, wrong shapes
            return None


def _load_or_create_key(path: Path) -> bytes:
    """Read the 32-byte key at ``path``, creating it atomically (write, then link) if absent."""
    for _ in range(3):
        try:
            with open(path, "rb") as fh:
                secret = fh.read()
            if len(secret) == 32:
                return secret
            raise ValueError(f"{path} is not a 32-byte key; delete it (and the cache beside it)")
        except FileNotFoundError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
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


def _discard(path: Path, inode: int) -> None:
    """Delete a bad entry unless a writer has meanwhile replaced it with a new file."""
    try:
        if os.stat(path).st_ino == inode:
            os.unlink(path)
    except FileNotFoundError:
        pass


def cached_run(
    cache: OutcomeCache | None,
    sandbox: Sandbox,
    code: str,
    setup: str,
    tests: Sequence[str],
) -> SuiteResult:
    """``sandbox.run`` behind ``cache`` (keyed with the sandbox's limits); None disables it.

    An unusable result (a lost sandbox, a broken protocol: :attr:`SuiteResult.unusable`) is
    retried once; one that recurs is returned, unusable, and never cached (it says nothing
    about the snippet: the next run tries again)."""
    tests = tuple(tests)
    hit = cache.get(code, setup, tests, sandbox.limits) if cache is not None else None
    if hit is not None:
        return hit
    result = sandbox.run(code, setup, tests)
    if result.unusable:
        result = sandbox.run(code, setup, tests)
    if cache is not None and not result.unusable:
        cache.put(code, setup, tests, result, sandbox.limits)
    return result
