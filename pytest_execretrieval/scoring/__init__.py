"""Numbers: tie-aware metrics (metrics.py), statistics (stats.py), analyses (analyses.py),
comparisons and the gate (compare.py)."""
