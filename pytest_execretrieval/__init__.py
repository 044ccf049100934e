"""pytest-execretrieval: an execution-verified code retrieval benchmark, as a library and a
pytest plugin. The pipeline and where each step lives: docs/architecture.md."""

from pathlib import Path

DEFAULT_CACHE_DIR = Path(".execretrieval_cache")  # embeddings, outcomes, session state
