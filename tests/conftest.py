"""Fixtures shared by the plugin tests."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.execution.sandbox import Limits

DATA = Path(__file__).parent / "data" / "items"


@pytest.fixture
def items(pytester) -> Path:
    """A copy of the small test-data items (with their built corpus) in the pytester directory."""
    target = pytester.path / "items"
    shutil.copytree(DATA, target)
    return target


@pytest.fixture
def outside():
    """A directory outside the scratch dir (and outside /tmp, the scratch tmpfs inside), with a
    file a confined snippet must not touch: for the Python and the Node runner's hostile tests."""
    path = Path(__file__).resolve().parent / f".hostile-{uuid.uuid4().hex}"
    path.mkdir()
    (path / "victim").write_text("keep")
    yield path
    shutil.rmtree(path)


@pytest.fixture(autouse=True, scope="session")
def _user_cache_in_tmp(tmp_path_factory):
    """The outcome cache keeps its key in the user's cache directory: tests point
    ``XDG_CACHE_HOME`` at a temporary directory (inherited by the pytest runs and commands they
    start), so no test writes to the real ``~/.cache``."""
    previous = os.environ.get("XDG_CACHE_HOME")
    # Outside /tmp: the sandbox's scratch directory covers /tmp, and the prepared contexts in
    # the user's cache must stay visible to its children (execution/contexts.py).
    home = Path(tempfile.mkdtemp(prefix="execretrieval-tests-", dir=Path.home()))
    os.environ["XDG_CACHE_HOME"] = str(home / "xdg-cache")
    yield
    shutil.rmtree(home, ignore_errors=True)
    if previous is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = previous


@pytest.fixture(scope="module", params=["full", "kernel-only"])
def box(request):
    """One Sandbox per module, with the audit guard (full) and without it (the kernel layers
    alone), for tests/test_sandbox_hostile.py and tests/test_sandbox_confinement.py."""
    from sandboxes import TIMEOUT

    from pytest_execretrieval.execution.sandbox import Limits, Sandbox

    with Sandbox(Limits(timeout_s=TIMEOUT), _guard=request.param == "full") as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    """A build's two runners, sharing one outcome cache per test module: the full limits, and
    the mutant runner's 1 s timeout."""
    cache = tmp_path_factory.mktemp("cache")
    with (
        SuiteRunner(cache_dir=cache) as runner,
        SuiteRunner(Limits(timeout_s=1.0), cache_dir=cache) as mutant_runner,
    ):
        yield runner, mutant_runner


@pytest.fixture(scope="module")
def cache_args(tmp_path_factory) -> list[str]:
    """``--cache-dir`` for the builds of one test module: one outcome cache they share."""
    return ["--cache-dir", str(tmp_path_factory.mktemp("cache"))]
