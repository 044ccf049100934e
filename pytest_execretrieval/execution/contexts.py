"""Repository contexts: the package an item's function lives in, prepared for the sandbox.

A context is a zip archive (a wheel, or the context archive ``execretrieval mine --context``
writes) pinned by its sha256. It is read here with bounds and never imported or run on the
host: its ``.py`` files are written, with their bytecode compiled (compiling runs nothing), into
the user's own cache, ``contexts/<sha256>/`` beside the key (:func:`contexts_dir`), under a
temporary name renamed into place when complete, so a killed run leaves no half-prepared
context. The sandbox exposes that directory read-only (:class:`.sandbox.Sandbox`); a suite names
its context in its setup (:func:`context_setup`), and the child imports the module there with
one function or method replaced by the snippet (``_child._in_context``).
"""

from __future__ import annotations

import hashlib
import os
import py_compile
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from io import BytesIO
from pathlib import Path, PurePosixPath

from ..signed_files import user_key_dir
from ._child import CONTEXT_PREFIX, context_fields
from ._zygote import SCRATCH

__all__ = [
    "ContextError",
    "archive_files",
    "archive_sha256",
    "context_fields",
    "context_setup",
    "contexts_dir",
    "prepare",
    "prepare_data",
]

# What a context holds besides ``.py`` files: package data its modules read beside themselves.
DATA_FILE_SUFFIXES = (".json", ".txt", ".bin", ".csv", ".tsv", ".dat", ".yaml", ".yml", ".xml")
MAX_ARCHIVE_BYTES = 64 << 20
MAX_MEMBERS = 20_000
MAX_FILE_BYTES = 8 << 20
MAX_TOTAL_BYTES = 256 << 20
_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ContextError(ValueError):
    """A context archive that cannot be prepared: the message names it and the reason."""


def contexts_dir() -> Path:
    """Where prepared contexts live: ``contexts/`` in the user's cache directory (beside the
    key, outside any working tree)."""
    return user_key_dir() / "contexts"


def context_setup(sha256: str, module: str = "", owner: str = "", also: str = "") -> str:
    """The setup of a suite run in a context: the package importable (and after it the
    prepared archive ``also``: carving's test runner), and with ``module`` (and ``owner``, a
    class's dotted name in it) the snippet replacing its namesake there."""
    first = f"{sha256}+{also}" if also else sha256
    return CONTEXT_PREFIX + " ".join(part for part in (first, module, owner) if part)


def archive_sha256(path: Path) -> str:
    """The sha256 of a context archive's bytes (read within :data:`MAX_ARCHIVE_BYTES`)."""
    return hashlib.sha256(_read_archive(path)).hexdigest()


def prepare(path: Path, sha256: str) -> Path:
    """The prepared directory of the archive at ``path``, whose bytes must hash to ``sha256``;
    prepared now unless it already is. Raises :class:`ContextError`."""
    return _prepared(sha256, lambda: _read_archive(path), str(path))


def prepare_data(data: bytes) -> str:
    """:func:`prepare` of an archive in memory (one the tool made itself: carving's test
    runner); its sha256."""
    sha256 = hashlib.sha256(data).hexdigest()
    _prepared(sha256, lambda: data, "an archive in memory")
    return sha256


def _prepared(sha256: str, read: Callable[[], bytes], label: str) -> Path:
    if not _SHA256.fullmatch(sha256):
        raise ContextError(f"{sha256!r} is not a sha256 (64 lower-case hex digits)")
    root = contexts_dir()
    if PurePosixPath(os.path.realpath(root)).is_relative_to(SCRATCH):
        raise ContextError(
            f"the contexts directory {root} is under {SCRATCH}, which the sandbox covers with "
            "its scratch directory: set XDG_CACHE_HOME to a directory elsewhere"
        )
    target = root / sha256
    if target.is_dir():
        return target
    data = read()
    found = hashlib.sha256(data).hexdigest()
    if found != sha256:
        raise ContextError(f"{label}: its sha256 is {found}, not the pinned {sha256}")
    files = archive_files(data, label)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)  # the sandbox's children (nobody) read it
    staging = Path(tempfile.mkdtemp(prefix=".preparing-", dir=root))
    try:
        for name, body in files.items():
            out = staging / name
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(body)
            if name.endswith(".py"):
                _compiled(out)
        for folder, _, names in os.walk(staging):
            os.chmod(folder, 0o755)
            for name in names:
                os.chmod(os.path.join(folder, name), 0o644)
        try:
            staging.rename(target)
        except OSError:  # another process prepared it meanwhile
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def archive_files(data: bytes, label: str) -> dict[str, bytes]:
    """The ``.py`` and package data files (:data:`DATA_FILE_SUFFIXES`) of a zip archive, by
    posix name (a wheel's ``.dist-info`` left out), each name checked (relative, no ``..``,
    plain characters) and every size bounded before it is read."""
    try:
        archive = zipfile.ZipFile(BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise ContextError(f"{label}: not a readable zip archive: {exc}") from None
    if len(infos) > MAX_MEMBERS:
        raise ContextError(f"{label}: more than {MAX_MEMBERS} members")
    files: dict[str, bytes] = {}
    total = 0
    for info in infos:
        name = info.filename
        if info.is_dir() or not name.endswith((".py", *DATA_FILE_SUFFIXES)):
            continue
        if ".dist-info/" in name or ".data/" in name:
            continue
        parts = PurePosixPath(name).parts
        if name.startswith("/") or not all(_PART.fullmatch(p) and p != ".." for p in parts):
            raise ContextError(f"{label}: member name {name[:200]!r} is not a plain relative path")
        if info.file_size > MAX_FILE_BYTES or total + info.file_size > MAX_TOTAL_BYTES:
            raise ContextError(f"{label}: {name} makes the archive larger than its bounds")
        try:
            with archive.open(info) as member:
                body = member.read(MAX_FILE_BYTES + 1)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise ContextError(f"{label}: {name} cannot be read: {exc}") from None
        if len(body) > info.file_size:
            raise ContextError(f"{label}: {name} holds more than its declared size")
        total += len(body)
        files[name] = body
    if not files:
        raise ContextError(f"{label}: holds no .py file")
    return files


def _read_archive(path: Path) -> bytes:
    try:
        if path.is_symlink() or not path.is_file():
            raise ContextError(f"{path}: not a regular file")
        with path.open("rb") as handle:
            data = handle.read(MAX_ARCHIVE_BYTES + 1)
    except OSError as exc:
        raise ContextError(f"{path}: cannot be read: {exc}") from None
    if len(data) > MAX_ARCHIVE_BYTES:
        raise ContextError(f"{path}: over {MAX_ARCHIVE_BYTES >> 20} MiB")
    return data


def _compiled(path: Path) -> None:
    """Its bytecode beside it (the sandbox imports it without compiling, read-only); a module
    that does not compile is left to fail where it is imported."""
    try:
        py_compile.compile(
            str(path),
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
    except (py_compile.PyCompileError, SyntaxError, ValueError, RecursionError, MemoryError):
        pass
