"""Running the plugin in a pytester subprocess, shared by the plugin tests."""

from __future__ import annotations

import json
from pathlib import Path

TIMING = ("elapsed_s", "created_at")  # report fields that differ between identical runs


def bench(pytester, items: Path, *args: str, embedders=("bm25",)):
    """``pytest --embedder NAME ... --execretrieval-items ITEMS`` in a subprocess, with a cache
    of its own and pytest-randomly off (item order is part of what the tests compare)."""
    flags = [f for name in embedders for f in ("--embedder", name)]
    return pytester.runpytest_subprocess(
        *flags,
        "--execretrieval-items",
        str(items),
        "--execretrieval-cache-dir",
        str(pytester.path / "cache"),
        "-p",
        "no:randomly",
        *args,
    )


def without_timing(path: Path) -> dict:
    """A report JSON without its timing fields."""
    data = json.loads(path.read_text())
    for key in TIMING:
        data.pop(key)
    return data
