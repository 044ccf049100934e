"""The same queries over the star and the balanced pool, paired: per pipeline, exec@1 and
exec@5 on each pool and the difference balanced - star with its paired bootstrap 95% CI and
test (:func:`pytest_execretrieval.scoring.compare.paired_comparison` across the two pools).

Every ``STAR/NAME.json`` report is paired with ``BALANCED/NAME<suffix>.json``: the report
directories of two runs of one command, one with ``--execretrieval-balanced``
(``--suffix ''``), or the pooled fold reports of ``rerank_train.py --also balanced``, where
both pools' reports lie in one directory (``--suffix -balanced``, the default).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/balanced_paired.py STAR BALANCED [--suffix S]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pytest_execretrieval.scoring.compare import paired_comparison

METRICS = ("exec@1", "exec@5")


def row(name: str, star: dict, balanced: dict) -> str:
    found = paired_comparison(star, balanced, metrics=METRICS, across_pools=True)["metrics"]
    cells = []
    for metric in METRICS:
        m = found[metric]
        low, high = m["ci95"]
        cells += [
            f"{m['a']:.3f}",
            f"{m['b']:.3f}",
            f"{m['difference']:+.3f} [{low:+.3f}, {high:+.3f}], {m['test']} p {m['p_value']:.2g}",
        ]
    return f"| {name} | " + " | ".join(cells) + " |"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("star", type=Path, help="the star pool's report directory")
    p.add_argument("balanced", type=Path, help="the balanced pool's report directory")
    p.add_argument("--suffix", default="-balanced", help="a balanced report's name after NAME")
    args = p.parse_args(argv)
    lines = [
        "| pipeline | "
        + " | ".join(f"{m} star | {m} balanced | difference" for m in METRICS)
        + " |",
        "|---|" + "---|" * 3 * len(METRICS),
    ]
    for path in sorted(args.star.glob("*.json")):
        other = args.balanced / f"{path.stem}{args.suffix}.json"
        if (args.suffix and path.stem.endswith(args.suffix)) or not other.exists():
            continue
        star, balanced = (json.loads(f.read_text()) for f in (path, other))
        if "per_query" in star:  # a benchmark report (not cross-language.json)
            lines.append(row(star["embedder"]["name"], star, balanced))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
