"""Benchmark data: item files (items.py), the corpus built from them and its staleness
(store.py), the build (build.py) and the verification gates (verify.py)."""
