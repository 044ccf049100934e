"""The two mutant sources on the same items: the default corpus (the operator table) against the
mutmut corpus (`execretrieval build --source mutmut`, DIR/mutmut/).

Per source, from the committed build records (yields.jsonl, manifest.json): candidates per item,
the killed share of all candidates, the survivors and the share of candidates that survive and
agree with the canonical on every input hypothesis drew (possibly equivalent; only survivors of
items with a fully annotated entry point have evidence), the pool size. Then, per
embedder whose report JSON is in both report directories, exec@1 on each corpus with its 95%
bootstrap CI and the paired comparison over the common queries (difference mutmut - default,
paired bootstrap CI, exact McNemar p): the same numbers `execretrieval compare` gives, which
refuses reports on different corpora.

Usage: python benchmarks/compare_sources.py DEFAULT_REPORTS MUTMUT_REPORTS [--items DIR]
  the report directories written by
  pytest --embedder bm25 --embedder minilm --execretrieval-report-dir DEFAULT_REPORTS
  pytest --embedder bm25 --embedder minilm --execretrieval-source mutmut \\
      --execretrieval-report-dir MUTMUT_REPORTS
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pytest_execretrieval.corpus.incremental import read_records
from pytest_execretrieval.corpus.items import bundled_items_dir
from pytest_execretrieval.corpus.store import MANIFEST, CorpusVariant, corpus_dir
from pytest_execretrieval.scoring.compare import comparison_rows, load_report
from pytest_execretrieval.scoring.metrics import metric_matrix, row_metrics

SOURCES = ("operators", "mutmut")


def source_row(items_dir: Path, source: str) -> dict:
    """The build figures of one source's committed corpus."""
    where = corpus_dir(items_dir, CorpusVariant(source=source))
    records = list(read_records(where).values())
    manifest = json.loads((where / MANIFEST).read_text())
    candidates = sum(r.candidates for r in records)
    killed = sum(sum(r.killed.values()) for r in records)
    survivors = [s for r in records for s in r.survivors]
    with_evidence = [s for s in survivors if s.get("equivalence") is not None]
    agree = sum(s["equivalence"]["differing"] == 0 for s in with_evidence)
    return {
        "source": source,
        "items": len(records),
        "candidates_per_item": candidates / len(records),
        "killed_share": killed / candidates,
        "survivors": len(survivors),
        "agree_share": agree / candidates,
        "agree_of_evidenced": f"{agree}/{len(with_evidence)}",
        "pool": manifest["counts"]["snippets"],
        "distractors": manifest["counts"]["distractors"],
    }


def embedder_rows(default_dir: Path, mutmut_dir: Path) -> list[dict]:
    """exec@1 per corpus and the paired comparison, per embedder reported in both."""
    rows = []
    for path in sorted(default_dir.glob("*.json")):
        other = mutmut_dir / path.name
        if not other.exists():
            continue
        a, b = load_report(path), load_report(other)
        qa = {q["query_id"]: q for q in a["per_query"]}
        qb = {q["query_id"]: q for q in b["per_query"]}
        common = sorted(qa.keys() & qb.keys())
        ma = metric_matrix([row_metrics(qa[i]).expected for i in common], ("exec@1",))
        mb = metric_matrix([row_metrics(qb[i]).expected for i in common], ("exec@1",))
        paired = comparison_rows(ma, mb, ("exec@1",))["exec@1"]
        rows.append(
            {
                "embedder": path.stem,
                "queries": len(common),
                "default": (a["metrics"]["exec@1"], a["ci95"]["exec@1"]),
                "mutmut": (b["metrics"]["exec@1"], b["ci95"]["exec@1"]),
                "difference": paired["difference"],
                "ci95": paired["ci95"],
                "test": paired["test"],
                "p": paired["p_value"],
            }
        )
    return rows


def markdown(sources: list[dict], embedders: list[dict]) -> str:
    lines = [
        "| source | items | candidates/item | killed | survivors | survive and agree on all "
        "drawn inputs | pool (distractors) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in sources:
        lines.append(
            f"| {s['source']} | {s['items']} | {s['candidates_per_item']:.1f} | "
            f"{s['killed_share']:.1%} | {s['survivors']} | {s['agree_share']:.1%} of candidates "
            f"({s['agree_of_evidenced']} survivors with evidence) | "
            f"{s['pool']:,} ({s['distractors']:,}) |"
        )
    lines += [
        "",
        "| embedder | exec@1 default [95% CI] | exec@1 mutmut [95% CI] | mutmut - "
        "default [95% CI] | paired test |",
        "|---|---|---|---|---|",
    ]
    for e in embedders:
        (va, ca), (vb, cb) = e["default"], e["mutmut"]
        lines.append(
            f"| {e['embedder']} | {va:.3f} [{ca[0]:.3f}, {ca[1]:.3f}] | {vb:.3f} [{cb[0]:.3f}, "
            f"{cb[1]:.3f}] | {e['difference']:+.3f} [{e['ci95'][0]:+.3f}, {e['ci95'][1]:+.3f}] | "
            f"{e['test']} p = {e['p']:.2g} ({e['queries']} queries) |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("default_reports", type=Path)
    p.add_argument("mutmut_reports", type=Path)
    p.add_argument("--items", type=Path, default=None)
    args = p.parse_args()
    items_dir = args.items or bundled_items_dir()
    sources = [source_row(items_dir, s) for s in SOURCES]
    print(markdown(sources, embedder_rows(args.default_reports, args.mutmut_reports)), end="")


if __name__ == "__main__":
    main()
