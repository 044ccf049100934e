"""Does a cross-encoder trained on the corpus's execution-proven near misses pick the correct
function at rank 1 on domains it never saw, without executing anything? MiniLM's top 10
reranked by the fold's trained reranker, over the domain k-fold of ``finetune.py``, pooled.

Per fold (``split.domain_folds``): train a reranker (``execretrieval train --objective
cross-encoder``, from the packaged MiniLM's transformer) on the other domains, rank each
held-out query against the held-out pool with MiniLM (the first stage), then rerank its top 10
with the reranker (``minilm+ce``), with the reranker deciding only among the near clones of
MiniLM's rank 1 (``minilm+clones-ce``: ``clones:ce:DIR``), with the query-blind control
``clones:medoid`` (the clone the others differ from least: what the pool's shape alone gives a
reranker that sees the candidates together) and with ``exec-consensus`` (which executes: the
moonshot's yardstick). Each fold's runs go to ``OUT/fold-I.json`` as they
finish; the pooled reports and ``OUT/summary.md`` (exec@1/5, nDCG@10, MRR with CIs, paired tests
against the first stage and against exec-consensus) are written from the folds that are done
(``--summarize`` redoes it).

    nice -n 19 python benchmarks/rerank_train.py --only 1 --loss bce --out benchmarks/results/rerank

``--wrong-query`` also reranks with ``clones:ce`` reading another held-out query's text
(``minilm+clones-ce-wrong-query``): whether the reranker reads the query at all.
``--limit N`` evaluates the first N held-out queries of a fold (training uses the whole fold).
``--also balanced`` reranks the same held-out queries on the balanced pool too (families
centred on a wrong member); ``--train-on balanced`` trains each fold's reranker on the balanced
corpus's families instead of the star's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from finetune import ci, pooled

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
from pytest_execretrieval.execution.runner import SuiteRunner
from pytest_execretrieval.model_card import CARD
from pytest_execretrieval.ranking.benchmark import BenchmarkRun, run_benchmark
from pytest_execretrieval.ranking.rerank import RerankerContext, get_reranker
from pytest_execretrieval.ranking.rerank.pipeline import rerank_run
from pytest_execretrieval.reporting.report import write_json
from pytest_execretrieval.scoring.compare import paired_comparison
from pytest_execretrieval.training.split import domain_folds
from pytest_execretrieval.training.train import TrainConfig, train_split

CONSENSUS = "exec-consensus"
WRONG = "-wrong-query"  # a reranker's label suffix: it read another query (wrong_queries)
SHOWN = ("exec@1", "exec@5", "ndcg@10", "mrr")
NAMES = {
    "base": "minilm",
    "base+ce": "minilm+ce",
    "base+clones-ce": "minilm+clones-ce",  # the reranker decides only among rank 1's near clones
    "base+clones-medoid": "minilm+clones-medoid",  # the control: no query, nothing learnt
    "base+clones-ce-wrong-query": "minilm+clones-ce-wrong-query",  # does it read the query?
    f"base+{CONSENSUS}": f"minilm+{CONSENSUS}",
}
# the other corpora a fold's reranker is tried on
ALSO = ("families", "stack-2", "stack-3", "balanced")
VIEWS = ("", "-topical", *(f"-{v}" for v in ALSO))  # label suffixes: every corpus evaluated


def variant_of(name: str) -> CorpusVariant:
    """The corpus ``name`` of :data:`ALSO`, its directory's name (``""``: the bundled one)."""
    kind, _, k = name.partition("-")
    return CorpusVariant.of(kind or "default", int(k or 1))


def train_fold(args, fold, model_dir: Path) -> dict:
    if not (model_dir / CARD).exists():
        config = TrainConfig(
            objective="cross-encoder",
            loss=args.loss,
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            seed=args.seed,
            max_steps=args.max_steps,
            max_seq_length=args.max_seq_length,
            view=args.view,
        )
        resume = (model_dir / "checkpoints").is_dir()
        train_split(
            args.items,
            "minilm",
            model_dir,
            fold,
            config,
            cache_dir=args.cache_dir,
            resume=resume,
            variant=variant_of(args.train_on),
        )
    return json.loads((model_dir / CARD).read_text())


def evaluate_fold(args, items, fold, number: int, runner) -> None:
    path = args.out / f"fold-{number}.json"
    state = json.loads(path.read_text()) if path.exists() else {"split": fold.to_json(), "runs": {}}
    model_dir = args.out / f"model-{fold.name}"
    card = train_fold(args, fold, model_dir)
    state["training"] = {k: card[k] for k in ("steps", "loss_curve", "hyper_parameters", "loss")}
    state["training"]["view"] = card.get("view", "code")
    state["training"]["corpus"] = card["corpus"].get("variant", "")
    state["training"]["time"] = card["training_time"]
    held_ids = set(fold.held_out[: args.limit or None])
    held = [i for i in items if i.id in held_ids]
    for variant in ("", *args.also):
        suffix = f"-{variant}" if variant else ""
        chosen = variant_of(variant)
        where = corpus_dir(args.items, chosen)
        corpus = read_corpus(args.items, engine(chosen), where)
        pool = Corpus(
            tuple(s for s in corpus.snippets if s.query_id in held_ids),
            tuple(a for a in corpus.alternatives if a.query_id in held_ids),
            corpus.engine,
        )
        rerankers = [("ce", f"ce:{model_dir}"), ("clones-ce", f"clones:ce:{model_dir}")]
        rerankers += [("clones-medoid", "clones:medoid")]
        rerankers += [(CONSENSUS, CONSENSUS)] * (not variant.startswith("families"))
        rerankers += [(f"clones-ce{WRONG}", f"clones:ce:{model_dir}")] * args.wrong_query
        sha = corpus_sha256(where)
        runs_on(args, state, path, suffix, held, pool, sha, rerankers, runner)
        if not variant:  # the topical control: the held-out canonicals only, no near miss
            canonicals = Corpus(
                tuple(s for s in pool.snippets if s.kind == "canonical"), (), corpus.engine
            )
            runs_on(args, state, path, "-topical", held, canonicals, sha, rerankers[:1], runner)
        print(f"fold {number}: {variant or 'the bundled corpus'} done", file=sys.stderr)
    state["complete"] = True
    write_json(path, state)


def runs_on(args, state, path, suffix, held, pool, sha, rerankers, runner) -> None:
    """The first stage (label ``base`` + ``suffix``) on ``pool`` and each reranker of its top 10
    (``base+NAME`` + ``suffix``), each run kept in ``state`` as it finishes."""
    base = f"base{suffix}"
    if base not in state["runs"]:
        embedder = get_embedder("minilm", EmbedderOptions(cache_dir=str(args.cache_dir)))
        try:
            run = run_benchmark(held, pool, sha, embedder, runner, args.cache_dir)
        finally:
            embedder.close()
        state["runs"][base] = run.to_json()
        write_json(path, state)
    snippets = {s.snippet_id: s for s in pool.snippets}
    runs = {"base": BenchmarkRun.from_json(state["runs"][base])}
    for short, name in rerankers:
        label = f"base+{short}{suffix}"
        if label in state["runs"]:
            continue
        started, cpu = time.perf_counter(), time.process_time()
        reranker = get_reranker(name, RerankerContext(runner, args.cache_dir, ("base",), runs))
        queries = wrong_queries(held) if short.endswith(WRONG) else held
        try:
            done = rerank_run(runs["base"], "base", reranker, 10, queries, snippets, runner, short)
        finally:
            reranker.close()
        state["runs"][label] = done.run.to_json()
        state.setdefault("eval_time", {})[label] = {
            "wall_s": round(time.perf_counter() - started, 1),
            "cpu_s": round(time.process_time() - cpu, 1),
            "queries": len(held),
        }
        write_json(path, state)


def wrong_queries(held: list) -> list:
    """Each held-out item with the next one's query (by id, so mostly a function of the same
    domain; the last takes the first's): the first stage's candidates stay, only the reranker
    reads the wrong query. A reranker that reads the query loses by it; one that has learnt the
    code alone (the operators' fingerprint) keeps its rank 1."""
    ordered = sorted(held, key=lambda i: i.id)
    return [replace(i, query=ordered[(n + 1) % len(ordered)].query) for n, i in enumerate(ordered)]


def summarize(args) -> str:
    folds = [json.loads(p.read_text()) for p in sorted(args.out.glob("fold-*.json"))]
    folds = [f for f in folds if f.get("complete")]
    if not folds:
        return "no evaluated fold yet\n"
    reports, corpora = {}, {}
    for suffix in VIEWS:
        for label, name in NAMES.items():
            report = pooled(folds, label + suffix, name + suffix, args.seed)
            if report is not None:
                reports[label + suffix] = report
                corpora[label + suffix] = (suffix[1:] or "bundled", name)
                write_json(args.out / "reports" / f"{name}{suffix}.json", report)
    lines = [
        f"Pooled over {len(folds)} fold(s): "
        + ", ".join(
            f"{f['split']['name']} (held out: {', '.join(f['split']['held_out_domains'])})"
            for f in folds
        ),
        f"{reports['base']['corpus']['n_queries']} held-out queries; reranker loss "
        f"`{folds[0]['training']['loss']}`, view `{folds[0]['training'].get('view', 'code')}`, "
        f"trained on the families of the {trained_on(folds[0])} corpus.",
        "",
        "| corpus | pipeline | " + " | ".join(SHOWN) + " |",
        "|---|---|" + "---|" * len(SHOWN),
    ]
    for label, r in reports.items():
        cells = " | ".join(ci(r, m) for m in SHOWN)
        lines.append(f"| {' | '.join(corpora[label])} | {cells} |")
    lines += ["", "Paired differences (paired bootstrap 95% CI, p):", ""]
    pairs = [
        (f"base{x}", f"base+{ce}{x}") for x in VIEWS for ce in ("ce", "clones-ce", "clones-medoid")
    ]
    pairs += [(f"base+clones-ce{x}", f"base+clones-ce{WRONG}{x}") for x in VIEWS]
    against = [(f"base+{CONSENSUS}", f"base+{ce}") for ce in ("ce", "clones-ce", "clones-medoid")]
    for a, b in [*pairs, *against]:
        if a in reports and b in reports:
            cmp = paired_comparison(reports[a], reports[b], seed=args.seed)
            cells = [
                f"{m} {d['difference']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}] "
                f"p={d['p_value']:.3g}"
                for m, d in cmp["metrics"].items()
                if m in SHOWN
            ]
            lines.append(
                f"- {reports[b]['embedder']['name']} vs {reports[a]['embedder']['name']}: "
                + "; ".join(cells)
            )
    lines += ["", *where_rank_one_goes(folds, corpora), "", *rank_one_by_class(folds, corpora)]
    lines += ["", "Time per fold:", ""]
    for f in folds:
        t, curve = f["training"]["time"], f["training"]["loss_curve"]
        ev = f.get("eval_time", {}).get("base+ce", {})
        lines.append(
            f"- {f['split']['name']}: {f['training']['steps']} steps, training {t['wall_s']} s "
            f"wall / {t['cpu_s']} s CPU ({t['threads']} threads), loss {curve[0][1]:.3f} -> "
            f"{curve[-1][1]:.3f}; reranking {ev.get('queries')} queries x 10: "
            f"{ev.get('wall_s')} s wall / {ev.get('cpu_s')} s CPU"
        )
    hp = folds[0]["training"]["hyper_parameters"]
    lines += ["", "Hyper-parameters: " + ", ".join(f"{k}={v}" for k, v in sorted(hp.items())), ""]
    text = "\n".join(lines)
    (args.out / "summary.md").write_text(text)
    return text


def trained_on(fold: dict) -> str:
    """The corpus whose families a fold's reranker saw: the star one, or the variant's flags."""
    flags = fold["training"].get("corpus")
    return f"`{flags}`" if flags else "star"


def where_rank_one_goes(folds: list[dict], corpora: dict) -> list[str]:
    """Why a pipeline misses rank 1: it puts another query's function there (topicality), or
    its own family's first member is a distractor (the near miss). Over the queries whose top 10
    holds one of their own passing snippets."""
    lines = [
        "Where rank 1 goes (queries whose top 10 holds their own passing snippet): the share "
        "whose rank 1 is their own family, the share whose highest-ranked own snippet passes, "
        "and what a random order of the family's snippets in the top 10 would give.",
        "",
        "| corpus | pipeline | queries | rank 1 own family | own family's first passes | chance |",
        "|---|---|---|---|---|---|",
    ]
    for label, names in corpora.items():
        n = own = first = chance = 0.0
        for f in folds:
            for q, r in f["runs"][label]["results"].items():
                family = [c for c in r["top"][:10] if c["query_id"] == q]
                if any(c["passes"] for c in family):
                    n += 1
                    own += r["top"][0]["query_id"] == q
                    first += family[0]["passes"]
                    chance += sum(c["passes"] for c in family) / len(family)
        shares = " | ".join(f"{x / n:.3f}" for x in (own, first, chance))
        lines.append(f"| {' | '.join(names)} | {n:.0f} | {shares} |")
    return lines


def rank_one_by_class(folds: list[dict], corpora: dict) -> list[str]:
    """What stands at rank 1, over every held-out query, one table per corpus (its pipelines
    as columns): a passing snippet, one of the query's own distractors (by operator class), or
    another query's snippet."""
    counts: dict[str, Counter] = {}
    for label in corpora:
        c = counts.setdefault(label, Counter())
        for f in folds:
            for q, r in f["runs"][label]["results"].items():
                top = r["top"][0]
                own = top["query_id"] == q
                c["passes" if top["passes"] else top["operator"] if own else "another query's"] += 1
    lines = ["What stands at rank 1 (share of the queries), per corpus."]
    for corpus in dict.fromkeys(names[0] for names in corpora.values()):
        labels = [label for label, names in corpora.items() if names[0] == corpus]
        seen = {k for label in labels for k in counts[label]} - {"passes", "another query's"}
        lines += [
            "",
            f"| {corpus}: rank 1 | " + " | ".join(corpora[label][1] for label in labels) + " |",
            "|---|" + "---|" * len(labels),
        ]
        for row in ["passes", *sorted(seen), "another query's"]:
            shares = [counts[label][row] / sum(counts[label].values()) for label in labels]
            lines.append(f"| {row} | " + " | ".join(f"{x:.3f}" for x in shares) + " |")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=Path, default=Path("items"))
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/rerank"))
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--only", default="", help="comma-separated fold numbers to run (default all)")
    p.add_argument("--loss", default="bce", help="bce, listnet, lambda or mnrl")
    p.add_argument("--view", default="code", help="code, diff or no-identifiers")
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--max-seq-length", type=int, default=256)
    p.add_argument("--max-steps", type=int, default=-1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, default=0, help="held-out queries evaluated per fold")
    p.add_argument(
        "--also",
        action="append",
        default=[],
        choices=ALSO,
        help="also rerank on this corpus of the held-out items (built beforehand)",
    )
    p.add_argument(
        "--train-on",
        default="",
        choices=("", *ALSO),
        help="train each fold's reranker on this corpus's families (default: the bundled star)",
    )
    p.add_argument(
        "--wrong-query",
        action="store_true",
        help="also rerank with clones:ce reading each held-out query's neighbour's text",
    )
    p.add_argument("--summarize", action="store_true", help="only pool the finished folds")
    p.add_argument("--cache-dir", type=Path, default=Path(".execretrieval_cache"))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.summarize:
        items, _ = load_items(args.items)
        folds = domain_folds(items, args.folds)
        chosen = [int(x) for x in args.only.split(",") if x] or range(1, args.folds + 1)
        with SuiteRunner(cache_dir=args.cache_dir, jobs=2) as runner:
            for number in chosen:
                fold = folds[number - 1]
                evaluate_fold(args, items, fold, number, runner)
                print(summarize(args), file=sys.stderr)
    print(summarize(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
