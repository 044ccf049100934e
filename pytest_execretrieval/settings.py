"""The ``--execretrieval-*`` options: each is also the ini key ``execretrieval_*``.

One table drives ``pytest_addoption`` and :func:`setting` (command line first, then ini, then the
default), so the CLI wrappers and the plugin cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .sandbox import ISOLATION_MODES, Limits


@dataclass(frozen=True)
class Option:
    name: str  # after "--execretrieval-"
    type: type
    default: object
    help: str


OPTIONS = (
    Option("verify", bool, False, "verification run: one item per snippet, plus the name gate"),
    Option("items", Path, None, "items directory (default: the bundled benchmark)"),
    Option("stack", int, 1, "benchmark/verify the stacked corpus with K edits per distractor"),
    Option("report-dir", Path, None, "write <embedder>.json/.xml per model and summary.md here"),
    Option("baseline", Path, None, "gate against this earlier report JSON"),
    Option("alpha", float, 0.05, "significance level of the gate (exact McNemar on exec@1)"),
    Option("min-exec1", float, None, "fail the session when exec@1 is below this"),
    Option("cache-dir", Path, Path(".execretrieval_cache"), "embedding and execution caches"),
    Option("seed", int, 0, "seed of the bootstrap resampling"),
    Option("batch-size", int, None, "encoding batch size (default: per embedder)"),
    Option("trust-remote-code", bool, False, "let st:PATH models run their own code"),
    Option(
        "code-similarity",
        bool,
        False,
        "also embed the alternatives for the code-to-code (False Proximity) analysis",
    ),
    Option("timeout", float, 5.0, "sandbox wall-clock limit per test suite, seconds"),
    Option("memory-mb", int, 2048, "sandbox address-space limit, MiB"),
    Option("file-size-mb", int, 64, "sandbox file-size limit, MiB"),
    Option("max-processes", int, 64, "sandbox process-count limit (RLIMIT_NPROC)"),
    Option("output-kb", int, 64, "captured snippet output kept, KiB"),
    Option(
        "isolation",
        str,
        "best",
        "sandbox layers: best (use what the kernel offers, warn once about the rest) or strict "
        "(refuse to run without all of them; see `execretrieval doctor`)",
    ),
)
BY_NAME = {o.name: o for o in OPTIONS}


def dest(name: str) -> str:
    return "execretrieval_" + name.replace("-", "_")


def add_options(parser) -> None:
    """Register every option and ini key on a pytest parser."""
    group = parser.getgroup("execretrieval", "execution-verified code retrieval benchmark")
    group.addoption(
        "--embedder", action="append", dest="execretrieval_embedders", default=None,
        metavar="NAME", help="benchmark this embedder (repeatable); see `execretrieval embedders`",
    )  # fmt: skip
    for o in OPTIONS:
        flag = f"--execretrieval-{o.name}"
        if o.type is bool:
            group.addoption(flag, action="store_true", dest=dest(o.name), default=None,
                            help=o.help)  # fmt: skip
            parser.addini(dest(o.name), o.help, type="bool", default=o.default)
        else:
            group.addoption(flag, dest=dest(o.name), default=None, metavar="VALUE",
                            help=f"{o.help} (default: {o.default})")  # fmt: skip
            parser.addini(dest(o.name), o.help, default=None)


def setting(config, name: str):
    """Command line, else ini, else default; converted to the option's type."""
    option = BY_NAME[name]
    value = config.getoption(dest(name))
    if value is None:
        value = config.getini(dest(name))
    if value is None or value == "":
        return option.default
    if option.type is bool:
        return bool(value)
    try:
        converted = option.type(value)
    except ValueError:
        raise ValueError(f"--execretrieval-{name}: {value!r} is not a valid "
                         f"{option.type.__name__}") from None  # fmt: skip
    if option.type is Path:
        ini_value = config.getoption(dest(name)) is None
        return (config.rootpath / converted) if ini_value else converted
    return converted


def isolation(config) -> str:
    """``--execretrieval-isolation``, checked: ``best`` or ``strict``."""
    value = setting(config, "isolation")
    if value not in ISOLATION_MODES:
        raise ValueError(f"--execretrieval-isolation: {value!r} is not one of {ISOLATION_MODES}")
    return value


def limits(config) -> Limits:
    mib = 1024 * 1024
    return Limits(
        timeout_s=setting(config, "timeout"),
        memory_bytes=setting(config, "memory-mb") * mib,
        file_size_bytes=setting(config, "file-size-mb") * mib,
        max_processes=setting(config, "max-processes"),
        output_bytes=setting(config, "output-kb") * 1024,
    )
