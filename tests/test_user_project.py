"""The plugin in a user project that only installs it: a plain pytest run sees nothing of it."""

from __future__ import annotations

USER_TEST = """
import pytest

@pytest.mark.strings  # a typo of the project's own marker `string`
def test_x():
    pass
"""


def test_markers_are_not_registered_in_a_plain_session(pytester):
    pytester.makepyfile(test_user=USER_TEST)
    result = pytester.runpytest_subprocess("--strict-markers")
    assert result.ret == 2  # a collection error, as without the plugin
    result.stdout.fnmatch_lines(["*'strings' not found in `markers` configuration option*"])
    markers = pytester.runpytest_subprocess("--markers").stdout.str()
    assert "execretrieval:" not in markers and "strings:" not in markers


def test_markers_are_registered_in_a_benchmark_session(pytester, items):
    result = pytester.runpytest_subprocess(
        "--embedder",
        "bm25",
        "--execretrieval-items",
        str(items),
        "--strict-markers",
        "--execretrieval-cache-dir",
        str(pytester.path / "cache"),
        "-m",
        "strings",
    )
    assert result.ret in (0, 1), result.stdout.str() + result.stderr.str()
    assert "1 failed" in result.stdout.str() or "1 passed" in result.stdout.str()
