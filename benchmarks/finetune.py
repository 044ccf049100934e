"""Does fine-tuning on the corpus's own near misses teach a model to prefer correct code on
domains it never saw? Base vs fine-tuned MiniLM over a domain k-fold, pooled over the folds.

Per fold (``split.domain_folds``: the fold's domains held out, the others trained on): fine-tune
the base model (``training.train``), then rank each held-out query against the held-out pool
(the held-out domains' canonicals and distractors: nothing the fine-tuned model saw) with the base
and the fine-tuned model, in the original and the identifier-free view (``ranking.neutral``),
with ``exec-consensus`` on top, and the topical control (the same queries against the held-out
canonicals only, no mutants); with ``--stack K`` also on the stacked-mutation corpus of the same
held-out items (``execretrieval build --stack K`` first). Each fold's runs go to
``OUT/fold-I.json`` as they finish; the pooled reports (one per model and view, ``execretrieval
compare`` reads them) and the table (``OUT/summary.md``) are written from whatever folds are
complete (``--summarize`` redoes just that).

    nice -n 19 python benchmarks/finetune.py --out benchmarks/results/finetune

Time per fold (training wall and CPU seconds, evaluation seconds) is in each fold file and the
table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import cast

from pytest_execretrieval.corpus.build import engine
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.corpus.store import (
    Corpus,
    CorpusVariant,
    corpus_dir,
    corpus_sha256,
    read_corpus,
)
from pytest_execretrieval.embedders import EmbedderOptions, get_embedder
from pytest_execretrieval.embedders.cache import stderr_progress
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.execution.sandbox import isolation_in_force
from pytest_execretrieval.model_card import CARD
from pytest_execretrieval.ranking.benchmark import BenchmarkRun, run_benchmark
from pytest_execretrieval.ranking.neutral import neutral_view
from pytest_execretrieval.ranking.rerank import RerankerContext, get_reranker
from pytest_execretrieval.ranking.rerank.pipeline import rerank_run
from pytest_execretrieval.records import Invocation
from pytest_execretrieval.reporting.gate_text import gate_json
from pytest_execretrieval.reporting.report import build_report, write_json
from pytest_execretrieval.scoring.compare import paired_comparison
from pytest_execretrieval.scoring.gate import gate_decision
from pytest_execretrieval.scoring.lift import lift
from pytest_execretrieval.scoring.stats import mcnemar_exact
from pytest_execretrieval.training.split import domain_folds
from pytest_execretrieval.training.train import TrainConfig, train_split

RERANK = "exec-consensus"
SHOWN = ("exec@1", "exec@3", "exec@5", "exec@10", "ndcg@10", "mrr")


def evaluate_fold(args, items, corpus, sha, fold, number: int, runner) -> None:
    path = args.out / f"fold-{number}.json"
    state = json.loads(path.read_text()) if path.exists() else {"split": fold.to_json(), "runs": {}}
    held_ids = set(fold.held_out[: args.limit or None])
    held = [i for i in items if i.id in held_ids]
    model_dir = args.out / f"model-{fold.name}"
    config = TrainConfig(
        loss=args.loss,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        seed=args.seed,
        max_steps=args.max_steps,
        negatives=args.negatives,
        alternatives=args.alternatives,
    )
    if not (model_dir / CARD).exists():
        split = fold if not args.limit else replace(fold, train=fold.train[: args.limit])
        resume = (model_dir / "checkpoints").is_dir()
        print(f"fold {number}: training on {len(split.train)} items", file=sys.stderr)
        train_split(
            args.items,
            args.embedder,
            model_dir,
            split,
            config,
            cache_dir=args.cache_dir,
            resume=resume,
        )
    card = json.loads((model_dir / CARD).read_text())
    state["training"] = {
        "card": str(model_dir / CARD),
        "time": card["training_time"],
        "steps": card["steps"],
        "loss_curve": card["loss_curve"],
        "hyper_parameters": card["hyper_parameters"],
    }
    pool = Corpus(
        tuple(s for s in corpus.snippets if s.query_id in held_ids),
        tuple(a for a in corpus.alternatives if a.query_id in held_ids),
        corpus.engine,
    )
    canonicals = Corpus(tuple(s for s in pool.snippets if s.kind == "canonical"), (), pool.engine)
    entry_points = {i.id: i.entry_point for i in held}
    options = EmbedderOptions(cache_dir=str(args.cache_dir))
    models = {"ft": f"st:{model_dir}", "base": args.embedder}
    stages = [(m, v) for v in ("original", "neutral") for m in ("ft", "base")]
    for model, view in stages:
        label = model if view == "original" else f"{model}-neutral"
        if label in state["runs"] or (view == "neutral" and args.no_neutral):
            continue
        started, cpu = time.perf_counter(), time.process_time()
        embedder = get_embedder(models[model], options)
        if view == "neutral":
            embedder = neutral_view(embedder, [*pool.snippets, *pool.alternatives], entry_points)
        try:
            main = run_benchmark(
                held,
                pool,
                sha,
                embedder,
                runner,
                args.cache_dir,
                stderr_progress,
                with_code_similarity=True,
            )
            topical = run_benchmark(held, canonicals, sha, embedder, runner, args.cache_dir)
        finally:
            embedder.close()
        state["runs"][label] = main.to_json()
        state["runs"][f"{label}-topical"] = topical.to_json()
        state.setdefault("eval_time", {})[label] = {
            "wall_s": round(time.perf_counter() - started, 1),
            "cpu_s": round(time.process_time() - cpu, 1),
        }
        write_json(path, state)
        print(f"fold {number}: {label} done", file=sys.stderr)
    if not args.no_rerank:
        snippets = {s.snippet_id: s for s in pool.snippets}
        for model in ("ft", "base"):
            label = f"{model}+{RERANK}"
            if label in state["runs"]:
                continue
            started = time.perf_counter()
            runs = {model: BenchmarkRun.from_json(state["runs"][model])}
            reranker = get_reranker(RERANK, RerankerContext(runner, args.cache_dir, (model,), runs))
            try:
                done = rerank_run(runs[model], model, reranker, 10, held, snippets, runner, RERANK)
            finally:
                reranker.close()
            state["runs"][label] = done.run.to_json()
            state.setdefault("eval_time", {})[label] = {
                "wall_s": round(time.perf_counter() - started, 1)
            }
            write_json(path, state)
            print(f"fold {number}: {label} done", file=sys.stderr)
    if args.stack:
        evaluate_stack(args, state, path, held, models, options, runner, number)
    state["complete"] = True
    write_json(path, state)


def evaluate_stack(args, state, path, held, models, options, runner, number: int) -> None:
    """Base and fine-tuned on the stacked-mutation corpus (``stack-K/``, K edits per distractor)
    of the same held-out items: labels ``base-stackK``, ``ft-stackK``."""
    variant = CorpusVariant(stack=args.stack)
    where = corpus_dir(args.items, variant)
    corpus = read_corpus(args.items, engine(variant), where)
    held_ids = {i.id for i in held}
    pool = Corpus(tuple(s for s in corpus.snippets if s.query_id in held_ids), (), corpus.engine)
    for model in ("ft", "base"):
        label = f"{model}-stack{args.stack}"
        if label in state["runs"]:
            continue
        started = time.perf_counter()
        embedder = get_embedder(models[model], options)
        try:
            run = run_benchmark(held, pool, corpus_sha256(where), embedder, runner, args.cache_dir)
        finally:
            embedder.close()
        state["runs"][label] = run.to_json()
        state.setdefault("eval_time", {})[label] = {
            "wall_s": round(time.perf_counter() - started, 1)
        }
        write_json(path, state)
        print(f"fold {number}: {label} done", file=sys.stderr)


def pooled(folds: list[dict], label: str, name: str, seed: int) -> dict | None:
    """One report over the held-out queries of every fold that has ``label``."""
    runs = [BenchmarkRun.from_json(f["runs"][label]) for f in folds if label in f["runs"]]
    if len(runs) != len(folds):
        return None
    results = {q: r for run in runs for q, r in run.results.items()}
    invocation: dict[str, object] = {
        **runs[0].embedder,
        "name": name,
        "pooled_folds": [f["split"]["name"] for f in folds],
        "pool": "held-out domains' snippets per fold",
    }
    invocation.pop("weights_sha256", None)
    run = BenchmarkRun(
        cast(Invocation, invocation),  # the pooled run's own keys beside the embedder's
        runs[0].corpus_sha256,
        sum(r.n_snippets for r in runs),
        results,
        sum(r.encode_s for r in runs),
    )
    created_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    ids = sorted(results)
    return build_report(
        name, run, ids, 0.0, seed, isolation=isolation_in_force(), created_at=created_at
    )


def ci(report: dict, metric: str) -> str:
    lo, hi = report["ci95"][metric]
    return f"{report['metrics'][metric]:.3f} [{lo:.3f}, {hi:.3f}]"


def summarize(args) -> str:
    folds = [json.loads(p.read_text()) for p in sorted(args.out.glob("fold-*.json"))]
    folds = [f for f in folds if f.get("runs", {}).get("base")]  # finished folds, or partly
    if not folds:
        return "no evaluated fold yet\n"
    names = {"base": "minilm", "ft": "minilm-ft"}
    labels = list(dict.fromkeys(lab for f in folds for lab in f["runs"]))
    reports = {}
    for label in labels:
        first, plus, rerank = label.partition("+")
        model, _, view = first.partition("-")
        name = names[model] + (f"-{view}" if view else "") + (f"+{rerank}" if plus else "")
        report = pooled(folds, label, name, args.seed)
        if report is not None:
            reports[label] = report
            write_json(args.out / "reports" / f"{name}.json", report)
    partial = [f["split"]["name"] for f in folds if not f.get("complete")]
    lines = [
        f"Pooled over {len(folds)} fold(s)"
        + (f" ({', '.join(partial)} partly evaluated)" if partial else "")
        + ": "
        + ", ".join(
            f"{f['split']['name']} (held out: {', '.join(f['split']['held_out_domains'])})"
            for f in folds
        ),
        f"{reports['base']['corpus']['n_queries']} held-out queries.",
        "",
    ]
    lines += ["| model | view | " + " | ".join(SHOWN) + " |", "|---|---|" + "---|" * len(SHOWN)]
    stacked = [lab for lab in reports if "-stack" in lab]
    for label in (
        "base",
        "ft",
        f"base+{RERANK}",
        f"ft+{RERANK}",
        "base-neutral",
        "ft-neutral",
        *stacked,
    ):
        if label in reports:
            r = reports[label]
            view = (
                "identifier-free"
                if "neutral" in label
                else f"stack-{label.partition('-stack')[2]}"
                if "-stack" in label
                else "original"
            )
            lines.append(
                f"| {r['embedder']['name']} | {view} | "
                + " | ".join(ci(r, m) for m in SHOWN)
                + " |"
            )
    lines += [
        "",
        "Topical control (held-out queries against the held-out canonicals only):",
        "",
        "| model | view | ndcg@10 | mrr | code-to-code AUC |",
        "|---|---|---|---|---|",
    ]
    for label in ("base", "ft", "base-neutral", "ft-neutral"):
        if f"{label}-topical" in reports:
            r, main = reports[f"{label}-topical"], reports[label]
            c2c = (main["analyses"].get("code_to_code") or {}).get("auc")
            view = "identifier-free" if "neutral" in label else "original"
            lines.append(
                f"| {names[label.split('-')[0]]} | {view} | {ci(r, 'ndcg@10')} | "
                f"{ci(r, 'mrr')} | {c2c if c2c is not None else 'n/a'} |"
            )
    lines += ["", "Paired differences (fine-tuned minus base, paired bootstrap 95% CI, p):", ""]
    for a, b in (
        ("base", "ft"),
        ("base-topical", "ft-topical"),
        ("base-neutral", "ft-neutral"),
        (f"base+{RERANK}", f"ft+{RERANK}"),
        ("base", f"ft+{RERANK}"),
        *((lab, "ft" + lab[4:]) for lab in stacked if lab.startswith("base-")),
    ):
        if a in reports and b in reports:
            cmp = paired_comparison(reports[a], reports[b], seed=args.seed)
            cells = [
                f"{m} {d['difference']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] "
                f"p={d['p_value']:.3g}"
                for m, d in cmp["metrics"].items()
                if m in ("exec@1", "exec@5", "ndcg@10", "mrr")
            ]
            lines.append(f"- {b} vs {a}: " + "; ".join(cells))
    if "base" in reports and "ft" in reports:
        qa = {q["query_id"]: q["passed"] for q in reports["base"]["per_query"]}
        qb = {q["query_id"]: q["passed"] for q in reports["ft"]["per_query"]}
        m = mcnemar_exact([qa[q] for q in sorted(qa)], [qb[q] for q in sorted(qa)])
        lines.append(
            f"- exec@1 McNemar (exact): only base {m.only_a}, only fine-tuned "
            f"{m.only_b}, p={m.p_value:.3g}"
        )
        gate = gate_json(gate_decision(reports["base"], reports["ft"], seed=args.seed))
        lines += [f"- gate (fine-tuned candidate, base baseline): {gate['reason']}"]
        # (not the invocation line: it lists the fold models' split ids)
        lines += [f"  - {x}" for x in gate["explanation"] if not x.startswith("invocation")]
        lines += [
            "",
            "Deception by operator class (share of own-distractor pairs scored >= the "
            "canonical; base -> fine-tuned):",
            "",
        ]
        da = reports["base"]["analyses"]["deception"]["by_operator"]
        db = reports["ft"]["analyses"]["deception"]["by_operator"]
        for op in da:
            lines.append(
                f"- {op}: {da[op]['pair_rate']:.3f} -> {db[op]['pair_rate']:.3f} "
                f"({da[op]['n_pairs']} pairs)"
            )
    for model in ("base", "ft"):
        if f"{model}+{RERANK}" in reports:
            li = lift(reports[model], reports[f"{model}+{RERANK}"], args.seed)["metrics"]["exec@1"]
            lines.append(
                f"- rank-1 lift of {RERANK} over {names[model]}: "
                f"{li['difference']:+.3f} [{li['ci95'][0]:+.3f}, {li['ci95'][1]:+.3f}]"
            )
    lines += ["", "Time per fold (training wall / CPU seconds, evaluation wall seconds):", ""]
    for f in folds:
        t = f["training"]["time"]
        ev = sum(x["wall_s"] for x in f.get("eval_time", {}).values())
        lines.append(
            f"- {f['split']['name']}: {f['training']['steps']} steps, training "
            f"{t['wall_s']} s wall / {t['cpu_s']} s CPU, loss "
            f"{f['training']['loss_curve'][0][1]:.3f} -> "
            f"{f['training']['loss_curve'][-1][1]:.3f}; evaluation {ev:.0f} s wall"
        )
    hp = folds[0]["training"]["hyper_parameters"]
    lines += ["", "Hyper-parameters: " + ", ".join(f"{k}={v}" for k, v in sorted(hp.items())), ""]
    text = "\n".join(lines)
    (args.out / "summary.md").write_text(text)
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=Path, default=Path("items"))
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/finetune"))
    p.add_argument("--embedder", default="minilm")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--only", default="", help="comma-separated fold numbers to run (default all)")
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--loss", default="mnrl")
    p.add_argument("--negatives", type=int, default=1, help="hard negatives per example")
    p.add_argument("--alternatives", action="store_true", help="alternatives as extra positives")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-steps", type=int, default=-1)
    p.add_argument("--limit", type=int, default=0, help="items per side (a dry run)")
    p.add_argument("--no-neutral", action="store_true")
    p.add_argument("--no-rerank", action="store_true")
    p.add_argument(
        "--stack", type=int, default=0, help="also evaluate on DIR/stack-K/ (built beforehand)"
    )
    p.add_argument("--summarize", action="store_true", help="only pool the finished folds")
    p.add_argument("--cache-dir", type=Path, default=Path(".execretrieval_cache"))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.summarize:
        items, _ = load_items(args.items)
        corpus = read_corpus(args.items, engine())
        sha = corpus_sha256(args.items)
        folds = domain_folds(items, args.folds)
        chosen = [int(x) for x in args.only.split(",") if x] or range(1, args.folds + 1)
        with SuiteRunner(cache_dir=args.cache_dir, jobs=2) as runner:
            for number in chosen:
                evaluate_fold(args, items, corpus, sha, folds[number - 1], number, runner)
                print(summarize(args), file=sys.stderr)
    print(summarize(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
