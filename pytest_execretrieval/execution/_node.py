"""The Node runner's processes: its checker's plan and its zygote, which serves suites with node.

Standard library only, like its siblings (:mod:`._sandbox_child` has the overview); the checker
process is the Python sandbox's own (``serve()`` with a Node options argument), and so are its
confinement, its verdicts and the child frame protocol: only the planning and the zygote differ.

* The **checker** (:class:`_NodeChecker`) parses each test in the closed grammar with
  JavaScript's error classes (:data:`._grammar.JS_EXCEPTIONS`), computes the literals, and sends
  the zygote only each call's entry-point name and its arguments as JSON text
  (:func:`._grammar.json_arguments`; a test whose arguments are not JSON-representable is
  ``error:GrammarError``). It decodes the values node returns and decides every verdict; no
  verdict is ever computed in node, and node never sees an expected value.
* The **zygote** (:class:`_NodeZygote`) is the Python zygote's kernel layers
  (:class:`_NodeLayers`: the same namespaces, the unprivileged uid, no_new_privs, Landlock and
  seccomp, with node's paths, a ``noexec`` scratch tmpfs, and a child ruleset that executes the
  node binary only and reads only what node needs) around long-lived node processes
  (``_node_runner.js``). One node process serves the suites of ONE item, and no other: the
  caller names the item a suite's code belongs to (``Sandbox.run(..., group=ITEM)``; its
  canonical, alternatives and mutants), a suite of another item or of none gets a fresh
  process, as does the suite after a timeout, a protocol breach, node's death or
  :data:`MAX_SUITES` suites. So nothing a snippet leaves behind in node (a planted host
  global, a replaced host intrinsic) can reach another item's outcome, nor the outcome cache
  (two items with the same tests are two groups). Each suite runs in a fresh ``vm`` context
  inside that process (see ``_node_runner.js`` for the boundary, and
  docs/javascript-realm.md). The next item's process is started ahead, while the caller is
  busy, so its start-up costs no wall time when a core is free.

Each node process is started by a launcher forked from the zygote: its own session, the
child rlimits (memory, file size, processes, CPU as a backstop), the child Landlock ruleset,
nobody, the ``node`` seccomp program (no new processes, threads only; no sockets; no exec
but this one, :func:`._confine.execve_fixed`), then exec with an empty environment. The zygote
enforces each suite's wall clock (SIGKILL to the process, which is never reused), kills any
process other than its node processes it finds in its PID namespace, and empties the scratch
directory after every suite.
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

RUNNER_JS = "_node_runner.js"
RUN_FD, REPLY_FD, ZYGOTE_FD = 3, 4, 5  # node's fds (see _node_runner.js)
_READY_S = 30.0  # a node process that has not said it is ready by then is lost
# V8 reserves address space far beyond what it uses (code range, heap cages): RLIMIT_AS would
# fail its start-up, so the memory limit is V8's own heap limit (a heap beyond it ends the
# process, like any other crash), with RLIMIT_AS as a backstop this much above the limit.
_AS_HEADROOM = 8 << 30
# node's own threads (V8's platform workers, the main thread); RLIMIT_NPROC counts them.
_NODE_THREADS = 16
# A process serves at most this many suites of its item, then the item continues in a fresh
# one: contexts whose jobs are still queued (a promise a call left pending) are collected late.
MAX_SUITES = 256
_PIPE_ROOM = 1 << 16  # a pipe's default capacity: the runner source is written into one


def node_argv(node: str, runner: str, limits: dict[str, Any]) -> list[str]:
    """The command a launcher execs (``runner``: the program's path, ``-`` for stdin)."""
    heap_mib = int(limits.get("memory_bytes") or 0) >> 20
    flags = [
        "--no-addons",  # process.dlopen refused: no native code
        # The host realm's intrinsics are frozen before any code runs: a host object a snippet
        # reaches (an error node raises in host code) cannot change what the runner calls.
        "--frozen-intrinsics",
        "--disallow-code-generation-from-strings",
        "--no-warnings",
        "--experimental-vm-modules",  # so that the runner's import() callback is used
        "--openssl-config=/dev/null",  # node refuses to start on an unreadable openssl.cnf
        "--v8-pool-size=2",
        "--max-semi-space-size=4",
    ]
    if heap_mib:
        flags.append(f"--max-old-space-size={max(heap_mib, 64)}")
    return [node, *flags, runner]


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


class _NodePlan:
    """One suite's tests for node: like :class:`._checker._Plan`, but each call goes as
    ``[kind, entry-point name, arguments as JSON text]`` and no call's source is sent."""

    def __init__(self, tests: list[str]) -> None:
        self.tests: list[tuple[Any, Any] | str] = []
        self.calls: list[list[str] | None] = []
        for source in tests:
            try:
                test = _grammar.parse_test(source, probe=True, exceptions=_grammar.JS_EXCEPTIONS)
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


class _NodeChecker(_checker._Checker):
    """The checker's request handling for node: plan, send code and calls, decide."""

    plan_class = _NodePlan

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        plan: Any = self.plan(req["tests"])  # a _NodePlan (plan_class)
        limits = req["limits"]
        self.link.reset(int(limits["output_bytes"]))
        group = req.get("group")
        run = {"code": req["code"], "calls": plan.calls, "limits": limits, "group": group}
        _wire._send(self.pipes.zc_w, {"run": run})
        reply = _checker._Suite(self.link, plan, float(limits["timeout_s"])).run()
        ended = self.link.exit or {}
        if ended.get("exit") == "lost":  # the sandbox failed, not the snippet
            said = bytes(self.link.output[-300:]).decode("utf-8", "replace").strip()
            why = str(ended.get("why", "node did not start"))
            raise _checker._ZygoteGone(f"{why}: {said!r}" if said else why)
        return reply


# --- zygote side ----------------------------------------------------------------------------------


class _NodeLayers(_zygote._Layers):
    """The Python zygote's layers with node's paths; its children exec node."""

    scratch_flags = _zygote._Layers.scratch_flags | 8  # MS_NOEXEC: no mapping code from there

    def __init__(self, confine: Any, limits: dict[str, Any], seccomp: Any, node: dict) -> None:
        super().__init__(confine, limits, seccomp)
        self.node = os.path.realpath(node["node"])
        # Read now, before the namespaces: node gets the runner on its stdin, not by path, so
        # it needs no read right on the package and works where the package lives under the
        # directory the scratch tmpfs covers (a checkout in /tmp).
        with open(os.path.realpath(node["runner"]), "rb") as fh:
            self.runner_source = fh.read()
        if len(self.runner_source) > _PIPE_ROOM:  # written whole before node reads it
            raise ValueError(f"the Node runner is over {_PIPE_ROOM} bytes")
        self.node_reads = [os.path.realpath(p) for p in node.get("reads", ())]

    def exposed(self) -> list[str]:
        """The interpreter's trees, node's directory, and ``/proc`` (the zygote lists its PID
        namespace there; node gets none of it)."""
        extra = [os.path.dirname(self.node), *self.node_reads]
        extra.append("/proc")
        return sorted({*_zygote._python_paths(), *(p for p in extra if os.path.exists(p))})

    def _child_landlock(self) -> None:
        """node's own ruleset on top of the zygote's: execute the node binary only; read it,
        the system libraries and what the node distribution ships; write in the
        scratch directory only (no exec there); no TCP; signals and abstract sockets scoped."""
        c = self.c
        ruleset = c.LandlockRuleset(self.landlock_abi)
        # execve opens the ELF interpreter with exec rights too (a static binary has none).
        loader = [os.path.realpath(p) for p in [elf_interpreter(self.node)] if p]
        ruleset.allow_paths([self.node, *loader], c.FS_EXECUTE | c.FS_READ_FILE)
        libs = [p for p in _zygote._SYSTEM_READ if p != "/usr/share/zoneinfo"]
        ruleset.allow_paths([*libs, *self.node_reads], c.FS_READ_FILE | c.FS_READ_DIR)
        ruleset.allow_paths(["/dev/null"], c.FS_READ_FILE | c.FS_WRITE_FILE)
        scratch = ruleset.fs & ~(c.FS_MAKE_CHAR | c.FS_MAKE_BLOCK | c.FS_EXECUTE)
        ruleset.allow_paths([self.scratch], scratch)
        ruleset.fd = _wire._high(ruleset.fd)
        self.child_ruleset = ruleset


class _Proc:
    """One node process: its pid, pidfd, the write end of its run pipe, the read end of its
    notes to the zygote."""

    __slots__ = ("pid", "pidfd", "run_w", "note_r", "ready", "group", "suites")

    def __init__(self, pid: int, run_w: int, note_r: int) -> None:
        self.pid, self.run_w, self.note_r = pid, run_w, note_r
        self.pidfd = _zygote._pidfd(pid)
        self.ready = False
        self.group: str | None = None  # the item whose suites it serves (None: one suite)
        self.suites = 0


class _NodeZygote:
    """Serves each suite with a node process of its own (see the module docs)."""

    def __init__(self, pipes: _wire.Pipes, layers: _NodeLayers, limits: dict[str, Any]) -> None:
        self.pipes, self.layers, self.limits = pipes, layers, limits
        self.argv = node_argv(layers.node, "-", limits)
        self.current: _Proc | None = None
        self.spare: _Proc | None = None
        self.open_max = max(os.sysconf("SC_OPEN_MAX"), 1024)
        self.rlimits = _child._child_rlimits(limits)
        self.rlimits = [self._rlimit(which, pair) for which, pair in self.rlimits]

    def _rlimit(self, which: int, pair: tuple[int, int]) -> tuple[int, tuple[int, int]]:
        import resource

        soft, hard = pair
        if which == resource.RLIMIT_AS and soft:
            soft = hard = soft + _AS_HEADROOM
        elif which == resource.RLIMIT_NPROC and soft:
            soft = hard = soft + _NODE_THREADS
        _, old = resource.getrlimit(which)
        if old != resource.RLIM_INFINITY:
            soft, hard = min(soft, old), min(hard, old)
        return which, (soft, hard)

    def serve(self) -> None:
        try:
            while True:
                if self.spare is None and not self._request_waiting():
                    self.spare = self._spawn()
                req = _wire._recv(self.pipes.zc_r, _wire._MAX_RUN)
                if req is None:
                    return
                if "run" not in req:
                    continue  # an abort that crossed the suite's end: nothing left to stop
                _wire._send(self.pipes.zr_w, self.run(req["run"]))
        finally:
            self._retire(self.current)
            self._retire(self.spare)

    def _request_waiting(self) -> bool:
        return bool(select.select([self.pipes.zc_r], [], [], 0.0003)[0])

    def run(self, run: dict[str, Any]) -> dict[str, Any]:
        group = run.get("group")
        node = self.current
        if node is None or group is None or node.group != group or node.suites >= MAX_SUITES:
            self._retire(node)
            node = self.current = self.spare or self._spawn()
            node.group = group if isinstance(group, str) else None
            # The next process starts now and boots on another core while this one runs.
            self.spare = self._spawn()
        node.suites += 1
        frame = {"code": run["code"], "calls": run["calls"]}
        frame["output_bytes"] = int(run["limits"]["output_bytes"])
        if not self._ready(node):
            self._retire(node)
            self.current = None
            why = "a node process did not start"
            return {"exit": "lost", "why": why, "status": 0, "left": False, "scratch": ""}
        deadline = time.monotonic() + float(run["limits"]["timeout_s"])
        try:
            _wire._send(node.run_w, frame)
        except OSError:
            pass  # it died: _wait sees the exit
        ended, status = self._wait(node, deadline)
        if ended != "done" or node.group is None:
            self._retire(node)  # never reused: the next suite gets the spare
            self.current = None
        left = self._strays()
        return {
            "exit": "exited" if ended == "done" else ended,
            "status": status,
            "left": left,
            "scratch": self._clean_scratch(),
        }

    def _ready(self, node: _Proc) -> bool:
        """Wait for a fresh process's ready note (its start-up is not the suite's time)."""
        if not node.ready:
            ready = select.select([node.note_r], [], [], _READY_S)[0]
            node.ready = bool(ready) and os.read(node.note_r, 1) == b"r"
            if not node.ready:
                status = _zygote._describe_status(self._kill(node))
                os.write(self.pipes.out_w, f"node exited at start-up ({status})".encode())
        return node.ready

    def _wait(self, node: _Proc, deadline: float) -> tuple[str, int]:
        """Until node says the suite is done ("done"), exits ("exited"), the wall clock runs
        out ("timeout") or the checker aborts the suite ("aborted")."""
        watch = [node.note_r, self.pipes.zc_r] + ([node.pidfd] if node.pidfd is not None else [])
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", self._kill(node)
            # Without a pidfd, node's death still shows: its note pipe reaches EOF.
            ready = select.select(watch, [], [], remaining)[0]
            if node.note_r in ready:
                note = os.read(node.note_r, 1)
                if note == b"d":
                    return "done", 0
                return "exited", self._kill(node)  # EOF: it died (or a note out of protocol)
            if self.pipes.zc_r in ready and self._abort_requested():
                return "aborted", self._kill(node)
            if node.pidfd is not None and node.pidfd in ready:
                return "exited", self._kill(node)

    def _abort_requested(self) -> bool:
        req = _wire._recv(self.pipes.zc_r)
        if req is None:
            raise EOFError("the checker is gone")
        return "abort" in req

    def _kill(self, node: _Proc) -> int:
        """SIGKILL the process (its session too) and reap it; its wait status."""
        _zygote._signal_group(node.pid, signal.SIGKILL)
        try:
            os.kill(node.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            status = os.waitpid(node.pid, 0)[1]
        except ChildProcessError:
            status = 0
        node.pid = -1
        return status

    def _retire(self, node: _Proc | None) -> None:
        if node is None:
            return
        if node.pid > 0:
            self._kill(node)
        for fd in (node.run_w, node.note_r, node.pidfd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _strays(self) -> bool:
        """Kill and reap every process in our PID namespace that is none of our node
        processes (none can be made: a child of node needs fork, which seccomp denies)."""
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

    def _spawn(self) -> _Proc:
        """Fork a launcher that confines itself and execs node (see the module docs)."""
        run_r, run_w = (_wire._high(fd) for fd in os.pipe())
        note_r, note_w = (_wire._high(fd) for fd in os.pipe())
        pid = os.fork()
        if pid == 0:
            try:
                os.close(run_w)
                os.close(note_r)
                self._launch(run_r, note_w)
            except BaseException as exc:  # noqa: BLE001 - the sandbox's own failure: say so
                note = f"node launcher failed: {type(exc).__name__}: {exc}\n"
                try:
                    os.write(2, note.encode("utf-8", "replace"))  # out_w once dup2ed there
                finally:
                    os._exit(70)
            finally:
                os._exit(70)
        os.close(run_r)
        os.close(note_w)
        return _Proc(pid, run_w, note_r)

    def _launch(self, run_r: int, note_w: int) -> None:
        import resource

        layers = self.layers
        os.setsid()
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        for which, pair in self.rlimits:
            resource.setrlimit(which, pair)
        source_r, source_w = os.pipe()  # the runner, node's program (``node -``): 15 KB fit
        os.write(source_w, layers.runner_source)
        os.close(source_w)
        os.dup2(source_r, 0)
        os.dup2(self.pipes.out_w, 1)
        os.dup2(self.pipes.out_w, 2)
        os.dup2(run_r, RUN_FD)
        os.dup2(self.pipes.rep_w, REPLY_FD)
        os.dup2(note_w, ZYGOTE_FD)
        layers.confine_child()
        os.closerange(ZYGOTE_FD + 1, self.open_max)
        os.chdir(layers.scratch)
        layers.drop_child()
        layers.c.execve_fixed(layers.node, self.argv, {})


class Flavour:
    """What :func:`._zygote._zygote_process` needs to be the Node runner's zygote."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def layers(self, confine: Any, limits: dict[str, Any], seccomp: Any) -> _NodeLayers:
        return _NodeLayers(confine, limits, seccomp, self.options)

    def serve(self, pipes: _wire.Pipes, layers: _NodeLayers, limits: dict[str, Any]) -> None:
        _NodeZygote(pipes, layers, limits).serve()
