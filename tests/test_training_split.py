"""Training splits never leak (hypothesis over random item sets), and the examples a split
yields come from its training items only, with each query's own distractors as negatives."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_execretrieval.corpus.items import BenchmarkItem, load_items
from pytest_execretrieval.corpus.store import read_corpus
from pytest_execretrieval.training.examples import as_columns, training_examples
from pytest_execretrieval.training.split import (
    Split,
    SplitError,
    all_split,
    domain_folds,
    item_list_split,
)

DATA = Path(__file__).parent / "data" / "items"


def item(domain: str, stem: str) -> BenchmarkItem:
    return BenchmarkItem(
        f"{domain}/{stem}",
        Path(f"{domain}/{stem}.toml"),
        domain,
        "q",
        "f",
        "def f():\n    return 1\n",
        ("assert f() == 1",),
    )


item_sets = st.lists(
    st.tuples(st.sampled_from([f"d{i}" for i in range(10)]), st.text("abcxyz", min_size=1)),
    min_size=2,
    unique_by=lambda t: f"{t[0]}/{t[1]}",
).map(lambda pairs: [item(d, s) for d, s in pairs])


@settings(max_examples=60, deadline=None)
@given(items=item_sets, data=st.data())
def test_domain_folds_hold_out_whole_domains_exactly_once(items, data):
    domains = sorted({i.domain for i in items})
    if len(domains) < 2:
        with pytest.raises(SplitError, match="--folds"):
            domain_folds(items, 2)
        return
    k = data.draw(st.integers(2, len(domains)))
    folds = domain_folds(items, k)
    ids = sorted(i.id for i in items)
    held_domains = [d for f in folds for d in f.held_out_domains]
    assert sorted(held_domains) == domains  # every domain held out by exactly one fold
    for fold in folds:
        assert not set(fold.train) & set(fold.held_out)
        assert sorted((*fold.train, *fold.held_out)) == ids
        by_id = {i.id: i for i in items}
        assert {by_id[i].domain for i in fold.held_out} == set(fold.held_out_domains)
        assert not {by_id[i].domain for i in fold.train} & set(fold.held_out_domains)
    # every item is held out by exactly one fold
    assert sorted(i for f in folds for i in f.held_out) == ids


@settings(max_examples=60, deadline=None)
@given(items=item_sets, data=st.data())
def test_an_item_list_trains_exactly_the_listed_items(items, data, tmp_path_factory):
    listed = data.draw(st.lists(st.sampled_from([i.id for i in items]), min_size=1))
    path = tmp_path_factory.mktemp("split") / "train.txt"
    path.write_text("# training items\n" + "\n".join(f"{x}  # note" for x in listed) + "\n")
    split = item_list_split(items, path)
    assert set(split.train) == set(listed)
    assert set(split.held_out) == {i.id for i in items} - set(listed)
    assert Split.from_json(split.to_json()) == split


def test_an_unknown_id_in_the_list_is_an_error_not_a_silent_hold_out(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("d0/a\nd0/typo\n")
    with pytest.raises(SplitError, match="d0/typo"):
        item_list_split([item("d0", "a"), item("d1", "b")], path)


def test_a_split_cannot_hold_an_item_on_both_sides():
    with pytest.raises(SplitError, match="both trained and held out"):
        Split("bad", ("d0/a",), ("d0/a",))


def test_examples_come_from_the_training_side_with_their_own_distractors():
    items, _ = load_items(DATA)
    corpus = read_corpus(DATA)
    split = domain_folds(items, 3)[0]
    examples = training_examples(items, corpus, split.train)
    assert {e.item_id for e in examples} == set(split.train)
    own = corpus.by_query()
    for e in examples:
        distractors = {s.code for s in own[e.item_id] if s.kind == "distractor"}
        assert set(e.negatives) <= distractors and len(set(e.negatives)) == len(distractors)
        assert e.positive not in distractors
        assert e.query == next(i.query for i in items if i.id == e.item_id)
    # the alternatives are extra positives of the same query
    with_alternatives = {a.query_id for a in corpus.alternatives} & set(split.train)
    for qid in with_alternatives:
        assert sum(e.item_id == qid for e in examples) > 1
    one = training_examples(items, corpus, split.train, negatives=1, alternatives=False)
    assert len(one) == len(split.train) and all(len(e.negatives) == 1 for e in one)
    columns = as_columns(examples)
    assert list(columns)[:3] == ["anchor", "positive", "negative_1"]
    assert all(len(v) == len(examples) for v in columns.values())
    assert training_examples(items, corpus, all_split(items).train) == training_examples(
        items, corpus, {i.id for i in items}
    )
