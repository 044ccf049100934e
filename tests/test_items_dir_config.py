"""An ini file in an items directory: pytest applies it before any installed plugin loads when
the directory is given in the space form, so that form is named as the cause; the = form never
lets pytest see the file."""

from __future__ import annotations

import pytest

INI = {
    "pytest.ini": "[pytest]\npythonpath = .\naddopts = -p evil\n",
    "tox.ini": "[pytest]\npythonpath = .\naddopts = -p evil\n",
    "setup.cfg": "[tool:pytest]\npythonpath = .\naddopts = -p evil\n",
}


def _plant(items, name, marker):
    (items / name).write_text(INI[name])
    (items / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")


@pytest.mark.parametrize("name", sorted(INI))
def test_the_space_form_with_an_ini_file_is_a_usage_error_naming_it(pytester, items, name):
    marker = pytester.path / "marker"
    _plant(items, name, marker)
    result = pytester.runpytest_subprocess(
        "--embedder", "bm25", "--execretrieval-items", str(items), "-p", "no:randomly"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"pytest read its configuration from {items / name}" in err
    assert f"--execretrieval-items={items.resolve()} (the = form)" in err


@pytest.mark.parametrize("name", sorted(INI))
def test_the_equals_form_never_runs_an_ini_file_s_plugin(pytester, items, name):
    marker = pytester.path / "marker"
    _plant(items, name, marker)
    result = pytester.runpytest_subprocess(
        "--embedder", "bm25", f"--execretrieval-items={items}", "-p", "no:randomly"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert str(items / name) in result.stderr.str() and not marker.exists()
