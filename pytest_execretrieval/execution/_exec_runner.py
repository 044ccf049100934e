"""What every runner of another language shares: the checker's plan of JSON calls, and a zygote
that serves suites with processes it execs.

Standard library only, like its siblings (:mod:`._sandbox_child` has the overview). A language's
runner module (``languages/<name>/_runner.py``, loaded by path in the checker process:
``_sandbox_child._import_runner``) names its ``Checker`` (:class:`_Checker` with its exception
names) and its ``Flavour``, whose zygote is an :class:`ExecZygote`: the Node runner's starts node
processes that serve one item's suites, the Go runner's builds and starts a binary per suite.

* The **checker** (:class:`_Checker`) parses each test in the closed grammar with the
  language's error classes, computes the literals, and sends the zygote only each call's
  entry-point name and its arguments as JSON text (:func:`._grammar.json_arguments`; a test
  whose arguments are not JSON-representable is ``error:GrammarError``). It decodes the values
  the runner returns and decides every verdict; no verdict is ever computed in the runner, and
  the runner never sees an expected value.
* The **zygote** (:class:`ExecZygote`) holds what the processes it execs share: their rlimits
  (the child's, with room for a runtime's reservations and threads), their start-up note, the
  suite's wall clock (SIGKILL, never reused), the processes a suite left (killed) and the
  scratch directory (emptied after every suite). A runner process speaks the child protocol on
  fixed fds: :data:`RUN_FD` run frames in, :data:`REPLY_FD` frames to the checker,
  :data:`ZYGOTE_FD` one byte ``r`` once ready and ``d`` after each suite.
"""

from __future__ import annotations

import os
import select
import signal
import time

TYPE_CHECKING = False  # type checkers take it as True; typing is not imported in the sandbox
if TYPE_CHECKING:
    from typing import Any

try:
    from . import _checker, _child, _grammar, _wire, _zygote
except ImportError:  # top-level modules in the sandbox, with this directory on sys.path
    import _checker  # type: ignore[no-redef, import-not-found]
    import _child  # type: ignore[no-redef, import-not-found]
    import _grammar  # type: ignore[no-redef, import-not-found]
    import _wire  # type: ignore[no-redef, import-not-found]
    import _zygote  # type: ignore[no-redef, import-not-found]

RUN_FD, REPLY_FD, ZYGOTE_FD = 3, 4, 5  # a runner process's fds
_READY_S = 30.0  # a runner process that has not said it is ready by then is lost


def elf_interpreter(path: str) -> str | None:
    """The program interpreter (``PT_INTERP``) a 64-bit little-endian ELF file names, if any."""
    import struct

    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            if head[:6] != b"\x7fELF\x02\x01":
                return None
            phoff, phentsize, phnum = (
                struct.unpack_from("<Q", head, 32)[0],
                *struct.unpack_from("<HH", head, 54),
            )
            for i in range(min(phnum, 256)):
                fh.seek(phoff + i * phentsize)
                kind, _, offset, _, _, size = struct.unpack("<IIQQQQ", fh.read(40))
                if kind == 3:  # PT_INTERP
                    fh.seek(offset)
                    return fh.read(min(size, 4096)).rstrip(b"\0").decode("utf-8", "replace")
    except (OSError, struct.error):
        return None
    return None


# --- checker side -------------------------------------------------------------------------------


class _Plan:
    """One suite's tests for a runner: like :class:`._checker._Plan`, but each call goes as
    ``[kind, entry-point name, arguments as JSON text]`` and no call's source is sent."""

    exceptions: frozenset[str] = frozenset()  # what ``raises`` may name: the language's

    def __init__(self, tests: list[str]) -> None:
        self.tests: list[tuple[Any, Any] | str] = []
        self.calls: list[list[str] | None] = []
        for source in tests:
            try:
                test = _grammar.parse_test(source, probe=True, exceptions=self.exceptions)
                args = _grammar.json_arguments(test.call)
                planned = (test, _grammar.expected_value(test))
            except Exception as exc:  # noqa: BLE001 - SyntaxError, GrammarError, a literal's own
                self.tests.append(_wire._error(exc))
                self.calls.append(None)
                continue
            self.tests.append(planned)
            kind = "call" if test.form == _grammar.RAISES else "value"
            self.calls.append([kind, test.call.function, args])
        self.probes = any(
            not isinstance(t, str) and t[0].form == _grammar.PROBE for t in self.tests
        )


class _Checker(_checker._Checker):
    """The checker's request handling for a runner: plan, send code and calls, decide."""

    plan_class: type[_Plan] = _Plan
    build_s = 0.0  # what the zygote may spend before the suite's clock starts (a build)

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        plan: Any = self.plan(req["tests"])  # a _Plan (plan_class)
        limits = req["limits"]
        self.link.reset(int(limits["output_bytes"]))
        group = req.get("group")
        run = {"code": req["code"], "calls": plan.calls, "limits": limits, "group": group}
        if "batch" in req:  # the group's codes, for a runner that builds them together
            run["batch"] = req["batch"]
        _wire._send(self.pipes.zc_w, {"run": run})
        suite = _checker._Suite(self.link, plan, float(limits["timeout_s"]))
        suite.deadline += self.build_s
        reply = suite.run()
        ended = self.link.exit or {}
        if ended.get("exit") == "lost":  # the sandbox failed, not the snippet
            said = bytes(self.link.output[-300:]).decode("utf-8", "replace").strip()
            why = str(ended.get("why", "the runner did not start"))
            raise _checker._ZygoteGone(f"{why}: {said!r}" if said else why)
        return reply


# --- zygote side ----------------------------------------------------------------------------------


class _Proc:
    """One runner process: its pid, pidfd, the write end of its run pipe, the read end of its
    notes to the zygote."""

    __slots__ = ("pid", "pidfd", "run_w", "note_r", "ready", "group", "suites")

    def __init__(self, pid: int, run_w: int, note_r: int) -> None:
        self.pid, self.run_w, self.note_r = pid, run_w, note_r
        self.pidfd = _zygote._pidfd(pid)
        self.ready = False
        self.group: str | None = None  # the item whose suites it serves (None: one suite)
        self.suites = 0


class ExecZygote:
    """The shared part of a zygote that serves suites with processes it execs (see the module
    docs); a runner's zygote adds how it starts them and serves a suite."""

    as_headroom = 0  # RLIMIT_AS beyond the memory limit: what the runtime reserves unused
    threads = 0  # RLIMIT_NPROC beyond the limit: the runtime's own threads

    def __init__(self, pipes: _wire.Pipes, layers: Any, limits: dict[str, Any]) -> None:
        self.pipes, self.layers, self.limits = pipes, layers, limits
        self.current: _Proc | None = None
        self.spare: _Proc | None = None
        self.open_max = max(os.sysconf("SC_OPEN_MAX"), 1024)
        self.rlimits = [self._rlimit(w, pair) for w, pair in _child._child_rlimits(limits)]

    def _rlimit(self, which: int, pair: tuple[int, int]) -> tuple[int, tuple[int, int]]:
        import resource

        soft, hard = pair
        if which == resource.RLIMIT_AS and soft:
            soft = hard = soft + self.as_headroom
        elif which == resource.RLIMIT_NPROC and soft:
            soft = hard = soft + self.threads
        _, old = resource.getrlimit(which)
        if old != resource.RLIM_INFINITY:
            soft, hard = min(soft, old), min(hard, old)
        return which, (soft, hard)

    def _ready(self, proc: _Proc) -> bool:
        """Wait for a fresh process's ready note (its start-up is not the suite's time)."""
        if not proc.ready:
            ready = select.select([proc.note_r], [], [], _READY_S)[0]
            proc.ready = bool(ready) and os.read(proc.note_r, 1) == b"r"
            if not proc.ready:
                status = _zygote._describe_status(self._kill(proc))
                os.write(self.pipes.out_w, f"the runner exited at start-up ({status})".encode())
        return proc.ready

    def _wait(self, proc: _Proc, deadline: float) -> tuple[str, int]:
        """Until the process says the suite is done ("done"), exits ("exited"), the wall clock runs
        out ("timeout") or the checker aborts the suite ("aborted")."""
        watch = [proc.note_r, self.pipes.zc_r] + ([proc.pidfd] if proc.pidfd is not None else [])
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", self._kill(proc)
            # Without a pidfd, its death still shows: its note pipe reaches EOF.
            ready = select.select(watch, [], [], remaining)[0]
            if proc.note_r in ready:
                note = os.read(proc.note_r, 1)
                if note == b"d":
                    return "done", 0
                return "exited", self._kill(proc)  # EOF: it died (or a note out of protocol)
            if self.pipes.zc_r in ready and self._abort_requested():
                return "aborted", self._kill(proc)
            if proc.pidfd is not None and proc.pidfd in ready:
                return "exited", self._kill(proc)

    def _abort_requested(self) -> bool:
        req = _wire._recv(self.pipes.zc_r)
        if req is None:
            raise EOFError("the checker is gone")
        return "abort" in req

    def _kill(self, proc: _Proc) -> int:
        """SIGKILL the process (its session too) and reap it; its wait status."""
        _zygote._signal_group(proc.pid, signal.SIGKILL)
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            status = os.waitpid(proc.pid, 0)[1]
        except ChildProcessError:
            status = 0
        proc.pid = -1
        return status

    def _retire(self, proc: _Proc | None) -> None:
        if proc is None:
            return
        if proc.pid > 0:
            self._kill(proc)
        for fd in (proc.run_w, proc.note_r, proc.pidfd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _strays(self) -> bool:
        """Kill and reap every process in our PID namespace that is none of our runner
        processes (none can be made: a child of a runner needs fork, which seccomp denies)."""
        if not self.layers.pid_namespace:
            return False
        ours = {1} | {p.pid for p in (self.current, self.spare) if p is not None}
        left = False
        try:
            pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
        except OSError:
            pids = []
        for pid in pids:
            if pid not in ours:
                left = True
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        while left:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        return left

    def _clean_scratch(self) -> str:
        return _zygote._Zygote._clean_scratch(self)  # type: ignore[arg-type]  # same fields
