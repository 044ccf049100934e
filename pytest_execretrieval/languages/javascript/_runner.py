"""The Node runner's processes: its checker's plan and its zygote, which serves suites with node.

Standard library only, like the sandbox's modules (``execution/_exec_runner.py`` has what every
runner shares, ``execution/_sandbox_child.py`` the overview); the checker process is the
Python sandbox's own, which loads this file by path, and so are its confinement, its verdicts
and the child frame protocol: only the planning and the zygote differ.

* The **checker** (:class:`_NodeChecker`) is the shared one with JavaScript's error classes
  (:data:`_grammar.JS_EXCEPTIONS`): node gets each call's entry-point name and JSON arguments,
  never an expected value, and no verdict is computed in node.
* The **zygote** (:class:`_NodeZygote`) is the Python zygote's kernel layers
  (:class:`_NodeLayers`: the same namespaces, the unprivileged uid, no_new_privs, Landlock and
  seccomp, with node's paths, a ``noexec`` scratch tmpfs, and a child ruleset that executes the
  node binary only and reads only what node needs) around long-lived node processes
  (``_runner.js``). One node process serves the suites of ONE item, and no other: the
  caller names the item a suite's code belongs to (``Sandbox.run(..., group=ITEM)``; its
  canonical, alternatives and mutants), a suite of another item or of none gets a fresh
  process, as does the suite after a timeout, a protocol breach, node's death or
  :data:`MAX_SUITES` suites. So nothing a snippet leaves behind in node (a planted host
  global, a replaced host intrinsic) can reach another item's outcome, nor the outcome cache
  (two items with the same tests are two groups). Each suite runs in a fresh ``vm`` context
  inside that process (see ``_runner.js`` for the boundary, and docs/javascript-realm.md). The
  next item's process is started ahead, while the caller is busy, so its start-up costs no
  wall time when a core is free.

Each node process is started by a launcher forked from the zygote: its own session, the
child rlimits (memory, file size, processes, CPU as a backstop), the child Landlock ruleset,
nobody, the exec'd runner's seccomp program (no new processes, threads only; no sockets; no
exec but this one, ``_confine.execve_fixed``), then exec with an empty environment. The zygote
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
    from ...execution import _exec_runner, _grammar, _wire, _zygote
except ImportError:  # top-level modules in the sandbox, with execution/ on sys.path
    import _exec_runner  # type: ignore[no-redef, import-not-found]
    import _grammar  # type: ignore[no-redef, import-not-found]
    import _wire  # type: ignore[no-redef, import-not-found]
    import _zygote  # type: ignore[no-redef, import-not-found]

RUN_FD, REPLY_FD, ZYGOTE_FD = _exec_runner.RUN_FD, _exec_runner.REPLY_FD, _exec_runner.ZYGOTE_FD
elf_interpreter = _exec_runner.elf_interpreter
_Proc = _exec_runner._Proc
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


# --- checker side -------------------------------------------------------------------------------


class _NodePlan(_exec_runner._Plan):
    exceptions = _grammar.JS_EXCEPTIONS


class _NodeChecker(_exec_runner._Checker):
    plan_class = _NodePlan


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


class _NodeZygote(_exec_runner.ExecZygote):
    """Serves each item's suites with a node process of its own (see the module docs)."""

    as_headroom = _AS_HEADROOM
    threads = _NODE_THREADS

    def __init__(self, pipes: _wire.Pipes, layers: _NodeLayers, limits: dict[str, Any]) -> None:
        super().__init__(pipes, layers, limits)
        self.argv = node_argv(layers.node, "-", limits)

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


Checker = _NodeChecker  # the checker a runner module names (_sandbox_child._import_runner)


class Flavour:
    """What :func:`._zygote._zygote_process` needs to be the Node runner's zygote."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def layers(self, confine: Any, limits: dict[str, Any], seccomp: Any) -> _NodeLayers:
        return _NodeLayers(confine, limits, seccomp, self.options)

    def serve(self, pipes: _wire.Pipes, layers: _NodeLayers, limits: dict[str, Any]) -> None:
        _NodeZygote(pipes, layers, limits).serve()
