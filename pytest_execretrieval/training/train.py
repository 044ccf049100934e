"""Fine-tune a local sentence-transformers model on one split's contrastive examples.

:func:`fine_tune` runs ``SentenceTransformerTrainer`` with ``MultipleNegativesRankingLoss``
(``mnrl``: the positive against the example's hard negatives and every other text of the batch),
``CachedMultipleNegativesRankingLoss`` (``cached-mnrl``: the same loss with gradient caching, for
batches larger than memory) or ``GISTEmbedLoss`` (``gist``: MNRL whose in-batch negatives are
filtered by a guide model, here a frozen copy of the base model itself, so no second model is
needed), and the no-duplicates batch sampler (a query's several positives never meet in one batch,
where each would be the other's false negative).

Determinism on CPU: ``seed`` seeds Python, numpy and torch, the trainer's ``seed`` and
``data_seed`` (the batch order), and ``torch.use_deterministic_algorithms`` is on; two runs with the
same inputs, seed and thread count give the same weights. Checkpoints go to ``OUT/checkpoints``
(the last one kept) and ``resume=True`` continues from it; a finished run removes them and leaves
the model (loadable as ``st:OUT``) with its card (:mod:`.card`). A GPU is used when torch sees one
(the trainer's own device detection); nothing else changes.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from .card import TRAINING_PACKAGES, write_card
from .examples import Example, as_columns
from .split import Split

LOSSES = ("mnrl", "cached-mnrl", "gist")
CHECKPOINTS = "checkpoints"


class TrainingError(Exception):
    """Training cannot start or continue (no examples, no checkpoint to resume, a finished
    model in the way); the message says what to do."""


@dataclass(frozen=True)
class TrainConfig:
    """The hyper-parameters (recorded in the card). ``max_steps`` > 0 caps the steps (tests);
    ``mini_batch_size`` is the cached loss's chunk; ``max_seq_length`` 0 keeps the model's;
    ``negatives`` and ``alternatives`` choose the examples (:func:`.examples.training_examples`)."""

    loss: str = "mnrl"
    epochs: float = 1.0
    batch_size: int = 32
    learning_rate: float = 3e-5
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    scale: float = 20.0
    seed: int = 0
    max_steps: int = -1
    mini_batch_size: int = 16
    max_seq_length: int = 0
    save_steps: int = 25
    negatives: int = 0  # hard negatives per example; 0: all of the query's distractors
    alternatives: bool = True  # the alternatives as extra positives

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise TrainingError(f"--loss {self.loss!r}: choose from {', '.join(LOSSES)}")
        if self.batch_size < 2:
            raise TrainingError("--batch-size must be at least 2 (in-batch negatives need a batch)")
        if self.epochs <= 0 and self.max_steps <= 0:
            raise TrainingError("--epochs must be positive")


def steps_for(n_examples: int, config: TrainConfig) -> int:
    if config.max_steps > 0:
        return config.max_steps
    return max(1, math.ceil(math.ceil(n_examples / config.batch_size) * config.epochs))


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

    guide = SentenceTransformer(str(base_dir), device=model.device)
    return losses.GISTEmbedLoss(model, guide)


class _Progress:
    """A trainer callback drawing one line on stderr: step/total, current loss, elapsed time;
    it also keeps every logged loss (the card's loss curve)."""

    def __init__(self, total: int, stream=sys.stderr):
        self.total, self.stream = total, stream
        self.losses: list[tuple[int, float]] = []
        self.started = time.perf_counter()

    def callback(self):
        from transformers import TrainerCallback

        progress = self

        class Callback(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kwargs):
                if logs and "loss" in logs:
                    progress.losses.append((int(state.global_step), round(float(logs["loss"]), 6)))
                    progress.draw(state.global_step)

            def on_train_end(self, args, state, control, **kwargs):
                progress.stream.write("\n")

        return Callback()

    def draw(self, step: int) -> None:
        width = 30
        filled = int(width * step / max(self.total, 1))
        loss = f"{self.losses[-1][1]:.4f}" if self.losses else "-"
        self.stream.write(
            f"\rtrain [{'#' * filled}{'.' * (width - filled)}] step {step}/"
            f"{self.total} loss {loss} {time.perf_counter() - self.started:.0f}s"
        )
        self.stream.flush()


def _seed_everything(seed: int) -> None:
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)


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
    if not examples:
        raise TrainingError(
            f"split {split.name}: no training examples (no item with a canonical "
            "and distractors on the training side)"
        )
    out = Path(out)
    checkpoints = out / CHECKPOINTS
    if (out / "config.json").is_file() and not checkpoints.is_dir():
        raise TrainingError(f"{out} already holds a trained model; choose another --out")
    if resume and not any(checkpoints.glob("checkpoint-*")):
        raise TrainingError(f"--resume: no checkpoint in {checkpoints} to continue from")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("WANDB_DISABLED", "true")
    _seed_everything(config.seed)
    try:
        from datasets import Dataset
    except ImportError:
        raise TrainingError(
            "execretrieval train needs the `train` extra: pip install 'pytest-execretrieval[train]'"
        ) from None
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

    import torch

    model = SentenceTransformer(str(base_dir))
    if config.max_seq_length:
        model.max_seq_length = config.max_seq_length
    dataset = Dataset.from_dict(as_columns(examples))
    total = steps_for(len(examples), config)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(checkpoints),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        warmup_steps=max(1, round(config.warmup_fraction * total)),
        weight_decay=config.weight_decay,
        seed=config.seed,
        data_seed=config.seed,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        logging_steps=1,
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=1,
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),  # pinned memory serves a GPU only
    )
    progress = _Progress(total, stream)
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        loss=_loss(config.loss, model, base_dir, config),
        callbacks=[progress.callback()],
    )
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # our progress line shows the loss already
    started, cpu_started = time.perf_counter(), time.process_time()
    trainer.train(resume_from_checkpoint=True if resume else None)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    model.save(str(out))
    shutil.rmtree(checkpoints, ignore_errors=True)
    card = {
        "base_model": base,
        "corpus": corpus,
        "split": split.to_json(),
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
        "training_time": {
            "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1),
            "resumed": resume,
            "threads": _threads(),
        },
        "device": str(model.device),
        "package_versions": _versions(),
    }
    write_card(out, card)
    return card


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def _versions() -> dict[str, str]:
    from ..embedders import package_versions

    return package_versions("pytest-execretrieval", *TRAINING_PACKAGES)


def base_model(name: str, cache_dir: Path) -> tuple[Path, dict]:
    """The directory and invocation record of the local sentence-transformers model ``name``
    (``minilm``, ``mpnet``, ``st:DIR``); :class:`TrainingError` for any other embedder."""
    from ..embedders import EmbedderError, EmbedderOptions, get_embedder
    from ..embedders.sentence_transformer import SentenceTransformerEmbedder

    try:
        embedder = get_embedder(name, EmbedderOptions(cache_dir=str(cache_dir)))
        if not isinstance(embedder, SentenceTransformerEmbedder):
            raise TrainingError(
                f"--embedder {name}: training needs a local sentence-transformers "
                "model (minilm, mpnet or st:DIR)"
            )
        embedder.check_usable()
        return embedder.model_dir, embedder.invocation()
    except EmbedderError as exc:
        raise TrainingError(f"--embedder {name}: {exc}") from None


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
) -> dict:
    """Load the corpus of ``items_dir``, build ``split``'s training examples and fine-tune
    ``embedder`` on them into ``out``; returns the card."""
    from ..corpus.build import engine
    from ..corpus.items import load_items
    from ..corpus.store import CorpusError, corpus_sha256, read_corpus
    from .examples import training_examples

    try:
        corpus = read_corpus(items_dir, engine())
    except CorpusError as exc:
        raise TrainingError(str(exc)) from None
    items, _ = load_items(items_dir)
    base_dir, base = base_model(embedder, cache_dir)
    examples = training_examples(items, corpus, split.train, config.negatives, config.alternatives)
    record = {"sha256": corpus_sha256(items_dir), "dir": str(Path(items_dir).resolve())}
    return fine_tune(
        base_dir, base, examples, out, config, split, record, resume=resume, stream=stream
    )
