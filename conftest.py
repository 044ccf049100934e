# The repository's own tests live in tests/ (pytester is enabled by `addopts` in pyproject.toml,
# not here, so that this conftest stays harmless when items/ is collected from another rootdir);
# the benchmark items in items/ are collected only by `pytest --embedder NAME` or
# `pytest --execretrieval-verify` (see pytest_execretrieval.plugin).
