"""The sandbox's wire: its pipes, the frames on them and the value codec.

Standard library only, shared by the checker, the zygote and the child (:mod:`._sandbox_child`
has the overview), and imported by :mod:`.sandbox` on the host for the frame format and limits.

Frames: a 4-byte big-endian length + UTF-8 JSON everywhere, each bounded by its reader
(``_MAX_REQUEST``, ``_MAX_VALUE_FRAME``, ``_MAX_ZYGOTE_FRAME``, ``_MAX_FRAMES``); every parse or
decode failure is a ValueError there. A child's call returns its value in a restricted typed
encoding (:func:`encode`); the checker decodes it (:func:`decode`) into plain objects of the
allowed types only, so a snippet object's ``__eq__`` never runs there. Values are bounded in
nesting, elements and same-hash set elements or dict keys.
"""

from __future__ import annotations

import builtins
import json
import os
import struct
import sys
from collections.abc import Callable

TYPE_CHECKING = False  # type checkers take it as True; typing is not imported in the sandbox
if TYPE_CHECKING:
    from typing import Any

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
# Suites planned (checker) and compiled (zygote) recently: verification asks for each item's
# several times.
_PLANS_KEPT = 64


# --- framing -----------------------------------------------------------------------------------


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _frame(obj: Any) -> bytes:
    data = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    return _HEADER.pack(len(data)) + data


def _send(fd: int, obj: Any) -> None:
    _write_all(fd, _frame(obj))


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


def _number_text(v: Any) -> float:
    """A JavaScript number that is not a safe integer, as its ``String(x)`` (``"0.1"``,
    ``"1e+21"``, ``"-0"``, ``"NaN"``, ``"-Infinity"``): the Node runner's encoding of it."""
    if type(v) is not str or len(v) > 32:
        raise TypeError("expected a number's text")
    return float(v)


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

    f = [_int(v) for v in r[:8]]  # indexed, not unpacked: a short record is an IndexError
    return dt.datetime(f[0], f[1], f[2], f[3], f[4], f[5], f[6], fold=f[7], tzinfo=_tz(r[8], depth))


def _dec_time(r: list[Any], depth: int) -> Any:
    import datetime as dt

    f = [_int(v) for v in r[:5]]
    return dt.time(f[0], f[1], f[2], f[3], fold=f[4], tzinfo=_tz(r[5], depth))


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
    "n": lambda r, _: _number_text(r[0]),
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


# --- names and fds ------------------------------------------------------------------------------


def _clean_name(name: object) -> str:
    text = name if isinstance(name, str) else "Exception"
    text = "".join(c if (c.isascii() and c.isalnum()) or c in "_.:" else "_" for c in text)
    return text[:100] or "Exception"


def _error(exc: BaseException) -> str:
    return "error:" + _clean_name(type(exc).__name__)


def _high(fd: int) -> int:
    """Move ``fd`` above the child's fixed fds (0-5), so dup2() there cannot clobber it."""
    import fcntl

    new = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return new


# --- pipes -------------------------------------------------------------------------------------


class Pipes:
    """The pipes the checker creates at startup, before it forks the zygote, by their ends.

    Every end is above the child's fixed fds (:func:`_high`). The checker keeps
    :attr:`CHECKER_ENDS` and the zygote the others (its children inherit ``rep_w`` and ``out_w``).
    A plain class: ``dataclasses`` (which imports ``inspect``) and ``typing`` would make the
    zygote, whose size every fork and every child's exit pays for, larger.
    """

    rep_r: int  # child -> checker: the frames of every child (inherited by each)
    rep_w: int
    out_r: int  # child -> checker: its stdout and stderr
    out_w: int
    zc_r: int  # checker -> zygote: run, abort
    zc_w: int
    zr_r: int  # zygote -> checker: layers, then one exit per suite
    zr_w: int
    sync_r: int  # checker -> zygote, at startup: its user namespace is mapped ("k") or not
    up_w: int
    up_r: int  # zygote -> checker, at startup: "u<pid>", please map my user namespace
    sync_w: int
    go_r: int  # checker -> the spare child: its suite's run frame (inherited by each spare)
    go_w: int

    CHECKER_ENDS = ("rep_r", "out_r", "zc_w", "zr_r", "up_r", "up_w", "go_w")

    __slots__ = tuple(__annotations__)  # the ends above

    def __init__(self, **ends: int) -> None:
        for name in self.__slots__:
            setattr(self, name, ends[name])

    @classmethod
    def create(cls) -> Pipes:
        ends: dict[str, int] = {}
        for r, w in (
            ("rep_r", "rep_w"),
            ("out_r", "out_w"),
            ("zc_r", "zc_w"),
            ("zr_r", "zr_w"),
            ("sync_r", "up_w"),
            ("up_r", "sync_w"),
            ("go_r", "go_w"),
        ):
            ends[r], ends[w] = (_high(fd) for fd in os.pipe())
        return cls(**ends)

    def ends(self, checker: bool) -> list[int]:
        """The checker's ends, or (``checker`` false) the zygote's."""
        return [getattr(self, k) for k in self.__slots__ if (k in self.CHECKER_ENDS) == checker]
