"""Atomic file writes that a committed symlink cannot redirect.

Every file the package writes (the corpus files, reports, junit XML, summaries, plots, caches,
frozen embeddings) goes through :func:`write_atomic` or :func:`atomic_path` (an append-only log
through :func:`append_text`). An items directory
or a report directory may come from a pull request, so a name in it may be a symlink planted to
make a write land outside the tree (``corpus.jsonl -> ~/.bashrc``, a cache shard pointing at
``/etc``). Both functions therefore:

- refuse a target that is a symlink (:class:`UnsafeTargetError`; nothing is written), and a
  target directory that is a symlink;
- create the temporary file themselves in the target's directory with
  ``O_CREAT | O_EXCL | O_NOFOLLOW`` (:func:`tempfile.mkstemp`), under a fresh random name, so no
  planted file or link can stand in for it;
- move it into place with :func:`os.replace`, which replaces a directory entry and never follows
  a link at the destination: readers see the old file or the complete new one.

Imports nothing of the package: any layer may use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["UnsafeTargetError", "append_text", "atomic_path", "check_target", "write_atomic"]


class UnsafeTargetError(OSError):
    """The target of a write is a symlink (or its directory is): nothing was written."""


def check_target(path: Path, root: Path | None = None) -> Path:
    """``path`` as an absolute path, after checking that it is not a symlink or a directory and
    that no directory on the way to it is a symlink: every component below ``root`` (the
    directory the user named, which may itself be a link), or only its own directory without a
    ``root``. Raises :class:`UnsafeTargetError` otherwise."""
    path = Path(os.path.abspath(path))
    if root is None:
        chain = [path.parent, path]
    else:
        base = Path(os.path.abspath(root))
        if base != path and base not in path.parents:
            raise UnsafeTargetError(f"refusing to write {path}: it is outside {base}")
        chain = [p for p in reversed(path.parents) if base in p.parents] + [path]
    for candidate in chain:
        try:
            mode = os.lstat(candidate).st_mode
        except FileNotFoundError:
            break  # nothing below a missing directory exists yet
        if stat.S_ISLNK(mode):
            what = "file" if candidate == path else "directory"
            raise UnsafeTargetError(
                f"refusing to write {path}: the {what} {candidate} is a symlink (a write through "
                "it could land anywhere); remove the link"
            )
        if candidate == path and stat.S_ISDIR(mode):
            raise UnsafeTargetError(f"refusing to write {path}: it is a directory")
    return path


@contextlib.contextmanager
def atomic_path(
    path: Path, suffix: str = ".tmp", root: Path | None = None, mode: int | None = None
) -> Iterator[Path]:
    """A fresh temporary path next to ``path`` for a writer that wants a file name (numpy,
    matplotlib), moved onto ``path`` when the block ends without an exception, removed
    otherwise. The temporary file exists (empty, mode 0600) when the block starts; ``suffix``
    is its name's ending (``np.savez`` appends ``.npz`` to names without it); ``root`` as in
    :func:`check_target`; ``mode`` the file's permissions (default: as ``open()`` makes
    them under the umask)."""
    path = check_target(path, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    check_target(path, root)  # a directory made meanwhile by someone else: check again
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK if mode is None else mode)  # mkstemp made it 0600
        check_target(path, root)  # a link planted while writing is refused, not followed
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_atomic(
    path: Path,
    data: bytes | str,
    *,
    fsync: bool = False,
    root: Path | None = None,
    mode: int | None = None,
) -> Path:
    """Write ``data`` (str as UTF-8) to ``path`` atomically; ``fsync`` flushes it to disk
    before the rename (for files other processes read concurrently); ``root`` and ``mode`` as in
    :func:`atomic_path`. Returns ``path``."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path, root=root, mode=mode) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
    return Path(path)


def append_text(path: Path, text: str, root: Path | None = None) -> None:
    """Append ``text`` (UTF-8) to the log at ``path``, created if missing; a symlinked target
    (``O_NOFOLLOW``) or folder (``root`` as in :func:`check_target`) is refused."""
    path = check_target(path, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    check_target(path, root)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafeTargetError(f"refusing to append to {path}: it is a symlink") from None
        raise exc
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(text)


def _read_umask() -> int:
    """The process umask, read once at import (there is no getter: setting it and putting it
    back is the only way, and doing that per write would race with other threads)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()
