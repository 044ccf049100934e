"""``execretrieval train [DIR] --embedder NAME --out MODEL_DIR [--split domains|all|FILE]
[--folds K] [--fold I] [--objective bi-encoder|cross-encoder] [--resume]``: the command-line
face of :mod:`.train` and :mod:`.cross_encoder`.

``--split domains`` (the default) trains one model per fold into ``MODEL_DIR/<split name>/``
(``--fold I`` trains fold I only); ``all`` and an item-list ``FILE`` train one model into
``MODEL_DIR``. Each model directory is usable as ``--embedder st:DIR`` (a bi-encoder) or
``--execretrieval-rerank ce:DIR`` (a cross-encoder).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..model_card import USAGE
from ..ranking.rerank.views import VIEWS
from .split import SplitError, make_splits
from .train import LOSSES, OBJECTIVES, TrainConfig, TrainingError, train_split

DEFAULTS = TrainConfig()


def add_parser(sub, cache: dict) -> None:
    t = sub.add_parser(
        "train",
        help="fine-tune a local sentence-transformers model on the "
        "corpus's hard negatives (a leakage-free split)",
    )
    t.add_argument("items_dir", nargs="?")
    t.add_argument(
        "--embedder",
        required=True,
        help="base model: minilm, mpnet or st:DIR (a cross-encoder also ce:DIR)",
    )
    t.add_argument("--out", required=True, type=Path, metavar="MODEL_DIR")
    t.add_argument(
        "--split",
        default="domains",
        metavar="domains|all|FILE",
        help="domain k-fold (default), every item, or the item ids listed in FILE",
    )
    t.add_argument("--folds", type=int, default=5, metavar="K", help="domain folds (default 5)")
    t.add_argument("--fold", type=int, metavar="I", help="train only fold I (1..K)")
    t.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default=DEFAULTS.objective,
        help="an embedder (bi-encoder, the default) or a reranker (cross-encoder)",
    )
    t.add_argument(
        "--loss",
        choices=sorted({loss for losses in LOSSES.values() for loss in losses}),
        default=DEFAULTS.loss,
        help="; ".join(f"{o}: {', '.join(losses)}" for o, losses in LOSSES.items())
        + f" (default {DEFAULTS.loss})",
    )
    t.add_argument(
        "--max-seq-length",
        type=int,
        default=DEFAULTS.max_seq_length,
        help="tokens per text (a cross-encoder: per query + code pair); 0 keeps the model's",
    )
    t.add_argument(
        "--view",
        choices=VIEWS,
        default=DEFAULTS.view,
        help="a cross-encoder: what it reads of each candidate (default code; diff marks what "
        "differs from the candidate's near clones; no-identifiers renames the code's names)",
    )
    t.add_argument("--epochs", type=float, default=DEFAULTS.epochs)
    t.add_argument("--batch-size", type=int, default=DEFAULTS.batch_size)
    t.add_argument("--learning-rate", type=float, default=DEFAULTS.learning_rate)
    t.add_argument(
        "--negatives",
        type=int,
        default=DEFAULTS.negatives,
        help="hard negatives per example (default 0: all of the query's distractors)",
    )
    t.add_argument(
        "--no-alternatives",
        action="store_true",
        help="do not add the alternatives as extra positives",
    )
    t.add_argument("--max-steps", type=int, default=DEFAULTS.max_steps, help=argparse.SUPPRESS)
    t.add_argument("--seed", type=int, default=DEFAULTS.seed)
    t.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    t.add_argument("--cache-dir", **cache)


def run(args: argparse.Namespace, items_dir: Path) -> int:
    from ..corpus.items import load_items

    items, _ = load_items(items_dir)
    try:
        config = TrainConfig(
            loss=args.loss,
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.learning_rate,
            seed=args.seed,
            max_steps=args.max_steps,
            negatives=args.negatives,
            alternatives=not args.no_alternatives,
            objective=args.objective,
            max_seq_length=args.max_seq_length,
            view=args.view,
        )
        splits = make_splits(items, args.split, args.folds)
        if args.fold is not None:
            if not 1 <= args.fold <= len(splits) or args.split != "domains":
                raise SplitError(f"--fold {args.fold}: needs --split domains and 1..{len(splits)}")
            splits = [splits[args.fold - 1]]
        for split in splits:
            out = args.out / split.name if args.split == "domains" else args.out
            print(
                f"{split.name}: training on {len(split.train)} items, holding out "
                f"{len(split.held_out)} -> {out}",
                file=sys.stderr,
            )
            card = train_split(
                items_dir,
                args.embedder,
                out,
                split,
                config,
                cache_dir=Path(args.cache_dir),
                resume=args.resume,
            )
            t = card["training_time"]
            print(
                f"wrote {out}: {card['steps']} steps, {t['wall_s']} s wall, {t['cpu_s']} s "
                f"CPU; use it as {USAGE[config.objective].format(model_dir=out)}"
            )
    except (SplitError, TrainingError) as exc:
        print(f"execretrieval train: {exc}", file=sys.stderr)
        return 2
    return 0
