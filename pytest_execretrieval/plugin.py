"""The pytest plugin: options and markers. A benchmark or verification session plugin
(:mod:`.session`) is registered only when ``--embedder`` or ``--execretrieval-verify`` asks for
one, after every option is resolved and checked (:func:`.settings.resolve`), so a bad value is a
usage error before any work and a plain pytest run pays nothing for the plugin."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import settings
from .corpus.items import DOMAINS, bundled_items_dir


def pytest_addoption(parser: pytest.Parser) -> None:
    settings.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Refuse an untrusted items directory (:func:`.session.refuse_untrusted`) before pytest
    imports its first ``conftest.py``: those next to the paths given on the command line (or
    the current directory) come before ``pytest_configure``, and may be the items."""
    known = early_config.known_args_namespace
    dest = settings.dest
    if not (getattr(known, "execretrieval_embedders", None) or getattr(known, dest("verify"), None)
            or early_config.getini(dest("verify"))):  # fmt: skip
        return
    items = getattr(known, dest("items"), None) or early_config.getini(dest("items"))
    from .session import refuse_untrusted

    where = early_config.invocation_params.dir / items if items else bundled_items_dir()
    if where.is_dir():  # a missing directory is the session's usage error
        refuse_untrusted(Path(where).resolve(), early_config)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "execretrieval: an ExecRetrieval benchmark item")
    for domain in DOMAINS:
        config.addinivalue_line("markers", f"{domain}: benchmark items of domain {domain}")
    if not (config.getoption("execretrieval_embedders") or settings.setting(config, "verify")):
        return
    try:
        resolved = settings.resolve(config)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if resolved.isolation == "strict":
        _require_every_layer()
    from .nodes import SESSION_PLUGIN
    from .session import BenchmarkSession, VerifySession

    mode = VerifySession if resolved.verify else BenchmarkSession
    config.pluginmanager.register(mode(config, resolved), SESSION_PLUGIN)


def _require_every_layer() -> None:
    """``--execretrieval-isolation strict`` where a sandbox layer is missing: usage error."""
    from .execution.sandbox import isolation_in_force

    missing = isolation_in_force()["missing"]
    if missing:
        raise pytest.UsageError(
            "--execretrieval-isolation strict: missing sandbox layers: "
            + "; ".join(f"{k}: {v}" for k, v in missing.items())
            + " (see `execretrieval doctor`)"
        )
