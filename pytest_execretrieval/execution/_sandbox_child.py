"""The checker process's entry: start-up and request loop; the process side of :mod:`.sandbox`.

Stdlib only, like its siblings, one per process role: :mod:`._wire` (the pipes, frames and
value codec), :mod:`._checker` (plans and decides), :mod:`._zygote` (forks and reaps the
children, and its kernel layers), :mod:`._child` (runs the snippet and the calls), plus
:mod:`._grammar` (the test grammar) and :mod:`._confine` (the kernel layers' system calls,
stdlib + ctypes + optional ``pyseccomp``). :class:`~pytest_execretrieval.execution.sandbox.Sandbox`
starts ``python -I -S`` with a bootstrap that puts this directory first on ``sys.path``, imports
this file as the top-level module ``_sandbox_child`` (from its cached bytecode, and so its
siblings as top-level modules too) and calls :func:`serve`; ``python -I _sandbox_child.py
LIMITS_JSON`` does the same. Importing the modules has no side effects, so ``sandbox.py`` can
read :data:`RUNNER_VERSION` and the wire's limits.

Three processes, so that no process that runs snippet code ever holds an expected value, and
no process that decides a verdict ever runs item text:

* the **checker** (the process Sandbox starts) reads requests from the caller, plans each test
  once (:mod:`._grammar`: a test is data of a closed grammar, a call of the entry point compared
  with a literal; the literal is computed by the grammar's own interpreter, nothing of the test is
  compiled or executed here), sends the child only the calls, decides each test from the decoded
  value the child's call returned, and replies. It never runs snippet or test code and never
  forks after startup.
* the **zygote**, forked by the checker at startup before any request (so its memory holds no
  test), sets up the kernel layers once and forks one child per suite (ahead of time: a *spare*
  confined child waits for its suite on a pipe), enforces the wall clock, kills every process
  the suite left and empties the scratch directory. It never sees a check.
* the **child** runs setup + snippet, then makes each test's call (arguments built from the
  test's literals by the grammar; a ``lambda`` argument is compiled here, and only here) and
  returns the value in a restricted typed encoding (:func:`._wire.encode`); the checker
  decodes it (:func:`._wire.decode`) into plain objects of the allowed types only, so a snippet
  object's ``__eq__`` never runs there.

The process Sandbox starts enters the checker's own user, PID, network, IPC and mount namespaces
and forks the checker as that PID namespace's init, staying outside as its idle *anchor*; the
checker drops to nobody and loads its own seccomp program once the zygote is set up
(:class:`._checker._CheckerLayers`). The threat model: the child runs hostile code and may
write anything on its pipes; the checker and the zygote run none, but a child's frames reach the
checker, so the checker is confined as if it did (no host privilege, no signals, no sockets, no
other process within reach, a CPU budget per request).

Wire protocols: bounded frames of JSON everywhere (:mod:`._wire`); every parse or decode
failure is a ValueError there, and a child's is a protocol error of its suite
(:data:`._checker.PROTOCOL_ERROR`). The pipes between checker, zygote and children are created
once, at startup (:class:`._wire.Pipes`).

* caller <-> checker: stdin (requests) and stdout (replies); first ``{"ready": pid, "version":
  v, "isolation": {...}}``. A ``{"probe": {...}}`` request (tests only) makes the checker try
  what its confinement forbids and say how each attempt ended (:func:`._checker._probe`).
* checker -> spare child, on the go pipe (created at startup, read by every spare as its fd 5):
  the ``run`` frame (code, setup, each test's call as ``[kind, source]`` or null, the limits),
  then checker -> zygote ``{"run": {"direct": 1, "limits": ..., "setup": ..., "calls": ...}}``
  (the suite began; setup and calls for its compile cache). A run frame that does not fit in
  the empty go pipe, or other limits than the Sandbox's, goes as ``{"run": ...}`` to the
  zygote, which forks a child for it and sends it the frame on a pipe of its own. Zygote ->
  checker ``{"layers": ...}`` once, then per suite ``{"exit": "exited"|"timeout", "status":
  s, "left": bool, "scratch": str}``, once it has reaped the suite's processes and emptied
  the go pipe of anything they left unread.
* child -> checker, on a pipe created at startup, inherited by every child as its fd 4: ``{"m":
  outcome}`` after setup + code, then ``{"e": test, "r": answer}`` per test with a call, in order;
  an *answer* is ``{"v": value}``, ``{"x": name, "mro": [...]}`` (it raised), ``{"u": reason}``
  (unsupported type) or, for ``raises``, ``{"ok": 0|1, "mro": [...]}``; ``{"viol": event}``
  whenever the audit guard blocks something; ``{"d": 1}`` at the end. One suite runs at a time
  per zygote, and the checker drains the pipes after each suite, once the zygote has killed and
  reaped every process of it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time

TYPE_CHECKING = False  # type checkers take it as True; typing is not imported in the sandbox
if TYPE_CHECKING:
    from typing import Any

try:
    from . import _checker
except ImportError:  # a top-level module in the sandbox, with this directory on sys.path
    import _checker  # type: ignore[no-redef, import-not-found]

try:
    from . import _wire
except ImportError:  # a top-level module in the sandbox, with this directory on sys.path
    import _wire  # type: ignore[no-redef, import-not-found]

try:
    from . import _zygote
except ImportError:  # a top-level module in the sandbox, with this directory on sys.path
    import _zygote  # type: ignore[no-redef, import-not-found]

RUNNER_VERSION = "3"
_IDLE_POLL_S = 1.0


def _read_request(fd: int) -> Any:
    """The caller's next request; None at EOF; ValueError on an oversized or garbled one."""
    head = _read_polling(fd, _wire._HEADER.size)
    if head is None:
        return None
    (size,) = _wire._HEADER.unpack(head)
    if size > _wire._MAX_REQUEST:
        raise ValueError(
            f"request frame of {size} bytes exceeds the {_wire._MAX_REQUEST} byte limit"
        )
    body = _read_polling(fd, size)
    if body is None:
        return None
    req = _wire._loads(body)
    if not isinstance(req, dict):
        raise ValueError("a request that is not an object")
    return req


def _read_polling(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        ready, _, _ = select.select([fd], [], [], _IDLE_POLL_S)
        if not ready:
            continue  # an orphaned checker gets its parent-death signal: no polling needed
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf.extend(chunk)
    return bytes(buf)


def _stop_zygote(zc_w: int, zygote: int) -> None:
    """Orderly end: the zygote sees EOF and exits, so every process is reaped up the chain
    (and its CPU time is accounted to the caller, as benchmarks/verify_speed.py measures).
    One that does not exit in time dies with us: we are its PID namespace's init, and it has
    a parent-death signal (we may send no signal ourselves)."""
    os.close(zc_w)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        if os.waitpid(zygote, os.WNOHANG)[0] == zygote:
            return
        time.sleep(0.005)


def _terminate(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # the zygote and its namespace die with us (PDEATHSIG)


def _protocol_reply(reply: dict[str, Any], why: str) -> dict[str, Any]:
    """A suite whose child broke the protocol: nothing it said counts, every test's outcome is
    PROTOCOL_ERROR (an unusable suite for the caller, neither a pass nor a kill)."""
    n = len(reply.get("outcomes", ()))
    reply.update(outcomes=[_checker.PROTOCOL_ERROR] * n, passed=False, returned=[""] * n)
    if why not in reply.get("detail", ""):
        reply["detail"] = "; ".join(filter(None, [reply.get("detail", ""), why]))
    return reply


def serve() -> None:
    """Checker main: confine, start the zygote, then one request frame in, one reply out,
    until EOF (see :class:`._checker._CheckerLayers` for the order)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminate)
    limits = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    contexts = str(limits.pop("contexts", ""))  # not a limit: the zygote's read-only tree
    # Another language's runner: its options name the module that holds its checker and its
    # zygote ("module": a file path; _node.py for JavaScript, a language folder's _runner.py),
    # and what else it needs (its binaries, its scripts). Imported only then: the Python
    # zygote, whose size every fork pays for, never holds it.
    runner_options = json.loads(sys.argv[2]) if len(sys.argv) > 2 else None
    runner = None if runner_options is None else _import_runner(runner_options["module"])
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    try:
        import _confine as confine  # type: ignore[import-not-found]  # from `here`
    finally:
        sys.path.remove(here)
    try:  # before the zygote exists: see seccomp_programs() for why in a helper process
        roles = confine.ROLES if runner is None else confine.RUNNER_ROLES
        seccomp: tuple[bytes, ...] | str = confine.seccomp_programs(roles)
    except OSError as exc:
        seccomp = str(exc)
    for stream in (sys.stdin, sys.stdout, sys.stderr):  # the children inherit these streams
        stream.reconfigure(  # type: ignore[union-attr]  # a TextIOWrapper, typed TextIO
            encoding="utf-8", errors="backslashreplace", line_buffering=True
        )
    own = _checker._CheckerLayers(confine)
    try:
        own.enter_namespaces(contexts)  # from here on, in the anchor's child when there is a PID ns
    except OSError as exc:
        _wire.write_frame(1, {"error": f"the checker could not enter its namespaces: {exc}"})
        return
    pipes = _wire.Pipes.create()
    checker = os.getpid()
    zygote = os.fork()
    if zygote == 0:
        for fd in pipes.ends(checker=True):
            os.close(fd)
        if own.life_r is not None:
            os.close(own.life_r)
        flavour = None if runner is None else runner.Flavour(runner_options)
        _zygote._zygote_process(confine, pipes, limits, checker, seccomp, flavour, contexts)
    for fd in pipes.ends(checker=False):
        os.close(fd)
    msg = _read_line(pipes.up_r)
    if msg.startswith(b"u"):  # "u<the zygote's pid in our /proc>"
        mapped = msg[1:].isdigit() and _checker._write_maps(int(msg[1:]))
        os.write(pipes.up_w, b"k" if mapped else b"f")
    os.close(pipes.up_r)  # the start-up handshake is over
    os.close(pipes.up_w)
    try:
        ready = _wire._recv(pipes.zr_r, _wire._MAX_ZYGOTE_FRAME)
    except ValueError as exc:
        ready = {"error": f"garbled frame from the zygote: {exc}"}
    if not isinstance(ready, dict) or "layers" not in ready:
        _wire.write_frame(
            1, {"error": str((ready or {}).get("error", "the zygote died at startup"))}
        )
        return
    isolation = ready["layers"]
    own.confine(seccomp)
    _checker._set_checker_limits(limits)
    checker_obj = (_checker._Checker if runner is None else runner.Checker)(pipes, limits)
    budget = _checker._CpuBudget(checker_obj.link)
    if budget.backstop:
        own._on("cpu_limit")
    checker_report = own.report()
    isolation["layers"].update(checker_report["layers"])
    isolation["missing"].update(checker_report["missing"])
    isolation["checker"] = "confined" if not checker_report["missing"] else "partly confined"
    # Nothing here may write into (or read from) the caller's pipes but this loop.
    fd_in, fd_out = _wire._high(os.dup(0)), _wire._high(os.dup(1))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    _wire.write_frame(
        fd_out, {"ready": os.getpid(), "version": RUNNER_VERSION, "isolation": isolation}
    )
    while True:
        req: Any = None
        try:
            req = _read_request(fd_in)
            if req is None:
                _stop_zygote(pipes.zc_w, zygote)
                return
            if "probe" in req:
                budget.arm(float(req.get("budget_s", 1.0)))
                try:
                    reply = {"probe": _checker._probe(req["probe"])}
                finally:
                    budget.disarm()
            else:
                budget.arm(float(req["limits"]["timeout_s"]))
                try:
                    reply = checker_obj.handle(req)
                finally:
                    budget.disarm()
                if checker_obj.link.protocol is not None:
                    reply = _protocol_reply(reply, checker_obj.link.protocol)
        except BaseException as exc:  # noqa: BLE001 - our state is suspect: say so, then exit
            # (A CPU budget spent outside the suite's own code; a garbled request; a broken
            # zygote; before the tests became data, a test statement that broke us.)
            what = "zygote lost" if isinstance(exc, _checker._ZygoteGone) else "checker failed"
            lost = {"error": f"sandbox {what}: {type(exc).__name__}: {exc}", "fatal": True}
            lost["id"] = req.get("id") if isinstance(req, dict) else None
            try:
                _wire.write_frame(fd_out, lost)
            finally:
                os._exit(1)
        reply["id"] = req.get("id")  # lets the caller detect a desynchronised stream
        _wire.write_frame(fd_out, reply)


def _import_runner(path: str) -> Any:
    """The runner module at ``path``, as a top-level module (its siblings here are on
    sys.path, and it imports them so)."""
    import importlib.util

    name = "_runner_" + os.path.splitext(os.path.basename(path))[0].lstrip("_")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no runner module at {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _read_line(fd: int) -> bytes:
    """Up to a newline (not included), or what came before EOF."""
    buf = bytearray()
    while len(buf) < 64:
        chunk = os.read(fd, 1)
        if not chunk or chunk == b"\n":
            break
        buf.extend(chunk)
    return bytes(buf)


if __name__ == "__main__":
    serve()
