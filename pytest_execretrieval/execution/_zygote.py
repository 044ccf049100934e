"""The zygote: forked by the checker at startup, before any request, so its memory holds no test.

Standard library only (and :mod:`._confine` for the kernel layers, passed in by the checker).
It sets up the kernel layers once (:class:`_Layers`) and forks one child (:mod:`._child`) per
suite, ahead of time: a *spare* confined child waits for its suite on a pipe. It enforces the
wall clock, kills every process the suite left and empties the scratch directory. It never
sees a check.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import sys
import time

TYPE_CHECKING = False  # type checkers take it as True; typing is not imported in the sandbox
if TYPE_CHECKING:
    from typing import Any

try:
    from . import _child
except ImportError:  # a top-level module in the sandbox, with this directory on sys.path
    import _child  # type: ignore[no-redef, import-not-found]

try:
    from . import _grammar
except ImportError:  # a top-level module in the sandbox, with this directory on sys.path
    import _grammar  # type: ignore[no-redef, import-not-found]

try:
    from . import _wire
except ImportError:  # a top-level module in the sandbox, with this directory on sys.path
    import _wire  # type: ignore[no-redef, import-not-found]

# Imported once in the zygote so that forked children get them for free: what algorithmic
# snippets import most (98% of the import statements in the bundled pool). The list is short on
# purpose: every module makes each fork and each child's exit dearer. Not `threading` (nor
# `subprocess`, `queue`, which import it): its after-fork handler alone costs every child 0.3 ms.
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
SCRATCH = "/tmp"  # noqa: S108 - a private tmpfs in the zygote's mount namespace
# Fork and confine the next suite's child as soon as a suite ends, even when the next request is
# already waiting (a caller that submits ahead, Sandbox.submit, always has one): its set-up then
# overlaps with the checker's preparing of that request and the caller's own work. It lowers
# the wall time of one serial chain (caller -> checker -> child) by using a second core for the
# child's set-up; it does not lower the CPU time a suite costs.
PREFORK = True


# --- zygote ------------------------------------------------------------------------------------


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


def _describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"killed by {name}"
    return f"status {os.waitstatus_to_exitcode(status)}"


def empty_dir(path: str) -> int:
    """Remove everything beneath ``path`` (not ``path`` itself); returns entries left behind.

    Iterative and fd-relative (``dir_fd``), so neither depth nor path length matters, and it
    never raises: what cannot be removed is counted. Directories the snippet made unreadable
    are opened again after a ``chmod``.
    """
    left = 0
    try:
        root = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return 1
    stack: list[tuple[int, str]] = [(root, "")]  # (dir fd, its name in the parent)
    try:
        while stack:
            fd, _ = stack[-1]
            descended = False
            try:
                entries = list(os.scandir(fd))
            except OSError:
                entries = []
                left += 1
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if not is_dir:
                    try:
                        os.unlink(entry.name, dir_fd=fd)
                    except OSError:
                        left += 1
                    continue
                try:
                    os.chmod(entry.name, 0o700, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    pass
                try:
                    sub = os.open(
                        entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd
                    )
                except OSError:
                    left += 1
                    continue
                stack.append((sub, entry.name))
                descended = True
                break
            if descended:
                continue
            fd, name = stack.pop()
            os.close(fd)
            if stack:
                try:
                    os.rmdir(name, dir_fd=stack[-1][0])
                except OSError:
                    left += 1
                    if left > 1_000_000:
                        break
    except BaseException:  # noqa: BLE001 - clean-up must not take the zygote down
        left += 1
    finally:
        for fd, _ in stack:
            try:
                os.close(fd)
            except OSError:
                pass
    return left


def _parsed_call(call: Any) -> tuple[str, Any] | None:
    """A test's ``[kind, source]`` read by the grammar once, for every child of the suite:
    ``(kind, parsed)``, or ``(kind, reason)`` if it does not read; None for a test without."""
    if call is None:
        return None
    kind, source = call
    try:
        return kind, _grammar.parse_call(source)
    except Exception as exc:  # noqa: BLE001 - the checker planned it: this is never reached
        return kind, f"{type(exc).__name__}: {exc}"[:200]


class _Zygote:
    """Forks one child per suite; knows nothing about the tests' checks.

    The next suite's child is forked and confined as soon as a suite ends (a *spare*, waiting
    for its suite on a pipe), so its set-up overlaps with the caller's own work between suites.
    The suite's wall clock starts when the spare is handed its suite.
    """

    def __init__(self, pipes: _wire.Pipes, layers: Any, limits: dict[str, Any]) -> None:
        self.pipes, self.layers, self.limits = pipes, layers, limits
        self._compiled: dict[tuple[int, str], tuple[Any, list]] = {}
        self.fresh = _child.fresh_namespaces()  # each child's own copy, by fork
        self.reporter = _child._Reporter(_child.REPLY_FD)  # and the audit guard, made once
        self.guard = _child._make_guard(layers.scratch, self.reporter)
        # (pid, the write end of its own go pipe or None when it reads pipes.go_r, its limits)
        self.spare: tuple[int, int | None, dict[str, Any]] | None = None
        self._rlimits: tuple[dict[str, Any], list[tuple[int, tuple[int, int]]]] | None = None
        self.open_max = max(os.sysconf("SC_OPEN_MAX"), 1024)

    def rlimits(self, limits: dict[str, Any]) -> list[tuple[int, tuple[int, int]]]:
        """:func:`_child_rlimits` of ``limits`` (the last ones computed are kept)."""
        if self._rlimits is None or (
            self._rlimits[0] is not limits and self._rlimits[0] != limits  # `is`: no faults
        ):
            self._rlimits = (limits, _child._child_rlimits(limits))
        return self._rlimits[1]

    def compiled(self, run: dict[str, Any]) -> tuple[Any, list]:
        """``run``'s setup and calls compiled, kept for the children forked later (the last
        :data:`_wire._PLANS_KEPT` suites'), under the checker's serial of its plan and the setup."""
        key = (run["plan"], run["setup"])
        found = self._compiled.pop(key, None) or self._compile(run)
        if len(self._compiled) >= _wire._PLANS_KEPT:
            del self._compiled[next(iter(self._compiled))]  # least recently used
        self._compiled[key] = found
        return found

    def inherited(self, run: dict[str, Any]) -> tuple[Any, list]:
        """In a child: :meth:`compiled` as the zygote had it at the fork, nothing changed (a
        child that writes the zygote's objects pays a copy-on-write fault for each page)."""
        return self._compiled.get((run["plan"], run["setup"])) or self._compile(run)

    @staticmethod
    def _compile(run: dict[str, Any]) -> tuple[Any, list]:
        return (
            _child._compile(run["setup"], "<setup>"),
            [_parsed_call(c) for c in run["calls"]],
        )

    def serve(self) -> None:
        try:
            while True:
                if self.spare is None and self.limits and PREFORK:
                    self.spare = self._spawn(self.limits)
                req = _wire._recv(self.pipes.zc_r, _wire._MAX_RUN)
                if req is None:
                    return
                if "run" not in req:
                    continue  # an abort that crossed the suite's end: nothing left to stop
                reply = self.run(req["run"])
                _wire._send(self.pipes.zr_w, reply)
        finally:
            self._drop_spare()

    def _drop_spare(self) -> None:
        if self.spare is not None:
            pid, go_w, _ = self.spare
            self.spare = None
            if go_w is not None:
                os.close(go_w)  # EOF: it exits; the kill is for one still setting up
            _signal_group(pid, signal.SIGKILL)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass

    def run(self, run: dict[str, Any]) -> dict[str, Any]:
        """One suite. ``run["direct"]``: the checker wrote the run frame on the go pipe, where
        the spare (or the child forked now) reads it; otherwise it is sent on a pipe of the
        child's own, forked for it."""
        limits, direct = run["limits"], bool(run.get("direct"))
        if self.spare is not None and (
            self.spare[2] != limits or (self.spare[1] is None) != direct
        ):
            self._drop_spare()
        if self.spare is None:
            self.spare = self._spawn(limits, shared=direct)
        pid, go_w, _ = self.spare
        self.spare = None
        deadline = time.monotonic() + float(limits["timeout_s"])
        if go_w is not None:
            try:
                _wire._send(go_w, run)
            except OSError:
                pass  # it died setting up: _wait() sees the exit
            finally:
                os.close(go_w)
        self.compiled(run)  # for the spares to come, while this one runs
        try:
            ended, status = self._wait(pid, deadline)
        finally:
            left = self._reap_all(pid)
            self._drain_go()
        return {
            "exit": ended,
            "status": status,
            "left": left,
            "scratch": self._clean_scratch(),
        }

    def _drain_go(self) -> None:
        """Discard what a child of the suite left unread on the go pipe (it died before reading
        its run frame, or midway): the next spare must find it empty. Nothing writes there now:
        the checker writes the next run only after this suite's reply."""
        go_r = self.pipes.go_r
        while select.select([go_r], [], [], 0)[0] and os.read(go_r, 1 << 16):
            pass

    def _spawn(
        self, limits: dict[str, Any], shared: bool = True
    ) -> tuple[int, int | None, dict[str, Any]]:
        """Fork a child that waits for its run frame on the go pipe (``shared``) or on a pipe
        of its own, whose write end is returned."""
        self.rlimits(limits)  # computed here, inherited by the child
        if shared:
            go_r, go_w = self.pipes.go_r, None
        else:
            go_r, go_w = (_wire._high(fd) for fd in os.pipe())
        pid = os.fork()
        if pid == 0:  # child: never returns into the zygote loop
            try:
                if go_w is not None:
                    os.close(go_w)
                _child._child_main(limits, self, go_r)
                os._exit(0)
            except BaseException as exc:  # noqa: BLE001 - the sandbox's own failure: say so
                note = f"sandbox child failed: {type(exc).__name__}: {exc}\n"
                try:
                    os.write(self.pipes.out_w, note.encode("utf-8", "replace"))
                finally:
                    os._exit(70)
            finally:
                os._exit(70)
        if go_w is not None:
            os.close(go_r)
        return pid, go_w, limits

    def _wait(self, pid: int, deadline: float) -> tuple[str, int]:
        """Until the child exits ("exited"), the wall clock runs out ("timeout") or the checker
        aborts the suite ("aborted": the child broke the protocol, nothing it says counts)."""
        pidfd = _pidfd(pid)
        try:
            while True:
                remaining = deadline - time.monotonic()
                ended = "timeout" if remaining <= 0 else None
                if ended is None and self._abort_requested():
                    ended = "aborted"
                if ended is not None:
                    _signal_group(pid, signal.SIGKILL)
                    try:
                        os.kill(pid, signal.SIGKILL)  # in case it died before setsid()
                    except ProcessLookupError:
                        pass
                    return ended, os.waitpid(pid, 0)[1]
                if pidfd is not None:
                    ready = select.select([pidfd, self.pipes.zc_r], [], [], remaining)[0]
                    if pidfd in ready:
                        return "exited", os.waitpid(pid, 0)[1]
                else:
                    reaped, status = os.waitpid(pid, os.WNOHANG)
                    if reaped == pid:
                        return "exited", status
                    time.sleep(min(remaining, 0.002))
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def _abort_requested(self) -> bool:
        """Whether the checker sent ``{"abort": 1}`` (the only frame it sends during a suite)."""
        if not select.select([self.pipes.zc_r], [], [], 0)[0]:
            return False
        req = _wire._recv(self.pipes.zc_r)
        if req is None:
            raise EOFError("the checker is gone")
        return "abort" in req

    def _reap_all(self, pid: int) -> bool:
        """Kill and reap every process the suite left; True if there were any."""
        left = _signal_group(pid, 0)
        _signal_group(pid, signal.SIGKILL)
        if self.layers.pid_namespace:  # we are init here: -1 is exactly the suite's processes
            try:
                os.kill(-1, 0)
                left = True
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
        else:
            for orphan in _reparented_children():
                left = True
                try:
                    os.kill(orphan, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        while True:  # we are a subreaper (or init): orphans of the suite are our children
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
            except InterruptedError:
                continue
        return left

    def _clean_scratch(self) -> str:
        """Empty the scratch directory; a non-empty string says what went wrong."""
        scratch = self.layers.scratch
        note = ""
        if self.layers.scratch_bytes:
            try:
                st = os.statvfs(scratch)
                if st.f_bavail == 0 or st.f_favail == 0:
                    note = (
                        f"scratch space limit reached ({self.layers.scratch_bytes} bytes, "
                        f"{self.layers.scratch_inodes} files and directories)"
                    )
            except OSError:
                pass
        left = empty_dir(scratch)
        if left:
            note = "; ".join(filter(None, [note, f"{left} scratch entries could not be removed"]))
        return note


def _reparented_children() -> list[int]:
    """Our live children (orphans of a suite, as subreaper) when there is no PID namespace."""
    pids: list[int] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as fh:
                pids += [int(p) for p in fh.read().split()]
    except OSError:
        pass
    return pids


# --- kernel layers (zygote) --------------------------------------------------------------------

LAYER_NAMES = (
    "user_namespace",
    "pid_namespace",
    "net_namespace",
    "mount_namespace",
    "ipc_namespace",
    "landlock",
    "seccomp",
    "no_new_privs",
    "unprivileged_uid",
)


def _python_paths() -> list[str]:
    """Directories the interpreter and the standard library (and site-packages) live in."""
    paths = [sys.base_prefix, sys.prefix, sys.exec_prefix, sys.base_exec_prefix, *sys.path]
    return sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)})


_SYSTEM_READ = (
    "/usr/lib",
    "/usr/lib64",
    "/lib",
    "/lib64",
    "/usr/local/lib",
    "/etc/ld.so.cache",
    "/usr/share/zoneinfo",
    "/etc/localtime",
    "/dev/urandom",
    "/dev/random",
)


def _private_ancestor(path: str) -> str | None:
    """The first ancestor of ``path`` that others may not traverse (mode lacks o+x)."""
    current = "/"
    for part in path.strip("/").split("/"):
        current = os.path.join(current, part)
        try:
            if not os.stat(current).st_mode & 0o001:
                return current
        except OSError:
            return None
    return None


# Covered by an empty read-only tmpfs in the zygote's mount namespace (/var/run is usually a
# link to /run: mounted once).
_EMPTIED = ("/dev/shm", "/run", "/var/run")


def _expose_python(c: Any, paths: list[str] | None = None) -> None:
    """In a new mount namespace: make mounts private, and make the interpreter (or ``paths``)
    reachable for an unprivileged uid without exposing the rest of a private home (a tmpfs over
    the private ancestor, the needed trees bound back). Used by the checker and by the
    zygotes."""
    c.mount(None, "/", None, c.MS_REC | c.MS_PRIVATE)
    needed: dict[str, list[str]] = {}
    for path in _python_paths() if paths is None else paths:
        ancestor = _private_ancestor(path)
        if ancestor is not None:
            needed.setdefault(ancestor, []).append(path)
    for ancestor, paths in needed.items():
        keep = [p for p in paths if not any(p.startswith(q + "/") for q in paths if q != p)]
        handles = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in keep}
        c.mount("tmpfs", ancestor, "tmpfs", c.MS_NOSUID | c.MS_NODEV, "mode=0755,size=1m")
        for path, handle in handles.items():
            os.makedirs(path, 0o755, exist_ok=True)
            c.mount(f"/proc/self/fd/{handle}", path, None, c.MS_BIND | c.MS_REC)
            os.close(handle)


class _Layers:
    """Sets up and applies the kernel layers; ``report()`` says which are in force and why not.

    The Node runner's zygote (:class:`._node._NodeLayers`) is this with other paths, a
    ``noexec`` scratch directory and a child ruleset of its own."""

    scratch_flags = 2 | 4  # MS_NOSUID | MS_NODEV (the scratch tmpfs)
    # Whether a child may execute what lies in the scratch directory (the Go runner's binary;
    # each of its children's own rulesets names the one file it may execute).
    scratch_execute = False
    contexts = ""  # the directory of the prepared contexts (Sandbox's ``contexts``), or ""

    def __init__(
        self, confine: Any, limits: dict[str, Any], seccomp: tuple[bytes, ...] | str
    ) -> None:
        self.c = confine
        self.seccomp = seccomp  # (server, child) BPF programs, or why there are none
        self.active: dict[str, bool] = dict.fromkeys(LAYER_NAMES, False)
        self.missing: dict[str, str] = {}
        self.scratch = SCRATCH
        self.scratch_bytes = int(limits.get("scratch_bytes") or 0)
        self.scratch_inodes = int(limits.get("scratch_inodes") or 0)
        self.pid_namespace = False
        self.landlock_abi = 0
        self.child_uid: int | None = None
        self.child_ruleset: Any = None
        self.child_seccomp: Any = None  # a _confine.SeccompProgram
        self.outer_uid = os.geteuid()
        self._ns_flags = 0

    def _miss(self, layers: tuple[str, ...] | str, reason: str) -> None:
        for name in (layers,) if isinstance(layers, str) else layers:
            self.missing.setdefault(name, reason)

    def enter_namespaces(self, sync_w: int, sync_r: int) -> bool:
        """unshare() and, with a user namespace, let the checker write our uid/gid maps.

        Returns whether a PID namespace was created (the caller then forks its init).
        """
        c = self.c
        others = c.CLONE_NEWNS | c.CLONE_NEWNET | c.CLONE_NEWIPC | c.CLONE_NEWPID | c.CLONE_NEWUTS
        try:
            c.unshare(c.CLONE_NEWUSER | others)
            self._ns_flags = c.CLONE_NEWUSER | others
        except OSError as exc:
            self._miss("user_namespace", f"unshare(CLONE_NEWUSER) failed: {exc}")
            try:
                c.unshare(others)
                self._ns_flags = others
            except OSError as exc2:
                names = ("pid_namespace", "net_namespace", "mount_namespace", "ipc_namespace")
                self._miss(names, f"unshare failed: {exc2}")
        if self._ns_flags & c.CLONE_NEWUSER:
            # With our pid as the host's /proc names it: the checker, in a PID namespace of
            # its own, knows us by another number.
            os.write(sync_w, b"u" + os.readlink("/proc/self").encode() + b"\n")
            if os.read(sync_r, 1) != b"k":
                raise OSError("the checker could not write the user namespace's uid/gid maps")
            self.active["user_namespace"] = True
        else:
            os.write(sync_w, b"n")
        for flag, name in (
            (c.CLONE_NEWNET, "net_namespace"),
            (c.CLONE_NEWIPC, "ipc_namespace"),
        ):
            self.active[name] = bool(self._ns_flags & flag)
        if self._ns_flags & c.CLONE_NEWNS:
            try:
                self._mounts()
                self.active["mount_namespace"] = True
            except OSError as exc:
                self._miss("mount_namespace", f"mount setup failed: {exc}")
        return bool(self._ns_flags & c.CLONE_NEWPID)

    def exposed(self) -> list[str]:
        """The trees an unprivileged child must reach (and the zygote read): the interpreter's,
        and the prepared contexts (read-only, like the rest)."""
        return _python_paths() + ([self.contexts] if os.path.isdir(self.contexts) else [])

    def _mounts(self) -> None:
        c = self.c
        _expose_python(c, self.exposed())
        # Host directories that hold sockets and shared memory: empty here, as /tmp is. (The
        # seccomp filter denies socket() anyway; this also hides what lives there.)
        for path in sorted({os.path.realpath(p) for p in _EMPTIED if os.path.isdir(p)}):
            flags = c.MS_NOSUID | c.MS_NODEV | c.MS_NOEXEC | c.MS_RDONLY
            c.mount("tmpfs", path, "tmpfs", flags, "mode=0755,size=16k,nr_inodes=16")
        if self.scratch_bytes:
            uid = self.child_id()
            opts = f"size={self.scratch_bytes},nr_inodes={self.scratch_inodes},mode=0700"
            if uid is not None:
                opts += f",uid={uid},gid={uid}"
            c.mount("tmpfs", SCRATCH, "tmpfs", self.scratch_flags, opts)

    def child_id(self) -> int | None:
        """The uid children switch to: nobody, when we can map it (we were root outside)."""
        if self.outer_uid != 0:
            return None
        return self.c.UNPRIVILEGED_ID

    def finish(self) -> None:
        """In the zygote proper (init of the PID namespace when there is one)."""
        c = self.c
        self.pid_namespace = bool(self._ns_flags & c.CLONE_NEWPID) and os.getpid() == 1
        self.active["pid_namespace"] = self.pid_namespace
        if self.pid_namespace:
            try:  # a /proc that shows this namespace only (Landlock hides it from children)
                c.mount("proc", "/proc", "proc", c.MS_NOSUID | c.MS_NODEV | c.MS_NOEXEC)
            except OSError:
                pass
        else:
            self._miss("pid_namespace", self.missing.get("pid_namespace", "not PID 1"))
            c.prctl(c.PR_SET_CHILD_SUBREAPER, 1)
        if not self.active["mount_namespace"] or not self.scratch_bytes:
            self._private_scratch()
        self._uid()
        try:
            c.set_no_new_privs()
            self.active["no_new_privs"] = bool(c.prctl(c.PR_GET_NO_NEW_PRIVS))
        except OSError as exc:
            self._miss("no_new_privs", str(exc))
        self._landlock()
        self._seccomp()
        for name in LAYER_NAMES:
            if not self.active[name]:
                self._miss(name, "not set up")

    def _private_scratch(self) -> None:
        base = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else "/tmp"  # noqa: S108
        self.scratch = os.path.join(os.path.realpath(base), "execretrieval-" + os.urandom(8).hex())
        os.mkdir(self.scratch, 0o700)
        self.scratch_bytes = 0
        uid = self.child_id()
        if uid is not None and self.active["mount_namespace"]:
            os.chown(self.scratch, uid, uid)

    def _uid(self) -> None:
        uid = self.child_id()
        if uid is None:
            self.active["unprivileged_uid"] = True  # already unprivileged outside
            return
        if not self.active["mount_namespace"] and any(map(_private_ancestor, self.exposed())):
            self._miss(
                "unprivileged_uid",
                "the interpreter is under a private directory and "
                "there is no mount namespace to expose it",
            )
            return
        for cap in range(64):  # bounding set: nothing regained by exec (which seccomp denies)
            try:
                self.c.prctl(self.c.PR_CAPBSET_DROP, cap)
            except OSError:
                break
        self.child_uid = uid
        self.active["unprivileged_uid"] = True

    def _landlock(self) -> None:
        c = self.c
        self.landlock_abi = c.landlock_abi()
        if not self.landlock_abi:
            self._miss("landlock", "the kernel offers no Landlock ABI (not built or not enabled)")
            return
        try:
            ruleset = c.LandlockRuleset(self.landlock_abi)
            ruleset.allow_paths(self.exposed() + list(_SYSTEM_READ), c.READ_RIGHTS)
            ruleset.allow_paths(["/dev/null"], c.FS_READ_FILE | c.FS_WRITE_FILE)
            if not self.pid_namespace:
                ruleset.allow_paths([f"/proc/{os.getpid()}"], c.FS_READ_FILE | c.FS_READ_DIR)
            execute = 0 if self.scratch_execute else c.FS_EXECUTE
            denied = c.FS_MAKE_CHAR | c.FS_MAKE_BLOCK | execute
            ruleset.allow_paths([self.scratch], ruleset.fs & ~denied)
            ruleset.restrict_self()
            ruleset.close()
            self.active["landlock"] = True
            self._child_landlock()
        except OSError as exc:
            self._miss("landlock", str(exc))

    def _child_landlock(self) -> None:
        """The ruleset each child adds on top of the zygote's (the Python child: signal and
        abstract-socket scoping only)."""
        c = self.c
        if self.landlock_abi >= 6:  # children: signals and abstract sockets stay inside
            self.child_ruleset = c.LandlockRuleset(self.landlock_abi, scope_only=True)
            self.child_ruleset.allow_paths([self.scratch], c.FS_REFER)
            self.child_ruleset.fd = _wire._high(self.child_ruleset.fd)  # clear of the dup2s

    def _seccomp(self) -> None:
        if isinstance(self.seccomp, str):
            self._miss("seccomp", self.seccomp)
            return
        try:
            self.c.load_seccomp(self.seccomp[0])
            self.child_seccomp = self.c.SeccompProgram(self.seccomp[1])
            self.active["seccomp"] = True
        except OSError as exc:
            self._miss("seccomp", str(exc))

    def confine_child(self) -> None:
        if self.child_ruleset is not None:
            self.child_ruleset.restrict_self()

    def drop_child(self) -> None:
        if self.child_uid is not None:
            self.c.become(self.child_uid)
        if self.child_seccomp is not None:
            self.child_seccomp.load()

    def report(self) -> dict[str, Any]:
        return {
            "layers": dict(self.active),
            "missing": {k: v for k, v in self.missing.items() if not self.active.get(k)},
            "landlock_abi": self.landlock_abi,
            "child_uid": self.child_uid,
            "scratch_bytes": self.scratch_bytes or None,
            "scratch_inodes": self.scratch_inodes if self.scratch_bytes else None,
        }


def _zygote_process(
    confine: Any,
    pipes: _wire.Pipes,
    limits: dict[str, Any],
    checker: int,
    seccomp: tuple[bytes, ...] | str,
    flavour: Any = None,
    contexts: str = "",
) -> None:
    """Body of the process the checker forks at startup; never returns. ``flavour``: None for
    the Python zygote, else the Node runner's (:mod:`._node`: its ``layers``, ``prepare``
    and ``serve``). ``contexts``: the prepared contexts' directory, exposed read-only."""
    try:
        confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != checker:
            os._exit(1)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)  # the caller's pipes stay with the checker only
        os.close(devnull)
        layers = (_Layers if flavour is None else flavour.layers)(confine, limits, seccomp)
        layers.contexts = contexts if flavour is None else ""
        pid_namespace = layers.enter_namespaces(pipes.sync_w, pipes.sync_r)
        # A new user namespace changes our credentials, which clears the parent-death signal.
        confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != checker:
            os._exit(1)
        if pid_namespace:
            init = os.fork()
            if init:  # stay as the namespace's outside anchor until its init exits
                for fd in pipes.ends(checker=False):
                    os.close(fd)
                status = os.waitpid(init, 0)[1]
                os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
            confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)
        for name in PRELOAD if flavour is None else ():
            try:
                __import__(name)
            except ImportError:
                pass
        layers.finish()
        if flavour is None:
            _child._prepare_children(layers.scratch)
        gc.collect()
        gc.freeze()  # keep the preloaded heap shared with the forked children
        _wire._send(pipes.zr_w, {"layers": layers.report()})
        if flavour is None:
            _Zygote(pipes, layers, limits).serve()
        else:
            flavour.serve(pipes, layers, limits)
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - report and die; the checker reports it on
        try:
            _wire._send(pipes.zr_w, {"error": f"zygote setup failed: {type(exc).__name__}: {exc}"})
        finally:
            os._exit(1)
