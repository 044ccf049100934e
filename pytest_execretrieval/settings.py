"""The ``--execretrieval-*`` options: each is also the ini key ``execretrieval_*``.

One table drives ``pytest_addoption`` and :func:`setting` (command line first, then ini, then the
default), so the CLI wrappers and the plugin cannot drift apart. :func:`resolve` reads and checks
every option once, in ``pytest_configure``, into a frozen :class:`Settings`: a bad value is a usage
error before any work, and nothing later reads the config.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import DEFAULT_CACHE_DIR
from .corpus.store import CorpusVariant
from .corpus.variants import OPTION_DEFAULTS as CORPUS_OPTIONS
from .execution.sandbox import ISOLATION_MODES, Limits
from .ranking.rerank import REGISTRY as RERANKERS
from .signed_files import check_key_source

if TYPE_CHECKING:
    from .ranking.index import IndexSpec
    from .ranking.quantize import Quantization


@dataclass(frozen=True)
class Option:
    name: str  # after "--execretrieval-"
    type: type
    default: object
    help: str
    repeatable: bool = False  # the flag may be given several times; the ini key is a line list
    metavar: str = "VALUE"  # what ``pytest --help`` shows for the value (the README's spelling)


OPTIONS = (
    Option("verify", bool, False, "verification run: one item per snippet, plus the name gate"),
    Option(
        "items",
        Path,
        (),
        "items directory (default: the bundled benchmark); repeatable: the items of every "
        "directory named are ranked in one pool (bundled: the bundled benchmark)",
        repeatable=True,
        metavar="DIR",
    ),
    Option(
        "stack",
        int,
        CORPUS_OPTIONS["stack"],
        "benchmark/verify the stacked corpus: K edits per distractor (1-4)",
        metavar="K",
    ),
    Option(
        "source",
        str,
        CORPUS_OPTIONS["source"],
        "the corpus whose candidate mutants come from the operator table (operators) or "
        "mutmut's own operators (mutmut)",
        metavar="operators|mutmut",
    ),
    Option(
        "families",
        bool,
        CORPUS_OPTIONS["families"],
        "benchmark/verify the families corpus: distractors drawn across every operator class, "
        "the real-bug families too",
    ),
    Option(
        "balanced",
        bool,
        CORPUS_OPTIONS["balanced"],
        "benchmark/verify the balanced corpus: families whose shape does not name the "
        "canonical (most centred on a wrong member)",
    ),
    Option(
        "report-dir",
        Path,
        None,
        "write <embedder>.json/.xml per model and summary.md here",
        metavar="DIR",
    ),
    Option("baseline", Path, None, "gate against this earlier report JSON", metavar="FILE"),
    Option("alpha", float, 0.05, "significance level of the gate", metavar="P"),
    Option(
        "max-detectable",
        float,
        0.10,
        "the gate is UNDERPOWERED (exit 7) when the smallest drop it detects with 80% power "
        "exceeds X (0 < X <= 1; 1: never; non-inferiority: twice the margin)",
        metavar="X",
    ),
    Option(
        "gate-metric",
        str,
        (),
        "gate on metric M (repeatable; default exec@1, exec@5, ndcg@10)",
        repeatable=True,
        metavar="M",
    ),
    Option(
        "margin",
        str,
        (),
        "non-inferiority margin: DELTA for every gated metric, or M=DELTA (repeatable)",
        repeatable=True,
        metavar="DELTA|M=DELTA",
    ),
    Option(
        "min",
        str,
        (),
        "fail when metric M is below X: M=X (repeatable)",
        repeatable=True,
        metavar="M=X",
    ),
    Option(
        "min-exec1",
        float,
        None,
        "fail the session when exec@1 is below this (= --execretrieval-min exec@1=X)",
        metavar="X",
    ),
    Option(
        "rerank",
        str,
        (),
        "rerank every embedder's top k with NAME (repeatable): "
        + ", ".join(RERANKERS.shipped_names())
        + " or an entry point",
        repeatable=True,
        metavar="NAME",
    ),
    Option(
        "index",
        str,
        (),
        "also rank every embedder through an approximate index SPEC (repeatable): "
        "faiss:FACTORY[,PARAM=VALUE...], e.g. faiss:HNSW32,efSearch=64 or "
        "faiss:IVF1024,PQ48,nprobe=16; candidates are re-scored exactly; the pipeline is "
        "<embedder>@<SPEC>",
        repeatable=True,
        metavar="SPEC",
    ),
    Option(
        "quantize",
        str,
        (),
        "also rank every dense embedder's vectors as a vector database stores them "
        "(repeatable): int8 (scalar, calibrated on the pool), binary (Hamming), binary-rescore "
        "(Hamming candidates re-scored in float32); the pipeline is <embedder>~<PRECISION>",
        repeatable=True,
        metavar="PRECISION",
    ),
    Option(
        "dims",
        str,
        (),
        "also rank every dense embedder's vectors truncated to their first N dimensions, "
        "renormalised (Matryoshka; repeatable); the pipeline is <embedder>~dN",
        repeatable=True,
        metavar="N",
    ),
    Option(
        "backend",
        str,
        (),
        "also encode with every local sentence-transformers embedder served by a runtime "
        "backend (repeatable): onnx, openvino, onnx-int8; the pipeline is <embedder>+<BACKEND>",
        repeatable=True,
        metavar="BACKEND",
    ),
    Option(
        "rerank-k",
        int,
        10,
        "how many first-stage candidates the rerankers reorder (1-10)",
        metavar="K",
    ),
    Option("cache-dir", Path, DEFAULT_CACHE_DIR, "embedding and execution caches", metavar="DIR"),
    Option("seed", int, 0, "seed of the bootstrap resampling", metavar="N"),
    Option("batch-size", int, None, "encoding batch size (default: per embedder)", metavar="N"),
    Option(
        "max-tokens",
        int,
        None,
        "hosted embedders: refuse to start when the run would send more than N estimated "
        "tokens (after the cache)",
        metavar="N",
    ),
    Option("trust-remote-code", bool, False, "let st:PATH models run their own code"),
    Option(
        "allow-training-items",
        bool,
        False,
        "let a fine-tuned st:PATH model be scored on items of its own training split",
    ),
    Option(
        "identifiers",
        str,
        "original",
        "original, or neutral: embed every snippet with its entry point renamed to f and its "
        "local identifiers to v0, v1, ... (the identifier-free view)",
        metavar="original|neutral",
    ),
    Option(
        "code-similarity",
        bool,
        False,
        "also embed the alternatives for the code-to-code (False Proximity) analysis",
    ),
    Option(
        "timeout", float, 5.0, "sandbox wall-clock limit per test suite, seconds", metavar="SECONDS"
    ),
    Option("memory-mb", int, 2048, "sandbox address-space limit, MiB", metavar="MIB"),
    Option("file-size-mb", int, 64, "sandbox file-size limit, MiB", metavar="MIB"),
    Option("max-processes", int, 64, "sandbox process-count limit (RLIMIT_NPROC)", metavar="N"),
    Option("output-kb", int, 64, "captured snippet output kept, KiB", metavar="KIB"),
    Option(
        "isolation",
        str,
        "best",
        "sandbox layers: best (use what the kernel offers, warn once about the rest) or strict "
        "(refuse to run without all of them; see `execretrieval doctor`)",
        metavar="best|strict",
    ),
    Option(
        "background",
        str,
        (),
        "add every function mined from SOURCE (a directory, a wheel or sdist, an installed "
        "distribution's name; never imported) to each query's pool as a natural neighbour "
        "(repeatable); execution decides whether one ranked first passes",
        repeatable=True,
        metavar="SOURCE",
    ),
    Option(
        "tests",
        str,
        "all",
        "which tests decide: all, or authors (a mined item's doctests and test-file asserts, "
        "not its recorded tests)",
        metavar="all|authors",
    ),
)
BY_NAME = {o.name: o for o in OPTIONS}


def dest(name: str) -> str:
    return "execretrieval_" + name.replace("-", "_")


def add_options(parser) -> None:
    """Register every option and ini key on a pytest parser."""
    group = parser.getgroup("execretrieval", "execution-verified code retrieval benchmark")
    group.addoption(
        "--embedder",
        action="append",
        dest="execretrieval_embedders",
        default=None,
        metavar="NAME",
        help="benchmark this embedder (repeatable); see `execretrieval embedders`",
    )
    for o in OPTIONS:
        flag = f"--execretrieval-{o.name}"
        shown = o.help.replace("%", "%%")  # argparse %-formats a help text ("80% power")
        if o.repeatable:
            group.addoption(
                flag,
                action="append",
                dest=dest(o.name),
                default=None,
                metavar=o.metavar,
                help=shown,
            )
            parser.addini(dest(o.name), o.help, type="linelist", default=[])
        elif o.type is bool:
            group.addoption(flag, action="store_true", dest=dest(o.name), default=None, help=shown)
            parser.addini(dest(o.name), o.help, type="bool", default=o.default)
        else:
            group.addoption(
                flag, dest=dest(o.name), default=None, metavar=o.metavar, help=shown_default(o)
            )
            parser.addini(dest(o.name), o.help, default=None)


def shown_default(o: Option) -> str:
    """An option's help with its default, once: none added where the help already says its
    default (``default: the bundled benchmark``) or there is none to show (``None``)."""
    shown = o.help.replace("%", "%%")
    if o.default is None or "default" in o.help:
        return shown
    return f"{shown} (default: {o.default})"


def setting(config, name: str):
    """Command line, else ini, else default; converted to the option's type."""
    option = BY_NAME[name]
    value = config.getoption(dest(name))
    if value is None:
        value = config.getini(dest(name))
    if value is None or value == "" or value == []:
        return option.default
    if option.repeatable:
        return tuple(str(v).strip() for v in value if str(v).strip())
    if option.type is bool:
        return bool(value)
    try:
        converted = option.type(value)
    except ValueError:
        raise ValueError(
            f"--execretrieval-{name}: {value!r} is not a valid {option.type.__name__}"
        ) from None
    if option.type is Path:
        ini_value = config.getoption(dest(name)) is None
        return (config.rootpath / converted) if ini_value else converted
    return converted


@dataclass(frozen=True)
class GateSettings:
    """The gate's settings, checked once: the gated metrics, the non-inferiority margin of each
    metric that has one (the others are harm-tested), minimums, alpha."""

    metrics: tuple[str, ...]
    margin: Mapping[str, float] | None
    minimums: Mapping[str, float] = field(default_factory=dict)
    alpha: float = 0.05
    max_detectable: float = 0.10


GATE_OPTIONS = (
    "gate-metric",
    "margin",
    "alpha",
    "max-detectable",
)  # meaningless without a baseline


def _metric_value(text: str, flag: str, known: tuple[str, ...]) -> tuple[str, float]:
    metric, sep, number = text.partition("=")
    metric = metric.strip()
    if not sep or metric not in known:
        raise ValueError(f"{flag}: {text!r} is not METRIC=VALUE with METRIC in {', '.join(known)}")
    try:
        return metric, float(number)
    except ValueError:
        raise ValueError(f"{flag}: {number.strip()!r} in {text!r} is not a number") from None


def _gate_settings(config) -> GateSettings:
    """Resolve and check the gate options; a bad value raises ``ValueError`` naming the flag.

    The margin rule: the gated metrics are ``--execretrieval-gate-metric`` (default exec@1,
    exec@5, ndcg@10) plus every metric named in ``--execretrieval-margin M=DELTA``. A gated
    metric is tested for non-inferiority when it has a margin (its own ``M=DELTA``, else a plain
    ``DELTA`` given for all), and in harm mode otherwise: a margin for one metric never takes
    the other gated metrics out of the gate.
    """
    from .scoring.gate import DEFAULT_GATE_METRICS, GATE_METRICS

    explicit = setting(config, "gate-metric")
    bad = [m for m in explicit if m not in GATE_METRICS]
    if bad:
        raise ValueError(
            f"--execretrieval-gate-metric: unknown metric(s) {bad}; choose from "
            f"{', '.join(GATE_METRICS)}"
        )
    alpha = setting(config, "alpha")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"--execretrieval-alpha: {alpha} is not in (0, 0.5)")
    common: float | None = None
    margin: dict[str, float] = {}
    for text in setting(config, "margin"):
        if "=" in text:
            metric, delta = _metric_value(text, "--execretrieval-margin", GATE_METRICS)
            margin[metric] = delta
        else:
            try:
                delta = common = float(text)
            except ValueError:
                raise ValueError(
                    f"--execretrieval-margin: {text!r} is neither a number nor METRIC=DELTA"
                ) from None
        if delta < 0:
            raise ValueError(f"--execretrieval-margin: {text!r}: a margin is >= 0")
    metrics = tuple(dict.fromkeys((*(explicit or DEFAULT_GATE_METRICS), *margin)))
    if common is not None:
        margin = {m: margin.get(m, common) for m in metrics}
    minimums = dict(
        _metric_value(t, "--execretrieval-min", GATE_METRICS) for t in setting(config, "min")
    )
    if setting(config, "min-exec1") is not None:
        minimums.setdefault("exec@1", setting(config, "min-exec1"))
    max_detectable = setting(config, "max-detectable")
    if not 0.0 < max_detectable <= 1.0:
        raise ValueError(f"--execretrieval-max-detectable: {max_detectable} is not in (0, 1]")
    return GateSettings(metrics, margin or None, minimums, alpha, max_detectable)


def explicitly_set(config, name: str) -> bool:
    """Whether option ``name`` was set on the command line or as an ini key."""
    value = config.getoption(dest(name))
    if value is None:
        value = config.getini(dest(name))
    return value not in (None, "", [], ())


def _gate_options_need_a_baseline(config) -> None:
    """Gate options without a baseline would be ignored: a usage error instead (minimums gate
    on their own and stay allowed)."""
    stray = [f"--execretrieval-{name}" for name in GATE_OPTIONS if explicitly_set(config, name)]
    if stray:
        raise ValueError(
            f"{', '.join(stray)} without --execretrieval-baseline: these options "
            "set how the gate compares with a baseline report; add "
            "--execretrieval-baseline=FILE (or drop them)"
        )


@dataclass(frozen=True)
class Settings:
    """Every option of a benchmark or verification session, resolved and checked once."""

    embedders: tuple[str, ...]
    verify: bool
    items_dir: Path | None  # None: the bundled benchmark; the first of several
    corpus: CorpusVariant  # which corpus of the items directory
    report_dir: Path | None
    baseline: Path | None
    gate: GateSettings
    rerank: tuple[str, ...]
    rerank_k: int
    cache_dir: Path
    seed: int
    batch_size: int | None
    max_tokens: int | None
    trust_remote_code: bool
    code_similarity: bool
    allow_training_items: bool
    identifiers: str
    limits: Limits
    isolation: str
    background: tuple[str, ...] = ()  # --execretrieval-background sources
    tests: str = "all"  # --execretrieval-tests
    index: tuple[IndexSpec, ...] = ()  # --execretrieval-index, checked
    # --execretrieval-quantize, then --execretrieval-dims, checked, in the order given
    quantize: tuple[Quantization, ...] = ()
    backend: tuple[str, ...] = ()  # --execretrieval-backend, checked
    # every --execretrieval-items directory when several are named (the bundled benchmark by
    # its path), in order; () for one: items_dir
    items_dirs: tuple[Path, ...] = ()

    def all_items_dirs(self) -> tuple[Path, ...]:
        """Every items directory of the session, in order (the bundled benchmark by default)."""
        from .corpus.items import bundled_items_dir

        return self.items_dirs or (self.items_dir or bundled_items_dir(),)


def resolve(config) -> Settings:
    """All options, converted and checked; the first bad one raises ``ValueError`` naming its
    flag (the plugin turns it into a usage error)."""
    check_key_source()  # EXECRETRIEVAL_CACHE_KEY_FILE, before any cached entry is read
    embedders = tuple(config.getoption("execretrieval_embedders") or ())
    verify = setting(config, "verify")
    if embedders and verify:
        raise ValueError("use either --embedder or --execretrieval-verify, not both")
    _unique(embedders, "an embedder")
    rerank = setting(config, "rerank")
    _unique(rerank, "a reranker")
    rerank_k = setting(config, "rerank-k")
    from .ranking.benchmark import TOP_K
    from .ranking.neutral import IDENTIFIER_VIEWS

    if not 1 <= rerank_k <= TOP_K:
        raise ValueError(
            f"--execretrieval-rerank-k: {rerank_k} is not in 1..{TOP_K} (the first "
            f"stage lists its top {TOP_K})"
        )
    corpus = CorpusVariant.checked(
        setting(config, "stack"),
        setting(config, "source"),
        setting(config, "families"),
        "--execretrieval-{}".format,
        setting(config, "balanced"),
    )
    isolation = setting(config, "isolation")
    if isolation not in ISOLATION_MODES:
        raise ValueError(
            f"--execretrieval-isolation: {isolation!r} is not one of {ISOLATION_MODES}"
        )
    gate = _gate_settings(config)
    if embedders and setting(config, "baseline") is None:
        _gate_options_need_a_baseline(config)
    identifiers = setting(config, "identifiers")
    if identifiers not in IDENTIFIER_VIEWS:
        raise ValueError(
            f"--execretrieval-identifiers: {identifiers!r} is not one of {IDENTIFIER_VIEWS}"
        )
    items = items_dirs(config)
    if verify and len(items) > 1:
        raise ValueError(
            "--execretrieval-verify checks one items directory (its own corpus) at a time: "
            f"verify {', '.join(map(str, items))} one by one"
        )
    if embedders and identifiers == "neutral":
        for items_dir in items or (None,):
            _warn_unneutralised(config, items_dir, corpus)
    batch_size, max_tokens = setting(config, "batch-size"), setting(config, "max-tokens")
    for flag, value in (("batch-size", batch_size), ("max-tokens", max_tokens)):
        if value is not None and value < 1:
            raise ValueError(f"--execretrieval-{flag}: {value} is not a positive number")
    from .corpus.authors import TESTS

    tests = setting(config, "tests")
    if tests not in TESTS:
        raise ValueError(f"--execretrieval-tests: {tests!r} is not one of {TESTS}")
    index = _index_specs(setting(config, "index")) if embedders else ()
    quantize = _quantizations(setting(config, "quantize"), setting(config, "dims"))
    backend = _backends(setting(config, "backend"))
    for flag in ("report-dir", "cache-dir"):
        check_own_directory(f"--execretrieval-{flag}", setting(config, flag), config.rootpath)
    return Settings(
        embedders=embedders,
        verify=verify,
        items_dir=items[0] if items else None,
        corpus=corpus,
        report_dir=setting(config, "report-dir"),
        baseline=setting(config, "baseline"),
        gate=gate,
        rerank=() if verify else rerank,
        rerank_k=rerank_k,
        cache_dir=setting(config, "cache-dir"),
        seed=setting(config, "seed"),
        batch_size=batch_size,
        max_tokens=max_tokens,
        trust_remote_code=setting(config, "trust-remote-code"),
        code_similarity=setting(config, "code-similarity"),
        allow_training_items=setting(config, "allow-training-items"),
        identifiers=identifiers,
        limits=_limits(config),
        isolation=isolation,
        background=setting(config, "background"),
        tests=tests,
        index=index,
        quantize=quantize if embedders else (),
        backend=backend if embedders else (),
        items_dirs=items if len(items) > 1 else (),
    )


BUNDLED = "bundled"  # an --execretrieval-items value: the bundled benchmark


def items_dirs(config) -> tuple[Path, ...]:
    """Every ``--execretrieval-items`` directory, in order (an ini value relative to the
    rootdir, as every ini path; ``bundled``: the bundled benchmark's path); () when none is
    named. The same directory twice, or one inside another, is a ``ValueError``."""
    from .corpus.items import bundled_items_dir

    values = setting(config, "items")
    ini_value = config.getoption(dest("items")) is None
    found = tuple(
        bundled_items_dir()
        if value == BUNDLED
        else (config.rootpath / value if ini_value else Path(value))
        for value in values
    )
    if len(found) < 2:
        return found
    resolved = [Path(os.path.abspath(where)).resolve() for where in found]
    for i, a in enumerate(resolved):
        for j, b in enumerate(resolved):
            if i != j and (a == b or a in b.parents):
                how = "is named twice" if a == b else f"holds {found[j]}"
                raise ValueError(
                    f"--execretrieval-items: {found[i]} {how}: name each items directory once, "
                    "none inside another"
                )
    return found


def unneutralised_pools(items_dir: Path, corpus: CorpusVariant) -> list[str]:
    """The pools of ``items_dir`` whose code the identifier-free view leaves as written: it
    renames Python code only, so another language's pool (``javascript/``, ``go/``, or a
    directory's own pool whose corpus was built with such items) is embedded with its own
    identifiers."""
    from .bounded_json import JSONBoundError, read_json
    from .corpus.pools import language_pools

    found = []
    for pool in language_pools(items_dir, corpus):
        if pool.name:
            found.append(f"the {pool.name} pool ({pool.items_dir})")
            continue
        try:  # the corpus's engine names every language but Python's
            engine = read_json(pool.items_dir / "manifest.json").get("engine", {})
        except (JSONBoundError, OSError, AttributeError):
            continue  # no corpus yet: the session says so
        languages = engine.get("languages") if isinstance(engine, dict) else None
        if isinstance(languages, dict) and languages:
            found.append(f"the {'/'.join(sorted(map(str, languages)))} items of {pool.items_dir}")
    return found


def _warn_unneutralised(config, items_dir: Path | None, corpus: CorpusVariant) -> None:
    """``--execretrieval-identifiers neutral`` says which pools it does not neutralise (a
    pytest configuration warning, once: not from xdist's workers)."""
    import pytest

    from .corpus.items import bundled_items_dir

    if hasattr(config, "workerinput"):
        return
    pools = unneutralised_pools(Path(items_dir or bundled_items_dir()), corpus)
    if pools:
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(
                "--execretrieval-identifiers neutral: identifiers of code in another "
                f"language than Python are not neutralised: {'; '.join(pools)}: embedded as "
                "written (the identifier-free view renames Python code only)"
            ),
            stacklevel=2,
        )


def _index_specs(texts: tuple[str, ...]) -> tuple[IndexSpec, ...]:
    """Every ``--execretrieval-index`` spec checked by faiss itself (a missing faiss, a bad
    factory part or search parameter is named here, before any work)."""
    from .ranking.index import IndexSpecError, check_spec

    _unique(texts, "an index")
    try:
        return tuple(check_spec(text) for text in texts)
    except IndexSpecError as exc:
        raise ValueError(f"--execretrieval-index: {exc}") from None


def _quantizations(precisions: tuple[str, ...], dims: tuple[str, ...]) -> tuple[Quantization, ...]:
    """Every ``--execretrieval-quantize`` precision and ``--execretrieval-dims`` count as a
    quantisation, precisions first; a bad or repeated one is named."""
    from .ranking.quantize import Quantization, QuantizeError

    _unique(precisions, "a precision")
    _unique(dims, "a dimension count")
    out = []
    try:
        out += [Quantization(precision=p) for p in precisions]
    except QuantizeError as exc:
        raise ValueError(f"--execretrieval-quantize: {exc}") from None
    for text in dims:
        try:
            out.append(Quantization(dims=int(text)))
        except ValueError as exc:  # QuantizeError is one
            why = exc if isinstance(exc, QuantizeError) else "not a number"
            raise ValueError(f"--execretrieval-dims: {text!r}: {why}") from None
    return tuple(out)


def _backends(names: tuple[str, ...]) -> tuple[str, ...]:
    """Every ``--execretrieval-backend``, one of :data:`.embedders.backends.BACKENDS`."""
    _unique(names, "a backend")
    if not names:
        return ()
    from .embedders.backends import BACKENDS

    for name in names:
        if name not in BACKENDS:
            raise ValueError(
                f"--execretrieval-backend: {name!r} is not one of {', '.join(BACKENDS)}"
            )
    return names


def check_own_directory(flag: str, path: Path | None, root: Path) -> None:
    """An output directory inside the checkout ``root`` (pytest's rootdir) must be the tool's
    own: ``ValueError`` when it, a directory on the way to it from ``root``, or a directory
    directly in it is a symbolic link (a committed link would send every write wherever it
    points). A directory outside the checkout was named by the user and is taken as given."""
    if path is None:
        return
    root = Path(os.path.abspath(root))
    where = Path(os.getcwd()) / path  # not normalised: ``link/..`` still passes ``link``
    if not Path(os.path.abspath(where)).is_relative_to(root):
        return
    for link in (*_steps(root, where), *_entries(where)):
        if link.is_symlink():
            raise ValueError(
                f"{flag}: {link} is a symbolic link inside the checkout {root}: the tool "
                "writes only into directories of its own there; remove the link, or name a "
                "directory outside the checkout"
            )


def _steps(root: Path, where: Path) -> list[Path]:
    """Every path from ``root`` (exclusive) down to ``where`` (inclusive), ``..`` kept."""
    parts = where.parts[len(root.parts) :] if where.is_relative_to(root) else where.parts
    base = root if where.is_relative_to(root) else Path(where.anchor)
    steps = []
    for part in parts:
        base = base / part
        steps.append(base)
    return steps


def _entries(where: Path) -> list[Path]:
    """The entries directly in ``where`` (the caches' and reports' own folders)."""
    try:
        return [Path(entry.path) for entry in os.scandir(where)]
    except OSError:  # not there yet (made fresh), or not a directory: check_outputs says so
        return []


def _unique(names: tuple[str, ...], what: str) -> None:
    if len(set(names)) != len(names):
        raise ValueError(f"{what} is named twice: {list(names)}")


def _limits(config) -> Limits:
    mib = 1024 * 1024
    try:
        return Limits(
            timeout_s=setting(config, "timeout"),
            memory_bytes=setting(config, "memory-mb") * mib,
            file_size_bytes=setting(config, "file-size-mb") * mib,
            max_processes=setting(config, "max-processes"),
            output_bytes=setting(config, "output-kb") * 1024,
        )
    except ValueError as exc:  # Limits names its field; say which flag sets it
        raise ValueError(
            f"sandbox limits (--execretrieval-timeout, -memory-mb, -file-size-mb, "
            f"-max-processes, -output-kb): {exc}"
        ) from None
