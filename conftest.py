# The repository's own tests live in tests/; the benchmark items in items/ are collected only by
# `pytest --embedder NAME` or `pytest --execretrieval-verify` (see pytest_execretrieval.plugin).
pytest_plugins = ["pytester"]
