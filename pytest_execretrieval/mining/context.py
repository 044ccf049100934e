"""``mine --context``: the SOURCE's package as the context archive its items name.

Whatever the SOURCE is (a directory, a wheel, an sdist, an installed distribution), its
``.py`` files, and those of the pure-Python wheels of ``--wheels DIR`` (its dependencies, or
its test suite's), are written as one zip, laid out as they import
(:func:`.functions.importable_path`), the same bytes for the same files (sorted names, fixed
dates), into ``OUT/contexts/<name>-<version>.zip``.
Each item's ``[context]`` table names it by that path and its sha256
(:class:`..corpus.items.ItemContext`); it is prepared for the sandbox like any context
(:func:`..execution.contexts.prepare`): nothing of it is imported or run on the host.
"""

from __future__ import annotations

import functools
import hashlib
import re
import zipfile
from dataclasses import dataclass
from importlib import metadata
from io import BytesIO
from pathlib import Path, PurePosixPath

from packaging.requirements import Requirement

from ..execution.contexts import (
    DATA_FILE_SUFFIXES,
    ContextError,
    archive_files,
    prepare,
    prepare_data,
)
from ..safe_write import write_atomic
from .functions import importable_path
from .sources import SourceError, SourceTree, check_licence, copyright_lines, load_source

CONTEXTS = "contexts"  # the folder of an items directory the context archives are in
_FIXED_DATE = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class HeldWheel:
    """A wheel whose files a context archive holds: its name, digest, licence, copyright."""

    name: str
    sha256: str
    licence: str
    copyright: tuple[str, ...]


@dataclass(frozen=True)
class WrittenContext:
    package: str  # the archive's path in the items directory (the ``[context]`` ``package``)
    sha256: str
    files: dict[str, bytes]  # what it holds, by the name it imports as
    wheels: tuple[HeldWheel, ...] = ()  # each wheel it holds
    requires: tuple[tuple[str, str], ...] = ()  # each declared dependency and where it is


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pure_wheels(folder: Path | None) -> list[Path]:
    """The pure-Python wheels (``*-none-any.whl``) of a wheelhouse folder, by name."""
    return sorted(folder.glob("*-none-any.whl")) if folder is not None else []


def dependencies(requires: tuple[str, ...], wheels: list[Path]) -> tuple[tuple[str, str], ...]:
    """Each declared dependency and where the context has it: ``wheel FILE`` (in the
    archive, pinned by it), ``installed VERSION`` (importable in the sandbox from this
    environment, not pinned by the archive) or ``not at hand``."""
    held = {_normal(w.name.split("-")[0]): w.name for w in wheels}
    found = []
    for name in requires:
        if _normal(name) in held:
            where = f"wheel {held[_normal(name)]}"
        else:
            try:
                where = f"installed {metadata.version(name)}"
            except metadata.PackageNotFoundError:
                where = "not at hand"
        found.append((name, where))
    return tuple(found)


def context_archive(
    tree: SourceTree,
    wheels: list[Path] = (),  # type: ignore[assignment]
) -> tuple[bytes, dict[str, bytes]]:
    """The zip of the SOURCE's ``.py`` and package data files by their importable names, then
    each wheel's (a name the package has stays the package's), and those files."""
    files: dict[str, bytes] = {}
    for path, body in sorted(tree.files.items()):
        if path.endswith(".py") or _package_data(path, tree):
            files.setdefault(importable_path(path), body)
    for wheel in wheels:
        try:
            data = wheel.read_bytes()
        except OSError as exc:
            raise SourceError(f"{wheel}: cannot be read: {exc}") from None
        try:
            for name, body in archive_files(data, str(wheel)).items():
                files.setdefault(name, body)
        except ContextError as exc:
            raise SourceError(str(exc)) from None
    return zipped(files), files


def zipped(files: dict[str, bytes]) -> bytes:
    """``files`` as a zip archive: sorted names, fixed dates (the same files, the same bytes)."""
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, _FIXED_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()


@functools.cache
def runner_context() -> str:
    """The sha256 of the prepared archive of pytest and what it requires in this environment
    (markers evaluated, extras left out), as carving's harness imports them in the sandbox.
    The sandbox reads only the interpreter's trees and the prepared contexts, and the
    environment's site-packages may lie where it cannot (under ``/tmp``, which its scratch
    directory covers): the runner travels like a context instead. Made once a process."""
    files: dict[str, bytes] = {}
    seen: set[str] = set()
    wanted = ["pytest"]
    while wanted:
        name = _normal(wanted.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional one that is not installed: pytest runs without it
        for line in dist.requires or []:
            need = Requirement(line)
            if need.marker is None or need.marker.evaluate({"extra": ""}):
                wanted.append(need.name)
        for entry in dist.files or []:
            path = str(entry)
            if path.endswith(".py") and not path.startswith("..") and ".dist-info" not in path:
                files[path] = Path(str(dist.locate_file(entry))).read_bytes()
    return prepare_data(zipped(files))


def held_wheel(wheel: Path, allow_licence: str | None) -> HeldWheel:
    """What NOTICE and MINED.md say of a wheel the context holds; its licence must be one
    mining takes (:func:`.sources.check_licence`, as for the SOURCE itself)."""
    tree = load_source(str(wheel))
    check_licence(tree, allow_licence)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    return HeldWheel(wheel.name, digest, tree.license_expression, tuple(copyright_lines(tree)))


def _package_data(path: str, tree: SourceTree) -> bool:
    """Whether ``path`` is a data file beside a module of the SOURCE (not a hidden folder's)."""
    folder = PurePosixPath(path).parent
    return (
        path.endswith(DATA_FILE_SUFFIXES)
        and not any(part.startswith(".") for part in folder.parts)
        and any(f"{folder}/{name}" in tree.files for name in ("__init__.py",))
    )


def written_context(
    tree: SourceTree,
    out: Path,
    wheelhouse: Path | None = None,
    allow_licence: str | None = None,
    name: str = "",
) -> WrittenContext:
    """The context archive of ``tree`` (with the pure-Python wheels of ``wheelhouse``, each of
    a licence mining takes) written into the items directory ``out`` and prepared; its file is
    ``contexts/<name>.zip`` (default: the distribution and its version)."""
    wheels = pure_wheels(wheelhouse)
    held = tuple(held_wheel(wheel, allow_licence) for wheel in wheels)
    data, files = context_archive(tree, wheels)
    name = name or f"{tree.distribution}-{tree.version}"
    stem = re.sub(r"[^A-Za-z0-9_.+-]", "_", name) or "package"
    package = f"{CONTEXTS}/{stem}.zip"
    path = write_atomic(Path(out) / package, data, root=Path(out))
    sha256 = hashlib.sha256(data).hexdigest()
    try:
        prepare(path, sha256)
    except ContextError as exc:
        raise SourceError(f"the context of {tree.distribution}: {exc}") from None
    return WrittenContext(package, sha256, files, held, dependencies(tree.requires, wheels))
