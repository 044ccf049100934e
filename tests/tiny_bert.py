"""A one-layer BERT of hidden size 8 and its word-piece tokenizer, for the model-directory tests:
random weights, the same on every run (no model hub is reachable here)."""

from __future__ import annotations

from pathlib import Path

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    *"def return clamp add max min lo hi count vowels sum in for a b c s aeiou".split(),
    *"_ ( ) , : + - '".split(),
]


def tiny_bert(where: Path, classifier: bool = False) -> Path:
    """The model (a one-output sequence classifier with ``classifier``, else the encoder) and
    its tokenizer saved by transformers in ``where``; returns ``where``."""
    import transformers

    where.mkdir(parents=True, exist_ok=True)
    (where / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    config = transformers.BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=16,
        max_position_embeddings=128,
        initializer_range=1.0,
        **({"num_labels": 1} if classifier else {}),
    )
    transformers.set_seed(0)
    model = transformers.BertForSequenceClassification if classifier else transformers.BertModel
    model(config).save_pretrained(where)
    transformers.BertTokenizer(str(where / "vocab.txt")).save_pretrained(where)
    return where
