"""What the corpus-build tests share: a committed corpus's files, read for byte comparison."""

from __future__ import annotations

from pathlib import Path


def corpus_files(where: Path) -> dict[str, bytes]:
    """The corpus files of an items directory (``*.json*``), by name, as bytes."""
    return {p.name: p.read_bytes() for p in sorted(where.glob("*.json*"))}
