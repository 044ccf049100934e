"""Ranking the pool: exact whole-pool retrieval (retrieval.py), the benchmark run with its top
10 and tie groups (benchmark.py) and the rerank stage (rerank/)."""
