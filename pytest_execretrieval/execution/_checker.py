"""The checker: plans each test, sends the child only the calls, and decides each verdict.

Standard library only (and :mod:`._grammar`: a test is data of a closed grammar, a call of the
entry point compared with a literal; the literal is computed by the grammar's own interpreter,
nothing of the test is compiled or executed here). It decides each test from the decoded value
the child's call returned (:class:`_Suite`), never runs snippet or test code and never forks
after startup; :class:`_CheckerLayers` confines it as if it did, since a child's frames reach it.
It does compile each snippet (``compile`` runs nothing) and sends the code object marshalled, so
that the forked child, for which compiling is dear, only loads it (:func:`._child.marshalled`).
"""

from __future__ import annotations

import os
import resource
import select
import signal
import time
from collections.abc import Callable

TYPE_CHECKING = False  # type checkers take it as True; typing is not imported in the sandbox
if TYPE_CHECKING:
    from typing import Any

try:
    from . import _grammar
except ImportError:  # a top-level module in the sandbox, with this directory on sys.path
    import _grammar  # type: ignore[no-redef, import-not-found]

try:
    from . import _wire
except ImportError:  # a top-level module in the sandbox, with this directory on sys.path
    import _wire  # type: ignore[no-redef, import-not-found]

try:
    from . import _child
except ImportError:  # a top-level module in the sandbox, with this directory on sys.path
    import _child  # type: ignore[no-redef, import-not-found]

try:
    from . import _zygote
except ImportError:  # a top-level module in the sandbox, with this directory on sys.path
    import _zygote  # type: ignore[no-redef, import-not-found]

_ZYGOTE_GRACE_S = 25.0  # on top of the suite timeout (the caller allows 30 s): heavy load
UNSUPPORTED = "error:UnsupportedValue"


# --- checker -----------------------------------------------------------------------------------


class _ChildGone(Exception):
    """The child ended (or was killed) before answering."""


class _ProtocolError(Exception):
    """The child sent something that is not a well-formed answer."""


class _Link:
    """The checker's ends of the pipes to the children and the zygote."""

    def __init__(self, pipes: _wire.Pipes) -> None:
        self.pipes = pipes
        for fd in (pipes.rep_r, pipes.out_r, pipes.zr_r):
            os.set_blocking(fd, False)
        self.rep = _wire._Frames(_wire._MAX_VALUE_FRAME + 4096)
        self.zr = _wire._Frames(_wire._MAX_ZYGOTE_FRAME)
        self.pending: list[Any] = []
        self.reset(0)

    def reset(self, cap: int) -> None:
        self.cap = cap
        self.output = bytearray()
        self.violations: list[str] = []
        self.exit: dict[str, Any] | None = None
        self.pending = []
        self.issues: list[str] = []
        # Set when the child broke the wire protocol (a frame too large, unparsable or
        # malformed, a value the codec refuses): then nothing it said counts, the zygote is
        # told to end the suite at once, and its outcomes are PROTOCOL_ERROR.
        self.protocol: str | None = None
        self.aborted = False
        self.frames = 0

    def broken(self, why: str) -> None:
        """Record a protocol error (the first one is what the detail names)."""
        if self.protocol is None:
            self.protocol = why
            self.issues.append(f"corrupt reply from the child ({why})")

    def _keep_output(self, chunk: bytes) -> None:
        room = self.cap - len(self.output)
        if room > 0:
            self.output.extend(chunk[:room])

    def _read(self, fd: int) -> bytes | None:
        try:
            return os.read(fd, 1 << 16)
        except BlockingIOError:
            return None

    def pump(self, timeout: float) -> None:
        """Wait up to ``timeout`` for data on any pipe and take in what is there."""
        watch = [self.pipes.rep_r, self.pipes.out_r, self.pipes.zr_r]
        ready = select.select(watch, [], [], max(timeout, 0))[0]
        for fd in ready:
            chunk = self._read(fd)
            if fd == self.pipes.zr_r:
                if chunk == b"":
                    raise _ZygoteGone("the zygote exited")
                if chunk:
                    self.zr.feed(chunk)
                    frame = self.zr.pop()
                    if frame is not None:
                        self.exit = frame
            elif fd == self.pipes.out_r and chunk:
                self._keep_output(chunk)
            elif chunk:
                self.rep.feed(chunk)
                self._frames()

    def _frames(self) -> None:
        while True:
            if self.protocol is not None:  # nothing it says counts any more
                self.rep.buf.clear()
                return
            try:
                frame = self.rep.pop()
            except ValueError as exc:
                self.broken(str(exc))
                self.rep.buf.clear()
                return
            if frame is None:
                return
            self.frames += 1
            if self.frames > _wire._MAX_FRAMES:
                self.broken(f"more than {_wire._MAX_FRAMES} frames in one suite")
                return
            if isinstance(frame, dict) and "viol" in frame:
                name = _wire._clean_name(frame["viol"])
                if name not in self.violations and len(self.violations) < _wire._MAX_VIOLATIONS:
                    self.violations.append(name)
            else:
                self.pending.append(frame)

    def child_frame(self, deadline: float) -> dict[str, Any]:
        """The child's next frame; _ChildGone once the zygote reports the suite's end."""
        while True:
            if self.protocol is not None:
                raise _ProtocolError(self.protocol)
            if self.pending:
                frame = self.pending.pop(0)
                if not isinstance(frame, dict):
                    raise _ProtocolError("a reply that is not an object")
                return frame
            if self.exit is not None:
                self._drain(self.pipes.rep_r, self.rep.feed)
                self._frames()
                if not self.pending:
                    raise _ChildGone
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _ZygoteGone("the zygote did not report the end of the suite in time")
            self.pump(remaining)

    def wait_exit(self, deadline: float) -> dict[str, Any]:
        if self.protocol is not None and self.exit is None and not self.aborted:
            self.aborted = True
            _wire._send(self.pipes.zc_w, {"abort": 1})
        while self.exit is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _ZygoteGone("the zygote did not report the end of the suite in time")
            self.pump(remaining)
        return self.exit

    def _drain(self, fd: int, sink: Callable[[bytes], Any]) -> None:
        for _ in range(4096):
            chunk = self._read(fd)
            if not chunk:
                return
            sink(chunk)

    def finish(self) -> None:
        """After the zygote reported the end: take the rest, discard what nobody will read."""
        self._drain(self.pipes.out_r, self._keep_output)
        self._drain(self.pipes.rep_r, self.rep.feed)
        self._frames()
        self.rep.buf.clear()
        self.pending = []


class _ZygoteGone(Exception):
    """The zygote died or hung: the checker cannot go on."""


class _Plan:
    """One suite's tests, planned once in the checker: each parsed into the grammar's data
    (:class:`_grammar.Test`) with its literals computed, or the ``error:<Name>`` outcome a test
    outside the grammar gets. The child is sent each test's call and nothing else."""

    serial = 0  # the checker's number for it (:meth:`_Checker.plan`)

    def __init__(self, tests: list[str]) -> None:
        self.tests: list[tuple[Any, Any] | str] = []
        for source in tests:
            try:
                test = _grammar.parse_test(source, probe=True)
                self.tests.append((test, _grammar.expected_value(test)))
            except Exception as exc:  # noqa: BLE001 - SyntaxError, GrammarError, a literal's own
                self.tests.append(_wire._error(exc))
        self.calls = [
            None if isinstance(t, str) else [_grammar.call_kind(t[0]), t[0].call.source]
            for t in self.tests
        ]
        self.probes = any(
            not isinstance(t, str) and t[0].form == _grammar.PROBE for t in self.tests
        )


class _Suite:
    """Decides one suite's tests from what one child's calls gave."""

    def __init__(self, link: _Link, plan: _Plan, timeout: float) -> None:
        self.link, self.plan, self.timeout = link, plan, timeout
        self.deadline = time.monotonic() + timeout + _ZYGOTE_GRACE_S
        self.outcomes: list[str] = []
        self.issues: list[str] = []
        self.phase = "setup/module code"
        self.module: str | None = None
        self.done = False
        self.types: dict[str, int] = {}  # type names of the decoded values, nested ones too
        self.returned: list[str] = []  # per evaluated test, see returned_text
        self.values: list[Any] = []  # per evaluated test: a probe's answer (see _probe_value)

    def run(self) -> dict[str, Any]:
        link = self.link
        try:
            self.module = str(self._frame().get("m"))
            for i, planned in enumerate(self.plan.tests):
                self.phase = f"test {i + 1} of {len(self.plan.tests)}"
                self.outcomes.append(self._outcome(i, planned))
            self.phase = "completion"
            self.done = self._frame().get("d") == 1
        except _ChildGone:
            pass
        except _ProtocolError as exc:
            link.broken(str(exc))
        exit_info = link.wait_exit(self.deadline)
        link.finish()
        return self._verdict(exit_info)

    def _frame(self) -> dict[str, Any]:
        return self.link.child_frame(self.deadline)

    def _outcome(self, i: int, planned: tuple[Any, Any] | str) -> str:
        """Test ``i``'s outcome; what its call gave goes to :attr:`returned` unless it passed."""
        answer = None
        if self.module not in (None, "pass"):
            outcome = self.module
        elif isinstance(planned, str):
            outcome = planned
        else:
            frame = self._frame()
            if frame.get("e") != i or not isinstance(frame.get("r"), dict):
                raise _ProtocolError(f"expected the answer of test {i + 1}")
            answer = self._answer(frame["r"])
            outcome = self._decide(i, *planned, answer)
        self.returned.append("" if outcome == "pass" or answer is None else returned_text(answer))
        probe = not isinstance(planned, str) and planned[0].form == _grammar.PROBE
        self.values.append(_probe_value(answer) if probe and answer else None)
        return outcome

    def _answer(self, reply: dict[str, Any]) -> tuple[Any, ...]:
        """The child's answer as plain data: ``("v", value)`` (decoded), ``("u", type name)``,
        ``("x", exception name, mro)`` or ``("ok", raised, exception name, mro)``."""
        if "v" in reply:
            try:
                value = _wire.decode(reply["v"])
            except ValueError as exc:
                raise _ProtocolError(str(exc)) from None
            _count_types(value, self.types)
            return ("v", value)
        if "u" in reply:
            return ("u", str(reply["u"])[:200])
        mro = reply.get("mro", [])
        if not isinstance(mro, list) or not all(isinstance(m, str) for m in mro):
            raise _ProtocolError("malformed exception classes")
        if "ok" in reply:
            raised = _wire._clean_name(mro[0].rpartition(".")[2]) if mro else "Exception"
            return ("ok", not reply["ok"], raised, mro)
        if not isinstance(reply.get("x"), str):
            raise _ProtocolError("an answer that is neither a value nor an exception")
        return ("x", _wire._clean_name(reply["x"]), mro)

    def _decide(self, i: int, test: Any, expected: Any, answer: tuple[Any, ...]) -> str:
        kind = answer[0]
        if kind == "x":
            return "error:" + answer[1]  # the call (or finding the entry point) raised
        if test.form == _grammar.RAISES:
            if kind != "ok":
                raise _ProtocolError("a value where a raise was asked for")
            return (
                "pass"
                if _grammar.raised_matches(test, answer[3] if answer[1] else None)
                else "fail"
            )
        if kind == "u":
            self.issues.append(f"test {i + 1}: a value of unsupported type {answer[1]}")
            return UNSUPPORTED
        if kind != "v":
            raise _ProtocolError("a raise where a value was asked for")
        if test.form == _grammar.PROBE:
            return "pass"
        try:
            return "pass" if _grammar.judge(test, expected, answer[1]) else "fail"
        except Exception as exc:  # noqa: BLE001 - a wrapper or comparison failed, as in Python
            return _wire._error(exc)

    def _verdict(self, exit_info: dict[str, Any]) -> dict[str, Any]:
        n_tests = len(self.plan.tests)
        outcomes = self.outcomes[:n_tests]
        done = len(outcomes)
        issues: list[str] = []
        ended, status = exit_info.get("exit"), exit_info.get("status")
        if ended == "timeout":
            issues.append(f"timed out after {self.timeout} s during {self.phase}")
            outcomes += ["timeout"] * (n_tests - done)
        elif not self.done:
            how = (
                "status unknown"
                if not isinstance(status, int)
                else _zygote._describe_status(status)
            )
            if done < n_tests:
                issues.append(f"process exited early ({how}) after {done} of {n_tests} tests")
            else:
                issues.append(f"process exited without a completion record ({how})")
        outcomes += ["error:EarlyExit"] * (n_tests - len(outcomes))
        if self.module not in (None, "pass"):
            issues.append(f"setup/candidate code raised {self.module.removeprefix('error:')}")
        issues += self.issues + self.link.issues
        if exit_info.get("left"):
            issues.append("left child processes")
        if self.link.violations:
            issues.append("blocked " + ", ".join(self.link.violations))
        if exit_info.get("scratch"):
            issues.append(str(exit_info["scratch"]))
        proven = (
            self.done
            and ended == "exited"
            and not exit_info.get("left")
            and not (self.issues or self.link.issues)
        )
        return {
            "outcomes": outcomes,
            "passed": proven and all(o == "pass" for o in outcomes),
            "detail": "; ".join(issues),
            "output": bytes(self.link.output).decode("utf-8", "replace"),
            "value_types": self.types,
            "returned": self.returned[:n_tests] + [""] * (n_tests - len(self.returned)),
        } | (
            {"values": self.values[:n_tests] + [None] * (n_tests - len(self.values))}
            if self.plan.probes
            else {}
        )


def _probe_value(answer: tuple[Any, ...]) -> list[Any]:
    """A probe's answer for the caller: ``["value", encoded]``, ``["raises", name]`` (an
    ``Exception``, or a JavaScript ``Error``: the Node runner's class chains end in
    ``builtins.Error``), ``["error", name]`` (any other exception, or a JavaScript non-Error
    throw) or ``["unsupported", type]``."""
    if answer[0] == "v":
        return ["value", _wire.encode(answer[1])]
    if answer[0] == "u":
        return ["unsupported", answer[1]]
    raised = "builtins.Exception" in answer[2] or "builtins.Error" in answer[2]
    return ["raises" if raised else "error", answer[1]]


RETURNED_CHARS = 200  # one test's returned_text at most
_VALUE_CHARS = 80  # one value's repr in it at most
_REPR: Any = None  # the checker's reprlib.Repr, made on first use


def returned_text(answer: tuple[Any, ...]) -> str:
    """What the snippet's call gave one test, for a failure message (checker side, plain
    values only): ``returned 5`` (a truncated repr of the decoded value, before the test's
    subscripts and wrappers), ``returned a value of unsupported type T``, ``raised ValueError``
    or, for ``raises``, ``raised nothing``; at most :data:`RETURNED_CHARS` characters."""
    kind = answer[0]
    if kind == "v":
        what = "returned " + short_repr(answer[1])
    elif kind == "u":
        what = f"returned a value of unsupported type {answer[1]}"
    elif kind == "x":
        what = f"raised {answer[1]}"
    else:
        what = f"raised {answer[2]}" if answer[1] else "raised nothing"
    return _cut(what, RETURNED_CHARS)


def short_repr(value: Any) -> str:
    """``repr`` of a decoded value, containers and long strings abbreviated with ``...``."""
    global _REPR
    if _REPR is None:
        import reprlib  # the checker only: not preloaded into the zygote and its children

        _REPR = reprlib.Repr()
        _REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 3, 40, 40, 40
        _REPR.maxtuple = _REPR.maxlist = _REPR.maxset = _REPR.maxfrozenset = _REPR.maxdeque = 6
        _REPR.maxdict = 4
    try:
        text = _REPR.repr(value)
    except BaseException as exc:  # noqa: BLE001 - e.g. RecursionError on a self-nesting list
        text = f"<{type(value).__name__}: repr raised {type(exc).__name__}>"
    return _cut(text, _VALUE_CHARS)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _count_types(value: Any, counts: dict[str, int], budget: int = 1000) -> None:
    """Count the type names in a decoded value (containers' elements too, up to ``budget``)."""
    todo = [value]
    while todo and budget > 0:
        item = todo.pop()
        budget -= 1
        name = type(item).__name__
        counts[name] = counts.get(name, 0) + 1
        if isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset) or type(item).__name__ == "deque":
            todo.extend(item)


class _Checker:
    """Serves requests. ``limits``: the Sandbox's, those of the zygote's spare children.

    A suite's run frame goes straight to the waiting spare child on the go pipe, so the zygote
    is not a hop on the way in: it is told the suite began (the limits, and setup and calls for
    its compile cache) at the same time. The write never blocks: the pipe is empty between
    suites (the zygote drains what a child left unread) and the frame fits in it. A run frame
    that does not fit, or other limits, goes through the zygote, which forks a child for it.
    """

    plan_class: Any = _Plan  # the Node runner plans its own way (_node._NodePlan)

    def __init__(self, pipes: _wire.Pipes, limits: dict[str, Any]) -> None:
        import fcntl

        self.pipes = pipes
        self.limits = limits
        self.link = _Link(pipes)
        self._plans: dict[tuple[str, ...], _Plan] = {}
        self._serial = 0
        try:
            self.go_room = fcntl.fcntl(pipes.go_w, fcntl.F_GETPIPE_SZ)
        except OSError:
            self.go_room = select.PIPE_BUF

    def plan(self, tests: list[str]) -> _Plan:
        key = tuple(tests)
        plan = self._plans.pop(key, None)
        if plan is None:
            plan = self.plan_class(tests)
            self._serial += 1
            plan.serial = self._serial  # names its calls to the zygote and the children
            if len(self._plans) >= _wire._PLANS_KEPT:
                del self._plans[next(iter(self._plans))]  # least recently used
        self._plans[key] = plan
        return plan

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        plan = self.plan(req["tests"])
        limits = req["limits"]
        run = {
            "code": req["code"],
            "marshal": _child.marshalled(req["code"]),
            "setup": req["setup"],
            "calls": plan.calls,
            "plan": plan.serial,
            "limits": limits,
            "guard": req.get("guard", True),
        }
        self.link.reset(int(limits["output_bytes"]))
        frame = _wire._frame(run)
        if limits == self.limits and len(frame) <= self.go_room:
            _wire._write_all(self.pipes.go_w, frame)
            told = {"direct": 1, "limits": limits}
            told.update((k, run[k]) for k in ("setup", "calls", "plan"))
            _wire._send(self.pipes.zc_w, {"run": told})
        else:
            _wire._send(self.pipes.zc_w, {"run": run})
        return _Suite(self.link, plan, float(limits["timeout_s"])).run()


# --- the checker's own confinement and CPU budget ------------------------------------------------

CHECKER_LAYER_NAMES = tuple(
    "checker_" + name
    for name in (
        "user_namespace",
        "pid_namespace",
        "net_namespace",
        "ipc_namespace",
        "mount_namespace",
        "landlock",
        "seccomp",
        "no_new_privs",
        "unprivileged_uid",
        "parent_death_signal",
        "cpu_limit",
    )
)
PROTOCOL_ERROR = "error:ProtocolError"  # every outcome of a suite whose child broke the wire
_CPU_BACKSTOP_S = 2  # RLIMIT_CPU ends the checker this long after its per-suite budget


def _write_maps(pid: int) -> bool:
    """Map root and nobody (or, unprivileged, just ourselves) into ``pid``'s new user namespace
    (``pid`` as our /proc names it)."""
    uid, gid = os.geteuid(), os.getegid()
    try:
        if uid == 0:
            maps = {"uid_map": "0 0 1\n65534 65534 1\n", "gid_map": "0 0 1\n65534 65534 1\n"}
        else:
            with open(f"/proc/{pid}/setgroups", "w") as fh:
                fh.write("deny")
            maps = {"uid_map": f"0 {uid} 1\n", "gid_map": f"0 {gid} 1\n"}
        for name, text in maps.items():
            with open(f"/proc/{pid}/{name}", "w") as fh:
                fh.write(text)
        return True
    except OSError:
        return False


def _write_own_maps(uid: int, gid: int) -> bool:
    """Unprivileged: keep our own ids in the namespace we just entered (the zygote below maps
    its root to them, as it did outside)."""
    try:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1\n"),
            ("gid_map", f"{gid} {gid} 1\n"),
        ):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
        return True
    except OSError:
        return False


class _MapHelper:
    """A process forked before the checker enters its user namespace, so still outside it with
    root's capabilities: mapping root and nobody into a user namespace takes CAP_SETUID in the
    namespace above, which the process inside no longer has there."""

    def __init__(self) -> None:
        target = os.getpid()
        go_r, self.go_w = os.pipe()
        self.done_r, done_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the helper: never returns
            code = 1
            try:
                os.close(self.go_w)
                os.close(self.done_r)
                if os.read(go_r, 1) == b"u":
                    os.write(done_w, b"k" if _write_maps(target) else b"f")
                code = 0
            finally:
                os._exit(code)
        os.close(go_r)
        os.close(done_w)

    def finish(self, write: bool) -> bool:
        """Have the maps written (``write``) or not; True once they are."""
        try:
            os.write(self.go_w, b"u" if write else b"n")
            ok = write and os.read(self.done_r, 1) == b"k"
        finally:
            os.close(self.go_w)
            os.close(self.done_r)
            os.waitpid(self.pid, 0)
        return ok


class _CheckerLayers:
    """The checker's own confinement, set up in steps across its startup (see :func:`serve`);
    :meth:`report` says which layers are in force and why any is not.

    What each layer keeps from the checker: the user namespace and the unprivileged uid (nobody,
    when we started as root) every privilege on the host; the PID namespace every process but
    its own zygote and children (it is their namespace's init: they all die with it); the
    network and IPC namespaces every socket and SysV object of the host; the mount namespace
    nothing by itself (it exposes the interpreter to nobody, as the zygote's does); Landlock
    every write and every read outside the interpreter, the standard library and the system
    libraries; the seccomp program every socket, exec, new process, signal, and any
    ``prlimit``/``setpriority``/scheduler call on another process; no_new_privs any gain through
    exec; the parent-death signal any life after the caller's; the CPU limit more than the
    suite's timeout of CPU time per request.
    """

    def __init__(self, confine: Any) -> None:
        self.c = confine
        self.active: dict[str, bool] = dict.fromkeys(CHECKER_LAYER_NAMES, False)
        self.missing: dict[str, str] = {}
        self.life_r: int | None = None  # EOF here: the namespace's outside anchor died
        self.caller = os.getppid()

    def _on(self, *names: str) -> None:
        for name in names:
            self.active["checker_" + name] = True

    def _miss(self, names: tuple[str, ...] | str, reason: str) -> None:
        for name in (names,) if isinstance(names, str) else names:
            self.missing.setdefault("checker_" + name, reason)

    def enter_namespaces(self, contexts: str = "") -> None:
        """In the process Sandbox started: new user, PID, network, IPC and mount namespaces,
        then a fork. The child returns as the checker (the PID namespace's init); this process
        stays outside as the namespace's anchor and exits with the checker's status (it never
        returns). Without a PID namespace there is no fork and this process is the checker.
        ``contexts``: the prepared contexts' directory, kept reachable for the zygote (which
        inherits this mount namespace) to expose to its children."""
        c = self.c
        uid, gid = os.geteuid(), os.getegid()
        others = c.CLONE_NEWPID | c.CLONE_NEWNET | c.CLONE_NEWIPC | c.CLONE_NEWNS
        helper = _MapHelper() if uid == 0 else None
        flags = 0
        try:
            c.unshare(c.CLONE_NEWUSER | others)
            flags = c.CLONE_NEWUSER | others
        except OSError as exc:
            self._miss("user_namespace", f"unshare(CLONE_NEWUSER) failed: {exc}")
            try:
                c.unshare(others)
                flags = others
            except OSError as exc2:
                names = ("pid_namespace", "net_namespace", "ipc_namespace", "mount_namespace")
                self._miss(names, f"unshare failed: {exc2}")
        if flags & c.CLONE_NEWUSER:
            mapped = helper.finish(True) if helper else _write_own_maps(uid, gid)
            if not mapped:
                raise OSError("could not write the checker's uid/gid maps")
            self._on("user_namespace")
        elif helper is not None:
            helper.finish(False)
        for flag, name in ((c.CLONE_NEWNET, "net_namespace"), (c.CLONE_NEWIPC, "ipc_namespace")):
            if flags & flag:
                self._on(name)
        self._parent_death_signal()  # new credentials cleared it
        if flags & c.CLONE_NEWPID:
            self._fork_init()
            self._on("pid_namespace")
        if flags & c.CLONE_NEWNS:
            try:
                kept = [contexts] if contexts and os.path.isdir(contexts) else []
                _zygote._expose_python(c, _zygote._python_paths() + kept)
                self._on("mount_namespace")
            except OSError as exc:
                self._miss("mount_namespace", f"mount setup failed: {exc}")

    def _fork_init(self) -> None:
        life_r, life_w = os.pipe()
        pid = os.fork()
        if pid:  # the anchor: holds nothing of the caller's, waits, exits with the checker
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.closerange(3, life_w)
            os.closerange(life_w + 1, max(os.sysconf("SC_OPEN_MAX"), 1024))
            status = os.waitpid(pid, 0)[1]
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
        os.close(life_w)
        self.life_r = life_r
        self._parent_death_signal()

    def _parent_death_signal(self) -> None:
        """SIGKILL when our parent dies; set again after each change of credentials (which
        clears it), then the parent checked, in case it died before."""
        self.c.prctl(self.c.PR_SET_PDEATHSIG, signal.SIGKILL)
        if self.life_r is not None:  # our parent is outside our PID namespace: getppid() is 0
            if select.select([self.life_r], [], [], 0)[0]:
                os._exit(1)
        elif os.getppid() != self.caller:
            os._exit(1)

    def confine(self, seccomp: tuple[bytes, ...] | str) -> None:
        """Once the zygote is set up (it needed us privileged, to write its uid/gid maps)."""
        c = self.c
        try:
            c.set_no_new_privs()
            self._on("no_new_privs")
        except OSError as exc:
            self._miss("no_new_privs", str(exc))
        self._landlock()
        self._uid()
        if isinstance(seccomp, str):
            self._miss("seccomp", seccomp)
        else:
            try:
                c.load_seccomp(seccomp[2])
                self._on("seccomp")
            except OSError as exc:
                self._miss("seccomp", str(exc))
        self._parent_death_signal()
        self._on("parent_death_signal")

    def _landlock(self) -> None:
        c = self.c
        abi = c.landlock_abi()
        if not abi:
            self._miss("landlock", "the kernel offers no Landlock ABI (not built or not enabled)")
            return
        try:
            # No signal scoping: the zygote must still get our death signal.
            ruleset = c.LandlockRuleset(abi, scope=False)
            ruleset.allow_paths(_zygote._python_paths() + list(_zygote._SYSTEM_READ), c.READ_RIGHTS)
            ruleset.allow_paths(["/dev/null"], c.FS_READ_FILE | c.FS_WRITE_FILE)
            ruleset.restrict_self()
            ruleset.close()
            self._on("landlock")
        except OSError as exc:
            self._miss("landlock", str(exc))

    def _uid(self) -> None:
        if os.geteuid() != 0:
            self._on("unprivileged_uid")  # already unprivileged outside
            return
        if not self.active["checker_mount_namespace"] and any(
            map(_zygote._private_ancestor, _zygote._python_paths())
        ):
            self._miss(
                "unprivileged_uid",
                "the interpreter is under a private directory and "
                "there is no mount namespace to expose it",
            )
            return
        try:
            self.c.become(self.c.UNPRIVILEGED_ID)
            self._on("unprivileged_uid")
        except OSError as exc:
            self._miss("unprivileged_uid", str(exc))

    def report(self) -> dict[str, Any]:
        return {
            "layers": dict(self.active),
            "missing": {k: v for k, v in self.missing.items() if not self.active.get(k)},
        }


class _CpuExceeded(_ProtocolError):
    """The checker spent its CPU budget on one request: a protocol failure of that suite."""


class _CpuBudget:
    """Bounds the checker's CPU time per request to ``budget`` seconds.

    Where Python code runs, SIGPROF (``ITIMER_PROF``, the process's CPU time) raises
    :class:`_CpuExceeded`, again every 50 ms should something swallow it. Inside one long call
    into C (which no handler interrupts), RLIMIT_CPU ends the process ``_CPU_BACKSTOP_S`` later:
    its SIGXCPU goes to libc's ``_exit`` itself (as the init of a PID namespace the checker
    ignores a SIGXCPU left at its default action, and an unprivileged process cannot raise the
    hard limit, which would send SIGKILL, from one request to the next).
    """

    def __init__(self, link: _Link) -> None:
        import ctypes

        signal.signal(signal.SIGPROF, self._expired)
        self.link = link
        self.budget = 0.0
        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
        handler = ctypes.cast(libc._exit, ctypes.c_void_p).value
        self.backstop = libc.signal(signal.SIGXCPU, handler) != ctypes.c_void_p(-1).value

    def _expired(self, _signum: int, _frame: object) -> None:
        if self.link.protocol is None:  # once the suite is marked, it only needs to end
            raise _CpuExceeded(f"the checker spent more than {self.budget:g} s of CPU on it")

    def arm(self, budget: float) -> None:
        self.budget = budget
        if self.backstop:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            soft = int(usage.ru_utime + usage.ru_stime + budget) + _CPU_BACKSTOP_S
            resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))
        signal.setitimer(signal.ITIMER_PROF, budget, 0.05)

    def disarm(self) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)


def _set_checker_limits(limits: dict[str, Any]) -> None:
    """The suite's memory limit (plus room for the checker's own state) and no core files, so
    a greedy request is a MemoryError, not a host problem."""
    memory = limits.get("memory_bytes")
    wanted = {resource.RLIMIT_CORE: 0}
    if memory:
        wanted[resource.RLIMIT_AS] = int(memory) + (512 << 20)
    for which, value in wanted.items():
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def _probe(req: dict[str, Any]) -> dict[str, str]:
    """For the tests of the checker's confinement only (the caller's ``{"probe": {...}}``
    request): try what the checker must not do, from the running checker itself, and say how
    each attempt ended (``ok``, the errno's name, or ``CpuExceeded``). ``kill``: signal 0 to a
    pid; ``prlimit``: RLIMIT_FSIZE 0 on a pid; ``setpriority``: nice 19 for a pid;
    ``connect``: a unix socket path; ``socketpair``: make one; ``spin``: that many seconds of
    CPU in Python code; ``spin_c``: as many in one call into C (``sum`` over a range)."""

    def attempt(action: Callable[[Any], Any], arg: Any) -> str:
        try:
            action(arg)
            return "ok"
        except _CpuExceeded:
            return "CpuExceeded"
        except OSError as exc:
            import errno

            return errno.errorcode.get(exc.errno or 0, str(exc.errno))

    def spin(seconds: float) -> None:
        end = time.process_time() + float(seconds)
        while time.process_time() < end:
            pass

    def connect(path: str) -> None:
        import socket

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(path)

    actions: dict[str, Callable[[Any], Any]] = {
        "kill": lambda pid: os.kill(int(pid), 0),
        "prlimit": lambda pid: resource.prlimit(int(pid), resource.RLIMIT_FSIZE, (0, 0)),
        "setpriority": lambda pid: os.setpriority(os.PRIO_PROCESS, int(pid), 19),
        "connect": lambda path: connect(str(path)),
        "socketpair": lambda _: __import__("socket").socketpair(),
        "spin": spin,
        "spin_c": lambda seconds: sum(range(int(float(seconds) * 10**9))),
    }
    return {name: attempt(actions[name], arg) for name, arg in req.items() if name in actions}
