"""The progress line of a long build (``execretrieval build``), like the encoder's.

On a terminal one line is rewritten in place; anywhere else (a CI log, a pipe) a line is printed
when a phase ends and, within a phase, whenever ``interval_s`` seconds have passed since the last
line, so a log shows a long build advancing and a short one stays short.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from ..corpus.build import BuildProgress

__all__ = ["ProgressLine", "progress_text"]


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def progress_text(p: BuildProgress) -> str:
    """``build running: 412/1000 items, 15210 suites executed, 38.2 items/s, ETA 15s``"""
    rate = p.done / p.elapsed_s if p.elapsed_s > 0 else 0.0
    eta = (
        f"ETA {_duration((p.total - p.done) / rate)}"
        if rate and p.done < p.total
        else f"{_duration(p.elapsed_s)}"
    )
    return (
        f"  build {p.phase}: {p.done}/{p.total} items, {p.executed} suites executed, "
        f"{rate:.1f} items/s, {eta}"
    )


class ProgressLine:
    """A callable for ``build(progress=...)`` that prints :func:`progress_text` to ``stream``."""

    def __init__(
        self, stream: TextIO | None = None, interval_s: float = 10.0, tty: bool | None = None
    ):
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self.tty = self.stream.isatty() if tty is None else tty
        self._last = time.monotonic()  # when a line was last printed (not on a terminal)
        self._width = 0

    def __call__(self, p: BuildProgress) -> None:
        text, end = progress_text(p), p.done == p.total
        if self.tty:
            pad = " " * max(0, self._width - len(text))
            self._width = 0 if end else len(text)
            print(f"\r{text}{pad}", end="\n" if end else "", file=self.stream, flush=True)
            return
        now = time.monotonic()
        if end or (p.done and now - self._last >= self.interval_s):
            self._last = now
            print(text, file=self.stream, flush=True)
