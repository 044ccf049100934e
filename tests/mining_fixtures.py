"""Fixture packages the mining tests write: a tiny one and a hostile one (never the network)."""

from __future__ import annotations

from pathlib import Path

LICENCE = "Copyright (c) 2024 Tiny Authors\n\nPermission is hereby granted, free of charge...\n"
# Whole licence texts, as real packages carry them (issue 53: a licence file names a licence
# only when it is that licence's text as a whole, copyright lines and a title aside).
MIT_TEXT = """MIT License

Copyright (c) 2016-2022 The Algorithms

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""
BSD3_TEXT = """Copyright (c) 2013 Matthew Rocklin

All rights reserved.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

  a. Redistributions of source code must retain the above copyright notice,
     this list of conditions and the following disclaimer.
  b. Redistributions in binary form must reproduce the above copyright
     notice, this list of conditions and the following disclaimer in the
     documentation and/or other materials provided with the distribution.
  c. Neither the name of toolz nor the names of its contributors
     may be used to endorse or promote products derived from this software
     without specific prior written permission.


THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE
ARE DISCLAIMED. IN NO EVENT SHALL THE REGENTS OR CONTRIBUTORS BE LIABLE FOR
ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER
CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT
LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY
OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH
DAMAGE.
"""
PYPROJECT = '[project]\nname = "tinypkg"\nversion = "0.1"\nlicense = "MIT"\n'
MARKER = "IMPORTED_MARKER"
# An __init__ that would leave a marker beside itself if anything imported the package.
INIT = f"""import pathlib
pathlib.Path(__file__).with_name({MARKER!r}).write_text("imported")
"""
CORE = '''import math
import requests
from collections import deque
from functools import wraps

LIMIT = 10


def _clamp(n):
    return max(0, min(n, LIMIT))


def clamp_sum(values):
    """Sum the values, each clamped into 0..LIMIT; see :func:`_clamp`.

    >>> clamp_sum([1, 20, -3])
    11
    >>> clamp_sum([])
    0
    """
    return sum(_clamp(v) for v in values)


def window(seq, n):
    """Yield ``n``-wide sliding windows over *seq*.

    >>> list(window([1, 2, 3], 2))
    [(1, 2), (2, 3)]
    """
    d = deque(maxlen=n)
    for x in seq:
        d.append(x)
        if len(d) == n:
            yield tuple(d)


def safe_sqrt(x):
    """Square root that refuses negatives.

    >>> safe_sqrt(9.0)
    3.0
    >>> big = 16.0
    >>> safe_sqrt(big)
    4.0
    >>> safe_sqrt(-1)
    Traceback (most recent call last):
    ...
    ValueError: negative
    """
    if x < 0:
        raise ValueError("negative")
    return math.sqrt(x)


def fetch(url):
    """Fetch a URL.

    >>> fetch("x")
    1
    """
    return requests.get(url)


def read_text(path):
    """Read a file.

    >>> read_text("x")
    ''
    """
    with open(path) as fh:
        return fh.read()


def logged(fn):
    @wraps(fn)
    def inner(*a):
        return fn(*a)

    return inner


@logged
def double(x):
    """Double.

    >>> double(2)
    4
    """
    return 2 * x


def undocumented(x):
    return x
'''
HOSTILE = (
    'def deep(n):\n    """Nested deeply.\n\n    >>> deep(1)\n    '
    + "[" * 300
    + "]" * 300
    + "\n    >>> deep(2)\n    "
    + "[1, " * 5000
    + "1"
    + "]" * 5000
    + '\n    """\n    return n\n\n\n'
    'def huge(n):\n    """Huge output.\n\n    >>> huge(1)\n    '
    + "1"
    * 50_000
    + '\n    >>> huge(2)\n    2\n    """\n    return n\n\n\n'
    'def noisy(n):\n    """Beep \\x1b[31m red \\x07 bell.\n\n    >>> noisy(1)\n    1\n    """\n'
    "    return n\n"
)


def write_package(root: Path, hostile: bool = False) -> Path:
    """``root`` as a source tree: pyproject, LICENSE, ``tinypkg/`` (and ``hostile.py``)."""
    package = root / "tinypkg"
    package.mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "LICENSE").write_text(LICENCE)
    (package / "__init__.py").write_text(INIT)
    (package / "core.py").write_text(CORE)
    if hostile:
        (package / "hostile.py").write_text(HOSTILE)
        (package / "deepmod.py").write_text("x = " + "[" * 150 + "]" * 150 + "\n")
    return root


# Docstrings that are no query (issue 55), each function with a doctest it passes, and one
# whose summary ends in an introducing colon (mined, its sentence completed).
QUALITY = '''def see_clamp(values):
    """See :func:`clamp_sum`.

    >>> see_clamp([1, 2])
    3
    """
    return sum(values)


def bump(x):
    """f(x) -> x + 1

    >>> bump(1)
    2
    """
    return x + 1


def identity(x):
    """Identity function. Return *x*.

    >>> identity(1)
    1
    """
    return x


def doubled(x):
    """Twice.

    >>> doubled(2)
    4
    """
    return 2 * x


def param_dump(text):
    """:param text (str): the text to shout
    :returns: str

    >>> param_dump("a")
    'A'
    """
    return text.upper()


def shout(text):
    """Upper-case the text and add an exclamation mark::

        >>> shout("hi")
        'HI!'

    Args:
        text: what to shout.
    """
    return text.upper() + "!"
'''


def write_quality_module(root: Path) -> Path:
    """``tinypkg/quality.py`` (:data:`QUALITY`) beside :func:`write_package`'s modules."""
    (root / "tinypkg" / "quality.py").write_text(QUALITY)
    return root
