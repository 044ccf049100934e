"""The Go runner's processes: the shared checker, and a zygote that builds each suite's binary.

Standard library only, like the sandbox's modules (``execution/_exec_runner.py`` has what every
runner shares); the checker process loads this file by path (``_sandbox_child._import_runner``),
with ``execution/`` on ``sys.path``.

* The **checker** is the shared one (:class:`_exec_runner._Checker`): it plans each test in the
  closed grammar with Go's exception names (:data:`GO_EXCEPTIONS`), sends only each call's
  entry-point name and JSON arguments, decodes the values and decides every verdict.
* The **zygote** (:class:`_GoZygote`) builds each suite's binary in the scratch directory, then
  serves the suite with it: ``compile`` (the candidate, ``_driver.go`` and a generated table of
  the entry points the calls name, one ``package main``) and ``link`` against the toolchain's
  own precompiled standard library (``-importcfg``: nothing is downloaded, no build cache is
  written, cgo is off). Each of the three processes is exec'ed by a launcher forked from the
  zygote under the layers every runner's process gets (its session, the child rlimits, nobody,
  the ``runner`` seccomp program: threads only, no new processes, no sockets) and a Landlock
  ruleset of its own: the compiler and the linker execute only themselves, read the toolchain and
  read and write the build directory; the binary executes only itself and reads nothing. A
  candidate that does not compile is answered for the checker: every test's outcome is
  ``error:CompileError``, the compiler's messages its output.

Go's runtime reserves more address space than it uses: RLIMIT_AS is the memory limit and
:data:`_AS_HEADROOM` more, and the runtime's own soft limit (``GOMEMLIMIT``) is the memory
limit. A binary that links dynamically (an import that needs cgo) is refused as a compile error.
"""

from __future__ import annotations

import os
import re
import select
import signal
import time

TYPE_CHECKING = False  # type checkers take it as True; typing is not imported in the sandbox
if TYPE_CHECKING:
    from typing import Any

try:
    from ...execution import _exec_runner, _wire, _zygote
except ImportError:  # a top-level module in the sandbox, with execution/ on sys.path
    import _exec_runner  # type: ignore[no-redef, import-not-found]
    import _wire  # type: ignore[no-redef, import-not-found]
    import _zygote  # type: ignore[no-redef, import-not-found]

# What a Go item's ``raises`` names: a panic, or a runtime error (an index out of range, a nil
# map write, an integer division by zero), as the driver reports them.
GO_EXCEPTIONS = frozenset({"panic", "runtime_error"})
COMPILE_ERROR = "error:CompileError"
BUILD_S = 60.0  # the build's own wall clock (compile and link), not the suite's
# What Go's runtime reserves beyond what it uses (its heap arenas' index, its stacks): it does
# not start under an RLIMIT_AS of 600 MiB; the rest of the limit is GOMEMLIMIT's heap.
_AS_HEADROOM = 1 << 30
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}\Z")
_MAX_MESSAGES = 8192  # bytes of the compiler's messages kept as the suite's output


def entry_table(names: list[str], package: str) -> str:
    """A candidate's generated table: the entry points the calls name, by name."""
    rows = "".join(f'\t"{n}": {n},\n' for n in sorted(set(names)) if _NAME.match(n))
    return f"package {package}\n\nvar ExecretrievalTable = map[string]any{{\n{rows}}}\n"


def tables_file(packages: list[str]) -> str:
    """The binary's ``execretrieval_tables``: each compiled candidate's table, in order."""
    imports = "".join(f'\t"{p}"\n' for p in packages)
    rows = "".join(f"\t{p}.ExecretrievalTable,\n" for p in packages)
    return (
        f"package main\n\nimport (\n{imports})\n\n"
        f"var execretrieval_tables = []map[string]any{{\n{rows}}}\n"
    )


_IMPORT = re.compile(r'^\s*(?:[A-Za-z_.][A-Za-z0-9_]*\s+)?"([^"\n]*)"', re.M)


def _cgo_imports(code: str, cgo: frozenset[str]) -> str:
    """The first package needing cgo among the import paths ``code`` names ("" if none): the
    binary is linked without it (``link -d``), so such a candidate is refused on its own."""
    head = code.split("func ", 1)[0]  # imports come before the first declaration
    for path in _IMPORT.findall(head.replace("import", "\n")):
        if path in cgo or path == "C":
            return path
    return ""


class _Batch:
    """The candidates one binary serves (an item's; one suite's code alone without a batch),
    and the one this suite runs."""

    __slots__ = ("codes", "index", "key")

    def __init__(self, key: str | None, codes: tuple[str, ...], index: int) -> None:
        self.key, self.codes, self.index = key, codes, index


def _batch(run: dict[str, Any]) -> _Batch:
    """The suite's batch (``run["batch"]``: its id, its codes, the suite's index), checked:
    anything malformed, or codes that do not hold this suite's, is a batch of this suite."""
    code = str(run["code"])
    found = run.get("batch")
    if isinstance(found, dict):
        key, codes, index = found.get("id"), found.get("codes"), found.get("index")
        if (
            isinstance(key, str)
            and isinstance(codes, list)
            and all(isinstance(c, str) for c in codes)
            and type(index) is int
            and 0 <= index < len(codes)
            and codes[index] == code
        ):
            return _Batch(key, tuple(codes), index)
    return _Batch(None, (code,), 0)


class _Built:
    """A batch's build: each candidate's slot in the binary, or what the compiler said."""

    def __init__(self, key: str | None, folder: str) -> None:
        self.key = key  # None: a single suite's build, never reused
        self.folder = folder
        self.slots: dict[int, int] = {}
        self.refused: dict[int, bytes] = {}
        self.binary = ""
        self.lost = ""  # why the build failed (the sandbox's failure, not the code's)


class _GoPlan(_exec_runner._Plan):
    exceptions = GO_EXCEPTIONS


class _GoChecker(_exec_runner._Checker):
    """The shared checker with Go's exception names and time for the build."""

    plan_class = _GoPlan
    build_s = BUILD_S  # the zygote reports the suite's end after the build and the run


class _GoLayers(_zygote._Layers):
    """The Python zygote's layers with the toolchain's paths; a build directory in the scratch
    directory, whose binary alone a child may execute."""

    scratch_execute = True

    def __init__(self, confine: Any, limits: dict[str, Any], seccomp: Any, go: dict) -> None:
        super().__init__(confine, limits, seccomp)
        self.goroot = os.path.realpath(go["goroot"])
        self.compiler = os.path.realpath(go["compile"])
        self.linker = os.path.realpath(go["link"])
        with open(os.path.realpath(go["driver"]), encoding="utf-8") as fh:
            self.driver = fh.read()
        self.importcfg = str(go["importcfg"])  # where each standard package's archive is
        self.reads = [os.path.realpath(p) for p in go.get("reads", ())]
        self.cgo_packages = frozenset(go.get("cgo_packages", ()))
        self.tool_rulesets: dict[str, Any] = {}

    def exposed(self) -> list[str]:
        """The interpreter's trees, the toolchain, and ``/proc`` (the zygote lists its PID
        namespace there; no child gets it)."""
        return sorted({*_zygote._python_paths(), self.goroot, *self.reads, "/proc"})

    def _child_landlock(self) -> None:
        """One ruleset per tool: execute it, read the toolchain, read and write the scratch
        directory (execute nothing there); no TCP; signals and abstract sockets scoped."""
        c = self.c
        for tool in (self.compiler, self.linker):
            ruleset = c.LandlockRuleset(self.landlock_abi)
            ruleset.allow_paths([tool], c.FS_EXECUTE | c.FS_READ_FILE)
            ruleset.allow_paths([self.goroot, *self.reads], c.FS_READ_FILE | c.FS_READ_DIR)
            ruleset.allow_paths(["/dev/null"], c.FS_READ_FILE | c.FS_WRITE_FILE)
            scratch = ruleset.fs & ~(c.FS_MAKE_CHAR | c.FS_MAKE_BLOCK | c.FS_EXECUTE)
            ruleset.allow_paths([self.scratch], scratch)
            ruleset.fd = _wire._high(ruleset.fd)
            self.tool_rulesets[tool] = ruleset

    def binary_ruleset(self, binary: str) -> Any:
        """The binary's ruleset, made once it exists (a rule holds the file it opened)."""
        c = self.c
        if not self.landlock_abi or not self.tool_rulesets:
            return None
        ruleset = c.LandlockRuleset(self.landlock_abi)
        ruleset.allow_paths([binary], c.FS_EXECUTE | c.FS_READ_FILE)
        ruleset.allow_paths(["/dev/null"], c.FS_READ_FILE | c.FS_WRITE_FILE)
        ruleset.fd = _wire._high(ruleset.fd)
        return ruleset


class _GoZygote(_exec_runner.ExecZygote):
    """Builds and serves each suite with a binary of its own (see the module docs)."""

    layers: _GoLayers

    as_headroom = _AS_HEADROOM

    def __init__(self, pipes: _wire.Pipes, layers: _GoLayers, limits: dict[str, Any]) -> None:
        super().__init__(pipes, layers, limits)
        self.built: _Built | None = None
        memory = int(limits.get("memory_bytes") or 0)
        self.env = {"GOMAXPROCS": "2", "GOTRACEBACK": "single"}
        if memory:
            self.env["GOMEMLIMIT"] = str(memory)

    def serve(self) -> None:
        try:
            while True:
                req = _wire._recv(self.pipes.zc_r, _wire._MAX_RUN)
                if req is None:
                    return
                if "run" in req:
                    _wire._send(self.pipes.zr_w, self.run(req["run"]))
        finally:
            self._retire(self.current)

    def run(self, run: dict[str, Any]) -> dict[str, Any]:
        batch = _batch(run)
        ended, status = "exited", 0
        if self.built is None or self.built.key is None or self.built.key != batch.key:
            self._retire(self.current)
            self.current = None
            self._clean_scratch()  # the last batch's build
            try:
                self.built = self._build(batch, run["calls"])
            except OSError as exc:
                self.built = None
                os.write(self.pipes.out_w, f"the build failed: {exc}".encode())
                ended = "lost"
        built = self.built
        if built is not None and built.lost:
            os.write(self.pipes.out_w, built.lost.encode("utf-8", "replace"))
            ended, self.built = "lost", None
        elif built is not None and batch.index in built.refused:
            # Code that does not compile: the checker is told as the driver would tell it.
            os.write(self.pipes.out_w, built.refused[batch.index])
            for frame in ({"m": COMPILE_ERROR}, {"d": 1}):
                _wire._send(self.pipes.rep_w, frame)
        elif built is not None:
            ended, status = self._serve_suite(built, batch.index, run)
        if ended == "lost":
            return {"exit": "lost", "why": "the build did not run", "status": status,
                    "left": False, "scratch": ""}  # fmt: skip
        return {"exit": ended, "status": status, "left": self._strays(), "scratch": ""}

    def _build(self, batch: _Batch, calls: list[Any]) -> _Built:
        """Compile each candidate as a package of its own, then one binary of those that
        compile (see the module docs)."""
        layers = self.layers
        build = os.path.join(layers.scratch, "build")
        os.mkdir(build, 0o755)
        if layers.child_uid is not None:
            os.chown(build, layers.child_uid, layers.child_uid)
        built = _Built(batch.key, build)
        names = [c[1] for c in calls if isinstance(c, list) and len(c) == 3]
        deadline = time.monotonic() + BUILD_S
        archives: list[str] = []
        self._write(build, "std.cfg", layers.importcfg)
        for k, code in enumerate(batch.codes):
            package = f"c{k}"
            needs = _cgo_imports(code, layers.cgo_packages)
            if needs:
                built.refused[k] = f"imports {needs}, which needs cgo (off here)".encode()
                continue
            self._write(build, f"{package}.go", f"package {package}\n\n{code}")
            self._write(build, f"{package}_table.go", entry_table(names, package))
            sources = [f"{package}.go", f"{package}_table.go"]
            argv = [layers.compiler, "-p", package, "-complete", "-importcfg", "std.cfg"]
            argv += ["-pack", "-o", f"{package}.a", *sources]
            ended, status, said = self._step(argv, build, deadline)
            if ended != "exited":
                built.lost = f"compiling candidate {k + 1}: {ended}"
                return built
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
                built.slots[k] = len(archives)
                archives.append(package)
            elif os.WIFEXITED(status):
                built.refused[k] = said
            else:
                built.lost = f"the compiler died on candidate {k + 1}: {said[-300:]!r}"
                return built
        if not archives:
            return built
        cfg = layers.importcfg + "".join(f"packagefile {a}={build}/{a}.a\n" for a in archives)
        self._write(build, "main.cfg", cfg)
        self._write(build, "main.go", layers.driver)
        self._write(build, "main_tables.go", tables_file(archives))
        steps = (
            [layers.compiler, "-p", "main", "-complete", "-importcfg", "main.cfg", "-pack",
             "-o", "main.a", "main.go", "main_tables.go"],
            [layers.linker, "-importcfg", "main.cfg", "-buildmode=exe", "-d", "-s", "-w",
             "-o", "bin", "main.a"],
        )  # fmt: skip
        for argv in steps:
            ended, status, said = self._step(argv, build, deadline)
            if ended != "exited" or not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
                built.lost = f"building the binary: {ended}: {said[-600:]!r}"
                return built
        built.binary = os.path.join(build, "bin")
        return built

    def _write(self, build: str, name: str, text: str) -> None:
        with open(os.path.join(build, name), "w", encoding="utf-8") as fh:
            fh.write(text)

    def _step(self, argv: list[str], build: str, deadline: float) -> tuple[str, int, bytes]:
        """Run one build step; how it ended, its status and what it said (bounded)."""
        layers = self.layers
        env = {"TMPDIR": build, "GOROOT": layers.goroot, "GOMAXPROCS": "2"}
        said_r, said_w = os.pipe()
        try:
            pid = self._start(argv, env, build, layers.tool_rulesets.get(argv[0]), None, said_w)
        finally:
            os.close(said_w)
        try:
            ended, status, said = self._wait_pid(pid, deadline, said_r)
        finally:
            os.close(said_r)
        return ended, status, said

    def _serve_suite(self, built: _Built, index: int, run: dict[str, Any]) -> tuple[str, int]:
        """Serve the suite with the batch's binary, started when none is running."""
        proc = self.current
        if proc is None:
            proc = self.current = self._start_binary(built.binary)
            if not self._ready(proc):
                self._retire(proc)
                self.current = None
                return "lost", 0
        deadline = time.monotonic() + float(run["limits"]["timeout_s"])
        try:
            _wire._send(proc.run_w, {"candidate": built.slots[index], "calls": run["calls"]})
        except OSError:
            pass  # it died: _wait sees the exit
        ended, status = self._wait(proc, deadline)
        if ended != "done":
            self._retire(proc)  # never reused: the next suite starts the binary again
            self.current = None
        return ("exited" if ended == "done" else ended), status

    def _start_binary(self, binary: str) -> _exec_runner._Proc:
        ruleset = self.layers.binary_ruleset(binary)
        run_r, run_w = (_wire._high(fd) for fd in os.pipe())
        note_r, note_w = (_wire._high(fd) for fd in os.pipe())
        try:
            pid = self._start([binary], self.env, "/", ruleset, (run_r, note_w))
        finally:
            os.close(run_r)
            os.close(note_w)
            if ruleset is not None:
                ruleset.close()
        return _exec_runner._Proc(pid, run_w, note_r)

    def _wait_pid(self, pid: int, deadline: float, said_r: int) -> tuple[str, int, bytes]:
        """Until a build step exits ("exited"), its clock runs out or the checker aborts;
        what it wrote to ``said_r`` (the first :data:`_MAX_MESSAGES` bytes) with it."""
        proc = _exec_runner._Proc(pid, -1, -1)  # no pipes: a build step speaks no protocol
        said = bytearray()
        watch = [self.pipes.zc_r, said_r] + ([proc.pidfd] if proc.pidfd is not None else [])
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return "timeout", self._kill(proc), bytes(said)
                ready = select.select(watch, [], [], min(remaining, 0.05))[0]
                if said_r in ready:
                    chunk = os.read(said_r, 65536)
                    if chunk:
                        said += chunk[: max(0, _MAX_MESSAGES - len(said))]
                        continue
                    watch.remove(said_r)  # its end is closed: it exited
                if self.pipes.zc_r in ready and self._abort_requested():
                    return "aborted", self._kill(proc), bytes(said)
                waited, status = os.waitpid(pid, os.WNOHANG)
                if waited:
                    return "exited", status, bytes(said)
        finally:
            if proc.pidfd is not None:
                os.close(proc.pidfd)

    def _start(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        ruleset: Any,
        suite_fds: tuple[int, int] | None,
        said_w: int | None = None,
    ) -> int:
        """Fork a launcher that confines itself and execs ``argv``: a build step (what it
        says goes to ``said_w``) or, with ``suite_fds`` (its run pipe, its note pipe), the
        binary on the driver's fds (what it prints is the suite's output)."""
        pid = os.fork()
        if pid == 0:
            try:
                self._launch(argv, env, cwd, ruleset, suite_fds, said_w)
            except BaseException as exc:  # noqa: BLE001 - the sandbox's own failure: say so
                note = f"go launcher failed: {type(exc).__name__}: {exc}\n"
                try:
                    os.write(2, note.encode("utf-8", "replace"))
                finally:
                    os._exit(70)
            finally:
                os._exit(70)
        return pid

    def _launch(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        ruleset: Any,
        suite_fds: tuple[int, int] | None,
        said_w: int | None,
    ) -> None:
        import resource

        layers = self.layers
        os.setsid()
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        for which, pair in self.rlimits:
            resource.setrlimit(which, pair)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(self.pipes.out_w if said_w is None else said_w, 1)
        os.dup2(self.pipes.out_w if said_w is None else said_w, 2)
        if suite_fds is not None:
            run_r, note_w = suite_fds
            os.dup2(run_r, _exec_runner.RUN_FD)
            os.dup2(self.pipes.rep_w, _exec_runner.REPLY_FD)
            os.dup2(note_w, _exec_runner.ZYGOTE_FD)
        if ruleset is not None:
            ruleset.restrict_self()
        os.closerange(_exec_runner.ZYGOTE_FD + 1, self.open_max)
        os.chdir(cwd)
        layers.drop_child()
        layers.c.execve_fixed(argv[0], argv, env)


class Flavour:
    """What :func:`._zygote._zygote_process` needs to be the Go runner's zygote."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def layers(self, confine: Any, limits: dict[str, Any], seccomp: Any) -> _GoLayers:
        return _GoLayers(confine, limits, seccomp, self.options)

    def serve(self, pipes: _wire.Pipes, layers: _GoLayers, limits: dict[str, Any]) -> None:
        _GoZygote(pipes, layers, limits).serve()


Checker = _GoChecker  # the checker this runner module names (_sandbox_child._import_runner)
