"""The model card of a fine-tuned model: ``execretrieval-training.json`` (read back by the
benchmark) and ``README.md`` (the same for people), in the model directory.

The JSON holds the base model's invocation (name, weights sha256), the corpus sha256, the split
(the trained and held-out item ids and held-out domains), the objective (``bi-encoder``: an
embedder; ``cross-encoder``: a reranker, with how its head was initialised), the loss, the
hyper-parameters, the loss curve, the training time (wall and CPU seconds) and the package
versions.
"""

from __future__ import annotations

import json
from pathlib import Path

from .bounded_json import JSONBoundError, read_json

CARD = "execretrieval-training.json"
TRAINING_PACKAGES = ("sentence-transformers", "torch", "transformers", "datasets", "accelerate")
REQUIRED = (
    "base_model",
    "corpus",
    "split",
    "loss",
    "hyper_parameters",
    "training_time",
    "package_versions",
)


# how a benchmark uses a model of each training objective
USAGE = {
    "bi-encoder": "--embedder st:{model_dir}",
    "cross-encoder": "--execretrieval-rerank ce:{model_dir}",
}


class CardError(ValueError):
    """A model directory's training card is unreadable or incomplete."""


def write_card(model_dir: Path, card: dict) -> None:
    model_dir = Path(model_dir)
    (model_dir / CARD).write_text(json.dumps(card, indent=1, sort_keys=True) + "\n")
    (model_dir / "README.md").write_text(card_markdown(card), encoding="utf-8")


def read_card(model_dir: Path) -> dict | None:
    """The card, or ``None`` for a model that was not trained here; :class:`CardError` when the
    card is there but broken (a model that hides its split must not pass as untrained)."""
    path = Path(model_dir) / CARD
    if not path.exists():
        return None
    try:
        card = read_json(path)
    except JSONBoundError as exc:
        raise CardError(f"unreadable training card: {exc}") from None
    missing = [key for key in REQUIRED if key not in card]
    if missing:
        raise CardError(f"{path}: training card lacks {', '.join(missing)}")
    return card


def invocation_record(model_dir: Path) -> dict:
    """What a benchmark report records of the training (the embedder invocation's ``training``
    field): the split, the corpus, the loss and the base model; ``{}`` for an untrained model."""
    card = read_card(model_dir)
    if card is None:
        return {}
    return {
        "training": {
            "split": card["split"],
            "corpus_sha256": card["corpus"]["sha256"],
            "objective": objective(card),
            "loss": card["loss"],
            "base_model": card["base_model"].get("model"),
            "base_weights_sha256": card["base_model"].get("weights_sha256"),
        }
    }


def trained_on(invocation: dict, item_ids) -> list[str]:
    """The ids among ``item_ids`` that the model of ``invocation`` was trained on (sorted)."""
    split = (invocation.get("training") or {}).get("split") or {}
    return sorted(set(split.get("train", ())) & set(item_ids))


def objective(card: dict) -> str:
    """What the card's model is (cards written before cross-encoders name no objective)."""
    return card.get("objective", "bi-encoder")


def card_markdown(card: dict) -> str:
    split, hp, t = card["split"], card["hyper_parameters"], card["training_time"]
    curve = card.get("loss_curve") or []
    lines = [
        "# Fine-tuned by `execretrieval train`",
        "",
        f"- base model: `{card['base_model'].get('model')}` (weights sha256 "
        f"`{card['base_model'].get('weights_sha256')}`)",
        f"- corpus sha256: `{card['corpus']['sha256']}`",
        f"- split: `{split['name']}`: {len(split['train'])} items trained, "
        f"{len(split['held_out'])} held out"
        + (
            f" (held-out domains: {', '.join(split['held_out_domains'])})"
            if split["held_out_domains"]
            else ""
        ),
        f"- objective: `{objective(card)}`"
        + (f", initialised from {card['initialisation']}" if card.get("initialisation") else ""),
        f"- examples: {card['examples']['n']} from {card['examples']['items']} items, "
        f"{card['examples']['negatives_per_example']} hard negatives each",
        f"- loss: `{card['loss']}`"
        + (f" (`{card['loss_class']}`)" if card.get("loss_class") else "")
        + (f", guide model `{card['guide_model']}`" if card.get("guide_model") else ""),
        "- hyper-parameters: " + ", ".join(f"{k}={v}" for k, v in sorted(hp.items())),
        f"- steps: {card['steps']}; loss {curve[0][1]:.4f} -> {curve[-1][1]:.4f}"
        if curve
        else f"- steps: {card['steps']}",
        f"- training time: {t['wall_s']} s wall, {t['cpu_s']} s CPU, {t['threads']} threads, "
        f"on {card['device']}",
        "- packages: " + ", ".join(f"{k} {v}" for k, v in sorted(card["package_versions"].items())),
        "",
        f"Use it as `{USAGE[objective(card)].format(model_dir='<this directory>')}`; the "
        "benchmark refuses to score the trained items (the split above) unless "
        "`--execretrieval-allow-training-items` is given.",
        "The full record is `execretrieval-training.json`.",
        "",
    ]
    return "\n".join(lines)
