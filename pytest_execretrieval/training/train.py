"""Fine-tune a local sentence-transformers model (the ``bi-encoder`` objective) on one split's
contrastive examples; :func:`train_split` trains either objective (``cross-encoder``:
:mod:`.cross_encoder`).

:func:`fine_tune` runs ``SentenceTransformerTrainer`` with ``MultipleNegativesRankingLoss``
(``mnrl``: the positive against the example's hard negatives and every other text of the batch),
``CachedMultipleNegativesRankingLoss`` (``cached-mnrl``: the same loss with gradient caching, for
batches larger than memory) or ``GISTEmbedLoss`` (``gist``: MNRL whose in-batch negatives are
filtered by a guide model, here a frozen copy of the base model itself, so no second model is
needed), and the no-duplicates batch sampler (a query's several positives never meet in one batch,
where each would be the other's false negative). Seeding, checkpoints and the card:
:mod:`.trainer`; the result loads as ``st:OUT``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from ..corpus.variants import DEFAULT_VARIANT, CorpusVariant
from ..model_dir import load_kwargs
from .examples import Example, as_columns
from .split import Split
from .trainer import (
    LOSSES,
    OBJECTIVES,
    Progress,
    TrainConfig,
    TrainingError,
    base_model,
    dataset_of,
    finish,
    prepare_run,
    run_trainer,
    steps_for,
    training_arguments,
)

__all__ = ["LOSSES", "OBJECTIVES", "TrainConfig", "TrainingError", "fine_tune", "train_split"]


def _loss(name: str, model, base_dir: Path, config: TrainConfig):
    try:
        from sentence_transformers.sentence_transformer import losses
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers import losses  # type: ignore[no-redef, attr-defined]
    if name == "mnrl":
        return losses.MultipleNegativesRankingLoss(model, scale=config.scale)
    if name == "cached-mnrl":
        return losses.CachedMultipleNegativesRankingLoss(
            model, scale=config.scale, mini_batch_size=config.mini_batch_size
        )
    from sentence_transformers import SentenceTransformer

    guide = SentenceTransformer(str(base_dir), device=model.device, **load_kwargs())
    return losses.GISTEmbedLoss(model, guide)


def fine_tune(
    base_dir: Path,
    base: dict,
    examples: Sequence[Example],
    out: Path,
    config: TrainConfig,
    split: Split,
    corpus: dict,
    *,
    resume: bool = False,
    stream=sys.stderr,
    on_step: Callable[[int], None] | None = None,
) -> dict:
    """Fine-tune the model in ``base_dir`` (``base``: its invocation record) on ``examples`` and
    save it with its card in ``out``; returns the card. ``corpus``: ``{"sha256", "dir"}``."""
    out = Path(out)
    checkpoints = prepare_run(out, resume, len(examples), split, config.seed)
    dataset = dataset_of(as_columns(examples))
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )

    try:
        from sentence_transformers.sentence_transformer.training_args import BatchSamplers
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.training_args import (  # type: ignore[no-redef, import-not-found]
            BatchSamplers,
        )

    model = SentenceTransformer(str(base_dir), **load_kwargs())  # checked by base_model
    if config.max_seq_length:
        model.max_seq_length = config.max_seq_length
    total = steps_for(len(examples), config)
    args = training_arguments(
        SentenceTransformerTrainingArguments,
        config,
        checkpoints,
        total,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
    )
    progress = Progress(total, stream)
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        loss=_loss(config.loss, model, base_dir, config),
        callbacks=[progress.callback()],
    )
    training_time = run_trainer(trainer, resume)
    card = {
        "base_model": base,
        "corpus": corpus,
        "split": split.to_json(),
        "objective": config.objective,
        "examples": {
            "n": len(examples),
            "items": len({e.item_id for e in examples}),
            "negatives_per_example": len(examples[0].negatives),
        },
        "loss": config.loss,
        "guide_model": base.get("model") if config.loss == "gist" else None,
        "hyper_parameters": asdict(config),
        "steps": int(trainer.state.global_step),
        "loss_curve": progress.losses,
        "training_time": training_time,
    }
    return finish(model, out, card)


def train_split(
    items_dir: Path,
    embedder: str,
    out: Path,
    split: Split,
    config: TrainConfig = TrainConfig(),
    *,
    cache_dir: Path = Path(".execretrieval_cache"),
    resume: bool = False,
    stream=sys.stderr,
    variant: CorpusVariant = DEFAULT_VARIANT,
) -> dict:
    """Load the ``variant`` corpus of ``items_dir`` (default: the star corpus), build
    ``split``'s training examples and fine-tune ``embedder`` on them into ``out``; returns the
    card."""
    from ..corpus.build import engine
    from ..corpus.items import load_items
    from ..corpus.store import CorpusError, corpus_dir, corpus_sha256, read_corpus
    from .examples import families, training_examples

    try:
        corpus = read_corpus(items_dir, engine(variant), variant=variant)
    except CorpusError as exc:
        raise TrainingError(str(exc)) from None
    items, _ = load_items(items_dir)
    record = {
        "sha256": corpus_sha256(corpus_dir(items_dir, variant)),
        "dir": str(Path(items_dir).resolve()),
    }
    if variant != DEFAULT_VARIANT:
        record["variant"] = " ".join(variant.flags)
    if config.objective == "cross-encoder":
        from .cross_encoder import cross_encoder_base, fine_tune_cross_encoder

        base_dir, base = cross_encoder_base(embedder, cache_dir)
        found = families(items, corpus, split.train, config.negatives, config.alternatives)
        return fine_tune_cross_encoder(
            base_dir, base, found, out, config, split, record, resume=resume, stream=stream
        )
    base_dir, base = base_model(embedder, cache_dir)
    examples = training_examples(items, corpus, split.train, config.negatives, config.alternatives)
    return fine_tune(
        base_dir, base, examples, out, config, split, record, resume=resume, stream=stream
    )
