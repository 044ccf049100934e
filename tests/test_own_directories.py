"""The cache and report directories are the tool's own: no symbolic link inside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from plugin_runs import bench

from pytest_execretrieval.settings import check_own_directory


@pytest.fixture
def checkout(tmp_path) -> Path:
    root = tmp_path / "checkout"
    (root / "real").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    return root


@pytest.mark.parametrize(
    ("links", "target"),
    [
        ({"cache": "../elsewhere"}, "cache"),  # the directory itself
        ({"out": "../elsewhere"}, "out/reports"),  # a directory on the way to it
        ({"real/items": "../../elsewhere"}, "real"),  # a directory directly in it
    ],
)
def test_a_symlink_inside_the_checkout_is_refused(checkout, links, target):
    for link, to in links.items():
        (checkout / link).symlink_to(to)
    with pytest.raises(ValueError, match=r"--execretrieval-cache-dir: .* is a symbolic link"):
        check_own_directory("--execretrieval-cache-dir", checkout / target, checkout)


def test_a_dotdot_through_a_link_is_still_the_link(checkout, monkeypatch):
    (checkout / "link").symlink_to("../elsewhere")
    monkeypatch.chdir(checkout)
    with pytest.raises(ValueError, match="link is a symbolic link"):
        check_own_directory("--execretrieval-report-dir", Path("link/../real"), checkout)


def test_plain_directories_and_a_link_outside_the_checkout_are_allowed(checkout, tmp_path):
    check_own_directory("--execretrieval-cache-dir", checkout / "real" / "new", checkout)
    outside = tmp_path / "outside-link"
    outside.symlink_to("elsewhere")
    check_own_directory("--execretrieval-cache-dir", outside, checkout)


def test_a_committed_cache_symlink_is_a_usage_error_before_any_write(pytester, items, tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (pytester.path / "cache").symlink_to(target)  # bench's --execretrieval-cache-dir
    result = bench(pytester, items)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{pytester.path / 'cache'} is a symbolic link inside the checkout" in (
        result.stderr.str()
    )
    assert os.listdir(target) == []
