"""On-disk cache of sandbox outcomes, safe for many concurrent processes.

Layout: ``<root>/<key[:2]>/<key[2:]>.json``. Each entry is a signed file
(:class:`..signed_files.SignedFiles`, magic ``execretrieval-outcome2``): the header names the
content key and carries the HMAC of key and JSON body under the user's secret, which never
comes from the cache root (that directory may sit in a checkout, where a pull request can
commit entries it signed). An entry written by anything that cannot read the user's key (a
snippet that escaped its sandbox, say; the sandbox's Landlock layer already keeps snippets
from reading the user's cache directory or writing the cache) does not verify. Entries are
written atomically, so readers see either nothing or a complete entry; anything that fails the
header/tag/schema checks (torn copy, garbage, a forgery, an entry for another key) is deleted
and treated as a miss. Temporary files of a killed writer (``.*.tmp``) are never read.

CI shares a cache between runners that share no home directory: the secret may come instead
from ``EXECRETRIEVAL_CACHE_KEY`` or ``EXECRETRIEVAL_CACHE_KEY_FILE``. A well-formed entry whose
tag fails is counted (:attr:`OutcomeCache.foreign`), so a restored cache signed with another
key is named in one line (:func:`foreign_line`) instead of being re-executed in silence.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from ..bounded_json import parse_json
from ..signed_files import KEY_ENV, KEY_FILE_ENV, SignedFiles, discard, user_key_dir
from . import _grammar
from .sandbox import RUNNER_VERSION, SANDBOXES, Limits, Sandbox, SuiteResult

__all__ = ["KEY_ENV", "KEY_FILE_ENV", "OutcomeCache", "cached_run", "foreign_line", "user_key_dir"]

_MAGIC = b"execretrieval-outcome2"
_MAX_ENTRY = 4 * 1024 * 1024  # bytes; a suite's record is a few KiB


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


class OutcomeCache(SignedFiles):
    """Maps (code, setup, tests, limits, RUNNER_VERSION) to a :class:`SuiteResult`."""

    def __init__(self, root: Path, within: Path | None = None) -> None:
        """``root`` holds the entries; ``within`` is the directory the user named (``root`` or
        an ancestor of it): no folder below it may be a symlink when an entry is written."""
        super().__init__(root, within, _MAGIC)

    @staticmethod
    def key(
        code: str,
        setup: str,
        tests: Sequence[str],
        limits: Limits | None = None,
        language: str = Sandbox.language,
    ) -> str:
        """Content key. ``limits`` defaults to ``Limits()``: a timeout depends on them. Another
        language than Python adds its name and its runner's version; every key names what the
        child makes of a call (:data:`._grammar.CALL_KINDS_VERSION`)."""
        suite = json.dumps([setup, list(tests)]).encode("ascii")
        limits_token = json.dumps(asdict(limits or Limits()), sort_keys=True)
        parts = [_sha256(_encode(code)), _sha256(suite), RUNNER_VERSION, limits_token]
        parts.append(f"calls:{_grammar.CALL_KINDS_VERSION}")
        if language != Sandbox.language:
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
        language: str = Sandbox.language,
    ) -> SuiteResult | None:
        key = self.key(code, setup, tests, limits, language)
        path = self.path_for(key)
        body = self.read_body(path, key)
        try:
            return None if body is None else SuiteResult.from_json(parse_json(body, str(path)))
        except (ValueError, TypeError):  # JSON/UTF-8 decoding errors, wrong shapes
            discard(self.path_for(key), None)
            return None

    def put(
        self,
        code: str,
        setup: str,
        tests: Sequence[str],
        result: SuiteResult,
        limits: Limits | None = None,
        language: str = Sandbox.language,
    ) -> None:
        key = self.key(code, setup, tests, limits, language)
        body = json.dumps(result.to_json(), sort_keys=True).encode("ascii")
        self.write_body(self.path_for(key), key, body, fsync=True)

    def read_body(self, path: Path, key: str, limit: int = _MAX_ENTRY) -> bytes | None:
        return super().read_body(path, key, limit)


def foreign_line(count: int) -> str | None:
    """The one line naming the cached outcomes ignored for their signature, or None if none."""
    if not count:
        return None
    return (
        f"{count} cached outcome{'s' * (count != 1)} ignored: signed with another key (and "
        f"executed again); set {KEY_ENV} or {KEY_FILE_ENV} to the key that wrote them (a CI "
        "secret) to share a cache between machines"
    )


def _runner_version(language: str) -> str:
    try:
        return SANDBOXES[language].runner_version
    except KeyError:
        raise ValueError(f"no runner for language {language!r}") from None


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
    language = getattr(sandbox, "language", Sandbox.language)  # a duck-typed one: the default
    hit = cache.get(code, setup, tests, sandbox.limits, language) if cache is not None else None
    if hit is not None:
        return hit
    result = sandbox.run(code, setup, tests, group=group)
    if result.unusable:
        result = sandbox.run(code, setup, tests, group=group)
    if cache is not None and not result.unusable:
        cache.put(code, setup, tests, result, sandbox.limits, language)
    return result
