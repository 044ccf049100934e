"""Fork server and child-side suite runner for :mod:`pytest_execretrieval.sandbox`.

Stdlib only. :class:`~pytest_execretrieval.sandbox.Sandbox` starts this file as a script
(``python -I _sandbox_child.py``); the server then forks one child per request. Importing the
module has no side effects, so ``sandbox.py`` can read :data:`RUNNER_VERSION` from here.

Wire protocols:

* caller <-> server: frames of a 4-byte big-endian length + UTF-8 JSON, on the server's
  stdin (requests) and stdout (replies). The server first sends ``{"ready": pid, "version": v}``.
* child -> server: ASCII lines on a private pipe (fd 3 in the child), each written with one
  ``os.write`` (atomic below PIPE_BUF)::

      T <pid> <index> <outcome>     one test finished
      M <pid> <outcome>             setup + candidate code finished ("pass" or "error:<Name>")
      V <pid> <event>               the audit guard blocked <event>
      D <pid> <n_tests> <nonce>     completion record; the nonce is per run
"""

from __future__ import annotations

import builtins
import gc
import json
import os
import resource
import select
import signal
import struct
import sys
import time
import types
from collections.abc import Callable
from typing import Any

RUNNER_VERSION = "2"

# Imported once in the server so that forked children get them for free: what algorithmic
# snippets import most (98% of the import statements in the bundled pool). The list is short on
# purpose: every module in the server makes each fork and each child's exit dearer, and a
# snippet imports a missing module in a millisecond or two. Trimming it from 33 modules, and
# importing `shutil` and `tempfile` (with their bz2, lzma, zlib and random) only where needed,
# made a suite 0.3 ms (9%) cheaper. Not `threading` (nor `subprocess`, `queue`, which import it):
# its after-fork handler alone costs every child 0.3 ms of copy-on-write faults.
PRELOAD = (
    "bisect",
    "calendar",
    "collections",
    "datetime",
    "fractions",
    "functools",
    "heapq",
    "itertools",
    "math",
    "operator",
    "re",
    "string",
)

RESULT_FD = 3
_HEADER = struct.Struct(">I")
_MAX_FRAME = 1 << 30
_MAX_DRAIN_READS = 64
_MAX_VIOLATIONS = 5
_IDLE_POLL_S = 1.0
_CPU_LIMIT_FACTOR = 30
_SCRATCH_BASE: str | None = None  # set by serve()

# --- audit guard tables ----------------------------------------------------------------------

_PROCESS_EVENTS = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "subprocess.Popen",
        "pty.spawn",
        "resource.setrlimit",
        "resource.prlimit",
    }
)
# Dropped from the child's sys.modules, so importing them fires an "import" event that the guard
# blocks. _posixsubprocess.fork_exec raises no audit event, so the child gets a stand-in module
# whose fork_exec is denied: `subprocess` (and asyncio, which imports it) still import, and
# subprocess.Popen is blocked by its own audit event first.
_BLOCKED_IMPORTS = frozenset({"_ctypes", "ctypes"})
_UNLOAD = ("_ctypes", "ctypes", "_posixsubprocess", "subprocess")
# event -> (indices of path arguments, index of dir_fd argument or None)
_PATH_EVENTS: dict[str, tuple[tuple[int, ...], int | None]] = {
    "os.remove": ((0,), 1),
    "os.rmdir": ((0,), 1),
    "os.mkdir": ((0,), 2),
    "os.chmod": ((0,), 2),
    "os.chown": ((0,), 3),
    "os.truncate": ((0,), None),
    "os.utime": ((0,), 3),
    "os.setxattr": ((0,), None),
    "os.removexattr": ((0,), None),
    "os.rename": ((0, 1), None),
    "os.link": ((0, 1), None),
    "os.symlink": ((1,), 2),
    "shutil.copyfile": ((1,), None),
    "shutil.copymode": ((1,), None),
    "shutil.copystat": ((1,), None),
    "shutil.copytree": ((1,), None),
    "shutil.rmtree": ((0,), 1),
    "shutil.move": ((0, 1), None),
    "shutil.chown": ((0,), None),
    "shutil.make_archive": ((0,), None),
    "shutil.unpack_archive": ((1,), None),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class SandboxViolation(PermissionError):
    """Raised inside the child when the audit guard blocks an operation."""


class SandboxImportViolation(ImportError):
    """Raised for a blocked import; an ImportError so optional-import fallbacks still work."""


# --- child side ------------------------------------------------------------------------------


def raises(exc_type: Any, fn: Any, *args: Any, **kwargs: Any) -> bool:
    """True iff ``fn(*args, **kwargs)`` raises ``exc_type``; never propagates anything."""
    try:
        fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - the whole point
        try:
            return isinstance(exc, exc_type)
        except BaseException:  # noqa: BLE001 - a bogus exc_type is just "no"
            return False
    return False


def _clean_name(name: object) -> str:
    text = name if isinstance(name, str) else "Exception"
    text = "".join(c if (c.isascii() and c.isalnum()) or c in "_.:" else "_" for c in text)
    return text[:100] or "Exception"


def _error(exc: BaseException) -> str:
    return "error:" + _clean_name(type(exc).__name__)


class _Reporter:
    """Writes result records; if the channel is gone the child exits without a completion."""

    def __init__(self, pid: int) -> None:
        self._pid = pid
        self._write = os.write
        self._exit = os._exit

    def __call__(self, kind: str, *fields: object) -> None:
        line = " ".join([kind, str(self._pid), *map(str, fields)]) + "\n"
        try:
            self._write(RESULT_FD, line.encode("ascii", "replace"))
        except BaseException:  # noqa: BLE001 - lost channel: die, the server reports it
            self._exit(1)


def _make_guard(root: str, pid: int, report: _Reporter) -> Callable[[str, tuple], None]:
    """Audit hook: no new processes, no killing others, no writes outside ``root``.

    Also puts a stand-in ``_posixsubprocess`` in ``sys.modules``: the real ``fork_exec`` raises
    no audit event of its own.
    """
    realpath, fsdecode, fspath, readlink = os.path.realpath, os.fsdecode, os.fspath, os.readlink
    join, isabs = os.path.join, os.path.isabs
    prefix = root.rstrip("/") + "/"
    own_proc = f"/proc/{pid}/"
    root_name = os.path.basename(root.rstrip("/"))
    reported: list[str] = []

    def fd_path(fd: int) -> str | None:
        try:
            target = readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
        return target if target.startswith("/") else None  # pipes, sockets: not files

    def resolve(path: object, dir_fd: object = None) -> str | None:
        if isinstance(path, int):
            return fd_path(path)
        name = fsdecode(fspath(path))
        if isinstance(dir_fd, int) and dir_fd >= 0 and not isabs(name):
            base = fd_path(dir_fd)
            name = join(base, name) if base else name
        return realpath(name)

    def inside(path: object, dir_fd: object = None) -> bool:
        try:
            resolved = resolve(path, dir_fd)
        except Exception:  # noqa: BLE001 - unresolvable means "deny"
            return False
        return resolved is None or resolved in (root, "/dev/null") or resolved.startswith(prefix)

    def readable(path: object) -> bool:
        # Other processes' /proc entries (environ, mem, cmdline) may hold the caller's secrets.
        # Only the snippet can plant symlinks, and only inside root, so other absolute paths
        # that do not mention /proc need no (costly) resolution.
        if isinstance(path, int):
            return True
        try:
            name = fsdecode(fspath(path))
            if isabs(name) and "proc" not in name and root_name not in name:
                return True
            resolved = resolve(name)
        except Exception:  # noqa: BLE001
            return True  # the open itself will fail
        if resolved is None or not resolved.startswith("/proc/"):
            return True
        part = resolved[6:].split("/", 1)[0]
        return not part.isdigit() or resolved.startswith(own_proc) or resolved == own_proc[:-1]

    def deny(event: str) -> None:
        if event not in reported and len(reported) < _MAX_VIOLATIONS:
            reported.append(event)
            report("V", _clean_name(event))
        raise SandboxViolation(f"sandbox blocked {event}")

    def fork_exec(*args: object, **kwargs: object) -> None:
        deny("_posixsubprocess.fork_exec")

    sys.modules["_posixsubprocess"] = _module("_posixsubprocess", fork_exec=fork_exec)

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            if isinstance(mode, str):
                writing = any(c in mode for c in "wax+")
            else:
                writing = bool((flags or 0) & _WRITE_FLAGS)
            if (writing and not inside(path)) or not readable(path):
                deny(event)
        elif event in _PATH_EVENTS:
            indices, dir_idx = _PATH_EVENTS[event]
            dir_fd = args[dir_idx] if dir_idx is not None and dir_idx < len(args) else None
            if not all(inside(args[i], dir_fd) for i in indices if i < len(args)):
                deny(event)
        elif event in _PROCESS_EVENTS or event.startswith("ctypes."):
            deny(event)
        elif event == "import":
            if args and args[0] in _BLOCKED_IMPORTS:
                # Not reported: to the snippet this is just an unavailable optional module.
                raise SandboxImportViolation(f"sandbox blocked import of {args[0]}")
        elif event == "os.kill":
            if args[0] not in (0, pid, -pid):
                deny(event)
        elif event == "os.killpg":
            if args[0] not in (0, pid):
                deny(event)
        elif event == "sqlite3.connect":
            db = args[0]
            if db != ":memory:" and (str(db).startswith("file:") or not inside(db)):
                deny(event)

    return hook


def _set_limits(limits: dict[str, Any]) -> None:
    # RLIMIT_CPU is only a backstop for a child orphaned by a SIGKILLed server (the wall clock
    # is the server's job), so it is generous enough for many busy threads.
    cpu = int(limits["timeout_s"] * _CPU_LIMIT_FACTOR) + 30
    wanted = {
        resource.RLIMIT_AS: (limits["memory_bytes"],) * 2,
        resource.RLIMIT_FSIZE: (limits["file_size_bytes"],) * 2,
        resource.RLIMIT_NPROC: (limits["max_processes"],) * 2,
        resource.RLIMIT_CORE: (0, 0),
        resource.RLIMIT_CPU: (cpu, cpu + 5),  # SIGXCPU, then SIGKILL
    }
    for which, (soft, hard) in wanted.items():
        _, old_hard = resource.getrlimit(which)
        if old_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, old_hard), min(hard, old_hard)
        resource.setrlimit(which, (soft, hard))


def _child_setup(tmp: str, limits: dict[str, Any], res_w: int, out_w: int) -> tuple[Any, ...]:
    """Isolate the freshly forked child; returns the stdio streams to flush at the end."""
    os.setsid()  # own process group: the server kills it as a whole
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # oversize writes raise OSError instead
    _set_limits(limits)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    os.dup2(res_w, RESULT_FD)
    os.closerange(RESULT_FD + 1, max(os.sysconf("SC_OPEN_MAX"), 1024))
    os.chdir(tmp)
    os.environ["TMPDIR"] = tmp  # where `tempfile` puts files once the snippet imports it
    if "tempfile" in sys.modules:  # the server's own, where /dev/shm is unavailable
        sys.modules["tempfile"].tempdir = tmp
    sys.argv = ["candidate.py"]
    # sys.stdin/stdout/stderr are the server's (unused, empty) text streams on fds 0-2, which
    # now point at /dev/null and the output pipe. A snippet importing `random` gets a fresh seed.
    for name in _UNLOAD:
        sys.modules.pop(name, None)
    return sys.stdout, sys.stderr


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


def _compile(source: str, filename: str) -> Any:
    """A code object, or the ``error:<Name>`` outcome its compilation gives.

    ``dont_inherit``: this module's ``from __future__`` imports must not leak into snippets.
    """
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except BaseException as exc:  # noqa: BLE001 - SyntaxError, ValueError (NUL), RecursionError
        return _error(exc)


class _Suites:
    """Setup and tests compiled once in the server, shared with every child by the fork.

    Consecutive requests (all snippets of one item) usually share a suite, so only the last one
    is kept. Item files were already parsed by the caller; snippet code is compiled in the child.
    """

    def __init__(self) -> None:
        self._key: tuple[str, tuple[str, ...]] | None = None
        self._compiled: tuple[Any, list[Any]] = (None, [])

    def get(self, setup: str, tests: list[str]) -> tuple[Any, list[Any]]:
        key = (setup, tuple(tests))
        if key != self._key:
            tests_compiled = [_compile(src, f"<test {i}>") for i, src in enumerate(tests)]
            self._key, self._compiled = key, (_compile(setup, "<setup>"), tests_compiled)
        return self._compiled


_SUITES = _Suites()


def _run_suite(
    code: str, setup: Any, tests: list[Any], report: _Reporter, nonce: str, streams: tuple
) -> None:
    """``setup`` and each of ``tests``: a code object or a compilation error outcome."""
    # The snippet gets its own copy of builtins (also what `import builtins` returns) and an
    # empty __main__, so patching either cannot change how this runner or the tests behave.
    pristine = dict(vars(builtins))
    snippet_builtins = _module("builtins", **pristine)
    sys.modules["builtins"] = snippet_builtins
    sys.modules["__main__"] = _module("__main__")
    candidate = sys.modules["__candidate__"] = _module("__candidate__")
    namespace = candidate.__dict__
    namespace.update(__builtins__=snippet_builtins, raises=raises)
    module_error = setup if isinstance(setup, str) else None
    if module_error is None:
        try:
            exec(setup, namespace)  # noqa: S102
            exec(compile(code, "<candidate>", "exec", dont_inherit=True), namespace)  # noqa: S102
        except BaseException as exc:  # noqa: BLE001
            module_error = _error(exc)
    report("M", module_error or "pass")
    for i, test in enumerate(tests):
        if module_error is not None:
            outcome = module_error
        elif isinstance(test, str):
            outcome = test
        else:
            scope = dict(namespace)
            scope["__builtins__"] = dict(pristine)
            scope["raises"] = raises  # re-bound so a snippet's own `raises` cannot fool tests
            try:
                exec(test, scope)  # noqa: S102
                outcome = "pass"
            except AssertionError:
                outcome = "fail"
            except BaseException as exc:  # noqa: BLE001
                outcome = _error(exc)
        report("T", i, outcome)
    for stream in streams:
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a closed stream is the snippet's business
            pass
    report("D", len(tests), nonce)


def _child_main(
    req: dict[str, Any], suite: tuple[Any, list[Any]], tmp: str, res_w: int, out_w: int, nonce: str
) -> None:
    streams = _child_setup(tmp, req["limits"], res_w, out_w)
    report = _Reporter(os.getpid())
    if req.get("guard", True):
        sys.addaudithook(_make_guard(tmp, os.getpid(), report))
    _run_suite(req["code"], *suite, report, nonce, streams)


# --- server side -----------------------------------------------------------------------------


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _signal_group(pgid: int, sig: int) -> bool:
    """Signal a process group; False if it no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _drain(fd: int, sink: Callable[[bytes], None]) -> bool:
    """Read what is buffered; True iff EOF was reached (no process holds the write end)."""
    for _ in range(_MAX_DRAIN_READS):
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return False
        if not chunk:
            return True
        sink(chunk)
    return False


def _describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"killed by {name}"
    return f"status {os.waitstatus_to_exitcode(status)}"


class _Records:
    """Parses the child's result records."""

    def __init__(self, pid: int, nonce: str, n_tests: int) -> None:
        self.pid, self.nonce, self.n_tests = pid, nonce, n_tests
        self.outcomes: list[str] = []
        self.module: str | None = None
        self.done = False
        self.issues: list[str] = []
        self.violations: list[str] = []

    def _issue(self, text: str) -> None:
        if text not in self.issues:
            self.issues.append(text)

    def feed(self, data: bytes) -> None:
        *lines, tail = data.split(b"\n")
        if tail:
            self._issue("corrupt result record")
        for raw in lines:
            self._line(raw.decode("ascii", "replace").split(" "))

    def _line(self, parts: list[str]) -> None:
        if len(parts) < 2 or not parts[1].isdigit():
            self._issue("corrupt result record")
            return
        kind, pid, rest = parts[0], int(parts[1]), parts[2:]
        if pid != self.pid:
            self._issue(f"result record from a different process (pid {pid})")
            return
        if self.done:
            self._issue("result record after completion")
        elif kind == "T" and len(rest) == 2 and rest[0] == str(len(self.outcomes)):
            if rest[1] in ("pass", "fail") or rest[1].startswith("error:"):
                self.outcomes.append(rest[1])
            else:
                self._issue("corrupt result record")
        elif kind == "M" and len(rest) == 1 and self.module is None:
            self.module = rest[0]
        elif kind == "V" and len(rest) == 1:
            if rest[0] not in self.violations:
                self.violations.append(rest[0])
        elif kind == "D" and len(rest) == 2 and rest[1] == self.nonce:
            if rest[0] != str(self.n_tests) or len(self.outcomes) != self.n_tests:
                self._issue(
                    f"completion record reports {rest[0]} tests, "
                    f"got {len(self.outcomes)} of {self.n_tests}"
                )
            else:
                self.done = True
        else:
            self._issue("corrupt result record")


class _Capture:
    """Bytes read from the child: result records and capped output.

    Only the output pipe is read while the child runs (a chatty snippet must not block on it).
    Records are read once the child is gone: a pipe holds 64 KiB and a suite's records a few
    hundred bytes, so the server wakes once per suite rather than once per record, and a
    snippet that floods the channel only blocks itself until the timeout.
    """

    def __init__(self, res_r: int, out_r: int, cap: int) -> None:
        self.records, self.output, self.cap = bytearray(), bytearray(), cap
        self.sinks = {res_r: self.records.extend, out_r: self._keep_output}
        self.watched = [out_r]
        for fd in self.sinks:
            os.set_blocking(fd, False)

    def _keep_output(self, chunk: bytes) -> None:
        room = self.cap - len(self.output)
        if room > 0:
            self.output.extend(chunk[:room])

    def read(self, fd: int) -> bool:
        """One read; False at EOF."""
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return True
        self.sinks[fd](chunk)
        return bool(chunk)

    def drain(self) -> bool:
        """Read what is buffered; True iff every pipe hit EOF (nobody holds a write end)."""
        at_eof = [_drain(fd, sink) for fd, sink in self.sinks.items()]  # drain every pipe
        return all(at_eof)


def _kill_and_reap(pid: int) -> int:
    _signal_group(pid, signal.SIGKILL)
    try:
        os.kill(pid, signal.SIGKILL)  # in case it died before setsid()
    except ProcessLookupError:
        pass
    return os.waitpid(pid, 0)[1]


def _watch(pid: int, capture: _Capture, deadline: float) -> tuple[str, int | None, bool]:
    """Follow the child until it exits or times out.

    Returns (how it ended, wait status or None if unknown, whether descendants outlived it).
    """
    pidfd = _pidfd(pid)
    live = list(capture.watched)
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", _kill_and_reap(pid), False
            watch = live + ([pidfd] if pidfd is not None else [])
            wait = remaining if pidfd is not None else min(remaining, 0.005)
            ready, _, _ = select.select(watch, [], [], wait)
            for fd in ready:
                if fd in live and not capture.read(fd):
                    live.remove(fd)
            if pidfd is None:
                reaped, status = os.waitpid(pid, os.WNOHANG)
                if reaped == pid:
                    break
            elif pidfd in ready:
                status = os.waitpid(pid, 0)[1]
                break
    finally:
        if pidfd is not None:
            os.close(pidfd)
    # The main child is reaped: a live process group or a pipe still open for writing means
    # that something it started outlived it.
    all_eof = capture.drain()
    return "exited", status, _signal_group(pid, 0) or not all_eof


def _supervise(req: dict[str, Any], tmp: str) -> dict[str, Any]:
    limits = req["limits"]
    suite = _SUITES.get(req["setup"], req["tests"])
    nonce = os.urandom(8).hex()
    res_r, res_w = os.pipe()
    out_r, out_w = os.pipe()
    deadline = time.monotonic() + float(limits["timeout_s"])
    pid = os.fork()
    if pid == 0:  # child: never returns into the server loop
        try:
            _child_main(req, suite, tmp, res_w, out_w, nonce)
            os._exit(0)
        finally:
            os._exit(70)
    os.close(res_w)
    os.close(out_w)
    try:
        capture = _Capture(res_r, out_r, int(limits["output_bytes"]))
        ended, status, left_children = _watch(pid, capture, deadline)
        capture.drain()
    except BaseException:
        try:
            _kill_and_reap(pid)
        except ChildProcessError:
            pass
        raise
    finally:
        _signal_group(pid, signal.SIGKILL)  # always, whatever happened
        os.close(res_r)
        os.close(out_r)
    records = _Records(pid, nonce, len(req["tests"]))
    records.feed(bytes(capture.records))
    reply = _verdict(records, ended, status, left_children, float(limits["timeout_s"]))
    reply["output"] = bytes(capture.output).decode("utf-8", "replace")
    return reply


def _verdict(
    records: _Records, ended: str, status: int | None, left_children: bool, timeout: float
) -> dict[str, Any]:
    n_tests = records.n_tests
    outcomes = records.outcomes[:n_tests]
    done = len(outcomes)
    issues: list[str] = []
    if ended == "timeout":
        if records.module is None:
            where = "setup/module code"
        else:
            where = f"test {done + 1} of {n_tests}" if done < n_tests else "completion"
        issues.append(f"timed out after {timeout} s during {where}")
        outcomes += ["timeout"] * (n_tests - done)
    elif not records.done:
        how = "status unknown" if status is None else _describe_status(status)
        if done < n_tests:
            issues.append(f"process exited early ({how}) after {done} of {n_tests} tests")
        else:
            issues.append(f"process exited without a completion record ({how})")
    outcomes += ["error:EarlyExit"] * (n_tests - len(outcomes))
    if records.module not in (None, "pass"):
        issues.append(f"setup/candidate code raised {records.module.removeprefix('error:')}")
    issues += records.issues
    if left_children:
        issues.append("left child processes")
    if records.violations:
        issues.append("blocked " + ", ".join(records.violations))
    proven = records.done and ended == "exited" and not (left_children or records.issues)
    return {
        "outcomes": outcomes,
        "passed": proven and all(o == "pass" for o in outcomes),
        "detail": "; ".join(issues),
    }


def _rmtree(path: str) -> None:
    import shutil

    def make_writable(func: Any, target: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
            func(target)
        except OSError:
            pass

    shutil.rmtree(path, onerror=make_writable)


def _scratch_base() -> str:
    # tmpfs when available: on some VMs a directory create/remove on disk costs milliseconds.
    # Resolved once: the write guard compares resolved paths against the scratch directory.
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return os.path.realpath(shm)
    import tempfile

    return os.path.realpath(tempfile.gettempdir())


def _make_scratch() -> str:
    """A fresh private directory (what tempfile.mkdtemp does, minus its name generator)."""
    base = _SCRATCH_BASE or _scratch_base()
    while True:
        path = os.path.join(base, "execretrieval-" + os.urandom(8).hex())
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue


def handle(req: dict[str, Any]) -> dict[str, Any]:
    """Run one request in a forked child; returns the reply frame."""
    tmp = _make_scratch()
    try:
        return _supervise(req, tmp)
    finally:
        try:
            os.rmdir(tmp)  # the usual case: the snippet left nothing behind
        except OSError:
            _rmtree(tmp)


def _read_exact(fd: int, n: int, parent: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        ready, _, _ = select.select([fd], [], [], _IDLE_POLL_S)
        if not ready:
            if os.getppid() != parent:
                return None  # orphaned: the caller is gone
            continue
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf.extend(chunk)
    return bytes(buf)


def _read_frame(fd: int, parent: int) -> Any:
    head = _read_exact(fd, _HEADER.size, parent)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    if size > _MAX_FRAME:
        raise ValueError(f"request frame of {size} bytes is too large")
    body = _read_exact(fd, size, parent)
    return None if body is None else json.loads(body)


def write_frame(fd: int, obj: Any) -> None:
    data = json.dumps(obj).encode("utf-8")
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _terminate(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds _supervise: kills the child, removes its temp dir


def serve() -> None:
    """Server loop: one request frame in, one reply frame out, until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminate)
    # The children inherit these streams (the server itself only uses raw fds 0 and 1).
    text = {"encoding": "utf-8", "errors": "backslashreplace", "line_buffering": True}
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        stream.reconfigure(**text)
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    global _SCRATCH_BASE
    _SCRATCH_BASE = _scratch_base()
    gc.collect()
    gc.freeze()  # keep the preloaded heap shared with the forked children
    parent = os.getppid()
    write_frame(1, {"ready": os.getpid(), "version": RUNNER_VERSION})
    while True:
        req = _read_frame(0, parent)
        if req is None:
            return
        try:
            reply = handle(req)
        except Exception as exc:  # noqa: BLE001 - report, keep serving
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        reply["id"] = req.get("id")  # lets the caller detect a desynchronised stream
        write_frame(1, reply)


if __name__ == "__main__":
    serve()
