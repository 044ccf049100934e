"""Kernel confinement for the sandbox: namespaces, Landlock, seccomp, no_new_privs, uid drop.

Stdlib + ``ctypes`` only (``pyseccomp``, a ctypes binding of libseccomp, when installed), so the
fork server can import it under ``python -I``. Each layer is probed, and every function here
either succeeds or raises :class:`LayerUnavailable` with the reason, so callers can run with the
best available set of layers and say exactly which are missing.

Syscall numbers: ``landlock_create_ruleset`` 444, ``landlock_add_rule`` 445 and
``landlock_restrict_self`` 446 are the generic numbers (``include/uapi/asm-generic/unistd.h``,
shared by x86-64 and arm64 since Linux 5.13). Constants come from ``include/uapi/linux/
landlock.h``, ``include/uapi/linux/sched.h``, ``include/uapi/linux/mount.h`` and
``include/uapi/linux/prctl.h``. Python 3.11 has no ``os.unshare``, hence ``libc.unshare``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
from collections.abc import Iterable

__all__ = [
    "UNPRIVILEGED_ID",
    "LandlockRuleset",
    "LayerUnavailable",
    "SeccompProgram",
    "become",
    "execve_fixed",
    "landlock_abi",
    "load_seccomp",
    "seccomp_filter",
    "seccomp_programs",
]

# sched.h
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000
# mount.h
MS_NOEXEC = 8
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1,
    2,
    4,
    32,
    4096,
    16384,
    1 << 18,
)
# prctl.h
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_SET_CHILD_SUBREAPER = 36
PR_CAPBSET_DROP = 24
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
# seccomp(2): SECCOMP_SET_MODE_FILTER with SECCOMP_FILTER_FLAG_SPEC_ALLOW (include/uapi/linux/
# seccomp.h); syscall numbers from arch/x86/entry/syscalls/syscall_64.tbl and the generic table.
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_SPEC_ALLOW = 1 << 2
_SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}.get(os.uname().machine)
# landlock.h
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 2, 4, 8
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 16, 32, 64, 128
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK, FS_MAKE_SYM = 256, 512, 1024, 2048, 4096
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR

# The unprivileged identity children run as: "nobody", mapped to itself in the user namespace.
UNPRIVILEGED_ID = 65534

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class LayerUnavailable(OSError):
    """A confinement layer cannot be set up here; ``str()`` says why."""


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise LayerUnavailable(err, f"{what}: {os.strerror(err)}")
    return result


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def prctl(option: int, arg2: int = 0) -> int:
    return _check(
        _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), 0, 0, 0), f"prctl({option})"
    )


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else os.fsencode(s)

    res = _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    _check(res, f"mount {target}")


def set_no_new_privs() -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def become(uid: int = UNPRIVILEGED_ID) -> None:
    """Switch to ``uid``/``uid`` with no supplementary groups; capabilities go with root.

    (The caller empties the capability bounding set once, beforehand, while it still holds
    CAP_SETPCAP; no_new_privs and seccomp keep set-uid binaries and exec out of reach anyway.)
    """
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getuid() == 0 or os.geteuid() == 0:
        raise LayerUnavailable(errno.EPERM, "still uid 0 after setresuid")


# --- Landlock ----------------------------------------------------------------------------------


def landlock_abi() -> int:
    """The Landlock ABI version, or 0 when the kernel lacks it (or it is disabled)."""
    res = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(res), 0)


class LandlockRuleset:
    """A Landlock ruleset that handles every access right the ABI knows (deny by default).

    ``allow_paths`` grants rights beneath directories (or on single files, file rights only);
    with ABI >= 4 TCP bind/connect are handled (so denied: no port is ever allowed); with ABI
    >= 6 signals and abstract unix sockets are scoped to the restricted domain. ``scope_only``
    handles nothing but that scoping (a layer added on top of an existing domain) and the
    REFER right, which every layer denies unless it allows it (:meth:`allow_paths`).
    ``scope=False``: no signal scoping (a parent whose death signal must reach its child).
    """

    def __init__(
        self, abi: int | None = None, *, scope_only: bool = False, scope: bool = True
    ) -> None:
        self.abi = landlock_abi() if abi is None else abi
        if self.abi < 1 or (scope_only and self.abi < 6):
            raise LayerUnavailable(errno.ENOSYS, f"Landlock ABI {self.abi} lacks what is needed")
        self.fs = _FS_BY_ABI[max(k for k in _FS_BY_ABI if k <= self.abi)]
        if scope_only:
            self.fs &= FS_REFER
        self.net = NET_BIND_TCP | NET_CONNECT_TCP if self.abi >= 4 and not scope_only else 0
        self.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if self.abi >= 6 and scope else 0
        attr = struct.pack("=QQQ", self.fs, self.net, self.scoped)
        size = 8 if self.abi < 4 else 16 if self.abi < 6 else 24
        buf = ctypes.create_string_buffer(attr[:size], size)
        fd = _libc.syscall(_SYS_CREATE_RULESET, buf, ctypes.c_size_t(size), 0)
        self.fd = _check(int(fd), "landlock_create_ruleset")

    def allow_paths(self, paths: Iterable[str], rights: int) -> None:
        """Grant ``rights`` beneath each existing path (missing paths are skipped)."""
        for path in paths:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                is_dir = os.path.isdir(f"/proc/self/fd/{pfd}") or os.path.isdir(path)
                allowed = (rights if is_dir else rights & FILE_RIGHTS) & self.fs
                rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed, pfd), 12)
                res = _libc.syscall(_SYS_ADD_RULE, self.fd, _RULE_PATH_BENEATH, rule, 0)
                _check(int(res), f"landlock_add_rule {path}")
            finally:
                os.close(pfd)

    def restrict_self(self) -> None:
        """Enforce on the calling thread (and its future children); needs no_new_privs."""
        _check(int(_libc.syscall(_SYS_RESTRICT_SELF, self.fd, 0)), "landlock_restrict_self")

    def close(self) -> None:
        os.close(self.fd)


# --- seccomp -----------------------------------------------------------------------------------

# Denied with EPERM in every sandbox process (server and children).
_DENY_ALWAYS = (
    "execve",
    "execveat",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mknod",
    "mknodat",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fspick",
    "mount_setattr",
    "setns",
    "unshare",
    "personality",
    "io_uring_setup",
    "name_to_handle_at",
    "open_by_handle_at",
)
# Also denied for the children that run snippets: no new processes (threads are fine), no
# process handles.
_DENY_CHILD = ("fork", "vfork", "pidfd_open", "pidfd_send_signal", "pidfd_getfd")
# Also denied for the checker, which needs no signals at all (its zygote dies with it: the
# zygote's parent-death signal, and the checker is the init of its PID namespace).
_DENY_CHECKER = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
# The checker may act on itself only (argument 0 is the pid; 0 means the caller): glibc's
# setrlimit/getrlimit are prlimit64(0, ...); the rest it never calls.
_SELF_ONLY = (
    "prlimit64",
    "sched_setaffinity",
    "sched_setscheduler",
    "sched_setparam",
    "sched_setattr",
    "migrate_pages",
    "move_pages",
)
# ... and for these the pid is argument 1 (``which, who``).
_SELF_ONLY_ARG1 = ("setpriority", "ioprio_set")
ROLES = ("server", "child", "checker")
# Another language's runner's (``execution/_exec_runner.py``): its zygote, which must exec the
# runner's programs (node; Go's compiler, linker and binary), and each such process itself; they
# take the server's and the child's places (see :func:`seccomp_programs`).
RUNNER_ROLES = ("runner_server", "runner", "checker")
_ALL_ROLES = (*ROLES, "runner_server", "runner")
# Where a runner's launcher maps the path it passes to execve: the runner program allows execve
# only with this pointer as the path (a filter cannot read the path itself), so once the program
# runs, exec is denied unless native code maps a path there (Landlock then still allows
# executing that one program only). Low enough for 39-bit address spaces, far from the ASLR regions.
EXEC_PATH_ADDRESS = 0x40_0000_0000


def seccomp_programs(roles: tuple[str, str, str] = ROLES) -> tuple[bytes, bytes, bytes]:
    """The programs of :func:`seccomp_filter` for ``roles`` (the zygote's, the child's and the
    checker's: :data:`ROLES`, or :data:`RUNNER_ROLES`), compiled in a forked helper.

    Importing ``pyseccomp`` imports ``ctypes.util`` (which runs ``ldconfig`` to find
    libseccomp: exec, so before any filter), and with it ``subprocess``, ``threading``,
    ``random``, ``tempfile``, ``bz2``, ``lzma``. ``threading`` and ``random`` register
    at-fork handlers, which cannot be unregistered and would run in every sandbox child forked
    later, and every extra module makes each fork and exit dearer (together about 70 page
    faults a child). So the compiling happens in a process that exits, and the caller only
    keeps the bytes. Raises LayerUnavailable with the helper's reason.
    """
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper: never returns
        code = 1
        try:
            os.close(rfd)
            try:
                parts = tuple(seccomp_filter(role) for role in roles)
                out = b"P" + b"".join(struct.pack("=I", len(p)) + p for p in parts)
            except LayerUnavailable as exc:
                out = b"E" + str(exc).encode("utf-8", "replace")
            view = memoryview(out)
            while view:
                view = view[os.write(wfd, view) :]
            code = 0
        finally:
            os._exit(code)
    os.close(wfd)
    chunks = []
    try:
        while chunk := os.read(rfd, 65536):
            chunks.append(chunk)
    finally:
        os.close(rfd)
        os.waitpid(pid, 0)
    data = b"".join(chunks)
    if data[:1] == b"E":
        raise LayerUnavailable(errno.ENOSYS, data[1:].decode("utf-8", "replace"))
    programs: list[bytes] = []
    rest = data[1:]
    while data[:1] == b"P" and len(rest) >= 4 and len(programs) < len(roles):
        (size,) = struct.unpack_from("=I", rest)
        programs.append(rest[4 : 4 + size])
        rest = rest[4 + size :]
    if len(programs) != len(roles) or rest or any(len(p) % 8 or not p for p in programs):
        raise LayerUnavailable(errno.EIO, "the seccomp compiler helper returned no programs")
    return programs[0], programs[1], programs[2]


def seccomp_filter(role: str) -> bytes:
    """The compiled BPF program (``struct sock_filter[]`` bytes) for one of :data:`ROLES` or
    :data:`RUNNER_ROLES`.

    Everything not listed is allowed.

    * ``server`` (the zygote): denies with EPERM every syscall in ``_DENY_ALWAYS`` and
      ``socket`` of every family (a pathname unix socket is reachable by ``connect``, which
      Landlock does not cover), and ``socketpair`` for any family but AF_UNIX (EAFNOSUPPORT).
    * ``child``: loaded on top of the server program (filters stack: the strictest answer
      wins), so it holds only what the server itself needs: new processes (``fork``,
      ``vfork``, ``clone`` without CLONE_THREAD; ``clone3``, whose flags live in memory a
      filter cannot read, gets ENOSYS so libc falls back to ``clone``) and pidfds. Kept small:
      each child compiles it (BPF JIT) when it loads it.
    * ``checker``: a program of its own (the checker loads no other): everything the server
      and child programs deny, ``socketpair`` too (it speaks over pipes only), every way to
      send a signal (``_DENY_CHECKER``), and ``prlimit64``/``setpriority``/the scheduler calls
      on any process but itself (``_SELF_ONLY``: a non-zero pid argument is EPERM).

    * ``runner_server`` (a runner's zygote: the Node runner's, the Go runner's): the server
      program without the ``execve`` denial, so that it can start the runner's programs
      (Landlock allows executing the one each launcher starts).
    * ``runner``: loaded on top of ``runner_server`` by the launcher just before it execs, so
      it binds the program for its life: the child program (no new processes, threads only:
      V8's platform workers, libuv's pool and Go's runtime threads are ``clone`` with
      CLONE_THREAD, or ``clone3``, which glibc retries as ``clone``), ``execveat`` denied and
      ``execve`` allowed only with the path at :data:`EXEC_PATH_ADDRESS`. V8's JIT needs
      nothing more: ``mmap``/``mprotect`` with PROT_EXEC stay allowed (as for Python). Neither
      node nor Go's tools need a socket (node's event loop wakes through eventfd and pipes, and
      the runner never starts it): ``socket()`` stays denied by ``runner_server``,
      ``socketpair`` too except AF_UNIX.

    Raises LayerUnavailable without ``pyseccomp``/libseccomp. The sandbox calls it through
    :func:`seccomp_programs`, in a helper process.
    """
    if role not in _ALL_ROLES:
        raise ValueError(f"seccomp role must be one of {_ALL_ROLES}, got {role!r}")
    import socket  # here, not at the top: the sandbox's zygote should not hold it (1 MB)

    try:
        import pyseccomp as sc
    except (ImportError, OSError, RuntimeError) as exc:
        raise LayerUnavailable(
            errno.ENOSYS, f"pyseccomp/libseccomp not usable ({exc}); pip install pyseccomp"
        ) from exc
    filt = sc.SyscallFilter(sc.ALLOW)

    def deny(names: Iterable[str], err: int = errno.EPERM, *args: object) -> None:
        for name in names:
            try:
                filt.add_rule(sc.ERRNO(err), name, *args)
            except (OSError, ValueError, RuntimeError):
                continue  # unknown on this architecture

    if role in ("server", "checker"):
        deny(_DENY_ALWAYS)
        deny(["socket"])
    elif role == "runner_server":
        deny([name for name in _DENY_ALWAYS if name != "execve"])
        deny(["socket"])
    if role in ("child", "checker", "runner"):
        deny(_DENY_CHILD)
        deny(["clone3"], errno.ENOSYS)
        deny(["clone"], errno.EPERM, sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    if role == "runner":
        deny(["execveat"])
        deny(["execve"], errno.EPERM, sc.Arg(0, sc.NE, EXEC_PATH_ADDRESS))
    if role == "checker":
        deny(["socketpair"])
        deny(_DENY_CHECKER)
        deny(_SELF_ONLY, errno.EPERM, sc.Arg(0, sc.NE, 0))
        deny(_SELF_ONLY_ARG1, errno.EPERM, sc.Arg(1, sc.NE, 0))
    elif role in ("server", "runner_server"):
        deny(["socketpair"], errno.EAFNOSUPPORT, sc.Arg(0, sc.NE, socket.AF_UNIX))
    rfd, wfd = os.pipe()
    try:
        with os.fdopen(wfd, "wb", closefd=False) as fh:
            filt.export_bpf(fh)
        os.close(wfd)
        wfd = -1
        chunks = []
        while chunk := os.read(rfd, 65536):
            chunks.append(chunk)
    finally:
        os.close(rfd)
        if wfd >= 0:
            os.close(wfd)
    return b"".join(chunks)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class SeccompProgram:
    """A BPF program from :func:`seccomp_filter`, its ``struct sock_fprog`` built once.

    The sandbox's zygote builds it and every child it forks calls :meth:`load`: one system
    call, without creating ctypes objects (each would cost the child page faults).
    """

    def __init__(self, program: bytes) -> None:
        if not program or len(program) % 8:
            raise ValueError(f"not a BPF program: {len(program)} bytes")
        self._buf = ctypes.create_string_buffer(program, len(program))
        self._prog = _SockFprog(len(program) // 8, ctypes.cast(self._buf, ctypes.c_void_p))
        self._ref = ctypes.byref(self._prog)

    def load(self) -> None:
        """Install the program on the calling thread (no_new_privs must be set).

        With ``SECCOMP_FILTER_FLAG_SPEC_ALLOW``: by default the kernel also turns on the
        Speculative Store Bypass mitigation for a filtered task, which protects secrets *inside*
        that process from code running in it and slows every child down; a sandboxed child
        holds no secret (the expected values live in another process), so we leave
        speculation as it was.
        """
        if _SYS_SECCOMP is not None:
            res = _libc.syscall(
                _SYS_SECCOMP, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW, self._ref
            )
        else:
            res = _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, self._ref, 0, 0)
        _check(int(res), "seccomp(SECCOMP_SET_MODE_FILTER)")


_PROT_READ, _PROT_WRITE = 1, 2
_MAP_PRIVATE, _MAP_ANONYMOUS, _MAP_FIXED_NOREPLACE = 0x02, 0x20, 0x100000


def execve_fixed(path: str, argv: list[str], env: dict[str, str]) -> None:
    """``execve(path, argv, env)`` with ``path`` copied to :data:`EXEC_PATH_ADDRESS` (the one
    pointer the ``runner`` seccomp program lets execve take); returns only by raising
    LayerUnavailable (the mapping) or OSError (the exec)."""
    libc = ctypes.CDLL(None, use_errno=True)  # a handle of its own: restypes differ from _libc's
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int)
    libc.mmap.argtypes += (ctypes.c_int, ctypes.c_long)
    raw = os.fsencode(path) + b"\0"
    size = (len(raw) + 4095) // 4096 * 4096
    flags = _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_FIXED_NOREPLACE
    got = libc.mmap(EXEC_PATH_ADDRESS, size, _PROT_READ | _PROT_WRITE, flags, -1, 0)
    if got != EXEC_PATH_ADDRESS:
        raise LayerUnavailable(ctypes.get_errno(), f"cannot map the exec path at {got!r}")
    ctypes.memmove(EXEC_PATH_ADDRESS, raw, len(raw))

    def strings(items: list[str]) -> ctypes.Array[ctypes.c_char_p]:
        return (ctypes.c_char_p * (len(items) + 1))(*[os.fsencode(i) for i in items], None)

    envp = strings([f"{k}={v}" for k, v in env.items()])
    libc.execve(ctypes.c_void_p(EXEC_PATH_ADDRESS), strings(argv), envp)
    err = ctypes.get_errno()
    raise OSError(err, f"execve {path}: {os.strerror(err)}")


def load_seccomp(program: bytes) -> None:
    """Install a BPF program from :func:`seccomp_filter` (see :meth:`SeccompProgram.load`)."""
    SeccompProgram(program).load()
