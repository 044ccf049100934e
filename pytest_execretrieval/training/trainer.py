"""What both training objectives share: the hyper-parameters (:class:`TrainConfig`, each
objective's losses), the checks before a run, seeding, the trainer arguments, the progress
line, timing, saving a model with its card, and the base model's directory.

Determinism on CPU: ``seed`` seeds Python, numpy and torch, the trainer's ``seed`` and
``data_seed`` (the batch order), and ``torch.use_deterministic_algorithms`` is on; two runs with the
same inputs, seed and thread count give the same weights. Checkpoints go to ``OUT/checkpoints``
(the last one kept) and ``resume=True`` continues from it; a finished run removes them and leaves
the model with its card (:mod:`.card`). A GPU is used when torch sees one (the trainer's own
device detection); nothing else changes.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..model_card import TRAINING_PACKAGES, write_card
from ..ranking.rerank.views import VIEWS
from .split import Split

LOSSES = {
    "bi-encoder": ("mnrl", "cached-mnrl", "gist"),
    "cross-encoder": ("bce", "listnet", "lambda", "mnrl"),
}
OBJECTIVES = tuple(LOSSES)
CHECKPOINTS = "checkpoints"


class TrainingError(Exception):
    """Training cannot start or continue (no examples, no checkpoint to resume, a finished
    model in the way); the message says what to do."""


@dataclass(frozen=True)
class TrainConfig:
    """The hyper-parameters (recorded in the card). ``max_steps`` > 0 caps the steps (tests);
    ``mini_batch_size`` is the cached loss's chunk; ``max_seq_length`` 0 keeps the model's;
    ``negatives`` and ``alternatives`` choose the examples (:func:`.examples.training_examples`);
    ``objective`` is what is trained: a ``bi-encoder`` (an embedder) or a ``cross-encoder`` (a
    reranker, :mod:`.cross_encoder`), which reads its candidates in ``view``."""

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
    objective: str = "bi-encoder"
    view: str = "code"  # what a cross-encoder reads of a candidate (ranking.rerank.views)

    def __post_init__(self) -> None:
        if self.objective not in LOSSES:
            raise TrainingError(
                f"--objective {self.objective!r}: choose from {', '.join(OBJECTIVES)}"
            )
        if self.loss not in LOSSES[self.objective]:
            raise TrainingError(
                f"--loss {self.loss!r} with --objective {self.objective}: choose from "
                f"{', '.join(LOSSES[self.objective])}"
            )
        if self.view not in VIEWS:
            raise TrainingError(f"--view {self.view!r}: choose from {', '.join(VIEWS)}")
        if self.view != "code" and self.objective != "cross-encoder":
            raise TrainingError(f"--view {self.view} needs --objective cross-encoder")
        if self.batch_size < 2:
            raise TrainingError("--batch-size must be at least 2 (in-batch negatives need a batch)")
        if self.epochs <= 0 and self.max_steps <= 0:
            raise TrainingError("--epochs must be positive")


def steps_for(n_examples: int, config: TrainConfig) -> int:
    if config.max_steps > 0:
        return config.max_steps
    return max(1, math.ceil(math.ceil(n_examples / config.batch_size) * config.epochs))


class Progress:
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


def prepare_run(out: Path, resume: bool, n_examples: int, split: Split, seed: int) -> Path:
    """Check that a run may write ``out`` (and resume, if asked), set the offline environment
    and seed everything; returns the checkpoint directory."""
    if not n_examples:
        raise TrainingError(
            f"split {split.name}: no training examples (no item with a canonical "
            "and distractors on the training side)"
        )
    checkpoints = Path(out) / CHECKPOINTS
    if (Path(out) / "config.json").is_file() and not checkpoints.is_dir():
        raise TrainingError(f"{out} already holds a trained model; choose another --out")
    if resume and not any(checkpoints.glob("checkpoint-*")):
        raise TrainingError(f"--resume: no checkpoint in {checkpoints} to continue from")
    for key, value in (
        ("HF_HUB_OFFLINE", "1"),
        ("TRANSFORMERS_OFFLINE", "1"),
        ("HF_DATASETS_OFFLINE", "1"),
        ("WANDB_DISABLED", "true"),
    ):
        os.environ.setdefault(key, value)
    _seed_everything(seed)
    return checkpoints


def dataset_of(columns: dict):
    """A ``datasets.Dataset`` of ``columns``; :class:`TrainingError` without the extra."""
    try:
        from datasets import Dataset
    except ImportError:
        raise TrainingError(
            "execretrieval train needs the `train` extra: pip install 'pytest-execretrieval[train]'"
        ) from None
    return Dataset.from_dict(columns)


def training_arguments(
    arguments_class, config: TrainConfig, checkpoints: Path, total: int, **extra
):
    """The trainer arguments both objectives share (``arguments_class``: the objective's
    ``TrainingArguments``), one log line per step and the last checkpoint kept."""
    import torch

    return arguments_class(
        output_dir=str(checkpoints),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        warmup_steps=max(1, round(config.warmup_fraction * total)),
        weight_decay=config.weight_decay,
        seed=config.seed,
        data_seed=config.seed,
        logging_steps=1,
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=1,
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),  # pinned memory serves a GPU only
        **extra,
    )


def run_trainer(trainer, resume: bool) -> dict:
    """Train (from the last checkpoint with ``resume``); the card's ``training_time``."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # our progress line shows the loss already
    started, cpu_started = time.perf_counter(), time.process_time()
    trainer.train(resume_from_checkpoint=True if resume else None)
    return {
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(time.process_time() - cpu_started, 1),
        "resumed": resume,
        "threads": _threads(),
    }


def finish(model, out: Path, card: dict) -> dict:
    """Save ``model`` and its ``card`` (completed with the device and package versions) in
    ``out``, drop the checkpoints; returns the card."""
    model.save(str(out))
    shutil.rmtree(Path(out) / CHECKPOINTS, ignore_errors=True)
    card = {**card, "device": str(model.device), "package_versions": _versions()}
    write_card(Path(out), card)
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
