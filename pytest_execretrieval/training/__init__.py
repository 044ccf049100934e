"""Fine-tuning an embedder on the corpus's execution-proven near misses, without leakage.

``split.py`` decides which items a model may learn from (whole domains, an item list, or all),
``examples.py`` turns those items into contrastive examples (query, canonical, its own chosen
distractors as hard negatives), ``train.py`` fine-tunes a local sentence-transformers model on
them, and ``card.py`` writes and reads the model card that records what the model saw, so a
benchmark can refuse to score it on its own training items.
"""
