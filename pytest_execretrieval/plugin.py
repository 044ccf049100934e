"""The pytest plugin: options, markers and the session's terminal defaults.

A benchmark or verification session plugin (:mod:`.session`) is registered only when
``--embedder`` or ``--execretrieval-verify`` asks for one, after every option is resolved and
checked (:func:`.settings.resolve`) and every explicit path is checked to lie in the items
directory, so a bad value is a usage error before any work. A plain pytest run pays nothing for
the plugin and sees none of its markers (a mistyped ``@pytest.mark.strings`` in a user project
still fails ``--strict-markers``)."""

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
    if not (
        getattr(known, "execretrieval_embedders", None)
        or getattr(known, dest("verify"), None)
        or early_config.getini(dest("verify"))
    ):
        return
    items = getattr(known, dest("items"), None) or early_config.getini(dest("items"))
    from .session import refuse_untrusted

    values = [items] if isinstance(items, str) else [str(v).strip() for v in items or ()]
    for value in [v for v in values if v] or [settings.BUNDLED]:  # each directory named
        where = (
            bundled_items_dir()
            if value == settings.BUNDLED
            else early_config.invocation_params.dir / value
        )
        if where.is_dir():  # a missing directory is the session's usage error
            _refuse_an_ini_file_inside(Path(where).resolve(), early_config.inipath)
            refuse_untrusted(Path(where).resolve(), early_config)


def _refuse_an_ini_file_inside(items_dir: Path, inipath: Path | None) -> None:
    """pytest takes the value of ``--execretrieval-items DIR`` (space form) for a path to test
    before any plugin installed by a package is loaded, searches DIR for its ini file and
    applies it (``pythonpath``, the ``-p`` plugins of ``addopts``) before this plugin exists:
    nothing here can prevent that, so say so plainly rather than only refuse the file."""
    if inipath is None or items_dir not in inipath.resolve().parents:
        return
    raise pytest.UsageError(
        f"pytest read its configuration from {inipath}, inside the items directory "
        f"{items_dir}, and applied it (its pythonpath, the plugins its addopts name) before "
        "this plugin was loaded, because --execretrieval-items was given in the space form, "
        "whose value pytest takes for a path to test. Code from that directory may have run. "
        f"Name the items directory as --execretrieval-items={items_dir} (the = form), and "
        "remove the file"
    )


# trylast: after pytest's terminal reporter exists (its defaults are set here, see
# _readable_terminal); registering the session plugin this late is fine, it has no configure.
@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if not (config.getoption("execretrieval_embedders") or settings.setting(config, "verify")):
        return
    try:
        resolved = settings.resolve(config)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    _check_paths(config, [where.resolve() for where in resolved.all_items_dirs()])
    if resolved.isolation == "strict":
        _require_every_layer()
    config.addinivalue_line("markers", "execretrieval: an ExecRetrieval benchmark item")
    for domain in DOMAINS:
        config.addinivalue_line("markers", f"{domain}: benchmark items of domain {domain}")
    if not resolved.verify:
        _readable_terminal(config)
    from .nodes import SESSION_PLUGIN
    from .session import BenchmarkSession, VerifySession

    mode = VerifySession if resolved.verify else BenchmarkSession
    config.pluginmanager.register(mode(config, resolved), SESSION_PLUGIN)


def _check_paths(config: pytest.Config, items_dirs: list[Path]) -> None:
    """Paths given on the command line must lie in an items directory: a session collects
    benchmark items only, and silently benchmarking the bundled set instead of ``tests/`` would
    answer a question nobody asked. (``testpaths`` and the invocation directory are defaults,
    not requests: they are replaced by the items directories.)"""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return
    here = config.invocation_params.dir
    outside = [
        a
        for a in config.args
        if not any((here / a.split("::")[0]).resolve().is_relative_to(d) for d in items_dirs)
    ]
    if outside:
        shown = ", ".join(map(str, items_dirs))
        where = f"the items directory {shown}" if len(items_dirs) == 1 else f"any of {shown}"
        raise pytest.UsageError(
            f"{', '.join(outside)}: not in {where}; a benchmark or "
            "verification session runs benchmark items only: name other items with "
            "--execretrieval-items=DIR (paths inside it, -k and -m select from it)"
        )


def _readable_terminal(config: pytest.Config) -> None:
    """A benchmark's log is one a person reads: unless ``-v`` or ``--tb`` asks for more, each
    failing query is one line of pytest's short test summary (``FAILED <id> - rank 1: ...``;
    the failures section, one block per query, is left out: ``--tb`` default ``auto`` becomes
    ``no``), and progress is pytest's letters without one line per item file (every query is a
    file of its own: 1,000 lines). The whole failure text stays in the report and the junit XML.
    """
    if config.get_verbosity() > 0:
        return
    if config.option.tbstyle == "auto":
        config.option.tbstyle = "no"
        config.pluginmanager.register(CollectionErrors(), "execretrieval-collection-errors")
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is not None:
        terminal.showfspath = False  # as pytest-xdist does for its workers


class CollectionErrors:
    """With ``--tb`` at ``no`` pytest leaves out its ERRORS section too; a malformed item file's
    message (every problem, one per line) is worth reading in full, so it is written here."""

    def pytest_terminal_summary(self, terminalreporter) -> None:
        errors = [r for r in terminalreporter.stats.get("error", []) if r.when == "collect"]
        if errors:
            terminalreporter.write_sep("=", "ERRORS")
        for report in errors:
            terminalreporter.write_sep("_", f"ERROR collecting {report.nodeid}", red=True)
            terminalreporter.write_line(str(report.longrepr))


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
