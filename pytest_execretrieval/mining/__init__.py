"""Items mined from real Python code (``execretrieval mine``; docs/mining.md).

``sources`` reads a SOURCE into memory (never importing it), ``functions`` finds its
self-contained public functions, ``query`` and ``doctests`` give each its query and tests,
``writer`` writes the items, ``MINED.md`` and ``NOTICE``, and ``mine`` runs the steps.
``history`` finds real bugs in a repository's history (its single-statement fixes), read
through ``git_reader``.
"""
