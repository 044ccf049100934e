"""Run untrusted Python snippets against assert tests, never in the calling process.

A :class:`Sandbox` owns one long-lived *fork server* (``python -I _sandbox_child.py``, started
with a scrubbed environment: only PATH, LANG and LC_ALL survive, so API keys and tokens never
reach snippets; hash randomisation is left on, so each server has its own hash seed, as a fresh
interpreter would). The server pre-imports common stdlib modules, compiles each suite's setup
and tests once (consecutive requests for one item share them) and forks one child per suite,
which is several times cheaper than starting an interpreter (benchmarks/sandbox_speed.py).
The child

* calls ``setsid`` (own process group), sets RLIMIT_AS/FSIZE/NPROC and CORE=0,
* works in a fresh temporary directory (on tmpfs /dev/shm when available, removed by the
  server afterwards); stdin is /dev/null, stdout/stderr go to a pipe the server caps,
* installs an audit hook (``sys.addaudithook``) that blocks process creation (fork, exec,
  spawn, system, subprocess, ctypes), signals to other processes, rlimit changes, reads of other
  processes' ``/proc`` entries, and writes outside its temporary directory,
* execs setup + code as module ``__candidate__`` (so ``if __name__ == "__main__"`` blocks do not
  run), then each test in a shallow copy of that namespace with ``raises`` re-bound and pristine
  builtins, and reports per-test outcomes over a private pipe, ending with a completion record
  (pid, test count, per-run nonce).

We run as root on the benchmark machines and the interpreter lives under a mode-700 home, so
dropping to an unprivileged uid would break stdlib imports; the audit-hook write guard is what
keeps writes inside the temporary directory. That guard is best-effort (Python-level:
``dir_fd`` tricks on ``os.open`` or deliberate tampering with the runner can evade it): it
contains buggy code, not a determined attacker. RLIMIT_NPROC is not enforced for root.

Exit status never means pass: a suite passes only if the main child sent its completion
record, nothing it started outlived it, and every test reported ``"pass"``. The server enforces
the wall-clock timeout and SIGKILLs the whole process group after every run. It exits when its
stdin closes or its parent changes; :meth:`Sandbox.run` restarts a dead server once.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self

from . import _sandbox_child as _child

__all__ = ["RUNNER_VERSION", "Limits", "Sandbox", "SandboxError", "SuiteResult", "run_suite"]

RUNNER_VERSION: str = _child.RUNNER_VERSION

_SERVER_SCRIPT = Path(_child.__file__).resolve()
_KEPT_ENV = ("PATH", "LANG", "LC_ALL")
_STARTUP_TIMEOUT_S = 60.0
_REPLY_GRACE_S = 30.0  # on top of the suite timeout, for fork/cleanup under heavy load


class SandboxError(RuntimeError):
    """The sandbox machinery (not the snippet under test) failed."""


class _ServerGone(Exception):
    """The fork server died or stopped answering; Sandbox.run restarts it once."""


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 5.0  # wall clock for the whole suite
    memory_bytes: int = 2 * 1024**3  # RLIMIT_AS
    file_size_bytes: int = 64 * 1024**2  # RLIMIT_FSIZE
    max_processes: int = 64  # RLIMIT_NPROC (not enforced for root)
    output_bytes: int = 64 * 1024  # captured stdout+stderr kept

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"Limits.timeout_s must be > 0, got {self.timeout_s!r}")
        for name in ("memory_bytes", "file_size_bytes", "max_processes", "output_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"Limits.{name} must be an int >= 0, got {value!r}")


@dataclass(frozen=True)
class SuiteResult:
    outcomes: tuple[str, ...]  # per test: "pass" | "fail" | "error:<ExceptionName>" | "timeout"
    passed: bool  # every test passed AND the child proved it completed
    detail: str = ""  # "" when clean, else a short human-readable reason
    output: str = ""  # the snippet's stdout+stderr, truncated to Limits.output_bytes

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcomes", tuple(self.outcomes))

    def to_json(self) -> dict[str, Any]:
        return {
            "outcomes": list(self.outcomes),
            "passed": self.passed,
            "detail": self.detail,
            "output": self.output,
        }

    @classmethod
    def from_json(cls, d: Any) -> SuiteResult:
        """Inverse of :meth:`to_json`; raises TypeError/ValueError on anything malformed."""
        if not isinstance(d, dict):
            raise TypeError(f"a SuiteResult JSON object must be a dict, got {type(d).__name__}")
        if set(d) != {"outcomes", "passed", "detail", "output"}:
            raise ValueError(f"not a SuiteResult JSON object: keys {sorted(d)}")
        outcomes, passed = d["outcomes"], d["passed"]
        if not isinstance(outcomes, list) or not all(isinstance(o, str) for o in outcomes):
            raise TypeError("SuiteResult.outcomes must be a list of strings")
        if not isinstance(passed, bool):
            raise TypeError("SuiteResult.passed must be a bool")
        if not isinstance(d["detail"], str) or not isinstance(d["output"], str):
            raise TypeError("SuiteResult.detail and .output must be strings")
        return cls(tuple(outcomes), passed, d["detail"], d["output"])


def _scrubbed_env() -> dict[str, str]:
    return {k: os.environ[k] for k in _KEPT_ENV if k in os.environ}


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _ServerGone("no reply before the deadline")
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise _ServerGone("server closed its reply pipe")
            buf.extend(chunk)
    return bytes(buf)


def _read_frame(fd: int, deadline: float) -> Any:
    (size,) = _child._HEADER.unpack(_read_exact(fd, _child._HEADER.size, deadline))
    return json.loads(_read_exact(fd, size, deadline))


class Sandbox:
    """Runs suites in children of a private fork server. Use one per process (or thread)."""

    def __init__(self, limits: Limits = Limits(), *, _guard: bool = True) -> None:
        # _guard=False disables the audit hook; only for testing the supervisor's own checks.
        self.limits = limits
        self._limits_json = asdict(limits)  # sent with every request
        self._guard = _guard
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._closed = False
        self._requests = 0
        try:
            self._start()
        except (_ServerGone, ValueError) as exc:
            self._stop()
            raise SandboxError(f"could not start the sandbox server: {exc}") from exc

    @property
    def server_pid(self) -> int | None:
        """Pid of the running fork server, if any (for diagnostics and tests)."""
        return self._proc.pid if self._proc is not None else None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self) -> None:
        proc = subprocess.Popen(
            [sys.executable, "-I", str(_SERVER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_scrubbed_env(),
            cwd="/",
            close_fds=True,
            start_new_session=True,  # terminal signals aimed at the caller do not reach it
        )
        self._proc = proc
        assert proc.stdout is not None
        hello = _read_frame(proc.stdout.fileno(), time.monotonic() + _STARTUP_TIMEOUT_S)
        if not isinstance(hello, dict) or hello.get("version") != RUNNER_VERSION:
            raise _ServerGone(f"unexpected greeting from the server: {hello!r:.200}")

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=2)  # stdin EOF makes it exit between requests
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _kill(self) -> None:
        """Stop a server that may be mid-run; SIGTERM lets it kill its child and clean up."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
        self._stop()

    def _roundtrip(self, request: bytes, timeout_s: float) -> Any:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            _write_all(proc.stdin.fileno(), request)
        except OSError as exc:
            raise _ServerGone(f"cannot send request: {exc}") from exc
        return _read_frame(proc.stdout.fileno(), time.monotonic() + timeout_s + _REPLY_GRACE_S)

    def run(self, code: str, setup: str, tests: Sequence[str]) -> SuiteResult:
        """Exec ``setup`` + ``code`` in a fresh child, then each test; see the module docs."""
        tests = _check_inputs(code, setup, tests)
        with self._lock:
            if self._closed:
                raise SandboxError("this Sandbox is closed; create a new one")
            if os.getpid() != self._owner:
                raise SandboxError(
                    f"this Sandbox belongs to pid {self._owner}; create a new Sandbox "
                    "(or use run_suite) in each process"
                )
            self._requests += 1
            payload = {
                "id": self._requests,
                "code": code,
                "setup": setup,
                "tests": list(tests),
                "limits": self._limits_json,
                "guard": self._guard,
            }
            body = json.dumps(payload).encode("utf-8")
            request = _child._HEADER.pack(len(body)) + body
            for attempt in range(2):
                try:
                    if self._proc is None:
                        self._start()
                    reply = self._roundtrip(request, self.limits.timeout_s)
                    if not isinstance(reply, dict) or reply.get("id") != self._requests:
                        raise _ServerGone(f"reply out of step with request {self._requests}")
                    break
                except (_ServerGone, ValueError) as exc:  # ValueError: garbled frame
                    self._kill()
                    if attempt:
                        raise SandboxError(
                            f"the sandbox server failed twice in a row ({exc}); "
                            "check that sys.executable can run `python -I`"
                        ) from exc
                except BaseException:
                    self._kill()  # e.g. KeyboardInterrupt mid-request: a reply may be pending
                    raise
        if "error" in reply:
            raise SandboxError(f"the sandbox server could not run the suite: {reply['error']}")
        return _to_result(reply, len(tests))

    def close(self) -> None:
        """Stop the fork server. Idempotent."""
        with self._lock:
            self._closed = True
            if os.getpid() == self._owner:
                self._stop()

    def __del__(self) -> None:
        try:
            if not self._closed and os.getpid() == self._owner:
                self._stop()
        except Exception:  # noqa: BLE001, S110 - interpreter teardown
            pass


def _check_inputs(code: object, setup: object, tests: object) -> tuple[str, ...]:
    if not isinstance(code, str) or not isinstance(setup, str):
        raise TypeError("code and setup must be str")
    if isinstance(tests, str):
        raise TypeError("tests must be a sequence of test statements, not a single str")
    tests = tuple(tests)  # type: ignore[arg-type]
    if not all(isinstance(t, str) for t in tests):
        raise TypeError("every test must be a str")
    if not tests:
        raise ValueError("tests is empty: a suite without tests proves nothing")
    return tests


def _to_result(reply: dict[str, Any], n_tests: int) -> SuiteResult:
    try:
        result = SuiteResult.from_json({k: v for k, v in reply.items() if k != "id"})
    except (TypeError, ValueError) as exc:
        raise SandboxError(f"malformed reply from the sandbox server: {exc}") from exc
    if len(result.outcomes) != n_tests:
        raise SandboxError(f"server returned {len(result.outcomes)} outcomes for {n_tests} tests")
    # Belt and braces: never trust a `passed` that the outcomes contradict.
    passed = result.passed and all(o == "pass" for o in result.outcomes)
    return SuiteResult(result.outcomes, passed, result.detail, result.output)


_SHARED: dict[tuple[Limits, int], Sandbox] = {}
_SHARED_LOCK = threading.Lock()


def run_suite(
    code: str, setup: str, tests: Sequence[str], limits: Limits = Limits()
) -> SuiteResult:
    """Like ``Sandbox(limits).run(...)`` with a lazily created per-process shared Sandbox."""
    key = (limits, os.getpid())
    with _SHARED_LOCK:
        sandbox = _SHARED.get(key)
        if sandbox is None:
            sandbox = _SHARED[key] = Sandbox(limits)
    return sandbox.run(code, setup, tests)


@atexit.register
def _close_shared() -> None:
    pid = os.getpid()
    with _SHARED_LOCK:
        for key in [k for k in _SHARED if k[1] == pid]:
            _SHARED.pop(key).close()
