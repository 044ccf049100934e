"""Run untrusted Python snippets against assert tests, never in the calling process.

A :class:`Sandbox` owns one long-lived *checker* process (``python -I`` running
``_sandbox_child.serve``, started with a scrubbed environment: only PATH, LANG and LC_ALL
survive, so API keys and tokens never reach snippets). The checker forks a *zygote* once, before
it has seen any test; the zygote forks one child per suite. Tests are data: each is parsed into
the closed grammar of :mod:`._grammar` (a call of the entry point, maybe subscripted or wrapped
in ``len``/``sorted``/..., compared with a literal; ``raises(...)``; ``math.isclose(...)``), the
child makes only the calls and returns their values in a restricted typed encoding, and the
checker computes the literals with the grammar's interpreter and decides each verdict on the
decoded plain values. No test text is executed outside the child; a test outside the grammar is
``error:GrammarError``. See ``_sandbox_child.py`` for the protocol.

Kernel layers, set up once in the zygote before any snippet runs and probed at start (the
:attr:`Sandbox.isolation` report, :func:`isolation_in_force`): user, PID, network, mount and IPC
namespaces (the zygote is the PID namespace's init, so nothing a suite starts outlives it; a
bounded tmpfs is the scratch directory), Landlock (writes only in the scratch directory, reads
only of the interpreter, the standard library and system libraries, no TCP; signals scoped to
the child), ``no_new_privs``, a seccomp filter (no exec, no process creation beyond threads, no
ptrace/mknod/pidfd, no ``socket()`` at all, ``socketpair`` only AF_UNIX; ``/dev/shm``, ``/run``
and ``/var/run`` empty) and an unprivileged uid with no capabilities. The audit hook of earlier
versions stays as an inner layer that names what it blocked.

The checker is confined like the child (the ``checker_*`` layers): the process started here is
only the outside anchor of the checker's own user, PID, network, IPC and mount namespaces; the
checker, their PID namespace's init, runs as nobody with no_new_privs, a read-only Landlock
ruleset and a seccomp program without sockets, signals, new processes or
``prlimit``/``setpriority`` on other processes; it has a parent-death signal and a CPU budget
per request (the suite's timeout). With ``isolation="strict"`` a Sandbox refuses to start unless
every layer is in force; ``"best"`` runs with what the kernel offers and warns once per process
about the rest.

Exit status never means pass: a suite passes only if the child finished every test and sent
its completion frame, nothing it started outlived it, and every test passed. The zygote
enforces the wall-clock timeout and kills everything the suite left. Every frame on every pipe is
bounded in size by its reader, and decoded values in depth, elements and same-hash keys; a child
that breaks the protocol makes every outcome of its suite ``error:ProtocolError``. A checker or
zygote that dies, stops, hangs or answers garbage costs the suite in flight a named failure
(``error:SandboxLost``) and is restarted for the next suite; it never raises into the caller.
Both outcomes say nothing about the snippet (:data:`UNUSABLE_OUTCOMES`,
:attr:`SuiteResult.unusable`): the runner retries such a suite once, and callers treat one that
recurs as neither a pass nor a kill.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import site
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self

from . import _checker, _wire, _zygote
from . import _sandbox_child as _entry
from .contexts import contexts_dir

__all__ = [
    "ISOLATION_MODES",
    "LOST",
    "PROTOCOL_ERROR",
    "RUNNER_VERSION",
    "UNUSABLE_OUTCOMES",
    "Limits",
    "Sandbox",
    "SandboxError",
    "SuiteResult",
    "isolation_in_force",
    "run_suite",
]

RUNNER_VERSION: str = _entry.RUNNER_VERSION

_SERVER_SCRIPT = Path(_entry.__file__).resolve()
# The checker imports _sandbox_child as a module instead of running the file as a script: a
# script is compiled from source at every start, which leaves about 6 MB of the compiler's
# freed memory in the heap that the zygote inherits, and every fork copies and every child's
# exit tears down the page tables of that heap. An import uses the cached bytecode. The
# package directory stays first on sys.path, as it is for a script.
# It starts with -S: the .pth files of site-packages (an editable install's finder, setuptools'
# distutils hack) import importlib.util, pathlib and urllib, 0.7 MB more in the zygote. The
# bootstrap does what site does that snippets can see: the exit/quit/help/copyright builtins,
# the caller's sys.prefix (and site's view of it) and its site-packages directories at the end
# of sys.path (for the snippets' imports and the child's Landlock read rules, see
# _zygote._python_paths).
_BOOTSTRAP = (
    "import sys, json, site; site.setquit(); site.setcopyright(); site.sethelper(); "
    "sys.prefix, sys.exec_prefix, dirs = json.loads(sys.argv.pop(1)); "
    "site.PREFIXES, site.ENABLE_USER_SITE = [sys.prefix, sys.exec_prefix], False; "
    "sys.path += [d for d in dirs if d not in sys.path]; "
    "sys.path.insert(0, sys.argv.pop(1)); import _sandbox_child; _sandbox_child.serve()"
)


def _site() -> str:
    """The bootstrap's view of the caller's installation: prefixes and site-packages."""
    dirs = [d for d in site.getsitepackages() if os.path.isdir(d)]
    return json.dumps([sys.prefix, sys.exec_prefix, dirs])


def _contexts() -> str:
    """The prepared contexts' directory (:mod:`.contexts`), when there is one: the zygote
    exposes it read-only."""
    path = contexts_dir()
    return str(path) if path.is_dir() else ""


_KEPT_ENV = ("PATH", "LANG", "LC_ALL")
# Isolated mode (-I) but for the environment: -I ignores every PYTHON* variable, and the
# checker, its zygote and every child are to hash strings with one seed, so that a snippet
# whose output follows a set's order (``list({'a', 'b'})``) gives the same answer in every
# sandbox, run and machine. The environment is the scrubbed one, so no other PYTHON* variable
# reaches it: -s and -P are what -I adds besides.
_ISOLATED = ("-s", "-P")
_FIXED_ENV = {"PYTHONHASHSEED": "0"}
_STARTUP_TIMEOUT_S = 60.0
_REPLY_GRACE_S = 30.0  # on top of the suite timeout, for fork/cleanup under heavy load
ISOLATION_MODES = ("best", "strict")
LOST = "error:SandboxLost"  # the outcome of every test of a suite whose sandbox died or hung
PROTOCOL_ERROR: str = _checker.PROTOCOL_ERROR  # ... of a suite whose child broke the wire protocol
# Outcomes that say nothing about the snippet: a suite with one of them proves neither a pass
# nor a kill. The runner retries it once (outcome_cache.cached_run); if it recurs, the snippet
# is *unusable*: never a pass, a distractor or "differing" evidence, and the build and verify
# name it (SuiteResult.unusable).
UNUSABLE_OUTCOMES = frozenset({LOST, PROTOCOL_ERROR})


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
    scratch_bytes: int = 64 * 1024**2  # size of the scratch tmpfs (with a mount namespace)
    scratch_inodes: int = 16384  # files + directories in it

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"Limits.timeout_s must be > 0, got {self.timeout_s!r}")
        names = ("memory_bytes", "file_size_bytes", "max_processes", "output_bytes")
        for name in (*names, "scratch_bytes", "scratch_inodes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"Limits.{name} must be an int >= 0, got {value!r}")


@dataclass(frozen=True)
class SuiteResult:
    outcomes: tuple[str, ...]  # per test: "pass" | "fail" | "error:<ExceptionName>" | "timeout"
    passed: bool  # every test passed AND the child proved it completed
    detail: str = ""  # "" when clean, else a short human-readable reason
    output: str = ""  # the snippet's stdout+stderr, truncated to Limits.output_bytes
    # Per test that did not pass, what the snippet's calls returned or raised there, formatted
    # by the checker ("returned 5", "f(3) returned 5; f(4) raised ValueError"; truncated); ""
    # for a passing test or one never evaluated. Empty when every test passed, or when unknown
    # (a lost sandbox; a cache entry written before these were recorded).
    returned: tuple[str, ...] = ()
    # Per test, when the suite holds a *probe* (a bare call ``f(1, 2)``, no assert: what the
    # library's differential harness sends, never an item's test): what a probe's call gave,
    # ``("value", plain decoded value)``, ``("raises", class name)`` (an Exception),
    # ``("error", class name)`` (any other exception) or ``("unsupported", type name)``; None
    # for another test or one never reached. Empty when the suite has no probe.
    values: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "outcomes", tuple(self.outcomes))
        object.__setattr__(self, "returned", tuple(self.returned))
        object.__setattr__(self, "values", tuple(self.values))
        for name in ("returned", "values"):
            extra = getattr(self, name)
            if extra and len(extra) != len(self.outcomes):
                raise ValueError(
                    f"SuiteResult.{name} has {len(extra)} entries for {len(self.outcomes)} outcomes"
                )

    @property
    def unusable(self) -> bool:
        """Whether the suite proves nothing about the snippet (see :data:`UNUSABLE_OUTCOMES`)."""
        return any(o in UNUSABLE_OUTCOMES for o in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        """JSON object; ``returned`` only when known (older readers and entries stay valid)."""
        out: dict[str, Any] = {
            "outcomes": list(self.outcomes),
            "passed": self.passed,
            "detail": self.detail,
            "output": self.output,
        }
        if self.returned:
            out["returned"] = list(self.returned)
        if self.values:
            out["values"] = [_encode_value(v) for v in self.values]
        return out

    @classmethod
    def from_json(cls, d: Any) -> SuiteResult:
        """Inverse of :meth:`to_json`; raises TypeError/ValueError on anything malformed."""
        if not isinstance(d, dict):
            raise TypeError(f"a SuiteResult JSON object must be a dict, got {type(d).__name__}")
        base = {"outcomes", "passed", "detail", "output"}
        if not base <= set(d) <= base | {"returned", "values"}:
            raise ValueError(f"not a SuiteResult JSON object: keys {sorted(d)}")
        outcomes, passed = d["outcomes"], d["passed"]
        if not isinstance(outcomes, list) or not all(isinstance(o, str) for o in outcomes):
            raise TypeError("SuiteResult.outcomes must be a list of strings")
        if not isinstance(passed, bool):
            raise TypeError("SuiteResult.passed must be a bool")
        if not isinstance(d["detail"], str) or not isinstance(d["output"], str):
            raise TypeError("SuiteResult.detail and .output must be strings")
        returned = d.get("returned", [])
        if not isinstance(returned, list) or not all(isinstance(r, str) for r in returned):
            raise TypeError("SuiteResult.returned must be a list of strings")
        values = d.get("values", [])
        if not isinstance(values, list):
            raise TypeError("SuiteResult.values must be a list")
        values = [_decode_value(v) for v in values]
        return cls(
            tuple(outcomes), passed, d["detail"], d["output"], tuple(returned), tuple(values)
        )


_VALUE_KINDS = ("value", "raises", "error", "unsupported")


def _encode_value(value: Any) -> Any:
    """A probe's answer in JSON: the value itself in the sandbox's typed encoding."""
    if value is None:
        return None
    kind, payload = value
    return [kind, _wire.encode(payload) if kind == "value" else payload]


def _decode_value(raw: Any) -> Any:
    """Inverse of :func:`_encode_value` (also reads the checker's reply); ValueError or
    TypeError on anything malformed, and only the codec's plain types come out."""
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) != 2 or raw[0] not in _VALUE_KINDS:
        raise ValueError("malformed probe value")
    if raw[0] == "value":
        return ("value", _wire.decode(raw[1]))
    if not isinstance(raw[1], str):
        raise TypeError("a probe's exception or type name must be a string")
    return (raw[0], raw[1])


def _scrubbed_env() -> dict[str, str]:
    return {**{k: os.environ[k] for k in _KEPT_ENV if k in os.environ}, **_FIXED_ENV}


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    """``n`` bytes; what is already there is read even past the deadline (a reply to a request
    written ahead, :meth:`Sandbox.submit`, may wait for its reader)."""
    buf = bytearray()
    while len(buf) < n:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise _ServerGone("no reply before the deadline")
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise _ServerGone("server closed its reply pipe")
        buf.extend(chunk)
    return bytes(buf)


_MAX_REPLY_BASE = 4 << 20  # a reply's bytes besides the snippet's output


def _read_frame(fd: int, deadline: float, limit: int = _MAX_REPLY_BASE) -> Any:
    """One frame of at most ``limit`` bytes from the checker; _ServerGone for anything else
    (too large, unparsable: deep nesting, bad UTF-8, ...)."""
    (size,) = _wire._HEADER.unpack(_read_exact(fd, _wire._HEADER.size, deadline))
    if size > limit:
        raise _ServerGone(f"a reply frame of {size} bytes exceeds the {limit} byte limit")
    try:
        return _wire._loads(_read_exact(fd, size, deadline))
    except ValueError as exc:
        raise _ServerGone(str(exc)) from None


_SuiteKey = tuple[str, str, tuple[str, ...], str | None]  # code, setup, tests, group


@dataclass(frozen=True)
class _Pending:
    """A request written ahead of the :meth:`Sandbox.run` that asks for its reply."""

    suite: _SuiteKey
    id: int
    deadline: float


class Sandbox:
    """Runs suites in children of a private checker + zygote. Use one per process (or thread).

    ``isolation``: ``"best"`` (default) runs with the kernel layers available and warns once
    per process about the missing ones; ``"strict"`` raises :class:`SandboxError` unless every
    layer of :data:`LAYERS` is in force.

    :meth:`submit` starts the suite the next :meth:`run` will ask for, so that it runs while the
    caller does its own work (one suite ahead at most; the checker serves one at a time).
    """

    language = "python"  # the snippets' language (the outcome cache keys on it)
    # What another language's runner adds to its suites' outcome-cache key ("" for this one).
    runner_version = ""

    def __init__(
        self, limits: Limits = Limits(), *, isolation: str = "best", _guard: bool = True
    ) -> None:
        # _guard=False disables the audit hook; only for testing the kernel layers on their own.
        if isolation not in ISOLATION_MODES:
            raise ValueError(f"isolation must be one of {ISOLATION_MODES}, got {isolation!r}")
        self.limits = limits
        self.mode = isolation
        self._limits_json = asdict(limits)  # sent with every request
        # The snippet's output, escaped as JSON at worst (\\uXXXX per byte), plus the rest.
        self._max_reply = _MAX_REPLY_BASE + 6 * limits.output_bytes
        self._guard = _guard
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._closed = False
        self._requests = 0
        self._pending: _Pending | None = None
        self.isolation: dict[str, Any] = {}
        # Type names of the values the snippets' calls returned, nested ones too (a census).
        self.value_types: dict[str, int] = {}
        try:
            self._start()
        except (_ServerGone, ValueError) as exc:
            self._stop()
            raise SandboxError(f"could not start the sandbox server: {exc}") from exc

    @property
    def server_pid(self) -> int | None:
        """Pid of the process this Sandbox started, if running (for diagnostics and tests):
        the checker itself, or, when it has a PID namespace of its own, that namespace's
        outside anchor, whose only child is the checker."""
        return self._proc.pid if self._proc is not None else None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self) -> None:
        proc = subprocess.Popen(
            [
                sys.executable,
                *_ISOLATED,
                "-S",
                "-c",
                _BOOTSTRAP,
                _site(),
                str(_SERVER_SCRIPT.parent),
                json.dumps({**self._limits_json, "contexts": _contexts()}),
                *self._server_options(),
            ],
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
            raise _ServerGone(f"unexpected greeting from the server: {hello!r:.300}")
        self.isolation = _isolation_record(hello.get("isolation"))
        _SEEN.append(self.isolation)
        missing = self.isolation["missing"]
        if missing and self.mode == "strict":
            self._kill()
            raise SandboxError(
                "--execretrieval-isolation strict: missing sandbox layers: "
                + "; ".join(f"{k}: {v}" for k, v in missing.items())
                + " (run `execretrieval doctor`; use --execretrieval-isolation best to run anyway)"
            )
        if missing:
            _warn_once(missing)

    def _server_options(self) -> list[str]:
        """Further arguments of the checker (the Node runner names node there)."""
        return []

    def _request_fields(self, code: str, group: str | None) -> dict[str, Any]:
        """Further fields of a suite's request (the Go runner's batch: :meth:`expect`)."""
        return {}

    def expect(self, group: str, codes: Sequence[str]) -> None:
        """A hint: the suites of ``group`` (an item) that this sandbox runs next have these
        codes. A runner that builds code (Go's) builds them together at the first of them;
        this one ignores it."""

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
        """Stop a checker that may be mid-run; its zygote and every child die with it."""
        self._pending = None
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()  # SIGKILL also reaches a stopped process
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._stop()

    def run(
        self, code: str, setup: str, tests: Sequence[str], group: str | None = None
    ) -> SuiteResult:
        """Exec ``setup`` + ``code`` in a fresh child, then each test's call; see the module
        docs. ``tests``: statements of the test grammar (:mod:`._grammar`), or probes.
        ``group``: the item whose code this is (its id), or None; a runner that keeps a
        process between suites (the Node runner) shares it only between suites of one group.

        If the sandbox itself dies, stops or hangs during the suite, every test's outcome is
        ``error:SandboxLost`` (the detail says what happened) and the next call restarts it.
        Raises :class:`SandboxError` only when the sandbox cannot be (re)started.
        """
        tests = _check_inputs(code, setup, tests)
        with self._lock:
            self._check_usable()
            suite = (code, setup, tests, group)
            pending = self._take_pending(suite)
            if pending is None:
                request = self._request(*suite)
                if isinstance(request, SuiteResult):
                    return request
                pending = self._write_request(request, suite)
            reply = self._read_reply(pending, len(tests))
        if isinstance(reply, SuiteResult):
            return reply
        raise SandboxError(f"the sandbox server could not run the suite: {reply['error']}")

    def submit(self, code: str, setup: str, tests: Sequence[str], group: str | None = None) -> None:
        """Start the suite that the next :meth:`run` will ask for, which returns its result
        then; a :meth:`run` of another suite first discards it. Raises as :meth:`run` does."""
        tests = _check_inputs(code, setup, tests)
        with self._lock:
            self._check_usable()
            suite = (code, setup, tests, group)
            self._pending = self._take_pending(suite)
            if self._pending is not None:
                return
            request = self._request(*suite)
            if not isinstance(request, SuiteResult):  # else run() gives the same answer
                self._pending = self._write_request(request, suite)

    def _take_pending(self, suite: _SuiteKey) -> _Pending | None:
        """The submitted request if it is ``suite``'s, else None: another suite's reply is read
        and dropped (it keeps the stream in step)."""
        pending, self._pending = self._pending, None
        if pending is not None and pending.suite != suite:
            self._read_reply(pending, len(pending.suite[2]), used=False)
            return None
        return pending

    def _check_usable(self) -> None:
        if self._closed:
            raise SandboxError("this Sandbox is closed; create a new one")
        if os.getpid() != self._owner:
            raise SandboxError(
                f"this Sandbox belongs to pid {self._owner}; create a new Sandbox "
                "(or use run_suite) in each process"
            )

    def _request(
        self, code: str, setup: str, tests: tuple[str, ...], group: str | None
    ) -> bytes | SuiteResult:
        """The next request's frame, or the result of one the checker would refuse."""
        self._requests += 1
        payload = {
            "id": self._requests,
            "code": code,
            "setup": setup,
            "tests": list(tests),
            "limits": self._limits_json,
            "guard": self._guard,
            "group": group,
            **self._request_fields(code, group),
        }
        body = json.dumps(payload).encode("utf-8")
        if len(body) > _wire._MAX_REQUEST:
            detail = f"a request of {len(body)} bytes exceeds the {_wire._MAX_REQUEST} limit"
            return SuiteResult((PROTOCOL_ERROR,) * len(tests), False, detail, "")
        return _wire._HEADER.pack(len(body)) + body

    def _write_request(self, request: bytes, suite: _SuiteKey) -> _Pending:
        """Write ``request`` to the checker, restarting it first if it is gone."""
        for attempt in range(2):
            if self._proc is None or self._proc.poll() is not None:
                self._kill()
                try:
                    self._start()
                except (_ServerGone, ValueError) as exc:
                    self._kill()
                    raise SandboxError(f"could not restart the sandbox server: {exc}") from exc
            proc = self._proc
            assert proc is not None and proc.stdin is not None
            try:
                _write_all(proc.stdin.fileno(), request)
            except OSError as exc:  # died between requests: not this suite's doing
                self._kill()
                if attempt:
                    raise SandboxError(f"the sandbox server failed twice: {exc}") from exc
                continue
            except BaseException:
                self._kill()  # e.g. KeyboardInterrupt mid-write: the checker would wait
                raise
            deadline = time.monotonic() + self.limits.timeout_s + _REPLY_GRACE_S
            return _Pending(suite, self._requests, deadline)
        raise AssertionError("unreachable")

    def _read_reply(
        self, pending: _Pending, n_tests: int, used: bool = True
    ) -> dict[str, Any] | SuiteResult:
        """The reply to ``pending`` (``used=False``: one that nobody asks for any more, read to
        keep the stream in step, its value types left out of the census)."""
        proc = self._proc
        try:
            if proc is None or proc.stdout is None:
                raise _ServerGone("the server is gone")
            reply = _read_frame(proc.stdout.fileno(), pending.deadline, self._max_reply)
            if not isinstance(reply, dict) or reply.get("id") != pending.id:
                raise _ServerGone(f"reply out of step with request {pending.id}")
            if reply.get("fatal"):
                raise _ServerGone(str(reply.get("error")))
            if "error" in reply:
                return reply
            result = _to_result(reply, n_tests)
            if used:
                self._census(reply.get("value_types"))
            return result
        except _ServerGone as exc:
            self._kill()
            detail = f"sandbox lost during this suite ({exc}); restarted for the next one"
            return SuiteResult((LOST,) * n_tests, False, detail, "")
        except BaseException:
            self._kill()  # e.g. KeyboardInterrupt mid-request: a reply may be pending
            raise

    def _census(self, types: Any) -> None:
        if isinstance(types, dict):
            for name, count in types.items():
                if isinstance(name, str) and type(count) is int:
                    self.value_types[name] = self.value_types.get(name, 0) + count

    def close(self) -> None:
        """Stop the sandbox processes (a suite submitted and never asked for is killed).
        Idempotent."""
        with self._lock:
            self._closed = True
            if os.getpid() == self._owner:
                self._end()

    def _end(self) -> None:
        if self._pending is not None:
            self._pending = None
            self._kill()
        else:
            self._stop()

    def __del__(self) -> None:
        try:
            if not self._closed and os.getpid() == self._owner:
                self._end()
        except Exception:  # noqa: BLE001, S110 - interpreter teardown
            pass


# The layers around the processes that run snippets (the zygote and its children), then the
# checker's own (``checker_*``).
LAYERS: tuple[str, ...] = _zygote.LAYER_NAMES + _checker.CHECKER_LAYER_NAMES
_SEEN: list[dict[str, Any]] = []
_WARNED: set[str] = set()


def _isolation_record(raw: Any) -> dict[str, Any]:
    """The checker's isolation report, normalised: every layer present with a bool."""
    raw = raw if isinstance(raw, dict) else {}
    layers = raw.get("layers") if isinstance(raw.get("layers"), dict) else {}
    missing = raw.get("missing") if isinstance(raw.get("missing"), dict) else {}
    record = {
        "layers": {name: bool(layers.get(name)) for name in LAYERS},
        "missing": {},
        "landlock_abi": raw.get("landlock_abi", 0),
        "child_uid": raw.get("child_uid"),
        "scratch_bytes": raw.get("scratch_bytes"),
        "scratch_inodes": raw.get("scratch_inodes"),
        "checker": raw.get("checker", "unknown"),
    }
    for name in LAYERS:
        if not record["layers"][name]:
            record["missing"][name] = str(missing.get(name, "not reported"))
    return record


def _warn_once(missing: dict[str, str]) -> None:
    key = ",".join(sorted(missing))
    if key in _WARNED:
        return
    _WARNED.add(key)
    warnings.warn(
        "sandbox running without "
        + "; ".join(f"{k} ({v})" for k, v in missing.items())
        + " (--execretrieval-isolation strict refuses this; see `execretrieval doctor`)",
        RuntimeWarning,
        stacklevel=3,
    )


def isolation_in_force(limits: Limits = Limits()) -> dict[str, Any]:
    """The sandbox layers in force in this process (JSON-able), for reports and ``doctor``.

    The layers of the sandboxes this process started (a layer counts only if every one had
    it); when it started none (everything came from the cache, or xdist workers ran them on
    this machine), a probe sandbox is started and closed to find out.
    """
    records = list(_SEEN)
    if not records:
        with Sandbox(limits, isolation="best") as probe:
            records = [probe.isolation]
    merged = dict(records[0])
    merged["layers"] = {n: all(r["layers"][n] for r in records) for n in LAYERS}
    merged["missing"] = {}
    for r in records:
        for name, why in r["missing"].items():
            merged["missing"].setdefault(name, why)
    return merged


def _check_inputs(code: object, setup: object, tests: object) -> tuple[str, ...]:
    if not isinstance(code, str) or not isinstance(setup, str):
        raise TypeError("code and setup must be str")
    if isinstance(tests, str):
        raise TypeError("tests must be a sequence of test statements, not a single str")
    given: tuple[object, ...] = tuple(tests)  # type: ignore[arg-type]  # else: TypeError
    strings = tuple(t for t in given if isinstance(t, str))
    if len(strings) != len(given):
        raise TypeError("every test must be a str")
    if not strings:
        raise ValueError("tests is empty: a suite without tests proves nothing")
    return strings


def _to_result(reply: dict[str, Any], n_tests: int) -> SuiteResult:
    """The suite's result from a reply; _ServerGone (a lost sandbox) when it is malformed."""
    try:
        result = SuiteResult.from_json(
            {k: v for k, v in reply.items() if k not in ("id", "value_types")}
        )
    except (TypeError, ValueError) as exc:
        raise _ServerGone(f"malformed reply from the sandbox server: {exc}") from None
    if len(result.outcomes) != n_tests:
        raise _ServerGone(f"server returned {len(result.outcomes)} outcomes for {n_tests} tests")
    # Belt and braces: never trust a `passed` that the outcomes contradict.
    passed = result.passed and all(o == "pass" for o in result.outcomes)
    returned = () if all(o == "pass" for o in result.outcomes) else result.returned
    return SuiteResult(
        result.outcomes, passed, result.detail, result.output, returned, result.values
    )


_SHARED: dict[tuple[Limits, int], Sandbox] = {}
_SHARED_LOCK = threading.Lock()


# The sandboxes of the other languages, by language: each registers its own from above
# (``languages/<name>/``, :func:`register_sandbox`); this layer names no language.
SANDBOXES: dict[str, type[Sandbox]] = {}


def register_sandbox(sandbox: type[Sandbox]) -> None:
    """Make ``sandbox`` the runner of its ``language``'s suites (a language's own module calls
    this when it is imported)."""
    SANDBOXES[sandbox.language] = sandbox


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
