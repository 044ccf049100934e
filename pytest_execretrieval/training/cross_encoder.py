"""Train a reranker: a sentence-transformers ``CrossEncoder`` that reads a query and a candidate
together, trained on each query's family (the canonical and its alternatives against the
distractors execution proves wrong). The result loads as ``ce:DIR`` in
``--execretrieval-rerank``.

The base is a local model: the transformer of ``minilm``, ``mpnet`` or an ``st:DIR`` model, which
gets a fresh one-output classification head (``num_labels=1``), or a ``ce:DIR`` reranker, which
keeps its own. The losses (``--loss``), all from ``sentence_transformers.cross_encoder.losses``:

* ``bce``: ``BinaryCrossEntropyLoss``, one (query, document, 0/1) pair at a time;
* ``listnet``: ``ListNetLoss``, the query's whole family as one list (softmax cross entropy
  between the scores and the labels);
* ``lambda``: ``LambdaLoss``, the same list, each swap weighted by what it costs in nDCG;
* ``mnrl``: ``MultipleNegativesRankingLoss``, the positive against the family's distractors and
  other queries' documents of the batch (the no-duplicates sampler keeps a query's positives apart).

``--view`` chooses what the model reads of each candidate (:mod:`..ranking.rerank.views`); the
card records it and the ``ce:DIR`` reranker reads its candidates the same way.

Everything else (seeding, checkpoints and ``--resume``, the progress line, the card) is
:mod:`.trainer`'s.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from ..model_dir import BI_ENCODER, CROSS_ENCODER, ModelDirError, check_model_dir, load_kwargs
from ..ranking.rerank.views import render
from .examples import Family, as_columns, examples_of, list_columns, pair_columns
from .split import Split
from .trainer import (
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

LOSS_CLASSES = {
    "bce": "BinaryCrossEntropyLoss",
    "listnet": "ListNetLoss",
    "lambda": "LambdaLoss",
    "mnrl": "MultipleNegativesRankingLoss",
}
FRESH_HEAD = (
    "the base model's transformer with a fresh one-output classification head (num_labels=1)"
)
OWN_HEAD = "the base CrossEncoder with its own head"


def cross_encoder_base(name: str, cache_dir: Path) -> tuple[Path, dict]:
    """The directory and invocation record of the base: a ``ce:DIR`` reranker, checked as the
    ``ce:DIR`` reranker checks it (:func:`base_activation`), or whatever
    :func:`.train.base_model` accepts (a local sentence-transformers embedder; an ``st:DIR``
    checked as a bi-encoder)."""
    if not name.startswith("ce:"):
        return base_model(name, cache_dir)
    from ..embedders.sentence_transformer import file_sha256, weights_file

    path = Path(name[3:]).expanduser()
    if not path.is_dir():
        raise TrainingError(f"--embedder {name}: {path} is not a directory holding a CrossEncoder")
    base_activation(path, name)
    weights = weights_file(path) if (path / "config.json").is_file() else None
    if weights is None:
        raise TrainingError(f"--embedder {name}: {path} holds no CrossEncoder (config + weights)")
    return path, {
        "name": name,
        "model": str(path.resolve()),
        "weights_sha256": file_sha256(weights),
    }


def base_activation(base_dir: Path, name: str) -> str:
    """The activation the CrossEncoder built from the base ``name`` in ``base_dir`` applies,
    once :func:`..model_dir.check_model_dir` passes the directory (a ``ce:DIR`` as a
    cross-encoder, an ``st:DIR`` as a bi-encoder; :class:`TrainingError` naming the file and the
    reason otherwise): its own for a ``ce:DIR``, a fresh one-output head's ``Sigmoid`` for an
    installed package's model (``minilm``, ``mpnet``), as sentence-transformers chooses them."""
    kind = {"ce": CROSS_ENCODER, "st": BI_ENCODER}.get(name.partition(":")[0])
    if kind is None:
        return "Sigmoid"
    try:
        return check_model_dir(base_dir, kind)
    except ModelDirError as exc:
        raise TrainingError(f"--embedder {name}: {exc}") from None


def in_view(found: Sequence[Family], view: str) -> list[Family]:
    """The families as a reranker in ``view`` reads them: each family's documents rendered as
    one candidate set (:func:`..ranking.rerank.views.render`)."""
    shown = []
    for f in found:
        docs = render(view, (*f.positives, *f.negatives))
        n = len(f.positives)
        shown.append(Family(f.item_id, f.query, tuple(docs[:n]), tuple(docs[n:])))
    return shown


def columns(found: Sequence[Family], loss: str, view: str = "code") -> dict[str, list]:
    """The dataset columns ``loss`` reads, of the families in ``view``: labelled pairs,
    labelled lists, or n-tuples."""
    found = in_view(found, view)
    if loss == "bce":
        return pair_columns(found)
    if loss in ("listnet", "lambda"):
        return list_columns(found)
    return as_columns(examples_of(found))


def _loss(name: str, model):
    from sentence_transformers.cross_encoder import losses

    return getattr(losses, LOSS_CLASSES[name])(model)


def fine_tune_cross_encoder(
    base_dir: Path,
    base: dict,
    found: Sequence[Family],
    out: Path,
    config: TrainConfig,
    split: Split,
    corpus: dict,
    *,
    resume: bool = False,
    stream=sys.stderr,
) -> dict:
    """Train a CrossEncoder from ``base_dir`` (``base``: its invocation record) on the
    families ``found`` and save it with its card in ``out``; returns the card."""
    out = Path(out)
    checkpoints = prepare_run(out, resume, len(found), split, config.seed)
    data = columns(found, config.loss, config.view)
    dataset = dataset_of(data)
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )

    activation = base_activation(base_dir, base["name"])  # checked again just before loading
    import torch

    model = CrossEncoder(
        str(base_dir),
        num_labels=1,
        max_length=config.max_seq_length or None,
        activation_fn=getattr(torch.nn, activation)(),  # ours: the configuration's never imported
        **load_kwargs(),
    )
    total = steps_for(len(dataset), config)
    sampler = BatchSamplers.NO_DUPLICATES if config.loss == "mnrl" else BatchSamplers.BATCH_SAMPLER
    args = training_arguments(
        CrossEncoderTrainingArguments, config, checkpoints, total, batch_sampler=sampler
    )
    progress = Progress(total, stream)
    trainer = CrossEncoderTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        loss=_loss(config.loss, model),
        callbacks=[progress.callback()],
    )
    training_time = run_trainer(trainer, resume)
    card = {
        "base_model": base,
        "corpus": corpus,
        "split": split.to_json(),
        "objective": config.objective,
        "initialisation": OWN_HEAD if base["name"].startswith("ce:") else FRESH_HEAD,
        "examples": {
            "n": len(dataset),
            "items": len(found),
            "positives": sum(len(f.positives) for f in found),
            "negatives": sum(len(f.negatives) for f in found),
            "negatives_per_example": max(len(f.negatives) for f in found),
        },
        "loss": config.loss,
        "loss_class": LOSS_CLASSES[config.loss],
        "view": config.view,
        "hyper_parameters": asdict(config),
        "steps": int(trainer.state.global_step),
        "loss_curve": progress.losses,
        "training_time": training_time,
    }
    return finish(model, out, card)
