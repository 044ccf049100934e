"""Running snippets: the sandbox (sandbox.py; the checker, zygote and child in
_sandbox_child.py; kernel layers in _confine.py), suites in parallel (runner.py) and the
authenticated outcome cache (outcome_cache.py)."""
