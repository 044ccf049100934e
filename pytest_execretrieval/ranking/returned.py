"""What a failing query's rank-1 snippet returned in each failing test, for its failure text.

The corpus records outcomes only, so the rank-1 snippet's suite is run once more, in the
sandbox, when a failing query's text is built (:func:`rank1_returned`); a value is kept only
where that run's outcome is the recorded one. The query item runs it with the session's runner
(its limits, isolation mode and outcome cache: a cache entry written before values were
recorded gives no values). ``reporting/failures.py`` writes the text and runs nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from ..corpus.items import BenchmarkItem
from ..execution.runner import SuiteRunner
from ..execution.sandbox import Limits, SandboxError, SuiteResult
from ..records import QueryResult

__all__ = ["RERUN_LIMITS", "SuiteRun", "rank1_returned"]

# (code, setup, tests, language) -> result
SuiteRun = Callable[[str, str, Sequence[str], str], SuiteResult]
# The re-run for the values: a snippet that timed out before times out again, sooner; a test
# whose outcome differs under these limits shows no value.
RERUN_LIMITS = Limits(timeout_s=2.0)
_RUNNERS: dict[int, SuiteRunner] = {}  # the re-runs: one runner per process


def _rerun(code: str, setup: str, tests: Sequence[str], language: str) -> SuiteResult:
    runner = _RUNNERS.setdefault(os.getpid(), SuiteRunner(RERUN_LIMITS))
    return runner.run(code, setup, tests, language)


def rank1_returned(
    item: BenchmarkItem, r: QueryResult, code: Mapping[str, str], run: SuiteRun | None = None
) -> tuple[str, ...]:
    """What the rank-1 snippet returned (or raised) in each test, ``""`` where unknown.

    Runs the rank-1 snippet's suite once with ``run`` (default: a per-process sandbox under
    :data:`RERUN_LIMITS`); an entry is kept only where the run's outcome equals the recorded
    ``r.rank1_outcomes`` entry. ``()``, running nothing, where the failure text shows no
    values: the query passed, its rank 1 is a tie with a passing snippet, or the rank-1
    snippet does not define the entry point; ``()`` also when the snippet's code is unknown,
    the sandbox cannot start, or the result carries no values.
    """
    snippet = code.get(r.top[0].snippet_id)
    if snippet is None or r.passed or r.rank1_tie.get("passing"):
        return ()
    if not item.lang.defines(snippet, item.entry_point):
        return ()
    try:
        result = (run or _rerun)(snippet, item.setup, item.tests, item.language)
    except SandboxError:
        return ()
    if not result.returned or len(result.outcomes) != len(r.rank1_outcomes):
        return ()
    return tuple(
        value if outcome == recorded else ""
        for value, outcome, recorded in zip(result.returned, result.outcomes, r.rank1_outcomes)
    )
