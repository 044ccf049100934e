"""Checker, zygote and child: the process side of :mod:`pytest_execretrieval.execution.sandbox`.

Stdlib only (plus :mod:`._confine`, itself stdlib + ctypes + optional ``pyseccomp``, and
:mod:`._grammar`, the test grammar). :class:`~pytest_execretrieval.execution.sandbox.Sandbox`
starts ``python -I`` with a bootstrap that imports this file as the top-level module
``_sandbox_child`` (from its cached bytecode) and calls :func:`serve`; ``python -I
_sandbox_child.py LIMITS_JSON`` does the same. Importing the module has no side effects, so
``sandbox.py`` can read :data:`RUNNER_VERSION`.

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
  returns the value in a restricted typed encoding (:func:`encode`); the checker decodes it
  (:func:`decode`) into plain objects of the allowed types only, so a snippet object's ``__eq__``
  never runs there.

The process Sandbox starts enters the checker's own user, PID, network, IPC and mount namespaces
and forks the checker as that PID namespace's init, staying outside as its idle *anchor*; the
checker drops to nobody and loads its own seccomp program once the zygote is set up
(:class:`_CheckerLayers`). The threat model: the child runs hostile code and may write anything
on its pipes; the checker and the zygote run none, but a child's frames reach the checker, so
the checker is confined as if it did (no host privilege, no signals, no sockets, no other
process within reach, a CPU budget per request).

Wire protocols: frames of a 4-byte big-endian length + UTF-8 JSON everywhere, each bounded by its
reader (``_MAX_REQUEST``, ``_MAX_VALUE_FRAME``, ``_MAX_ZYGOTE_FRAME``, ``_MAX_FRAMES``); every
parse or decode failure is a ValueError there, and a child's is a protocol error of its suite
(:data:`PROTOCOL_ERROR`). Values are bounded in nesting, elements and same-hash set elements or
dict keys (:func:`decode`).

* caller <-> checker: stdin (requests) and stdout (replies); first ``{"ready": pid, "version":
  v, "isolation": {...}}``. A ``{"probe": {...}}`` request (tests only) makes the checker try
  what its confinement forbids and say how each attempt ended (:func:`_probe`).
* checker -> zygote ``{"run": ...}``; zygote -> checker ``{"layers": ...}`` once, then per
  suite ``{"exit": "exited"|"timeout", "status": s, "left": bool, "scratch": str}``.
* zygote -> spare child: the ``run`` frame (code, setup, each test's call as ``[kind, source]``
  or null), on its own pipe.
* child -> checker, on a pipe created once at startup and inherited by every child: ``{"m":
  outcome}`` after setup + code, then ``{"e": test, "r": answer}`` per test with a call, in order;
  an *answer* is ``{"v": value}``, ``{"x": name, "mro": [...]}`` (it raised), ``{"u": reason}``
  (unsupported type) or, for ``raises``, ``{"ok": 0|1, "mro": [...]}``; ``{"viol": event}``
  whenever the audit guard blocks something; ``{"d": 1}`` at the end. One suite runs at a time
  per zygote, and the checker drains the pipes after each suite, once the zygote has killed and
  reaped every process of it.
"""

from __future__ import annotations

import _signal
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

try:
    from . import _grammar
except ImportError:  # the top-level module of the checker, with this directory on sys.path
    import _grammar  # type: ignore[no-redef]

RUNNER_VERSION = "3"

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

_HEADER = struct.Struct(">I")
# Every frame is bounded by the reader: a request (code, tests, planned holes) and a suite's
# run frame; one child frame (a hole's encoded value, or a test's prefetched ones); a zygote
# frame. The caller bounds the checker's replies (sandbox.py).
_MAX_REQUEST = 32 << 20
_MAX_RUN = 2 * _MAX_REQUEST  # a request's code and setup, and its tests' holes
_MAX_VALUE_FRAME = 16 << 20
_MAX_ZYGOTE_FRAME = 1 << 20
_MAX_FRAMES = 1 << 16  # child frames in one suite (a few per test)
_MAX_DEPTH = 200  # nesting of an encoded value
_MAX_ELEMENTS = 1 << 20  # elements of one encoded value, nested ones included
_MAX_SAME_HASH = 64  # elements of one set (keys of one dict) that share a hash
_ELEMENTS_LEFT = [0]  # the budget of the value being encoded or decoded (one at a time)
_MAX_VIOLATIONS = 5
_IDLE_POLL_S = 1.0
_CPU_LIMIT_FACTOR = 30
_ZYGOTE_GRACE_S = 25.0  # on top of the suite timeout (the caller allows 30 s): heavy load
SCRATCH = "/tmp"  # noqa: S108 - a private tmpfs in the zygote's mount namespace
CHILD_FDS = (3, 4)  # the child's request (read) and reply (write) fds
GO_FD = 5  # a spare child reads its suite here
# Fork and confine the next suite's child while the caller handles the last reply. It lowers the
# wall time of one serial chain (caller -> checker -> child) by using a second core for the
# child's set-up; it does not lower the CPU time a suite costs.
PREFORK = True
_SPARE_AFTER_S = 0.0003  # idle this long after a suite before forking the spare
UNSUPPORTED = "error:UnsupportedValue"


# --- framing -----------------------------------------------------------------------------------


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _send(fd: int, obj: Any) -> None:
    data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    _write_all(fd, _HEADER.pack(len(data)) + data)


write_frame = _send


def _recv(fd: int, limit: int = _MAX_REQUEST) -> Any:
    """One frame of at most ``limit`` bytes from a blocking fd; None at EOF; ValueError on an
    oversized or unparsable one."""
    head = _read_n(fd, _HEADER.size)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    if size > limit:
        raise ValueError(f"frame of {size} bytes exceeds the {limit} byte limit")
    body = _read_n(fd, size)
    return None if body is None else _loads(body)


def _loads(body: bytes) -> Any:
    """A frame's JSON; every failure (RecursionError on deep nesting, MemoryError,
    UnicodeDecodeError, ...) is a ValueError, the one exception a frame reader handles."""
    try:
        return json.loads(body)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever it is, the sender broke the protocol
        raise ValueError(f"unparsable frame ({type(exc).__name__})") from None


def _read_n(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf.extend(chunk)
    return bytes(buf)


class _Frames:
    """Accumulates bytes from a non-blocking fd and yields complete frames."""

    def __init__(self, limit: int) -> None:
        self.buf = bytearray()
        self.limit = limit

    def feed(self, chunk: bytes) -> None:
        self.buf.extend(chunk)

    def pop(self) -> Any:
        """The next complete frame, or None; ValueError on an oversized or garbled one."""
        if len(self.buf) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack_from(self.buf)
        if size > self.limit:
            raise ValueError(f"frame of {size} bytes exceeds the {self.limit} byte limit")
        end = _HEADER.size + size
        if len(self.buf) < end:
            return None
        body = bytes(self.buf[_HEADER.size : end])
        del self.buf[:end]
        return _loads(body)


# --- the value codec ---------------------------------------------------------------------------


class UnsupportedValue(Exception):
    """A hole's value has a type outside the codec; ``args[0]`` names it."""


def _type_name(value: object) -> str:
    t = type(value)
    return f"{getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', '?')}"


_SCALAR_BASES = (bool, int, float, str, bytes)


def encode(value: Any, depth: int = 0) -> Any:
    """JSON-able, tagged form of ``value``; raises UnsupportedValue for any other type.

    Exact types: None, bool, int, float (nan, inf), complex, str, bytes, bytearray, list,
    tuple, dict, set, frozenset, range, datetime.date/datetime/time/timedelta/timezone,
    fractions.Fraction, decimal.Decimal, collections.deque/Counter/OrderedDict/defaultdict
    (with a builtin type as default_factory). An instance of a subclass of a builtin scalar or
    container (a namedtuple, an IntEnum) is sent as its builtin base, read with the base's
    own methods, so an overridden ``__eq__``/``__iter__`` never decides what is sent.
    """
    if depth > _MAX_DEPTH:
        raise UnsupportedValue(f"a value nested deeper than {_MAX_DEPTH} levels")
    if not depth:
        _ELEMENTS_LEFT[0] = _MAX_ELEMENTS + 1  # the value itself is not an element
    _ELEMENTS_LEFT[0] -= 1
    if _ELEMENTS_LEFT[0] < 0:
        raise UnsupportedValue(f"a value of more than {_MAX_ELEMENTS} elements")
    t = type(value)
    if value is None or t is str or t is bool:
        return value
    if t is int:
        return value if -(1 << 60) < value < (1 << 60) else ["i", format(value, "x")]
    if t is float:
        return ["f", value.hex()]
    d = depth + 1
    if t is list:
        return ["l", *[encode(v, d) for v in value]]
    if t is tuple:
        return ["t", *[encode(v, d) for v in value]]
    if t is dict:
        return ["d", *_pairs(dict.items(value), d)]
    if t is set:
        return ["s", *[encode(v, d) for v in value]]
    if t is frozenset:
        return ["F", *[encode(v, d) for v in value]]
    if t is bytes:
        return ["b", value.hex()]
    if t is bytearray:
        return ["B", value.hex()]
    if t is complex:
        return ["c", value.real.hex(), value.imag.hex()]
    if t is range:
        return ["r", encode(value.start, d), encode(value.stop, d), encode(value.step, d)]
    special = _encode_library(value, t, d)
    if special is not None:
        return special
    return _encode_subclass(value, t, d)


def _pairs(items: Any, depth: int) -> list[Any]:
    out: list[Any] = []
    for k, v in items:
        out.append(encode(k, depth))
        out.append(encode(v, depth))
    return out


def _encode_library(value: Any, t: type, d: int) -> list[Any] | None:
    mods = sys.modules
    dt, fr, dec, col = (mods.get(m) for m in ("datetime", "fractions", "decimal", "collections"))
    if dt is not None:
        if t is dt.date:
            return ["date", value.year, value.month, value.day]
        if t is dt.datetime:
            fields = [value.year, value.month, value.day, value.hour, value.minute]
            fields += [value.second, value.microsecond, value.fold]
            return ["datetime", *fields, _encode_tz(value.tzinfo, dt, d)]
        if t is dt.time:
            fields = [value.hour, value.minute, value.second, value.microsecond, value.fold]
            return ["time", *fields, _encode_tz(value.tzinfo, dt, d)]
        if t is dt.timedelta:
            return ["timedelta", value.days, value.seconds, value.microseconds]
        if t is dt.timezone:
            return _encode_tz(value, dt, d)
    if fr is not None and t is fr.Fraction:
        return ["Fraction", encode(int(value.numerator), d), encode(int(value.denominator), d)]
    if dec is not None and t is dec.Decimal:
        return ["Decimal", str(value)]
    if col is not None:
        if t is col.deque:
            return ["deque", value.maxlen, *[encode(v, d) for v in value]]
        if t is col.Counter:
            return ["Counter", *_pairs(dict.items(value), d)]
        if t is col.OrderedDict:
            return ["OrderedDict", *_pairs(dict.items(value), d)]
        if t is col.defaultdict:
            factory = value.default_factory
            name = None if factory is None else getattr(factory, "__name__", "")
            if factory is not None and getattr(builtins, name or "", None) is not factory:
                raise UnsupportedValue(f"a defaultdict whose default_factory is {factory!r:.60}")
            return ["defaultdict", name, *_pairs(dict.items(value), d)]
    return None


def _encode_tz(tz: Any, dt: Any, d: int) -> Any:
    if tz is None:
        return None
    if type(tz) is not dt.timezone:
        raise UnsupportedValue(f"a datetime with tzinfo {_type_name(tz)}")
    offset = tz.utcoffset(None)
    name = tz.tzname(None)
    default = dt.timezone(offset).tzname(None)
    return [
        "timezone",
        offset.days,
        offset.seconds,
        offset.microseconds,
        None if name == default else name,
    ]


def _encode_subclass(value: Any, t: type, d: int) -> Any:
    mro = type.__dict__["__mro__"].__get__(t)
    if bool in mro:
        return bool(int.__int__(value))
    if int in mro:
        return encode(int.__int__(value), d)
    if float in mro:
        return encode(float.__float__(value), d)
    if str in mro:
        return str.__str__(value)
    if bytes in mro:
        return encode(bytes(memoryview(value)), d)
    if tuple in mro:
        return ["t", *[encode(v, d) for v in tuple.__iter__(value)]]
    if list in mro:
        return ["l", *[encode(v, d) for v in list.__iter__(value)]]
    if dict in mro:
        return ["d", *_pairs(dict.items(value), d)]
    if frozenset in mro:
        return ["F", *[encode(v, d) for v in frozenset.__iter__(value)]]
    if set in mro:
        return ["s", *[encode(v, d) for v in set.__iter__(value)]]
    raise UnsupportedValue(_type_name(value))


def decode(obj: Any) -> Any:
    """Inverse of :func:`encode`; builds only objects of the allowed types, within the wire's
    bounds (nesting, :data:`_MAX_ELEMENTS`, :data:`_MAX_SAME_HASH`). Anything else, and any
    exception on the way (RecursionError, MemoryError, OverflowError, ...), is ValueError."""
    _ELEMENTS_LEFT[0] = _MAX_ELEMENTS
    try:
        return _decode(obj, 0)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever it is, the sender broke the protocol
        raise ValueError(f"undecodable value ({type(exc).__name__}: {exc})"[:300]) from None


def _decode(obj: Any, depth: int) -> Any:
    if depth > _MAX_DEPTH + 2:
        raise ValueError("encoded value nested too deeply")
    t = type(obj)
    if obj is None or t is str or t is bool or t is int:
        return obj
    if t is not list or not obj or type(obj[0]) is not str:
        raise ValueError(f"malformed encoded value of type {t.__name__}")
    decoder = _DECODERS.get(obj[0])
    if decoder is None:
        raise ValueError(f"unknown value tag {obj[0]!r:.40}")
    try:
        return decoder(obj[1:], depth + 1)
    except (TypeError, OverflowError, ArithmeticError, KeyError, IndexError) as exc:
        raise ValueError(f"malformed {obj[0]} value: {exc}") from exc


def _items(rest: list[Any], depth: int) -> list[Any]:
    _ELEMENTS_LEFT[0] -= len(rest)
    if _ELEMENTS_LEFT[0] < 0:
        raise ValueError(f"a value of more than {_MAX_ELEMENTS} elements")
    return [_decode(v, depth) for v in rest]


def _hashed(keys: list[Any]) -> list[Any]:
    """``keys``, once it is clear that inserting them into a set or dict costs linear time.

    Keys of one hash share one probe sequence, so n of them cost n**2/2 comparisons (ints
    that are equal modulo 2**61 - 1 are trivial to choose); more than :data:`_MAX_SAME_HASH`
    of one hash are refused. The count's own dict is keyed by the hash values, and an int
    below 2**61 is its own hash: no collision there.
    """
    if len(keys) > _MAX_SAME_HASH:
        seen: dict[int, int] = {}
        for key in keys:
            h = hash(key)
            n = seen[h] = seen.get(h, 0) + 1
            if n > _MAX_SAME_HASH:
                raise ValueError(f"more than {_MAX_SAME_HASH} set elements or keys of one hash")
    return keys


def _dict_pairs(rest: list[Any], depth: int) -> list[tuple[Any, Any]]:
    if len(rest) % 2:
        raise ValueError("odd number of dict fields")
    vals = _items(rest, depth)
    return list(zip(_hashed(vals[::2]), vals[1::2]))


def _int(v: Any) -> int:
    if type(v) is not int:
        raise TypeError(f"expected an int field, got {type(v).__name__}")
    return v


def _str(v: Any) -> str:
    if type(v) is not str:
        raise TypeError(f"expected a str field, got {type(v).__name__}")
    return v


def _hex_float(v: Any) -> float:
    if type(v) is not str:
        raise TypeError("expected a hex float")
    return float.fromhex(v)


def _tz(v: Any, depth: int) -> Any:
    if v is None:
        return None
    tz = _decode(v, depth)
    import datetime as dt

    if type(tz) is not dt.timezone:
        raise TypeError("tzinfo must be a timezone")
    return tz


def _dec_timezone(r: list[Any], depth: int) -> Any:
    import datetime as dt

    offset = dt.timedelta(_int(r[0]), _int(r[1]), _int(r[2]))
    return dt.timezone(offset) if r[3] is None else dt.timezone(offset, _str(r[3]))


def _dec_datetime(r: list[Any], depth: int) -> Any:
    import datetime as dt

    fields = [_int(v) for v in r[:8]]
    return dt.datetime(*fields[:7], fold=fields[7], tzinfo=_tz(r[8], depth))


def _dec_time(r: list[Any], depth: int) -> Any:
    import datetime as dt

    fields = [_int(v) for v in r[:5]]
    return dt.time(*fields[:4], fold=fields[4], tzinfo=_tz(r[5], depth))


def _dec_defaultdict(r: list[Any], depth: int) -> Any:
    import collections

    factory = None if r[0] is None else getattr(builtins, str(r[0]))
    if factory is not None and not isinstance(factory, type):
        raise TypeError("default_factory must be a builtin type")
    return collections.defaultdict(factory, _dict_pairs(r[1:], depth))


def _dec_bytes(r: list[Any], _: int) -> bytes:
    if type(r[0]) is not str:
        raise TypeError("expected hex")
    return bytes.fromhex(r[0])


def _lazy(module: str, name: str) -> Callable[..., Any]:
    def get(*args: Any, **kwargs: Any) -> Any:
        return getattr(__import__(module), name)(*args, **kwargs)

    return get


_DECODERS: dict[str, Callable[[list[Any], int], Any]] = {
    "i": lambda r, _: int(_str(r[0]), 16),
    "f": lambda r, _: _hex_float(r[0]),
    "c": lambda r, _: complex(_hex_float(r[0]), _hex_float(r[1])),
    "l": lambda r, d: _items(r, d),
    "t": lambda r, d: tuple(_items(r, d)),
    "s": lambda r, d: set(_hashed(_items(r, d))),
    "F": lambda r, d: frozenset(_hashed(_items(r, d))),
    "d": lambda r, d: dict(_dict_pairs(r, d)),
    "b": _dec_bytes,
    "B": lambda r, d: bytearray(_dec_bytes(r, d)),
    "r": lambda r, d: range(_int(_decode(r[0], d)), _int(_decode(r[1], d)), _int(_decode(r[2], d))),
    "date": lambda r, _: _lazy("datetime", "date")(*[_int(v) for v in r]),
    "datetime": _dec_datetime,
    "time": _dec_time,
    "timedelta": lambda r, _: _lazy("datetime", "timedelta")(*[_int(v) for v in r]),
    "timezone": _dec_timezone,
    "Fraction": lambda r, d: _lazy("fractions", "Fraction")(
        _int(_decode(r[0], d)), _int(_decode(r[1], d))
    ),
    "Decimal": lambda r, _: _lazy("decimal", "Decimal")(str(r[0])),
    "deque": lambda r, d: _lazy("collections", "deque")(
        _items(r[1:], d), None if r[0] is None else _int(r[0])
    ),
    "Counter": lambda r, d: _lazy("collections", "Counter")(dict(_dict_pairs(r, d))),
    "OrderedDict": lambda r, d: _lazy("collections", "OrderedDict")(_dict_pairs(r, d)),
    "defaultdict": _dec_defaultdict,
}


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
    """Sends the child's frames to the checker; if the channel is gone the child exits."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._exit = os._exit

    def send(self, obj: dict[str, Any]) -> None:
        try:
            _send(self._fd, obj)
        except BaseException:  # noqa: BLE001 - lost channel: die, the checker reports it
            self._exit(1)

    def __call__(self, kind: str, *fields: object) -> None:
        """The audit guard's interface: ``("V", event)`` reports a blocked event."""
        self.send({"viol": str(fields[0])})


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


def _compile(source: str, filename: str) -> Any:
    """A code object, or the ``error:<Name>`` outcome its compilation gives.

    ``dont_inherit``: this module's ``from __future__`` imports must not leak into snippets.
    """
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except BaseException as exc:  # noqa: BLE001 - SyntaxError, ValueError (NUL), RecursionError
        return _error(exc)


# --- child side --------------------------------------------------------------------------------


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


def _child_setup(zygote: _Zygote, rlimits: list[tuple[int, tuple[int, int]]], go_r: int) -> tuple:
    """Isolate the freshly forked child; returns the stdio streams to flush at the end.

    What is the same for every child (TMPDIR, argv, the modules dropped from sys.modules, the
    rlimit values, the seccomp program's buffers) the zygote prepared once: each step redone
    here would cost every child page faults of its own.
    """
    fds, layers = zygote.fds, zygote.layers
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
    os.dup2(fds["out_w"], 1)
    os.dup2(fds["out_w"], 2)
    os.dup2(fds["req_r"], CHILD_FDS[0])
    os.dup2(fds["rep_w"], CHILD_FDS[1])
    os.dup2(go_r, GO_FD)
    layers.confine_child()  # Landlock scope, then the fds it needs are closed below
    os.closerange(GO_FD + 1, zygote.open_max)
    os.chdir(layers.scratch)
    layers.drop_child()  # unprivileged uid, then the seccomp filter
    return sys.stdout, sys.stderr


def _prepare_children(scratch: str) -> None:
    """In the zygote, once: the process state every child needs, which they inherit."""
    os.environ["TMPDIR"] = scratch  # where `tempfile` puts files once the snippet imports it
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = scratch
    sys.argv = ["candidate.py"]
    for name in _UNLOAD:  # _confine keeps its own reference to ctypes
        sys.modules.pop(name, None)


def _fresh_namespaces() -> tuple[types.ModuleType, types.ModuleType]:
    """The snippet's copy of the builtins and its module, made by a spare child before its
    suite arrives: copying builtins touches the page of every builtin object (about 60
    copy-on-write faults), which is then done while the caller is busy elsewhere."""
    return _module("builtins", **vars(builtins)), _module("__candidate__")


def _serve_calls(code: str, compiled: tuple[Any, list], report: _Reporter, streams: tuple,
                 fresh: tuple) -> None:  # fmt: skip
    """Run setup + snippet, then make each test's call of the entry point and send what it
    gave, in test order; the checker decides. ``fresh``: this child's :func:`_fresh_namespaces`.

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
            exec(setup, namespace)  # noqa: S102
            from_setup = dict(namespace)
            exec(compile(code, "<candidate>", "exec", dont_inherit=True), namespace)  # noqa: S102
        except BaseException as exc:  # noqa: BLE001
            module_error = _error(exc)
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


def _make_call(call: tuple[str, Any], namespace: dict[str, Any],
               from_setup: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
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
        return {"x": _clean_name(type(exc).__name__), "mro": _mro_names(exc)}
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - what the test looks at
        if kind == "call":
            return {"ok": 0, "mro": _mro_names(exc)}
        return {"x": _clean_name(type(exc).__name__), "mro": _mro_names(exc)}
    if kind == "call":
        return {"ok": 1}
    try:
        return {"v": encode(value)}
    except UnsupportedValue as exc:
        return {"u": str(exc.args[0])[:200]}
    except BaseException as exc:  # noqa: BLE001 - e.g. RecursionError on a cyclic value
        return {"u": f"{_type_name(value)} (encoding it raised {type(exc).__name__})"[:200]}


_MISSING = object()


def _child_main(limits: dict[str, Any], zygote: Any, go_r: int) -> None:
    """A spare child: confine, wait for a suite from the zygote, run it."""
    layers = zygote.layers
    streams = _child_setup(zygote, zygote.rlimits(limits), go_r)
    fresh = _fresh_namespaces()
    run = _recv(GO_FD, _MAX_RUN)
    if run is None:
        os._exit(0)  # the zygote is done with us
    os.close(GO_FD)
    compiled = zygote.compiled(run)  # inherited from the zygote when it had this suite already
    report = _Reporter(CHILD_FDS[1])
    if run.get("guard", True):
        sys.addaudithook(_make_guard(layers.scratch, os.getpid(), report))
    _serve_calls(run["code"], compiled, report, streams, fresh)


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

    def __init__(self, fds: dict[str, int], layers: Any, limits: dict[str, Any]) -> None:
        self.fds, self.layers, self.limits = fds, layers, limits
        self._compiled: dict[str, tuple[Any, list]] = {}
        self.spare: tuple[int, int, dict[str, Any]] | None = None  # (pid, go_w, its limits)
        self._rlimits: tuple[dict[str, Any], list[tuple[int, tuple[int, int]]]] | None = None
        self.open_max = max(os.sysconf("SC_OPEN_MAX"), 1024)

    def rlimits(self, limits: dict[str, Any]) -> list[tuple[int, tuple[int, int]]]:
        """:func:`_child_rlimits` of ``limits`` (the last ones computed are kept)."""
        if self._rlimits is None or (
            self._rlimits[0] is not limits and self._rlimits[0] != limits  # `is`: no faults
        ):
            self._rlimits = (limits, _child_rlimits(limits))
        return self._rlimits[1]

    def compiled(self, run: dict[str, Any]) -> tuple[Any, list]:
        key = json.dumps([run["setup"], run["calls"]])
        found = self._compiled.pop(key, None)
        if found is None:
            found = (_compile(run["setup"], "<setup>"), [_parsed_call(c) for c in run["calls"]])
            if len(self._compiled) >= _PLANS_KEPT:
                del self._compiled[next(iter(self._compiled))]  # least recently used
        self._compiled[key] = found
        return found

    def serve(self) -> None:
        try:
            while True:
                if self.spare is None and self.limits and PREFORK and not self._request_waiting():
                    self.spare = self._spawn(self.limits)
                req = _recv(self.fds["zc_r"], _MAX_RUN)
                if req is None:
                    return
                if "run" not in req:
                    continue  # an abort that crossed the suite's end: nothing left to stop
                reply = self.run(req["run"])
                _send(self.fds["zr_w"], reply)
        finally:
            self._drop_spare()

    def _request_waiting(self) -> bool:
        """Whether the next request comes at once: then forking a spare would only compete
        with it for the CPU (suites back to back); otherwise the spare uses the idle time."""
        return bool(select.select([self.fds["zc_r"]], [], [], _SPARE_AFTER_S)[0])

    def _drop_spare(self) -> None:
        if self.spare is not None:
            pid, go_w, _ = self.spare
            self.spare = None
            os.close(go_w)  # EOF: it exits; the kill is for one still setting up
            _signal_group(pid, signal.SIGKILL)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass

    def run(self, run: dict[str, Any]) -> dict[str, Any]:
        limits = run["limits"]
        if self.spare is None or self.spare[2] != limits:
            self._drop_spare()
            self.spare = self._spawn(limits)
        pid, go_w, _ = self.spare
        self.spare = None
        deadline = time.monotonic() + float(limits["timeout_s"])
        try:
            _send(go_w, run)
        except OSError:
            pass  # it died setting up: _wait() sees the exit
        finally:
            os.close(go_w)
        self.compiled(run)  # for the spares to come, while this one runs
        try:
            ended, status = self._wait(pid, deadline)
        finally:
            left = self._reap_all(pid)
        return {
            "exit": ended,
            "status": status,
            "left": left,
            "scratch": self._clean_scratch(),
        }

    def _spawn(self, limits: dict[str, Any]) -> tuple[int, int, dict[str, Any]]:
        self.rlimits(limits)  # computed here, inherited by the child
        go_r, go_w = os.pipe()
        go_r, go_w = _high(go_r), _high(go_w)
        pid = os.fork()
        if pid == 0:  # child: never returns into the zygote loop
            try:
                os.close(go_w)
                _child_main(limits, self, go_r)
                os._exit(0)
            except BaseException as exc:  # noqa: BLE001 - the sandbox's own failure: say so
                note = f"sandbox child failed: {type(exc).__name__}: {exc}\n"
                try:
                    os.write(self.fds["out_w"], note.encode("utf-8", "replace"))
                finally:
                    os._exit(70)
            finally:
                os._exit(70)
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
                    ready = select.select([pidfd, self.fds["zc_r"]], [], [], remaining)[0]
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
        if not select.select([self.fds["zc_r"]], [], [], 0)[0]:
            return False
        req = _recv(self.fds["zc_r"])
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


def _expose_python(c: Any) -> None:
    """In a new mount namespace: make mounts private, and make the interpreter reachable for an
    unprivileged uid without exposing the rest of a private home (a tmpfs over the private
    ancestor, the needed trees bound back). Used by the checker and by the zygote."""
    c.mount(None, "/", None, c.MS_REC | c.MS_PRIVATE)
    needed: dict[str, list[str]] = {}
    for path in _python_paths():
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
    """Sets up and applies the kernel layers; ``report()`` says which are in force and why not."""

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

    def _mounts(self) -> None:
        c = self.c
        _expose_python(c)
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
            c.mount("tmpfs", SCRATCH, "tmpfs", c.MS_NOSUID | c.MS_NODEV, opts)

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
        if not self.active["mount_namespace"] and any(map(_private_ancestor, _python_paths())):
            self._miss("unprivileged_uid", "the interpreter is under a private directory and "
                       "there is no mount namespace to expose it")  # fmt: skip
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
            ruleset.allow_paths(_python_paths() + list(_SYSTEM_READ), c.READ_RIGHTS)
            ruleset.allow_paths(["/dev/null"], c.FS_READ_FILE | c.FS_WRITE_FILE)
            if not self.pid_namespace:
                ruleset.allow_paths([f"/proc/{os.getpid()}"], c.FS_READ_FILE | c.FS_READ_DIR)
            scratch_rights = ruleset.fs & ~(c.FS_MAKE_CHAR | c.FS_MAKE_BLOCK | c.FS_EXECUTE)
            ruleset.allow_paths([self.scratch], scratch_rights)
            ruleset.restrict_self()
            ruleset.close()
            if self.landlock_abi >= 6:  # children: signals and abstract sockets stay inside
                self.child_ruleset = c.LandlockRuleset(self.landlock_abi, scope_only=True)
                self.child_ruleset.allow_paths([self.scratch], c.FS_REFER)
                self.child_ruleset.fd = _high(self.child_ruleset.fd)  # clear of the dup2s
            self.active["landlock"] = True
        except OSError as exc:
            self._miss("landlock", str(exc))

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
    fds: dict[str, int],
    limits: dict[str, Any],
    checker: int,
    seccomp: tuple[bytes, ...] | str,
) -> None:
    """Body of the process the checker forks at startup; never returns."""
    try:
        confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != checker:
            os._exit(1)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)  # the caller's pipes stay with the checker only
        os.close(devnull)
        layers = _Layers(confine, limits, seccomp)
        pid_namespace = layers.enter_namespaces(fds["sync_w"], fds["sync_r"])
        # A new user namespace changes our credentials, which clears the parent-death signal.
        confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != checker:
            os._exit(1)
        if pid_namespace:
            init = os.fork()
            if init:  # stay as the namespace's outside anchor until its init exits
                for fd in fds.values():
                    os.close(fd)
                status = os.waitpid(init, 0)[1]
                os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
            confine.prctl(confine.PR_SET_PDEATHSIG, signal.SIGKILL)
        for name in PRELOAD:
            try:
                __import__(name)
            except ImportError:
                pass
        layers.finish()
        _prepare_children(layers.scratch)
        gc.collect()
        gc.freeze()  # keep the preloaded heap shared with the forked children
        _send(fds["zr_w"], {"layers": layers.report()})
        _Zygote(fds, layers, limits).serve()
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - report and die; the checker reports it on
        try:
            _send(fds["zr_w"], {"error": f"zygote setup failed: {type(exc).__name__}: {exc}"})
        finally:
            os._exit(1)


# --- checker -----------------------------------------------------------------------------------


class _ChildGone(Exception):
    """The child ended (or was killed) before answering."""


class _ProtocolError(Exception):
    """The child sent something that is not a well-formed answer."""


class _Link:
    """The checker's ends of the pipes to the children and the zygote."""

    def __init__(self, fds: dict[str, int]) -> None:
        self.fds = fds
        # Not req_r: its file description is shared with the children, which read it blocking.
        for name in ("rep_r", "out_r", "zr_r", "req_w"):
            os.set_blocking(fds[name], False)
        self.rep = _Frames(_MAX_VALUE_FRAME + 4096)
        self.zr = _Frames(_MAX_ZYGOTE_FRAME)
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
        if fd == self.fds["req_r"] and not select.select([fd], [], [], 0)[0]:
            return None  # req_r is blocking (shared with the children): look before reading
        try:
            return os.read(fd, 1 << 16)
        except BlockingIOError:
            return None

    def pump(self, timeout: float) -> None:
        """Wait up to ``timeout`` for data on any pipe and take in what is there."""
        watch = [self.fds["rep_r"], self.fds["out_r"], self.fds["zr_r"]]
        ready = select.select(watch, [], [], max(timeout, 0))[0]
        for fd in ready:
            chunk = self._read(fd)
            if fd == self.fds["zr_r"]:
                if chunk == b"":
                    raise _ZygoteGone("the zygote exited")
                if chunk:
                    self.zr.feed(chunk)
                    frame = self.zr.pop()
                    if frame is not None:
                        self.exit = frame
            elif fd == self.fds["out_r"] and chunk:
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
            if self.frames > _MAX_FRAMES:
                self.broken(f"more than {_MAX_FRAMES} frames in one suite")
                return
            if isinstance(frame, dict) and "viol" in frame:
                name = _clean_name(frame["viol"])
                if name not in self.violations and len(self.violations) < _MAX_VIOLATIONS:
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
                self._drain(self.fds["rep_r"], self.rep.feed)
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
            _send(self.fds["zc_w"], {"abort": 1})
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
        self._drain(self.fds["out_r"], self._keep_output)
        self._drain(self.fds["rep_r"], self.rep.feed)
        self._frames()
        self._drain(self.fds["req_r"], lambda c: None)
        self.rep.buf.clear()
        self.pending = []


class _ZygoteGone(Exception):
    """The zygote died or hung: the checker cannot go on."""


class _Plan:
    """One suite's tests, planned once in the checker: each parsed into the grammar's data
    (:class:`_grammar.Test`) with its literals computed, or the ``error:<Name>`` outcome a test
    outside the grammar gets. The child is sent each test's call and nothing else."""

    def __init__(self, tests: list[str]) -> None:
        self.tests: list[tuple[Any, Any] | str] = []
        for source in tests:
            try:
                test = _grammar.parse_test(source, probe=True)
                self.tests.append((test, _grammar.expected_value(test)))
            except Exception as exc:  # noqa: BLE001 - SyntaxError, GrammarError, a literal's own
                self.tests.append(_error(exc))
        self.calls = [None if isinstance(t, str) else
                      ["call" if t[0].form == _grammar.RAISES else "value", t[0].call.source]
                      for t in self.tests]  # fmt: skip
        self.probes = any(not isinstance(t, str) and t[0].form == _grammar.PROBE
                          for t in self.tests)  # fmt: skip


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
                value = decode(reply["v"])
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
            raised = _clean_name(mro[0].rpartition(".")[2]) if mro else "Exception"
            return ("ok", not reply["ok"], raised, mro)
        if not isinstance(reply.get("x"), str):
            raise _ProtocolError("an answer that is neither a value nor an exception")
        return ("x", _clean_name(reply["x"]), mro)

    def _decide(self, i: int, test: Any, expected: Any, answer: tuple[Any, ...]) -> str:
        kind = answer[0]
        if kind == "x":
            return "error:" + answer[1]  # the call (or finding the entry point) raised
        if test.form == _grammar.RAISES:
            if kind != "ok":
                raise _ProtocolError("a value where a raise was asked for")
            return "pass" if _grammar.raised_matches(test, answer[3] if answer[1] else None) \
                else "fail"  # fmt: skip
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
            return _error(exc)

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
            how = "status unknown" if not isinstance(status, int) else _describe_status(status)
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
        } | ({"values": self.values[:n_tests] + [None] * (n_tests - len(self.values))}
             if self.plan.probes else {})  # fmt: skip


def _probe_value(answer: tuple[Any, ...]) -> list[Any]:
    """A probe's answer for the caller: ``["value", encoded]``, ``["raises", name]`` (an
    ``Exception``), ``["error", name]`` (any other exception) or ``["unsupported", type]``."""
    if answer[0] == "v":
        return ["value", encode(answer[1])]
    if answer[0] == "u":
        return ["unsupported", answer[1]]
    return ["raises" if "builtins.Exception" in answer[2] else "error", answer[1]]


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


_PLANS_KEPT = 64  # suites planned recently (verification asks for each item's several times)


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
    def __init__(self, fds: dict[str, int]) -> None:
        self.fds = fds
        self.link = _Link(fds)
        self._plans: dict[tuple[str, ...], _Plan] = {}

    def plan(self, tests: list[str]) -> _Plan:
        key = tuple(tests)
        plan = self._plans.pop(key, None)
        if plan is None:
            plan = _Plan(tests)
            if len(self._plans) >= _PLANS_KEPT:
                del self._plans[next(iter(self._plans))]  # least recently used
        self._plans[key] = plan
        return plan

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        plan = self.plan(req["tests"])
        limits = req["limits"]
        run = {
            "code": req["code"],
            "setup": req["setup"],
            "calls": plan.calls,
            "limits": limits,
            "guard": req.get("guard", True),
        }
        self.link.reset(int(limits["output_bytes"]))
        _send(self.fds["zc_w"], {"run": run})
        return _Suite(self.link, plan, float(limits["timeout_s"])).run()


# --- checker process: startup and request loop -------------------------------------------------

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


def _high(fd: int) -> int:
    """Move ``fd`` above the child's fixed fds (0-4), so dup2() there cannot clobber it."""
    import fcntl

    new = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return new


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
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1\n"),
                           ("gid_map", f"{gid} {gid} 1\n")):  # fmt: skip
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

    def enter_namespaces(self) -> None:
        """In the process Sandbox started: new user, PID, network, IPC and mount namespaces,
        then a fork. The child returns as the checker (the PID namespace's init); this process
        stays outside as the namespace's anchor and exits with the checker's status (it never
        returns). Without a PID namespace there is no fork and this process is the checker."""
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
                _expose_python(c)
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
            ruleset.allow_paths(_python_paths() + list(_SYSTEM_READ), c.READ_RIGHTS)
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
            map(_private_ancestor, _python_paths())
        ):
            self._miss("unprivileged_uid", "the interpreter is under a private directory and "
                       "there is no mount namespace to expose it")  # fmt: skip
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


def _read_request(fd: int) -> Any:
    """The caller's next request; None at EOF; ValueError on an oversized or garbled one."""
    head = _read_polling(fd, _HEADER.size)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    if size > _MAX_REQUEST:
        raise ValueError(f"request frame of {size} bytes exceeds the {_MAX_REQUEST} byte limit")
    body = _read_polling(fd, size)
    if body is None:
        return None
    req = _loads(body)
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


def _protocol_reply(reply: dict[str, Any], why: str) -> dict[str, Any]:
    """A suite whose child broke the protocol: nothing it said counts, every test's outcome is
    PROTOCOL_ERROR (an unusable suite for the caller, neither a pass nor a kill)."""
    n = len(reply.get("outcomes", ()))
    reply.update(outcomes=[PROTOCOL_ERROR] * n, passed=False, returned=[""] * n)
    if why not in reply.get("detail", ""):
        reply["detail"] = "; ".join(filter(None, [reply.get("detail", ""), why]))
    return reply


def serve() -> None:
    """Checker main: confine, start the zygote, then one request frame in, one reply out,
    until EOF (see :class:`_CheckerLayers` for the order)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminate)
    limits = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    try:
        import _confine as confine
    finally:
        sys.path.remove(here)
    try:  # before the zygote exists: see seccomp_programs() for why in a helper process
        seccomp: tuple[bytes, ...] | str = confine.seccomp_programs()
    except OSError as exc:
        seccomp = str(exc)
    text = {"encoding": "utf-8", "errors": "backslashreplace", "line_buffering": True}
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        stream.reconfigure(**text)  # the children inherit these streams
    own = _CheckerLayers(confine)
    try:
        own.enter_namespaces()  # from here on, in the anchor's child when there is a PID ns
    except OSError as exc:
        write_frame(1, {"error": f"the checker could not enter its namespaces: {exc}"})
        return
    fds: dict[str, int] = {}
    for a, b in (
        ("req_r", "req_w"),
        ("rep_r", "rep_w"),
        ("out_r", "out_w"),
        ("zc_r", "zc_w"),
        (
            "zr_r",
            "zr_w",
        ),
        ("sync_r", "up_w"),
        ("up_r", "sync_w"),
    ):
        r, w = os.pipe()
        fds[a], fds[b] = _high(r), _high(w)
    mine = ("req_r", "req_w", "rep_r", "out_r", "zc_w", "zr_r", "up_r", "up_w")
    checker = os.getpid()
    zygote = os.fork()
    if zygote == 0:
        theirs = {k: v for k, v in fds.items() if k not in mine or k == "req_r"}
        for name in mine:
            if name != "req_r":
                os.close(fds[name])
        if own.life_r is not None:
            os.close(own.life_r)
        theirs["sync_w"], theirs["sync_r"] = fds["sync_w"], fds["sync_r"]
        _zygote_process(confine, theirs, limits, checker, seccomp)
    for name in list(fds):
        if name not in mine:
            os.close(fds.pop(name))
    msg = _read_line(fds["up_r"])
    if msg.startswith(b"u"):  # "u<the zygote's pid in our /proc>"
        mapped = msg[1:].isdigit() and _write_maps(int(msg[1:]))
        os.write(fds["up_w"], b"k" if mapped else b"f")
    os.close(fds.pop("up_r"))
    os.close(fds.pop("up_w"))
    try:
        ready = _recv(fds["zr_r"], _MAX_ZYGOTE_FRAME)
    except ValueError as exc:
        ready = {"error": f"garbled frame from the zygote: {exc}"}
    if not isinstance(ready, dict) or "layers" not in ready:
        write_frame(1, {"error": str((ready or {}).get("error", "the zygote died at startup"))})
        return
    isolation = ready["layers"]
    own.confine(seccomp)
    _set_checker_limits(limits)
    checker_obj = _Checker(fds)
    budget = _CpuBudget(checker_obj.link)
    if budget.backstop:
        own._on("cpu_limit")
    checker_report = own.report()
    isolation["layers"].update(checker_report["layers"])
    isolation["missing"].update(checker_report["missing"])
    isolation["checker"] = "confined" if not checker_report["missing"] else "partly confined"
    # Nothing here may write into (or read from) the caller's pipes but this loop.
    fd_in, fd_out = _high(os.dup(0)), _high(os.dup(1))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    write_frame(fd_out, {"ready": os.getpid(), "version": RUNNER_VERSION, "isolation": isolation})
    while True:
        req: Any = None
        try:
            req = _read_request(fd_in)
            if req is None:
                _stop_zygote(fds["zc_w"], zygote)
                return
            if "probe" in req:
                budget.arm(float(req.get("budget_s", 1.0)))
                try:
                    reply = {"probe": _probe(req["probe"])}
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
            what = "zygote lost" if isinstance(exc, _ZygoteGone) else "checker failed"
            lost = {"error": f"sandbox {what}: {type(exc).__name__}: {exc}", "fatal": True}
            lost["id"] = req.get("id") if isinstance(req, dict) else None
            try:
                write_frame(fd_out, lost)
            finally:
                os._exit(1)
        reply["id"] = req.get("id")  # lets the caller detect a desynchronised stream
        write_frame(fd_out, reply)


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
