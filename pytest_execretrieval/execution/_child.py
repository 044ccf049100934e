"""The child: runs one suite's setup + snippet and makes each test's call, in the sandbox.

Standard library only (and :mod:`._grammar`, which builds each call's arguments from the test's
literals; a ``lambda`` argument is compiled here, and only here). Forked by the zygote
(:mod:`._zygote`) as a *spare*, confined before its suite arrives on ``GO_FD``; it writes its
frames to ``REPLY_FD`` (see :mod:`._sandbox_child` for the protocol) and its output to stdout and
stderr. An audit hook (:func:`_make_guard`) blocks what the kernel layers may not (process
creation, ctypes, writes outside the scratch directory) and reports each block as ``{"viol":
event}``.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # typeshed has no stub of the C module
import builtins
import marshal
import os
import resource
import sys
import types
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

_CPU_LIMIT_FACTOR = 30
REPLY_FD = 4  # the child's frames go here
GO_FD = 5  # a spare child reads its suite here


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


# --- raises, the reporter, the audit guard -------------------------------------------------------


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


class _Reporter:
    """Sends the child's frames to the checker; if the channel is gone the child exits."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._exit = os._exit

    def send(self, obj: dict[str, Any]) -> None:
        try:
            _wire._send(self._fd, obj)
        except BaseException:  # noqa: BLE001 - lost channel: die, the checker reports it
            self._exit(1)

    def __call__(self, kind: str, *fields: object) -> None:
        """The audit guard's interface: ``("V", event)`` reports a blocked event."""
        self.send({"viol": str(fields[0])})


def _make_guard(root: str, report: _Reporter) -> Callable[[str, tuple], None]:
    """Audit hook: no new processes, no killing others, no writes outside ``root``.

    Made once in the zygote (:func:`_prepare_children`), before any fork, and installed by
    each child: its own pid is asked for when a check needs it. The zygote also puts the
    guard's stand-in ``_posixsubprocess`` in ``sys.modules``: the real ``fork_exec`` raises no
    audit event of its own.
    """
    realpath, fsdecode, fspath, readlink = os.path.realpath, os.fsdecode, os.fspath, os.readlink
    join, isabs, getpid = os.path.join, os.path.isabs, os.getpid
    prefix = root.rstrip("/") + "/"
    root_name = os.path.basename(root.rstrip("/"))
    reported: list[str] = []

    def fd_path(fd: int) -> str | None:
        try:
            target = readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
        return target if target.startswith("/") else None  # pipes, sockets: not files

    # Audit-hook arguments are whatever the snippet passed: fspath raises on a non-path.
    def resolve(path: Any, dir_fd: object = None) -> str | None:
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

    def readable(path: Any) -> bool:
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
        return not part.isdigit() or int(part) == getpid()

    def deny(event: str) -> None:
        if event not in reported and len(reported) < _wire._MAX_VIOLATIONS:
            reported.append(event)
            report("V", _wire._clean_name(event))
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
            if args[0] not in (0, getpid(), -getpid()):
                deny(event)
        elif event == "os.killpg":
            if args[0] not in (0, getpid()):
                deny(event)
        elif event == "sqlite3.connect":
            db = args[0]
            if db != ":memory:" and (str(db).startswith("file:") or not inside(db)):
                deny(event)

    return hook


def _compile(source: str, filename: str) -> Any:
    """A code object, or the ``error:<Name>`` outcome its compilation gives.

    ``dont_inherit``: this module's ``from __future__`` imports must not leak into snippets.
    """
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except BaseException as exc:  # noqa: BLE001 - SyntaxError, ValueError (NUL), RecursionError
        return _wire._error(exc)


def snippet_code(source: str) -> Any:
    """The snippet's code object: what ``exec`` runs in the child (the checker's
    :func:`marshalled` form of it travels in the run frame)."""
    return compile(source, "<candidate>", "exec", dont_inherit=True)


def marshalled(source: str) -> str | None:
    """:func:`snippet_code` of ``source`` as marshal's hex text, or None where it does not
    compile (the child then compiles it itself, and its error is the snippet's outcome).

    The checker calls this: a freshly forked child compiling a snippet pays a copy-on-write
    fault for each page of the interpreter's heap the compiler writes (about 200: 2-3 ms,
    most of a suite's critical path), while the long-lived checker's heap is its own. Loading
    the marshalled code costs the child a fraction of that.
    """
    try:
        return marshal.dumps(snippet_code(source)).hex()
    except Exception:  # noqa: BLE001 - SyntaxError, ValueError (NUL), RecursionError, MemoryError
        return None


def _snippet(source: str, code_hex: str | None) -> Any:
    """The code object to run: the checker's marshalled one when it sent one."""
    if code_hex is None:
        return snippet_code(source)
    return marshal.loads(bytes.fromhex(code_hex))


# --- child side: one suite -----------------------------------------------------------------------


def _mro_names(exc: BaseException) -> list[str]:
    names = []
    for cls in type(exc).__mro__:
        names.append(f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', '?')}")
    return names[:64]


def _child_rlimits(limits: dict[str, Any]) -> list[tuple[int, tuple[int, int]]]:
    """The (resource, (soft, hard)) pairs a child sets: ``limits``, capped by our hard limits.

    Computed in the zygote, once per limits, for all the children it forks.
    """
    # RLIMIT_CPU is only a backstop for a child orphaned by a killed zygote (the wall clock is
    # the zygote's job), so it is generous enough for many busy threads.
    cpu = int(limits["timeout_s"] * _CPU_LIMIT_FACTOR) + 30
    wanted = {
        resource.RLIMIT_AS: (limits["memory_bytes"],) * 2,
        resource.RLIMIT_FSIZE: (limits["file_size_bytes"],) * 2,
        resource.RLIMIT_NPROC: (limits["max_processes"],) * 2,
        resource.RLIMIT_CORE: (0, 0),
        resource.RLIMIT_CPU: (cpu, cpu + 5),  # SIGXCPU, then SIGKILL
    }
    pairs = []
    for which, (soft, hard) in wanted.items():
        _, old_hard = resource.getrlimit(which)
        if old_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, old_hard), min(hard, old_hard)
        pairs.append((which, (soft, hard)))
    return pairs


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


def _child_setup(zygote: Any, rlimits: list[tuple[int, tuple[int, int]]], go_r: int) -> tuple:
    """Isolate the freshly forked child; returns the stdio streams to flush at the end.

    What is the same for every child (TMPDIR, argv, the modules dropped from sys.modules, the
    rlimit values, the seccomp program's buffers) the zygote prepared once: each step redone
    here would cost every child page faults of its own.
    """
    pipes, layers = zygote.pipes, zygote.layers
    os.setsid()  # own process group: the zygote kills it as a whole
    # _signal, not signal: the wrapper converts every old handler to an enum member, and that
    # machinery costs each child's set-up about 60 page faults (30 net over the whole child).
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
    _signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)  # oversize writes raise OSError instead
    for which, pair in rlimits:
        resource.setrlimit(which, pair)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(pipes.out_w, 1)
    os.dup2(pipes.out_w, 2)
    os.dup2(pipes.rep_w, REPLY_FD)
    os.dup2(go_r, GO_FD)
    os.closerange(3, REPLY_FD)  # no fd of the zygote's stays below ours
    layers.confine_child()  # Landlock scope, then the fds it needs are closed below
    os.closerange(GO_FD + 1, zygote.open_max)
    os.chdir(layers.scratch)
    layers.drop_child()  # unprivileged uid, then the seccomp filter
    return sys.stdout, sys.stderr


def _prepare_children(scratch: str) -> None:
    """In the zygote, once: the process state every child needs, which they inherit."""
    os.environ["TMPDIR"] = scratch  # where `tempfile` puts files once the snippet imports it
    tempfile: Any = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = scratch
    sys.argv = ["candidate.py"]
    for name in _UNLOAD:  # _confine keeps its own reference to ctypes
        sys.modules.pop(name, None)


def fresh_namespaces() -> tuple[types.ModuleType, types.ModuleType]:
    """The snippet's copy of the builtins and its module. The zygote makes them once, before
    its first fork: every child inherits them as its own private copy, which only it can
    change, so no child pays for copying builtins (a copy-on-write fault for the page of
    every builtin object, about 120 per child)."""
    return _module("builtins", **vars(builtins)), _module("__candidate__")


def _serve_calls(
    run: dict[str, Any],
    compiled: tuple[Any, list],
    report: _Reporter,
    streams: tuple,
    fresh: tuple,
    contexts: str = "",
) -> None:
    """Run setup + snippet, then make each test's call of the entry point and send what it
    gave, in test order; the checker decides. ``fresh``: this child's :func:`fresh_namespaces`;
    ``contexts``: the directory the prepared contexts are in (:func:`_in_context`).

    The entry point is looked up in the snippet's module only, and a name whose value is still
    the one setup bound is not defined: setup's names never stand in for the snippet's.
    """
    setup, calls = compiled
    snippet_builtins, candidate = fresh
    sys.modules["builtins"] = snippet_builtins
    sys.modules["__main__"] = _module("__main__")
    sys.modules["__candidate__"] = candidate
    namespace = candidate.__dict__
    namespace.update(__builtins__=snippet_builtins, raises=raises)
    from_setup: dict[str, Any] = {}
    module_error = setup if isinstance(setup, str) else None
    if module_error is None:
        try:
            context = context_fields(run["setup"])
            if context is not None and len(context) > 1:
                namespace, from_setup = _in_context(run, context, contexts)
            else:
                if context is not None:  # the package importable, the snippet on its own
                    _importable(contexts, context[0])
                exec(setup, namespace)  # noqa: S102
                from_setup = dict(namespace)
                exec(_snippet(run["code"], run.get("marshal")), namespace)  # noqa: S102
        except BaseException as exc:  # noqa: BLE001
            module_error = _wire._error(exc)
    report.send({"m": module_error or "pass"})
    for test, call in enumerate(calls if module_error is None else []):
        if call is not None:
            report.send({"e": test, "r": _make_call(call, namespace, from_setup)})
    for stream in streams:
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a closed stream is the snippet's business
            pass
    report.send({"d": 1})


# A context item's suites carry its context as their setup: this one comment line, then the
# prepared package's sha256 (``SHA+SHA``: another archive after it, carving's test runner),
# and (for a function or method replaced in its module) the module and the class. A setup of
# the prefix and the sha256 alone makes the package importable and runs the snippet on its own
# (the carving harness).
CONTEXT_PREFIX = "# execretrieval-context "
_CLASS_ATTRIBUTES = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"})


def context_fields(setup: str) -> list[str] | None:
    """The context directive's fields (sha256, module, class), or None for another setup."""
    if not setup.startswith(CONTEXT_PREFIX):
        return None
    return setup[len(CONTEXT_PREFIX) :].split()


def _importable(contexts: str, shas: str) -> None:
    """Put the prepared packages ``shas`` (``SHA[+SHA]``) first on ``sys.path``, in that order
    (read-only: nothing is written there, bytecode included)."""
    for at, sha in enumerate(shas.split("+")):
        if not (contexts and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)):
            raise ImportError("the suite names a context this sandbox does not hold")
        sys.path.insert(at, contexts + "/" + sha)
    sys.dont_write_bytecode = True


def _in_context(
    run: dict[str, Any], context: list[str], contexts: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Import the context's module and replace one function (or method) of it by the snippet;
    the namespace the entry point is looked up in, and what it held before (a name the snippet
    did not bind again is not defined). A method is compiled in a class body of its class's
    name (private names are mangled as in the class) and its ``__class__`` cell is the class
    (zero-argument ``super()``). An instance method's test calls give the instance's
    attributes first: ``method(STATE, *args)`` calls it on an instance of the class whose
    ``__dict__`` is ``STATE``."""
    import importlib

    _importable(contexts, context[0])
    module = importlib.import_module(context[1])
    globals_ = module.__dict__
    if len(context) == 2:
        before = dict(globals_)
        exec(_snippet(run["code"], run.get("marshal")), globals_)  # noqa: S102
        return globals_, before
    owner: Any = module
    for part in context[2].split("."):
        owner = getattr(owner, part)
    body = "".join("    " + line + "\n" for line in run["code"].splitlines())
    scope: dict[str, Any] = {}
    source = f"class {owner.__name__}:\n{body}"
    exec(compile(source, "<candidate>", "exec", dont_inherit=True), globals_, scope)  # noqa: S102
    made = scope[owner.__name__].__dict__
    methods = [k for k in made if k not in _CLASS_ATTRIBUTES]
    if len(methods) != 1:
        raise SyntaxError("a method snippet defines one method")
    name, member = methods[0], made[methods[0]]
    function = getattr(member, "__func__", member)
    code = getattr(function, "__code__", None)
    if code is not None and "__class__" in code.co_freevars:
        function.__closure__[code.co_freevars.index("__class__")].cell_contents = owner
    before = {name: getattr(owner, name, None)}
    setattr(owner, name, member)
    if isinstance(member, staticmethod | classmethod):
        return {name: getattr(owner, name)}, before

    def on_state(state: Any, *args: Any, **kwargs: Any) -> Any:
        instance = owner.__new__(owner)
        instance.__dict__.update(state)
        return getattr(instance, name)(*args, **kwargs)

    return {name: on_state}, before


def _make_call(
    call: tuple[str, Any], namespace: dict[str, Any], from_setup: dict[str, Any]
) -> dict[str, Any]:
    """One test's call: ``{"v": value}`` (encoded), ``{"u": type}``, ``{"x": name, "mro":
    [...]}`` (the call, or finding the entry point, raised); for ``raises`` (kind ``call``)
    ``{"ok": 0|1, "mro": [...]}``: whether the call returned, and what it raised."""
    kind, parsed = call
    try:
        if isinstance(parsed, str):
            raise SyntaxError(parsed)  # the zygote could not read it (never for a planned test)
        name, args, kwargs = _grammar.build_arguments(parsed)
        fn = namespace.get(name, _MISSING)
        if fn is _MISSING or (name in from_setup and fn is from_setup[name]):
            raise NameError(f"name {name!r} is not defined by the snippet")
    except BaseException as exc:  # noqa: BLE001 - the test's error
        return {"x": _wire._clean_name(type(exc).__name__), "mro": _mro_names(exc)}
    try:
        value = fn(*args, **kwargs)
        if kind == "items" and _is_iterator(value):
            value = _read_items(value)
    except _wire.UnsupportedValue as exc:  # an iterator past the bound
        return {"u": str(exc.args[0])[:200]}
    except BaseException as exc:  # noqa: BLE001 - what the test looks at
        if kind == "call":
            return {"ok": 0, "mro": _mro_names(exc)}
        return {"x": _wire._clean_name(type(exc).__name__), "mro": _mro_names(exc)}
    if kind == "call":
        return {"ok": 1}
    try:
        return {"v": _wire.encode(value)}
    except _wire.UnsupportedValue as exc:
        return {"u": str(exc.args[0])[:200]}
    except BaseException as exc:  # noqa: BLE001 - e.g. RecursionError on a cyclic value
        return {"u": f"{_wire._type_name(value)} (encoding it raised {type(exc).__name__})"[:200]}


_MISSING = object()


def _is_iterator(value: Any) -> bool:
    """An iterator or generator (looked up on its type, as Python's protocol does)."""
    kind = type(value)
    return hasattr(kind, "__next__") and hasattr(kind, "__iter__")


def _read_items(iterator: Any) -> list[Any]:
    """What a consuming wrapper (``list(...)``, ``sorted(...)``) would read from the call's
    iterator, at most the codec's element bound; an iterator that gives more is
    unsupported (an endless one would otherwise run out the suite's clock)."""
    items = []
    for item in iterator:
        items.append(item)
        if len(items) > _wire._MAX_ELEMENTS:
            raise _wire.UnsupportedValue(f"an iterator of more than {_wire._MAX_ELEMENTS} items")
    return items


def _child_main(limits: dict[str, Any], zygote: Any, go_r: int) -> None:
    """A spare child: confine, wait for a suite from the zygote, run it."""
    streams = _child_setup(zygote, zygote.rlimits(limits), go_r)
    run = _wire._recv(GO_FD, _wire._MAX_RUN)
    if run is None:
        os._exit(0)  # the zygote is done with us
    os.close(GO_FD)
    compiled = zygote.inherited(run)
    report = zygote.reporter
    if run.get("guard", True):
        sys.addaudithook(zygote.guard)
    _serve_calls(run, compiled, report, streams, zygote.fresh, zygote.layers.contexts)
