"""Running snippets: the sandbox (sandbox.py; the checker process's entry in _sandbox_child.py,
one module per role: _checker.py, _zygote.py, _child.py, and _wire.py between them; kernel layers
in _confine.py), suites in parallel (runner.py) and the authenticated outcome cache
(outcome_cache.py)."""
