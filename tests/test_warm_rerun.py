"""A warm rerun of the benchmark executes nothing: what the failure messages show (the rank-1
suite's returned values and raised exceptions) comes from the outcome cache, and a run answered
entirely from the cache starts no sandbox process."""

from __future__ import annotations

from pathlib import Path

import numpy  # noqa: F401 - imported at collection: pytester's module snapshot must keep it
import pytest

from pytest_execretrieval.execution import runner as runner_module
from pytest_execretrieval.execution.sandbox import Sandbox


class CountingSandbox(Sandbox):
    """The real sandbox, counting the processes started and the suites run."""

    started = 0
    suites = 0

    def _start(self) -> None:
        CountingSandbox.started += 1
        super()._start()

    def run(self, code, setup, tests, group=None):
        CountingSandbox.suites += 1
        return super().run(code, setup, tests)


@pytest.fixture
def counting(monkeypatch):
    monkeypatch.setattr(runner_module, "Sandbox", CountingSandbox)
    monkeypatch.setattr(CountingSandbox, "started", 0)
    monkeypatch.setattr(CountingSandbox, "suites", 0)
    return CountingSandbox


def test_a_warm_rerun_executes_nothing_and_shows_the_same_values(pytester, items: Path, counting):
    # -v: the whole failure text (with the values), not the one-line default
    args = [
        "--embedder",
        "bm25",
        "--execretrieval-items",
        str(items),
        "-n",
        "0",
        "-v",
        "-p",
        "no:randomly",
        "--execretrieval-cache-dir",
        str(pytester.path / "cache"),
    ]
    cold = pytester.runpytest_inprocess(*args)
    assert cold.ret == 1  # some rank 1 is a wrong implementation: its message shows values
    assert counting.suites >= 1  # the rank-1 suites whose values the messages show
    assert "returned" in cold.stdout.str() or "raised" in cold.stdout.str()
    counting.started = counting.suites = 0
    warm = pytester.runpytest_inprocess(*args)
    assert (counting.started, counting.suites) == (0, 0)
    failures = lambda r: [ln for ln in r.stdout.lines if "->" in ln]  # noqa: E731
    assert failures(warm) == failures(cold) and failures(cold)
