"""Running many suites: the outcome cache in front of per-thread sandboxes.

Library code (build, verification, the benchmark) asks a :class:`SuiteRunner` for results; it
answers from the content-addressed cache or runs the suite in a sandbox, several at once with
``jobs > 1``. A thread's sandbox starts at its first cache miss, so a run answered entirely from
the cache starts no sandbox process; :attr:`SuiteRunner.executed` counts the suites that ran.
A caller that knows its next suite starts it ahead (:meth:`SuiteRunner.prefetch`), so that it
runs while the caller handles the last result; :meth:`SuiteRunner.imap` does so with ``jobs=1``.

A suite is in the item's language (``language``, default ``"python"``): each language has its
sandbox (:func:`sandbox_class`: the Python sandbox, the Node runner for ``"javascript"``), one
per thread and language, and the cache keys on the language.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .outcome_cache import OutcomeCache, cached_run
from .sandbox import SANDBOXES, Limits, Sandbox, SuiteResult

# (code, setup, tests), (code, setup, tests, language) or (code, setup, tests, language, group):
# group is the item the code belongs to (Sandbox.run), None where the caller does not say.
Suite = (
    tuple[str, str, Sequence[str]]
    | tuple[str, str, Sequence[str], str]
    | tuple[str, str, Sequence[str], str, str | None]
)


OWN_LANGUAGE = Sandbox.language  # the language of this layer's own sandbox


def sandbox_class(language: str) -> type[Sandbox]:
    """The sandbox that runs ``language``'s suites: this module's ``Sandbox`` for its own
    language (looked up when called: tests replace it), else the one the language registered
    (:func:`.sandbox.register_sandbox`)."""
    if language == OWN_LANGUAGE:
        return Sandbox
    try:
        return SANDBOXES[language]
    except KeyError:
        known = ", ".join([OWN_LANGUAGE, *sorted(SANDBOXES)])
        raise ValueError(f"no runner for language {language!r} (known: {known})") from None


def _group_key(suite: Suite) -> tuple[str, str] | None:
    """``(language, group)`` of a suite that names its group, else None."""
    if len(suite) < 5 or suite[4] is None:
        return None
    return (suite[3], suite[4])


def _groups(suites: Sequence[Suite]) -> dict[tuple[str, str], list[str]]:
    """The codes of each group whose language's sandbox builds a group together (it
    overrides :meth:`Sandbox.expect`), in order."""
    groups: dict[tuple[str, str], list[str]] = {}
    for suite in suites:
        key = _group_key(suite)
        if key is not None and sandbox_class(key[0]).expect is not Sandbox.expect:
            groups.setdefault(key, []).append(suite[0])
    return groups


def limits_key(limits: Limits) -> str:
    fields = json.dumps(dataclasses.asdict(limits), sort_keys=True).encode()
    return hashlib.sha256(fields).hexdigest()[:16]


class SuiteRunner:
    def __init__(
        self,
        limits: Limits = Limits(),
        cache_dir: Path | None = None,
        jobs: int = 1,
        isolation: str = "best",
    ):
        self.limits = limits
        self.isolation = isolation  # Sandbox(isolation=...): "best" or "strict"
        # Outcomes depend on the limits (a timeout at 1 s may pass at 5 s): one cache per limits.
        self.cache = (
            OutcomeCache(Path(cache_dir) / "outcomes" / limits_key(limits), within=Path(cache_dir))
            if cache_dir
            else None
        )
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self._local = threading.local()
        self._sandboxes: list[Sandbox] = []
        self._lock = threading.Lock()
        # One pool for the runner's life: each worker thread keeps its sandbox, so many small
        # run_many calls (one per item) reuse ``jobs`` fork servers instead of starting new ones.
        self._pool: ThreadPoolExecutor | None = None
        self.executed = 0  # suites run in a sandbox (cache misses), for progress and tests

    def _sandbox(self, language: str) -> Sandbox:
        sandboxes = getattr(self._local, "sandboxes", None)
        if sandboxes is None:
            sandboxes = self._local.sandboxes = {}
        sandbox = sandboxes.get(language)
        if sandbox is None:
            sandbox = sandboxes[language] = sandbox_class(language)(
                self.limits, isolation=self.isolation
            )
            with self._lock:
                self._sandboxes.append(sandbox)
        return sandbox

    def run(
        self,
        code: str,
        setup: str,
        tests: Sequence[str],
        language: str = Sandbox.language,
        group: str | None = None,
    ) -> SuiteResult:
        sandbox_class(language)  # an unknown language is a ValueError before the cache is asked
        tests = tuple(tests)
        if self.cache is not None:
            hit = self.cache.get(code, setup, tests, self.limits, language)
            if hit is not None:
                return hit
        result = cached_run(self.cache, self._sandbox(language), code, setup, tests, group)
        with self._lock:
            self.executed += 1
        return result

    def prefetch(
        self,
        code: str,
        setup: str,
        tests: Sequence[str],
        language: str = Sandbox.language,
        group: str | None = None,
    ) -> SuiteResult | None:
        """Start the suite that this thread's next :meth:`run` will ask for, so that it runs
        while the caller does its own work (:meth:`Sandbox.submit`). A cached suite is not
        started: its result is returned, for the caller to use instead of asking ``run``. Best
        effort: a sandbox that cannot start is left for ``run`` to report."""
        tests = tuple(tests)
        if self.cache is not None:
            hit = self.cache.get(code, setup, tests, self.limits, language)
            if hit is not None:
                return hit
        try:
            self._sandbox(language).submit(code, setup, tests, group)
        except Exception:  # noqa: BLE001, S110 - run() meets the same problem and reports it
            pass
        return None

    def run_many(self, suites: Sequence[Suite]) -> list[SuiteResult]:
        """Results in the order of ``suites``; uncached ones run ``jobs`` at a time."""
        return list(self.imap(suites))

    def imap(self, suites: Sequence[Suite]) -> Iterator[SuiteResult]:
        """:meth:`run_many` as an iterator: each result as soon as it and those before it are
        done (for progress lines). The suites of one group (an item) go to one thread, whose
        sandbox is told their codes first (:meth:`Sandbox.expect`: the Go runner builds them
        into one binary)."""
        groups = _groups(suites)
        if self.jobs == 1 or len(suites) < 2:
            ahead: SuiteResult | None = None  # the next suite's cached result
            for i, suite in enumerate(suites):
                self._announce(suite, groups)
                result = ahead if ahead is not None else self.run(*suite)
                # the next suite runs while the caller takes this result
                if i + 1 < len(suites):
                    self._announce(suites[i + 1], groups)
                    ahead = self.prefetch(*suites[i + 1])
                else:
                    ahead = None
                yield result
            return
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.jobs)
            pool = self._pool
        if not groups:
            yield from pool.map(lambda suite: self.run(*suite), suites)
            return
        # One task per group (and per ungrouped suite), in the order of their first suites.
        tasks: dict[object, list[int]] = {}
        for i, suite in enumerate(suites):
            tasks.setdefault(_group_key(suite) or i, []).append(i)

        def run_task(indices: list[int]) -> list[SuiteResult]:
            found = []
            for i in indices:
                self._announce(suites[i], groups)
                found.append(self.run(*suites[i]))
            return found

        results: list[SuiteResult | None] = [None] * len(suites)
        ready = 0
        for indices, found in zip(tasks.values(), pool.map(run_task, tasks.values()), strict=True):
            for i, result in zip(indices, found, strict=True):
                results[i] = result
            while ready < len(suites) and results[ready] is not None:
                yield results[ready]  # type: ignore[misc]  # not None: checked
                ready += 1

    def _announce(self, suite: Suite, groups: dict[tuple[str, str], list[str]]) -> None:
        key = _group_key(suite)
        if key is not None and key in groups:
            self.expect(suite, groups[key])

    def expect(self, suite: Suite, codes: Sequence[str]) -> None:
        """Tell this thread's sandbox the codes of ``suite``'s group (an item), when its
        language's sandbox builds a group's codes together (:meth:`Sandbox.expect`); a caller
        that runs an item's suites one by one (the verification's items) says so first."""
        key = _group_key(suite)
        if key is not None and sandbox_class(key[0]).expect is not Sandbox.expect:
            self._sandbox(key[0]).expect(key[1], codes)

    @property
    def foreign(self) -> int:
        """Cached outcomes ignored because another key signed them (then executed)."""
        return self.cache.foreign if self.cache is not None else 0

    def value_types(self) -> dict[str, int]:
        """A census of the value types the snippets' calls returned in this runner's sandboxes."""
        counts: dict[str, int] = {}
        with self._lock:
            for sandbox in self._sandboxes:
                for name, n in sandbox.value_types.items():
                    counts[name] = counts.get(name, 0) + n
        return counts

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        with self._lock:
            for sandbox in self._sandboxes:
                sandbox.close()
            self._sandboxes.clear()
        self._local = threading.local()

    def __enter__(self) -> SuiteRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
