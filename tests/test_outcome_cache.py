"""The outcome cache: keys, integrity checks, atomic concurrent writes, cached_run."""

from __future__ import annotations

import hmac
import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.execution import outcome_cache
from pytest_execretrieval.execution.outcome_cache import OutcomeCache, cached_run
from pytest_execretrieval.execution.sandbox import Limits, Sandbox, SuiteResult

CODE, SETUP, TESTS = "def f():\n    return 1\n", "import math", ("assert f() == 1",)
RESULT = SuiteResult(("pass",), True, "", "out")


class CountingSandbox:
    """Stands in for Sandbox in cached_run: counts runs, returns a fixed result."""

    def __init__(self, result: SuiteResult = RESULT, limits: Limits | None = None) -> None:
        self.result, self.limits, self.calls = result, limits or Limits(), 0

    def run(self, code, setup, tests, group=None):
        self.calls += 1
        return self.result


def entry(cache: OutcomeCache, code=CODE, setup=SETUP, tests=TESTS) -> Path:
    return cache.path_for(cache.key(code, setup, tests))


def test_round_trip_and_miss(tmp_path):
    cache = OutcomeCache(tmp_path)
    assert cache.get(CODE, SETUP, TESTS) is None
    cache.put(CODE, SETUP, TESTS, RESULT)
    assert cache.get(CODE, SETUP, TESTS) == RESULT
    other = SuiteResult(("fail",), False, "", "")
    cache.put(CODE, SETUP, TESTS, other)
    assert cache.get(CODE, SETUP, TESTS) == other


def test_entries_fan_out_into_two_hex_char_dirs(tmp_path):
    cache = OutcomeCache(tmp_path)
    cache.put(CODE, SETUP, TESTS, RESULT)
    key = cache.key(CODE, SETUP, TESTS)
    path = entry(cache)
    assert path.parent == tmp_path / key[:2] and path.exists()
    assert len(key[:2]) == 2 and int(key[:2], 16) >= 0
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [path]  # the key lives elsewhere


def test_key_sensitivity(monkeypatch):
    base = OutcomeCache.key(CODE, SETUP, TESTS)
    assert base == OutcomeCache.key(CODE, SETUP, list(TESTS))
    assert base == OutcomeCache.key(CODE, SETUP, TESTS, Limits())
    variants = [
        OutcomeCache.key(CODE + " ", SETUP, TESTS),
        OutcomeCache.key(CODE, SETUP + "\n", TESTS),
        OutcomeCache.key(CODE, SETUP, TESTS + ("assert 1",)),
        OutcomeCache.key(CODE, SETUP, ("assert f() == 2",)),
        OutcomeCache.key(CODE, "", (SETUP,) + TESTS),
        OutcomeCache.key(CODE, SETUP, TESTS, Limits(timeout_s=1.0)),
    ]
    assert len({base, *variants}) == len(variants) + 1
    monkeypatch.setattr(outcome_cache, "RUNNER_VERSION", "other")
    assert OutcomeCache.key(CODE, SETUP, TESTS) != base


text = st.text(max_size=8)


@settings(max_examples=200)
@given(text, st.lists(text, max_size=3), text, st.lists(text, max_size=3))
def test_distinct_suites_have_distinct_keys(setup_a, tests_a, setup_b, tests_b):
    same = (setup_a, tests_a) == (setup_b, tests_b)
    assert (
        OutcomeCache.key("c", setup_a, tests_a) == OutcomeCache.key("c", setup_b, tests_b)
    ) == same


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: data.split(b"\n", 1)[0], id="header-only"),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: os.urandom(len(data)), id="garbage"),
        pytest.param(
            lambda data: data.replace(b'"passed": true', b'"passed": false'), id="checksum"
        ),
        pytest.param(lambda data: data.replace(b'"out"', b'"OUT"'), id="flipped-body"),
    ],
)
def test_corrupt_entries_are_detected_removed_and_recomputed(tmp_path, damage):
    cache = OutcomeCache(tmp_path)
    cache.put(CODE, SETUP, TESTS, RESULT)
    path = entry(cache)
    path.write_bytes(damage(path.read_bytes()))
    assert cache.get(CODE, SETUP, TESTS) is None
    assert not path.exists()
    sandbox = CountingSandbox()
    assert cached_run(cache, sandbox, CODE, SETUP, TESTS) == RESULT
    assert sandbox.calls == 1
    assert cached_run(cache, sandbox, CODE, SETUP, TESTS) == RESULT
    assert sandbox.calls == 1


def test_valid_tag_but_wrong_schema_is_rejected(tmp_path):
    cache = OutcomeCache(tmp_path)
    cache.put(CODE, SETUP, TESTS, RESULT)
    path = entry(cache)
    key = cache.key(CODE, SETUP, TESTS)
    body = b'{"outcomes": "pass", "passed": true, "detail": "", "output": ""}'
    path.write_bytes(
        b" ".join([b"execretrieval-outcome2", key.encode(), cache.tag(key, body).encode()])
        + b"\n"
        + body
    )
    assert cache.get(CODE, SETUP, TESTS) is None
    assert not path.exists()


def test_entries_with_and_without_returned_values_load(tmp_path):
    """Entries written before SuiteResult.returned existed (same RUNNER_VERSION) still load."""
    cache = OutcomeCache(tmp_path)
    failing = SuiteResult(("fail", "pass"), False, "", "", ("returned 2", ""))
    cache.put(CODE, SETUP, TESTS, failing)
    assert cache.get(CODE, SETUP, TESTS) == failing
    path, key = entry(cache), cache.key(CODE, SETUP, TESTS)
    body = b'{"detail": "", "outcomes": ["fail", "pass"], "output": "", "passed": false}'
    path.write_bytes(
        b" ".join([b"execretrieval-outcome2", key.encode(), cache.tag(key, body).encode()])
        + b"\n"
        + body
    )
    assert cache.get(CODE, SETUP, TESTS) == SuiteResult(("fail", "pass"), False, "", "")


@pytest.mark.parametrize("tag", ["sha256", "other-key"])
def test_entries_forged_without_the_key_are_rejected(tmp_path, tag):
    cache = OutcomeCache(tmp_path)
    failing = SuiteResult(("fail",), False, "", "")
    cache.put(CODE, SETUP, TESTS, failing)
    path = entry(cache)
    key = cache.key(CODE, SETUP, TESTS)
    body = json.dumps(RESULT.to_json(), sort_keys=True).encode()
    if tag == "sha256":  # the old, keyless checksum: anyone could compute it
        forged = outcome_cache._sha256(body)
    else:  # a well-formed tag under a key of the forger's choosing
        forged = hmac.new(os.urandom(32), key.encode() + b"\n" + body, "sha256").hexdigest()
    path.write_bytes(
        b" ".join([b"execretrieval-outcome2", key.encode(), forged.encode()]) + b"\n" + body
    )
    assert cache.get(CODE, SETUP, TESTS) is None
    assert not path.exists()


def test_the_key_is_private_and_shared_by_every_instance(tmp_path, monkeypatch):
    # a user cache directory of its own: one another test made first (prepared contexts live
    # in it) would keep the mode it was made with
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    first, second = OutcomeCache(tmp_path), OutcomeCache(tmp_path)
    first.put(CODE, SETUP, TESTS, RESULT)
    assert second.get(CODE, SETUP, TESTS) == RESULT
    key_file = outcome_cache.user_key_dir() / "outcome-hmac-key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert key_file.parent.stat().st_mode & 0o777 == 0o700
    assert len(key_file.read_bytes()) == 32


def test_the_key_lives_in_the_users_cache_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert outcome_cache.user_key_dir() == tmp_path / "xdg" / "pytest-execretrieval"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # not absolute: ignored (XDG spec)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert outcome_cache.user_key_dir() == tmp_path / "home" / ".cache" / "pytest-execretrieval"


def test_a_key_committed_to_the_cache_directory_is_ignored_and_named(tmp_path):
    """A pull request commits ``.hmac-key`` and an entry signed with it, claiming a pass: the
    entry does not verify (and is discarded), and a warning names the ignored key file."""
    root = tmp_path / ".execretrieval_cache"
    committed = os.urandom(32)
    root.mkdir()
    (root / ".hmac-key").write_bytes(committed)
    cache = OutcomeCache(root)
    key = cache.key(CODE, SETUP, TESTS)
    body = json.dumps(RESULT.to_json(), sort_keys=True).encode()
    tag = hmac.new(committed, key.encode() + b"\n" + body, "sha256").hexdigest()
    path = entry(cache)
    path.parent.mkdir()
    path.write_bytes(
        b" ".join([b"execretrieval-outcome2", key.encode(), tag.encode()]) + b"\n" + body
    )
    with pytest.warns(UserWarning, match=r"ignoring .*\.hmac-key"):
        assert cache.get(CODE, SETUP, TESTS) is None
    assert not path.exists()


def test_a_symlinked_entry_is_neither_read_nor_written_through(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_bytes(b"precious")
    root = tmp_path / "cache"
    cache = OutcomeCache(root)
    path = entry(cache)
    path.parent.mkdir(parents=True)
    path.symlink_to(outside)
    assert cache.get(CODE, SETUP, TESTS) is None  # the link is dropped, not followed
    assert not os.path.lexists(path)
    path.symlink_to(outside)
    with pytest.raises(OSError, match="symlink"):
        cache.put(CODE, SETUP, TESTS, RESULT)
    assert outside.read_bytes() == b"precious"


def test_foreign_entry_is_rejected(tmp_path):
    cache = OutcomeCache(tmp_path)
    cache.put("other code", SETUP, TESTS, RESULT)
    path = entry(cache)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(entry(cache, code="other code").read_bytes())  # valid, but for another key
    assert cache.get(CODE, SETUP, TESTS) is None
    assert not path.exists()


def test_cached_run_without_cache_always_runs():
    sandbox = CountingSandbox()
    cached_run(None, sandbox, CODE, SETUP, TESTS)
    cached_run(None, sandbox, CODE, SETUP, TESTS)
    assert sandbox.calls == 2


def test_cached_run_keys_on_the_sandbox_limits(tmp_path):
    cache = OutcomeCache(tmp_path)
    slow = CountingSandbox(SuiteResult(("timeout",), False, "timed out", ""), Limits(timeout_s=1))
    fast = CountingSandbox(RESULT, Limits(timeout_s=9))
    assert cached_run(cache, slow, CODE, SETUP, TESTS).outcomes == ("timeout",)
    assert cached_run(cache, fast, CODE, SETUP, TESTS) == RESULT
    assert (slow.calls, fast.calls) == (1, 1)


def test_cached_run_with_a_real_sandbox(tmp_path):
    cache = OutcomeCache(tmp_path)
    with Sandbox(Limits(timeout_s=2)) as sandbox:
        first = cached_run(cache, sandbox, CODE, SETUP, TESTS)
        assert first.passed
        sandbox.close()  # a hit must not need the sandbox at all
        assert cached_run(cache, sandbox, CODE, SETUP, TESTS) == first


# --- concurrency and crashes ------------------------------------------------------------------

SHARED = ("def shared():\n    pass\n", "", ("assert 1",))


def results_for(worker: int) -> list[SuiteResult]:
    return [
        SuiteResult(("pass",) * (i % 3 + 1), True, "", f"w{worker}-{i}" * (i % 50))
        for i in range(8)
    ]


def hammer(root: str, worker: int, rounds: int) -> None:
    """Child process: write shared and own keys, read both; exit 3 on any bad read."""
    cache = OutcomeCache(Path(root))
    valid_shared = {r for w in range(4) for r in results_for(w)}
    own = (f"def own_{worker}():\n    pass\n", "", ("assert 1",))
    mine = results_for(worker)
    for i in range(rounds):
        cache.put(*SHARED, mine[i % len(mine)])
        cache.put(*own, mine[i % len(mine)])
        got = cache.get(*SHARED)
        if got is not None and got not in valid_shared:
            os._exit(3)
        if cache.get(*own) != mine[i % len(mine)]:
            os._exit(4)
    os._exit(0)


def test_concurrent_writers_never_produce_a_bad_read(tmp_path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=hammer, args=(str(tmp_path), w, 150)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0, 0, 0, 0]
    cache = OutcomeCache(tmp_path)
    assert cache.get(*SHARED) in {r for w in range(4) for r in results_for(w)}
    assert not list(tmp_path.rglob("*.tmp"))


def stall_in(name: str, root: str, ready) -> None:
    """Child process: put() that stalls at os.<name> (after the temp file is written)."""
    real = getattr(os, name)

    def stalled(*args):
        if name == "fsync":
            real(*args)
        ready.set()
        time.sleep(60)

    setattr(os, name, stalled)
    OutcomeCache(Path(root)).put(CODE, SETUP, TESTS, SuiteResult(("fail",), False, "", ""))


@pytest.mark.parametrize("stage", ["fsync", "replace"])
@pytest.mark.parametrize("existing", [None, RESULT])
def test_writer_killed_mid_write_leaves_nothing_readable(tmp_path, stage, existing):
    cache = OutcomeCache(tmp_path)
    if existing is not None:
        cache.put(CODE, SETUP, TESTS, existing)
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    proc = ctx.Process(target=stall_in, args=(stage, str(tmp_path), ready))
    proc.start()
    assert ready.wait(30)
    proc.kill()
    proc.join()
    assert list(tmp_path.rglob(".*.tmp"))  # the killed writer's temp file is still there
    assert cache.get(CODE, SETUP, TESTS) == existing


def test_leftover_partial_temp_file_is_ignored(tmp_path):
    cache = OutcomeCache(tmp_path)
    path = entry(cache)
    path.parent.mkdir(parents=True)
    (path.parent / f".{path.stem}.abc123.tmp").write_bytes(b"execretrieval-outcome 12")
    assert cache.get(CODE, SETUP, TESTS) is None


def restored_cache(tmp_path: Path, monkeypatch, name: str) -> OutcomeCache:
    """A cache as another machine left it, restored on a runner with a fresh home directory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"{name}-xdg"))
    return OutcomeCache(tmp_path / "restored")


@pytest.mark.parametrize("source", ["env", "file"])
def test_a_restored_cache_signed_with_the_key_from_the_environment_executes_nothing(
    tmp_path, monkeypatch, source
):
    if source == "env":
        monkeypatch.setenv(outcome_cache.KEY_ENV, "ci-secret")
    else:
        (tmp_path / "key").write_text("ci-secret\n")
        monkeypatch.setenv(outcome_cache.KEY_FILE_ENV, str(tmp_path / "key"))
    restored_cache(tmp_path, monkeypatch, "writer").put(CODE, SETUP, TESTS, RESULT)
    cache, sandbox = restored_cache(tmp_path, monkeypatch, "reader"), CountingSandbox()
    assert cached_run(cache, sandbox, CODE, SETUP, TESTS) == RESULT
    assert (sandbox.calls, cache.foreign) == (0, 0)
    assert not (tmp_path / "reader-xdg").exists()  # no per-user key was made or read


def test_an_entry_signed_with_another_key_is_executed_again_and_counted(tmp_path, monkeypatch):
    monkeypatch.setenv(outcome_cache.KEY_ENV, "the writer's secret")
    restored_cache(tmp_path, monkeypatch, "writer").put(CODE, SETUP, TESTS, RESULT)
    monkeypatch.setenv(outcome_cache.KEY_ENV, "another secret")
    cache, sandbox = restored_cache(tmp_path, monkeypatch, "reader"), CountingSandbox()
    assert cached_run(cache, sandbox, CODE, SETUP, TESTS) == RESULT
    assert (sandbox.calls, cache.foreign) == (1, 1)
    line = outcome_cache.foreign_line(cache.foreign)
    assert line is not None and line.startswith("1 cached outcome ignored: signed with another")
    assert outcome_cache.KEY_ENV in line and outcome_cache.foreign_line(0) is None


def test_an_empty_key_file_is_an_error_not_a_weak_key(tmp_path, monkeypatch):
    (tmp_path / "key").write_text("\n")
    monkeypatch.setenv(outcome_cache.KEY_FILE_ENV, str(tmp_path / "key"))
    with pytest.raises(ValueError, match="is empty"):
        OutcomeCache(tmp_path / "cache").put(CODE, SETUP, TESTS, RESULT)


def test_the_runner_counts_the_foreign_entries_it_ignored(tmp_path, monkeypatch):
    from pytest_execretrieval.execution import runner as runner_module

    class RunnerSandbox(CountingSandbox):
        def __init__(self, limits, isolation="best"):
            super().__init__(limits=limits)

        def close(self):
            pass

    monkeypatch.setattr(runner_module, "Sandbox", RunnerSandbox)
    monkeypatch.setenv(outcome_cache.KEY_ENV, "the writer's secret")
    with runner_module.SuiteRunner(cache_dir=tmp_path) as runner:
        runner.run(CODE, SETUP, TESTS)
    monkeypatch.setenv(outcome_cache.KEY_ENV, "another secret")
    with runner_module.SuiteRunner(cache_dir=tmp_path) as runner:
        runner.run(CODE, SETUP, TESTS)
        assert (runner.executed, runner.foreign) == (1, 1)
