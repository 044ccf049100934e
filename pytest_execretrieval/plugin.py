"""The pytest plugin: options and markers; a benchmark or verification session is registered only
when ``--embedder`` or ``--execretrieval-verify`` asks for one (see :mod:`.session`), so a plain
pytest run pays nothing for having the plugin installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import settings
from .items import DOMAINS

SESSION_PLUGIN = "execretrieval-session"


def bundled_items_dir() -> Path:
    """The repository's items/ in a checkout, the copy shipped in the wheel otherwise."""
    here = Path(__file__).resolve().parent
    checkout = here.parent / "items"
    return checkout if checkout.is_dir() else here / "bundled_items"


def pytest_addoption(parser: pytest.Parser) -> None:
    settings.add_options(parser)


def _check_isolation(config: pytest.Config) -> None:
    """A bad ``--execretrieval-isolation``, or ``strict`` where a layer is missing: usage error."""
    try:
        mode = settings.isolation(config)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if mode == "strict":
        from .sandbox import isolation_in_force

        missing = isolation_in_force()["missing"]
        if missing:
            raise pytest.UsageError(
                "--execretrieval-isolation strict: missing sandbox layers: "
                + "; ".join(f"{k}: {v}" for k, v in missing.items())
                + " (see `execretrieval doctor`)"
            )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "execretrieval: an ExecRetrieval benchmark item")
    for domain in DOMAINS:
        config.addinivalue_line("markers", f"{domain}: benchmark items of domain {domain}")
    embedders = config.getoption("execretrieval_embedders") or []
    verify = settings.setting(config, "verify")
    if not embedders and not verify:
        return
    if embedders and verify:
        raise pytest.UsageError("use either --embedder or --execretrieval-verify, not both")
    if len(set(embedders)) != len(embedders):
        raise pytest.UsageError(f"an embedder is named twice: {embedders}")
    _check_isolation(config)
    from .session import ExecRetrievalSession

    config.pluginmanager.register(ExecRetrievalSession(config, embedders, verify), SESSION_PLUGIN)
