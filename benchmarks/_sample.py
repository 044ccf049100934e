"""A sample of an items directory for the benchmarks' size argument: every k-th item (by id, so
every domain is represented), with its committed corpus rows, build records and a manifest for
the sample, so the sample is as fresh as its source."""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_execretrieval.corpus.incremental import digests, read_records, yields_jsonl
from pytest_execretrieval.corpus.items import item_id, item_paths
from pytest_execretrieval.corpus.store import Corpus, read_corpus, write_corpus


def sample_items(source: Path, n: int | None, dest: Path) -> Path:
    """Copy ``n`` items of ``source`` (all of them when ``n`` is None) with their corpus to
    ``dest``; returns ``dest``."""
    paths = item_paths(source)
    if n is None or n >= len(paths):
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns("stack-*"))
        return dest
    picked = paths[:: max(1, len(paths) // n)][:n]
    for path in picked:
        target = dest / path.parent.name / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    keep = {item_id(p) for p in picked}
    corpus = read_corpus(source)
    own = lambda snippets: tuple(s for s in snippets if s.query_id in keep)  # noqa: E731
    part = Corpus(own(corpus.snippets), own(corpus.alternatives), corpus.engine)
    records = [r for iid, r in read_records(source).items() if iid in keep]
    if records:
        write_corpus(dest, part, dest, yields_jsonl(records), digests(part, records))
    else:  # a corpus built before build records: the sample has none either
        write_corpus(dest, part, dest)
    return dest
